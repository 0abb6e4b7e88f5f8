"""The control channel's wire format: register reads and writes on a switch's UDP socket.

Both ends use this module: the switch servers (:mod:`hostdrv.switch.soft`,
which the sim switch shares) parse requests and build replies with it, the
client (:class:`hostdrv.client.transport.UdpRegisterTransport`) builds requests and
parses replies. It sits next to :mod:`hostdrv.wire.protocol`, the protocol
messages' format.

A soft or sim switch answers register accesses on its protocol socket. A request
is 16 bytes, big-endian after the magic::

    b"NRLC" | op u8 (1 read, 2 write) | 0 u8 | tag u16 | address u32 | value u32

and the reply is::

    b"NRLC" | op|0x80 u8 | status u8 | tag u16 | address u32 | value u32 | text

with ``status`` one of :class:`ControlStatus` and ``text`` (UTF-8) saying
why when it is not ``OK``. A message starting with ``NRLC`` is never a
protocol message (its version byte would be ``N``, not 1). The switch caches
the last reply per client address, so a request retried with the same tag is
answered again, not executed twice.

Who may use it (``docs/protocol.md`` section 9): by default the switch executes
requests from loopback addresses only. A switch started with
``--control-key FILE`` executes only signed requests, from any address: the
16-byte request is followed by an 8-byte big-endian timestamp (milliseconds
since the Unix epoch) and a 32-byte HMAC-SHA256 over request and timestamp,
keyed with the file's contents (surrounding whitespace stripped)::

    request (16) | timestamp_ms u64 | HMAC-SHA256(key, request | timestamp) (32)

A request refused for want of authentication is answered with status 5
(:attr:`ControlStatus.UNAUTHENTICATED`); a client raises
:class:`~hostdrv.client.transport.ControlAuthError` for it.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import struct
import time
from enum import IntEnum

from hostdrv.wire.net import TransportError

CONTROL_MAGIC = b"NRLC"
"""First four bytes of every control-channel datagram."""
CONTROL = struct.Struct("!4sBBHII")
"""Control request/reply header: magic, op, status, tag, address, value."""
CONTROL_READ = 1
CONTROL_WRITE = 2
CONTROL_REPLY = 0x80
CONTROL_TIMESTAMP = struct.Struct("!Q")
"""Timestamp after a signed request: milliseconds since the Unix epoch, big-endian."""
CONTROL_MAC_BYTES = 32
"""HMAC-SHA256 length after the timestamp of a signed request."""
CONTROL_SIGNED_BYTES = CONTROL.size + CONTROL_TIMESTAMP.size + CONTROL_MAC_BYTES
"""Length of a signed control request (56 bytes)."""
CONTROL_AUTH_WINDOW_MS = 30_000
"""Largest difference between a signed request's timestamp and the switch's clock."""


class ControlStatus(IntEnum):
    """Status byte of a control-channel reply."""

    OK = 0
    BAD_REQUEST = 1
    UNKNOWN_REGISTER = 2
    ILLEGAL_VALUE = 3
    READ_ONLY = 4
    UNAUTHENTICATED = 5
    """Not from loopback without a control key, or a missing, wrong or expired HMAC."""
    INTERNAL = 0xFF
    """Never sent by a switch: a host-side failure (the board's register tool) or a
    status byte this driver does not know."""


def load_control_key(path: str | os.PathLike[str]) -> bytes:
    """The control key in file ``path``: its bytes with surrounding whitespace stripped.

    Raises
    ------
    TransportError
        When the file cannot be read or holds nothing but whitespace.
    """
    try:
        with open(path, "rb") as f:
            key = f.read().strip()
    except OSError as e:
        raise TransportError(f"cannot read control key file {os.fspath(path)!r}: "
                             f"{e.strerror or e}") from None
    if not key:
        raise TransportError(f"bad control key file {os.fspath(path)!r}: it is empty")
    return key


def sign_control(request: bytes | bytearray | memoryview, key: bytes,
                 now_ms: int | None = None) -> bytes:
    """``request`` (16 bytes) followed by its timestamp and HMAC-SHA256 under ``key``.

    Parameters
    ----------
    request:
        The 16-byte control request.
    key:
        The control key (:func:`load_control_key`).
    now_ms:
        Timestamp to sign (default: the clock, ms since the Unix epoch).
    """
    ts = int(time.time() * 1000) if now_ms is None else now_ms
    body = bytes(request[:CONTROL.size]) + CONTROL_TIMESTAMP.pack(ts & 0xFFFFFFFFFFFFFFFF)
    return body + hmac.new(key, body, hashlib.sha256).digest()


def check_control_signature(data: bytes | bytearray | memoryview, key: bytes,
                            now_ms: int | None = None) -> str:
    """Why a control request is not authentic under ``key`` ('' when it is).

    Parameters
    ----------
    data:
        The whole request datagram.
    key:
        The switch's control key.
    now_ms:
        The switch's clock (default: now, ms since the Unix epoch).
    """
    if len(data) < CONTROL_SIGNED_BYTES:
        return (f"no HMAC: a {len(data)}-byte request; this switch needs signed requests "
                f"({CONTROL_SIGNED_BYTES} bytes: request, timestamp, HMAC-SHA256)")
    body = bytes(data[:CONTROL.size + CONTROL_TIMESTAMP.size])
    mac = bytes(data[len(body):len(body) + CONTROL_MAC_BYTES])
    if not hmac.compare_digest(hmac.new(key, body, hashlib.sha256).digest(), mac):
        return "wrong HMAC: the request is not signed with this switch's control key"
    ts = CONTROL_TIMESTAMP.unpack_from(body, CONTROL.size)[0]
    now = int(time.time() * 1000) if now_ms is None else now_ms
    if abs(now - ts) > CONTROL_AUTH_WINDOW_MS:
        return (f"expired: timestamp {(ts - now) / 1000:+.1f} s from the switch's clock "
                f"(limit {CONTROL_AUTH_WINDOW_MS // 1000} s; a replay, or clocks apart)")
    return ""
