"""A slow member (issue 19 part 1; ``docs/protocol.md`` section 4, "Epochs, failures and
rejoin").

One member (the straggler) sleeps longer than the others' whole call timeout at random
points of its calls: before a call, between two of its GRADIENTs (mid-send), or while it
waits for results (mid-call). Every member all-reduces a step-tagged int32 vector per
step (element 0 is ``step * 1000 + worker``, the rest drawn from a generator seeded by
the step and the worker) and, as the default rule says, retries a failed call with the
same vector (``Aggregator.step`` does not advance on a failure, so the retry has the
same step id and resumes the timed-out call). Against the soft switch (golden model and
native engine) and the sim switch (the RTL in Verilator):

* sync: every sum anyone accepted is exactly one step's contributions (the sum of every
  member's vector of the step it called), every member completes every step, the
  straggler never sees an error, the others only timeouts, and the switch never refused
  a chunk of another step (``CNT_DROP_MISMATCH`` 0);
* async (H < N): every accepted RESULT is the ordered sum (RESULT ``aux``) of the logged
  contributions it names, each contributor once and within the staleness bound, or a
  given-up chunk (zeros, no contributor); the straggler never sees an error;
* the issue's own case: member 1 is late for step 1 beyond member 0's timeout and
  completes it later; the two must not end up one step apart (with the client before
  issue 19, member 0 started a new epoch after its timeout, member 1 completed step 1
  with member 0's abandoned contributions, and every later sum mixed two steps).

The straggler's naps start at step 1: a member that times out in the first call of an
epoch it took from ``AGG_EPOCH`` (no RESULT yet) is a newcomer and leads a new epoch
(the rule that lets a restarted member meet the others, ``tests/test_rejoin.py``), so
a straggler there costs an error (never a wrong sum), not a silent resume.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from engines import ENGINES

from hostdrv import Aggregator, AllreduceTimeoutError, SoftSwitch, SwitchControl
from hostdrv.client.errors import AllreduceError
from hostdrv.wire.protocol import result_order
from tests.netutil import make_input, ordered_sum

KINDS = [*(f"soft-{e}" for e in ENGINES), "sim"]
"""Switches: the soft switch on each engine, and the sim switch (the RTL)."""

_M32 = 0xFFFFFFFF


@contextlib.contextmanager
def serve(kind: str) -> Iterator[SoftSwitch]:
    """A soft switch on an engine, or the sim switch, logging GRADIENTs."""
    if kind.startswith("soft-"):
        with SoftSwitch("127.0.0.1:0", engine=kind.removeprefix("soft-"),
                        log_arrivals=True) as sw:
            yield sw
        return
    from tests.toolcheck import require_module, require_tool

    require_tool("verilator", "the sim switch runs the RTL in Verilator")
    require_module("pyverilator", "the sim switch runs the RTL in Verilator")
    from hostdrv.switch.sim import SimSwitch

    with SimSwitch("127.0.0.1:0", log_arrivals=True) as sw:
        yield sw


def tagged(seed: int, worker: int, step: int, size: int) -> np.ndarray:
    """``worker``'s vector for ``step``: element 0 is ``step * 1000 + worker``."""
    x = make_input(seed, worker, step, size, "int32")
    x[0] = step * 1000 + worker
    return x


class Napper:
    """Makes a member a straggler: sleeps ``nap`` seconds at a planned point of a call.

    The member runs the Python client loop (whose sends and receives go through its
    transport, wrapped here): ``"send"`` sleeps before its ``k``-th GRADIENT of the call
    (between two chunks), ``"recv"`` at its ``k``-th wait for results (mid-call),
    ``"before"`` before the call itself.
    """

    def __init__(self, agg: Aggregator) -> None:
        agg._native = lambda: None  # type: ignore[method-assign]  # the Python loop
        tr = agg.transport
        self._send, self._recv = tr.send, tr.recv_into
        tr.send = self._send_hook  # type: ignore[method-assign]
        tr.send_segments = self._segments_hook  # type: ignore[method-assign]
        tr.recv_into = self._recv_hook  # type: ignore[method-assign]
        self.mode, self.at, self.nap = "", 0, 0.0
        self.sends = self.recvs = 0
        self.naps: list[tuple[str, int]] = []

    def plan(self, mode: str, at: int, nap: float) -> None:
        """The next call sleeps ``nap`` s at point ``at`` of kind ``mode`` (``""``: none)."""
        self.mode, self.at, self.nap = mode, at, nap
        self.sends = self.recvs = 0
        if mode == "before":
            self._sleep()

    def _sleep(self) -> None:
        self.naps.append((self.mode, self.at))
        self.mode = ""
        time.sleep(self.nap)

    def _send_hook(self, buf: Any) -> None:
        self.sends += 1
        if self.mode == "send" and self.sends == self.at:
            self._sleep()
        self._send(buf)

    def _segments_hook(self, buf: Any, seg: int) -> None:
        for off in range(0, len(buf), seg):  # one by one: a nap can fall between two
            self._send_hook(buf[off:off + seg])

    def _recv_hook(self, buf: Any, timeout: float) -> Any:
        self.recvs += 1
        if self.mode == "recv" and self.recvs == self.at:
            self._sleep()
        return self._recv(buf, timeout)


