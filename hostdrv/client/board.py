"""NetFPGA SUME board backends: ``udp://`` and ``eth://``.

The board is reached over two unrelated paths:

* **data**: protocol messages travel as ordinary IPv4/UDP frames to
  ``SWITCH_IP:UDP_PORT``; the datapath intercepts them and answers from
  ``SWITCH_IP`` to the requester's source port (``docs/protocol.md``
  sections 1 and 7). ``udp://`` uses a kernel UDP socket for this (exactly
  the soft switch's data channel, :class:`~hostdrv.client.transport.UdpDatagramTransport`);
  ``eth://`` builds whole Ethernet frames on an ``AF_PACKET`` socket
  (:class:`EthDatagramTransport`), for hosts without a route to the board.
* **registers**: the board has no control socket. The 4 KB register map sits
  in the ``S0_AXI`` window of the datapath, reached from the host through
  the SUME PCIe driver with NetFPGA SUME's ``rwaxi`` tool
  (:class:`RwaxiRegisterTransport`).

URLs::

    udp://SWITCH_IP[:PORT]?regs=rwaxi&base=0x44010000&rwaxi=/path/to/rwaxi&rwaxi_if=nf0
    eth://IFNAME?switch_ip=10.0.0.1&src_ip=10.0.0.2&port=20050&dst_mac=ff:ff:ff:ff:ff:ff
              &local_port=0&regs=rwaxi&base=...&rwaxi=...

Query parameters
----------------
regs
    Register channel kind; only ``rwaxi`` (the default) exists.
base
    AXI-Lite base address of the register window, default
    :data:`SUME_S0_AXI_BASE`.
rwaxi
    Path or name of the ``rwaxi`` tool (default ``rwaxi`` on ``PATH``).
rwaxi_if
    Interface passed to ``rwaxi -i`` (default: the tool's own, ``nf0``).
switch_ip, port (eth)
    Switch IPv4 address (required) and ``UDP_PORT`` (default 20050).
src_ip (eth)
    IPv4 source address (default: the interface's address).
dst_mac, src_mac (eth)
    Ethernet addresses (default: broadcast / the interface's MAC).
local_port (eth)
    UDP source port (default: a free ephemeral port, reserved with a UDP
    socket so that the kernel does not answer the switch's replies with
    ICMP port unreachable).
"""

from __future__ import annotations

import fcntl
import re
import select
import shutil
import socket
import struct
import subprocess
import time
from collections.abc import Mapping
from urllib.parse import parse_qsl, unquote, urlsplit

from hostdrv.client.transport import (
    DatagramTransport,
    RegisterTransport,
    SwitchTimeoutError,
    UdpDatagramTransport,
)
from hostdrv.errors import RegisterError
from hostdrv.wire import regmap, regrules
from hostdrv.wire.control import ControlStatus
from hostdrv.wire.net import TransportError, ip_to_int, parse_hostport, tune_socket
from hostdrv.wire.protocol import BROADCAST_MAC, DEFAULT_UDP_PORT, ETH_LEN, HEADER_LEN, ip_checksum
from hostdrv.wire.sume import SUME_S0_AXI_BASE

RWAXI_READ = re.compile(r"READ\s+0x([0-9a-fA-F]+)\s*=\s*0x([0-9a-fA-F]+)")
"""``rwaxi -a ADDR`` prints ``READ 0x%08x = 0x%04x``."""
RWAXI_WROTE = re.compile(r"WROTE\s+0x([0-9a-fA-F]+)\s*=\s*0x([0-9a-fA-F]+)")
"""``rwaxi -a ADDR -w VALUE`` prints ``WROTE 0x%08x = 0x%04x``."""

REGS_KINDS = ("rwaxi",)
"""Register channel kinds accepted in ``regs=``."""
_REG_KEYS = frozenset({"regs", "base", "rwaxi", "rwaxi_if"})
_ETH_KEYS = _REG_KEYS | {"switch_ip", "src_ip", "port", "dst_mac", "src_mac", "local_port"}

ETH_P_IP = 0x0800
PACKET_OUTGOING = 4
"""``sll_pkttype`` of a frame this host sent (``linux/if_packet.h``)."""
# packet(7): with PACKET_VNET_HDR every frame read or written is preceded by a struct
# virtio_net_hdr (10 bytes: flags, gso_type, hdr_len, gso_size, csum_start, csum_offset),
# which says when a frame is a UDP GSO batch (several datagrams of gso_size payload bytes
# in one frame, as a local sender's UDP_SEGMENT batch appears on lo before segmentation)
SOL_PACKET = 263
PACKET_VNET_HDR = 15
VNET_HDR_LEN = 10
VNET_GSO_UDP_L4 = 5
SIOCGIFADDR = 0x8915
ETH_RECV_BYTES = 65536 + ETH_LEN + VNET_HDR_LEN


