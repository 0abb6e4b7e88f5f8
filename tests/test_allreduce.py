"""All-reduce through soft switches: multi-process, bit-exact against arrival order."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from netutil import (
    Barrier,
    Phase,
    agg_worker,
    chunk_schedule,
    chunk_view,
    first_contributors,
    make_input,
    ordered_sum,
    run_workers,
    warm_pool,
)
from toolcheck import require_module

from hostdrv import Aggregator, AllreduceTimeoutError, SoftSwitch, SwitchControl

SLOTS, ELEMS, SIZE = 8, 64, 1000
N_CHUNKS = -(-SIZE // ELEMS)


@pytest.fixture(scope="module")
def pool() -> Iterator[Any]:
    with warm_pool(4) as p:
        yield p


def _run(pool: Any, urls: list[str], *, dtype: str, seed: int, phases: list[list[Phase]],
         **kw: Any) -> list[dict[str, Any]]:
    bar = Barrier(len(urls))
    try:
        return run_workers(pool, [(agg_worker, (urls[w], w % 2 if kw.get("leaf") else w,
                                                bar.address),
                                   dict(size=SIZE, dtype=dtype, seed=seed, phases=phases[w],
                                        **{k: v for k, v in kw.items() if k != "leaf"}))
                                  for w in range(len(urls))])
    finally:
        bar.close()


def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x).view(np.uint32)


def _expected_flat(arrivals: list[Any], outs: list[dict[str, Any]], call: int,
                   threshold: int = 4) -> np.ndarray:
    refs = []
    for c, (s, r) in enumerate(chunk_schedule(N_CHUNKS, SLOTS, call)):
        order = [a.worker for a in first_contributors(arrivals, s, r, threshold)]
        assert len(order) == threshold, f"slot {s} round {r}: only {order} arrived"
        refs.append(ordered_sum([chunk_view(outs[w]["inputs"][call], ELEMS)[c] for w in order]))
    return np.concatenate(refs)[:SIZE]


def test_sync_fp32_bit_exact_in_arrival_order(pool: Any) -> None:
    with SoftSwitch(log_arrivals=True) as sw:
        ctl = SwitchControl(sw.url)
        ctl.configure_aggregation(members=4, slots=SLOTS, packet_elems=ELEMS)
        outs = _run(pool, [sw.url] * 4, dtype="float32", seed=11, phases=[[Phase(3)]] * 4)
        counters = ctl.counters()
        ctl.close()
        sw.stop()
        arrivals = list(sw.arrivals or [])
    for call in range(3):
        want = _expected_flat(arrivals, outs, call)
        for w in range(4):
            got = outs[w]["results"][call]
            assert got.dtype == np.float32 and got.shape == (SIZE,)
            np.testing.assert_array_equal(_bits(got), _bits(want), err_msg=f"worker {w} call {call}")
            assert (outs[w]["contributors"][call] == 4).all()
        # and it is the sum (up to rounding)
        exact = sum(outs[w]["inputs"][call].astype(np.float64) for w in range(4))
        np.testing.assert_allclose(want, exact, rtol=1e-5, atol=1e-30 + 1e-6 * np.abs(exact).max())
    assert counters["CNT_TX_RESULT"] == 3 * N_CHUNKS
    assert counters["CNT_RX_GRADIENT"] >= 4 * 3 * N_CHUNKS
    assert counters["CNT_DROP_SPOOFED"] == counters["CNT_DROP_UNKNOWN_WORKER"] == 0


def test_sync_int32_exact(pool: Any) -> None:
    with SoftSwitch() as sw:
        ctl = SwitchControl(sw.url)
        ctl.configure_aggregation(members=4, slots=SLOTS, packet_elems=ELEMS, dtype="int32")
        outs = _run(pool, [sw.url] * 4, dtype="int32", seed=5, phases=[[Phase(2)]] * 4)
        ctl.close()
    for call in range(2):
        with np.errstate(over="ignore"):
            want = sum(outs[w]["inputs"][call] for w in range(4)).astype(np.int32)
        for w in range(4):
            np.testing.assert_array_equal(outs[w]["results"][call], want)


def test_async_threshold_late_and_rejoin_catch_up(pool: Any) -> None:
    """N=4, H=3: worker 3 is late (LATE), then rejoins so late that the slots moved on."""
    with SoftSwitch(log_arrivals=True) as sw:
        ctl = SwitchControl(sw.url)
        ctl.configure_aggregation(members=4, slots=SLOTS, packet_elems=ELEMS, mode="async",
                                  threshold=3, staleness=0)
        # phase 0: one call each, worker 3 late; phase 1: workers 0-2 three calls
        # (each moves every slot on by 2 rounds), then worker 3 restarts from round 0
        fast = [Phase(1), Phase(3)]
        slow = [Phase(1, delay=0.3), Phase(1, delay=0.6, rejoin=True)]
        outs = _run(pool, [sw.url] * 4, dtype="float32", seed=3,
                    phases=[fast, fast, fast, slow], timeout=0.05, retries=12)
        counters = ctl.counters()
        ctl.close()
        sw.stop()
        arrivals = list(sw.arrivals or [])

    def reference(slot: int, round_: int) -> np.ndarray:
        parts = first_contributors(arrivals, slot, round_, 3)
        assert len(parts) == 3
        return ordered_sum([np.frombuffer(a.payload, dtype="<f4") for a in parts])

    for w in range(4):
        for call, res in enumerate(outs[w]["results"]):
            got = chunk_view(res, ELEMS)
            for c in range(N_CHUNKS):
                r = int(outs[w]["rounds"][call][c])
                np.testing.assert_array_equal(_bits(got[c]), _bits(reference(c % SLOTS, r)),
                                              err_msg=f"worker {w} call {call} chunk {c}")
            assert (outs[w]["contributors"][call] == 3).all()
    # the fast workers never waited for worker 3
    first_three = {a.worker for a in first_contributors(arrivals, 0, 0, 3)}
    assert first_three == {0, 1, 2}
    slow_out = outs[3]
    assert slow_out["stale"][0] == 0 and (slow_out["rounds"][0] == outs[0]["rounds"][0]).all()
    # rejoined at round 0: the first chunk of each slot is answered by the newest round
    # (RESEND, catch-up), the second by the same round as the others' last call
    assert slow_out["stale"][1] == SLOTS
    assert (slow_out["rounds"][1] == outs[0]["rounds"][3]).all()
    np.testing.assert_array_equal(_bits(slow_out["results"][1]), _bits(outs[0]["results"][3]))
    assert counters["CNT_DROP_LATE"] >= N_CHUNKS
    assert counters["CNT_DROP_STALE"] >= SLOTS
    assert counters["CNT_TX_RESEND"] >= N_CHUNKS


def test_hierarchical_two_leaves_under_a_root(pool: Any) -> None:
    root = SoftSwitch(log_arrivals=True).start()
    leaves = [SoftSwitch(log_arrivals=True).start() for _ in range(2)]
    try:
        rctl = SwitchControl(root.url)
        rctl.configure_aggregation(members=2, slots=SLOTS, packet_elems=ELEMS)
        for k, leaf in enumerate(leaves):
            rctl.set_member(k, port=1 << k, ip=leaf.address[0], udp=leaf.address[1], role=1)
            lctl = SwitchControl(leaf.url)
            lctl.configure_aggregation(members=2, slots=SLOTS, packet_elems=ELEMS, role="leaf",
                                       uplink_port=0x80, parent=root.address, leaf_id=k)
            lctl.close()
        urls = [leaves[0].url, leaves[0].url, leaves[1].url, leaves[1].url]
        outs = _run(pool, urls, dtype="float32", seed=21, phases=[[Phase(2)]] * 4, leaf=True)
        counters = [SwitchControl(s.url).counters() for s in (root, *leaves)]
        rctl.close()
    finally:
        for s in (root, *leaves):
            s.close()
    root_log = root.arrivals or []
    leaf_logs = [leaves[0].arrivals or [], leaves[1].arrivals or []]
    for call in range(2):
        refs = []
        for c, (s, r) in enumerate(chunk_schedule(N_CHUNKS, SLOTS, call)):
            partial = []
            for k in range(2):
                order = [a.worker for a in first_contributors(leaf_logs[k], s, r, 2)]
                partial.append(ordered_sum([chunk_view(outs[2 * k + w]["inputs"][call],
                                                       ELEMS)[c] for w in order]))
            root_order = [a.worker for a in first_contributors(root_log, s, r, 2)]
            refs.append(ordered_sum([partial[k] for k in root_order]))
        want = np.concatenate(refs)[:SIZE]
        for w in range(4):
            np.testing.assert_array_equal(_bits(outs[w]["results"][call]), _bits(want),
                                          err_msg=f"worker {w} call {call}")
            assert (outs[w]["contributors"][call] == 2).all()
    assert counters[0]["CNT_TX_RESULT"] == 2 * N_CHUNKS
    assert counters[1]["CNT_TX_UP"] >= 2 * N_CHUNKS and counters[2]["CNT_TX_UP"] >= 2 * N_CHUNKS
    assert counters[1]["CNT_RX_RESULT"] >= 2 * N_CHUNKS


def _threads(aggs: list[Aggregator], inputs: list[Any], **kw: Any) -> list[Any]:
    out: list[Any] = [None] * len(aggs)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            out[i] = aggs[i].allreduce(inputs[i], **kw)
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors.append(e)

    ts = [threading.Thread(target=run, args=(i,)) for i in range(len(aggs))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(20)
    if errors:
        raise errors[0]
    return out


def test_int32_quantized_float_input_and_shapes() -> None:
    with SoftSwitch() as sw, SwitchControl(sw.url) as ctl:
        ctl.configure_aggregation(members=3, slots=4, packet_elems=32, dtype="int32")
        aggs = [Aggregator(sw.url, worker=w) for w in range(3)]
        xs = [make_input(9, w, 0, 300, "float64").clip(-100, 100).reshape(10, 30)
              for w in range(3)]
        scale = 1 << 16
        got = _threads(aggs, xs, scale=scale)
        q = [np.rint(x * scale).astype(np.int64) for x in xs]
        want = (sum(q) / scale).astype(np.float64)
        for g in got:
            assert g.dtype == np.float64 and g.shape == (10, 30)
            np.testing.assert_array_equal(g, want)
        with pytest.raises(ValueError, match="scale"):
            aggs[0].allreduce(xs[0])
        for a in aggs:
            a.close()


def test_torch_in_torch_out_and_repeated_rounds() -> None:
    torch = require_module("torch", "torch tensors in and out of Aggregator.allreduce")
    with SoftSwitch() as sw, SwitchControl(sw.url) as ctl:
        ctl.configure_aggregation(members=2, slots=4, packet_elems=16)
        aggs = [Aggregator(sw.url, worker=w, window=2) for w in range(2)]
        for step in range(3):
            xs = [torch.full((5, 7), float(w + step), dtype=torch.float32) for w in range(2)]
            got = _threads(aggs, xs)
            for g in got:
                assert isinstance(g, torch.Tensor) and g.shape == (5, 7)
                assert torch.equal(g, torch.full((5, 7), float(1 + 2 * step)))
        # 35 elements = 3 chunks per call on 4 slots: slots 0-2 advanced 3 rounds
        assert aggs[0].rounds == [3, 3, 3, 0] == aggs[1].rounds
        for a in aggs:
            a.close()


def test_timeout_names_slot_and_round() -> None:
    with SoftSwitch() as sw, SwitchControl(sw.url) as ctl:
        ctl.configure_aggregation(members=2, slots=4, packet_elems=16)
        agg = Aggregator(sw.url, worker=0, timeout=0.005, retries=3, max_backoff=0.01)
        with pytest.raises(AllreduceTimeoutError, match=r"slot 0 round 0") as info:
            agg.allreduce(np.ones(16, dtype=np.float32))
        assert isinstance(info.value, TimeoutError)
        assert (info.value.slot, info.value.round, info.value.chunk) == (0, 0, 0)
        agg.close()


@pytest.mark.parametrize("size", [48, 35])  # whole chunks (sent from x as it is), packed
def test_out_receives_the_sum_without_a_new_array(size: int) -> None:
    """``allreduce(x, out=...)`` writes the sum the call without ``out`` returns (into
    ``x`` itself as well), and the buffers it keeps do not leak from one call into the next."""
    with SoftSwitch() as sw, SwitchControl(sw.url) as ctl:
        ctl.configure_aggregation(members=2, slots=4, packet_elems=16)
        aggs = [Aggregator(sw.url, worker=w, window=2) for w in range(2)]
        for step in range(3):
            xs = [make_input(5, w, step, size, "float32") for w in range(2)]
            want = _threads(aggs, [x.copy() for x in xs])
            outs = [np.full(size, np.nan, dtype=np.float32), xs[1]]  # a new array; x itself
            got = [None, None]

            def run(i: int, xs: list[np.ndarray] = xs, outs: list[np.ndarray] = outs,
                    got: list[Any] = got) -> None:
                got[i] = aggs[i].allreduce(xs[i], out=outs[i])

            ts = [threading.Thread(target=run, args=(i,)) for i in range(2)]
            for t in ts:
                t.start()
            for t in ts:
                t.join(20)
            for i in range(2):
                assert got[i] is outs[i]
                np.testing.assert_array_equal(_bits(outs[i]), _bits(want[i]))
        with pytest.raises(ValueError, match="out"):
            aggs[0].allreduce(np.ones(size, dtype=np.float32), out=np.ones(size + 1, np.float32))
        for a in aggs:
            a.close()
