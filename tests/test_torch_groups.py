"""Each ``netrl`` process group its own switch job (``hostdrv/client/torch_jobs.py``,
``docs/torch.md`` "Subgroups and switch jobs").

Four rank processes (``tests/torchgroups.py``, started like ``tests/test_torch_backend.py``'s)
with an embedded soft switch: the world group and the ``new_group`` subgroups {0, 1} and
{2, 3} all-reduce concurrently, each in a job (register page) of its own; every result
equals a gloo all-reduce of the same tensors and the numpy sum of the inputs; the switch's
``CNT_TX_RESULT`` shows each job's frames in its page; the subgroups' leases are renewed
and their jobs released when they are destroyed. When the world group asks for every slot
the subgroups get none: they sum on the hosts (the native parameter server, or gloo when
it cannot be set up), exactly, say so in a log line and count it (``host_fallback``).
"""

from __future__ import annotations

import datetime
import json
import logging
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from test_torch_backend import _load, _logs, run_job
from torchgroups import ELEMS, ROUNDS, float_input, int_input

WORLD = 4
MEMBERS = {"a": (0, 1), "b": (2, 3)}


def _sub_of(rank: int) -> str:
    return "a" if rank < 2 else "b"


def _want_float(group: str, ranks: tuple[int, ...], rnd: int) -> np.ndarray:
    return np.sum(np.stack([float_input(group, r, rnd) for r in ranks]), axis=0,
                  dtype=np.float32)


def _want_int(group: str, ranks: tuple[int, ...]) -> np.ndarray:
    return np.sum(np.stack([int_input(group, r) for r in ranks]), axis=0, dtype=np.int32)


def _check_sums(results: list[dict[str, Any]]) -> None:
    """Every rank's world and subgroup sums: numpy's, bit for bit, and gloo's."""
    for r, res in enumerate(results):
        g = _sub_of(r)
        for rnd in range(ROUNDS):
            world = res["world"][rnd].numpy()
            np.testing.assert_array_equal(world, _want_float("world", tuple(range(WORLD)), rnd))
            assert torch.equal(res["world"][rnd], res["world_gloo"][rnd])
            fs, ints = res["sub"][rnd]
            np.testing.assert_array_equal(fs.numpy(), _want_float(g, MEMBERS[g], rnd))
            np.testing.assert_array_equal(ints.numpy(), _want_int(g, MEMBERS[g]))
            gs, gi = res["sub_gloo"][rnd]
            assert torch.equal(fs, gs) and torch.equal(ints, gi)


def test_world_and_two_subgroups_sum_concurrently_each_in_its_job(tmp_path: Path) -> None:
    codes = run_job("torchgroups:concurrent", tmp_path, env={"NETRL_LEASE": "2"})
    assert codes == [0] * WORLD, f"exit codes {codes}\n{_logs(tmp_path)}"
    results = _load(tmp_path, range(WORLD))
    _check_sums(results)
    world_job = results[0]["world_job"]
    jobs = {g: results[MEMBERS[g][0]]["sub_job"] for g in MEMBERS}
    for r, res in enumerate(results):
        assert res["world_job"] == world_job and res["sub_job"] == jobs[_sub_of(r)]
        assert res["sub_job"].why is None and res["sub_job"].host is None
        assert res["world_stats"]["switch_calls"] == ROUNDS
        # one float32 and one int32 call per round, every one through the switch
        assert res["sub_stats"] == {"calls": 2 * ROUNDS, "switch_calls": 2 * ROUNDS,
                                    "switch_elements": ROUNDS * (ELEMS + 300)}
    pages = [world_job.page, jobs["a"].page, jobs["b"].page]
    ids = [world_job.job_id, jobs["a"].job_id, jobs["b"].job_id]
    assert len(set(pages)) == 3 and len(set(ids)) == 3, (pages, ids)
    assert world_job.slots and all(j.slots for j in jobs.values())
    rank0 = results[0]
    tx, rx = rank0["tx_result"], rank0["rx_gradient"]
    for page, members in ((world_job.page, WORLD), (jobs["a"].page, 2), (jobs["b"].page, 2)):
        assert tx[page] >= ROUNDS, (page, tx)
        assert rx[page] >= members * tx[page], (page, rx, tx)
    for page in set(range(len(tx))) - set(pages):
        assert tx[page] == 0 and rx[page] == 0
    assert rank0["enabled_before"] == sum(1 << p for p in pages)
    assert rank0["lease_moved"] >= 1  # the heartbeat renewed the subgroup's lease
    assert rank0["enabled_after"] == 1 << world_job.page  # the subgroups released theirs


