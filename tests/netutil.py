"""Helpers for the network tests: worker processes, a barrier, a lossy proxy, references.

Worker functions live here (not in a test module) so that ``spawn`` children
can import them; everything uses ephemeral ports and explicit timeouts.
"""

from __future__ import annotations

import contextlib
import math
import random
import select
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from hostdrv import SoftSwitch

LOCAL = "127.0.0.1"


# ---------------------------------------------------------------------------
# deterministic inputs


def make_input(seed: int, worker: int, call: int, size: int, dtype: str) -> np.ndarray:
    """The tensor ``worker`` reduces in call number ``call``."""
    rng = np.random.default_rng([seed, worker, call])
    if dtype == "int32":
        return rng.integers(-(1 << 20), 1 << 20, size=size, dtype=np.int32)
    x = rng.standard_normal(size) * np.exp(rng.uniform(-8, 8, size))
    return x.astype(dtype)


# ---------------------------------------------------------------------------
# the sim switch's RTL


def build_sim_rtl() -> None:
    """Build (or find) the RTL a :class:`~hostdrv.switch.sim.SimSwitch` serves by default.

    Without Verilator or pyverilator the test is skipped, or fails under CI
    (:mod:`toolcheck`).
    """
    from toolcheck import require_module, require_tool

    from hostdrv.switch.rtl import build_rtl
    from hostdrv.switch.sim import DEFAULT_PARAMS

    why = "the sim switch (hostdrv.switch.rtl's Verilator build of the switch)"
    require_tool("verilator", why)
    require_module("pyverilator", why)
    build_rtl("nrl_switch", dict(DEFAULT_PARAMS["nrl_switch"]))


@contextlib.contextmanager
def switch_factory(kind: str) -> Iterator[Callable[..., SoftSwitch]]:
    """A factory of started switches on loopback, all closed on exit: the soft switch with
    the ``native`` or ``model`` engine, or the ``sim`` switch (its RTL built first);
    ``make(listen="127.0.0.1:0", **kw)``."""
    from hostdrv.switch.soft import SoftSwitch

    made: list[SoftSwitch] = []

    def make(listen: str = f"{LOCAL}:0", **kw: Any) -> SoftSwitch:
        if kind == "sim":
            from hostdrv.switch.sim import SimSwitch

            sw: SoftSwitch = SimSwitch(listen, **kw)
        else:
            sw = SoftSwitch(listen, engine=kind, **kw)
        made.append(sw)
        return sw.start()

    if kind == "sim":
        build_sim_rtl()
    try:
        yield make
    finally:
        for sw in made:
            sw.close()


# ---------------------------------------------------------------------------
# frames as a soft or sim switch builds them


def datagram_frame(datagram: bytes, *, ip_src: int, udp_src: int, ip_dst: int = 0x0A000001,
                   udp_dst: int = 20050) -> bytes:
    """The frame a soft or sim switch makes of a datagram (``docs/protocol.md`` section 1).

    42 bytes of Ethernet/IPv4/UDP, then the datagram; the IPv4 and UDP
    lengths keep their low 16 bits when the frame is longer than 65535 bytes.
    """
    n = 42 + len(datagram)
    hdr = struct.pack("!6s6sHBBHHHBBHIIHHHH", b"\x02\x00NRL\x00", b"\x02\x00" + ip_src.to_bytes(4, "big"),
                      0x0800, 0x45, 0, (n - 14) & 0xFFFF, 0, 0x4000, 64, 17, 0, ip_src, ip_dst,
                      udp_src, udp_dst, (n - 34) & 0xFFFF, 0)
    return hdr + datagram


def send_datagrams(datagrams: Iterable[bytes], address: tuple[str, int], model: Any) -> None:
    """Send ``datagrams`` to ``address`` from one UDP socket, and feed ``model`` (a
    :class:`~hostdrv.switch.reference.SwitchModel`) the frame the switch makes of each, from the
    ingress port of a source no member entry names (0x80)."""
    from hostdrv.wire.net import ip_to_int

    raw = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
        raw.bind((LOCAL, 0))
        ip, port = raw.getsockname()
        for d in datagrams:
            raw.sendto(d, address)
            model.process(datagram_frame(d, ip_src=ip_to_int(ip), udp_src=port), 0x80)
    finally:
        raw.close()


