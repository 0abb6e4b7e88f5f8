"""Soft switch: the reference model behind a UDP socket.

Run it as ``python -m hostdrv.softswitch --listen 127.0.0.1:20050`` (or the
``netfpga-softswitch`` console script), in a thread with :class:`SoftSwitch`,
or as a child process with :class:`SoftSwitchProcess`. Clients reach it as
``soft://host:port``.

Data path
---------
Every datagram is one protocol message (the UDP payload). The switch wraps
it into the frame the hardware would see: Ethernet (destination the switch
MAC, source ``02:00`` + the sender's IPv4), IPv4 from the real source address
to ``SWITCH_IP``, UDP from the real source port to ``UDP_PORT``, then hands it
to :meth:`hostdrv.model.SwitchModel.process` with the ingress port of the
sender:

* ``MEMBER_PORT[i]`` of the member whose ``MEMBER_IP``/``MEMBER_UDP`` match the
  source address (``MEMBER_UDP`` = 0 matches any port of that address);
* ``AGG_UPLINK_PORT`` when the source is the parent of a leaf
  (``AGG_PARENT_IP``:``AGG_PARENT_UDP``);
* otherwise a port no member is on, so the model drops a packet that claims
  to be a member as ``SPOOFED``.

Each emitted frame goes out as a UDP datagram carrying its bytes 42 onward:
a frame to ``MCAST_IP`` to every aggregation member (role bit 0) whose
``MEMBER_PORT`` is in the egress bitmap, at ``MEMBER_IP``:``MEMBER_UDP``; any
other frame to its IPv4 destination and UDP destination port. Datagrams for
one destination produced by one receive are sent with UDP GSO (one system
call for up to 64), and received batches are coalesced with UDP GRO.

Control channel
---------------
Register reads and writes arrive on the same socket as ``NRLC`` datagrams
(format in :mod:`hostdrv.transport`); they are executed in arrival order with
the protocol traffic, so a write takes effect before every packet received
after it.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hostdrv import regmap
from hostdrv.model import SwitchModel
from hostdrv.protocol import HEADER, HEADER_LEN, HEADER_OFFSET, Opcode
from hostdrv.transport import (
    CONTROL,
    CONTROL_MAGIC,
    CONTROL_READ,
    CONTROL_REPLY,
    CONTROL_WRITE,
    GSO_MAX_BYTES,
    GSO_MAX_SEGMENTS,
    SOL_UDP,
    UDP_GRO,
    UDP_SEGMENT,
    ControlStatus,
    int_to_ip,
    ip_to_int,
    parse_hostport,
    tune_socket,
)

_IN = struct.Struct("!6s6sHBBHHHBBHIIHHHH")  # Ethernet + IPv4 + UDP header of an input frame
_LENGTHS_IP = 16
_LENGTHS_UDP = 38
_OUT = struct.Struct("!I2xH")  # at 30: IPv4 destination, UDP destination port
_RECV_BYTES = 65536
_GRO_ANC = socket.CMSG_SPACE(4)
_GRADIENT = int(Opcode.GRADIENT)


@dataclass(frozen=True)
class Arrival:
    """One GRADIENT datagram as it reached the switch (logged when asked for).

    Attributes
    ----------
    slot, seq, worker, aux:
        Header fields.
    payload:
        The element bytes (little-endian fp32 or int32).
    """

    slot: int
    seq: int
    worker: int
    aux: int
    payload: bytes


class SoftSwitch:
    """A :class:`~hostdrv.model.SwitchModel` served over UDP.

    Parameters
    ----------
    listen:
        ``"host:port"`` or (host, port) to bind; port 0 picks a free one
        (see :attr:`address`).
    capacity, record_bytes, max_slots, max_elems, build_hash:
        Model parameters (see :class:`~hostdrv.model.SwitchModel`).
    log_arrivals:
        Keep every GRADIENT datagram in :attr:`arrivals` (tests use it to
        recompute fp32 sums in arrival order).
    model:
        Serve this model instead of a new one. Change its registers through
        :meth:`write` (or the control channel), which also refreshes the
        address tables the switch routes with.

    Examples
    --------
    >>> with SoftSwitch("127.0.0.1:0") as sw:               # doctest: +SKIP
    ...     ctl = SwitchControl(sw.url)
    """

    def __init__(self, listen: str | tuple[str, int] = ("127.0.0.1", 0), *,
                 capacity: int = 1024, record_bytes: int = 128, max_slots: int = 64,
                 max_elems: int = 352, build_hash: int = 0, log_arrivals: bool = False,
                 model: SwitchModel | None = None) -> None:
        self.model = model if model is not None else SwitchModel(
            capacity=capacity, record_bytes=record_bytes, max_slots=max_slots,
            max_elems=max_elems, build_hash=build_hash)
        host, port = parse_hostport(listen) if isinstance(listen, str) else listen
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        tune_socket(sock)
        try:
            sock.bind((host, port))
        except OSError as e:
            sock.close()
            raise OSError(e.errno, f"cannot listen on {host}:{port}: {e.strerror}") from e
        sock.setblocking(False)
        self._gro = True
        try:
            sock.setsockopt(SOL_UDP, UDP_GRO, 1)
        except OSError:
            self._gro = False
        self._gso = True
        self.sock = sock
        self.arrivals: list[Arrival] | None = [] if log_arrivals else None
        self.lock = threading.Lock()
        """Held while a batch of datagrams is processed; take it to touch :attr:`model`."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._replies: dict[tuple[str, int], tuple[bytes, bytes]] = {}
        self._poll = select.poll()
        self._poll.register(sock, select.POLLIN)
        self._rbuf = bytearray(_RECV_BYTES)
        self._frame = bytearray(HEADER_OFFSET + _RECV_BYTES)
        self._tables_valid = False
        self._sources: dict[tuple[str, int], tuple[int, bytes]] = {}
        self._stats = {"datagrams": 0, "control": 0, "sent": 0, "send_calls": 0, "receives": 0,
                       "busy_us": 0, "errors": 0}

    # -- addressing --------------------------------------------------------------
    @property
    def address(self) -> tuple[str, int]:
        """(host, port) the switch listens on."""
        host, port = self.sock.getsockname()[:2]
        return str(host), int(port)

    @property
    def url(self) -> str:
        """``soft://host:port`` for clients."""
        host, port = self.address
        return f"soft://{host}:{port}"

    def _rebuild_tables(self) -> None:
        """Recompute source → ingress port and egress port → address maps from the registers."""
        rd = self.model.read
        exact: dict[tuple[int, int], int] = {}
        any_port: dict[int, int] = {}
        used = 0
        self._members: list[tuple[int, tuple[str, int]]] = []
        for i in range(regmap.MEMBER_COUNT):
            port = rd(regmap.member_reg("MEMBER_PORT", i))
            ip = rd(regmap.member_reg("MEMBER_IP", i))
            udp = rd(regmap.member_reg("MEMBER_UDP", i))
            role = rd(regmap.member_reg("MEMBER_ROLE", i))
            if not port:
                continue
            used |= port
            if udp:
                exact.setdefault((ip, udp), port)
            else:
                any_port.setdefault(ip, port)
            if role & 1 and ip and udp:
                self._members.append((port, (int_to_ip(ip), udp)))
        if rd("AGG_ROLE") == 1 and rd("AGG_UPLINK_PORT"):
            parent = (rd("AGG_PARENT_IP"), rd("AGG_PARENT_UDP") or rd("UDP_PORT"))
            exact[parent] = rd("AGG_UPLINK_PORT")
            used |= rd("AGG_UPLINK_PORT")
        self._exact, self._any_port = exact, any_port
        free = [1 << b for b in range(7, -1, -1) if not used & (1 << b)]
        self._stranger_port = free[0] if free else 0x80
        self._mcast_ip = rd("MCAST_IP")
        self._switch_ip = rd("SWITCH_IP")
        self._udp_port = rd("UDP_PORT")
        mac = ((rd("SWITCH_MAC_HI") << 32) | rd("SWITCH_MAC_LO")).to_bytes(6, "big")
        self._mac = mac
        self._sources.clear()
        self._tables_valid = True

    def _source(self, addr: tuple[str, int]) -> tuple[int, bytes]:
        """(ingress port, 42-byte frame header template) for datagrams from ``addr``."""
        ip = ip_to_int(addr[0])
        port = self._exact.get((ip, addr[1])) or self._any_port.get(ip) or self._stranger_port
        hdr = _IN.pack(self._mac, b"\x02\x00" + ip.to_bytes(4, "big"), 0x0800,
                       0x45, 0, 0, 0, 0x4000, 64, 17, 0, ip, self._switch_ip,
                       addr[1], self._udp_port, 0, 0)
        entry = (port, hdr)
        if len(self._sources) > 4096:
            self._sources.clear()
        self._sources[addr] = entry
        return entry

    # -- register access (thread safe) ---------------------------------------------
    def read(self, reg: str | int) -> int:
        """Read a model register (by name or address)."""
        with self.lock:
            return self.model.read(reg)

    def write(self, reg: str | int, value: int) -> None:
        """Write a model register (by name or address); raises ``ValueError`` if illegal."""
        with self.lock:
            self.model.write(reg, value)
            self._tables_valid = False

    def counters(self) -> dict[str, int]:
        """Every counter of the model by name."""
        with self.lock:
            return self.model.counters()

    @property
    def stats(self) -> dict[str, int]:
        """Host-side figures: datagrams and control requests received, datagrams sent and
        send calls, receive calls, microseconds spent processing (``busy_us``) and
        datagrams whose processing raised (``errors``; the first is printed)."""
        return dict(self._stats)

    # -- serving -----------------------------------------------------------------
    def _control(self, data: memoryview, addr: tuple[str, int]) -> bytes:
        """Execute one control request and return the reply datagram."""
        self._stats["control"] += 1
        if len(data) < CONTROL.size:
            return CONTROL.pack(CONTROL_MAGIC, CONTROL_REPLY, ControlStatus.BAD_REQUEST, 0, 0, 0) \
                + b"request shorter than 16 bytes"
        _m, op, _z, tag, reg, value = CONTROL.unpack_from(data)
        key = bytes(data[:CONTROL.size])
        cached = self._replies.get(addr)
        if cached is not None and cached[0] == key:
            return cached[1]  # a retried request: answer again, do not execute twice
        status, text, out = ControlStatus.OK, "", 0
        name = regmap.BY_ADDR[reg].name if reg in regmap.BY_ADDR else None
        if name is None:
            status, text = ControlStatus.UNKNOWN_REGISTER, f"no register at address 0x{reg:03X}"
        elif op == CONTROL_READ:
            out = self.model.read(name)
        elif op == CONTROL_WRITE:
            if regmap.REGISTERS[name].access != "rw":
                status, text = ControlStatus.READ_ONLY, f"register {name} is read-only"
            else:
                try:
                    self.model.write(name, value)
                    out = value
                except ValueError as e:
                    status, text = ControlStatus.ILLEGAL_VALUE, str(e)
                self._tables_valid = False
        else:
            status, text = ControlStatus.BAD_REQUEST, f"unknown op {op} (1 read, 2 write)"
        reply = CONTROL.pack(CONTROL_MAGIC, op | CONTROL_REPLY, status, tag, reg, out & 0xFFFFFFFF) \
            + text.encode()
        if len(self._replies) > 4096:
            self._replies.clear()
        self._replies[addr] = (key, reply)
        return reply

    def _send(self, bufs: list[memoryview], dst: tuple[str, int], seg: int) -> None:
        sock = self.sock
        cmsg = [(SOL_UDP, UDP_SEGMENT, struct.pack("=H", seg))] if len(bufs) > 1 else []
        for attempt in range(50):
            try:
                if cmsg:
                    sock.sendmsg(bufs, cmsg, 0, dst)
                else:
                    sock.sendto(bufs[0], dst)
            except BlockingIOError:  # send buffer full: wait for room
                select.select([], [sock], [], 0.002 * (attempt + 1))
                continue
            except ConnectionRefusedError:  # ICMP error left by an earlier datagram
                continue
            except OSError:
                if cmsg:  # no GSO on this path: one by one
                    self._gso = False
                    for b in bufs:
                        self._send([b], dst, len(b))
                return  # unreachable destination: lost, as on a wire
            self._stats["send_calls"] += 1
            self._stats["sent"] += len(bufs)
            return

    def _flush(self, pending: dict[tuple[str, int], list[memoryview]]) -> None:
        for dst, bufs in pending.items():
            if len(bufs) == 1 or not self._gso:
                for b in bufs:
                    self._send([b], dst, len(b))
                continue
            i, n = 0, len(bufs)
            while i < n:
                seg = len(bufs[i])
                lim = min(GSO_MAX_SEGMENTS, GSO_MAX_BYTES // max(seg, 1))
                j = i + 1
                while j < n and j - i < lim and len(bufs[j]) == seg:
                    j += 1
                self._send(bufs[i:j], dst, seg)
                i = j
        pending.clear()

    def _process(self, n: int, seg: int, addr: tuple[str, int],
                 pending: dict[tuple[str, int], list[memoryview]]) -> None:
        """Run ``n`` received bytes (messages of ``seg`` bytes) from ``addr`` through the model."""
        rbuf = memoryview(self._rbuf)
        if rbuf[:4] == CONTROL_MAGIC:
            reply = self._control(rbuf[:n], addr)
            self._send([memoryview(reply)], addr, len(reply))
            return
        if not self._tables_valid:
            self._rebuild_tables()
        src = self._sources.get(addr) or self._source(addr)
        port, hdr = src
        frame = self._frame
        fmv = memoryview(frame)
        frame[:HEADER_OFFSET] = hdr
        process = self.model.process
        arrivals = self.arrivals
        mcast, members = self._mcast_ip, self._members
        unpack_out = _OUT.unpack_from
        for off in range(0, n, seg):
            size = min(seg, n - off)
            flen = HEADER_OFFSET + size
            frame[HEADER_OFFSET:flen] = rbuf[off:off + size]
            struct.pack_into("!H", frame, _LENGTHS_IP, flen - 14)
            struct.pack_into("!H", frame, _LENGTHS_UDP, flen - 34)
            self._stats["datagrams"] += 1
            if arrivals is not None and size >= HEADER_LEN and frame[HEADER_OFFSET + 1] == _GRADIENT:
                _v, _o, _f, _j, w, slot, seq, _c, aux, _r = HEADER.unpack_from(frame, HEADER_OFFSET)
                arrivals.append(Arrival(slot, seq, w, aux, bytes(frame[64:flen])))
            for eg in process(fmv[:flen], port):
                out = eg.frame
                ip_dst, udp_dst = unpack_out(out, 30)
                body = memoryview(out)[HEADER_OFFSET:]
                if ip_dst == mcast:
                    ports = eg.dst_ports
                    for mport, dst in members:
                        if mport & ports:
                            pending.setdefault(dst, []).append(body)
                elif ip_dst and udp_dst:
                    pending.setdefault((int_to_ip(ip_dst), udp_dst), []).append(body)

    def serve_forever(self, poll_interval: float = 0.05) -> None:
        """Serve until :meth:`stop` (or a signal handler calling it)."""
        sock, rbuf, stop = self.sock, self._rbuf, self._stop
        pending: dict[tuple[str, int], list[memoryview]] = {}
        gro = self._gro
        stats = self._stats
        perf_counter = time.perf_counter
        wait_ms = max(1, int(poll_interval * 1000))
        while not stop.is_set():
            try:
                if gro:
                    n, anc, _fl, addr = sock.recvmsg_into([rbuf], _GRO_ANC)
                    seg = n
                    for level, kind, data in anc:
                        if level == SOL_UDP and kind == UDP_GRO and len(data) >= 4:
                            seg = struct.unpack_from("=i", data)[0] or n
                else:
                    n, addr = sock.recvfrom_into(rbuf)
                    seg = n
            except BlockingIOError:
                self._poll.poll(wait_ms)
                continue
            except ConnectionRefusedError:
                continue
            t0 = perf_counter()
            with self.lock:
                try:
                    self._process(n, max(seg, 1), addr, pending)
                except Exception as e:  # noqa: BLE001 - a bad datagram must not stop the switch
                    stats["errors"] += 1
                    if stats["errors"] == 1:
                        print(f"netfpga-softswitch: datagram from {addr} raised "
                              f"{type(e).__name__}: {e}", file=sys.stderr)
                if pending:
                    self._flush(pending)
            stats["receives"] += 1
            stats["busy_us"] += int((perf_counter() - t0) * 1e6)

    def start(self) -> SoftSwitch:
        """Serve in a daemon thread; returns ``self``."""
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self.serve_forever, name="softswitch",
                                            daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving (joins the thread started by :meth:`start`)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def close(self) -> None:
        """Stop and release the socket."""
        self.stop()
        self.sock.close()

    def __enter__(self) -> SoftSwitch:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------------------
# child process


class SoftSwitchProcess:
    """A soft switch in a child process (``python -m hostdrv.softswitch``).

    Parameters
    ----------
    listen:
        Address to bind (port 0: a free one; the child reports it).
    args:
        Extra command-line options (``["--capacity", "4096"]``).
    ready_timeout:
        Seconds to wait for the child to report its address.

    Raises
    ------
    RuntimeError
        When the child exits or stays silent before it listens.
    """

    module = "hostdrv.softswitch"
    """The ``python -m`` module the child runs."""
    scheme = "soft"
    """URL scheme the child announces (``listening soft://host:port``)."""

    def __init__(self, listen: str = "127.0.0.1:0", args: Sequence[str] = (), *,
                 ready_timeout: float = 20.0) -> None:
        root = str(Path(__file__).resolve().parents[1])
        env = dict(os.environ)
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env["PYTHONUNBUFFERED"] = "1"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", self.module, "--listen", listen, *args],
            stdout=subprocess.PIPE, text=True, env=env)
        assert self.proc.stdout is not None
        deadline = time.monotonic() + ready_timeout
        line = ""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.1)
            if ready:
                line = self.proc.stdout.readline()
                break
            if self.proc.poll() is not None:
                break
        if not line.startswith(f"listening {self.scheme}://"):
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError(f"{self.module} child did not start (exit {self.proc.returncode}, "
                               f"said {line!r})")
        self.url = line.split()[1]
        self.address = parse_hostport(self.url.split("//", 1)[1])
        self.output = ""

    def stop(self, timeout: float = 10.0) -> str:
        """SIGTERM the child, wait, and return what it printed after starting."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                out, _ = self.proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                out, _ = self.proc.communicate()
            self.output = out or ""
        return self.output

    def __enter__(self) -> SoftSwitchProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


# ---------------------------------------------------------------------------
# command line


def build_parser() -> argparse.ArgumentParser:
    """Command-line options of ``netfpga-softswitch``."""
    p = argparse.ArgumentParser(prog="netfpga-softswitch",
                                description="Run the netfpga-rl reference switch behind a UDP socket.")
    p.add_argument("--listen", default="127.0.0.1:20050", help="host:port to bind (port 0: any)")
    p.add_argument("--capacity", type=int, default=1024, help="replay records C (power of two)")
    p.add_argument("--record-bytes", type=int, default=128, help="bytes per record R (x64)")
    p.add_argument("--max-slots", type=int, default=64, help="aggregation slot memory depth")
    p.add_argument("--max-elems", type=int, default=352, help="largest elements per packet P: 352 fits an Ethernet frame (the hardware limit); up to 16368 on loopback, one 64 KB datagram per chunk")
    p.add_argument("--build-hash", type=lambda s: int(s, 0), default=0,
                   help="value of BUILD_HASH")
    p.add_argument("--profile", metavar="FILE", help="write a cProfile of the serve loop to FILE")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``netfpga-softswitch``: serve until SIGINT/SIGTERM, print the counters."""
    args = build_parser().parse_args(argv)
    try:
        sw = SoftSwitch(args.listen, capacity=args.capacity, record_bytes=args.record_bytes,
                        max_slots=args.max_slots, max_elems=args.max_elems,
                        build_hash=args.build_hash)
    except (OSError, ValueError) as e:
        print(f"netfpga-softswitch: {e}", file=sys.stderr)
        return 2

    def _stop(_signum: int, _frame: object) -> None:
        sw._stop.set()

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    print(f"listening {sw.url}", flush=True)
    if args.profile:
        import cProfile

        prof = cProfile.Profile()
        prof.runcall(sw.serve_forever)
        prof.dump_stats(args.profile)
    else:
        sw.serve_forever()
    sw.sock.close()
    counters = {k: v for k, v in sw.model.counters().items() if v}
    print("counters " + json.dumps(counters), flush=True)
    print("stats " + json.dumps(sw.stats), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
