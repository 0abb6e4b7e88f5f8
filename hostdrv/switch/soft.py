"""Soft switch: the switch engine behind a UDP socket.

Run it as ``python -m hostdrv.switch.soft --listen 127.0.0.1:20050`` (or the
``netfpga-softswitch`` console script), in a thread with :class:`SoftSwitch`,
or as a child process with :class:`SoftSwitchProcess`. Clients reach it as
``soft://host:port``.

Engines
-------
``engine="native"`` (``--engine native``) serves the compiled engine
(:class:`~hostdrv.switch.native.NativeSwitchModel`) with its native socket loop
(``hostdrv/native/nrl_server.cpp``: ``recvmmsg``/``sendmmsg``, preallocated
buffers, no Python per datagram, the GIL released; only control requests come
back to Python). ``engine="model"`` (``--engine model``) serves the golden model
(:class:`~hostdrv.switch.reference.SwitchModel`) with the Python loop below, for debugging.
The default is :data:`DEFAULT_ENGINE`, or the environment variable
``NRL_SOFTSWITCH_ENGINE`` (the golden model when the extension is not built).
Both loops follow the rules of this section, and the conformance suite
(``tests/test_conformance.py``) holds the two engines to the same bytes.

Data path
---------
Every datagram is one protocol message (the UDP payload). The switch wraps
it into the frame the hardware would see: Ethernet (destination the switch
MAC, source ``02:00`` + the sender's IPv4), IPv4 from the real source address
to ``SWITCH_IP``, UDP from the real source port to ``UDP_PORT``, then hands it
to :meth:`hostdrv.switch.reference.SwitchModel.process` with the ingress port of the
sender:

* ``MEMBER_PORT[i]`` of the member whose ``MEMBER_IP``/``MEMBER_UDP`` match the
  source address (``MEMBER_UDP`` = 0 matches any port of that address);
* ``AGG_UPLINK_PORT`` when the source is the parent of a leaf
  (``AGG_PARENT_IP``:``AGG_PARENT_UDP``);
* otherwise a port no member is on, so the model drops a packet that claims
  to be a member as ``SPOOFED``.

Several entries may share one ``MEMBER_IP`` with ``MEMBER_UDP`` = 0 (two
workers on one host, any source port): a datagram from that address then gets
the port of the entry its header's ``worker`` names. An empty datagram is a
42-byte frame (the model drops it as ``BAD_LENGTH``); every datagram reaches the
model, so each one moves a counter.

Each emitted frame goes out as a UDP datagram carrying its bytes 42 onward:
a frame to ``MCAST_IP`` to every aggregation member (role bit 0) whose
``MEMBER_PORT`` is in the egress bitmap, at ``MEMBER_IP``:``MEMBER_UDP``, or,
for a member with ``MEMBER_UDP`` = 0, at the address it last sent an authentic
datagram from (a datagram from ``MEMBER_IP`` given that entry's port; forgotten
when the entry's registers are written; a member never heard from gets
nothing and recovers by retransmitting); any other frame to its IPv4
destination and UDP destination port. Datagrams for one destination produced
by one receive are sent with UDP GSO (one system call for up to 64), and
received batches are coalesced with UDP GRO.

The socket reports the datagrams the kernel dropped because its receive
buffer was full (``SO_RXQ_OVFL``): the server keeps them in ``SRV_RX_OVERFLOW``.

Control channel
---------------
Register reads and writes arrive on the same socket as ``NRLC`` datagrams
(format in :mod:`hostdrv.wire.control`); they are executed in arrival order with
the protocol traffic, so a write takes effect before every packet received
after it. The server answers reads of its own registers (``SRV_RX_OVERFLOW``,
``SRV_CTRL_REFUSED``; ``server=True`` in :mod:`hostdrv.wire.regmap`) itself; a write
of ``CTRL`` bit 31 clears them with the model's counters.

By default only requests from loopback addresses are executed; any other
source is answered with status 5 and counted in ``SRV_CTRL_REFUSED``. With a
control key (``--control-key FILE``, ``SoftSwitch(control_key=...)``) only
requests signed with it are executed, from any address, loopback included,
each at most once: a replayed send (from any address), a request signed for
another session (this switch draws one per start, so nothing signed before a
restart runs after it) or an expired one is refused with status 5 and counted;
a retry (a new attempt of a request) is answered from the reply cache
(:class:`~hostdrv.wire.control.ControlReplayGuard`, ``docs/protocol.md``
section 9).

Command line
------------
``python -m hostdrv.switch.soft`` (``netfpga-softswitch``) options:

``--listen HOST:PORT``
    Address to bind (default ``127.0.0.1:20050``; port 0 picks one). The
    chosen URL is printed as ``listening soft://host:port``.
``--capacity C``, ``--record-bytes R``, ``--max-slots S``, ``--max-elems P``, ``--build-hash H``
    Model parameters (``RPL_CAPACITY``, ``RPL_RECORD_BYTES``, ``AGG_MAX_SLOTS``,
    ``AGG_MAX_ELEMS``, ``BUILD_HASH``).
``--control-key FILE``
    Execute only control requests signed with the key in FILE (whitespace
    around it stripped), from any address; clients pass the same file
    (``SwitchControl(url, key_file=FILE)``, ``soft://host:port?key=FILE`` or
    ``NETRL_CONTROL_KEY=FILE``). Without it only loopback may use the control
    channel.
``--engine native|model``
    The compiled engine with its native socket loop, or the golden model with the
    Python loop (see Engines). Default :data:`DEFAULT_ENGINE` or ``NRL_SOFTSWITCH_ENGINE``.
``--profile FILE``
    Write a cProfile of the serve loop to FILE.

On SIGINT/SIGTERM it prints the model's nonzero counters (``counters {...}``)
and the server's figures (``stats {...}``, with ``rx_overflow`` and
``ctrl_refused``) and exits 0.
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

from hostdrv.switch import native as native_engine
from hostdrv.switch.engine import Engine
from hostdrv.switch.reference import SwitchModel
from hostdrv.wire import regmap
from hostdrv.wire.control import (
    CONTROL,
    CONTROL_MAGIC,
    CONTROL_READ,
    CONTROL_REPLY,
    CONTROL_WRITE,
    ControlReplayGuard,
    ControlStatus,
    SignedRequest,
    load_control_key,
    parse_signed,
)
from hostdrv.wire.net import (
    GSO_MAX_BYTES,
    GSO_MAX_SEGMENTS,
    SOL_UDP,
    UDP_GRO,
    UDP_SEGMENT,
    int_to_ip,
    ip_to_int,
    parse_hostport,
    tune_socket,
)
from hostdrv.wire.protocol import HEADER, HEADER_LEN, HEADER_OFFSET, Opcode

_IN = struct.Struct("!6s6sHBBHHHBBHIIHHHH")  # Ethernet + IPv4 + UDP header of an input frame
_LENGTHS_IP = 16
_LENGTHS_UDP = 38
_U16 = struct.Struct("!H")
_OUT = struct.Struct("!I2xH")  # at 30: IPv4 destination, UDP destination port
_RECV_BYTES = 65536
SO_RXQ_OVFL = getattr(socket, "SO_RXQ_OVFL", 40)
"""Linux socket option: a cmsg with the socket's drop count on every received datagram."""
_ANC = 2 * socket.CMSG_SPACE(4)  # UDP_GRO segment size and SO_RXQ_OVFL drop count
_GRADIENT = int(Opcode.GRADIENT)
_WORKER_AT = HEADER_OFFSET + 4  # the header's worker field (u16) in a frame
_M32 = 0xFFFFFFFF
_CTRL_CLEAR = 1 << 31
_SERVER_STATS = {"SRV_RX_OVERFLOW": "rx_overflow", "SRV_CTRL_REFUSED": "ctrl_refused"}
"""Server register → the :attr:`SoftSwitch.stats` figure it counts (since the last clear)."""
assert set(_SERVER_STATS) == set(regmap.SERVER_COUNTERS)