def in_threads(fns: Sequence[Callable[[], Any]], timeout: float = 60) -> list[Any]:
    """Run each function in a thread; return its result or the exception it raised."""
    out: list[Any] = [None] * len(fns)

    def run(i: int) -> None:
        try:
            out[i] = fns[i]()
        except BaseException as e:  # noqa: BLE001 - returned to the test
            out[i] = e

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(fns))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    return out


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0, step: float = 0.01) -> bool:
    """Poll ``predicate`` until it holds or ``timeout`` seconds pass; its last value."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(step)


@contextlib.contextmanager
def switch_of_kind(kind: str) -> Iterator[SoftSwitch]:
    """A soft switch (``kind`` "soft") or a sim switch (the RTL in Verilator) serving in a
    thread on an ephemeral port."""
    from hostdrv import SoftSwitch

    if kind == "soft":
        with SoftSwitch("127.0.0.1:0") as sw:
            yield sw
        return
    from toolcheck import require_module, require_tool

    require_tool("verilator", "the sim switch runs the RTL in Verilator")
    require_module("pyverilator", "the sim switch runs the RTL in Verilator")
    from hostdrv.switch.sim import SimSwitch

    with SimSwitch("127.0.0.1:0") as sw:
        yield sw


# ---------------------------------------------------------------------------
# barrier between the test process and its workers


class Barrier:
    """A UDP barrier: ``parties`` workers call :func:`barrier_wait` for each phase.

    Runs in a thread of the test process; phase ``k`` is released when every
    party has announced it.
    """

    def __init__(self, parties: int) -> None:
        self.parties = parties
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((LOCAL, 0))
        self.sock.settimeout(0.05)
        self.address: tuple[str, int] = self.sock.getsockname()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        waiting: dict[int, set[tuple[str, int]]] = {}
        released: set[int] = set()
        while not self._stop.is_set():
            try:
                data, addr = self.sock.recvfrom(64)
            except (TimeoutError, OSError):
                continue
            phase = int(data.decode())
            if phase in released:
                self.sock.sendto(data, addr)
                continue
            waiting.setdefault(phase, set()).add(addr)
            if len(waiting[phase]) >= self.parties:
                released.add(phase)
                for a in waiting.pop(phase):
                    self.sock.sendto(data, a)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


def barrier_wait(address: tuple[str, int], phase: int, timeout: float = 20.0) -> None:
    """Announce ``phase`` and wait until every party did."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(0.1)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            s.sendto(str(phase).encode(), address)
            try:
                data, _ = s.recvfrom(64)
            except TimeoutError:
                continue
            if int(data.decode()) == phase:
                return
        raise TimeoutError(f"barrier phase {phase} not released after {timeout} s")
    finally:
        s.close()


# ---------------------------------------------------------------------------
# worker process bodies


def warm(_: int) -> int:
    """Import the driver in a pool process (so the first real task starts at once)."""
    import hostdrv  # noqa: F401

    return 0


@contextlib.contextmanager
def warm_pool(processes: int = 4) -> Iterator[Any]:
    """A ``spawn`` process pool whose processes have the driver imported (:func:`warm`)."""
    import multiprocessing

    p = multiprocessing.get_context("spawn").Pool(processes)
    try:
        p.map(warm, range(processes), chunksize=1)
        yield p
    finally:
        p.terminate()
        p.join()


@dataclass
class Phase:
    """One phase of a worker's plan: wait ``delay`` s, then ``calls`` all-reduces.

    With ``rejoin`` the worker first drops its :class:`~hostdrv.Aggregator`
    and registers a new one (new socket, rounds from 0), like a restarted worker.
    """

    calls: int
    delay: float = 0.0
    rejoin: bool = False


def agg_worker(url: str, worker: int, barrier: tuple[str, int], *, size: int, dtype: str,
               seed: int, phases: Sequence[Phase], scale: float | None = None,
               timeout: float = 0.05, retries: int = 10,
               member_address: tuple[str, int] | None = None,
               control: str | None = None) -> dict[str, Any]:
    """Run a plan of all-reduces as member ``worker``; return what each call gave."""
    from hostdrv import Aggregator

    def connect() -> Aggregator:
        return Aggregator(url, worker=worker, timeout=timeout, retries=retries,
                          member_address=member_address, control=control)

    agg = connect()
    out: dict[str, Any] = {"results": [], "rounds": [], "contributors": [], "stale": [],
                           "resent": [], "inputs": [], "retrans": 0}
    call = 0
    try:
        for k, phase in enumerate(phases):
            barrier_wait(barrier, k)
            time.sleep(phase.delay)
            if phase.rejoin:
                agg.close()
                agg = connect()
            for _ in range(phase.calls):
                x = make_input(seed, worker, call, size, dtype)
                y = agg.allreduce(x, scale=scale)
                out["inputs"].append(x)
                out["results"].append(y)
                out["rounds"].append(agg.last_rounds.copy())
                out["contributors"].append(agg.last_contributors.copy())
                out["stale"].append(agg.stale_chunks)
                out["resent"].append(agg.resent_results)
                out["retrans"] += agg.retransmissions
                call += 1
        barrier_wait(barrier, len(phases))
    finally:
        agg.close()
    return out


