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
protocol message (its version byte would be ``N``, not 1). Without a control
key the switch caches the last reply per client address, so a request retried
with the same 16 bytes is answered again, not executed twice.

Who may use it (``docs/protocol.md`` section 9): by default the switch executes
requests from loopback addresses only. A switch started with
``--control-key FILE`` executes only signed requests, from any address, each at
most once. The 16-byte request is followed by a 24-byte trailer and an
HMAC-SHA256 over both, keyed with the file's contents (surrounding whitespace
stripped)::

    request (16) | session u32 | timestamp_ms u64 | nonce u64 | attempt u32
                 | HMAC-SHA256(key, bytes 0 .. 39) (32)                    = 72 bytes

Byte 5 of a signed request (signed with the rest) is its **key id**: 0 the admin
key (``--control-key``), j + 1 job j's key (``--job-key J:FILE``, section 11). A
job's key reads any register and writes only page j's job registers that are not
*admin*; the switch refuses any other write with status 6
(:attr:`ControlStatus.FORBIDDEN`).

``session`` is the switch's (a random nonzero number it draws when it starts,
learned from the ``value`` of a status-5 reply; 0 before that), ``timestamp``
(ms since the Unix epoch) and ``nonce`` (random) name the request and stay the
same in every retry of it, ``attempt`` counts its sends (0, 1, …). The switch
(:class:`ControlReplayGuard`) executes a request once, answers a later attempt
of it from its reply cache, and refuses with status 5 an attempt it has seen
(a replay, from any address), another session's request (a replay across a
restart) and a timestamp more than 30 s from its clock.

A request refused for want of authentication is answered with status 5
(:attr:`ControlStatus.UNAUTHENTICATED`); ``value`` is the switch's session when
the request was signed for another one, else 0. A client raises
:class:`~hostdrv.client.transport.ControlAuthError` for it.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import struct
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum

from hostdrv.wire.net import TransportError

CONTROL_MAGIC = b"NRLC"
"""First four bytes of every control-channel datagram."""
CONTROL = struct.Struct("!4sBBHII")
"""Control request/reply header: magic, op, status, tag, address, value."""
CONTROL_READ = 1
CONTROL_WRITE = 2
CONTROL_REPLY = 0x80
CONTROL_TRAILER = struct.Struct("!IQQI")
"""After a signed request: session, timestamp (ms since the Unix epoch), nonce, attempt."""
CONTROL_MAC_BYTES = 32
"""HMAC-SHA256 length after the trailer of a signed request."""
CONTROL_SIGNED_BYTES = CONTROL.size + CONTROL_TRAILER.size + CONTROL_MAC_BYTES
"""Length of a signed control request (72 bytes)."""
CONTROL_AUTH_WINDOW_MS = 30_000
"""Largest difference between a signed request's timestamp and the switch's clock."""
CONTROL_REPLAY_CACHE = 65536
"""Requests a switch remembers (within the window) to refuse their replays."""
REPLAYED = "replayed"
"""First word of the reason of a status-5 reply refusing a replayed attempt."""
ADMIN_KEY_ID = 0
"""Byte 5 of a request signed with the admin key (``--control-key``); job j's key is j + 1."""
KEY_ID_OFFSET = 5
"""Offset of the key id in a signed request (0 in an unsigned one)."""


def job_key_id(job: int) -> int:
    """The key id (byte 5 of a signed request) of job ``job``'s key: ``job + 1``."""
    return job + 1


def key_job(key_id: int) -> int | None:
    """The job whose key ``key_id`` names, ``None`` for the admin key (id 0)."""
    return None if key_id == ADMIN_KEY_ID else key_id - 1


class ControlStatus(IntEnum):
    """Status byte of a control-channel reply."""

    OK = 0
    BAD_REQUEST = 1
    UNKNOWN_REGISTER = 2
    ILLEGAL_VALUE = 3
    READ_ONLY = 4
    UNAUTHENTICATED = 5
    """Not from loopback without a control key; or a missing or wrong HMAC, another
    session, an expired timestamp or a replayed attempt."""
    FORBIDDEN = 6
    """A write under job j's key to anything but page j's job registers that are not
    *admin* (``docs/protocol.md`` section 11); nothing changed."""
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


