"""The ``dpdk://`` backend: protocol messages to a soft switch over a DPDK port (kernel bypass).

::

    dpdk://SWITCH_IP:PORT?port=af_packet:eth0            a veth or NIC of this host
    dpdk://SWITCH_IP:PORT?port=memif:/run/nrl.sock@1&ip=10.88.0.2&control=127.0.0.1:20050

``port`` (required) is the DPDK port (:mod:`hostdrv.wire.dpdkport`: ``af_packet:IFACE``,
``af_xdp:IFACE``, ``memif:PATH[@ID]``, or ``net_*`` devargs). The client's own address
is ``ip`` (default: the interface's IPv4 address; required for memif) and ``udp``
(default: a free port, reserved by binding a kernel UDP socket to it so the kernel
neither hands it to another program nor answers the switch's replies with ICMP).
Frames go to the switch's MAC (resolved with ARP on the port at open, else broadcast).

The register channel stays on the kernel's UDP (``SwitchControl``: ``NRLC`` datagrams),
to ``control=HOST:PORT`` (default the switch's own address; a DPDK switch answers
control datagrams on its ports too) with ``key=FILE`` as on ``soft://``.

The clients' native loops (``hostdrv/native/nrl_client.cpp``) run on the port: the
transport's ``sock.fileno()`` is a negative handle the native library maps to it.
A switch started with ``netfpga-softswitch --dpdk ...`` serves these clients; see
``docs/bypass.md``.
"""

from __future__ import annotations

import fcntl
import os
import socket
import struct
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from hostdrv.client.transport import (
    DatagramTransport,
    RegisterTransport,
    TransportError,
    switch_address,
    udp_switch_registers,
)
from hostdrv.wire.dpdkport import NOT_BUILT, DpdkError, check_interface, devargs, interface_of
from hostdrv.wire.net import ip_to_int, parse_hostport

OPTIONS = ("port", "ip", "udp", "control", "key", "arp_timeout")
"""The query options of a ``dpdk://`` URL."""

_SIOCGIFADDR = 0x8915


def _native() -> Any:
    try:
        import hostdrv._native as native
    except ImportError as e:
        raise DpdkError(f"dpdk:// needs the native extension (hostdrv._native): {e}") from e
    if not getattr(native, "dpdk_available", False):
        raise DpdkError("dpdk:// cannot be used: " + NOT_BUILT)
    return native


def options(url: str) -> dict[str, str]:
    """The query options of ``url``, checked (unknown or repeated ones raise
    :class:`~hostdrv.client.transport.TransportError`)."""
    found: dict[str, str] = {}
    for key, value in parse_qsl(urlsplit(url).query, keep_blank_values=True):
        if key not in OPTIONS:
            raise TransportError(f"bad url={url!r}: unknown option {key!r}; known: "
                                 + ", ".join(OPTIONS))
        if key in found:
            raise TransportError(f"bad url={url!r}: option {key!r} given twice")
        found[key] = value
    return found