ENGINES = ("native", "model")
"""``--engine`` choices: the compiled engine and its socket loop, or the golden model."""
DEFAULT_ENGINE = "native"
"""The engine a soft switch serves unless told (``NRL_SOFTSWITCH_ENGINE`` overrides it);
the golden model when the extension is not built (the test suite fails then)."""
_NATIVE_STATS = ("datagrams", "sent", "send_calls", "receives", "busy_us", "rx_overflow")


def default_engine() -> str:
    """``NRL_SOFTSWITCH_ENGINE`` if set, else :data:`DEFAULT_ENGINE` (``"model"`` when
    ``hostdrv._native`` is not built)."""
    engine = os.environ.get("NRL_SOFTSWITCH_ENGINE") or DEFAULT_ENGINE
    return engine if engine != "native" or native_engine.available() else "model"


def make_model(engine: str, **params: int) -> Engine:
    """A new switch of ``engine`` ("native" or "model") with ``params``.

    Raises
    ------
    ValueError
        For an unknown engine or a bad parameter.
    RuntimeError
        For "native" when the extension is not built.
    """
    if engine == "model":
        return SwitchModel(**params)
    if engine == "native":
        return native_engine.NativeSwitchModel(**params)
    raise ValueError(f"bad engine={engine!r}: must be one of {', '.join(ENGINES)}")


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
    """A :class:`~hostdrv.switch.reference.SwitchModel` served over UDP.

    Parameters
    ----------
    listen:
        ``"host:port"`` or (host, port) to bind; port 0 picks a free one
        (see :attr:`address`).
    capacity, record_bytes, max_slots, max_elems, build_hash:
        Model parameters (see :class:`~hostdrv.switch.reference.SwitchModel`).
    log_arrivals:
        Keep every GRADIENT datagram in :attr:`arrivals` (tests use it to
        recompute fp32 sums in arrival order).
    model:
        Serve this model instead of a new one. Change its registers through
        :meth:`write` (or the control channel), which also refreshes the
        address tables the switch routes with.
    engine:
        ``"native"`` or ``"model"`` for a new model (default
        :func:`default_engine`); ignored when ``model`` is given.
    control_key:
        Execute only control requests signed with this key (``bytes``), or with
        the key in this file (a path; whitespace around it stripped), from any
        address (``--control-key``). ``None``: execute unsigned requests, from
        loopback addresses only.

    Raises
    ------
    OSError
        When the address cannot be bound or the key file cannot be read
        (:class:`~hostdrv.wire.net.TransportError`).
    ValueError
        For an empty control key or a bad model parameter.

    Examples
    --------
    >>> with SoftSwitch("127.0.0.1:0") as sw:               # doctest: +SKIP
    ...     ctl = SwitchControl(sw.url)
    """

    log_name = "netfpga-softswitch"
    """Program name the server's messages start with."""

    def __init__(self, listen: str | tuple[str, int] = ("127.0.0.1", 0), *,
                 capacity: int = 1024, record_bytes: int = 128, max_slots: int = 64,
                 max_elems: int = 352, build_hash: int = 0, log_arrivals: bool = False,
                 model: Engine | None = None,
                 control_key: bytes | str | os.PathLike[str] | None = None,
                 engine: str | None = None) -> None:
        if isinstance(control_key, bytes | bytearray):
            self._control_key: bytes | None = bytes(control_key).strip()
            if not self._control_key:
                raise ValueError("bad control_key: empty")
        else:
            self._control_key = None if control_key is None else load_control_key(control_key)
        self.model = model if model is not None else make_model(
            engine or default_engine(), capacity=capacity, record_bytes=record_bytes,
            max_slots=max_slots, max_elems=max_elems, build_hash=build_hash)
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
        self._ovfl = True
        try:
            sock.setsockopt(socket.SOL_SOCKET, SO_RXQ_OVFL, 1)
        except OSError:
            self._ovfl = False
        self._gso = True
        self.sock = sock
        self._arrivals: list[Arrival] | None = [] if log_arrivals else None
        self.lock = threading.Lock()
        """Held while a batch of datagrams is processed; take it to touch :attr:`model`."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._replies: dict[tuple[str, int], tuple[bytes, bytes]] = {}
        self._guard = ControlReplayGuard()
        self._poll = select.poll()
        self._poll.register(sock, select.POLLIN)
        self._rbuf = bytearray(_RECV_BYTES)
        self._frame = bytearray(HEADER_OFFSET + _RECV_BYTES)
        self._tables_valid = False
        self._sources: dict[tuple[str, int], tuple[int, bytes, dict[int, int] | None]] = {}
        self._members: list[tuple[int, tuple[str, int]]] = []
        self._agg_entries: list[tuple[int, int, tuple[str, int] | None]] = []
        self._last_addr: dict[int, tuple[str, int]] = {}
        self._stats = {"datagrams": 0, "control": 0, "sent": 0, "send_calls": 0, "receives": 0,
                       "busy_us": 0, "errors": 0, "rx_overflow": 0, "ctrl_refused": 0}
        self._srv_base = dict.fromkeys(_SERVER_STATS.values(), 0)
        self._native: object | None = None  # the native loop (hostdrv._native.Server)

    @property
    def engine(self) -> str:
        """What serves the datagrams: ``"native"`` (the compiled engine and its socket
        loop), ``"model"`` (the golden model) or the model's class name."""
        if isinstance(self.model, native_engine.NativeSwitchModel):
            return "native"
        return "model" if type(self.model) is SwitchModel else type(self.model).__name__

    @property
    def arrivals(self) -> list[Arrival] | None:
        """Every GRADIENT datagram received, in order (``log_arrivals``; else ``None``)."""
        if self._arrivals is not None and self._native is not None:
            self._arrivals += [Arrival(*a) for a in self._native.arrivals()]  # type: ignore[attr-defined]
        return self._arrivals

    def _sync_stats(self) -> None:
        """Copy the native loop's figures into :attr:`_stats`."""
        if self._native is not None:
            figures = self._native.stats()  # type: ignore[attr-defined]
            for k in _NATIVE_STATS:
                self._stats[k] = figures[k]

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
        any_port: dict[int, dict[int, int]] = {}
        used = 0
        agg: list[tuple[int, int, tuple[str, int] | None]] = []
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
                any_port.setdefault(ip, {}).setdefault(i, port)
            if role & 1 and ip:
                agg.append((i, port, (int_to_ip(ip), udp) if udp else None))
        self._agg_entries = agg
        self._members = self._member_list()
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

    def _member_list(self) -> list[tuple[int, tuple[str, int]]]:
        """(port, address) of every aggregation member a multicast RESULT can reach."""
        last = self._last_addr
        return [(port, dst if dst is not None else last[i]) for i, port, dst in self._agg_entries
                if dst is not None or i in last]

    def _source(self, addr: tuple[str, int]) -> tuple[int, bytes, dict[int, int] | None]:
        """(ingress port, 42-byte frame header template, any-port entries) for ``addr``.

        The third item is ``None`` unless ``addr`` matches no ``MEMBER_IP``:``MEMBER_UDP``
        pair but entries with ``MEMBER_UDP`` = 0 of its IP ({member id: port});
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

    def _claimed_port(self, frame: bytearray, size: int, anyp: dict[int, int],
                      addr: tuple[str, int], default: int) -> int:
        """Ingress port of a datagram from an address known only by ``MEMBER_UDP`` = 0 entries.

        The entry the header's ``worker`` names, if it is one of them: the
        datagram is then authentic for that member, so its source address
        becomes where that member's multicast RESULTs go. Otherwise ``default``.
        """
        if size < HEADER_LEN:
            return default
        w = (frame[_WORKER_AT] << 8) | frame[_WORKER_AT + 1]
        port = anyp.get(w)
        if port is None:
            return default
        if self._last_addr.get(w) != addr:
            self._last_addr[w] = addr
            self._members[:] = self._member_list()  # in place: _process holds the list
        return port

    # -- register access (thread safe) ---------------------------------------------
    def _reg_read(self, name: str) -> int:
        stat = _SERVER_STATS.get(name)
        if stat is not None:
            self._sync_stats()
            return (self._stats[stat] - self._srv_base[stat]) & _M32
        return self.model.read(name)

    def _reg_write(self, name: str, value: int) -> None:
        self.model.write(name, value)  # ValueError: read-only or out of range, nothing changed
        self._tables_valid = False
        if name == "CTRL" and value & _CTRL_CLEAR:
            self._sync_stats()
            self._srv_base = {k: self._stats[k] for k in self._srv_base}
        elif name.startswith("MEMBER_"):
            self._last_addr.pop(int(name.rsplit("_", 1)[1]), None)

    def read(self, reg: str | int) -> int:
        """Read a register (by name or address): the model's, or the server's ``SRV_*``.

        Raises
        ------
        UnknownRegisterError
            For an unknown name or address (a ``ValueError``).
        """
        name = regmap.lookup(reg).name
        with self.lock:
            return self._reg_read(name)

    def write(self, reg: str | int, value: int) -> None:
        """Write a model register (by name or address), as the control channel does.

        ``CTRL`` bit 31 also clears the server's ``SRV_*`` counters; a write to a
        member entry's register forgets the address a ``MEMBER_UDP`` = 0 member
        last sent from.

        Raises
        ------
        ValueError
            For an unknown (:class:`~hostdrv.errors.UnknownRegisterError`) or read-only
            register or an illegal value; nothing changed.
        """
        name = regmap.lookup(reg).name
        with self.lock:
            self._reg_write(name, value)

    def counters(self) -> dict[str, int]:
        """Every counter of the model by name."""
        with self.lock:
            return self.model.counters()

    def server_counters(self) -> dict[str, int]:
        """The server's own counters (``SRV_RX_OVERFLOW``, ``SRV_CTRL_REFUSED``) by name."""
        with self.lock:
            return {name: self._reg_read(name) for name in regmap.SERVER_COUNTERS}

    @property
    def stats(self) -> dict[str, int]:
        """Host-side figures since the switch started.

        ``datagrams`` and ``control`` requests received, datagrams ``sent`` and
        ``send_calls``, ``receives`` (receive calls), microseconds spent
        processing (``busy_us``), datagrams whose processing raised
        (``errors``; the first is printed), datagrams the kernel dropped
        because the socket's receive buffer was full (``rx_overflow``, as last
        reported by ``SO_RXQ_OVFL``) and control requests refused as not
        authenticated (``ctrl_refused``). The registers ``SRV_RX_OVERFLOW`` and
        ``SRV_CTRL_REFUSED`` count the last two since counters were last cleared.
        With the native loop ``receives`` counts datagrams (``recvmmsg`` takes many
        per call) and ``send_calls`` counts ``sendmmsg`` calls.
        """
        self._sync_stats()
        return dict(self._stats)

    # -- serving -----------------------------------------------------------------
    def _control(self, data: memoryview, addr: tuple[str, int]) -> bytes:
        """Execute one control request and return the reply datagram.

        Without a control key: executed when from loopback, a retry (the same 16
        bytes from the same address as the last request) answered from the
        per-address cache. With a key: the :class:`~hostdrv.wire.control.ControlReplayGuard`
        rules (``docs/protocol.md`` section 9).
        """
        self._stats["control"] += 1
        short = len(data) < CONTROL.size
        _m, op, _z, tag, reg, value = (CONTROL_MAGIC, 0, 0, 0, 0, 0) if short \
            else CONTROL.unpack_from(data)
        ckey = self._control_key
        signed: SignedRequest | None = None
        cached: bytes | None = None
        if ckey is None:
            why = "" if _is_loopback(addr[0]) else (
                "this switch executes control requests from loopback addresses only (started "
                "with --control-key FILE it executes signed requests from any address)")
        else:
            parsed = parse_signed(data, ckey)
            if isinstance(parsed, str):
                why = parsed
            else:
                signed = parsed
                why, cached = self._guard.check(parsed)
        if why:  # nothing executed, nothing cached
            if signed is None or signed.session != 0:  # session 0: a client learning it
                self._stats["ctrl_refused"] += 1
            # a request signed for another session learns this one from the reply's value
            session = self._guard.session
            named = session if signed is not None and signed.session != session else 0
            return CONTROL.pack(CONTROL_MAGIC, (op | CONTROL_REPLY) & 0xFF,
                                ControlStatus.UNAUTHENTICATED, tag, reg, named) \
                + f"request from {addr[0]}: {why}".encode()
        if cached is not None:
            return cached  # a retry: answer again, do not execute twice
        if short:
            return CONTROL.pack(CONTROL_MAGIC, CONTROL_REPLY, ControlStatus.BAD_REQUEST, 0, 0, 0) \
                + b"request shorter than 16 bytes"
        key = bytes(data[:CONTROL.size])
        if signed is None:
            hit = self._replies.get(addr)
            if hit is not None and hit[0] == key:
                return hit[1]  # a retried request: answer again, do not execute twice
        status, text, out = ControlStatus.OK, "", 0
        r = regmap.find(reg)
        name = r.name if r is not None else ""
        if r is None:
            status, text = ControlStatus.UNKNOWN_REGISTER, f"no register at address 0x{reg:03X}"
        elif op == CONTROL_READ:
            out = self._reg_read(name)
        elif op == CONTROL_WRITE:
            if r.access != "rw":
                status, text = ControlStatus.READ_ONLY, f"register {name} is read-only"
            else:
                try:
                    self._reg_write(name, value)
                    out = value
                except ValueError as e:
                    status, text = ControlStatus.ILLEGAL_VALUE, str(e)
        else:
            status, text = ControlStatus.BAD_REQUEST, f"unknown op {op} (1 read, 2 write)"
        reply = CONTROL.pack(CONTROL_MAGIC, op | CONTROL_REPLY, status, tag, reg, out & 0xFFFFFFFF) \
            + text.encode()
        if signed is not None:
            self._guard.remember(signed, reply)
            return reply
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
                    ports = eg.dst_ports
                    for mport, dst in members:
                        if mport & ports:
                            pending.setdefault(dst, []).append(body)
                elif ip_dst and udp_dst:
                    pending.setdefault((int_to_ip(ip_dst), udp_dst), []).append(body)

    def _native_control(self, data: bytes, host: str, port: int) -> bytes:
        """A control request the native loop hands back (it sends the reply)."""
        with self.lock:
            return self._control(memoryview(data), (host, port))

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


