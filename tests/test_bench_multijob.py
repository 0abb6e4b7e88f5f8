"""The checks ``scripts/bench_multijob.py`` makes in its run reject what they must.

The bench itself runs in ``tests/test_scripts_smoke.py`` (``--quick``) and on the rack in
``tests/test_rack.py::test_three_jobs_share_the_rack_switch``; here its check functions
alone: the aggregation inputs' sum is exact in any order, a record the actor did not push
is caught, and a counter moved in another job's page fails the page check.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_multijob",
                                                  REPO / "scripts" / "bench_multijob.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_multijob"] = mod
    spec.loader.exec_module(mod)
    return mod


bench = _bench()


def test_aggregation_sum_is_exact_in_any_order() -> None:
    members, elems = 4, 5000
    for v in range(bench.VARIANTS):
        xs = [bench.agg_input(w, v, elems) for w in range(members)]
        want = bench.agg_expected(members, elems)[v]
        exact = np.sum([x.astype(np.int64) for x in xs], axis=0)
        assert (np.abs(exact) < 2**24).all()
        for order in ([0, 1, 2, 3], [3, 1, 0, 2]):
            acc = np.zeros(elems, np.float32)
            for w in order:
                acc += xs[w]
            np.testing.assert_array_equal(acc[1:], want[1:])
            np.testing.assert_array_equal(acc[1:].astype(np.int64), exact[1:])


def test_a_record_not_pushed_is_caught() -> None:
    recs = bench.record(np.array([0, 5, 1 << 40]), 128)
    np.testing.assert_array_equal(bench.record_seq(recs), [0, 5, 1 << 40])
    recs[1, 77] ^= 1
    with pytest.raises(bench.CheckError, match="seq 5"):
        bench.record_seq(recs)


def _counts() -> dict[int, dict[str, int]]:
    from hostdrv.wire import regmap

    zero = dict.fromkeys(regmap.COUNTERS, 0)
    agg = {**zero, "CNT_RX_GRADIENT": 10, "CNT_TX_RESULT": 5}
    rpl = {**zero, "CNT_RX_PUSH": 3, "CNT_RX_SAMPLE": 2, "CNT_TX_SAMPLE_RESP": 2}
    return {0: dict(zero), 1: dict(agg), 2: dict(agg), 3: rpl}


@pytest.mark.parametrize(("page", "name"), [(1, "CNT_RX_PUSH"), (3, "CNT_RX_GRADIENT"),
                                            (0, "CNT_RX_GRADIENT"), (2, "CNT_DROP_BAD_JOB")])
def test_traffic_in_another_page_fails_the_check(page: int, name: str) -> None:
    bench.check_pages(_counts())
    counts = _counts()
    counts[page][name] += 1
    with pytest.raises(bench.CheckError, match=f"page {page}"):
        bench.check_pages(counts)
