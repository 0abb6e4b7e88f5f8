"""The RTL as a rack's switch: raw Ethernet frames from interfaces into the simulated MAC ports.

:class:`RtlEthBridge` runs :class:`~hostdrv.switch.rtl.RtlSwitch`
(``hw/rtl/nrl_switch.v`` under Verilator) and joins it to real interfaces:
interface ``i`` of ``ports`` is SUME MAC port ``i``, whose one-hot bit in
TUSER is ``1 << 2*i`` (``docs/board.md``: the odd bits are the DMA ports).
Every frame read from interface ``i`` (``AF_PACKET``) goes into ``s_axis``
with ``src_port = 1 << 2*i``; every frame the RTL emits leaves on each MAC
port set in its ``dst_ports`` bitmap. So hosts see exactly the frames a SUME
board would send them: protocol replies (``eth://`` clients), and every
other frame (ARP, ICMP, TCP, UDP to other hosts) through the RTL's L2 path
(flooded to every MAC port but the ingress one, counted in ``CNT_PASS``).

Registers
---------
The board's registers are reached with NetFPGA's ``rwaxi`` tool, not over
the network; the bridge does the same: it serves ``rwaxi``'s command line on
a Unix socket (a file, so every network namespace of the machine reaches
it), and :func:`write_rwaxi_tool` writes an executable ``rwaxi`` that talks
to it. A client uses the board's URL with that tool::

    eth://eth0?switch_ip=10.77.0.254&regs=rwaxi&rwaxi=/tmp/nrl-rack/P/rwaxi

Checksums and offloads
----------------------
The interfaces are veths: a frame a host's kernel sent may carry only the
partial (pseudo-header) checksum (``CHECKSUM_PARTIAL``). The bridge reads
with ``PACKET_VNET_HDR`` and completes such checksums before the frame enters
the RTL, as a NIC would on the wire. GSO super-frames (TCP segmentation
offload) cannot enter a MAC port: they are dropped and counted
(``stats["gso_dropped"]``); turn TSO off on the hosts for TCP through the RTL.

Command line::

    python -m hostdrv.switch.rtl_bridge --port p0 --port p1 --socket FILE \
        --switch-ip 10.77.0.254
    python -m hostdrv.switch.rtl_bridge rwaxi --socket FILE -a 0x44010000 [-w 5]

The first prints ``ready`` when the RTL is built and every socket bound, and
on SIGTERM ``stats {...}`` and the RTL's nonzero counters.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import socket
import stat
import struct
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from hostdrv.switch.rtl import RtlSwitch
from hostdrv.switch.sim import DEFAULT_PARAMS
from hostdrv.wire.net import ip_to_int
from hostdrv.wire.sume import SUME_S0_AXI_BASE

__all__ = ["RtlEthBridge", "main", "mac_port_bit", "write_rwaxi_tool"]

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_VNET_HDR = 15
PACKET_IGNORE_OUTGOING = 23
PACKET_OUTGOING = 4
VNET = struct.Struct("<BBHHHH")  # flags, gso_type, hdr_len, gso_size, csum_start, csum_offset
VNET_F_NEEDS_CSUM = 1
NO_VNET = bytes(VNET.size)
MAX_PORTS = 4
"""SUME has four MAC ports."""


def mac_port_bit(i: int) -> int:
    """TUSER one-hot bit of SUME MAC port ``i`` (``1 << 2*i``)."""
    return 1 << (2 * i)


def _csum(data: bytes | memoryview) -> int:
    """Internet checksum (RFC 1071) of ``data``, complemented."""
    if len(data) % 2:
        data = bytes(data) + b"\0"
    total = sum(memoryview(data).cast("H"))  # native order; swapped back below
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    value = ~total & 0xFFFF
    return socket.htons(value) if sys.byteorder == "little" else value


def complete_checksum(frame: bytearray, start: int, offset: int) -> None:
    """Fill the checksum a ``CHECKSUM_PARTIAL`` frame leaves to the NIC: the ones' complement
    sum from ``start`` to the end, the field (holding the pseudo-header sum) included."""
    pos = start + offset
    if pos + 2 > len(frame):
        return
    value = _csum(memoryview(frame)[start:])
    if value == 0 and frame[23:24] == b"\x11":  # UDP sends 0 as 0xFFFF
        value = 0xFFFF
    frame[pos:pos + 2] = value.to_bytes(2, "big")


def _open(ifname: str) -> socket.socket:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.setsockopt(SOL_PACKET, PACKET_VNET_HDR, 1)
    try:
        s.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
    except OSError:
        pass
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.bind((ifname, ETH_P_ALL))
    s.setblocking(False)
    return s


class RtlEthBridge:
    """The RTL switch with interface ``ports[i]`` as its MAC port ``i``.

    Parameters
    ----------
    ports:
        Interface names, at most four.
    socket_path:
        Unix socket for register access (:func:`rwaxi_request`); None: no register server.
    rtl:
        A built :class:`RtlSwitch` (default: the sim switch's, ``DEFAULT_PARAMS``).
    base:
        AXI address of register 0 as ``rwaxi`` callers see it (the board's
        :data:`~hostdrv.wire.sume.SUME_S0_AXI_BASE`).
    switch_ip:
        Written to ``SWITCH_IP`` (the source address of the switch's replies, which
        ``eth://`` clients match against their ``switch_ip``); None keeps the reset value.
    """

    def __init__(self, ports: Sequence[str], socket_path: str | Path | None = None, *,
                 rtl: RtlSwitch | None = None, base: int = SUME_S0_AXI_BASE,
                 switch_ip: str | None = None) -> None:
        if not 1 <= len(ports) <= MAX_PORTS:
            raise ValueError(f"bad ports={list(ports)!r}: 1..{MAX_PORTS} interfaces")
        self.ports = list(ports)
        self.base = base
        self.rtl = rtl or RtlSwitch("nrl_switch", dict(DEFAULT_PARAMS["nrl_switch"]))
        if switch_ip is not None:
            self.rtl.write("SWITCH_IP", ip_to_int(switch_ip))
        self.sockets = [_open(p) for p in self.ports]
        self.stats = {"rx": 0, "tx": 0, "gso_dropped": 0, "dma_egress": 0, "reg_ops": 0}
        self._lock = threading.Lock()
        self._running = True
        self._unix: socket.socket | None = None
        if socket_path is not None:
            path = Path(socket_path)
            if path.exists():
                path.unlink()
            self._unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._unix.bind(str(path))
            os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
            self._unix.listen(8)
            self._unix.setblocking(False)

    def stop(self) -> None:
        """Make :meth:`serve_forever` return."""
        self._running = False

    def close(self) -> None:
        """Close the sockets and the RTL."""
        for s in self.sockets:
            s.close()
        if self._unix is not None:
            self._unix.close()
        self.rtl.close()

    # -- frames ------------------------------------------------------------------------
    def _frame_in(self, i: int, data: bytes) -> None:
        flags, gso, _hl, _gs, start, offset = VNET.unpack_from(data)
        if gso:
            self.stats["gso_dropped"] += 1
            return
        frame = bytearray(data[VNET.size:])
        if flags & VNET_F_NEEDS_CSUM:
            complete_checksum(frame, start, offset)
        self.stats["rx"] += 1
        with self._lock:
            out = self.rtl.process(frame, mac_port_bit(i))
        for eg in out:
            for j, s in enumerate(self.sockets):
                if eg.dst_ports & mac_port_bit(j):
                    s.send(NO_VNET + eg.frame)
                    self.stats["tx"] += 1
            if eg.dst_ports & 0xAA:
                self.stats["dma_egress"] += 1

    # -- registers ---------------------------------------------------------------------
    def _serve_register(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            req = b""
            while not req.endswith(b"\n"):
                chunk = conn.recv(256)
                if not chunk:
                    return
                req += chunk
            words = req.split()
            try:
                addr = int(words[0], 0)
                reg = addr - self.base
                with self._lock:
                    if len(words) > 1:
                        value = int(words[1], 0)
                        self.rtl.write(reg, value)
                        reply = f"WROTE 0x{addr:08x} = 0x{value:04x}\n"
                    else:
                        reply = f"READ 0x{addr:08x} = 0x{self.rtl.read(reg):04x}\n"
                self.stats["reg_ops"] += 1
            except (ValueError, IndexError, KeyError) as e:
                reply = f"ERROR {e}\n"
            conn.sendall(reply.encode())

    def serve_forever(self) -> None:
        """Forward frames and serve register requests until :meth:`stop`."""
        poller = select.poll()
        fds = {s.fileno(): i for i, s in enumerate(self.sockets)}
        for fd in fds:
            poller.register(fd, select.POLLIN)
        if self._unix is not None:
            poller.register(self._unix.fileno(), select.POLLIN)
        while self._running:
            try:
                events = poller.poll(200)
            except InterruptedError:
                continue
            for fd, _ev in events:
                if fd in fds:
                    i = fds[fd]
                    while True:
                        try:
                            data, addr = self.sockets[i].recvfrom(65536 + 64)
                        except BlockingIOError:
                            break
                        if addr[2] != PACKET_OUTGOING:
                            self._frame_in(i, data)
                elif self._unix is not None:
                    try:
                        conn, _ = self._unix.accept()
                    except BlockingIOError:
                        continue
                    conn.setblocking(True)
                    self._serve_register(conn)


def rwaxi_request(socket_path: str | Path, addr: int, value: int | None = None,
                  timeout: float = 10.0) -> str:
    """One register access through a bridge's Unix socket; ``rwaxi``'s output line."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(str(socket_path))
        s.sendall((f"0x{addr:x}" + ("" if value is None else f" 0x{value:x}") + "\n").encode())
        out = b""
        while not out.endswith(b"\n"):
            chunk = s.recv(256)
            if not chunk:
                break
            out += chunk
    return out.decode().strip()


def write_rwaxi_tool(path: str | Path, socket_path: str | Path) -> Path:
    """Write an executable ``rwaxi`` at ``path`` that reaches the bridge at ``socket_path``
    (the options and output of NetFPGA SUME's tool: ``-a ADDR [-w VALUE] [-i IF]``)."""
    path = Path(path)
    root = Path(__file__).resolve().parents[2]
    path.write_text(f"#!/bin/sh\nPYTHONPATH={root}${{PYTHONPATH:+:$PYTHONPATH}} exec "
                    f"{sys.executable} -m hostdrv.switch.rtl_bridge rwaxi "
                    f"--socket {socket_path} \"$@\"\n")
    path.chmod(0o755)
    return path


def _rwaxi_main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog="rwaxi")
    p.add_argument("--socket", required=True)
    p.add_argument("-a", required=True, type=lambda s: int(s, 0))
    p.add_argument("-w", type=lambda s: int(s, 0), default=None)
    p.add_argument("-i", default=None, help="interface (ignored: one bridge per socket)")
    args = p.parse_args(argv)
    line = rwaxi_request(args.socket, args.a, args.w)
    print(line)
    return 1 if line.startswith("ERROR") or not line else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point (see the module doc)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["rwaxi"]:
        return _rwaxi_main(argv[1:])
    p = argparse.ArgumentParser(prog="rtl_eth_bridge", description=__doc__.splitlines()[0])
    p.add_argument("--port", action="append", required=True, help="interface of MAC port i")
    p.add_argument("--socket", default=None, help="Unix socket for register access")
    p.add_argument("--switch-ip", default=None, help="value of SWITCH_IP (the replies' source)")
    args = p.parse_args(argv)
    bridge = RtlEthBridge(args.port, args.socket, switch_ip=args.switch_ip)
    signal.signal(signal.SIGTERM, lambda *_: bridge.stop())
    signal.signal(signal.SIGINT, lambda *_: bridge.stop())
    print(f"ready pid={os.getpid()}", flush=True)
    bridge.serve_forever()
    counters = {k: v for k, v in bridge.rtl.counters().items() if v}
    bridge.close()
    print("stats " + json.dumps(bridge.stats), flush=True)
    print("counters " + json.dumps(counters), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