class Member:
    """One member's thread: every step, retried with the same vector until it succeeds."""

    def __init__(self, agg: Aggregator, worker: int, steps: int, size: int, seed: int,
                 napper: Napper | None = None, plans: dict[int, tuple[str, int]] | None = None,
                 nap: float = 0.0, attempts: int = 40) -> None:
        self.agg, self.worker, self.steps, self.size, self.seed = agg, worker, steps, size, seed
        self.napper, self.plans, self.nap, self.attempts = napper, plans or {}, nap, attempts
        self.accepted: list[dict[str, Any]] = []
        self.errors: list[tuple[int, BaseException]] = []

    def __call__(self) -> None:
        for step in range(self.steps):
            x = tagged(self.seed, self.worker, step, self.size)
            if self.napper is not None:
                mode, at = self.plans.get(step, ("", 0))
                self.napper.plan(mode, at, self.nap)
            for _ in range(self.attempts):
                try:
                    y = self.agg.allreduce(x)
                except (AllreduceError, AllreduceTimeoutError) as e:
                    self.errors.append((step, e))
                    continue
                self.accepted.append({"step": step, "result": y,
                                      "aux": self.agg.last_aux.copy(),
                                      "rounds": self.agg.last_rounds.copy(),
                                      "rpc": self.agg.last_rounds_per_call,
                                      "resumed": self.agg.resumed})
                break
            else:
                raise AssertionError(f"member {self.worker} gave up step {step}: "
                                     f"{self.errors[-3:]}")


def run_threads(fns: list[Callable[[], None]], timeout: float) -> None:
    """Run ``fns`` in threads; re-raise the first exception; fail on a hang."""
    errors: list[BaseException] = []

    def wrap(fn: Callable[[], None]) -> None:
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors.append(e)

    ts = [threading.Thread(target=wrap, args=(fn,), daemon=True) for fn in fns]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout)
    assert not any(t.is_alive() for t in ts), "a member hung"
    if errors:
        raise errors[0]


def nap_plans(rng: np.random.Generator, steps: int, chunks: int,
              share: float) -> dict[int, tuple[str, int]]:
    """Random naps for steps 1 … ``steps`` − 1: a ``share`` of them, each at a random point."""
    plans: dict[int, tuple[str, int]] = {}
    for step in range(1, steps):
        if rng.random() < share:
            mode = ["before", "send", "recv"][int(rng.integers(3))]
            # every GRADIENT is sent at least once; a call waits for results at least once
            # (more often when they come in several batches)
            at = {"before": 0, "send": int(rng.integers(1, chunks + 1)),
                  "recv": int(rng.integers(1, 3))}[mode]
            plans[step] = (mode, at)
    return plans


# -- sync ---------------------------------------------------------------------------------

_FAST = {"timeout": 0.01, "retries": 4, "max_backoff": 0.04}
"""The others' timing: a call gives up after about 0.15 s without an answer."""


