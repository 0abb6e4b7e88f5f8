"""Async in-switch all-reduce at any model size (issue 14 item 2).

A call of ``n`` chunks advances every slot by R = :func:`hostdrv.client.aggregator.rounds_per_call`
rounds from a base that is a multiple of R, so round ``r`` of slot ``s`` is chunk
``(r mod R)·S + s`` of iteration ``r // R`` for every member; versions count
iterations (``docs/protocol.md`` section 4, "Async at any size"). Against a soft
switch on both engines (golden model and native) and with both client loops
(native ``agg_run`` and the Python ``_run_python``):

* a 2,000,000-element fp32 (and int32) async all-reduce by 4 members with H = 3
  completes, every RESULT equals the contributions its ``aux`` names, added with
  the model's :func:`~hostdrv.switch.reference.fp32_add` in that order (int32: their exact
  wrapping sum), and every contribution the switch saw for a round was the chunk
  that round names;
* a member lagging more than ``AGG_STALENESS`` iterations is dropped (``STALE``)
  and its call still returns, answered by RESENDs (its multicasts are dropped on
  the way, so only the switch's answer to a too-stale GRADIENT can save it);
* a member lagging within the bound is added;
* a member that starts iterations behind takes only its own chunks' results (a
  RESEND of a newer round of another chunk moves it on, it does not take it): the
  chunks whose round the switch no longer holds come back at once as zeros with no
  contributor (``missing_chunks``), the others as the slot's iteration's results, and
  its next call is in step; the same when the others have stopped.

Expected values come from the inputs and :mod:`hostdrv.switch.reference`, never typed in.
"""

from __future__ import annotations

import select
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from engines import ENGINES, switch_class

from hostdrv import Aggregator, SoftSwitch, SwitchControl
from hostdrv.client.aggregator import rounds_per_call
from hostdrv.switch.reference import fp32_add
from hostdrv.wire import protocol as P
from hostdrv.wire.protocol import Flags, Opcode, result_order

CLIENTS = ("native", "python")
"""The client loops: ``agg_run`` (nrl_client.cpp) and ``Aggregator._run_python``."""


