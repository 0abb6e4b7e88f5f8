"""The soft switch's datagram path: the switch engine behind a UDP socket.

:class:`DatagramLoop` is the part of :class:`~hostdrv.switch.soft.SoftSwitch` that
receives datagrams, wraps each into the frame the hardware would see, runs it
through the engine and sends what comes out (UDP GSO/GRO, ``SO_RXQ_OVFL``), in
Python (``engine="model"``) or in the native socket loop
(``hostdrv/native/nrl_server.cpp``, ``engine="native"``). The rules are in the
module documentation of :mod:`hostdrv.switch.soft` (Data path).
"""

from __future__ import annotations

import select
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hostdrv.switch import native as native_engine
from hostdrv.switch.engine import Engine
from hostdrv.wire import regmap
from hostdrv.wire.control import CONTROL_MAGIC
from hostdrv.wire.net import (
    GSO_MAX_BYTES,
    GSO_MAX_SEGMENTS,
    SOL_UDP,
    UDP_GRO,
    UDP_SEGMENT,
    int_to_ip,
    ip_to_int,
)
from hostdrv.wire.protocol import HEADER, HEADER_LEN, HEADER_OFFSET, Opcode

_IN = struct.Struct("!6s6sHBBHHHBBHIIHHHH")  # Ethernet + IPv4 + UDP header of an input frame
_LENGTHS_IP = 16
_LENGTHS_UDP = 38
_U16 = struct.Struct("!H")
_OUT = struct.Struct("!I2xH")  # at 30: IPv4 destination, UDP destination port
RECV_BYTES = 65536
"""The receive buffer: the largest datagram (or GRO batch) one receive takes."""
SO_RXQ_OVFL = getattr(socket, "SO_RXQ_OVFL", 40)
"""Linux socket option: a cmsg with the socket's drop count on every received datagram."""
_ANC = 2 * socket.CMSG_SPACE(4)  # UDP_GRO segment size and SO_RXQ_OVFL drop count
_GRADIENT = int(Opcode.GRADIENT)
_WORKER_AT = HEADER_OFFSET + 4  # the header's worker field (u16) in a frame
_JOB_AT = HEADER_OFFSET + 3  # the header's job byte in a frame


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