def run_sync(kind: str, *, members: int, steps: int, size: int, seed: int, share: float,
             nap: float, slots: int = 4, packet_elems: int = 16,
             client: str = "native") -> tuple[list[Member], dict[str, int]]:
    """``members`` sync members, the last one a straggler; returns them and the counters."""
    with serve(kind) as sw, SwitchControl(sw.url) as ctl:
        ctl.configure_aggregation(members=members, slots=slots, packet_elems=packet_elems,
                                  dtype="int32")
        aggs = [Aggregator(sw.url, worker=w, **_FAST) for w in range(members)]
        if client == "python":
            for a in aggs:
                a._native = lambda: None  # type: ignore[method-assign]
        napper = Napper(aggs[-1])
        chunks = -(-size // packet_elems)
        plans = nap_plans(np.random.default_rng([seed, 19]), steps, chunks, share)
        team = [Member(aggs[w], w, steps, size, seed) for w in range(members - 1)]
        team.append(Member(aggs[-1], members - 1, steps, size, seed, napper, plans, nap))
        try:
            run_threads(team, timeout=60 + steps * (nap + 1.0))
        finally:
            counters = ctl.counters()
            for a in aggs:
                a.close()
    assert len(napper.naps) >= len(plans) // 2, (napper.naps, plans)  # a 2nd wait may not be
    return team, counters


def check_sync(team: list[Member], steps: int, size: int, seed: int,
               counters: dict[str, int]) -> None:
    """Every accepted sum is its step's; everyone completed every step; only the others
    timed out, the straggler saw no error; no step mismatch reached the switch."""
    members = len(team)
    for m in team:
        assert [r["step"] for r in m.accepted] == list(range(steps)), m.worker
        for r in m.accepted:
            want = ordered_sum([tagged(seed, w, r["step"], size) for w in range(members)])
            np.testing.assert_array_equal(r["result"], want,
                                          err_msg=f"member {m.worker} step {r['step']}")
            assert (r["aux"] & 0xF).tolist() == [members] * len(r["aux"])
    assert not team[-1].errors, team[-1].errors
    for m in team[:-1]:
        assert all(type(e) is AllreduceTimeoutError for _, e in m.errors), m.errors
    assert counters["CNT_DROP_MISMATCH"] == 0


@pytest.mark.parametrize("kind", KINDS)
def test_sync_straggler_gets_every_step(kind: str) -> None:
    """3 members, the last one asleep beyond the others' timeout in a third of the steps
    (before a call, between two chunks, mid-call): every accepted sum is its step's, the
    calls complete, the others resume their timed-out calls."""
    steps, size, seed = (8 if kind == "sim" else 16), 100, 3
    team, counters = run_sync(kind, members=3, steps=steps, size=size, seed=seed, share=0.35,
                              nap=0.35)
    check_sync(team, steps, size, seed, counters)
    timeouts = sum(len(m.errors) for m in team[:-1])
    resumed = sum(r["resumed"] > 0 for m in team[:-1] for r in m.accepted)
    assert timeouts >= 1, "no nap made anyone time out"
    print(f"{kind}: {timeouts} timeouts of the others, {resumed} resumed calls took chunks "
          f"of the call they resumed, naps {team[-1].napper.naps if team[-1].napper else []}")


@pytest.mark.slow
@pytest.mark.parametrize("client", ["native", "python"])
@pytest.mark.parametrize("kind", [f"soft-{e}" for e in ENGINES])
def test_sync_straggler_soak(kind: str, client: str) -> None:
    """The same over 150 steps of 5 chunks, 4 members, half of the steps with a nap."""
    steps, size, seed = 150, 70, 7
    team, counters = run_sync(kind, members=4, steps=steps, size=size, seed=seed, share=0.5,
                              nap=0.3, client=client)
    check_sync(team, steps, size, seed, counters)


# -- the case ---------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "client"),
                         [(k, c) for k in KINDS for c in ("native", "python")
                          if k != "sim" or c == "native"])  # the loops compared on soft
