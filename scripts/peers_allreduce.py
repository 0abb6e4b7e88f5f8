"""One-host all-reduce: in-switch against gloo's ring and the native parameter server.

Starts, per rank count (2 and 4), one soft switch (native engine, native socket loop) and
one native parameter server (:class:`hostdrv.peers.ps.NativeParameterServer`) in this
process, each a C++ thread with the GIL released, and that many rank processes. Every
rank times, per tensor size, blocking all-reduces of float32 three ways (four with
``--netrl``), every rank the same calls in the same order, interleaved: each repeat runs
every method once, in an order rotated from repeat to repeat, a gloo barrier before each
call, so the machine's load hits all alike:

* ``inswitch``: a bare :class:`hostdrv.Aggregator` (the native client loop) through the
  soft switch, configured as the ``netrl`` backend configures its own (the largest
  packet and slot count the switch takes, :func:`default_window`);
* ``ps``: :meth:`hostdrv.peers.ps.PsClient.allreduce` through the native parameter server;
* ``ring``: ``torch.distributed.all_reduce`` on a gloo group (ring all-reduce);
* ``netrl`` (``--netrl``, the full run): ``torch.distributed.all_reduce`` on the ``netrl``
  backend, with its own embedded soft switch.

The figures are rank 0's wall clock per call: the median over the repeats and the spread
(25th to 75th percentile). They are **one-host figures**: the "links" are loopback, every
rank, the switch and the server share this machine's cores, so they measure CPU cost
(copies, system calls, sums), not a network; the rack figures of issue 21 come from the
rack. The last lines are ``key=value``: ``host_allreduce_vs_ring`` (ring's median / the
switch's) and ``host_allreduce_vs_ps`` (the parameter server's / the switch's), at 4 ranks
and 4 MB.

    python scripts/peers_allreduce.py --quick      # 64 KB, 1 MB, 4 MB; 2 and 4 ranks
    python scripts/peers_allreduce.py              # 64 KB … 64 MB, and the netrl backend

``scripts/bench_peers.py`` imports :func:`run` and :func:`format_table`.
"""

from __future__ import annotations

import argparse
import datetime
import json
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

KB = 1024
QUICK_SIZES = [64 * KB, 1024 * KB, 4096 * KB]
FULL_SIZES = [64 * KB, 256 * KB, 1024 * KB, 4096 * KB, 16384 * KB, 65536 * KB]
KEY_RANKS, KEY_SIZE = 4, 4096 * KB
"""Where the key=value ratios are read: 4 ranks, 4 MB."""
METHODS = ("inswitch", "ps", "ring", "netrl")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _inputs(rank: int, elems: int) -> Any:
    import numpy as np

    return np.random.default_rng(1000 + rank).standard_normal(elems).astype(np.float32)


def _rank(rank: int, world: int, port: int, switch_url: str, ps_address: tuple[str, int],
          sizes: list[int], repeats: int, warmup: int, methods: list[str], queue: Any) -> None:
    """One rank: every method on every size, interleaved; rank 0 sends the times."""
    got = rank_loop(rank, world, f"tcp://127.0.0.1:{port}", switch_url, ps_address, sizes,
                    repeats, warmup, methods)
    if rank == 0:
        queue.put(got)