class DatagramLoop:
    """The datagram path of a soft switch (a mixin of :class:`~hostdrv.switch.soft.SoftSwitch`,
    which sets the attributes below)."""

    log_name: str
    model: Engine
    lock: threading.Lock
    sock: socket.socket
    _gro: bool
    _ovfl: bool
    _gso: bool
    _stop: threading.Event
    _poll: select.poll
    _rbuf: bytearray
    _frame: bytearray
    _arrivals: list[Arrival] | None
    _stats: dict[str, int]
    _native: object | None
    _tables_valid: bool
    _sources: dict[tuple[str, int], tuple[int, bytes, dict[tuple[int, int], int] | None]]
    _members: list[tuple[int, int, tuple[str, int]]]
    _agg_entries: list[tuple[tuple[int, int], int, int, tuple[str, int] | None]]
    _last_addr: dict[tuple[int, int], tuple[str, int]]
    _pages: dict[int, int]

    if TYPE_CHECKING:
        @property
        def engine(self) -> str: ...
        def _control(self, data: memoryview, addr: tuple[str, int]) -> bytes: ...
        def _native_control(self, data: bytes, host: str, port: int) -> bytes: ...

    # -- addressing --------------------------------------------------------------
    def _rebuild_tables(self) -> None:
        """Recompute source → ingress port and egress port → address maps from the registers:
        the member tables (and a leaf's parent) of every enabled job's page."""
        rd = self.model.read
        exact: dict[tuple[int, int], int] = {}
        any_port: dict[int, dict[tuple[int, int], int]] = {}
        used = 0
        agg: list[tuple[tuple[int, int], int, int, tuple[str, int] | None]] = []
        pages: dict[int, int] = {}
        enabled = rd("JOB_ENABLE")
        for j in range(rd("JOBS")):
            if not enabled >> j & 1:
                continue
            base = j * regmap.JOB_PAGE
            job_id = rd(base + regmap.JOB_ID)
            pages.setdefault(job_id, j)
            for i in range(regmap.MEMBER_COUNT):
                at = base + i * regmap.MEMBER_STRIDE
                port = rd(at + regmap.MEMBER_PORT_BASE)
                ip = rd(at + regmap.MEMBER_IP_BASE)
                udp = rd(at + regmap.MEMBER_UDP_BASE)
                role = rd(at + regmap.MEMBER_ROLE_BASE)
                if not port:
                    continue
                used |= port
                if udp:
                    exact.setdefault((ip, udp), port)
                else:
                    any_port.setdefault(ip, {}).setdefault((j, i), port)
                if role & 1 and ip:
                    agg.append(((j, i), job_id, port, (int_to_ip(ip), udp) if udp else None))
            uplink = rd(base + regmap.AGG_UPLINK_PORT)
            if rd(base + regmap.AGG_ROLE) == 1 and uplink:
                parent = (rd(base + regmap.AGG_PARENT_IP),
                          rd(base + regmap.AGG_PARENT_UDP) or rd("UDP_PORT"))
                exact[parent] = uplink
                used |= uplink
        self._pages = pages
        self._agg_entries = agg
        self._members = self._member_list()
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

    def _member_list(self) -> list[tuple[int, int, tuple[str, int]]]:
        """(JOB_ID, port, address) of every aggregation member a multicast RESULT can reach."""
        last = self._last_addr
        return [(job_id, port, dst if dst is not None else last[key])
                for key, job_id, port, dst in self._agg_entries if dst is not None or key in last]

    def _source(self, addr: tuple[str, int]
                ) -> tuple[int, bytes, dict[tuple[int, int], int] | None]:
        """(ingress port, 42-byte frame header template, any-port entries) for ``addr``.

        The third item is ``None`` unless ``addr`` matches no ``MEMBER_IP``:``MEMBER_UDP``
        pair but entries with ``MEMBER_UDP`` = 0 of its IP ({(job, member id): port});
        the ingress port is then the first of them, or the one the header names
        (:meth:`_claimed_port`).
        """
        ip = ip_to_int(addr[0])
        port = self._exact.get((ip, addr[1]))
        anyp = None
        if port is None:
            anyp = self._any_port.get(ip)
            port = next(iter(anyp.values())) if anyp else self._stranger_port
        hdr = _IN.pack(self._mac, b"\x02\x00" + ip.to_bytes(4, "big"), 0x0800,
                       0x45, 0, 0, 0, 0x4000, 64, 17, 0, ip, self._switch_ip,
                       addr[1], self._udp_port, 0, 0)
        entry = (port, hdr, anyp)
        if len(self._sources) > 4096:
            self._sources.clear()
        self._sources[addr] = entry
        return entry

    def _claimed_port(self, frame: bytearray, size: int, anyp: dict[tuple[int, int], int],
                      addr: tuple[str, int], default: int) -> int:
        """Ingress port of a datagram from an address known only by ``MEMBER_UDP`` = 0 entries.

        The entry the header's ``worker`` names in the job its ``job`` byte selects, if it
        is one of them: the
        datagram is then authentic for that member, so its source address
        becomes where that member's multicast RESULTs go. Otherwise ``default``.
        """
        if size < HEADER_LEN:
            return default
        w = (frame[_WORKER_AT] << 8) | frame[_WORKER_AT + 1]
        key = (self._pages.get(frame[_JOB_AT], 0), w)
        port = anyp.get(key)
        if port is None:
            return default
        if self._last_addr.get(key) != addr:
            self._last_addr[key] = addr
            self._members[:] = self._member_list()  # in place: _process holds the list
        return port

    # -- the loop ------------------------------------------------------------------
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
        if n >= 4 and rbuf[:4] == CONTROL_MAGIC:
            reply = self._control(rbuf[:n], addr)
            self._send([memoryview(reply)], addr, len(reply))
            return
        if not self._tables_valid:
            self._rebuild_tables()
        port, hdr, anyp = self._sources.get(addr) or self._source(addr)
        frame = self._frame
        fmv = memoryview(frame)
        frame[:HEADER_OFFSET] = hdr
        process = self.model.process
        arrivals = self._arrivals
        stats = self._stats
        pack16 = _U16.pack_into
        mcast, members = self._mcast_ip, self._members
        unpack_out = _OUT.unpack_from
        # n = 0 (an empty datagram) is one 42-byte frame; lengths past 16 bits (a frame
        # over 65535 bytes, BAD_LENGTH in the model) keep their low 16 bits
        for off in range(0, n or 1, seg):
            size = min(seg, n - off)
            flen = HEADER_OFFSET + size
            frame[HEADER_OFFSET:flen] = rbuf[off:off + size]
            pack16(frame, _LENGTHS_IP, (flen - 14) & 0xFFFF)
            pack16(frame, _LENGTHS_UDP, (flen - 34) & 0xFFFF)
            stats["datagrams"] += 1
            p = port if anyp is None else self._claimed_port(frame, size, anyp, addr, port)
            if arrivals is not None and size >= HEADER_LEN and frame[HEADER_OFFSET + 1] == _GRADIENT:
                _v, _o, _f, _j, w, slot, seq, _c, aux, _r = HEADER.unpack_from(frame, HEADER_OFFSET)
                arrivals.append(Arrival(slot, seq, w, aux, bytes(frame[64:flen])))
            for eg in process(fmv[:flen], p):
                out = eg.frame
                ip_dst, udp_dst = unpack_out(out, 30)
                body = memoryview(out)[HEADER_OFFSET:]
                if ip_dst == mcast:
                    ports, job_id = eg.dst_ports, out[_JOB_AT]
                    for mjob, mport, dst in members:
                        if mport & ports and mjob == job_id:
                            pending.setdefault(dst, []).append(body)
                elif ip_dst and udp_dst:
                    pending.setdefault((int_to_ip(ip_dst), udp_dst), []).append(body)

    def _serve_native(self, poll_interval: float) -> None:
        """The native loop in a thread of its own (GIL released), until :meth:`stop`."""
        srv = native_engine.server(self.model, self.sock.fileno(), self._native_control,
                                   log_arrivals=self._arrivals is not None)
        self._native = srv
        wait_ms = max(1, int(poll_interval * 1000))
        t = threading.Thread(target=srv.serve, args=(wait_ms,), name="softswitch-native",
                             daemon=True)
        t.start()
        try:
            while not self._stop.wait(poll_interval):
                if not t.is_alive():
                    break
        finally:
            srv.stop()
            t.join()

    def serve_forever(self, poll_interval: float = 0.05) -> None:
        """Serve until :meth:`stop` (or a signal handler calling it)."""
        if self.engine == "native":
            return self._serve_native(poll_interval)
        sock, rbuf, stop = self.sock, self._rbuf, self._stop
        pending: dict[tuple[str, int], list[memoryview]] = {}
        use_msg = self._gro or self._ovfl
        stats = self._stats
        perf_counter = time.perf_counter
        wait_ms = max(1, int(poll_interval * 1000))
        sol_socket = socket.SOL_SOCKET
        while not stop.is_set():
            try:
                if use_msg:
                    n, anc, _fl, addr = sock.recvmsg_into([rbuf], _ANC)
                    seg = n
                    for level, kind, data in anc:  # empty unless coalesced or after drops
                        if len(data) < 4:
                            continue
                        if kind == UDP_GRO and level == SOL_UDP:
                            seg = struct.unpack_from("=i", data)[0] or n
                        elif kind == SO_RXQ_OVFL and level == sol_socket:
                            # the socket's drop count when this datagram was queued
                            stats["rx_overflow"] = struct.unpack_from("=I", data)[0]
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
                        print(f"{self.log_name}: datagram from {addr} raised "
                              f"{type(e).__name__}: {e}", file=sys.stderr)
                if pending:
                    self._flush(pending)
            stats["receives"] += 1
            stats["busy_us"] += int((perf_counter() - t0) * 1e6)
