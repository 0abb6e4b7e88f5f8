"""What each rank process of ``tests/test_torch_backend.py`` runs.

A rank is ``python -c "import torchjobs; torchjobs.rank_main()"`` with its job, rank,
world size, store and output folder in the environment, the way torchrun would start
it; it writes what it saw to ``rank<r>.pt`` for the test to check. The inputs are
built here so the ranks and the checks make them the same way.
"""

from __future__ import annotations

import datetime
import faulthandler
import json
import os
import signal
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

REPO = Path(__file__).resolve().parents[1]
WORLD = 4
STEPS = 5
INT_SIZE = 1000
BIG = 200_000
WIDE_ELEMS = 8
"""Elements of the 16-rank job's tensors (tiny: the job tests the hierarchy)."""
KILL_TIMEOUT = 60.0
"""Group timeout of the killed-rank job: how long the survivors would retransmit."""
DEAD_AFTER = 2.0
"""``NETRL_DEAD_AFTER`` of the killed-rank job: when the survivors declare it dead."""


# ---------------------------------------------------------------------------
# deterministic inputs (the ranks and the checks build them the same way)


def int_input(rank: int) -> np.ndarray:
    """The int32 tensor rank ``rank`` all-reduces: the int32 extremes, then random
    values over the whole range (their sum wraps)."""
    edge = np.array([2**31 - 1, -2**31, -1, 0, 1, -2**31 + rank], dtype=np.int32)
    rng = np.random.default_rng([7, rank])
    rest = rng.integers(-2**31, 2**31, size=INT_SIZE - edge.size, dtype=np.int64)
    return np.concatenate([edge, rest.astype(np.int32)])


def small_model() -> Any:
    """The DDP model, the same parameters on every rank."""
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.Tanh(),
                               torch.nn.Linear(32, 16), torch.nn.Tanh(),
                               torch.nn.Linear(16, 4))


def train_ddp(group: Any, rank: int, steps: int = STEPS) -> list[Any]:
    """``steps`` SGD steps of :func:`small_model` under DDP on ``group``; small buckets so
    that one backward all-reduces several buckets while it runs."""
    model = small_model()
    ddp = torch.nn.parallel.DistributedDataParallel(model, process_group=group,
                                                    bucket_cap_mb=0.001)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    gen = torch.Generator().manual_seed(100 + rank)
    for _ in range(steps):
        x = torch.randn(32, 8, generator=gen)
        y = torch.randn(32, 4, generator=gen)
        opt.zero_grad()
        torch.nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


# ---------------------------------------------------------------------------
# what the rank processes run


