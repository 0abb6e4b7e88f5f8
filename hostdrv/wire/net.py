"""UDP plumbing shared by the clients' transports and the switch servers.

Addresses (``host:port``, IPv4 as integers), socket buffers, Linux UDP
segmentation offload (GSO/GRO) and :class:`TransportError`.
:mod:`hostdrv.client.transport` (clients) and :mod:`hostdrv.switch.soft`
(servers) both build on it; it knows nothing of either.
"""

from __future__ import annotations

import socket

from hostdrv.errors import NetrlError
from hostdrv.wire.protocol import DEFAULT_UDP_PORT

SOL_UDP = 17
UDP_SEGMENT = 103
"""Linux UDP generic segmentation offload socket option (``linux/udp.h``)."""
UDP_GRO = 104
"""Linux UDP generic receive offload socket option (``linux/udp.h``)."""
GSO_MAX_SEGMENTS = 64
GSO_MAX_BYTES = 65507
SOCKET_BUFFER = 4 << 20
"""Send and receive buffer asked for on every data socket (capped by the kernel)."""

DEFAULT_PORT = DEFAULT_UDP_PORT


class TransportError(NetrlError, OSError):
    """A backend could not be opened or used (bad URL or address, unknown scheme, socket
    error, unreadable control key file)."""


def parse_hostport(text: str, default_port: int = DEFAULT_PORT) -> tuple[str, int]:
    """Split ``"host:port"`` (port optional) into a tuple.

    Raises
    ------
    TransportError
        When the port is not a number in 0 … 65535.
    """
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = text, str(default_port)
    try:
        p = int(port)
    except ValueError:
        raise TransportError(f"bad port={port!r} in address {text!r}: not a number") from None
    if not 0 <= p <= 0xFFFF:
        raise TransportError(f"bad port={p} in address {text!r}: must be 0..65535")
    return host or "127.0.0.1", p


def ip_to_int(ip: str | int) -> int:
    """IPv4 address as an unsigned 32-bit integer (dotted quad or integer)."""
    if isinstance(ip, int):
        if not 0 <= ip <= 0xFFFFFFFF:
            raise ValueError(f"bad ip={ip!r}: not an unsigned 32-bit integer")
        return ip
    try:
        return int.from_bytes(socket.inet_aton(ip), "big")
    except OSError:
        raise ValueError(f"bad ip={ip!r}: not a dotted-quad IPv4 address") from None


def int_to_ip(value: int) -> str:
    """Dotted quad of an unsigned 32-bit IPv4 address."""
    return socket.inet_ntoa((value & 0xFFFFFFFF).to_bytes(4, "big"))


def tune_socket(sock: socket.socket, size: int = SOCKET_BUFFER) -> None:
    """Ask for large send/receive buffers (the kernel caps them at ``*mem_max``)."""
    for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
        try:
            sock.setsockopt(socket.SOL_SOCKET, opt, size)
        except OSError:
            pass