def rank_loop(rank: int, world: int, init_method: str, switch_url: str,
              ps_address: tuple[str, int], sizes: list[int], repeats: int, warmup: int,
              methods: list[str], *, configure_switch: bool = False,
              check_max: int = 4096 * KB, window: int | None = None) -> dict[str, Any]:
    """One rank's part: every method on every size, interleaved (see the module doc).

    ``init_method`` is torch's rendezvous (``netrl`` if it is among ``methods``, whose switch
    is ``NETRL_SWITCH`` or the embedded one, else gloo). ``configure_switch``: rank 0
    configures ``switch_url``'s aggregation job for ``world`` members first (a switch
    nobody else configured, e.g. on the rack). Sums up to ``check_max`` bytes are checked
    against numpy's once per method. ``window``: the bare Aggregator's chunks in flight
    (default: the ``netrl`` backend's choice). A method ``inswitch@W`` or ``netrl@W`` is
    that method with W chunks in flight for its calls (windows compared interleaved). Returns rank 0's times (every rank returns
    its own)."""
    import numpy as np
    import torch
    import torch.distributed as dist

    import hostdrv
    from hostdrv.client.torch_options import default_window
    from hostdrv.peers.ps import PsClient

    torch.set_num_threads(1)
    timeout = datetime.timedelta(seconds=300)
    if any(m.startswith("netrl") for m in methods):
        import hostdrv.torch_backend  # noqa: F401 - registers the "netrl" backend

        dist.init_process_group("netrl", init_method=init_method, rank=rank,
                                world_size=world, timeout=timeout)
        ring = dist.new_group(backend="gloo")
    else:
        dist.init_process_group("gloo", init_method=init_method, rank=rank,
                                world_size=world, timeout=timeout)
        ring = None
    bare = any(m.startswith("inswitch") for m in methods)
    if configure_switch and bare:
        if rank == 0:
            with hostdrv.SwitchControl(switch_url) as ctl:
                ctl.configure_aggregation(members=world, slots=ctl.read("AGG_MAX_SLOTS"),
                                          packet_elems=ctl.read("AGG_MAX_ELEMS"))
        dist.barrier(group=ring)
    agg = hostdrv.Aggregator(switch_url, worker=rank, retries=200) if bare else None
    if agg is not None:
        agg.window = window or default_window(agg.packet_elems, agg.slots, world)
    native_loop = agg is not None and agg._native() is not None
    ps = PsClient(ps_address, rank, world, timeout=120) if "ps" in methods else None

    def barrier() -> None:
        dist.barrier(group=ring)

    times: dict[tuple[int, str], list[float]] = {}
    cpu: dict[tuple[int, str], list[float]] = {}  # this process's CPU seconds per call
    retx: dict[tuple[int, str], int] = {}

    def netrl_agg() -> Any:
        import hostdrv.torch_backend as tb

        return tb.netrl_group().aggregator
    checked: dict[tuple[int, str], bool] = {}
    windows = {"inswitch": agg.window if agg is not None else 0,
               "netrl": netrl_agg().window if any(m.startswith("netrl") for m in methods) else 0}
    for size in sizes:
        elems = size // 4
        x = _inputs(rank, elems)
        t = torch.from_numpy(x.copy())
        expected = None
        if size <= check_max:  # every rank's input is known: check each method's sum once
            expected = np.sum([_inputs(r, elems) for r in range(world)], axis=0, dtype=np.float64)

        def call(method: str, x: Any = x, t: Any = t) -> Any:
            base, _, w = method.partition("@")  # "inswitch@16": that window for this call
            if base in ("inswitch", "netrl"):
                a = agg if base == "inswitch" else netrl_agg()
                a.window = min(int(w), a.slots) if w else windows[base]
            if base == "inswitch":
                return agg.allreduce(x)
            if base == "ps":
                return ps.allreduce(x)
            dist.all_reduce(t, group=ring if base == "ring" else None)  # t: x, copied in
            return t.numpy()

        for rep in range(warmup + repeats):
            k = rep % len(methods)
            for method in methods[k:] + methods[:k]:  # rotated: no method always first
                if method.split("@")[0] not in ("inswitch", "ps"):
                    t.copy_(torch.from_numpy(x))
                barrier()
                c0, t0 = time.process_time(), time.perf_counter()
                out = call(method)
                dt, dc = time.perf_counter() - t0, time.process_time() - c0
                if rep >= warmup:
                    times.setdefault((size, method), []).append(dt)
                    cpu.setdefault((size, method), []).append(dc)
                    if method.split("@")[0] in ("inswitch", "netrl"):  # its retransmissions
                        a = agg if method.startswith("inswitch") else netrl_agg()
                        retx[(size, method)] = (retx.get((size, method), 0)
                                                + getattr(a, "retransmissions", 0))
                if expected is not None and (size, method) not in checked:
                    checked[(size, method)] = bool(np.allclose(out, expected, rtol=1e-4,
                                                               atol=1e-4))
    barrier()
    got = {"times": {f"{s}/{m}": v for (s, m), v in times.items()},
           "cpu": {f"{s}/{m}": v for (s, m), v in cpu.items()},
           "checked": {f"{s}/{m}": v for (s, m), v in checked.items()},
           "retransmissions": {f"{s}/{m}": v for (s, m), v in retx.items()},
           "native_client_loop": native_loop}
    barrier()
    for client in (ps, agg):
        if client is not None:
            client.close()
    dist.destroy_process_group()
    return got


