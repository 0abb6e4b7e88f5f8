"""Misuse through a real switch: tensor length mismatch, fail-fast construction, dtypes,
timeout diagnosis, and a client verifying an fp32 sum from the RESULT's order of addition.

Runs on the soft switch and on the sim switch (the RTL in Verilator).
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from hostdrv import Aggregator, AllreduceTimeoutError, SwitchControl
from hostdrv.client.errors import StepMismatchError, TensorMismatchError
from hostdrv.wire.protocol import result_order
from tests.netutil import in_threads, ordered_sum, switch_of_kind
from tests.toolcheck import require_module

KINDS = ["soft", "sim"]


@pytest.mark.parametrize("kind", KINDS)
def test_tensor_length_mismatch_is_an_error_for_everyone(kind: str) -> None:
    """The outsider's case: worker 0 all-reduces 1000 elements, worker 1 600. Both get a
    clear error naming both lengths at once (no timeout), nothing mixed is returned, and
    the next call with matching tensors gives the exact sum."""
    with switch_of_kind(kind) as sw, SwitchControl(sw.url) as ctl:
        ctl.configure_aggregation(members=2, slots=8, packet_elems=352)
        aggs = [Aggregator(sw.url, worker=w, timeout=0.05, retries=8) for w in range(2)]
        xs = [np.arange(1000, dtype=np.float32), np.full(600, 1000, np.float32)]
        t0 = time.monotonic()
        got = in_threads([lambda w=w: aggs[w].allreduce(xs[w]) for w in range(2)])
        elapsed = time.monotonic() - t0
        for w, g in enumerate(got):
            assert isinstance(g, TensorMismatchError), (w, g)
            assert {g.round_total, g.other} == {1000, 600} and g.mine == xs[w].size
            assert "1000" in str(g) and "600" in str(g)
        assert elapsed < 5.0  # an error, not a timeout (8 retries would take ~10 s)
        assert ctl.read("CNT_DROP_MISMATCH") >= 1
        # the job carries on: matching tensors again, in a new epoch
        ys = [np.arange(1000, dtype=np.float32) * (w + 1) for w in range(2)]
        got = in_threads([lambda w=w: aggs[w].allreduce(ys[w]) for w in range(2)])
        for w, g in enumerate(got):
            assert not isinstance(g, BaseException), g
            chunks = [ys[v] for v in range(2)]
            for c, aux in enumerate(aggs[w].last_aux):
                lo, hi = 352 * c, min(352 * (c + 1), 1000)
                want = ordered_sum([chunks[v][lo:hi] for v in result_order(int(aux))])
                np.testing.assert_array_equal(g[lo:hi].view(np.uint32), want.view(np.uint32))
            assert aggs[w].epochs == 1
        for a in aggs:
            a.close()


@pytest.mark.parametrize("kind", KINDS)
def test_step_mismatch_is_an_error_for_everyone(kind: str) -> None:
    """Sync: worker 1 all-reduces step 5 where worker 0 all-reduces step 0 (the same
    rounds). Both get StepMismatchError at once (an ERROR RESULT whose aux is its total),
    nothing of either step is summed; the step counters do not advance, and the next
    call (both at step 0 by default) gives the exact sum in a new epoch."""
    with switch_of_kind(kind) as sw, SwitchControl(sw.url) as ctl:
        ctl.configure_aggregation(members=2, slots=4, packet_elems=16, dtype="int32")
        aggs = [Aggregator(sw.url, worker=w, timeout=0.05, retries=8) for w in range(2)]
        xs = [np.arange(40, dtype=np.int32) + 1000 * w for w in range(2)]
        t0 = time.monotonic()
        got = in_threads([lambda: aggs[0].allreduce(xs[0]),
                          lambda: aggs[1].allreduce(xs[1], step=5)])
        assert time.monotonic() - t0 < 5.0  # an error, not a timeout
        for w, g in enumerate(got):
            assert isinstance(g, StepMismatchError), (w, g)
            assert g.step == (0, 5)[w] and g.culprit in (0, 1)
            assert f"step {g.step}" in str(g)
            assert aggs[w].step == 0
        assert ctl.read("CNT_DROP_MISMATCH") >= 1
        got = in_threads([lambda w=w: aggs[w].allreduce(xs[w]) for w in range(2)])
        for w, g in enumerate(got):
            assert not isinstance(g, BaseException), g
            np.testing.assert_array_equal(g, xs[0] + xs[1])
            assert aggs[w].epochs == 1 and aggs[w].step == 1
        for a in aggs:
            a.close()


@pytest.mark.parametrize("kind", KINDS)
def test_client_verifies_fp32_sum_from_order_of_addition(kind: str) -> None:
    """Four workers, random magnitudes: each chunk's RESULT order reproduces the sum."""
    rng = np.random.default_rng(3)
    size, packet_elems = 200, 32
    xs = [(rng.standard_normal(size) * 10.0 ** rng.integers(-6, 7, size)).astype(np.float32)
          for _ in range(4)]
    with switch_of_kind(kind) as sw, SwitchControl(sw.url) as ctl:
        ctl.configure_aggregation(members=4, slots=4, packet_elems=packet_elems)
        aggs = [Aggregator(sw.url, worker=w, timeout=0.2) for w in range(4)]
        got = in_threads([lambda w=w: aggs[w].allreduce(xs[w]) for w in range(4)])
        for w, g in enumerate(got):
            assert not isinstance(g, BaseException), g
            for c, aux in enumerate(aggs[w].last_aux):
                order = result_order(int(aux))
                assert sorted(order) == [0, 1, 2, 3]
                lo, hi = packet_elems * c, min(packet_elems * (c + 1), size)
                want = ordered_sum([xs[v][lo:hi] for v in order])
                np.testing.assert_array_equal(g[lo:hi].view(np.uint32), want.view(np.uint32))
        for a in aggs:
            a.close()


