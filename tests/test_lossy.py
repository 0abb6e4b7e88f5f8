"""All-reduce through a lossy, duplicating, reordering proxy: same bits, no hang."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from netutil import (
    Barrier,
    LossyProxy,
    Phase,
    agg_worker,
    chunk_schedule,
    chunk_view,
    first_contributors,
    ordered_sum,
    run_workers,
    warm_pool,
)

from hostdrv import SoftSwitch, SwitchControl

SLOTS, ELEMS, SIZE, CALLS = 8, 64, 1500, 3
N_CHUNKS = -(-SIZE // ELEMS)


@pytest.fixture(scope="module")
def pool() -> Iterator[Any]:
    with warm_pool(4) as p:
        yield p


def _run(pool: Any, *, dtype: str, seed: int, lossy: bool) -> tuple[list[dict[str, Any]],
                                                                      list[Any], dict[str, int],
                                                                      dict[str, int]]:
    with SoftSwitch(log_arrivals=True) as sw:
        ctl = SwitchControl(sw.url)
        ctl.configure_aggregation(members=4, slots=SLOTS, packet_elems=ELEMS, dtype=dtype)
        proxy = LossyProxy(sw.address, 4, loss=0.05, duplicate=0.05, reorder=0.05,
                           seed=seed) if lossy else None
        bar = Barrier(4)
        try:
            tasks = []
            for w in range(4):
                kw: dict[str, Any] = dict(size=SIZE, dtype=dtype, seed=seed,
                                          phases=[Phase(CALLS)], timeout=0.02, retries=12)
                url = sw.url
                if proxy is not None:
                    host, port = proxy.downstream[w]
                    url = f"soft://{host}:{port}"
                    kw.update(member_address=proxy.upstream[w], control=sw.url)
                tasks.append((agg_worker, (url, w, bar.address), kw))
            outs = run_workers(pool, tasks, timeout=60)
        finally:
            bar.close()
            if proxy is not None:
                proxy.close()
        counters = ctl.counters()
        ctl.close()
        sw.stop()
        stats = dict(proxy.stats) if proxy is not None else {}
        return outs, list(sw.arrivals or []), counters, stats


def test_int32_lossy_equals_lossless(pool: Any) -> None:
    clean, _, _, _ = _run(pool, dtype="int32", seed=8, lossy=False)
    lossy, _, counters, stats = _run(pool, dtype="int32", seed=8, lossy=True)
    assert stats["drop"] > 0 and stats["dup"] > 0 and stats["held"] > 0
    for call in range(CALLS):
        with np.errstate(over="ignore"):
            exact = sum(clean[w]["inputs"][call] for w in range(4)).astype(np.int32)
        for w in range(4):
            np.testing.assert_array_equal(clean[w]["results"][call], exact)
            np.testing.assert_array_equal(lossy[w]["results"][call], exact,
                                          err_msg=f"worker {w} call {call}")
    assert counters["CNT_TX_RESULT"] == CALLS * N_CHUNKS
    assert counters["CNT_DROP_DUPLICATE"] + counters["CNT_DROP_STALE"] > 0
    assert sum(o["retrans"] for o in lossy) > 0


def test_fp32_lossy_matches_arrival_order(pool: Any) -> None:
    outs, arrivals, counters, stats = _run(pool, dtype="float32", seed=13, lossy=True)
    assert stats["drop"] > 0
    for call in range(CALLS):
        refs = []
        for c, (s, r) in enumerate(chunk_schedule(N_CHUNKS, SLOTS, call)):
            order = [a.worker for a in first_contributors(arrivals, s, r, 4)]
            refs.append(ordered_sum([chunk_view(outs[w]["inputs"][call], ELEMS)[c]
                                     for w in order]))
        want = np.concatenate(refs)[:SIZE].view(np.uint32)
        for w in range(4):
            np.testing.assert_array_equal(outs[w]["results"][call].view(np.uint32), want,
                                          err_msg=f"worker {w} call {call}")
    assert counters["CNT_TX_RESULT"] == CALLS * N_CHUNKS