def test_late_member_completes_a_step_the_other_timed_out_on(kind: str, client: str) -> None:
    """Issue 19 part 1 as reported: member 1 is late for step 1, well beyond member 0's
    timeout; member 0 fails step 1 and retries it (the README's "retry the step");
    member 1 then completes step 1 with member 0's contributions. Every sum either
    accepted is exactly one step's (before issue 19: 3001 = step 1 + step 2 and so on
    for good), and both complete every step."""
    steps, size = 8, 16
    with serve(kind) as sw, SwitchControl(sw.url) as ctl:
        ctl.configure_aggregation(members=2, slots=4, packet_elems=16, dtype="int32")
        aggs = [Aggregator(sw.url, worker=w, timeout=0.02, retries=3, max_backoff=0.05)
                for w in range(2)]
        if client == "python":
            for a in aggs:
                a._native = lambda: None  # type: ignore[method-assign]
        late = threading.Event()

        def member(w: int) -> Callable[[], None]:
            def body() -> None:
                for step in range(steps):
                    x = np.full(size, step * 1000 + w, dtype=np.int32)
                    if w == 1 and step == 1:
                        time.sleep(0.8)  # member 0 gives up step 1 after ~0.2 s
                        late.set()
                    for _ in range(60):
                        try:
                            y = aggs[w].allreduce(x)
                        except (AllreduceError, AllreduceTimeoutError) as e:
                            errors[w].append((step, e))
                            continue
                        got[w].append((step, int(y[0]), bool((y == y[0]).all())))
                        break
            return body

        got: list[list[tuple[int, int, bool]]] = [[], []]
        errors: list[list[tuple[int, BaseException]]] = [[], []]
        try:
            run_threads([member(0), member(1)], timeout=120)
        finally:
            for a in aggs:
                a.close()
    assert late.is_set()
    assert any(step == 1 for step, _ in errors[0]), "member 0 did not time out on step 1"
    for w in range(2):
        want = [(step, 2 * step * 1000 + 1, True) for step in range(steps)]
        assert got[w] == want, (w, got[w], errors[w][:4])
    assert not errors[1], errors[1]


# -- async --------------------------------------------------------------------------------


def check_async(team: list[Member], arrivals: list[Any], staleness: int, slots: int,
                packet_elems: int) -> int:
    """Every accepted RESULT chunk is the ordered sum of the logged contributions its aux
    names (each contributor once, each added within the staleness bound) or a given-up
    chunk (zeros, aux 0). Returns the number of chunks checked."""
    first: dict[tuple[int, int, int], np.ndarray] = {}
    for a in arrivals:
        if (a.seq - a.aux) & _M32 <= staleness:  # an addable contribution (not a poll)
            first.setdefault((a.slot, a.seq, a.worker), np.frombuffer(a.payload, np.int32))
    checked = 0
    for m in team:
        for r in m.accepted:
            y = r["result"]
            for c, (rnd, aux) in enumerate(zip(r["rounds"], r["aux"], strict=True)):
                s, rnd, aux = c % slots, int(rnd), int(aux)
                got = y[c * packet_elems:(c + 1) * packet_elems]
                if aux == 0:  # given up: its round was gone
                    assert not got.any()
                    continue
                assert (rnd % r["rpc"]) * slots + s == c, (m.worker, r["step"], c, rnd)
                order = result_order(aux)
                assert len(set(order)) == len(order) >= 2, order
                parts = [first[s, rnd, w] for w in order]
                want = ordered_sum(parts)
                np.testing.assert_array_equal(got, want[:got.size],
                                              err_msg=f"member {m.worker} step {r['step']}")
                checked += 1
    return checked


@pytest.mark.parametrize("kind", KINDS)
def test_async_straggler(kind: str) -> None:
    """N = 3, H = 2 async, the last member asleep beyond the others' timeout in a third of
    the steps: every RESULT anyone took is the ordered sum of the logged contributions it
    names, within the staleness bound; the straggler sees no error."""
    run_async(kind, steps=8 if kind == "sim" else 16, share=0.35)


@pytest.mark.slow
@pytest.mark.parametrize("kind", [f"soft-{e}" for e in ENGINES])
def test_async_straggler_soak(kind: str) -> None:
    """The same over 150 steps, half of them with a nap."""
    run_async(kind, steps=150, share=0.5, seed=13)


