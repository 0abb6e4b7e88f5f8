"""The ``netrl`` torch.distributed backend (``hostdrv/client/torch_backend.py``, ``docs/torch.md``).

Every distributed test starts 4 rank processes (``python -c`` importing
``tests/torchjobs.py``, what a rank runs, and calling its ``rank_main``) the way
torchrun would, each with its own environment; the ranks write what they saw to
``rank<r>.pt`` and the test checks it. The main job (embedded soft switch, ``file://`` store) runs
once per module and feeds several tests: DDP through the switch against DDP
on gloo, exact int32 sums, overlapping async all-reduces, and every fallback
op against a gloo group. Separate jobs cover an explicit ``NETRL_SWITCH``
URL under ``env://`` (with ``NETRL_STRICT=1``) and a rank killed mid-job.
The in-process tests build groups with ranks as threads of the test process
(one HashStore): sums, shutdown with calls pending, rank 0's setup failure, the
world-size limit, the exact int32 split and the environment parsing.
"""

from __future__ import annotations

import datetime
import fcntl
import gc
import json
import os
import signal
import socket
import subprocess
import sys
import time
import warnings
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch.distributed as dist
from torchjobs import (
    BIG,
    DEAD_AFTER,
    KILL_TIMEOUT,
    REPO,
    STEPS,
    WIDE_ELEMS,
    WORLD,
    int_input,
    small_model,
)

# ---------------------------------------------------------------------------
# the parent side


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_job(job: str, out: Path, *, env: dict[str, str] | None = None, init: str = "file",
            timeout: float = 20.0, deadline: float = 240.0, world: int = WORLD) -> list[int]:
    """Run ``job`` on ``world`` rank processes; returns their exit codes."""
    out.mkdir(parents=True, exist_ok=True)
    base = {k: v for k, v in os.environ.items() if not k.startswith("NETRL_")}
    base["PYTHONPATH"] = os.pathsep.join(
        [str(REPO), str(REPO / "tests")] + ([base["PYTHONPATH"]] if base.get("PYTHONPATH")
                                             else []))
    base.update(env or {})
    base.update(JOB=job, WORLD_SIZE=str(world), TIMEOUT=str(timeout), OUT=str(out),
                OMP_NUM_THREADS="1")
    if init == "env":
        base.update(INIT="env://", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()))
    else:
        base["INIT"] = f"file://{out / 'store'}"
    procs = []
    for rank in range(world):
        log = open(out / f"rank{rank}.log", "w")  # noqa: SIM115 - closed below
        procs.append((subprocess.Popen(
            [sys.executable, "-c", "import torchjobs as t; t.rank_main()"],
            env={**base, "RANK": str(rank), "LOCAL_RANK": str(rank)},
            stdout=log, stderr=subprocess.STDOUT, cwd=out), log))
    end = time.monotonic() + deadline
    codes = []
    try:
        for p, _ in procs:
            codes.append(p.wait(max(0.1, end - time.monotonic())))
    except subprocess.TimeoutExpired:
        pass
    finally:
        hung = [p for p, _ in procs if p.poll() is None]
        for p in hung:  # every thread's stack into the rank's log, then kill
            p.send_signal(signal.SIGUSR1)
        if hung:
            time.sleep(1.0)
        for p, log in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
            log.close()
    return [p.returncode for p, _ in procs]


def _logs(out: Path, world: int = WORLD) -> str:
    return "\n".join(f"--- rank {r}\n" + (out / f"rank{r}.log").read_text()[-3000:]
                     for r in range(world) if (out / f"rank{r}.log").exists())


def _load(out: Path, ranks: range | list[int]) -> list[dict[str, Any]]:
    return [torch.load(out / f"rank{r}.pt", weights_only=False) for r in ranks]


