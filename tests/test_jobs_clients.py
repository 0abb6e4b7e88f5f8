"""Job-aware clients on a multi-job soft switch (``docs/protocol.md`` section 11).

A soft switch with ``--jobs 4`` (no keys: loopback) whose job 0 is shrunk and job 1
admitted beside it (:mod:`hostdrv.client.jobs`):

* two :class:`Aggregator` jobs with different members (2 fp32 members in job 0, 3 int32
  members in job 1, each member id in both) and slot ranges sum concurrently; each result
  equals the sum the test computes with numpy from the inputs (fp32 a + b is exact in
  either order, the int32 sum wraps as the switch's does); each job's members use
  min(``AGG_SLOTS``, ``JOB_SLOT_COUNT``) slots of their page, and each job's frames move
  its own page's counters only;
* two :class:`ReplayClient` tables (job 0's and job 1's, with other record sizes) push and
  sample independently: indices from 0 in each, sizes, samples only from their own table.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from hostdrv.client.aggregator import Aggregator
from hostdrv.client.control import SwitchControl
from hostdrv.client.jobs import admit, jobs_table, renew, shrink
from hostdrv.client.replay import ReplayClient
from hostdrv.switch.soft import SoftSwitch
from hostdrv.wire.control import job_key_id

JOBS = 4
ENGINES = ("model", "native")
STEPS = 3


@pytest.fixture(params=ENGINES)
def switch(request: pytest.FixtureRequest) -> Iterator[SoftSwitch]:
    with SoftSwitch("127.0.0.1:0", engine=request.param, jobs=JOBS) as sw:
        with SwitchControl(sw.url) as admin:
            max_slots, capacity = admin.read("AGG_MAX_SLOTS"), admin.read("RPL_CAPACITY")
            shrink(admin, 0, slots=max_slots // 8, table_records=capacity // 4)
            admit(admin, 1, slots=max_slots // 4, table_records=capacity // 4, record_bytes=64,
                  job_id=0x51)
        yield sw


def test_two_aggregation_jobs_sum_concurrently(switch: SoftSwitch) -> None:
    url = switch.url
    with SwitchControl(url, job=0) as c0, SwitchControl(url, job=1) as c1:
        p = 32
        c0.configure_aggregation(members=2, slots=c0.read("AGG_MAX_SLOTS"), packet_elems=p)
        c1.configure_aggregation(members=3, slots=4, packet_elems=p, dtype="int32")
        want_slots = {j: min(c.read("AGG_SLOTS"), c.read("JOB_SLOT_COUNT"))
                      for j, c in ((0, c0), (1, c1))}
    with SwitchControl(url) as admin:
        rows = jobs_table(admin)
    assert rows[0].slots.stop <= rows[1].slot_base  # two slot ranges, side by side
    rng = np.random.default_rng(24)
    size = p * 11 + 5  # more chunks than either job has slots, a ragged last one
    inputs = {0: [rng.standard_normal((STEPS, size)).astype(np.float32) for _ in range(2)],
              1: [rng.integers(-2**31, 2**31, (STEPS, size), dtype=np.int64).astype(np.int32)
                  for _ in range(3)]}
    aggs = {j: [Aggregator(url, worker=w, page=j, timeout=0.05, retries=20)
                for w in range(len(inputs[j]))] for j in (0, 1)}
    assert {j: a[0].slots for j, a in aggs.items()} == want_slots
    assert aggs[1][0].job == rows[1].job_id and aggs[0][0].job == rows[0].job_id
    results: dict[tuple[int, int], list[np.ndarray]] = {}
    errors: list[BaseException] = []

    def member(j: int, w: int) -> None:
        try:
            results[(j, w)] = [aggs[j][w].allreduce(inputs[j][w][s]) for s in range(STEPS)]
        except BaseException as e:  # noqa: BLE001 - reported by the test thread
            errors.append(e)

    threads = [threading.Thread(target=member, args=(j, w)) for j in aggs
               for w in range(len(aggs[j]))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for group in aggs.values():
        for a in group:
            a.close()
    assert not errors, errors
    for s in range(STEPS):
        want0 = inputs[0][0][s] + inputs[0][1][s]  # fp32: a + b is b + a, exactly
        want1 = (inputs[1][0][s] + inputs[1][1][s] + inputs[1][2][s])  # int32, wrapping
        for w in range(2):
            np.testing.assert_array_equal(results[(0, w)][s].view(np.uint32),
                                          want0.view(np.uint32))
        for w in range(3):
            np.testing.assert_array_equal(results[(1, w)][s], want1)
    with SwitchControl(url) as admin:
        counts = {j: switch.counters(j) for j in (0, 1)}
        for j in (0, 1):
            assert counts[j]["CNT_RX_GRADIENT"] >= STEPS * len(inputs[j]) * -(-size // p)
            assert counts[j]["CNT_TX_RESULT"] >= STEPS * -(-size // p)
            for reason in ("CNT_DROP_BAD_JOB", "CNT_DROP_BAD_SLOT", "CNT_DROP_SPOOFED",
                           "CNT_DROP_UNKNOWN_WORKER"):
                assert counts[j][reason] == 0, (j, reason)
            assert admin.read("CNT_RX_GRADIENT", job=j) == counts[j]["CNT_RX_GRADIENT"]


def test_two_replay_tables_push_and_sample_independently(switch: SoftSwitch) -> None:
    url = switch.url
    with SwitchControl(url) as admin:
        rows = jobs_table(admin)
    for j in (0, 1):
        with SwitchControl(url, job=j) as ctl:
            ctl.configure_replay(seed=0x1234 + j)
    # worker 2 in both pages: each job's member table is its own
    c0 = ReplayClient(url, worker=2, table=0, obs_shape=(4,))
    c1 = ReplayClient(url, worker=2, table=1, obs_shape=(2,))
    try:
        assert (c0.capacity, c0.record_bytes) == (rows[0].table_records, rows[0].record_bytes)
        assert (c1.capacity, c1.record_bytes) == (rows[1].table_records, rows[1].record_bytes)
        assert c1.job == rows[1].job_id != c0.job
        n0, n1 = 40, 25
        obs0 = np.arange(n0 * 4, dtype=np.float32).reshape(n0, 4)
        obs1 = -1.0 - np.arange(n1 * 2, dtype=np.float32).reshape(n1, 2)
        i0 = c0.push(obs0, np.zeros(n0, np.int64), np.ones(n0, np.float32), obs0,
                     np.zeros(n0, np.uint8))
        i1 = c1.push(obs1, np.ones(n1, np.int64), np.full(n1, 2, np.float32), obs1,
                     np.zeros(n1, np.uint8))
        np.testing.assert_array_equal(np.sort(i0), np.arange(n0) % c0.capacity)
        np.testing.assert_array_equal(np.sort(i1), np.arange(n1) % c1.capacity)
        with SwitchControl(url, job=0) as k0, SwitchControl(url, job=1) as k1:
            assert (k0.read("RPL_SIZE"), k1.read("RPL_SIZE")) == (n0, n1)
        b0, b1 = c0.sample(32), c1.sample(32, prioritized=False)
        t0, t1 = c0.unpack(b0.records), c1.unpack(b1.records)
        # every sample is one of its own table's transitions, at the index it was pushed to
        at0, at1 = np.empty_like(obs0), np.empty_like(obs1)
        at0[i0], at1[i1] = obs0, obs1
        np.testing.assert_array_equal(t0.obs, at0[b0.indices])
        np.testing.assert_array_equal(t1.obs, at1[b1.indices])
        assert (t1.actions == 1).all() and (t0.actions == 0).all()
        c1.push(obs1[:3], np.ones(3, np.int64), np.ones(3, np.float32), obs1[:3],
                np.zeros(3, np.uint8))
        with SwitchControl(url, job=0) as k0:
            assert k0.read("RPL_SIZE") == n0  # job 1's push left job 0's table alone
    finally:
        c0.close()
        c1.close()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_job_runs_with_its_own_key_only(engine: str, tmp_path: Path) -> None:
    """Admitted with the admin key, job 1 is configured, joined and renewed by its clients
    with job 1's key alone (its AGG_*, member table, RPL_* and JOB_LEASE)."""
    admin_key, job_key = b"admin-" + os.urandom(8).hex().encode(), os.urandom(8).hex().encode()
    with SoftSwitch("127.0.0.1:0", engine=engine, jobs=JOBS, control_key=admin_key,
                    job_keys={1: job_key}) as sw:
        paths = {name: tmp_path / f"{name}.key" for name in ("admin", "job1")}
        paths["admin"].write_bytes(admin_key)
        paths["job1"].write_bytes(job_key)
        with SwitchControl(sw.url, key_file=paths["admin"]) as admin:
            shrink(admin, 0, slots=admin.read("AGG_MAX_SLOTS") // 2)
            g = admit(admin, 1, slots=4, lease_s=60)
        ctls = [SwitchControl(sw.url, key_file=paths["job1"], job=1, key_id=job_key_id(1))
                for _ in range(3)]
        ctls[0].configure_aggregation(members=2, slots=8, packet_elems=16)
        assert renew(ctls[0], 1, 120) >= g.lease
        aggs = [Aggregator(sw.url, worker=w, page=1, control=ctls[w + 1]) for w in range(2)]
        x = [np.random.default_rng(w).standard_normal(16 * 6).astype(np.float32)
             for w in range(2)]
        out: list[np.ndarray] = [np.empty(0)] * 2

        def member(w: int) -> None:
            out[w] = aggs[w].allreduce(x[w])

        threads = [threading.Thread(target=member, args=(w,)) for w in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        for w in range(2):
            np.testing.assert_array_equal(out[w].view(np.uint32), (x[0] + x[1]).view(np.uint32))
            aggs[w].close()
        assert aggs[0].slots == min(ctls[0].read("AGG_SLOTS"), g.slots)
        assert sw.read("SRV_CTRL_REFUSED") == 0  # nothing the job did needed the admin key
        ctls[0].close()