def run_async(kind: str, *, steps: int, share: float, seed: int = 9) -> None:
    """N = 3, H = 2 async members, the last one a straggler; checks every RESULT."""
    members, threshold, staleness, slots, packet_elems = 3, 2, 3, 4, 16
    size, nap = 100, 0.35
    with serve(kind) as sw, SwitchControl(sw.url) as ctl:
        ctl.configure_aggregation(members=members, slots=slots, packet_elems=packet_elems,
                                  dtype="int32",
                                  mode="async", threshold=threshold, staleness=staleness)
        aggs = [Aggregator(sw.url, worker=w, **_FAST) for w in range(members)]
        napper = Napper(aggs[-1])
        plans = nap_plans(np.random.default_rng([seed, 19]), steps, -(-size // packet_elems), share)
        team = [Member(aggs[w], w, steps, size, seed) for w in range(members - 1)]
        team.append(Member(aggs[-1], members - 1, steps, size, seed, napper, plans, nap))
        try:
            run_threads(team, timeout=60 + steps * (nap + 1.0))
        finally:
            for a in aggs:
                a.close()
        arrivals = list(sw.arrivals or [])
    for m in team:
        assert [r["step"] for r in m.accepted] == list(range(steps)), m.worker
    assert not team[-1].errors, team[-1].errors
    checked = check_async(team, arrivals, staleness, slots, packet_elems)
    assert checked >= steps * 7  # most chunks were summed (a few may be given up)
    print(f"{kind}: {checked} chunks checked, naps {napper.naps}, others' errors "
          f"{[len(m.errors) for m in team[:-1]]}")


# -- the first call of a job, a member late: the newcomer rule -----------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_member_late_for_the_first_call(kind: str) -> None:
    """Member 1 starts its first call well after member 0's timeout. Member 0, a newcomer
    (no RESULT yet in the epoch it read), leads a new epoch and withdraws its round-0
    chunks; member 1 then reaches a withdrawn round: an error (StepMismatchError), never a
    sum with member 0's abandoned chunks; it starts a new epoch, meets member 0 there, and
    both get step 0's exact sum, then step 1's."""
    size = 40
    with serve(kind) as sw, SwitchControl(sw.url) as ctl:
        ctl.configure_aggregation(members=2, slots=4, packet_elems=16, dtype="int32")
        aggs = [Aggregator(sw.url, worker=w, timeout=0.02, retries=3, max_backoff=0.05)
                for w in range(2)]
        got: list[list[tuple[int, np.ndarray]]] = [[], []]
        errors: list[list[BaseException]] = [[], []]

        def member(w: int) -> Callable[[], None]:
            def body() -> None:
                if w == 1:
                    time.sleep(0.6)  # member 0 gives up after ~0.2 s and leads
                for step in range(2):
                    for _ in range(60):
                        try:
                            got[w].append((step, aggs[w].allreduce(tagged(1, w, step, size))))
                            break
                        except (AllreduceError, AllreduceTimeoutError) as e:
                            errors[w].append(e)
            return body

        try:
            run_threads([member(0), member(1)], timeout=120)
            epoch = ctl.read("AGG_EPOCH")
        finally:
            for a in aggs:
                a.close()
    for w in range(2):
        assert [s for s, _ in got[w]] == [0, 1], (w, errors[w][:3])
        for step, y in got[w]:
            np.testing.assert_array_equal(y, tagged(1, 0, step, size) + tagged(1, 1, step, size))
    assert errors[0] and all(type(e) is AllreduceTimeoutError for e in errors[0])
    assert [type(e).__name__ for e in errors[1]] == ["StepMismatchError"], errors[1]
    assert aggs[0].epoch == aggs[1].epoch == epoch == 1 << 24


# -- the RL exchange --------------------------------------------------------------------------


def test_rl_inswitch_round_retried_with_the_same_vector() -> None:
    """rl.sync's in-switch strategy: worker 1 is late for round 1 beyond worker 0's timeout;
    worker 0's round times out and is retried with the same vector (SyncSpec.attempts), which
    resumes it: both get every round's exact sum, nobody a round apart."""
    from rl.sync import SyncSpec
    from rl.sync.strategies import InSwitchSync

    rounds, size = 4, 40
    with SoftSwitch("127.0.0.1:0") as sw, SwitchControl(sw.url) as ctl:
        ctl.configure_aggregation(members=2, slots=4, packet_elems=16, dtype="int32")
        spec = SyncSpec(kind="inswitch", world=2, dtype="int32", url=sw.url, timeout=0.01,
                        retries=3, attempts=20)
        syncs = [InSwitchSync(spec, w) for w in range(2)]
        got: list[list[np.ndarray]] = [[], []]

        def worker(w: int) -> Callable[[], None]:
            def body() -> None:
                for r in range(rounds):
                    if w == 1 and r == 1:
                        time.sleep(0.5)
                    got[w].append(syncs[w].allreduce(tagged(2, w, r, size)))
            return body

        try:
            run_threads([worker(0), worker(1)], timeout=60)
        finally:
            for s in syncs:
                s.close()
    for w in range(2):
        for r in range(rounds):
            np.testing.assert_array_equal(got[w][r], tagged(2, 0, r, size) + tagged(2, 1, r, size))