def _fallback_ops(rank: int, world: int) -> dict[str, Callable[[Any], list[Any]]]:
    """Collectives run once on the netrl group and once on a gloo group; each returns
    the tensors it produced."""
    ReduceOp = dist.ReduceOp

    def allreduce(dtype: Any, op: Any, contiguous: bool = True) -> Callable[[Any], list[Any]]:
        def run(g: Any) -> list[Any]:
            base = torch.arange(12, dtype=torch.float64).reshape(3, 4) % 5 + rank + 1
            t = base.to(dtype)
            if not contiguous:
                t = t.t()
            dist.all_reduce(t, op=op, group=g)
            return [t]
        return run

    def broadcast(g: Any) -> list[Any]:
        t = torch.full((5,), float(rank))
        dist.broadcast(t, src=2, group=g)
        return [t]

    def all_gather(g: Any) -> list[Any]:
        out = [torch.zeros(3, dtype=torch.int64) for _ in range(world)]
        dist.all_gather(out, torch.arange(3) * (rank + 1), group=g)
        return out

    def all_gather_single(g: Any) -> list[Any]:
        out = torch.zeros(world * 2)
        dist.all_gather_into_tensor(out, torch.tensor([rank, -rank], dtype=torch.float32),
                                    group=g)
        return [out]

    def reduce_scatter(g: Any) -> list[Any]:
        out = torch.zeros(2)
        dist.reduce_scatter_tensor(out, torch.arange(world * 2, dtype=torch.float32) + rank,
                                   group=g)
        return [out]

    def reduce(g: Any) -> list[Any]:
        t = torch.full((4,), float(rank + 1))
        dist.reduce(t, dst=1, group=g)
        return [t] if rank == 1 else []

    def gather(g: Any) -> list[Any]:
        out = [torch.zeros(2) for _ in range(world)] if rank == 0 else None
        dist.gather(torch.full((2,), float(rank)), out, dst=0, group=g)
        return out or []

    def scatter(g: Any) -> list[Any]:
        t = torch.zeros(3)
        src = [torch.full((3,), float(i * 10)) for i in range(world)] if rank == 3 else None
        dist.scatter(t, src, src=3, group=g)
        return [t]

    def all_to_all(g: Any) -> list[Any]:
        out = torch.zeros(world)
        dist.all_to_all_single(out, torch.arange(world, dtype=torch.float32) + 10 * rank,
                               group=g)
        return [out]

    def send_recv(g: Any) -> list[Any]:
        t = torch.zeros(3)
        peer_to, peer_from = (rank + 1) % world, (rank - 1) % world
        if rank % 2 == 0:
            dist.send(torch.full((3,), float(rank)), peer_to, group=g)
            dist.recv(t, peer_from, group=g)
        else:
            dist.recv(t, peer_from, group=g)
            dist.send(torch.full((3,), float(rank)), peer_to, group=g)
        return [t]

    def objects(g: Any) -> list[Any]:
        out: list[Any] = [None] * world
        dist.all_gather_object(out, {"rank": rank}, group=g)
        dist.barrier(group=g)
        return [torch.tensor([o["rank"] for o in out])]

    return {
        "max_f32": allreduce(torch.float32, ReduceOp.MAX),
        "min_i32": allreduce(torch.int32, ReduceOp.MIN),
        "product_f32": allreduce(torch.float32, ReduceOp.PRODUCT),
        "sum_f64": allreduce(torch.float64, ReduceOp.SUM),
        "sum_f16": allreduce(torch.float16, ReduceOp.SUM),
        "sum_i64": allreduce(torch.int64, ReduceOp.SUM),
        "sum_f32_noncontiguous": allreduce(torch.float32, ReduceOp.SUM, contiguous=False),
        "broadcast": broadcast,
        "all_gather": all_gather,
        "all_gather_into_tensor": all_gather_single,
        "reduce_scatter_tensor": reduce_scatter,
        "reduce": reduce,
        "gather": gather,
        "scatter": scatter,
        "all_to_all_single": all_to_all,
        "send_recv": send_recv,
        "all_gather_object_barrier": objects,
    }


def _job_main(rank: int, world: int) -> dict[str, Any]:
    """The main job: DDP netrl vs gloo, int32, async overlap, fallbacks."""
    from hostdrv.client.torch_backend import netrl_group

    pg = netrl_group()
    out_backend = type(dist.group.WORLD._get_backend(torch.device("cpu"))).__name__
    gloo = dist.new_group(backend="gloo")
    out: dict[str, Any] = {"url": pg.url, "backend": dist.get_backend(),
                           "cpu_backend": out_backend}
    before = pg.stats().get("switch_calls", 0)
    out["ddp_netrl"] = train_ddp(None, rank)
    out["ddp_switch_calls"] = pg.stats().get("switch_calls", 0) - before
    out["ddp_gloo"] = train_ddp(gloo, rank)

    x = torch.from_numpy(int_input(rank))
    s, a = x.clone(), x.clone()
    dist.all_reduce(s)
    dist.all_reduce(a, op=dist.ReduceOp.AVG)
    out["int_sum"], out["int_avg"] = s, a

    # two outstanding all-reduces, waited for in reverse order, plus a chained future
    big = torch.full((BIG,), float(rank + 1))
    small = torch.from_numpy(int_input(rank))
    favg = torch.arange(6, dtype=torch.float32) * (rank + 1)
    w1 = dist.all_reduce(big, async_op=True)
    w2 = dist.all_reduce(small, async_op=True)
    w3 = dist.all_reduce(favg, op=dist.ReduceOp.AVG, async_op=True)
    chained = w1.get_future().then(lambda f: float(f.value()[0].sum()))
    out["async_completed_early"] = w1.is_completed()
    w3.wait()
    w2.wait()
    w1.wait()
    out["async_big"], out["async_small"], out["async_avg"] = big, small, favg
    out["async_chained"] = chained.wait()

    ops = _fallback_ops(rank, world)
    out["fallback_netrl"] = {name: fn(None) for name, fn in ops.items()}
    out["fallback_gloo"] = {name: fn(gloo) for name, fn in ops.items()}
    t = torch.arange(4, dtype=torch.float64) + rank
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    out["avg_f64"] = t
    # a group made by new_group while netrl is the default backend: its own switch job
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sub = dist.new_group(ranks=list(range(world)))
        dist.new_group(ranks=list(range(world)))  # warned once per process
    out["subgroup_warnings"] = [str(w.message) for w in caught
                                if issubclass(w.category, RuntimeWarning)]
    t = torch.full((3,), float(rank + 1))
    dist.all_reduce(t, group=sub)
    out["subgroup_sum"], out["subgroup_stats"] = t, netrl_group(sub).stats()
    out["stats"] = pg.stats()
    return out