def interface_ip(iface: str) -> str:
    """The IPv4 address of Linux interface ``iface`` (``SIOCGIFADDR``)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            raw = fcntl.ioctl(s.fileno(), _SIOCGIFADDR, struct.pack("256s", iface.encode()[:15]))
        except OSError as e:
            raise TransportError(f"interface {iface!r} has no IPv4 address ({e.strerror}): "
                                 "give ip=A.B.C.D") from e
    return socket.inet_ntoa(raw[20:24])


class _Handle:
    """What the native client loops take as the socket: ``fileno()`` is the DPDK port's
    handle (negative, never a file descriptor)."""

    def __init__(self, handle: int) -> None:
        self._handle = handle

    def fileno(self) -> int:
        return self._handle


class DpdkDatagramTransport(DatagramTransport):
    """Protocol messages as Ethernet/IPv4/UDP frames on a DPDK port.

    Parameters
    ----------
    url:
        The ``dpdk://`` URL (for messages; its options are parsed by :func:`dpdk_datagram`).
    switch:
        (IPv4, UDP port) of the switch.
    port:
        The DPDK port spec (:mod:`hostdrv.wire.dpdkport`).
    ip, udp:
        This client's address (``udp`` 0: a free port).
    arp_timeout:
        Seconds to wait for the switch's ARP reply at open (then broadcast frames).
    """

    native_loops = True
    """The clients' native loops run on this transport (through :attr:`sock`)."""

    def __init__(self, url: str, switch: tuple[str, int], *, port: str, ip: str | None = None,
                 udp: int = 0, arp_timeout: float = 1.0) -> None:
        native = _native()
        check_interface(port)
        self.url = url
        self.switch = switch
        iface = interface_of(port)
        if ip is None:
            if iface is None:
                raise TransportError(f"bad url={url!r}: a memif port needs ip=A.B.C.D "
                                     "(this client's address on the switch's side)")
            ip = interface_ip(iface)
        # the UDP port, reserved in the kernel (a tiny receive buffer: nothing reads it)
        self._reserve = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._reserve.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1)
        try:
            try:
                self._reserve.bind((ip, udp))
            except OSError:
                self._reserve.bind(("0.0.0.0", udp))  # not a local address (memif)
        except OSError as e:
            self._reserve.close()
            raise TransportError(f"cannot reserve UDP port {udp} for {url}: {e}") from e
        self._local = (ip, int(self._reserve.getsockname()[1]))
        try:
            self.port = native.DpdkDatagram(devargs(port, role="client"), ip_to_int(ip),
                                            self._local[1], ip_to_int(switch[0]), switch[1],
                                            arp_timeout)
        except RuntimeError as e:
            self._reserve.close()
            raise DpdkError(f"cannot open DPDK port {port!r} for {url}: {e}") from e
        self.sock = _Handle(self.port.handle)
        self._gro = False
        self._gso = True

    @property
    def local_address(self) -> tuple[str, int]:
        return self._local

    @property
    def switch_mac(self) -> bytes | None:
        """The switch's MAC when ARP resolved it at open, else ``None`` (broadcast)."""
        return bytes(self.port.switch_mac) if self.port.resolved else None

    def stats(self) -> dict[str, int]:
        """Frames ``sent``, ``received``, ``ignored`` (not for this client) and
        ``tx_dropped`` (the port's Tx ring refused them)."""
        return dict(self.port.stats())

    def send(self, data: bytes | bytearray | memoryview) -> None:
        self.port.send(data)

    def send_segments(self, data: memoryview, seg: int) -> None:
        self.port.send_segments(data, seg)

    def recv_into(self, buf: bytearray | memoryview, timeout: float) -> tuple[int, int]:
        n, seg = self.port.recv_into(buf, timeout)
        return int(n), int(seg or n)

    def close(self) -> None:
        port = getattr(self, "port", None)
        if port is not None:
            self.sock = _Handle(-1)
            del self.port  # the native port is closed when its last reference goes
        self._reserve.close()


def dpdk_datagram(url: str, **kwargs: object) -> DatagramTransport:
    """Protocol channel to a soft switch at ``dpdk://host:port?port=...`` (DPDK)."""
    opts = options(url)
    if not opts.get("port"):
        raise TransportError(f"bad url={url!r}: no port=SPEC (the DPDK port: af_packet:IFACE, "
                             "af_xdp:IFACE or memif:PATH[@ID])")
    udp = opts.get("udp", "0")
    timeout = opts.get("arp_timeout", "1.0")
    try:
        udp_port, arp_timeout = int(udp), float(timeout)
    except ValueError:
        raise TransportError(f"bad url={url!r}: udp={udp!r} / arp_timeout={timeout!r}") from None
    return DpdkDatagramTransport(url, switch_address(url), port=opts["port"],
                                 ip=opts.get("ip") or None, udp=udp_port, arp_timeout=arp_timeout,
                                 **kwargs)  # type: ignore[arg-type]


def dpdk_registers(url: str, *, key_file: str | os.PathLike[str] | None = None,
                   **kwargs: object) -> RegisterTransport:
    """Register channel of a ``dpdk://`` switch: control datagrams over the kernel's UDP to
    ``control=HOST:PORT`` (default the switch's address), signed as on ``soft://``."""
    opts = options(url)
    host, port = switch_address(url)
    if opts.get("control"):
        host, port = parse_hostport(opts["control"])
    soft = f"soft://{host}:{port}" + (f"?key={opts['key']}" if opts.get("key") else "")
    return udp_switch_registers(soft, key_file=key_file, **kwargs)  # type: ignore[arg-type]


__all__ = ["OPTIONS", "DpdkDatagramTransport", "dpdk_datagram", "dpdk_registers", "interface_ip",
           "options"]