def _is_loopback(host: str) -> bool:
    """Whether ``host`` (as a socket reports a peer) is a loopback address."""
    return host.startswith("127.") or host in ("::1", "localhost") or host.startswith("::ffff:127.")


# ---------------------------------------------------------------------------
# child process


class SoftSwitchProcess:
    """A soft switch in a child process (``python -m hostdrv.switch.soft``).

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

    module = "hostdrv.switch.soft"
    """The ``python -m`` module the child runs."""
    scheme = "soft"
    """URL scheme the child announces (``listening soft://host:port``)."""

    def __init__(self, listen: str = "127.0.0.1:0", args: Sequence[str] = (), *,
                 ready_timeout: float = 20.0) -> None:
        root = str(Path(__file__).resolve().parents[2])  # the folder hostdrv was imported from
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
    p.add_argument("--max-elems", type=int, default=352,
                   help="largest elements per packet P: 352 fits an Ethernet frame (the hardware "
                        "limit); on loopback up to 16352, one datagram of up to 64 KB per chunk "
                        "(a larger P makes frames over 65535 bytes, dropped as BAD_LENGTH)")
    p.add_argument("--build-hash", type=lambda s: int(s, 0), default=0,
                   help="value of BUILD_HASH")
    p.add_argument("--control-key", metavar="FILE",
                   help="execute only control requests signed with the key in FILE (HMAC-SHA256, "
                        "docs/protocol.md section 9), from any address; default: unsigned "
                        "requests from loopback only")
    p.add_argument("--engine", choices=ENGINES, default=None,
                   help="native: the compiled engine and its socket loop; model: the Python "
                        f"golden model (debugging). Default: {DEFAULT_ENGINE}, or "
                        "NRL_SOFTSWITCH_ENGINE")
    p.add_argument("--profile", metavar="FILE", help="write a cProfile of the serve loop to FILE")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``netfpga-softswitch``: serve until SIGINT/SIGTERM, print the counters
    (``counters {...}``: the model's nonzero ones) and the server's figures (``stats {...}``,
    :attr:`SoftSwitch.stats`, which include ``rx_overflow`` and ``ctrl_refused``)."""
    args = build_parser().parse_args(argv)
    try:
        sw = SoftSwitch(args.listen, capacity=args.capacity, record_bytes=args.record_bytes,
                        max_slots=args.max_slots, max_elems=args.max_elems,
                        build_hash=args.build_hash, control_key=args.control_key,
                        engine=args.engine)
    except (OSError, ValueError, RuntimeError) as e:
        print(f"{SoftSwitch.log_name}: {e}", file=sys.stderr)
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