# ---------------------------------------------------------------------------
# URL options


def url_options(url: str, allowed: frozenset[str] | set[str]) -> dict[str, str]:
    """Query parameters of ``url`` as a dict, rejecting unknown or repeated keys.

    Raises
    ------
    TransportError
        When a key is not in ``allowed`` or appears twice.
    """
    out: dict[str, str] = {}
    for key, value in parse_qsl(urlsplit(url).query, keep_blank_values=True):
        if key not in allowed:
            raise TransportError(f"bad url={url!r}: unknown option {key!r}; known: "
                                 + ", ".join(sorted(allowed)))
        if key in out:
            raise TransportError(f"bad url={url!r}: option {key!r} given twice")
        out[key] = value
    return out


def _int_option(url: str, opts: Mapping[str, str], key: str, default: int, top: int) -> int:
    text = opts.get(key)
    if text is None or text == "":
        return default
    try:
        value = int(text, 0)
    except ValueError:
        raise TransportError(f"bad {key}={text!r} in url={url!r}: not an integer") from None
    if not 0 <= value <= top:
        raise TransportError(f"bad {key}={text!r} in url={url!r}: must be 0..0x{top:X}")
    return value


def parse_mac(text: str) -> bytes:
    """``"aa:bb:cc:dd:ee:ff"`` (or ``-`` separated) as 6 bytes.

    Raises
    ------
    ValueError
        When ``text`` is not six hex octets.
    """
    parts = re.split(r"[:-]", text)
    if len(parts) != 6 or not all(re.fullmatch(r"[0-9a-fA-F]{1,2}", p) for p in parts):
        raise ValueError(f"bad mac={text!r}: expected six hex octets like 02:00:00:00:00:01")
    return bytes(int(p, 16) for p in parts)


# ---------------------------------------------------------------------------
# registers through rwaxi