@pytest.fixture(scope="module")
def main_job(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The main job's per-rank results. Under xdist the workers share one run (the
    session's base folder, a lock): the job is the slow part of this module."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = tmp_path_factory.getbasetemp().parent  # this session's, shared by its workers
    else:
        root = tmp_path_factory.mktemp("netrl")
    out = root / "netrl_main"
    with open(root / "netrl_main.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = out / "codes.json"
        if not done.exists():
            codes = run_job("main", out)
            done.write_text(json.dumps(codes))
        codes = json.loads(done.read_text())
    assert codes == [0] * WORLD, f"exit codes {codes}\n{_logs(out)}"
    return _load(out, range(WORLD))


def _exact_int_sum() -> np.ndarray:
    """The int32 sum over every rank, wrapping like int32 addition does."""
    return np.sum(np.stack([int_input(r) for r in range(WORLD)]), axis=0, dtype=np.int32)


# ---------------------------------------------------------------------------
# tests


def test_ddp_through_switch_matches_gloo(main_job: list[dict[str, Any]]) -> None:
    ref = main_job[0]
    assert ref["backend"] == "netrl" and ref["url"].startswith("soft://127.0.0.1:")
    # the backend torch dispatches CPU collectives to is ours (not plain gloo)
    assert ref["cpu_backend"] == "NetrlBackend"
    # DDP's buckets went through the switch: at least one all-reduce per step, more
    # once DDP rebuilt its buckets after the first step
    assert ref["ddp_switch_calls"] > STEPS
    for r, res in enumerate(main_job):
        assert res["url"] == ref["url"]
        for a, b in zip(res["ddp_netrl"], ref["ddp_netrl"], strict=True):
            assert torch.equal(a, b), f"rank {r} holds other parameters than rank 0"
        for a, b in zip(res["ddp_gloo"], ref["ddp_gloo"], strict=True):
            assert torch.equal(a, b)
    for a, b in zip(ref["ddp_netrl"], ref["ddp_gloo"], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    # and training moved them
    assert not torch.equal(ref["ddp_netrl"][0], small_model()[0].weight.detach())


def test_int32_allreduce_is_exact(main_job: list[dict[str, Any]]) -> None:
    exact = _exact_int_sum()
    total = np.sum(np.stack([int_input(r) for r in range(WORLD)]).astype(np.int64), axis=0)
    avg = np.fix(total / WORLD).astype(np.int32)  # rounded toward zero, no overflow
    for res in main_job:
        assert res["int_sum"].dtype == torch.int32
        assert np.array_equal(res["int_sum"].numpy(), exact)
        assert np.array_equal(res["int_avg"].numpy(), avg)
        assert np.array_equal(res["async_small"].numpy(), exact)


def test_async_ops_overlap(main_job: list[dict[str, Any]]) -> None:
    want_big = float(sum(r + 1 for r in range(WORLD)))
    want_avg = torch.arange(6, dtype=torch.float32) * sum(r + 1 for r in range(WORLD)) / WORLD
    for res in main_job:
        assert torch.equal(res["async_big"], torch.full((BIG,), want_big))
        assert res["async_chained"] == want_big * BIG
        assert torch.equal(res["async_avg"], want_avg)


def test_fallbacks_give_the_gloo_result(main_job: list[dict[str, Any]]) -> None:
    for r, res in enumerate(main_job):
        netrl, gloo = res["fallback_netrl"], res["fallback_gloo"]
        assert netrl.keys() == gloo.keys()
        for name in netrl:
            assert len(netrl[name]) == len(gloo[name]), name
            for a, b in zip(netrl[name], gloo[name], strict=True):
                assert a.dtype == b.dtype and torch.equal(a, b), f"rank {r} {name}: {a} != {b}"
        # AVG on the gloo path: gloo's SUM divided by the world size
        assert torch.equal(res["avg_f64"],
                           (torch.arange(4, dtype=torch.float64) * WORLD + 6) / WORLD)
        stats = res["stats"]
        for why in ("op=MAX", "op=MIN", "op=PRODUCT", "dtype=float64", "dtype=float16",
                    "dtype=int64"):
            assert stats.get(f"fallback:{why}", 0) >= 1, (why, stats)
        # the non-contiguous float32 sum was copied and went through the switch
        assert not any("contiguous" in k for k in stats)
        assert torch.equal(res["subgroup_sum"], torch.full((3,), float(sum(range(1, WORLD + 1)))))
        # a new_group has a switch job of its own (tests/test_torch_groups.py): no warning
        assert res["subgroup_stats"] == {"calls": 1, "switch_calls": 1, "switch_elements": 3}
        assert res["subgroup_warnings"] == []


def test_explicit_switch_env_init_strict(tmp_path: Path) -> None:
    from hostdrv import SoftSwitch
    from hostdrv.wire.protocol import MAX_JUMBO_ELEMS

    with SoftSwitch(("127.0.0.1", 0), max_elems=MAX_JUMBO_ELEMS) as sw:
        url = sw.url
        codes = run_job("explicit", tmp_path, init="env",
                        env={"NETRL_SWITCH": url, "NETRL_STRICT": "1", "NETRL_ELEMS": "352",
                             "NETRL_SLOTS": "8"})
        assert codes == [0] * WORLD, f"exit codes {codes}\n{_logs(tmp_path)}"
        regs = {n: sw.read(n) for n in ("AGG_MEMBERS", "AGG_ELEMS", "AGG_SLOTS", "AGG_DTYPE")}
        gradients = sw.counters()["CNT_RX_GRADIENT"]
    assert regs == {"AGG_MEMBERS": WORLD, "AGG_ELEMS": 352, "AGG_SLOTS": 8, "AGG_DTYPE": 0}
    results = _load(tmp_path, range(WORLD))
    # 1000 elements are 3 packets of 352 from each rank, then DDP's buckets
    assert gradients >= WORLD * 3 + WORLD * 2
    for res in results:
        assert res["url"] == url
        assert torch.equal(res["sum"], torch.full((1000,), float(sum(range(1, WORLD + 1)))))
        for a, b in zip(res["ddp"], results[0]["ddp"], strict=True):
            assert torch.equal(a, b)
        assert res["strict"] is not None and "op=MAX" in res["strict"]
        assert not any(k.startswith("fallback:") for k in res["stats"])


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_killed_rank_fails_survivors_fast(tmp_path: Path, mode: str) -> None:
    """SIGKILL of one of 4 ranks: every survivor's pending and next switch call fails
    naming the dead rank within ``dead_after`` (here :data:`DEAD_AFTER`) plus a
    heartbeat, far below the group timeout (:data:`KILL_TIMEOUT`)."""
    codes = run_job("kill", tmp_path, timeout=KILL_TIMEOUT, deadline=120.0,
                    env={"KILL_MODE": mode, "NETRL_DEAD_AFTER": str(DEAD_AFTER)})
    assert codes[-1] == -signal.SIGKILL
    assert codes[:-1] == [0] * (WORLD - 1), f"exit codes {codes}\n{_logs(tmp_path)}"
    results = _load(tmp_path, range(WORLD - 1))
    names = ("ddp", "all_reduce") if mode == "sync" else ("pending", "all_reduce")
    for res in results:
        assert torch.equal(res["first"], results[0]["first"])
        for name in names:
            err = res[name]
            assert err is not None and "netrl" in err and f"rank {WORLD - 1} died" in err, \
                (name, err)
        # the first failure comes after the detection time, the next one at once
        assert res[f"{names[0]}_elapsed"] <= DEAD_AFTER + 5, res
        assert res["all_reduce_elapsed"] < 1.0, res
        assert res["all_reduce"].startswith("DistBackendError"), res["all_reduce"]


def test_debug_detail_wraps_our_backend_and_catches_a_shape_mismatch(tmp_path: Path) -> None:
    """``TORCH_DISTRIBUTED_DEBUG=DETAIL``: torch's ProcessGroupWrapper wraps the netrl
    backend, the sums still go through the switch, and its fingerprint check catches a
    mismatched-shape all-reduce on every rank; ``pg_options`` reach the switch job."""
    codes = run_job("detail", tmp_path, env={
        "TORCH_DISTRIBUTED_DEBUG": "DETAIL",
        "PG_OPTIONS": json.dumps({"packet_elems": 352, "slots": 8, "window": 2})})
    assert codes == [0] * WORLD, f"exit codes {codes}\n{_logs(tmp_path)}"
    for res in _load(tmp_path, range(WORLD)):
        assert res["cpu_backend"] == "_ProcessGroupWrapper" and res["wrapped"] == "NetrlBackend"
        assert (res["packet_elems"], res["window"]) == (352, 2)
        assert torch.equal(res["sum"], torch.full((1000,), float(sum(range(1, WORLD + 1)))))
        assert res["stats"]["switch_calls"] == 1
        assert res["mismatch"] is not None and "mismatch between collectives" in res["mismatch"]


def test_tensors_of_other_lengths_fail_every_rank_without_debug(tmp_path: Path) -> None:
    """Without ``TORCH_DISTRIBUTED_DEBUG``, ranks all-reducing tensors of different lengths
    in the same call all fail (the switch refuses the round: ``TensorMismatchError``),
    nothing wrong is returned, and once the ranks line up again (a barrier) the next call
    sums."""
    codes = run_job("lengths", tmp_path)
    assert codes == [0] * WORLD, f"exit codes {codes}\n{_logs(tmp_path)}"
    for res in _load(tmp_path, range(WORLD)):
        assert res["mismatch"] is not None and "TensorMismatchError" in res["mismatch"], res
        assert torch.equal(res["after"], torch.full((40,), float(sum(range(1, WORLD + 1)))))


@pytest.mark.parametrize("world", [16, pytest.param(32, marks=pytest.mark.slow)])
def test_many_ranks_through_leaves_and_root(tmp_path: Path, world: int) -> None:
    """16 (32) ranks, above one switch's 8 members: rank 0 starts a root and 3 (5) leaf
    soft switches (6, 6, 4 ranks; 7, 7, 7, 7, 4); the int32 sums are exact, AVG rounds
    toward zero."""
    from hostdrv.client.torch_hierarchy import Plan

    codes = run_job("wide", tmp_path, init="env", world=world, timeout=120.0,
                    deadline=600.0)
    assert codes == [0] * world, f"exit codes {codes}\n{_logs(tmp_path, world)}"
    results = _load(tmp_path, range(world))
    xs = np.stack([int_input(r)[:WIDE_ELEMS] for r in range(world)])
    want_sum = np.sum(xs, axis=0, dtype=np.int32)
    want_avg = np.fix(np.sum(xs.astype(np.int64), axis=0) / world).astype(np.int32)
    plan = Plan.for_size(world)
    assert plan.leaves == -(-world // 7)
    for r, res in enumerate(results):
        assert np.array_equal(res["int_sum"].numpy(), want_sum), r
        assert np.array_equal(res["int_avg"].numpy(), want_avg), r
        assert torch.equal(res["f32"], torch.full((3,), float(sum(range(1, world + 1)))))
        assert res["stats"]["switch_calls"] == 3
        leaf, member = plan.leaf_of(r)
        assert res["member"] == member
        assert res["url"] == results[leaf * plan.per_leaf]["url"]
    assert len({res["url"] for res in results}) == plan.leaves


# ---------------------------------------------------------------------------
# in-process checks (no rank processes)


def _groups_in_threads(world: int, config: Any, body: Callable[[Any], Any] = lambda pg: None,
                       timeout: float = 10.0) -> list[Any]:
    """Build a ``world``-rank :class:`NetrlGroup` in threads of this process (one
    HashStore) and run ``body`` on each; returns what each returned or raised."""
    import threading

    from torch._C._distributed_c10d import HashStore

    from hostdrv.client.torch_backend import NetrlGroup

    store = HashStore()
    results: list[Any] = [None] * world

    def rank(r: int) -> None:
        try:
            pg = NetrlGroup(store, r, world, datetime.timedelta(seconds=timeout), config)
            try:
                results[r] = body(pg)
            finally:
                pg.shutdown()
        except Exception as e:  # noqa: BLE001 - returned to the test
            results[r] = e

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout + 30)
    return results


def test_in_process_group_sums() -> None:
    from torch._C._distributed_c10d import AllreduceCoalescedOptions

    from hostdrv.client.torch_backend import NetrlOptions

    def body(pg: Any) -> tuple[list[Any], dict[str, int]]:
        r = pg.rank() + 1
        f = torch.full((40_000,), float(r))
        i = torch.tensor([2**31 - 1, -5], dtype=torch.int32)
        a, b = torch.full((5,), float(r)), torch.full((2, 3), 10.0 * r)  # one coalesced call
        empty = torch.zeros(0)
        d = torch.ones(2, dtype=torch.float64)  # gloo
        works = [pg.allreduce([f]), pg.allreduce([i]), pg.allreduce([a, b], AllreduceCoalescedOptions(), True),
                 pg.allreduce([empty]), pg.allreduce([d])]
        for w in works:
            w.wait()
        probe = torch.ones(3)  # a finished work and its tensors are not kept alive
        w = pg.allreduce([probe])
        w.wait()
        ref = weakref.ref(probe)
        del w, probe
        for _ in range(100):  # the worker thread lets go just after completing the call
            gc.collect()
            if ref() is None:
                break
            time.sleep(0.01)
        assert ref() is None, "a finished all_reduce kept its tensors alive"
        return [f, i, a, b, empty, d], pg.stats()

    results = _groups_in_threads(2, NetrlOptions(), body)
    for res in results:
        assert not isinstance(res, Exception), res
        (f, i, a, b, empty, d), stats = res
        assert torch.equal(f, torch.full((40_000,), 3.0))
        assert i.tolist() == [-2, -10]  # 2 * (2**31 - 1) wraps to -2
        assert torch.equal(a, torch.full((5,), 3.0)) and torch.equal(b, torch.full((2, 3), 30.0))
        assert empty.shape == (0,)
        assert d.tolist() == [2.0, 2.0]
        assert stats == {"calls": 5, "switch_calls": 5, "switch_elements": 40_016,
                         "fallback:dtype=float64": 1}


def test_shutdown_with_calls_pending() -> None:
    from hostdrv.client.torch_backend import SHUTDOWN_GRACE, NetrlOptions

    def error_of(work: Any) -> BaseException | None:
        try:
            work.wait()
        except Exception as e:  # noqa: BLE001 - checked below
            return e
        return None

    def body(pg: Any) -> Any:
        if pg.rank() == 1:
            return None  # never joins rank 0's all-reduce
        running = pg.allreduce([torch.ones(4)])
        queued = pg.allreduce([torch.ones(4)])
        time.sleep(0.2)
        t0 = time.monotonic()
        pg.shutdown()
        took = time.monotonic() - t0
        return took, running.is_completed(), error_of(queued), \
            error_of(pg.allreduce([torch.ones(1)]))

    rank0, rank1 = _groups_in_threads(2, NetrlOptions(dead_after=60.0), body, timeout=30.0)
    assert rank1 is None
    took, running_done, queued_err, after = rank0
    assert took < 2 * SHUTDOWN_GRACE + 3  # not the 30 s the running call may retransmit
    assert not running_done
    assert "shut down before this all_reduce ran" in str(queued_err)
    assert "shut down" in str(after)


def test_rank_that_left_and_warn_policy() -> None:
    """A rank that shuts its group down is reported as having left once its heartbeat
    is ``dead_after`` old: the survivor's next switch call fails at once naming it.
    ``fallback="warn"`` warns once per reason."""
    from hostdrv.client.torch_backend import NetrlOptions

    def error_of(work: Any) -> str | None:
        try:
            work.wait()
        except Exception as e:  # noqa: BLE001 - checked below
            return str(e)
        return None

    def body(pg: Any) -> Any:
        for _ in range(2):  # gloo, both ranks
            pg.allreduce([torch.ones(2, dtype=torch.float64)]).wait()
        if pg.rank() == 1:
            return None  # then shuts down
        time.sleep(2.5)
        t0 = time.monotonic()
        err = error_of(pg.allreduce([torch.ones(3)]))
        return err, time.monotonic() - t0, pg.dead

    options = NetrlOptions(dead_after=1.0, heartbeat=0.2, fallback="warn")
    # catch_warnings is process-wide and not thread-safe: one catcher around both ranks'
    # threads (one per thread lost the warnings emitted while the other's was installed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rank0, rank1 = _groups_in_threads(2, options, body, timeout=30.0)
    assert rank1 is None
    err, took, dead = rank0
    warned = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    # four fallbacks, two per group: one warning per reason and group
    assert 1 <= len(warned) <= 2 and all("dtype=float64" in w for w in warned), warned
    assert err is not None and "rank 1 left the group" in err, err
    assert took < 1.0 and dead is not None


def test_rank0_switch_failure_reaches_every_rank() -> None:
    from hostdrv.client.torch_backend import NetrlOptions

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as silent:
        silent.bind(("127.0.0.1", 0))
        url = f"soft://127.0.0.1:{silent.getsockname()[1]}"
        t0 = time.monotonic()
        # rank 0 gives up on the silent address after its register retries (~12 s)
        results = _groups_in_threads(2, NetrlOptions(switch=url), timeout=40.0)
    assert all(isinstance(r, Exception) for r in results), results
    assert url in str(results[0])  # rank 0: the switch did not answer
    assert "rank 0 could not set the switch up" in str(results[1]) and url in str(results[1])
    assert time.monotonic() - t0 < 30  # rank 1 learned it from rank 0, not from its timeout


def test_world_above_hierarchy_limit_names_it() -> None:
    from torch._C._distributed_c10d import HashStore, _DistributedBackendOptions

    from hostdrv.client.torch_backend import create_backend
    from hostdrv.client.torch_hierarchy import LEAF_MEMBERS, MAX_RANKS

    opts = _DistributedBackendOptions()
    opts.store = HashStore()
    opts.group_rank = 0
    opts.group_size = MAX_RANKS + 1
    opts.timeout = datetime.timedelta(seconds=1)
    opts.group_id = "0"
    opts.global_ranks_in_group = []
    with pytest.raises(ValueError, match=rf"world_size={MAX_RANKS + 1}.*{MAX_RANKS} ranks.*"
                                         rf"leaves of {LEAF_MEMBERS}"):
        create_backend(opts, None)
    with pytest.raises(TypeError, match="NetrlOptions"):
        create_backend(opts, {"switch": "soft://x:1"})


def test_hierarchy_plan() -> None:
    from hostdrv.client.torch_hierarchy import LEAF_MEMBERS, Plan

    for size in (9, 14, 15, 16, 32, 56):
        plan = Plan.for_size(size)
        assert plan.per_leaf <= LEAF_MEMBERS
        seen = [plan.leaf_of(r) for r in range(size)]
        assert len(set(seen)) == size  # one (leaf, member) per rank
        assert [sum(1 for k, _ in seen if k == leaf) for leaf in range(plan.leaves)] == \
            [plan.members(leaf) for leaf in range(plan.leaves)]
        assert all(plan.members(leaf) >= 1 for leaf in range(plan.leaves))
    assert Plan.for_size(16, leaves=4).per_leaf == 4
    with pytest.raises(ValueError, match="per leaf"):
        Plan.for_size(16, leaves=2)


def test_backend_registered() -> None:
    import hostdrv.client.torch_backend as tb

    assert dist.Backend("netrl") == "netrl"
    assert "NETRL" in dist.Backend._plugins
    assert dist.Backend.backend_type_map["netrl"] == dist.ProcessGroup.BackendType.CUSTOM
    assert tb.BACKEND_NAME == "netrl"


@pytest.mark.parametrize("members", [1, 2, 8])
def test_int32_lanes_sum_exactly_in_any_fp32_order(members: int) -> None:
    from hostdrv.client.torch_lanes import join_int32, split_int32, wrap_int32

    rng = np.random.default_rng(members)
    xs = [rng.integers(-2**31, 2**31, size=4096, dtype=np.int64).astype(np.int32)
          for _ in range(members)]
    xs[0][:4] = [2**31 - 1, -2**31, -1, 0]
    lanes = [split_int32(x) for x in xs]
    for _ in range(3):  # the switch adds in arrival order: any order is exact
        acc = np.zeros_like(lanes[0])
        for i in rng.permutation(members):
            acc = (acc + lanes[i]).astype(np.float32)
        total = join_int32(acc)
        assert np.array_equal(total, np.sum(np.stack(xs).astype(np.int64), axis=0))
        assert np.array_equal(wrap_int32(total), np.sum(np.stack(xs), axis=0, dtype=np.int32))


def test_options_from_env_and_retries() -> None:
    from hostdrv.client.torch_backend import NetrlOptions, retries_for

    opt = NetrlOptions.from_env({"NETRL_SWITCH": "udp://10.0.0.1:9000", "NETRL_STRICT": "1",
                                 "NETRL_ELEMS": "352", "NETRL_RTO": "0.2"})
    assert opt == NetrlOptions(switch="udp://10.0.0.1:9000", strict=True, packet_elems=352,
                               rto=0.2)
    assert NetrlOptions.from_env({}) == NetrlOptions()
    with pytest.raises(ValueError, match="NETRL_ELEMS"):
        NetrlOptions.from_env({"NETRL_ELEMS": "many"})
    with pytest.raises(ValueError, match="NETRL_STRICT"):
        NetrlOptions.from_env({"NETRL_STRICT": "maybe"})
    with pytest.raises(ValueError, match="fallback"):
        NetrlOptions(fallback="sometimes")
    with pytest.raises(ValueError, match="window"):
        NetrlOptions(window=0)
    # explicit options win over the environment, the environment over the defaults
    env = {"NETRL_WINDOW": "4", "NETRL_ELEMS": "352", "NETRL_FALLBACK": "warn"}
    opt = NetrlOptions(window=8).resolve(env)
    assert (opt.window, opt.packet_elems, opt.fallback, opt.strict) == (8, 352, "warn", False)
    assert (opt.rto, opt.dead_after) == (0.05, 5.0)
    assert NetrlOptions(strict=True).resolve({}).fallback == "error"
    assert NetrlOptions().resolve({"NETRL_STRICT": "1"}).fallback == "error"
    # every rank's window together fits the soft switch's receive buffer (the kernel's
    # doubled SO_RCVBUF, each datagram charged its truesize), no rank has more than
    # INFLIGHT_BYTES of gradient in flight, and one chunk more would break a bound
    from hostdrv.client.torch_backend import default_window
    from hostdrv.client.torch_options import INFLIGHT_BYTES, datagram_truesize
    from hostdrv.wire.net import SOCKET_BUFFER
    from hostdrv.wire.protocol import HEADER_LEN, MAX_JUMBO_ELEMS

    for elems in (352, 2048, MAX_JUMBO_ELEMS):
        size = HEADER_LEN + 4 * elems
        assert size < datagram_truesize(size) < datagram_truesize(size + 9000)
        for members in (1, 2, 4, 7, 8):
            w = default_window(elems, 64, members)
            assert 1 <= w <= 64
            assert w * members * datagram_truesize(size) <= 2 * SOCKET_BUFFER
            assert w * 4 * elems <= INFLIGHT_BYTES or w == 1
            assert (w == 64 or (w + 1) * 4 * elems > INFLIGHT_BYTES
                    or (w + 1) * members * datagram_truesize(size) > 2 * SOCKET_BUFFER)
    assert default_window(352, 64, 8) == 64  # the board's chunks: every slot
    # 0.05 + 0.1 + 0.2 + 0.4 + 0.8 + 1 + 1 ... reaches 10 s after 13 retransmissions
    waits = [min(0.05 * 2**k, 1.0) for k in range(retries_for(10.0, 0.05) + 1)]
    assert sum(waits) >= 10.0 > sum(waits[:-1])
