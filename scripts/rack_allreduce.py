#!/usr/bin/env python3
"""Comm-only all-reduce on a network-bound rack: in-switch against gloo's ring and a native parameter server.

For each (link rate, hosts) a rack is built with ``scripts/rack.py`` (root): N host
namespaces for the ranks, one more host namespace for the parameter server, the soft
switch in the switch namespace and a second soft switch beside it (``extra_switches=1``)
for the ``netrl`` backend's own job. Every link is ``tc``-shaped at the rate (both
directions), MTU 9000. Every rank (one process per host namespace) times blocking
float32 all-reduces four ways, interleaved (each repeat runs every method once, in an
order rotated from repeat to repeat, a gloo barrier before each call;
``peers_allreduce.rank_loop``):

* ``inswitch``: a bare :class:`hostdrv.Aggregator` through the rack's switch;
* ``netrl``: ``torch.distributed.all_reduce`` on the ``netrl`` backend (its switch:
  the second soft switch, ``NETRL_SWITCH``);
* ``ring``: ``torch.distributed.all_reduce`` on a gloo group (ring, TCP between hosts);
* ``ps``: :class:`hostdrv.peers.ps.PsClient` to the native parameter server
  (:class:`hostdrv.peers.ps.NativeParameterServer`, C++, TCP) on **its own host**
  ``h{N}``, behind one link at the same rate: a parameter server is a machine with one
  NIC behind the top-of-rack switch, as deployed; the switch, in turn, has one port per
  host at the same rate. (Putting it in the switch namespace would give it N links'
  worth of bandwidth, a server no cluster has.)

Both switch methods keep the ``netrl`` backend's default window of chunks in flight per
rank (:func:`hostdrv.client.torch_options.default_window`: 16 at 2048 elements per
datagram), or ``--window W``.

Figures: rank 0's wall clock per call, median and 25th-75th percentile over the
repeats; the machine's load average is recorded before and after each rack. A bulk TCP
transfer h0 → h1 (``rack.measure_rate``) checks that ``tc`` shapes at the rate.

    sudo python scripts/rack_allreduce.py --quick            # 1 Gbit/s, 4 hosts, 3 sizes
    sudo python scripts/rack_allreduce.py                    # 1 Gbit/s x 2/4/8 hosts,
                                                             # 2.5 and 10 Gbit/s x 4, 64 KB-64 MB
    sudo python scripts/rack_allreduce.py --racks 1gbit:4 --sizes-kb 64 4096 --repeats 5

The last line holds ``rack_allreduce_vs_ring`` (ring's median / netrl's) and
``rack_allreduce_vs_ps`` (the PS's / netrl's) at 1 Gbit/s, 4 hosts, 4 MB.
``scripts/bench_peers.py`` (section ``rack``) imports :func:`run`.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
for _p in (str(REPO), str(REPO / "scripts")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import peers_allreduce  # noqa: E402 - scripts/ on the path

KB = 1024
MB = 1024 * KB
QUICK_SIZES = [64 * KB, 1 * MB, 4 * MB]
FULL_SIZES = [64 * KB, 256 * KB, 1 * MB, 4 * MB, 16 * MB, 64 * MB]
QUICK_RACKS = [("1gbit", 4)]
FULL_RACKS = [("1gbit", 2), ("1gbit", 4), ("1gbit", 8), ("2500mbit", 4), ("10gbit", 4)]
METHODS = ["netrl", "inswitch", "ring", "ps"]
KEY_RACK, KEY_SIZE = ("1gbit", 4), 4 * MB
"""Where the key=value ratios are read: 1 Gbit/s, 4 hosts, 4 MB, the netrl backend."""
PS_PORT, STORE_PORT = 29610, 29611
DDP_DEAD_AFTER = 60
"""``NETRL_DEAD_AFTER`` of the DDP runs (s): the default 5 s declared a starved rank of 16
dead on this 2-core machine at load average 26."""
MAX_RANKS_ONE_SWITCH = 7
"""Above 8 ranks the rack has leaf switches, up to this many hosts each (the ``netrl``
backend's hierarchy, ``hostdrv.client.torch_hierarchy``)."""
RACK_MAX_ELEMS = 2048
"""The rack's soft switches: 2048 float32 per datagram (8 KB, within the 9000-byte MTU)."""


def rack_module() -> Any:
    """``scripts/rack.py`` as a module."""
    if "rack" in sys.modules:
        return sys.modules["rack"]
    spec = importlib.util.spec_from_file_location("rack", REPO / "scripts" / "rack.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["rack"] = mod
    spec.loader.exec_module(mod)
    return mod


def can_build_rack() -> str:
    """Empty when this process can build a rack, else why not (``skipped: ...``)."""
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    for tool in ("ip", "tc", "unshare"):
        if not any((Path(d) / tool).exists() for d in os.environ.get("PATH", "").split(":")):
            return f"needs `{tool}`"
    return ""


def rate_bits(rate: str) -> float:
    """A ``tc`` rate in bit/s."""
    return 8 * rack_module()._rate_bytes(rate)


def counters_delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """``after - before`` per counter (``rack.net_counters``)."""
    return {k: after.get(k, 0) - before.get(k, 0) for k in after}


# -- the processes in the namespaces -----------------------------------------------------------
def serve_ps(world: int, host: str, port: int, max_elems: int) -> int:
    """``ps`` mode: the native parameter server until stdin closes."""
    from hostdrv.peers.ps import NativeParameterServer

    with NativeParameterServer(world, host, port, max_elems=max_elems) as ps:
        print("ready", flush=True)
        sys.stdin.read()
        print(json.dumps(ps.stats()), flush=True)
    return 0


def worker(args: argparse.Namespace) -> int:
    """``worker`` mode: one rank's :func:`peers_allreduce.rank_loop`; rank 0 prints the times."""
    host, port = args.ps.rsplit(":", 1)
    got = peers_allreduce.rank_loop(args.rank, args.world, args.init, args.switch,
                                    (host, int(port)), args.sizes, args.repeats, args.warmup,
                                    args.methods, configure_switch=True, check_max=4 * MB,
                                    window=args.window or None)
    if args.rank == 0:
        print("RESULT " + json.dumps(got), flush=True)
    return 0


def ddp_worker(args: argparse.Namespace) -> int:
    """``ddp-worker`` mode: DDP steps/s of an MLP (256 -> H -> H -> 10, batch 32, SGD) on the
    ``netrl`` default group and on a gloo group, in alternating blocks; rank 0 prints them.
    With ``--int32-check`` it first sums a tiny int32 tensor through the switch and checks
    it against numpy's exact sum on every rank."""
    import datetime

    import numpy as np
    import torch
    import torch.distributed as dist

    import hostdrv.torch_backend as tb

    torch.set_num_threads(1)
    dist.init_process_group("netrl", init_method=args.init, rank=args.rank, world_size=args.world,
                            timeout=datetime.timedelta(seconds=600))
    gloo = dist.new_group(backend="gloo")
    n, rank = args.world, args.rank
    report: dict[str, Any] = {"switch_url": tb.netrl_group().url}
    ints = [np.random.default_rng([11, r]).integers(-(1 << 30), 1 << 30, 37, dtype=np.int32)
            for r in range(n)]
    t = torch.from_numpy(ints[rank].copy())
    dist.all_reduce(t)
    want = np.sum(np.stack(ints), axis=0, dtype=np.int32)
    report["int32_exact"] = bool(np.array_equal(t.numpy(), want))
    torch.manual_seed(0)
    h = args.hidden
    models = {}
    for name, group in (("netrl", None), ("gloo", gloo)):
        torch.manual_seed(0)
        m = torch.nn.Sequential(torch.nn.Linear(256, h), torch.nn.ReLU(), torch.nn.Linear(h, h),
                                torch.nn.ReLU(), torch.nn.Linear(h, 10))
        ddp = torch.nn.parallel.DistributedDataParallel(m, process_group=group)
        models[name] = (ddp, torch.optim.SGD(ddp.parameters(), lr=0.01))
    g = torch.Generator().manual_seed(100 + rank)
    x, y = torch.randn(32, 256, generator=g), torch.randint(0, 10, (32,), generator=g)

    def steps(name: str, k: int) -> float:
        ddp, opt = models[name]
        dist.barrier(group=gloo)
        t0 = time.perf_counter()
        for _ in range(k):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(ddp(x), y).backward()
            opt.step()
        dist.barrier(group=gloo)
        return k / (time.perf_counter() - t0)

    for name in models:  # warm-up: DDP's bucket rebuild after the first steps
        steps(name, 2)
    rates: dict[str, list[float]] = {"netrl": [], "gloo": []}
    for b in range(args.blocks):
        for name in (("netrl", "gloo") if b % 2 == 0 else ("gloo", "netrl")):
            rates[name].append(steps(name, args.steps))
    report["steps_per_s"] = rates
    report["params"] = sum(p.numel() for p in models["netrl"][0].parameters())
    report["stats"] = {k: v for k, v in tb.netrl_group().stats().items()
                       if k in ("switch_calls", "switch_elements")}
    ok = torch.tensor([int(report["int32_exact"])], dtype=torch.int32)
    dist.all_reduce(ok, group=gloo)
    report["int32_exact_ranks"] = int(ok.item())
    if rank == 0:
        print("RESULT " + json.dumps(report), flush=True)
    dist.destroy_process_group()
    return 0


# -- one rack ----------------------------------------------------------------------------------
def _run_ranks(rack: Any, hosts: int, cmd: list[str], env: dict[str, str],
               timeout: float) -> dict[str, Any]:
    """``cmd --rank i`` on hosts 0 … hosts-1 at once; rank 0's ``RESULT`` line, parsed."""
    t0 = time.monotonic()
    procs = [rack.popen(i, [*cmd, "--rank", str(i)], env=env, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE) for i in range(hosts)]
    outs = []
    for p in procs:
        try:
            o, e = p.communicate(timeout=max(1.0, timeout - (time.monotonic() - t0)))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            o, e = p.communicate()
        outs.append((p.returncode, o, e))
    bad = [(i, rc, e[-3000:]) for i, (rc, _o, e) in enumerate(outs) if rc]
    if bad:
        raise RuntimeError(f"ranks {[b[0] for b in bad]} failed (rc {bad[0][1]}): {bad[0][2]}")
    return dict(next(json.loads(ln[len("RESULT "):]) for ln in outs[0][1].splitlines()
                     if ln.startswith("RESULT ")))


def run_ddp(rate: str, hosts: int, *, leaves: int = 0, steps: int = 5, blocks: int = 4,
            hidden: int = 1024, timeout: float = 1800.0, log: Any = print,
            window: int | None = None) -> dict[str, Any]:
    """DDP steps/s, ``netrl`` vs gloo, ``hosts`` ranks on a rack at ``rate`` (``leaves`` > 0:
    that many leaf switches under the root, the ``netrl`` hierarchy). Also the exact int32
    sum of a tiny tensor on every rank (``int32_exact_ranks`` == hosts)."""
    rackmod = rack_module()
    rack = rackmod.Rack(rackmod.RackConfig(prefix=rackmod.unique_prefix("nrd"), hosts=hosts,
                                           rate=rate, max_elems=RACK_MAX_ELEMS, leaves=leaves))
    load0 = os.getloadavg()[0]
    try:
        rack.up()
        cmd = [sys.executable, str(Path(__file__).resolve()), "ddp-worker", "--world",
               str(hosts), "--init", f"tcp://{rack.host_ip(0)}:{STORE_PORT}", "--steps",
               str(steps), "--blocks", str(blocks), "--hidden", str(hidden)]
        t0 = time.monotonic()
        # 16 rank processes on 2 shared cores can starve a heartbeat thread for seconds:
        # a generous dead_after keeps the fail-fast check from declaring a slow rank dead
        env = {"OMP_NUM_THREADS": "1", "NETRL_DEAD_AFTER": str(DDP_DEAD_AFTER)}
        if window:
            env["NETRL_WINDOW"] = str(window)
        got = _run_ranks(rack, hosts, cmd, env, timeout)
        wall = time.monotonic() - t0
    finally:
        rack.down()
    got.update(rate=rate, hosts=hosts, leaves=leaves, seconds=wall, window=window,
               load=[load0, os.getloadavg()[0]])
    sps = {k: statistics.median(v) for k, v in got["steps_per_s"].items()}
    got["median_steps_per_s"] = sps
    log(f"  ddp {rate} x{hosts} leaves={leaves}: netrl {sps['netrl']:.2f} steps/s, gloo "
        f"{sps['gloo']:.2f} (netrl/gloo {sps['netrl'] / sps['gloo']:.2f}), int32 exact on "
        f"{got['int32_exact_ranks']}/{hosts} ranks, {wall:.0f} s, load {load0:.1f}")
    return got


def run_rack(rate: str, hosts: int, sizes: list[int], repeats: int, warmup: int,
             methods: list[str], *, timeout: float = 1800.0, log: Any = print,
             window: int | None = None) -> dict[str, Any]:
    """Build one rack, measure, tear it down (also on failure); rows and rack figures.
    ``window``: chunks in flight per rank of both switch methods (``NETRL_WINDOW``; None:
    the backend's own choice)."""
    rackmod = rack_module()
    leaves = 0 if hosts <= 8 else -(-(hosts + 1) // MAX_RANKS_ONE_SWITCH)
    if leaves and any(m.split("@")[0] in ("inswitch", "ps") for m in methods):
        raise ValueError(f"{hosts} hosts: leaf switches; only netrl and ring run there")
    cfg = rackmod.RackConfig(prefix=rackmod.unique_prefix("nra"), hosts=hosts + 1, rate=rate,
                             max_elems=RACK_MAX_ELEMS, extra_switches=0 if leaves else 1,
                             leaves=leaves)
    rack = rackmod.Rack(cfg)
    load0 = os.getloadavg()[0]
    ps_proc = None
    try:
        rack.up()
        goodput = rackmod.measure_rate(rack, 0, 1, seconds=1.0)
        ps_ip = rack.host_ip(hosts)
        ps_proc = rack.popen(hosts, [sys.executable, str(Path(__file__).resolve()), "ps",
                                     "--world", str(hosts), "--host", ps_ip, "--port",
                                     str(PS_PORT), "--max-elems", str(max(sizes) // 4)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        assert ps_proc.stdout is not None
        line = ps_proc.stdout.readline()
        if not line.startswith("ready"):
            raise RuntimeError(f"parameter server did not start: {line!r} "
                               f"{ps_proc.stderr.read() if ps_proc.stderr else ''}")
        # above 8 ranks the netrl backend builds its hierarchy on the leaves (NETRL_LEAVES)
        netrl_switch = (rack.switch_url if leaves else rack.extra_switch_url(0)).split("?")[0]
        cmd = [sys.executable, str(Path(__file__).resolve()), "worker", "--world", str(hosts),
               "--init", f"tcp://{rack.host_ip(0)}:{STORE_PORT}", "--switch", rack.switch_url,
               "--ps", f"{ps_ip}:{PS_PORT}", "--repeats", str(repeats), "--warmup", str(warmup),
               "--sizes", *map(str, sizes), "--methods", *methods, "--window", str(window or 0)]
        t0 = time.monotonic()
        env = {"NETRL_SWITCH": netrl_switch, "OMP_NUM_THREADS": "1"}
        if window:
            env["NETRL_WINDOW"] = str(window)
        c0 = rackmod.net_counters(rack)
        got = _run_ranks(rack, hosts, cmd, env, timeout)
        wall = time.monotonic() - t0
        net = counters_delta(c0, rackmod.net_counters(rack))
    finally:
        if ps_proc is not None and ps_proc.poll() is None:
            try:
                ps_proc.communicate(input="", timeout=10)
            except (subprocess.TimeoutExpired, OSError, ValueError):
                ps_proc.kill()
                ps_proc.wait()
        rack.down()
    rows = peers_allreduce.rows_of(got, hosts, sizes, methods)
    for r in rows:
        r["rate"] = rate
        r["rate_bits"] = rate_bits(rate)
    load1 = os.getloadavg()[0]
    log(f"  rack {rate} x{hosts}: goodput h0->h1 {goodput * 8 / 1e9:.3f} Gbit/s "
        f"({goodput * 8 / rate_bits(rate):.0%} of the rate), {wall:.0f} s, "
        f"load {load0:.1f} -> {load1:.1f}")
    log(f"  rack {rate} x{hosts} counters: " + " ".join(f"{k}={v}" for k, v in net.items()))
    return {"rows": rows, "rate": rate, "hosts": hosts, "goodput_bytes_s": goodput,
            "load": [load0, load1], "seconds": wall, "net": net,
            "native_client_loop": got["native_client_loop"]}


def run(quick: bool, *, racks: list[tuple[str, int]] | None = None,
        sizes: list[int] | None = None, repeats: int | None = None, warmup: int | None = None,
        methods: list[str] | None = None, log: Any = print,
        window: int | None = None, per_size: bool = False) -> dict[str, Any]:
    """Measure every rack; ``{"rows", "racks", "sizes", "repeats", "methods",
    "rack_allreduce_vs_ring", "rack_allreduce_vs_ps"}`` (ratios ``None`` when the key
    rack and size were not run). Each row: rate, hosts (as ``ranks``), bytes, method,
    median_ms, p25_ms, p75_ms, repeats, sum_ok, retransmissions, cpu_ms (rank 0's CPU per
    call). ``per_size``: one rack per size, so that the switch processes' CPU time
    (``rack.net_counters``) belongs to one size: each row then has ``sw_cpu_ms_call``, the
    soft switches' CPU per switch call (both switch methods' calls together)."""
    racks = racks or (QUICK_RACKS if quick else FULL_RACKS)
    sizes = sizes or (QUICK_SIZES if quick else FULL_SIZES)
    repeats = repeats or (7 if quick else 9)
    warmup = warmup if warmup is not None else 2
    methods = methods or list(METHODS)
    window = window or None  # None, 0: the backend's default_window
    res: dict[str, Any] = {"rows": [], "racks": [], "sizes": sizes, "repeats": repeats,
                           "methods": methods, "window": window}
    for rate, hosts in racks:
        if not per_size:
            r = run_rack(rate, hosts, sizes, repeats, warmup, methods, log=log, window=window)
            res["rows"] += r.pop("rows")
            res["racks"].append(r)
            continue
        parts = []
        for size in sizes:
            r = run_rack(rate, hosts, [size], repeats, warmup, methods, log=log, window=window)
            calls = (repeats + warmup) * sum(m.split("@")[0] in ("netrl", "inswitch")
                                             for m in methods)
            for row in r["rows"]:
                row["sw_cpu_ms_call"] = r["net"].get("sw_cpu_ms", 0) / calls if calls else None
            res["rows"] += r.pop("rows")
            parts.append(r)
        merged = dict(parts[0])
        merged["load"] = [parts[0]["load"][0], parts[-1]["load"][1]]
        merged["seconds"] = sum(p["seconds"] for p in parts)
        merged["net"] = {k: sum(p["net"].get(k, 0) for p in parts) for k in parts[0]["net"]}
        res["racks"].append(merged)
    med = {(r["rate"], r["ranks"], r["bytes"], r["method"]): r["median_ms"] for r in res["rows"]}
    ours = med.get((*KEY_RACK, KEY_SIZE, "netrl"))
    for key, method in (("rack_allreduce_vs_ring", "ring"), ("rack_allreduce_vs_ps", "ps")):
        theirs = med.get((*KEY_RACK, KEY_SIZE, method))
        res[key] = theirs / ours if ours and theirs else None
    return res


def _size(n: int) -> str:
    return f"{n // MB} MB" if n >= MB else f"{n // KB} KB"


def format_table(res: dict[str, Any], predicted: dict[tuple[str, int, int, str], float]
                 | None = None) -> str:
    """Per rack and size each method's median [p25-p75] ms, the others' time over netrl's,
    and (``predicted``: (rate, hosts, bytes, method) -> ms) the model's figure."""
    methods = res["methods"]
    lines = [f"rack all-reduce, float32, rank 0's wall clock per call: median [p25-p75] ms over "
             f"{res['repeats']} interleaved repeats" + ("; (model ms)" if predicted else "")]
    for rk in res["racks"]:
        lines.append(f"-- {rk['rate']} links, {rk['hosts']} hosts (+1 PS host): bulk TCP "
                     f"{rk['goodput_bytes_s'] * 8 / 1e9:.3f} Gbit/s, load "
                     f"{rk['load'][0]:.1f}->{rk['load'][1]:.1f}")
        lines.append(f"{'size':>6} " + " ".join(f"{m:>28}" for m in methods) + "  "
                     + " ".join(f"{m + '/netrl':>11}" for m in methods if m != "netrl"))
        by = {(r["bytes"], r["method"]): r for r in res["rows"]
              if r["rate"] == rk["rate"] and r["ranks"] == rk["hosts"]}
        for size in res["sizes"]:
            cells = []
            for m in methods:
                r = by[(size, m)]
                ok = "" if r["sum_ok"] in (True, None) else "!"
                cell = f"{r['median_ms']:.2f} [{r['p25_ms']:.2f}-{r['p75_ms']:.2f}]{ok}"
                if predicted and (rk["rate"], rk["hosts"], size, m) in predicted:
                    cell += f" ({predicted[(rk['rate'], rk['hosts'], size, m)]:.1f})"
                cells.append(cell.rjust(28))
            base = by[(size, "netrl")]["median_ms"] if "netrl" in methods else None
            ratios = [f"{by[(size, m)]['median_ms'] / base:11.2f}" for m in methods
                      if m != "netrl" and base]
            lines.append(f"{_size(size):>6} " + " ".join(cells) + "  " + " ".join(ratios))
        retx = [f"{m} {_size(size)} {by[(size, m)]['retransmissions']}"
                for m in ("netrl", "inswitch") for size in res["sizes"]
                if (size, m) in by and by[(size, m)].get("retransmissions")]
        lines.append("  retransmitted chunks, rank 0, summed over the repeats: "
                     + (", ".join(retx) or "none"))
    bad = [r for r in res["rows"] if r["sum_ok"] is False]
    if bad:
        lines.append("! a sum that did not match numpy's: " + ", ".join(
            f"{r['method']} {r['rate']}x{r['ranks']} {_size(r['bytes'])}" for r in bad))
    return "\n".join(lines)


def crossovers(res: dict[str, Any], ours: str = "netrl", theirs: str = "ring") -> list[str]:
    """Per rack, the sizes where ``ours`` is faster than ``theirs`` (median time below
    theirs) and where it is slower: ``docs/torch.md``'s crossover sizes."""
    by = {(r["rate"], r["ranks"], r["bytes"], r["method"]): r["median_ms"] for r in res["rows"]}
    out = []
    for rk in res["racks"]:
        faster, slower = [], []
        for size in res["sizes"]:
            a, b = by.get((rk["rate"], rk["hosts"], size, ours)), by.get(
                (rk["rate"], rk["hosts"], size, theirs))
            if a is None or b is None:
                continue
            (faster if a < b else slower).append(f"{_size(size)} ({b / a:.2f}x)")
        out.append(f"{rk['rate']} x{rk['hosts']}: {ours} faster than {theirs} at "
                   f"{', '.join(faster) or 'no size'}; slower at {', '.join(slower) or 'no size'}")
    return out


def markdown(res: dict[str, Any]) -> str:
    """The result as a markdown table: rate, hosts, size, each method's median [p25-p75] ms,
    ring / netrl and PS / netrl (``docs/rack.md``)."""
    methods = res["methods"]
    lines = ["| rate | hosts | size | " + " | ".join(methods) + " | ring / netrl | PS / netrl |",
             "|---|---|---|" + "---|" * (len(methods) + 2)]
    by = {(r["rate"], r["ranks"], r["bytes"], r["method"]): r for r in res["rows"]}
    for rk in res["racks"]:
        for size in res["sizes"]:
            key = (rk["rate"], rk["hosts"], size)
            cells = [f"{by[(*key, m)]['median_ms']:.2f} [{by[(*key, m)]['p25_ms']:.2f}–"
                     f"{by[(*key, m)]['p75_ms']:.2f}]" for m in methods]
            base = by[(*key, "netrl")]["median_ms"] if "netrl" in methods else None
            ratios = [f"{by[(*key, m)]['median_ms'] / base:.2f}" if base and (*key, m) in by
                      else "–" for m in ("ring", "ps")]
            lines.append(f"| {rk['rate']} | {rk['hosts']} | {_size(size)} | " + " | ".join(cells)
                         + " | " + " | ".join(ratios) + " |")
    return "\n".join(lines)


def _parse_racks(text: str) -> list[tuple[str, int]]:
    out = []
    for item in text.split(","):
        rate, _, hosts = item.partition(":")
        if not hosts.isdigit() or not 2 <= int(hosts) <= 16:
            raise argparse.ArgumentTypeError(f"bad rack {item!r}: RATE:HOSTS, hosts 2..16 "
                                             f"(above 8: leaf switches, netrl and ring only)")
        out.append((rate, int(hosts)))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="mode")
    ps = sub.add_parser("ps", help="(internal) the parameter server in its host namespace")
    ps.add_argument("--world", type=int, required=True)
    ps.add_argument("--host", required=True)
    ps.add_argument("--port", type=int, required=True)
    ps.add_argument("--max-elems", type=int, required=True)
    w = sub.add_parser("worker", help="(internal) one rank in its host namespace")
    w.add_argument("--rank", type=int, required=True)
    w.add_argument("--world", type=int, required=True)
    w.add_argument("--init", required=True)
    w.add_argument("--switch", required=True)
    w.add_argument("--ps", required=True)
    w.add_argument("--sizes", type=int, nargs="+", required=True)
    w.add_argument("--repeats", type=int, required=True)
    w.add_argument("--warmup", type=int, required=True)
    w.add_argument("--methods", nargs="+", required=True)
    w.add_argument("--window", type=int, default=0)
    d = sub.add_parser("ddp-worker", help="(internal) one DDP rank in its host namespace")
    d.add_argument("--rank", type=int, required=True)
    d.add_argument("--world", type=int, required=True)
    d.add_argument("--init", required=True)
    d.add_argument("--steps", type=int, required=True)
    d.add_argument("--blocks", type=int, required=True)
    d.add_argument("--hidden", type=int, required=True)
    dd = sub.add_parser("ddp", help="DDP steps/s, netrl vs gloo, on a rack (16 ranks: leaves)")
    dd.add_argument("--rate", default="1gbit")
    dd.add_argument("--hosts", type=int, nargs="+", default=[4, 16])
    dd.add_argument("--leaves", type=int, default=None,
                    help="leaf switches (default: 0 up to 8 ranks, else ceil(hosts/7))")
    dd.add_argument("--steps", type=int, default=5, help="DDP steps per block")
    dd.add_argument("--blocks", type=int, default=4, help="blocks per backend, alternating")
    dd.add_argument("--hidden", type=int, default=1024, help="MLP width H (1.32 M parameters)")
    dd.add_argument("--window", type=int, default=0,
                    help="NETRL_WINDOW (0: the backend's own default)")
    dd.add_argument("--json", default="")
    ap.add_argument("--quick", action="store_true", help="1 Gbit/s x 4 hosts, 64 KB, 1 MB, 4 MB")
    ap.add_argument("--racks", type=_parse_racks, default=None,
                    help="RATE:HOSTS,... (default 1gbit:2,1gbit:4,1gbit:8,2500mbit:4,10gbit:4)")
    ap.add_argument("--sizes-kb", type=int, nargs="+", default=None)
    ap.add_argument("--repeats", type=int, default=None, help="default 9, --quick 7")
    ap.add_argument("--warmup", type=int, default=None, help="default 2")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--window", type=int, default=None,
                    help="chunks in flight per rank, both switch methods (default 0: the "
                         "netrl backend's own default_window, 16 at 2048 elements)")
    ap.add_argument("--per-size", action="store_true",
                    help="one rack per size: the switches' CPU per call of each size")
    ap.add_argument("--model", action=argparse.BooleanOptionalAction, default=True,
                    help="print the cluster model's prediction of each row and its error")
    ap.add_argument("--json", default="", help="write the result here")
    ap.add_argument("--markdown", default="", help="write the table as markdown here")
    ap.add_argument("--from-json", default="",
                    help="no measurement: print (and --markdown) a saved --json result")
    args = ap.parse_args(argv)
    if args.mode == "ps":
        return serve_ps(args.world, args.host, args.port, args.max_elems)
    if args.mode == "worker":
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        return worker(args)
    if args.mode == "ddp-worker":
        return ddp_worker(args)
    why = "" if args.from_json else can_build_rack()
    if why:
        print(f"rack_allreduce: skipped: {why}")
        print(" ".join(f"{k}=skipped" for k in ("rack_allreduce_vs_ring", "rack_allreduce_vs_ps",
                                                 "model_comm_error")))
        return 0
    if args.mode == "ddp":
        out = []
        for n in args.hosts:
            leaves = args.leaves if args.leaves is not None else (0 if n <= 8 else -(-n // 7))
            out.append(run_ddp(args.rate, n, leaves=leaves, steps=args.steps,
                               blocks=args.blocks, hidden=args.hidden,
                               window=args.window or None))
        if args.json:
            Path(args.json).write_text(json.dumps(out, indent=1))
        print(" ".join(f"ddp_{r['hosts']}_netrl_steps_s={r['median_steps_per_s']['netrl']:.2f} "
                       f"ddp_{r['hosts']}_gloo_steps_s={r['median_steps_per_s']['gloo']:.2f}"
                       for r in out))
        return 0 if all(r["int32_exact_ranks"] == r["hosts"] for r in out) else 1
    methods = [m for m in args.methods.split(",") if m]
    bad = sorted({m for m in methods if m.split("@")[0] not in METHODS
                  or not (m.partition("@")[2] or "1").isdigit()})
    if bad:
        ap.error(f"unknown methods {bad}: {METHODS}")
    if args.from_json:
        res = json.loads(Path(args.from_json).read_text())
    else:
        res = run(args.quick, racks=args.racks, sizes=[k * KB for k in args.sizes_kb]
                  if args.sizes_kb else None, repeats=args.repeats, warmup=args.warmup,
                  methods=methods, window=args.window, per_size=args.per_size)
    if args.markdown:
        Path(args.markdown).write_text(markdown(res) + "\n")
    if args.json:  # first: nothing below may lose the measurement
        Path(args.json).write_text(json.dumps(res, indent=1))
    predicted, err = None, None
    if args.model:
        import cluster_model

        predicted, err = cluster_model.comm_rows_error(res)
        res["model"] = {"max_error": err["max"], "errors": err["rows"]}
        if args.json:
            Path(args.json).write_text(json.dumps(res, indent=1))
    print(format_table(res, predicted))
    for line in crossovers(res) + crossovers(res, "netrl", "ps"):
        print("crossover " + line)
    if err is not None:
        print(cluster_model.format_comm_errors(err))
    keys = {k: ("n/a" if res[k] is None else f"{res[k]:.3f}")
            for k in ("rack_allreduce_vs_ring", "rack_allreduce_vs_ps")}
    if args.model:
        keys["model_comm_error"] = f"{res['model']['max_error']:.3f}"
    print(" ".join(f"{k}={v}" for k, v in keys.items()))
    return 1 if any(r["sum_ok"] is False for r in res["rows"]) else 0


if __name__ == "__main__":
    sys.exit(main())