def _percentile(v: list[float], q: float) -> float:
    s = sorted(v)
    i = q * (len(s) - 1)
    lo = int(i)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (i - lo)


def _world(world: int, sizes: list[int], repeats: int, warmup: int,
           methods: list[str]) -> dict[str, Any]:
    import torch.multiprocessing as mp

    import hostdrv
    from hostdrv.peers.ps import NativeParameterServer
    from hostdrv.wire.protocol import MAX_JUMBO_ELEMS

    switch = hostdrv.SoftSwitch(("127.0.0.1", 0), max_elems=MAX_JUMBO_ELEMS,
                                engine="native").start()
    try:
        with hostdrv.SwitchControl(switch.url) as ctl:
            ctl.configure_aggregation(members=world, slots=ctl.read("AGG_MAX_SLOTS"),
                                      packet_elems=ctl.read("AGG_MAX_ELEMS"))
            config = {"engine": switch.engine, "slots": ctl.read("AGG_SLOTS"),
                      "packet_elems": ctl.read("AGG_ELEMS")}
        with NativeParameterServer(world, max_elems=max(sizes) // 4) as ps:
            ctx = mp.get_context("spawn")
            queue = ctx.SimpleQueue()
            mp.start_processes(_rank, args=(world, _free_port(), switch.url, ps.address, sizes,
                                            repeats, warmup, methods, queue),
                               nprocs=world, start_method="spawn")
            got = queue.get()
            config["ps_rounds"] = ps.stats()["rounds"]
    finally:
        switch.close()
    config["native_client_loop"] = got["native_client_loop"]
    return {"rows": rows_of(got, world, sizes, methods), "config": config}


def rows_of(got: dict[str, Any], world: int, sizes: list[int],
            methods: list[str]) -> list[dict[str, Any]]:
    """The table rows of one :func:`rank_loop` result (rank 0's): per size and method the
    median and 25th/75th percentile in ms, the repeats, whether the sum matched, the
    retransmitted chunks and the rank process's median CPU time per call (``cpu_ms``, all
    its threads)."""
    rows = []
    for size in sizes:
        for method in methods:
            v = got["times"][f"{size}/{method}"]
            rows.append({"ranks": world, "bytes": size, "method": method,
                         "median_ms": 1e3 * statistics.median(v),
                         "p25_ms": 1e3 * _percentile(v, 0.25), "p75_ms": 1e3 * _percentile(v, 0.75),
                         "repeats": len(v), "sum_ok": got["checked"].get(f"{size}/{method}"),
                         "retransmissions": got.get("retransmissions", {}).get(f"{size}/{method}"),
                         "cpu_ms": (1e3 * statistics.median(got["cpu"][f"{size}/{method}"])
                                    if f"{size}/{method}" in got.get("cpu", {}) else None)})
    return rows


def run(quick: bool, *, ranks: tuple[int, ...] = (2, 4), sizes: list[int] | None = None,
        repeats: int | None = None, warmup: int | None = None,
        netrl: bool | None = None) -> dict[str, Any]:
    """Measure and return ``{"rows": [...], "config": {...}, "host_allreduce_vs_ring": …,
    "host_allreduce_vs_ps": …}`` (the ratios ``None`` when 4 ranks / 4 MB was not run).

    ``quick``: 3 sizes, 9 repeats after 3 warm-up calls, no netrl backend; otherwise 6 sizes,
    11 repeats after 3, and the netrl backend. Each row: ranks, bytes, method, median_ms,
    p25_ms, p75_ms, repeats, sum_ok (the sum matched numpy's to 1e-4; ``None``: not checked).
    """
    sizes = sizes or (QUICK_SIZES if quick else FULL_SIZES)
    repeats = repeats or (9 if quick else 11)
    warmup = warmup if warmup is not None else 3
    methods = list(METHODS if (not quick if netrl is None else netrl) else METHODS[:3])
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    res: dict[str, Any] = {"rows": [], "config": {}, "sizes": sizes, "repeats": repeats,
                           "methods": methods}
    for world in ranks:
        w = _world(world, sizes, repeats, warmup, methods)
        res["rows"] += w["rows"]
        res["config"][world] = w["config"]
    med = {(r["ranks"], r["bytes"], r["method"]): r["median_ms"] for r in res["rows"]}
    ours = med.get((KEY_RANKS, KEY_SIZE, "inswitch"))
    for key, method in (("host_allreduce_vs_ring", "ring"), ("host_allreduce_vs_ps", "ps")):
        theirs = med.get((KEY_RANKS, KEY_SIZE, method))
        res[key] = theirs / ours if ours and theirs else None
    return res


def _size(n: int) -> str:
    return f"{n // (1024 * KB)} MB" if n >= 1024 * KB else f"{n // KB} KB"


def format_table(res: dict[str, Any]) -> str:
    """The table of a :func:`run` result: per ranks and size, each method's median (ms, with
    the 25th–75th percentile), its algorithm bandwidth, and the others' time over in-switch."""
    methods = res["methods"]
    lines = [f"one host, float32 all-reduce, rank 0's wall clock per call: median "
             f"[p25-p75] ms over {res['repeats']} interleaved repeats (CPU-bound: loopback)"]
    head = f"{'ranks':>5} {'size':>6} " + " ".join(f"{m:>22}" for m in methods)
    head += "  " + " ".join(f"{m + '/sw':>9}" for m in methods if m != "inswitch")
    lines.append(head)
    by = {(r["ranks"], r["bytes"], r["method"]): r for r in res["rows"]}
    for world in sorted({r["ranks"] for r in res["rows"]}):
        for size in res["sizes"]:
            cells = []
            for m in methods:
                r = by[(world, size, m)]
                ok = "" if r["sum_ok"] in (True, None) else "!"
                cells.append(f"{r['median_ms']:9.2f} [{r['p25_ms']:.2f}-{r['p75_ms']:.2f}]{ok}"
                             .rjust(22))
            sw = by[(world, size, "inswitch")]["median_ms"]
            ratios = [f"{by[(world, size, m)]['median_ms'] / sw:9.2f}" for m in methods
                      if m != "inswitch"]
            lines.append(f"{world:>5} {_size(size):>6} " + " ".join(cells) + "  " + " ".join(ratios))
    bad = [r for r in res["rows"] if r["sum_ok"] is False]
    if bad:
        lines.append("! a sum that did not match numpy's: " +
                     ", ".join(f"{r['method']} {r['ranks']}x{_size(r['bytes'])}" for r in bad))
    bw = [f"{m} {KEY_SIZE / by[(KEY_RANKS, KEY_SIZE, m)]['median_ms'] / 1e3:.0f} MB/s"
          for m in methods if (KEY_RANKS, KEY_SIZE, m) in by]
    if bw:
        lines.append("algorithm bandwidth (bytes / time) at 4 ranks, 4 MB: " + ", ".join(bw))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 sizes, 9 repeats, no netrl")
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--sizes-kb", type=int, nargs="+", default=None,
                    help="tensor sizes in KB (default: 64 … 65536, quick: 64 1024 4096)")
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--warmup", type=int, default=None)
    ap.add_argument("--netrl", action=argparse.BooleanOptionalAction, default=None,
                    help="also the netrl torch backend (default: on, off with --quick)")
    ap.add_argument("--json", default="", help="write the result here")
    args = ap.parse_args(argv)
    sizes = [k * KB for k in args.sizes_kb] if args.sizes_kb else None
    res = run(args.quick, ranks=tuple(args.ranks), sizes=sizes, repeats=args.repeats,
              warmup=args.warmup, netrl=args.netrl)
    print(format_table(res))
    print("config: " + json.dumps(res["config"]))
    if args.json:
        res["origin"] = (f"scripts/peers_allreduce.py {' '.join(sys.argv[1:] if argv is None else argv)}"
                         f" on {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
                         f", load average {os.getloadavg()[0]:.1f}")
        Path(args.json).write_text(json.dumps(res, indent=1))
    if any(r["sum_ok"] is False for r in res["rows"]):
        print("peers_allreduce: a method returned a wrong sum", file=sys.stderr)
        return 1
    for key in ("host_allreduce_vs_ring", "host_allreduce_vs_ps"):
        if res[key] is not None:
            print(f"{key}={res[key]:.3f}")
    print(f"peers_allreduce ranks={','.join(map(str, args.ranks))} "
          f"sizes={len(res['sizes'])} repeats={res['repeats']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
