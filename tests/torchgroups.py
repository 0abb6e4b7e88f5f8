"""What each rank process of ``tests/test_torch_groups.py`` runs (``JOB=torchgroups:<fn>``,
started by ``test_torch_backend.run_job``, entered through ``torchjobs.rank_main``).

The world group and two ``new_group`` subgroups ({0, 1} and {2, 3} of 4) all-reduce
concurrently; each rank records its groups' results, jobs and stats, and world rank 0
the switch's per-page counters, for the test to check against numpy and gloo.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

ROUNDS = 3
ELEMS = 5000
"""float32 elements per call."""
SEEDS = {"world": 1, "a": 2, "b": 3}


def float_input(group: str, rank: int, rnd: int) -> np.ndarray:
    """Integer-valued float32 (|x| < 2**16): every sum of 4 is exact in any order."""
    rng = np.random.default_rng([SEEDS[group], rank, rnd])
    return rng.integers(-2**15, 2**15, ELEMS).astype(np.float32)


def int_input(group: str, rank: int) -> np.ndarray:
    """int32 over the whole range (the sums wrap)."""
    rng = np.random.default_rng([7, SEEDS[group], rank])
    return rng.integers(-2**31, 2**31, 300, dtype=np.int64).astype(np.int32)


def _groups(rank: int) -> tuple[Any, Any, str]:
    """The two netrl subgroups (every rank makes both, as torch wants) and this rank's."""
    sub_a = dist.new_group([0, 1])
    sub_b = dist.new_group([2, 3])
    return sub_a, sub_b, "a" if rank < 2 else "b"


def concurrent(rank: int, world: int) -> dict[str, Any]:
    """World and subgroup all-reduces in flight together, ROUNDS times; gloo twins of the
    same calls; world rank 0 reads every page's counters; the subgroups' leases move;
    destroying the subgroups releases their jobs."""
    from hostdrv.client.control import SwitchControl
    from hostdrv.client.torch_backend import netrl_group

    sub_a, sub_b, mine = _groups(rank)
    sub = sub_a if mine == "a" else sub_b
    gloo_world = dist.new_group(backend="gloo")
    gloo_a, gloo_b = dist.new_group([0, 1], backend="gloo"), dist.new_group([2, 3], backend="gloo")
    gloo_sub = gloo_a if mine == "a" else gloo_b
    wg, sg = netrl_group(), netrl_group(sub)
    out: dict[str, Any] = {"world_job": wg.job, "sub_job": sg.job, "url": wg.url}
    got: dict[str, list[Any]] = {"world": [], "sub": [], "world_gloo": [], "sub_gloo": []}
    for rnd in range(ROUNDS):
        tw = torch.from_numpy(float_input("world", rank, rnd))
        ts = torch.from_numpy(float_input(mine, rank, rnd))
        ti = torch.from_numpy(int_input(mine, rank))
        works = [dist.all_reduce(tw, async_op=True),
                 dist.all_reduce(ts, group=sub, async_op=True),
                 dist.all_reduce(ti, group=sub, async_op=True)]
        for w in works:
            w.wait()
        got["world"].append(tw)
        got["sub"].append((ts, ti))
        gw = torch.from_numpy(float_input("world", rank, rnd))
        gs = torch.from_numpy(float_input(mine, rank, rnd))
        gi = torch.from_numpy(int_input(mine, rank))
        dist.all_reduce(gw, group=gloo_world)
        dist.all_reduce(gs, group=gloo_sub)
        dist.all_reduce(gi, group=gloo_sub)
        got["world_gloo"].append(gw)
        got["sub_gloo"].append((gs, gi))
    out.update(got)
    out["world_stats"], out["sub_stats"] = wg.stats(), sg.stats()
    dist.barrier(group=gloo_world)  # every group's calls are done
    url = wg.url
    if rank == 0:
        with SwitchControl(url) as ctl:
            pages = ctl.read("JOBS")
            out["tx_result"] = [ctl.read("CNT_TX_RESULT", job=j) for j in range(pages)]
            out["rx_gradient"] = [ctl.read("CNT_RX_GRADIENT", job=j) for j in range(pages)]
            out["enabled_before"] = ctl.read("JOB_ENABLE")
            if sg.job.why is None:
                lease0 = ctl.read("JOB_LEASE", job=sg.job.page)
                time.sleep(1.6)  # NETRL_LEASE=2: renewed every 0.5 s
                out["lease_moved"] = ctl.read("JOB_LEASE", job=sg.job.page) - lease0
    dist.barrier(group=gloo_world)
    dist.destroy_process_group(sub_a)
    dist.destroy_process_group(sub_b)
    dist.barrier(group=gloo_world)
    if rank == 0:
        with SwitchControl(url) as ctl:
            out["enabled_after"] = ctl.read("JOB_ENABLE")
    dist.barrier(group=gloo_world)
    return out