def test_subgroups_without_slots_sum_on_the_hosts(tmp_path: Path) -> None:
    """The world group asks for every slot: the subgroups' jobs get none, are released, and
    their sums go through the native parameter server, exactly, logged and counted."""
    codes = run_job("torchgroups:concurrent", tmp_path, env={"PG_OPTIONS": json.dumps(
        {"slots": 64})})
    assert codes == [0] * WORLD, f"exit codes {codes}\n{_logs(tmp_path)}"
    results = _load(tmp_path, range(WORLD))
    _check_sums(results)
    world_page = results[0]["world_job"].page
    assert results[0]["world_job"].slots == 64
    for r, res in enumerate(results):
        job = res["sub_job"]
        assert job.host == "ps" and "granted 0 of the 16 slots" in job.why, job
        assert res["sub_stats"] == {"calls": 2 * ROUNDS, "host_fallback": 2 * ROUNDS,
                                    "host_elements": ROUNDS * (ELEMS + 300)}
        log = (tmp_path / f"rank{r}.log").read_text()
        assert "aggregates on the hosts, on the native parameter server" in log, log
        assert "host_fallback" in log
    tx = results[0]["tx_result"]
    assert tx[world_page] >= ROUNDS
    assert sum(tx) == tx[world_page]  # no other page carried a frame
    assert results[0]["enabled_before"] == results[0]["enabled_after"] == 1 << world_page


def test_host_fallback_on_gloo_when_no_parameter_server(monkeypatch: pytest.MonkeyPatch,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    """In process (ranks as threads): a subgroup without slots whose parameter server cannot
    start sums on gloo, exactly, and says so."""
    from torch._C._distributed_c10d import HashStore, PrefixStore

    from hostdrv.client import torch_jobs
    from hostdrv.client.torch_backend import NetrlGroup, NetrlOptions

    monkeypatch.setattr(torch_jobs, "start_server", lambda size, url: None)
    store, timeout = HashStore(), datetime.timedelta(seconds=30)
    out: dict[int, Any] = {}

    def rank(r: int) -> None:
        try:
            world = NetrlGroup(PrefixStore("w/", store), r, 2, timeout, NetrlOptions(slots=64))
            sub = NetrlGroup(PrefixStore("s/", store), r, 2, timeout, None, world=False,
                             name="group s")
            f = torch.full((100,), float(r + 1))
            i = torch.tensor([2**31 - 1, -7 * (r + 1)], dtype=torch.int32)
            sub.allreduce([f]).wait()
            sub.allreduce([i]).wait()
            out[r] = (f, i, sub.job, sub.stats())
            sub.shutdown()
            world.shutdown()
        except BaseException as e:  # noqa: BLE001 - checked below
            out[r] = e

    with caplog.at_level(logging.WARNING):
        threads = [threading.Thread(target=rank, args=(r,)) for r in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    for r in range(2):
        assert not isinstance(out[r], BaseException), out[r]
        f, i, job, stats = out[r]
        assert torch.equal(f, torch.full((100,), 3.0))
        assert i.tolist() == [-2, -21]
        assert job.host == "gloo" and job.why
        assert stats == {"host_fallback": 2}
    assert sum("aggregates on the hosts, on gloo" in m for m in caplog.messages) == 2


def test_world_group_adopts_job_0_at_its_reset_share_and_gives_it_back() -> None:
    """A launcher's replay table and replay members in job 0 survive the world group's
    admission (it adopts job 0, narrowed to its share, with a lease); its release restores
    the reset share; a subgroup on a reset-share switch disables job 0 and admits it afresh."""
    from hostdrv.client.control import SwitchControl
    from hostdrv.client.jobs import jobs_table
    from hostdrv.client.torch_jobs import JobLease, at_reset_share, claim, default_share
    from hostdrv.switch.soft import SoftSwitch

    with SoftSwitch("127.0.0.1:0", jobs=4) as sw, SwitchControl(sw.url) as ctl:
        max_slots = ctl.read("AGG_MAX_SLOTS")
        before = jobs_table(ctl)
        assert at_reset_share(before, max_slots)
        ctl.set_member(5, port=1 << 5, ip="127.0.0.1", udp=4000, role=2)
        job = claim(ctl, members=4, slots=None, packet_elems=None, lease_s=60.0, world=True)
        after = jobs_table(ctl)
        assert (job.page, job.adopted, job.why) == (0, True, None)
        assert job.slots == after[0].slot_count == default_share(max_slots, 4)
        assert after[0].lease > 0 and after[0].enabled
        assert (after[0].table_base, after[0].table_records) == \
            (before[0].table_base, before[0].table_records)
        assert ctl.member(5)["udp"] == 4000
        lease = JobLease(sw.url, job, 60.0)
        lease.release(torch.distributed.HashStore(), 5.0)
        assert jobs_table(ctl) == before
        sub = claim(ctl, members=2, slots=None, packet_elems=None, lease_s=60.0, world=False)
        rows = jobs_table(ctl)
        # job 0 was disabled (its table emptied) and admitted afresh: slots only, a lease
        assert (sub.page, sub.adopted) == (0, False)
        assert rows[0].enabled and rows[0].lease > 0 and rows[0].table_records == 0
        assert rows[0].slot_count == default_share(max_slots, 4)