def any_port_allreduce(url: str, *, size: int = 100, packet_elems: int = 32, slots: int = 4,
                       calls: int = 2, timeout: float = 0.05, retries: int = 10,
                       join: float = 60.0) -> dict[str, Any]:
    """Two workers on one host, both registered with ``MEMBER_UDP`` = 0, all-reduce ``calls`` times.

    Returns ``inputs`` and ``results`` ([worker][call]), ``errors`` raised in
    the worker threads and the switch's ``counters`` afterwards.
    """
    from hostdrv import Aggregator, SwitchControl
    from hostdrv.client.control import ROLE_WORKER

    rng = np.random.default_rng(7)
    inputs = [[(rng.standard_normal(size) * 10).astype(np.float32) for _ in range(calls)]
              for _ in range(2)]
    results: list[list[np.ndarray]] = [[], []]
    errors: list[BaseException] = []
    with SwitchControl(url) as ctl:
        ctl.configure_aggregation(members=2, slots=slots, packet_elems=packet_elems)
        aggs = [Aggregator(url, worker=w, register=False, timeout=timeout, retries=retries)
                for w in range(2)]
        try:
            for w, agg in enumerate(aggs):
                ip, _port = agg.transport.local_address
                ctl.set_member(w, port=1 << w, ip=ip, udp=0, role=ROLE_WORKER)
                assert ctl.member(w)["udp"] == 0

            def work(w: int) -> None:
                try:
                    for call in range(calls):
                        results[w].append(np.asarray(aggs[w].allreduce(inputs[w][call])))
                except BaseException as e:  # noqa: BLE001 - reported by the caller
                    errors.append(e)

            threads = [threading.Thread(target=work, args=(w,)) for w in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(join)
            counters = ctl.counters()
        finally:
            for agg in aggs:
                agg.close()
    return {"inputs": inputs, "results": results, "errors": errors, "counters": counters,
            "chunks": -(-size // packet_elems)}


def check_any_port_allreduce(run: dict[str, Any]) -> None:
    """What :func:`any_port_allreduce` must have seen: no error, both members' results the
    fp32 sum (:func:`hostdrv.switch.reference.fp32_add`) bit for bit, a RESULT per chunk to each, and
    nothing dropped as spoofed or from an unknown worker."""
    from hostdrv.switch.reference import fp32_add

    assert not run["errors"], run["errors"]
    for call in range(2):
        want = fp32_add(run["inputs"][0][call], run["inputs"][1][call])
        for w in range(2):
            np.testing.assert_array_equal(run["results"][w][call].view(np.uint32),
                                          want.view(np.uint32))
    c = run["counters"]
    assert c["CNT_TX_RESULT"] == 2 * run["chunks"]
    assert c["CNT_DROP_SPOOFED"] == c["CNT_DROP_UNKNOWN_WORKER"] == 0


def run_workers(pool: Any, tasks: Iterable[tuple[Callable[..., Any], tuple[Any, ...],
                                                 dict[str, Any]]],
                timeout: float = 30.0) -> list[Any]:
    """Run tasks ``(fn, args, kwargs)`` in ``pool`` at once and collect their results."""
    handles = [pool.apply_async(fn, args, kwargs) for fn, args, kwargs in tasks]
    return [h.get(timeout=timeout) for h in handles]


# ---------------------------------------------------------------------------
# references


def first_contributors(arrivals: Iterable[Any], slot: int, round_: int,
                       threshold: int) -> list[Any]:
    """The GRADIENT arrivals the switch added for (slot, round): first of each worker, in order."""
    seen: set[int] = set()
    picked = []
    for a in arrivals:
        if a.slot == slot and a.seq == round_ and a.worker not in seen:
            seen.add(a.worker)
            picked.append(a)
            if len(picked) == threshold:
                break
    return picked


def ordered_sum(parts: Sequence[np.ndarray]) -> np.ndarray:
    """Sequential float32 (or wrapping int32) sum in the given order."""
    acc = np.array(parts[0], copy=True)
    with np.errstate(all="ignore"):
        for p in parts[1:]:
            acc = acc + p
    return acc


def chunk_schedule(n_chunks: int, slots: int, call: int) -> list[tuple[int, int]]:
    """(slot, round) of every chunk of call ``call`` when every call has ``n_chunks`` chunks."""
    per_slot = [len(range(s, n_chunks, slots)) for s in range(slots)]
    return [(c % slots, call * per_slot[c % slots] + c // slots) for c in range(n_chunks)]


def chunk_view(x: np.ndarray, packet_elems: int) -> np.ndarray:
    """``x`` zero-padded to whole chunks, shape (n, packet_elems)."""
    n = -(-x.size // packet_elems)
    flat = np.zeros(n * packet_elems, dtype=x.dtype)
    flat[:x.size] = x.reshape(-1)
    return flat.reshape(n, packet_elems)


def chi2_critical(df: int, alpha: float) -> float:
    """Upper ``alpha`` critical value of chi-square (Wilson–Hilferty approximation)."""
    z = NormalDist().inv_cdf(1.0 - alpha)
    k = 2.0 / (9.0 * df)
    return df * (1.0 - k + z * math.sqrt(k)) ** 3


# ---------------------------------------------------------------------------
# lossy proxy


@dataclass
class LossyProxy:
    """A seeded UDP proxy that drops, duplicates and reorders, one port pair per client.

    Client ``i`` talks to ``downstream[i]``; the proxy relays to ``target``
    from ``upstream[i]``, which is the address the switch must know the
    member by. Runs in a thread; :meth:`close` stops it.
    """

    target: tuple[str, int]
    clients: int
    loss: float = 0.05
    duplicate: float = 0.05
    reorder: float = 0.05
    seed: int = 1
    stats: dict[str, int] = field(default_factory=lambda: {"in": 0, "drop": 0, "dup": 0,
                                                          "held": 0})

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.down: list[socket.socket] = []
        self.up: list[socket.socket] = []
        for _ in range(self.clients):
            d = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            d.bind((LOCAL, 0))
            u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            u.bind((LOCAL, 0))
            for s in (d, u):
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
                s.setblocking(False)
            self.down.append(d)
            self.up.append(u)
        self.client_addr: list[tuple[str, int] | None] = [None] * self.clients
        self._held: list[tuple[float, socket.socket, bytes, tuple[str, int]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    @property
    def downstream(self) -> list[tuple[str, int]]:
        return [s.getsockname() for s in self.down]

    @property
    def upstream(self) -> list[tuple[str, int]]:
        return [s.getsockname() for s in self.up]

    def _emit(self, sock: socket.socket, data: bytes, dst: tuple[str, int]) -> None:
        r = self.rng.random()
        if r < self.loss:
            self.stats["drop"] += 1
            return
        if r < self.loss + self.reorder:
            self.stats["held"] += 1
            self._held.append((time.monotonic() + self.rng.uniform(0.001, 0.01), sock, data, dst))
            return
        copies = 2 if self.rng.random() < self.duplicate else 1
        self.stats["dup"] += copies - 1
        for _ in range(copies):
            try:
                sock.sendto(data, dst)
            except OSError:
                pass

    def _run(self) -> None:
        socks = self.down + self.up
        while not self._stop.is_set():
            ready, _, _ = select.select(socks, [], [], 0.002)
            for s in ready:
                while True:
                    try:
                        data, addr = s.recvfrom(65536)
                    except (BlockingIOError, OSError):
                        break
                    self.stats["in"] += 1
                    if s in self.down:
                        i = self.down.index(s)
                        self.client_addr[i] = addr
                        self._emit(self.up[i], data, self.target)
                    else:
                        i = self.up.index(s)
                        dst = self.client_addr[i]
                        if dst is not None:
                            self._emit(self.down[i], data, dst)
            now = time.monotonic()
            due = [h for h in self._held if h[0] <= now]
            if due:
                self._held = [h for h in self._held if h[0] > now]
                for _, sock, data, dst in due:
                    try:
                        sock.sendto(data, dst)
                    except OSError:
                        pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        for s in self.down + self.up:
            s.close()