def _job_explicit(rank: int, world: int) -> dict[str, Any]:
    """NETRL_SWITCH given (env://, NETRL_STRICT=1): sums and DDP on that switch."""
    from hostdrv.client.torch_backend import NetrlUnsupportedError, netrl_group

    pg = netrl_group()
    out: dict[str, Any] = {"url": pg.url}
    t = torch.full((1000,), float(rank + 1))
    dist.all_reduce(t)
    out["sum"] = t
    out["ddp"] = train_ddp(None, rank, steps=2)
    try:
        dist.all_reduce(torch.ones(3), op=dist.ReduceOp.MAX)
        out["strict"] = None
    except NetrlUnsupportedError as e:
        out["strict"] = str(e)
    out["stats"] = pg.stats()
    return out


def _job_kill(rank: int, world: int) -> dict[str, Any]:
    """The last rank dies (SIGKILL) after two DDP steps (DDP rebuilds its buckets
    through gloo after the first). ``KILL_MODE=sync``: the others try another DDP step,
    whose only communication is the buckets' all-reduce, then a plain all-reduce;
    ``async``: they issue an ``async_op`` all-reduce before the death (pending when it
    happens), wait for it, then issue another."""
    model = small_model()
    ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.001)
    for _ in range(2):
        ddp(torch.ones(2, 8)).sum().backward()
    first = model[0].weight.grad.clone()
    out: dict[str, Any] = {"first": first}
    if os.environ["KILL_MODE"] == "async":
        dist.barrier()  # every rank alive here
        if rank == world - 1:
            os.kill(os.getpid(), signal.SIGKILL)
        pending = dist.all_reduce(torch.ones(100), async_op=True)
        steps: tuple[tuple[str, Callable[[], Any]], ...] = (
            ("pending", pending.wait),
            ("all_reduce", lambda: dist.all_reduce(torch.ones(100), async_op=True).wait()))
    else:
        if rank == world - 1:
            os.kill(os.getpid(), signal.SIGKILL)
        steps = (("ddp", lambda: ddp(torch.ones(2, 8)).sum().backward()),
                 ("all_reduce", lambda: dist.all_reduce(torch.ones(100))))
    for name, step in steps:
        t0 = time.monotonic()
        try:
            step()
            out[name] = None
        except Exception as e:  # noqa: BLE001 - recorded for the test
            out[name] = f"{type(e).__name__}: {e}"
        out[f"{name}_elapsed"] = time.monotonic() - t0
    return out