class RwaxiRegisterTransport(RegisterTransport):
    """Register access with NetFPGA SUME's ``rwaxi`` tool (one process per access).

    ``rwaxi -a ADDR`` prints ``READ 0x%08x = 0x%04x`` and ``rwaxi -a ADDR -w
    VALUE`` prints ``WROTE 0x%08x = 0x%04x``. Build it from NetFPGA-SUME-live's
    ``lib/sw/std/apps/sume_riffa_v1_0_0/rwaxi.c`` (``make`` there, next to the
    ``sume_riffa`` driver in ``lib/sw/std/driver/sume_riffa_v1_0_0/``); it
    calls the driver's ioctls (``SIOCDEVPRIVATE+1`` write, ``+2`` read, an
    8-byte ``{addr, val}``) on interface ``nf0`` unless ``-i`` names another.
    Every write is checked (:meth:`write`).

    Parameters
    ----------
    url:
        URL of the switch (for error messages).
    tool:
        Path or name (looked up on ``PATH``) of ``rwaxi``.
    base:
        AXI-Lite address of register 0 (:data:`SUME_S0_AXI_BASE`).
    interface:
        Passed as ``rwaxi -i``; ``None`` keeps the tool's default.
    call_timeout:
        Seconds one ``rwaxi`` run may take.

    Raises
    ------
    TransportError
        When the tool cannot be found or is not executable.
    """

    def __init__(self, url: str, *, tool: str = "rwaxi", base: int = SUME_S0_AXI_BASE,
                 interface: str | None = None, call_timeout: float = 10.0) -> None:
        self.url = url
        path = shutil.which(tool)
        if path is None:
            raise TransportError(
                f"register tool rwaxi={tool!r} for {url} not found or not executable: build and "
                "install NetFPGA SUME's rwaxi (NetFPGA-SUME-live lib/sw/std/apps/sume_riffa_v1_0_0: "
                "make, then put rwaxi on PATH) or point to it with rwaxi=/path/to/rwaxi in the switch URL")
        self.tool = path
        self.base = base
        self.interface = interface
        self.call_timeout = call_timeout
        self._regs = regrules.RegisterFile()  # what a register reads back after a write

    @staticmethod
    def _field(addr: int) -> str:
        return regmap.label(addr)

    def _run(self, addr: int, value: int | None) -> int:
        absolute = (self.base + addr) & 0xFFFFFFFF
        argv = [self.tool, "-a", f"0x{absolute:08x}"]
        if value is not None:
            argv += ["-w", f"0x{value & 0xFFFFFFFF:08x}"]
        if self.interface:
            argv += ["-i", self.interface]
        field = self._field(addr)
        what = f"{'write' if value is not None else 'read'} of register {field}"
        try:
            proc = subprocess.run(argv, capture_output=True, text=True,
                                  timeout=self.call_timeout, check=False)
        except subprocess.TimeoutExpired:
            raise SwitchTimeoutError(self.url, what, 1, f"{' '.join(argv)} hung for "
                                     f"{self.call_timeout} s; is the sume_riffa driver "
                                     "loaded?") from None
        except OSError as e:
            raise TransportError(f"cannot run {self.tool} for {what} at {self.url}: {e}") from e
        pattern = RWAXI_WROTE if value is not None else RWAXI_READ
        m = pattern.search(proc.stdout)
        if proc.returncode != 0 or m is None:
            detail = (proc.stderr.strip() or proc.stdout.strip() or "no output")
            raise RegisterError(field, value,
                                f"{' '.join(argv)} exited with {proc.returncode}: {detail}",
                                ControlStatus.INTERNAL)
        echoed = int(m.group(1), 16)
        if echoed != absolute:
            raise RegisterError(field, value,
                                f"{' '.join(argv)} answered for address 0x{echoed:08x}",
                                ControlStatus.INTERNAL)
        return int(m.group(2), 16) & 0xFFFFFFFF

    def read(self, addr: int) -> int:
        return self._run(addr, None)

    def write(self, addr: int, value: int) -> None:
        """Write a register and check that the write took effect.

        Two checks, each raising :class:`RegisterAccessError` with the tool's
        command line when it fails:

        * the ``WROTE`` line must echo the value written. The ``rwaxi.c`` in
          NetFPGA-SUME-live's project folders (``projects/*/sw/host/apps/``)
          always issues the read ioctl, so with ``-w`` it writes nothing and
          prints the register's current value; the one in
          ``lib/sw/std/apps/sume_riffa_v1_0_0/`` issues ``sume_riffa``'s write
          ioctl (``SIOCDEVPRIVATE+1``) and echoes the value it sent;
        * for a read-write register of the map, a read back (``rwaxi -a``)
          must give the value written or what the register map's write rules
          say it reads after that write (:class:`hostdrv.wire.regrules.RegisterFile`:
          ``CTRL`` bit 31 and ``RPL_RESET`` self-clear). A value the switch
          refuses (out of range, ``docs/registers.md``) keeps the old value
          and fails this check.
        """
        value &= 0xFFFFFFFF
        field = self._field(addr)
        echoed = self._run(addr, value)
        if echoed != value:
            raise RegisterError(
                field, value,
                f"{self.tool} -a 0x{(self.base + addr) & 0xFFFFFFFF:08x} -w 0x{value:08x} printed "
                f"WROTE ... = 0x{echoed:08x}, not the value written: this rwaxi issues the read "
                "ioctl for -w and wrote nothing (the copies in NetFPGA-SUME-live "
                "projects/*/sw/host/apps/rwaxi.c do); build lib/sw/std/apps/sume_riffa_v1_0_0/"
                "rwaxi.c instead and pass rwaxi=/path/to/it (docs/board.md)",
                ControlStatus.INTERNAL)
        reg = regmap.find(addr)
        if reg is None or reg.access != "rw":
            return
        accepted = {value}
        expected = self._regs.write(reg.name, value)  # None: the rules refuse it
        if expected is not None:
            accepted.add(expected)
        got = self._run(addr, None)
        if got not in accepted:
            want = " or ".join(f"0x{v:08x}" for v in sorted(accepted))
            raise RegisterError(
                field, value,
                f"wrote 0x{value:08x} with {self.tool}, read back 0x{got:08x} (expected {want}): "
                "the write did not take effect"
                + ("" if expected is not None else " (the register map's rules refuse this value too)"),
                ControlStatus.INTERNAL if expected is not None else ControlStatus.ILLEGAL_VALUE)

    def close(self) -> None:
        """Nothing to release (one process per access)."""


