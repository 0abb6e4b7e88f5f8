"""Per-call overhead of the ``netrl`` torch backend over a bare ``Aggregator``.

Starts ``--ranks`` processes on this host (the embedded soft switch of the backend, and
a second soft switch for the bare clients) and times, per tensor size, the median of
``--iters`` blocking all-reduces of float32 ones after ``--warmup`` calls, each
three ways, every rank the same calls in the same order:

* ``bare``: :meth:`hostdrv.Aggregator.allreduce` on a numpy array (no torch);
* ``group``: the backend's Python side, ``netrl_group().allreduce([t]).wait()`` (the
  worker-thread handoff, the futures, the copy back);
* ``dist``: ``torch.distributed.all_reduce(t)`` (adds torch's dispatch into the C++
  ``NetrlBackend`` and the GIL round trip into Python);
* ``gloo``: the same on a gloo group, for scale.

Then (``--ddp-steps``, 0 skips) DDP training steps per second of an MLP
(``--ddp-hidden``: 256 → hidden → hidden → 10, batch 32, SGD) on the ``netrl``
group and on a gloo group, same seeds.

Prints a table and one final ``key=value`` line (``make bench`` collects those). The
figures are per call on rank 0, wall clock; the machine is shared, so read ratios.

    python scripts/bench_torch.py                 # 4 ranks, 16 and 9000 elements
    python scripts/bench_torch.py --sizes 9000 1000000 --iters 50
"""

from __future__ import annotations

import argparse
import datetime
import os
import socket
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _median_ms(fn: Any, iters: int, warmup: int, barrier: Any) -> float:
    for _ in range(warmup):
        fn()
    barrier()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def _ddp_steps_per_s(group: Any, steps: int, hidden: int, barrier: Any) -> float:
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, hidden), torch.nn.ReLU(),
                                torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
                                torch.nn.Linear(hidden, 10))
    ddp = torch.nn.parallel.DistributedDataParallel(model, process_group=group)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    x, y = torch.randn(32, 256), torch.randint(0, 10, (32,))

    def step() -> None:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(ddp(x), y).backward()
        opt.step()

    for _ in range(3):
        step()
    barrier()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return steps / (time.perf_counter() - t0)


def _rank(rank: int, world: int, port: int, sizes: list[int], iters: int, warmup: int,
          ddp_steps: int, ddp_hidden: int, queue: Any) -> None:
    import numpy as np
    import torch
    import torch.distributed as dist

    import hostdrv
    from hostdrv.torch_backend import netrl_group

    torch.set_num_threads(1)
    dist.init_process_group("netrl", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world, timeout=datetime.timedelta(seconds=60))
    group = netrl_group()
    gloo = dist.new_group(backend="gloo")
    store = dist.distributed_c10d._get_default_store()
    # the bare clients' own switch and job (rank 0 starts it, the store tells the others)
    switch = None
    if rank == 0:
        switch = hostdrv.SoftSwitch(("127.0.0.1", 0), max_elems=group.aggregator.elems).start()
        with hostdrv.SwitchControl(switch.url) as ctl:
            ctl.configure_aggregation(members=world, slots=group.aggregator.slots,
                                      elems=group.aggregator.elems)
        store.set("bench/url", switch.url)
    url = store.get("bench/url").decode()
    bare = hostdrv.Aggregator(url, worker=rank, window=group.aggregator.window)

    def barrier() -> None:
        dist.barrier(group=gloo)

    rows = []
    for n in sizes:
        x = np.ones(n, dtype=np.float32)
        t = torch.ones(n)
        row = {"elems": n}
        row["bare"] = _median_ms(lambda x=x: bare.allreduce(x), iters, warmup, barrier)
        row["group"] = _median_ms(lambda t=t: group.allreduce([t]).wait(), iters, warmup,
                                  barrier)
        row["dist"] = _median_ms(lambda t=t: dist.all_reduce(t), iters, warmup, barrier)
        row["gloo"] = _median_ms(lambda t=t: dist.all_reduce(t, group=gloo), iters, warmup,
                                 barrier)
        rows.append(row)
    ddp = {}
    if ddp_steps:
        ddp["netrl"] = _ddp_steps_per_s(None, ddp_steps, ddp_hidden, barrier)
        ddp["gloo"] = _ddp_steps_per_s(gloo, ddp_steps, ddp_hidden, barrier)
    barrier()
    bare.close()
    if rank == 0:
        queue.put((rows, ddp))
    barrier()
    dist.destroy_process_group()
    if switch is not None:
        switch.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--sizes", type=int, nargs="+", default=[16, 9000])
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--ddp-steps", type=int, default=20)
    ap.add_argument("--ddp-hidden", type=int, default=1024)
    args = ap.parse_args(argv)
    import torch.multiprocessing as mp

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    mp.start_processes(_rank, args=(args.ranks, _free_port(), args.sizes, args.iters,
                                    args.warmup, args.ddp_steps, args.ddp_hidden, queue),
                       nprocs=args.ranks, start_method="spawn")
    rows, ddp = queue.get()
    print(f"{args.ranks} ranks, median ms per blocking all_reduce of float32 "
          f"({args.iters} calls after {args.warmup})")
    print(f"{'elems':>9} {'bare':>8} {'group':>8} {'dist':>8} {'gloo':>8} "
          f"{'group/bare':>10} {'dist/bare':>9} {'dist-bare':>9}")
    for r in rows:
        print(f"{r['elems']:>9} {r['bare']:>8.3f} {r['group']:>8.3f} {r['dist']:>8.3f} "
              f"{r['gloo']:>8.3f} {r['group'] / r['bare']:>10.2f} {r['dist'] / r['bare']:>9.2f} "
              f"{r['dist'] - r['bare']:>9.3f}")
    extra = ""
    if ddp:
        params = 256 * args.ddp_hidden + args.ddp_hidden ** 2 + 10 * args.ddp_hidden
        print(f"DDP, MLP of {params / 1e6:.2f} M parameters, batch 32: "
              f"netrl {ddp['netrl']:.1f} steps/s, gloo {ddp['gloo']:.1f} steps/s "
              f"(netrl/gloo {ddp['netrl'] / ddp['gloo']:.2f})")
        extra = (f" ddp_netrl_steps_s={ddp['netrl']:.2f} ddp_gloo_steps_s={ddp['gloo']:.2f}")
    last = rows[-1]
    print(f"bench_torch ranks={args.ranks} elems={last['elems']} bare_ms={last['bare']:.3f} "
          f"group_ms={last['group']:.3f} dist_ms={last['dist']:.3f} "
          f"gloo_ms={last['gloo']:.3f} dist_over_bare={last['dist'] / last['bare']:.2f}{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