def _job_detail(rank: int, world: int) -> dict[str, Any]:
    """``TORCH_DISTRIBUTED_DEBUG=DETAIL`` and ``pg_options``: torch's wrapper around our
    backend; a sum through the switch; a mismatched-shape all-reduce it catches."""
    from hostdrv.client.torch_backend import netrl_group

    backend = dist.group.WORLD._get_backend(torch.device("cpu"))
    pg = netrl_group()
    out: dict[str, Any] = {"cpu_backend": type(backend).__name__,
                           "wrapped": type(getattr(backend, "wrapped_pg", None)).__name__,
                           "packet_elems": pg.aggregator.packet_elems, "window": pg.aggregator.window}
    t = torch.full((1000,), float(rank + 1))
    dist.all_reduce(t)
    out["sum"], out["stats"] = t, pg.stats()
    try:
        dist.all_reduce(torch.ones(3 + rank))
        out["mismatch"] = None
    except Exception as e:  # noqa: BLE001 - recorded for the test
        out["mismatch"] = f"{type(e).__name__}: {e}"
    return out


def _job_lengths(rank: int, world: int) -> dict[str, Any]:
    """No debug wrapper: an all-reduce of another length on each rank, a barrier (the ranks
    line up again after a failed collective), then a good one."""
    out: dict[str, Any] = {}
    try:
        dist.all_reduce(torch.ones(3 + rank))
        out["mismatch"] = None
    except Exception as e:  # noqa: BLE001 - recorded for the test
        cause = e.__cause__ if e.__cause__ is not None else e
        out["mismatch"] = f"{type(e).__name__} <- {type(cause).__name__}: {e}"
    dist.barrier()
    t = torch.full((40,), float(rank + 1))
    dist.all_reduce(t)
    out["after"] = t
    return out


def _job_wide(rank: int, world: int) -> dict[str, Any]:
    """More ranks than one switch holds: int32 and float32 sums through leaves + root."""
    from hostdrv.client.torch_backend import netrl_group

    pg = netrl_group()
    x = torch.from_numpy(int_input(rank)[:WIDE_ELEMS].copy())
    avg = x.clone()
    dist.all_reduce(x)
    dist.all_reduce(avg, op=dist.ReduceOp.AVG)
    f = torch.full((3,), float(rank + 1))
    dist.all_reduce(f)
    return {"int_sum": x, "int_avg": avg, "f32": f, "url": pg.url, "stats": pg.stats(),
            "member": pg.aggregator.worker}


JOBS: dict[str, Callable[[int, int], dict[str, Any]]] = {
    "main": _job_main, "explicit": _job_explicit, "kill": _job_kill, "detail": _job_detail,
    "lengths": _job_lengths,
    "wide": _job_wide}


def rank_main() -> None:
    """Entry point of a rank process: ``JOB``, ``RANK``, ``WORLD_SIZE``, ``INIT``,
    ``TIMEOUT`` and ``OUT`` come from the environment (``INIT=env://`` uses torchrun's
    ``MASTER_ADDR``/``MASTER_PORT``)."""
    import hostdrv.client.torch_backend  # noqa: F401 - registers "netrl"

    faulthandler.register(signal.SIGUSR1, all_threads=True)  # run_job's hang report
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    init = os.environ["INIT"]
    timeout = datetime.timedelta(seconds=float(os.environ["TIMEOUT"]))
    from hostdrv.client.torch_backend import NetrlOptions

    raw = os.environ.get("PG_OPTIONS")
    pg_options = NetrlOptions(**json.loads(raw)) if raw else None
    if init == "env://":
        dist.init_process_group("netrl", timeout=timeout, pg_options=pg_options)
    else:
        dist.init_process_group("netrl", init_method=init, rank=rank, world_size=world,
                                timeout=timeout, pg_options=pg_options)
    job = os.environ["JOB"]
    if ":" in job:  # module:function, a job of another test module's rank side
        import importlib

        mod, _, fn = job.partition(":")
        result = getattr(importlib.import_module(mod), fn)(rank, world)
    else:
        result = JOBS[job](rank, world)
    torch.save(result, Path(os.environ["OUT"]) / f"rank{rank}.pt")
    if os.environ["JOB"] == "kill":
        os._exit(0)  # a dead peer: do not wait for it in the teardown
    dist.destroy_process_group()