@pytest.fixture(params=CLIENTS)
def client(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test with the native client loop, then with the Python one."""
    if request.param == "native":
        from hostdrv.switch.native import available, native_error

        if not available():
            pytest.fail(native_error)
        monkeypatch.setenv("NRL_NATIVE_CLIENT", "1")
    else:
        monkeypatch.setenv("NRL_NATIVE_CLIENT", "0")
    return str(request.param)


# -- helpers ------------------------------------------------------------------------------


def _threads(fns: list[Callable[[], None]], timeout: float = 120.0) -> None:
    """Run ``fns`` in threads; re-raise the first exception."""
    errors: list[BaseException] = []

    def wrap(fn: Callable[[], None]) -> None:
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors.append(e)

    ts = [threading.Thread(target=wrap, args=(fn,)) for fn in fns]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout)
    assert not any(t.is_alive() for t in ts), "a member hung"
    if errors:
        raise errors[0]


class _Run:
    """What the members of a run sent and got, and the switch's log of GRADIENTs."""

    def __init__(self, aggs: list[Aggregator], dtype: str) -> None:
        self.aggs = aggs  # the list itself: a member may join later (add)
        self.dtype = np.dtype("<i4") if dtype == "int32" else np.dtype("<f4")
        self.inputs: list[list[np.ndarray]] = [[] for _ in aggs]
        self.results: list[list[np.ndarray]] = [[] for _ in aggs]
        self.rounds: list[list[np.ndarray]] = [[] for _ in aggs]
        self.aux: list[list[np.ndarray]] = [[] for _ in aggs]
        self.rpc: list[list[int]] = [[] for _ in aggs]
        self.jumps: list[list[int]] = [[] for _ in aggs]
        self.missing: list[list[int]] = [[] for _ in aggs]

    def add(self, agg: Aggregator) -> None:
        """A member that joins later (its id is the next index)."""
        for lst in (self.inputs, self.results, self.rounds, self.aux, self.rpc, self.jumps,
                    self.missing):
            lst.append([])

    def call(self, w: int, x: np.ndarray, version: int | None = None) -> None:
        agg = self.aggs[w]
        y = agg.allreduce(x, version=version)
        self.inputs[w].append(x)
        self.results[w].append(y)
        self.rounds[w].append(agg.last_rounds.copy())
        self.aux[w].append(agg.last_aux.copy())
        self.rpc[w].append(agg.last_rounds_per_call)
        self.jumps[w].append(agg.jumps)
        self.missing[w].append(agg.missing_chunks)


def _chunks(x: np.ndarray, p: int) -> np.ndarray:
    n = -(-x.size // p)
    out = np.zeros(n * p, dtype=x.dtype)
    out[:x.size] = x
    return out.reshape(n, p)


def _check_run(run: _Run, arrivals: list[Any], *, slots: int, packet_elems: int, staleness: int,
               threshold: int | None = None) -> int:
    """Every result of every member against the contributions its ``aux`` names.

    A chunk given up (``missing_chunks``: no contributor in ``aux``) must be zeros.
    Returns the number of results checked.
    """
    # what each member sent for (slot, round): first arrival (a retransmission is the same);
    # a GRADIENT whose lag exceeds the bound is never added (the clients' polls among them)
    sent: dict[tuple[int, int, int], bytes] = {}
    for a in arrivals:
        if (a.seq - a.aux) & 0xFFFFFFFF <= staleness:
            sent.setdefault((a.slot, a.seq, a.worker), a.payload)
    # every contribution is the chunk its round names, of one of its sender's calls
    chunk_bytes: dict[int, dict[int, set[bytes]]] = {}
    for w, xs in enumerate(run.inputs):
        for x in xs:
            for c, row in enumerate(_chunks(x.astype(run.dtype), packet_elems)):
                chunk_bytes.setdefault(w, {}).setdefault(c, set()).add(row.tobytes())
    rpcs = {r for rs in run.rpc for r in rs}
    assert len(rpcs) == 1, "every call of a run has the same size"
    rpc = rpcs.pop()
    for (s, r, w), payload in sent.items():
        c = (r % rpc) * slots + s
        assert payload in chunk_bytes[w].get(c, set()), \
            f"member {w} sent slot {s} round {r} a payload that is not its chunk {c}"
    expect: dict[tuple[int, int, int], np.ndarray] = {}
    checked = 0
    for w, results in enumerate(run.results):
        for k, y in enumerate(results):
            got = _chunks(np.asarray(y, dtype=run.dtype), packet_elems)
            rounds, aux = run.rounds[w][k], run.aux[w][k]
            assert int((aux & P.AUX_COUNT_MASK == 0).sum()) == run.missing[w][k], (w, k)
            for c in range(got.shape[0]):
                s, r, a = c % slots, int(rounds[c]), int(aux[c])
                assert r % rpc == c // slots, \
                    f"member {w} call {k} chunk {c} took round {r}: another chunk's"
                order = result_order(a)
                if threshold is not None and order:
                    assert len(order) == threshold, (w, k, c, order)
                key = (s, r, a)
                if not order:
                    expect[key] = np.zeros(packet_elems, dtype=run.dtype)
                if key not in expect:
                    parts = [np.frombuffer(sent[(s, r, m)], dtype=run.dtype) for m in order]
                    if run.dtype == np.int32:
                        acc = np.sum(np.stack(parts).astype(np.int64), axis=0)
                        want = ((acc + 2**31) % 2**32 - 2**31).astype("<i4")
                    else:
                        want = parts[0].copy()
                        for part in parts[1:]:
                            want = fp32_add(want, part)
                    expect[key] = want
                want = expect[key]
                assert got[c].view("<u4").tobytes() == want.view("<u4").tobytes(), \
                    f"member {w} call {k} chunk {c} (slot {s} round {r} order {order})"
                checked += 1
    return checked


class _DropMulticast:
    """A UDP relay for one member that drops the switch's multicast RESULTs to it (RESENDs,
    addressed to this member alone, pass): only the switch's answers reach it."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.down = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.down.bind(("127.0.0.1", 0))
        self.up = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.up.bind(("127.0.0.1", 0))
        for s in (self.down, self.up):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            s.setblocking(False)
        self.client: tuple[str, int] | None = None
        self.dropped = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self.down, self.up], [], [], 0.01)
            for s in ready:
                while True:
                    try:
                        data, addr = s.recvfrom(65536)
                    except (BlockingIOError, OSError):
                        break
                    if s is self.down:
                        self.client = addr
                        self.up.sendto(data, self.target)
                        continue
                    op, fl = data[1], data[2]
                    if op == Opcode.RESULT and not fl & Flags.RESEND:
                        self.dropped += 1
                    elif self.client is not None:
                        self.down.sendto(data, self.client)

    @property
    def url(self) -> str:
        host, port = self.down.getsockname()
        return f"soft://{host}:{port}"

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.down.close()
        self.up.close()


@pytest.fixture
def switch(request: pytest.FixtureRequest) -> Iterator[SoftSwitch]:
    with SoftSwitch(engine=request.param, log_arrivals=True) as sw:
        yield sw


def _configure(sw: SoftSwitch, **kw: Any) -> SwitchControl:
    ctl = SwitchControl(sw.url)
    ctl.configure_aggregation(mode="async", **kw)
    return ctl


# -- the switch rule: a too-stale GRADIENT is answered by a DONE copy -----------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_too_stale_gradient_is_answered_by_a_done_copy(engine: str) -> None:
    """Section 4 step 1: never added, counted STALE; a DONE copy of its round or a newer
    one is re-sent to it alone; an OPEN copy, or an older round, answers nothing."""
    sw = switch_class(engine)()
    p = 16
    for name, value in (("JOB_ID", 3), ("AGG_MEMBERS", 3), ("AGG_SLOTS", 2), ("AGG_ELEMS", p),
                        ("AGG_MODE", 1), ("AGG_THRESHOLD", 2), ("AGG_STALENESS", 1)):
        sw.write(name, value)
    for i in range(3):
        sw.write(f"MEMBER_PORT_{i}", 1 << i)
        sw.write(f"MEMBER_IP_{i}", 0x0A000100 + i)
        sw.write(f"MEMBER_ROLE_{i}", 1)
    rng = np.random.default_rng(7)
    x = [rng.standard_normal(p).astype(np.float32) for _ in range(3)]

    def send(w: int, rnd: int, lag: int) -> list[Any]:
        msg = P.gradient(x[w], job=3, worker=w, slot=1, round_=rnd,
                         version=(rnd - lag) & 0xFFFFFFFF, total=5 * p)
        f = P.build_frame(P.Frame(msg, eth_src=bytes([2, 0, 0, 0, 1, w]),
                                  ip_src=0x0A000100 + w, udp_src=40000 + w))
        return sw.process(f, 1 << w)

    def stale() -> int:
        return int(sw.read("CNT_DROP_STALE"))

    def msg(eg: Any) -> P.Message:
        return P.parse_frame(eg.frame, udp_port=struct.unpack_from("!H", eg.frame, 36)[0]).message

    # too stale on a fresh copy: dropped, nothing to answer with
    assert send(2, 10, 2) == [] and stale() == 1
    assert send(1, 10, 1) == []  # within the bound: added, round 10 OPEN ...
    assert send(2, 10, 2) == [] and stale() == 2  # ... too stale on it: no answer
    (done,) = send(0, 10, 0)  # H = 2: DONE, multicast
    want = fp32_add(x[1], x[0])
    assert msg(done).elements().tobytes() == want.tobytes()
    # too stale, the copy DONE with this round: re-sent to it alone, not added
    (re,) = send(2, 10, 5)
    m = msg(re)
    assert re.dst_ports == 1 << 2 and m.flags & Flags.RESEND and m.seq == 10
    assert result_order(m.aux) == [1, 0] and m.elements().tobytes() == want.tobytes()
    assert stale() == 3
    # an older round, too stale, on the copy reused by a newer round: the newer one answers
    send(0, 12, 0)
    (done12,) = send(1, 12, 0)
    (re12,) = send(2, 8, 3)
    assert msg(re12).seq == 12 and stale() == 4
    # a newer round than the copy's, too stale: nothing (the round is not done)
    assert send(2, 14, 2) == [] and stale() == 5
    assert sw.read("CNT_DROP_LATE") == 0 and sw.read("CNT_TX_RESEND") == 2
    assert msg(done12).seq == 12


# -- 2,000,000 elements, H < N ------------------------------------------------------------


@pytest.mark.parametrize(("switch", "dtype"),
                         [("model", "float32"), ("native", "float32"), ("native", "int32")],
                         indirect=["switch"])
def test_two_million_elements_async(switch: SoftSwitch, client: str, dtype: str) -> None:
    size, members, h, slots, packet_elems, calls = 2_000_000, 4, 3, 64, 352, 2
    ctl = _configure(switch, members=members, slots=slots, packet_elems=packet_elems, dtype=dtype,
                     threshold=h, staleness=1)
    aggs = [Aggregator(switch.url, worker=w, timeout=0.02, retries=12, max_backoff=0.2)
            for w in range(members)]
    run = _Run(aggs, dtype)
    rng = np.random.default_rng([14, 2, members])
    if dtype == "int32":
        xs = [[rng.integers(-2**31, 2**31, size, dtype=np.int64).astype(np.int32)
               for _ in range(calls)] for _ in range(members)]
    else:
        xs = [[rng.standard_normal(size).astype(np.float32) for _ in range(calls)]
              for _ in range(members)]
    # the calls one after the other (a barrier between them): a member that lost a
    # result the switch no longer holds cannot wait for the next iteration instead
    between = threading.Barrier(members)
    try:
        def member(w: int) -> Callable[[], None]:
            def body() -> None:
                for k in range(calls):
                    between.wait(60)
                    run.call(w, xs[w][k],
                             version=None if k == 0 else aggs[w].last_iteration + 1)
            return body

        _threads([member(w) for w in range(members)])
        counters = ctl.counters()
    finally:
        for a in aggs:
            a.close()
        ctl.close()
    switch.stop()
    n = -(-size // packet_elems)
    rpc = rounds_per_call(n, slots)
    assert rpc == 128 and run.rpc[0] == [rpc] * calls
    checked = _check_run(run, list(switch.arrivals or []), slots=slots, packet_elems=packet_elems,
                         staleness=1, threshold=h)
    assert checked == members * calls * n
    # every member took the same rounds' results (in step), iteration k for call k
    for w in range(members):
        for k in range(calls):
            assert (run.rounds[w][k] // rpc == k).all(), (w, k)
    assert counters["CNT_TX_RESULT"] == calls * n
    assert counters["CNT_DROP_MISMATCH"] == 0


# -- staleness: beyond the bound dropped yet answered, within the bound added ----------------


SMALL = dict(slots=8, packet_elems=32)
SMALL_SIZE = 8 * 32 * 3 - 7  # 24 chunks: 3 rows, R = 4 rounds per call
TWO_ROWS = 8 * 32 * 2 - 7  # 16 chunks: 2 rows, R = 2 (both stay in the slot's copies)


def _lag_run(switch: SoftSwitch, *, h: int, staleness: int, proxy: bool, size: int
             ) -> tuple[_Run, dict[str, int], list[Any], int]:
    """3 members, 2 calls; in call 1 member 2 goes first with weights one iteration old."""
    ctl = _configure(switch, members=3, threshold=h, staleness=staleness, **SMALL)
    relay = _DropMulticast(switch.address) if proxy else None
    aggs = [Aggregator(switch.url, worker=w, timeout=0.02, retries=12, max_backoff=0.1)
            for w in range(2)]
    if relay is not None:
        aggs.append(Aggregator(relay.url, worker=2, timeout=0.02, retries=12, max_backoff=0.1,
                               control=switch.url,
                               member_address=relay.up.getsockname()))
    else:
        aggs.append(Aggregator(switch.url, worker=2, timeout=0.02, retries=12, max_backoff=0.1))
    run = _Run(aggs, "float32")
    rng = np.random.default_rng(99)
    xs = [[rng.standard_normal(size).astype(np.float32) for _ in range(2)] for _ in range(3)]
    try:
        _threads([lambda w=w: run.call(w, xs[w][0]) for w in range(3)])
        before = len(switch.arrivals or [])

        def lagging() -> None:
            run.call(2, xs[2][1], version=aggs[2].last_iteration)  # one iteration old

        def fresh(w: int) -> None:
            time.sleep(0.15)
            run.call(w, xs[w][1], version=aggs[w].last_iteration + 1)

        _threads([lagging, lambda: fresh(0), lambda: fresh(1)])
    finally:
        for a in aggs:
            a.close()
        if relay is not None:
            relay.close()
    # the counters once nothing is in flight: the relay forwarded its last datagram (a
    # retransmission sent just before the call returned) before it closed, and the switch
    # handles the control read after every datagram already queued before it; read while
    # the relay still forwarded, they missed a few STALE drops the arrival log then held
    try:
        counters = ctl.counters()
    finally:
        ctl.close()
    return run, counters, list(switch.arrivals or []), before


@pytest.mark.parametrize("switch", ENGINES, indirect=True)
def test_lag_beyond_the_bound_is_dropped_and_the_call_returns(switch: SoftSwitch,
                                                              client: str) -> None:
    """Its multicasts are dropped on the way: only the switch's answer to a too-stale
    GRADIENT (a RESEND once the round is DONE) can end its call. The job stops after this
    iteration, and both rows of each slot stay in the slot's two copies."""
    run, counters, arrivals, before = _lag_run(switch, h=2, staleness=0, proxy=True,
                                               size=TWO_ROWS)
    assert run.rpc[2] == [2, 2]
    mine = [a for a in arrivals[before:] if a.worker == 2]
    assert len(mine) >= 16
    # every GRADIENT of the lagging member in call 1 was dropped STALE, none added ...
    assert counters["CNT_DROP_STALE"] >= len(mine)
    for w in range(3):
        for a in run.aux[w][1]:
            assert 2 not in result_order(int(a)), w
    # ... yet its call returned, with the round's result, by RESENDs alone
    np.testing.assert_array_equal(run.rounds[2][1], run.rounds[0][1])
    assert run.results[2][1].tobytes() == run.results[0][1].tobytes()
    assert counters["CNT_TX_RESEND"] >= 16
    _check_run(run, arrivals, slots=SMALL["slots"], packet_elems=SMALL["packet_elems"],
               staleness=0, threshold=2)


@pytest.mark.parametrize("switch", ENGINES, indirect=True)
def test_lag_within_the_bound_is_added(switch: SoftSwitch, client: str) -> None:
    # H = N: no round completes without member 2, whose weights are one iteration old
    run, counters, arrivals, _ = _lag_run(switch, h=3, staleness=1, proxy=False,
                                          size=SMALL_SIZE)
    assert run.rpc[2] == [4, 4]  # the lag is one iteration (4 rounds): within the bound
    for w in range(3):
        for a in run.aux[w][1]:
            assert 2 in result_order(int(a)), w
    # nothing within the bound was dropped: the only STALE drops are the clients' polls
    # (GRADIENTs sent with a lag beyond the bound, never added)
    polls = sum(1 for a in arrivals if (a.seq - a.aux) & 0xFFFFFFFF > 1)
    assert counters["CNT_DROP_STALE"] == polls
    _check_run(run, arrivals, slots=SMALL["slots"], packet_elems=SMALL["packet_elems"],
               staleness=1, threshold=3)


# -- a member iterations behind takes only its own chunks -----------------------------------


@pytest.mark.parametrize("switch", ENGINES, indirect=True)
def test_member_behind_takes_only_its_own_chunks(switch: SoftSwitch, client: str) -> None:
    """Members 0 and 1 (H = 2) run iterations 0 and 1 and pause; member 2 joins at
    iteration 0. Each slot answers its row 0 with round 6 (iteration 1, row 2): another
    chunk's, which it must not take. Row 0 of iteration 1 is gone (round 6 reused its
    copy): given up (zeros, no contributor); rows 1 and 2 are iteration 1's (rounds 5 and
    6, still held). Its next call is in step with the others (iteration 2)."""
    ctl = _configure(switch, members=3, threshold=2, staleness=1 << 20, **SMALL)
    aggs = [Aggregator(switch.url, worker=w, timeout=0.02, retries=14, max_backoff=0.1)
            for w in range(2)]
    run = _Run(aggs, "float32")
    rng = np.random.default_rng(5)
    xs = [[rng.standard_normal(SMALL_SIZE).astype(np.float32) for _ in range(5)]
          for _ in range(3)]
    go = threading.Event()
    try:
        def fast(w: int) -> None:
            for k in range(5):
                if k == 2:
                    assert go.wait(10)
                run.call(w, xs[w][k])

        def behind() -> None:
            while min(len(run.results[0]), len(run.results[1])) < 2:
                time.sleep(0.005)
            # a new member (new socket: no RESULT of the past waits in it), at AGG_EPOCH
            aggs.append(Aggregator(switch.url, worker=2, timeout=0.02, retries=14,
                                   max_backoff=0.1))
            run.add(aggs[2])
            run.call(2, xs[2][0])
            go.set()
            run.call(2, xs[2][1])

        _threads([lambda: fast(0), lambda: fast(1), behind])
    finally:
        go.set()
        for a in aggs:
            a.close()
        ctl.close()
    slots = SMALL["slots"]
    rows = np.arange(run.rounds[2][0].size) // slots
    assert run.jumps[2][0] == slots and run.missing[2][0] == slots
    assert (run.rounds[2][0] == 4 + rows).all()
    got = _chunks(run.results[2][0], SMALL["packet_elems"])
    want = _chunks(run.results[0][1], SMALL["packet_elems"])
    assert not got[rows == 0].any()
    assert got[rows > 0].tobytes() == want[rows > 0].tobytes()
    # in step from the next call on
    assert run.missing[2][1] == 0 and (run.rounds[2][1] == 8 + rows).all()
    assert run.results[2][1].tobytes() == run.results[0][2].tobytes()
    _check_run(run, list(switch.arrivals or []), slots=slots, packet_elems=SMALL["packet_elems"],
               staleness=1 << 20, threshold=2)


@pytest.mark.parametrize("switch", ENGINES, indirect=True)
def test_member_behind_after_the_others_stopped_returns(switch: SoftSwitch, client: str) -> None:
    """Members 0 and 1 run iterations 0 and 1 and stop; member 2 starts at iteration 0.
    Row 0 of iteration 1 is gone from every slot (round 6 reused its copy): those chunks
    are given up (zeros, no contributor) at once, not waited for until a timeout; rows 1
    and 2 (rounds 5 and 6, still held) are iteration 1's results."""
    ctl = _configure(switch, members=3, threshold=2, staleness=1 << 20, **SMALL)
    aggs = [Aggregator(switch.url, worker=w, timeout=0.02, retries=6, max_backoff=0.05)
            for w in range(2)]
    run = _Run(aggs, "float32")
    rng = np.random.default_rng(8)
    xs = [[rng.standard_normal(SMALL_SIZE).astype(np.float32) for _ in range(2)]
          for _ in range(3)]
    try:
        for k in range(2):
            _threads([lambda w=w, k=k: run.call(w, xs[w][k]) for w in range(2)])
        aggs.append(Aggregator(switch.url, worker=2, timeout=0.02, retries=6,
                               max_backoff=0.05))
        run.add(aggs[2])
        run.call(2, xs[2][0])
    finally:
        for a in aggs:
            a.close()
        ctl.close()
    slots = SMALL["slots"]
    assert run.missing[2] == [slots] and run.jumps[2][0] >= slots
    rows = np.arange(run.rounds[2][0].size) // slots
    assert (run.rounds[2][0] == 4 + rows).all()
    assert (run.aux[2][0][rows == 0] == 0).all()
    got = _chunks(run.results[2][0], SMALL["packet_elems"])
    want = _chunks(run.results[0][1], SMALL["packet_elems"])
    assert not got[rows == 0].any()
    assert got[rows > 0].tobytes() == want[rows > 0].tobytes()
    _check_run(run, list(switch.arrivals or []), slots=slots, packet_elems=SMALL["packet_elems"],
               staleness=1 << 20, threshold=2)


# -- the RL strategy: no size limit any more ------------------------------------------------


@pytest.mark.parametrize(("staleness", "threshold", "added"), [(0, 2, False), (1, 3, True)])
def test_inswitch_sync_async_beyond_one_round_per_slot(staleness: int, threshold: int,
                                                       added: bool) -> None:
    """InSwitchSync in async mode with 1000 elements on S·P = 64 (63 chunks, 16 rows):
    it used to refuse more than one round per slot per call. In round 1 worker 2 goes
    first with weights one round old: beyond the bound (0) it is dropped and gets the
    sum of 0 and 1; within it (1, H = N) it is added. ``last_round`` counts calls."""
    from rl.sync import SyncBackend, SyncSpec, make_sync

    with SoftSwitch() as sw:
        spec = SyncSpec(kind="inswitch", world=3, mode="async", threshold=threshold,
                        staleness=staleness, pipeline=0, url=sw.url, timeout=0.02)
        backend = SyncBackend(spec, packet_elems=16, slots=4)
        spec = backend.start()
        syncs = [make_sync(spec, r) for r in range(3)]
        xs = [[np.full(1000, 2.0 ** (r + 3 * k), np.float32) for k in range(2)]
              for r in range(3)]
        out: list[list[np.ndarray]] = [[], [], []]
        try:
            def contribute(rank: int, k: int, version: int | None, delay: float) -> None:
                time.sleep(delay)
                out[rank].append(syncs[rank].allreduce(xs[rank][k], version=version))

            _threads([lambda r=r: contribute(r, 0, None, 0.05 * r) for r in range(3)])
            assert [s.last_round for s in syncs] == [0, 0, 0]
            _threads([lambda: contribute(2, 1, 0, 0.0), lambda: contribute(0, 1, 1, 0.3),
                      lambda: contribute(1, 1, 1, 0.5)])
            assert [s.last_round for s in syncs] == [1, 1, 1]
        finally:
            for s in syncs:
                s.close()
            backend.stop()
    agg_rpc = rounds_per_call(-(-1000 // 16), 4)
    assert agg_rpc == 16
    if added:  # H = 3: every member, in arrival order 2, 0, 1 (exact: powers of two)
        want = fp32_add(fp32_add(xs[2][1], xs[0][1]), xs[1][1])
    else:
        want = fp32_add(xs[0][1], xs[1][1])
    for r in range(3):
        assert out[r][1].tobytes() == want.tobytes(), r


# -- soak: a lossy network, a different straggler every call ----------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("switch", ENGINES, indirect=True)
def test_soak_lossy_async_large(switch: SoftSwitch, client: str) -> None:
    """4 members (H = 3) through a proxy that loses, duplicates and reorders 5 % each way;
    10 calls of 300,000 elements (R = 16), one member 0-50 ms late each call. Every call
    returns; every RESULT is the contributions its aux names, each the chunk its round
    names; a chunk given up is zeros."""
    from netutil import LossyProxy

    members, h, slots, packet_elems, size, calls = 4, 3, 64, 352, 300_000, 10
    ctl = _configure(switch, members=members, slots=slots, packet_elems=packet_elems, threshold=h,
                     staleness=2)
    proxy = LossyProxy(switch.address, members, loss=0.05, duplicate=0.05, reorder=0.05,
                       seed=14)
    aggs = []
    for w in range(members):
        host, port = proxy.downstream[w]
        aggs.append(Aggregator(f"soft://{host}:{port}", worker=w, timeout=0.02, retries=16,
                               max_backoff=0.5, control=switch.url,
                               member_address=proxy.upstream[w]))
    run = _Run(aggs, "float32")
    rng = np.random.default_rng(2)
    xs = [[rng.standard_normal(size).astype(np.float32) for _ in range(calls)]
          for _ in range(members)]
    late = [(int(rng.integers(members)), float(rng.uniform(0, 0.05))) for _ in range(calls)]
    between = threading.Barrier(members)
    try:
        def member(w: int) -> Callable[[], None]:
            def body() -> None:
                for k in range(calls):
                    between.wait(120)
                    if late[k][0] == w:
                        time.sleep(late[k][1])
                    run.call(w, xs[w][k],
                             version=None if k == 0 else aggs[w].last_iteration + 1)
            return body

        _threads([member(w) for w in range(members)], timeout=600)
    finally:
        for a in aggs:
            a.close()
        ctl.close()
        proxy.close()
    switch.stop()
    n = -(-size // packet_elems)
    checked = _check_run(run, list(switch.arrivals or []), slots=slots, packet_elems=packet_elems,
                         staleness=2, threshold=h)
    assert checked == members * calls * n
    missing = sum(sum(m) for m in run.missing)
    print(f"soak: {checked} chunk results, {missing} given up")
    assert missing <= checked // 100, missing