@dataclass(frozen=True)
class SignedRequest:
    """The fields of a signed control request (``docs/protocol.md`` section 9).

    Attributes
    ----------
    request:
        The 16-byte request.
    session:
        The switch session it was signed for (0: not known yet).
    timestamp:
        Milliseconds since the Unix epoch when the request was first sent.
    nonce:
        Random 64-bit number naming the request (with ``timestamp``).
    attempt:
        0 for the first send, one more for each retry.
    key_id:
        Byte 5: the key it is signed with (0 the admin key, j + 1 job j's).
    """

    request: bytes
    session: int
    timestamp: int
    nonce: int
    attempt: int
    key_id: int = ADMIN_KEY_ID


def sign_control(request: bytes | bytearray | memoryview, key: bytes, *, session: int = 0,
                 timestamp: int | None = None, nonce: int | None = None,
                 attempt: int = 0, key_id: int | None = None) -> bytes:
    """``request`` (16 bytes) followed by its trailer and HMAC-SHA256 under ``key`` (72 bytes).

    Parameters
    ----------
    request:
        The 16-byte control request.
    key:
        The control key (:func:`load_control_key`).
    session:
        The switch's session (0 when not known: the switch then refuses the
        request and names its session).
    timestamp:
        When the request was first sent, ms since the Unix epoch (default: now).
    nonce:
        Random request name (default: 8 random bytes). A retry passes the
        first send's ``timestamp`` and ``nonce`` and the next ``attempt``.
    attempt:
        0 for the first send, +1 per retry.
    key_id:
        Which key ``key`` is (byte 5, signed with the rest): :data:`ADMIN_KEY_ID` for the
        admin key, :func:`job_key_id` for a job's. ``None``: byte 5 as ``request`` has it.
    """
    ts = int(time.time() * 1000) if timestamp is None else timestamp
    n = int.from_bytes(os.urandom(8), "big") if nonce is None else nonce
    head = bytearray(request[:CONTROL.size])
    if key_id is not None:
        if not 0 <= key_id <= 0xFF:
            raise ValueError(f"bad key_id={key_id!r}: a key id is a byte (0 admin, j + 1 job j)")
        head[KEY_ID_OFFSET] = key_id
    body = bytes(head) + CONTROL_TRAILER.pack(
        session & 0xFFFFFFFF, ts & 0xFFFFFFFFFFFFFFFF, n & 0xFFFFFFFFFFFFFFFF,
        attempt & 0xFFFFFFFF)
    return body + hmac.new(key, body, hashlib.sha256).digest()


def parse_signed(data: bytes | bytearray | memoryview,
                 key: bytes | Mapping[int, bytes]) -> SignedRequest | str:
    """The fields of a signed request whose HMAC is right, else why not.

    ``key`` is the one key to check the HMAC with (byte 5 is then not looked at), or
    the switch's keys by key id (:data:`ADMIN_KEY_ID`, :func:`job_key_id`): the
    request's byte 5 picks the key, an id with no key is refused. Bytes after the
    HMAC are ignored (they are not signed).
    """
    if len(data) < CONTROL_SIGNED_BYTES:
        return (f"no HMAC: a {len(data)}-byte request; this switch needs signed requests "
                f"({CONTROL_SIGNED_BYTES} bytes: request, session, timestamp, nonce, attempt, "
                "HMAC-SHA256)")
    body = bytes(data[:CONTROL.size + CONTROL_TRAILER.size])
    key_id = body[KEY_ID_OFFSET]
    if isinstance(key, bytes | bytearray):
        k: bytes | None = bytes(key)
        whose = "this switch's control key"
    else:
        k = key.get(key_id)
        j = key_job(key_id)
        whose = "the admin key" if j is None else f"job {j}'s key"
        if k is None:
            return (f"key id {key_id} ({whose}): this switch has no such key "
                    f"(key ids it takes: {', '.join(str(i) for i in sorted(key))})")
    mac = bytes(data[len(body):len(body) + CONTROL_MAC_BYTES])
    if not hmac.compare_digest(hmac.new(k, body, hashlib.sha256).digest(), mac):
        return f"wrong HMAC: the request (key id {key_id}) is not signed with {whose}"
    session, ts, nonce, attempt = CONTROL_TRAILER.unpack_from(body, CONTROL.size)
    return SignedRequest(body[:CONTROL.size], session, ts, nonce, attempt, key_id)