@pytest.mark.parametrize("kind", KINDS)
def test_fail_fast_at_construction(kind: str) -> None:
    """A worker id the job does not have, or another job id, is refused before anything is
    registered or sent; so are bfloat16 tensors."""
    with switch_of_kind(kind) as sw, SwitchControl(sw.url) as ctl:
        ctl.configure_aggregation(members=2, slots=4, packet_elems=16, job=3)
        t0 = time.monotonic()
        with pytest.raises(ValueError, match=r"worker=2.*AGG_MEMBERS=2"):
            Aggregator(sw.url, worker=2, job=3)
        with pytest.raises(ValueError, match=r"job=4.*JOB_ID=3"):
            Aggregator(sw.url, worker=0, job=4)
        assert time.monotonic() - t0 < 1.0
        assert ctl.read("MEMBER_ROLE_2") == 0 and ctl.read("MEMBER_IP_2") == 0
        agg = Aggregator(sw.url, worker=1, job=3)
        torch = require_module("torch", "torch tensors given to Aggregator.allreduce")
        for bad in (torch.ones(4, dtype=torch.bfloat16), torch.ones(4, dtype=torch.float16),
                    np.ones(4, dtype=np.float16), np.ones(4, dtype=np.int64)):
            with pytest.raises(TypeError, match="allreduce takes float32, float64 or int32"):
                agg.allreduce(bad)
        assert ctl.read("CNT_RX_GRADIENT") == 0
        agg.close()


@pytest.mark.parametrize("kind", KINDS)
def test_timeout_hint_names_every_counter_and_what_moved(kind: str) -> None:
    """Worker 1 is registered from an address it does not send from: the timeout says
    SPOOFED moved, and lists every counter that could explain a missing RESULT."""
    with switch_of_kind(kind) as sw, SwitchControl(sw.url) as ctl:
        ctl.configure_aggregation(members=2, slots=4, packet_elems=16)
        a0 = Aggregator(sw.url, worker=0, timeout=0.005, retries=2, max_backoff=0.01)
        a1 = Aggregator(sw.url, worker=1, timeout=0.005, retries=2, max_backoff=0.01,
                        member_address=("127.0.0.2", 9))
        with pytest.raises(AllreduceTimeoutError) as info:
            in_threads([lambda: a1.allreduce(np.ones(16, np.float32))])
            a0.allreduce(np.ones(16, np.float32))
        msg = str(info.value)
        for name in ("CNT_DROP_BAD_JOB", "CNT_DROP_SPOOFED", "CNT_DROP_UNKNOWN_WORKER",
                     "CNT_DROP_MISMATCH", "CNT_DROP_STALE", "CNT_DROP_DISABLED"):
            assert name in msg
        assert info.value.counters.get("CNT_DROP_SPOOFED", 0) > 0
        assert "CNT_DROP_SPOOFED=" in msg
        a0.close()
        a1.close()