def board_registers(url: str, opts: Mapping[str, str]) -> RegisterTransport:
    """The register channel named by ``regs=`` (and its options) in a board URL.

    Raises
    ------
    TransportError
        Unknown ``regs=`` kind, bad ``base=``, or the tool is missing.
    """
    kind = opts.get("regs") or "rwaxi"
    if kind not in REGS_KINDS:
        raise TransportError(f"bad regs={kind!r} in url={url!r}: known register channels: "
                             + ", ".join(REGS_KINDS) + " (NetFPGA SUME rwaxi over the PCIe "
                             "driver)")
    base = _int_option(url, opts, "base", SUME_S0_AXI_BASE, 0xFFFFFFFF)
    return RwaxiRegisterTransport(url, tool=opts.get("rwaxi") or "rwaxi", base=base,
                                  interface=opts.get("rwaxi_if") or None)


# ---------------------------------------------------------------------------
# udp://


def _udp_switch(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    if not parts.netloc:
        raise TransportError(f"bad url={url!r}: expected udp://SWITCH_IP:PORT")
    return parse_hostport(parts.netloc, DEFAULT_UDP_PORT)


def udp_datagram(url: str, **options: object) -> DatagramTransport:
    """``udp://`` data channel: a kernel UDP socket to ``SWITCH_IP:PORT``."""
    url_options(url, _REG_KEYS)
    return UdpDatagramTransport(url, _udp_switch(url), **options)  # type: ignore[arg-type]


def udp_registers(url: str, **_options: object) -> RegisterTransport:
    """``udp://`` register channel (``regs=``; ``timeout``/``retries`` do not apply)."""
    _udp_switch(url)
    return board_registers(url, url_options(url, _REG_KEYS))


# ---------------------------------------------------------------------------
# eth://


def build_udp_frame(payload: bytes | bytearray | memoryview, *, eth_dst: bytes, eth_src: bytes,
                    ip_src: int, ip_dst: int, udp_src: int, udp_dst: int) -> bytes:
    """Ethernet II / IPv4 (no options, DF, TTL 64) / UDP (checksum 0) frame around ``payload``.

    The same layout as :func:`hostdrv.wire.protocol.build_frame` (``docs/protocol.md``
    section 1) but for any payload, so that a message is sent byte for byte as
    the caller encoded it.
    """
    n = 42 + len(payload)
    buf = bytearray(n)
    buf[0:6] = eth_dst
    buf[6:12] = eth_src
    buf[12:14] = b"\x08\x00"
    struct.pack_into("!BBHHHBBHII", buf, 14, 0x45, 0, n - ETH_LEN, 0, 0x4000, 64, 17, 0,
                     ip_src, ip_dst)
    struct.pack_into("!H", buf, 24, ip_checksum(buf[14:34]))
    struct.pack_into("!HHHH", buf, 34, udp_src, udp_dst, n - 34, 0)
    buf[42:] = payload
    return bytes(buf)


def udp_payload_span(frame: bytes | bytearray | memoryview, udp_dst: int,
                     ip_src: int | None = None) -> tuple[int, int] | None:
    """(offset, length) of the UDP payload of an IPv4/UDP frame to port ``udp_dst``.

    Parameters
    ----------
    frame:
        A whole Ethernet II frame.
    udp_dst:
        Only frames to this UDP port count.
    ip_src:
        When given, only frames from this IPv4 address count.

    Returns
    -------
    ``None`` for any other frame (not IPv4/UDP, a fragment, another port or
    source, inconsistent lengths).
    """
    n = len(frame)
    if n < ETH_LEN + 20 + 8 or frame[12] != 0x08 or frame[13] != 0x00:
        return None
    vihl = frame[14]
    ihl = 4 * (vihl & 0x0F)
    if vihl >> 4 != 4 or ihl < 20 or frame[23] != 17:
        return None
    frag, = struct.unpack_from("!H", frame, 20)
    if frag & 0x3FFF:  # more-fragments flag or a fragment offset
        return None
    ip_len, = struct.unpack_from("!H", frame, 16)
    udp = ETH_LEN + ihl
    if ip_len < ihl + 8 or ETH_LEN + ip_len > n:
        return None
    if ip_src is not None and struct.unpack_from("!I", frame, 26)[0] != ip_src:
        return None
    dport, ulen = struct.unpack_from("!HH", frame, udp + 2)
    if dport != udp_dst or ulen < 8 or udp + ulen > ETH_LEN + ip_len:
        return None
    return udp + 8, ulen - 8


def interface_ipv4(ifname: str) -> str:
    """IPv4 address of interface ``ifname`` (``SIOCGIFADDR``).

    Raises
    ------
    TransportError
        When the interface does not exist or has no IPv4 address.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            req = struct.pack("256s", ifname.encode()[:15])
            res = fcntl.ioctl(s.fileno(), SIOCGIFADDR, req)
        except OSError as e:
            raise TransportError(f"interface {ifname!r} has no IPv4 address ({e}); give "
                                 "src_ip= in the eth:// URL") from e
    return socket.inet_ntoa(res[20:24])


class EthDatagramTransport(DatagramTransport):
    """Protocol messages as whole Ethernet frames on an ``AF_PACKET`` socket (Linux, root).

    Every message goes out as Ethernet / IPv4 / UDP from ``src_ip:local_port``
    to ``switch_ip:port``; received frames to ``local_port`` (from
    ``switch_ip`` when ``match_source``) are stripped to their UDP payload.

    Parameters
    ----------
    url:
        URL of the switch (for error messages).
    ifname:
        Interface to send and receive on.
    switch_ip:
        ``SWITCH_IP`` of the board.
    port:
        ``UDP_PORT`` of the board.
    src_ip:
        IPv4 source address (default: the interface's).
    dst_mac, src_mac:
        Ethernet addresses (default: broadcast / the interface's MAC).
    local_port:
        UDP source port; 0 reserves a free one.
    match_source:
        Accept only frames whose IPv4 source is ``switch_ip``.

    Raises
    ------
    TransportError
        No such interface, no permission for ``AF_PACKET`` (needs root or
        ``CAP_NET_RAW``), or the local port is taken.
    """

    def __init__(self, url: str, ifname: str, *, switch_ip: str, port: int = DEFAULT_UDP_PORT,
                 src_ip: str | None = None, dst_mac: bytes = BROADCAST_MAC,
                 src_mac: bytes | None = None, local_port: int = 0,
                 match_source: bool = True) -> None:
        self.url = url
        self.ifname = ifname
        self.switch_ip = switch_ip
        self.port = port
        self._ip_dst = ip_to_int(switch_ip)
        self.src_ip = src_ip if src_ip is not None else interface_ipv4(ifname)
        self._ip_src = ip_to_int(self.src_ip)
        if not hasattr(socket, "AF_PACKET"):
            raise TransportError(f"cannot open {url}: AF_PACKET sockets need Linux")
        # Reserve the UDP port: the kernel then neither hands it to another
        # socket nor answers the switch's replies with ICMP port unreachable.
        reserve = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            reserve.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1)
            reserve.bind(("0.0.0.0", local_port))
        except OSError as e:
            reserve.close()
            raise TransportError(f"cannot reserve UDP port {local_port} for {url}: {e}") from e
        self._reserve = reserve
        self.local_port = int(reserve.getsockname()[1])
        try:
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_IP))
        except PermissionError as e:
            reserve.close()
            raise TransportError(f"cannot open {url}: raw Ethernet (AF_PACKET) needs root or "
                                 f"CAP_NET_RAW: {e}") from e
        except OSError as e:
            reserve.close()
            raise TransportError(f"cannot open AF_PACKET socket for {url}: {e}") from e
        try:
            tune_socket(sock)
            try:
                sock.setsockopt(SOL_PACKET, PACKET_VNET_HDR, 1)
                self._vnet = VNET_HDR_LEN
            except OSError:  # without it a GSO batch reads as one datagram (and is dropped)
                self._vnet = 0
            sock.bind((ifname, ETH_P_IP))
            hwaddr = sock.getsockname()[4]
        except OSError as e:
            sock.close()
            reserve.close()
            raise TransportError(f"cannot bind to interface {ifname!r} for {url}: {e}") from e
        sock.setblocking(False)
        self.sock = sock
        self.dst_mac = bytes(dst_mac)
        self.src_mac = bytes(src_mac) if src_mac is not None else bytes(hwaddr).ljust(6, b"\0")
        self._match = self._ip_dst if match_source else None
        self._poll = select.poll()
        self._poll.register(sock, select.POLLIN)
        self._frame = bytearray(ETH_RECV_BYTES)
        self._fmv = memoryview(self._frame)
        self._pending: list[tuple[int, int]] = []  # datagrams of a GSO batch not yet read

    @property
    def local_address(self) -> tuple[str, int]:
        return self.src_ip, self.local_port

    def fileno(self) -> int:
        """File descriptor of the packet socket (for ``select``)."""
        return self.sock.fileno()

    def frame(self, data: bytes | bytearray | memoryview) -> bytes:
        """The whole frame :meth:`send` puts on the wire for message ``data``."""
        return build_udp_frame(data, eth_dst=self.dst_mac, eth_src=self.src_mac,
                               ip_src=self._ip_src, ip_dst=self._ip_dst,
                               udp_src=self.local_port, udp_dst=self.port)

    def send(self, data: bytes | bytearray | memoryview) -> None:
        if len(data) < HEADER_LEN:
            raise ValueError(f"bad message of {len(data)} bytes: shorter than the "
                             f"{HEADER_LEN}-byte header")
        frame = self.frame(data)
        if self._vnet:
            frame = bytes(self._vnet) + frame  # no offload asked: flags and gso_type 0
        try:
            self.sock.send(frame)
        except BlockingIOError:
            pass  # full queue: lossy like UDP, the caller retransmits
        except OSError as e:
            raise TransportError(f"cannot send a {len(frame)}-byte frame on {self.ifname} "
                                 f"({self.url}): {e}") from e

    def recv_into(self, buf: bytearray | memoryview, timeout: float) -> tuple[int, int]:
        if self._pending:
            return self._copy_out(buf, *self._pending.pop(0))
        deadline = -1.0
        v = self._vnet
        while True:
            try:
                n, addr = self.sock.recvfrom_into(self._frame)
            except BlockingIOError:
                n, addr = -1, None
            if n >= v and addr is not None and addr[2] != PACKET_OUTGOING:
                span = udp_payload_span(self._fmv[v:n], self.local_port, self._match)
                if span is not None:
                    off, length = span[0] + v, span[1]
                    seg = int.from_bytes(self._frame[4:6], "little") if v else 0
                    if v and self._frame[1] == VNET_GSO_UDP_L4 and 0 < seg < length:
                        # a GSO batch: one datagram per gso_size bytes, the last may be short
                        parts = [(off + k, min(seg, length - k)) for k in range(0, length, seg)]
                        self._pending = parts[1:]
                        return self._copy_out(buf, *parts[0])
                    return self._copy_out(buf, off, length)
            if n >= 0:
                continue  # another frame: look at the next one without waiting
            now = time.monotonic()
            if deadline < 0:
                deadline = now + timeout
            left = deadline - now
            if left <= 0:
                return 0, 0
            self._poll.poll(max(1, int(left * 1000 + 0.999)))

    def _copy_out(self, buf: bytearray | memoryview, off: int, length: int) -> tuple[int, int]:
        length = min(length, len(buf))
        buf[:length] = self._fmv[off:off + length]
        return length, length

    def close(self) -> None:
        self.sock.close()
        self._reserve.close()


def _eth_ifname(url: str) -> str:
    parts = urlsplit(url)
    ifname = unquote(parts.netloc)
    if not ifname or "/" in ifname or len(ifname) > 15:
        raise TransportError(f"bad url={url!r}: expected eth://IFNAME?switch_ip=A.B.C.D")
    return ifname


def eth_datagram(url: str, **options: object) -> DatagramTransport:
    """``eth://IFNAME?switch_ip=...`` data channel (see the module docstring)."""
    ifname = _eth_ifname(url)
    opts = url_options(url, _ETH_KEYS)
    switch_ip = opts.get("switch_ip")
    if not switch_ip:
        raise TransportError(f"bad url={url!r}: eth:// needs switch_ip=A.B.C.D")
    try:
        ip_to_int(switch_ip)
        if opts.get("src_ip"):
            ip_to_int(opts["src_ip"])
        dst_mac = parse_mac(opts["dst_mac"]) if opts.get("dst_mac") else BROADCAST_MAC
        src_mac = parse_mac(opts["src_mac"]) if opts.get("src_mac") else None
    except ValueError as e:
        raise TransportError(f"{e} in url={url!r}") from None
    return EthDatagramTransport(
        url, ifname, switch_ip=switch_ip,
        port=_int_option(url, opts, "port", DEFAULT_UDP_PORT, 0xFFFF),
        src_ip=opts.get("src_ip") or None, dst_mac=dst_mac, src_mac=src_mac,
        local_port=_int_option(url, opts, "local_port", 0, 0xFFFF),
        **options)  # type: ignore[arg-type]


def eth_registers(url: str, **_options: object) -> RegisterTransport:
    """``eth://`` register channel: the same ``regs=`` options as ``udp://``."""
    _eth_ifname(url)
    return board_registers(url, url_options(url, _ETH_KEYS))