class ControlReplayGuard:
    """A switch's memory of the signed requests it executed: each executes at most once.

    The rules, in order (``docs/protocol.md`` section 9), for a request whose
    HMAC is right:

    1. its ``session`` is not this switch's: refused (a request signed for an
       earlier run of the switch, or a client that has not learned the session);
    2. its timestamp is more than :data:`CONTROL_AUTH_WINDOW_MS` from the clock,
       or not after :attr:`floor` and not remembered: refused (expired);
    3. its (timestamp, nonce) was executed: an ``attempt`` above every one seen
       is a retry, answered with the cached reply and not executed; any other is
       a replay, refused;
    4. otherwise it is executed and remembered (:meth:`remember`) until its
       timestamp leaves the window.

    At most :data:`CONTROL_REPLAY_CACHE` requests are remembered: beyond that
    the oldest is forgotten and :attr:`floor` rises to its timestamp, so
    nothing forgotten can run again.

    Parameters
    ----------
    session:
        This run's session (default: a random nonzero 32-bit number).
    capacity:
        Requests remembered at most.
    """

    def __init__(self, session: int | None = None, capacity: int = CONTROL_REPLAY_CACHE) -> None:
        while session is None or not 0 < session <= 0xFFFFFFFF:
            session = int.from_bytes(os.urandom(4), "big")
        self.session = session
        """The session clients must sign for (a status-5 reply's ``value``)."""
        self.capacity = capacity
        self.floor = -1
        """Largest timestamp forgotten for want of room: older unknown requests are refused."""
        self._seen: OrderedDict[tuple[int, int], list[object]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._seen)

    def check(self, req: SignedRequest, now_ms: int | None = None) -> tuple[str, bytes | None]:
        """(why it is refused or '', the cached reply of a retry or None)."""
        now = int(time.time() * 1000) if now_ms is None else now_ms
        self._expire(now)
        if req.session != self.session:
            return (f"session {req.session:#x} is not this switch's ({self.session:#x}): "
                    "signed for an earlier run of the switch, or not yet learned "
                    "(the reply's value is the session)"), None
        if abs(now - req.timestamp) > CONTROL_AUTH_WINDOW_MS:
            return (f"expired: timestamp {(req.timestamp - now) / 1000:+.1f} s from the "
                    f"switch's clock (limit {CONTROL_AUTH_WINDOW_MS // 1000} s; a replay, or "
                    "clocks apart)"), None
        entry = self._seen.get((req.timestamp, req.nonce))
        if entry is None:
            if req.timestamp <= self.floor:
                return ("expired: older than the requests this switch still remembers "
                        "(too many control requests in the window)"), None
            return "", None
        if req.attempt <= entry[0]:  # type: ignore[operator]
            return (f"{REPLAYED}: attempt {req.attempt} of this request was already "
                    "received; nothing executed"), None
        entry[0] = req.attempt
        return "", entry[1]  # type: ignore[return-value]

    def remember(self, req: SignedRequest, reply: bytes) -> None:
        """Record an executed request and its reply."""
        self._seen[(req.timestamp, req.nonce)] = [req.attempt, reply]
        while len(self._seen) > self.capacity:
            (ts, _n), _e = self._seen.popitem(last=False)
            self.floor = max(self.floor, ts)

    def _expire(self, now: int) -> None:
        seen = self._seen
        while seen:
            ts, _n = next(iter(seen))
            if now - ts <= CONTROL_AUTH_WINDOW_MS:
                break
            seen.popitem(last=False)
