#!/usr/bin/env python3
"""Rack benchmark: iteration time split into compute and communication, 4 host namespaces.

For each link delay (default 0, 10 and 50 µs one way) a 4-host rack is built
with ``scripts/rack.py`` (10 Gbit/s ``tbf`` links, the delay line of
``hostdrv.rack.delay_line``, the soft switch in the switch namespace),
and for each algorithm ``torchrun`` starts one node per host namespace
(c10d rendezvous on host 0's rack address) running ``netrl compare``: the
same seed with ``inswitch`` (the ``netrl`` backend on the rack's soft
switch), ``ps`` (parameter server over TCP on host 0) and ``allreduce``
(gloo across the hosts). Rank 0's ``summary.json`` of each run gives the
mean per-iteration compute and communication seconds (an *iteration* as in
``scripts/bench_rl.py``: a PPO rollout plus its update epochs, one A2C
update, 25 DQN updates, 100 DDPG updates). The round trip from host 0 to the
switch (UDP echo, 64 bytes) is measured on each rack as well.

Prints a table as it goes, writes ``--out`` (JSON) and ``--plot`` (PNG), and
ends with ONE line of ``key=value`` figures: ``<algo>_<sync>_d<delay>_compute_ms``,
``..._comm_ms``, ``rtt_switch_us_d<delay>`` (median) and
``rack_inswitch_vs_gloo`` / ``rack_inswitch_vs_ps``: the PPO iteration time
(compute + communication) of ``allreduce`` (gloo) / ``ps`` divided by
``inswitch``'s, on the 10 µs rack.

Usage: ``python scripts/bench_rack.py [--algos ppo,a2c] [--delays 0,10,50]
[--iterations 10] [--packet-elems 352] [--out rack.json] [--plot docs/rack.png]``
(root; leaves no namespace behind, also on Ctrl-C).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SYNCS = ("inswitch", "ps", "allreduce")
ITERATIONS_DEFAULT = 10
LABEL = {"inswitch": "in-switch", "ps": "param server", "allreduce": "gloo allreduce"}


def _rack_module() -> Any:
    spec = importlib.util.spec_from_file_location("rack", REPO / "scripts" / "rack.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("rack", mod)
    spec.loader.exec_module(mod)
    return mod


def algo_args(algo: str, iterations: int, hosts: int) -> list[str]:
    """``netrl compare`` options that give about ``iterations`` iterations per rank."""
    if algo == "ppo":
        steps = 128 * iterations * hosts
    elif algo == "a2c":
        steps = 16 * iterations * hosts
    elif algo == "dqn":
        steps = (500 + 4 * 25 * iterations) * hosts
    elif algo == "ddpg":
        steps = (500 + 100 * iterations) * hosts
    else:
        raise ValueError(f"bad algo={algo!r}: ppo, a2c, dqn or ddpg")
    args = ["--algo", algo, "--seed", "1", "--total-steps", str(steps), "--target", "nan",
            "--no-progress"]
    if algo in ("dqn", "ddpg"):
        args += ["--replay", "local"]  # only the gradient sync differs
    return args


def run_compare(rack: Any, algo: str, iterations: int, packet_elems: int | None, runs: Path,
                name: str, timeout: float) -> dict[str, dict[str, float]]:
    """One ``netrl compare`` across the rack's hosts; per sync its compute/comm seconds."""
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nnodes={rack.config.hosts}",
           "--nproc-per-node=1", "--rdzv-backend=c10d",
           f"--rdzv-endpoint={rack.host_ip(0)}:29400", f"--rdzv-id={name}",
           "--max-restarts=0", "-m", "rl", "compare",
           *algo_args(algo, iterations, rack.config.hosts), "--syncs", ",".join(SYNCS),
           "--switch", rack.switch_url, "--runs-dir", str(runs), "--name", name]
    if packet_elems:
        cmd += ["--packet-elems", str(packet_elems)]
    results = rack.run_all(cmd, env={"OMP_NUM_THREADS": "1"}, timeout=timeout)
    bad = [(i, rc, e[-2500:]) for i, (rc, _o, e) in enumerate(results) if rc]
    if bad:
        raise RuntimeError(f"{algo} compare failed on hosts {[b[0] for b in bad]}: {bad[0][2]}")
    out = {}
    for sync in SYNCS:
        s = json.loads((runs / name / sync / "summary.json").read_text())
        out[sync] = {"compute_s": s["mean_compute_s"], "comm_s": s["mean_comm_s"],
                     "iterations": s["iterations"]}
    return out


PAPER_RATES = ("1gbit", "2500mbit")
"""The dilated link rates of the paper-workload runs (``--paper``)."""
PAPER_ELEMS = 2048
"""float32 per datagram on the paper-workload racks (8 KB, within the 9000-byte MTU; as
``scripts/rack_allreduce.py``)."""
DEAD_AFTER = 60
"""``NETRL_DEAD_AFTER`` (s) of the paper-workload runs."""
PAPER_ITERATIONS = 5
"""Logged iterations per worker and run; the first is left out (warm-up)."""


def paper_args(algo: str, iterations: int) -> list[str]:
    """``netrl compare`` options of one paper workload, ``iterations`` logged iterations per
    worker (an *iteration*: one PPO rollout of 1024 steps and its 4 x 16 minibatch updates,
    one A2C update of 4 x 5 steps, one DQN or DDPG gradient update; DQN and DDPG start
    learning after 64 steps, not the paper's 1000, and use local replay: the gradient
    exchange is the only communication)."""
    args = ["--workload", "paper", "--algo", algo, "--seed", "1", "--iterations",
            str(iterations), "--target", "nan", "--no-progress", "--no-tensorboard"]
    if algo in ("dqn", "ddpg"):
        args += ["--replay", "local", "--learning-starts", "64"]
    return args


def rank0_iterations(run: Path) -> tuple[float, float, int]:
    """Rank 0's median compute and communication seconds per iteration of one run
    (``iterations.csv``), its first iteration left out (warm-up: environments, lazy
    initialisation, the first connections), and how many iterations that is."""
    import csv

    with open(run / "iterations.csv") as f:
        rows = [r for r in csv.DictReader(f) if r["rank"] == "0" and int(r["iteration"]) > 1]
    if not rows:
        raise RuntimeError(f"{run}: no iteration after the first (more --iterations)")
    return (statistics.median(float(r["compute_s"]) for r in rows),
            statistics.median(float(r["comm_s"]) for r in rows), len(rows))


def paper_model(algo: str, sync: str, rate: str, compute_s: float, rtt_us: float,
                hosts: int) -> dict[str, float]:
    """``scripts/cluster_model.py``'s analytic model of one iteration of ``algo``'s paper
    workload on this rack: its gradient bytes and rounds per iteration
    (``docs/data/workloads.json``), the calibrated host costs (``docs/data/host_costs.json``),
    the rack's rate, MTU and P, and per link crossing what the measured RTT to the switch
    has over this machine's loopback RTT. ``comm``: given the compute measured on the rack
    (``compute_s``), with the sync wait of N processes sharing the cores (the model's
    ``wait``, from the calibration); ``comm_bare``: the same without that wait (network and
    host costs only); ``alone``: the whole iteration with ``workloads.json``'s compute (the
    worker's CPU seconds, measured with N workers on one host), no rack figure but the RTT."""
    sys.path.insert(0, str(REPO / "scripts"))
    import cluster_analytic as ca

    host_data = ca.read_json(ca.DATA / "host_costs.json")
    host = ca.host_costs_from(host_data)
    wl = ca.workloads_from(ca.read_json(ca.DATA / "workloads.json"), "workloads.json")[algo]
    extra = max(0.0, (rtt_us - float(host_data["loopback_rtt_us"])) / 2)
    rackmod = sys.modules["rack"]
    net = ca.Network(rate_gbps=8 * rackmod._rate_bytes(rate) / 1e9, delay_us=extra,
                     mtu=9000, packet_elems=PAPER_ELEMS)
    on_rack = ca.iteration(sync, "sync", hosts, ca.Workload(algo, wl.grad_bytes, compute_s,
                                                            wl.rounds), net, host, wait=True)
    alone = ca.iteration(sync, "sync", hosts, wl, net, host, wait=True)
    bare = ca.iteration(sync, "sync", hosts, ca.Workload(algo, wl.grad_bytes, compute_s,
                                                         wl.rounds), net, host, wait=False)
    return {"comm_s": on_rack["comm"], "iter_s": compute_s + on_rack["comm"],
            "comm_bare_s": bare["comm"],
            "alone_iter_s": alone["total"], "grad_bytes": wl.grad_bytes, "rounds": wl.rounds}


def model_row(row: dict[str, Any], rtt_us: float) -> dict[str, Any]:
    """A measured row with the model's figures and errors added (:func:`paper_model`)."""
    mod = paper_model(row["algo"], row["sync"], row["rate"], 1e-3 * row["compute_ms"], rtt_us,
                      row["hosts"])
    row.update(model_comm_ms=1e3 * mod["comm_s"], model_iter_ms=1e3 * mod["iter_s"],
               model_comm_bare_ms=1e3 * mod["comm_bare_s"],
               model_alone_iter_ms=1e3 * mod["alone_iter_s"], grad_bytes=mod["grad_bytes"],
               rounds=mod["rounds"], rtt_switch_us=rtt_us)
    row["error"] = (row["model_iter_ms"] - row["iter_ms"]) / row["iter_ms"]
    row["comm_error"] = (row["model_comm_ms"] - row["comm_ms"]) / row["comm_ms"]
    row["comm_bare_error"] = (row["model_comm_bare_ms"] - row["comm_ms"]) / row["comm_ms"]
    return row


def run_paper(rates: list[str], algos: list[str], hosts: int, iterations: int,
              timeout: float, syncs: tuple[str, ...] = SYNCS,
              out: Path | None = None) -> dict[str, Any]:
    """Every paper workload on a ``hosts``-host rack per rate: measured seconds per iteration
    (rank 0's median compute and communication, ``netrl compare``) beside the model's."""
    rackmod = _rack_module()
    runs = Path(tempfile.mkdtemp(prefix="bench_rack_paper_"))
    rows: list[dict[str, Any]] = []
    racks: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    start = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())

    def result() -> dict[str, Any]:
        return {"rows": rows, "racks": racks, "failed": failed, "hosts": hosts,
                "iterations": iterations, "date": start,
                "end": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}

    for rate in rates:
        rack = rackmod.Rack(rackmod.RackConfig(prefix=rackmod.unique_prefix("nrp"), hosts=hosts,
                                               rate=rate, max_elems=PAPER_ELEMS))
        try:
            rack.up()
            rtt_us = 1e6 * statistics.median(rackmod.measure_rtt(rack, 0, None, n=200))
            racks.append({"rate": rate, "rtt_switch_us": rtt_us, "load": os.getloadavg()[0]})
            print(f"{rate}: rtt to switch {rtt_us:.1f} µs, load {os.getloadavg()[0]:.1f}",
                  flush=True)
            for algo in algos:
                name = f"paper-{algo}-{rate}"
                cmd = [sys.executable, "-m", "torch.distributed.run", f"--nnodes={hosts}",
                       "--nproc-per-node=1", "--rdzv-backend=c10d",
                       f"--rdzv-endpoint={rack.host_ip(0)}:29400", f"--rdzv-id={name}",
                       "--max-restarts=0", "-m", "rl", "compare",
                       *paper_args(algo, iterations), "--syncs", ",".join(syncs), "--switch",
                       rack.switch_url, "--packet-elems", str(PAPER_ELEMS), "--runs-dir",
                       str(runs), "--name", name]
                t0 = time.monotonic()
                # 4 ranks and the switch on 2 shared cores can starve a heartbeat for
                # seconds: the default 5 s declared a live rank dead (A2C, 2.5 Gbit/s)
                results = rack.run_all(cmd, env={"OMP_NUM_THREADS": "1",
                                                 "NETRL_DEAD_AFTER": str(DEAD_AFTER)},
                                       timeout=timeout)
                bad = [(i, rc, e[-1500:]) for i, (rc, _o, e) in enumerate(results) if rc]
                if bad:  # recorded; the other workloads still run
                    failed.append({"rate": rate, "algo": algo, "hosts": [b[0] for b in bad],
                                   "stderr": bad[0][2]})
                    print(f"       ({name} FAILED on hosts {[b[0] for b in bad]}: "
                          f"{bad[0][2][-300:]})", flush=True)
                    continue
                for sync in syncs:
                    c, m, n_it = rank0_iterations(runs / name / sync)
                    row = model_row({"rate": rate, "algo": algo, "sync": sync,
                                     "hosts": hosts, "iterations": n_it, "compute_ms": 1e3 * c,
                                     "comm_ms": 1e3 * m, "iter_ms": 1e3 * (c + m)}, rtt_us)
                    rows.append(row)
                    print(format_paper_row(row), flush=True)
                print(f"       ({name} took {time.monotonic() - t0:.0f} s)", flush=True)
                if out:  # after every workload: a later failure loses nothing
                    out.write_text(json.dumps(result(), indent=1))
        finally:
            rack.down()
    return result()


PAPER_HEAD = (f"{'rate':>8s} {'algo':5s} {'sync':9s} {'compute':>8s} {'comm':>8s} "
              f"{'iter':>8s} | {'m.comm':>8s} {'m.bare':>8s} {'m.iter':>8s} {'m.alone':>8s} "
              f"{'err':>6s} {'comm err':>8s} {'bare err':>8s}   (ms per iteration; measured | "
              f"modelled)")


def format_paper_row(r: dict[str, Any]) -> str:
    """One row of the paper-workload table (measured | modelled)."""
    return (f"{r['rate']:>8s} {r['algo']:5s} {r['sync']:9s} {r['compute_ms']:8.1f} "
            f"{r['comm_ms']:8.1f} {r['iter_ms']:8.1f} | {r['model_comm_ms']:8.1f} "
            f"{r['model_comm_bare_ms']:8.1f} {r['model_iter_ms']:8.1f} "
            f"{r['model_alone_iter_ms']:8.1f} {r['error']:+6.0%} {r['comm_error']:+8.0%} "
            f"{r['comm_bare_error']:+8.0%}")


def paper_markdown(res: dict[str, Any]) -> str:
    """The paper-workload table for ``docs/results.md``."""
    lines = ["| rate | algo | sync | measured compute ms | measured comm ms | measured iteration "
             "ms | modelled comm ms (with sync wait / network + host) | modelled iteration ms | "
             "modelled alone ms | iteration error | comm error (with wait / without) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in res["rows"]:
        lines.append(f"| {r['rate']} | {r['algo']} | {r['sync']} | {r['compute_ms']:.1f} | "
                     f"{r['comm_ms']:.1f} | {r['iter_ms']:.1f} | {r['model_comm_ms']:.1f} / "
                     f"{r['model_comm_bare_ms']:.1f} | {r['model_iter_ms']:.1f} | "
                     f"{r['model_alone_iter_ms']:.1f} | {r['error']:+.0%} | "
                     f"{r['comm_error']:+.0%} / {r['comm_bare_error']:+.0%} |")
    return "\n".join(lines)


def paper_main(args: argparse.Namespace) -> int:
    """``--paper``: the four paper workloads on the dilated racks, measured beside modelled."""
    rates = [r for r in args.rates.split(",") if r]
    algos = [a for a in args.algos.split(",") if a]
    syncs = tuple(s for s in args.syncs.split(",") if s)
    if args.paper_json:  # no measurement: the model again beside a saved run
        _rack_module()
        res = json.loads(Path(args.paper_json).read_text())
        rtt = {rk["rate"]: rk["rtt_switch_us"] for rk in res["racks"]}
        res["rows"] = [model_row(r, rtt[r["rate"]]) for r in res["rows"]]
        print(PAPER_HEAD)
        for r in res["rows"]:
            print(format_paper_row(r))
    else:
        print(PAPER_HEAD, flush=True)
        res = run_paper(rates, algos, args.hosts, args.iterations, args.timeout, syncs,
                        Path(args.out) if args.out else None)
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=1))
    print(paper_markdown(res))
    for f in res.get("failed", []):
        print(f"FAILED: {f['algo']} at {f['rate']} (hosts {f['hosts']})")
    if not res["rows"]:
        print("rack_rl_rows=0")
        return 1
    errs = [abs(r["error"]) for r in res["rows"]]
    cerrs = [abs(r["comm_error"]) for r in res["rows"]]
    berrs = [abs(r["comm_bare_error"]) for r in res["rows"]]
    print(f"rack_rl_rows={len(errs)} rack_rl_model_error={max(errs):.3f} "
          f"rack_rl_model_error_median={statistics.median(errs):.3f} "
          f"rack_rl_comm_model_error={max(cerrs):.3f} "
          f"rack_rl_comm_model_error_median={statistics.median(cerrs):.3f} "
          f"rack_rl_comm_bare_model_error={max(berrs):.3f} "
          f"rack_rl_comm_bare_model_error_median={statistics.median(berrs):.3f}")
    return 0


def plot(results: dict[str, Any], path: Path) -> None:
    """Stacked compute/comm bars per algorithm, sync and delay."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    algos = sorted({a for d in results.values() for a in d["algos"]})
    delays = list(results)
    fig, axes = plt.subplots(1, len(algos), figsize=(4.2 * len(algos), 3.8), squeeze=False)
    for ax, algo in zip(axes[0], algos, strict=True):
        xs, labels = 0.0, []
        for delay in delays:
            runs = results[delay]["algos"].get(algo)
            if not runs:
                continue
            for k, sync in enumerate(SYNCS):
                c, m = 1e3 * runs[sync]["compute_s"], 1e3 * runs[sync]["comm_s"]
                color = f"C{k}"
                ax.bar(xs, c, color=color, alpha=0.45)
                ax.bar(xs, m, bottom=c, color=color)
                labels.append((xs, f"{delay}µs\n{sync[:4]}"))
                xs += 1
            xs += 0.6
        ax.set_xticks([x for x, _ in labels], [t for _, t in labels], fontsize=6)
        ax.set_title(f"{algo}: compute (light) + comm (dark)")
        ax.set_ylabel("ms per iteration")
    fig.suptitle("4-host rack, 10 Gbit/s links: in-switch vs parameter server vs gloo")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """Entry point (see the module doc)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--paper", action="store_true",
                   help="the four paper workloads (--workload paper) on 1 and 2.5 Gbit/s racks, "
                        "measured beside the cluster model's prediction")
    p.add_argument("--quick", action="store_true",
                   help="with --paper: A2C only, 1 Gbit/s, 3 iterations, in-switch and gloo")
    p.add_argument("--rates", default=",".join(PAPER_RATES), help="with --paper")
    p.add_argument("--paper-json", default="",
                   help="with --paper: no measurement, the model beside a saved --out")
    p.add_argument("--syncs", default=",".join(SYNCS), help="with --paper")
    p.add_argument("--algos", default="ppo,a2c,dqn,ddpg")
    p.add_argument("--delays", default="0,10,50", help="one-way link delays, µs")
    p.add_argument("--rate", default="10gbit")
    p.add_argument("--hosts", type=int, default=4)
    p.add_argument("--iterations", type=int, default=ITERATIONS_DEFAULT,
                   help="iterations per run (about; --paper: exactly, default 5)")
    p.add_argument("--packet-elems", "--elems", type=int, default=None,
                   help="switch packet size P (elements per packet) of the inswitch runs "
                        "(default: netrl's; --elems is the old name)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per compare")
    p.add_argument("--out", default=None, help="JSON of every figure")
    p.add_argument("--plot", default=None, help="PNG of the table")
    args = p.parse_args(argv)
    if args.paper:
        if args.quick:
            args.algos, args.rates, args.iterations = "a2c", "1gbit", 3
            args.syncs = "inswitch,allreduce"
        elif args.iterations == ITERATIONS_DEFAULT:
            args.iterations = PAPER_ITERATIONS
        return paper_main(args)
    rackmod = _rack_module()
    algos = [a for a in args.algos.split(",") if a]
    delays = [float(d) for d in args.delays.split(",") if d]
    results: dict[str, Any] = {}
    figures: dict[str, float] = {}
    runs = Path(tempfile.mkdtemp(prefix="bench_rack_"))
    print(f"{'delay':>6s} {'algo':5s} {'sync':9s} {'compute ms':>10s} {'comm ms':>8s} "
          f"{'iter ms':>8s}", flush=True)
    for delay in delays:
        dkey = f"{delay:g}"
        rack = rackmod.Rack(rackmod.RackConfig(
            prefix=rackmod.unique_prefix("nrb"), hosts=args.hosts, rate=args.rate,
            delay_us=delay, max_elems=16352))
        try:
            rack.up()
            rtt = sorted(rackmod.measure_rtt(rack, 0, None, n=300))
            entry: dict[str, Any] = {
                "rtt_switch_us": {"median": 1e6 * statistics.median(rtt),
                                  "p10": 1e6 * rtt[len(rtt) // 10],
                                  "p90": 1e6 * rtt[9 * len(rtt) // 10]},
                "algos": {}}
            figures[f"rtt_switch_us_d{dkey}"] = round(entry["rtt_switch_us"]["median"], 1)
            print(f"{dkey:>6s} rtt to switch: median {entry['rtt_switch_us']['median']:.1f} µs "
                  f"(p10 {entry['rtt_switch_us']['p10']:.1f}, "
                  f"p90 {entry['rtt_switch_us']['p90']:.1f})", flush=True)
            for algo in algos:
                t0 = time.monotonic()
                res = run_compare(rack, algo, args.iterations, args.packet_elems, runs,
                                  f"{algo}-d{dkey}", args.timeout)
                entry["algos"][algo] = res
                for sync, r in res.items():
                    c, m = 1e3 * r["compute_s"], 1e3 * r["comm_s"]
                    figures[f"{algo}_{sync}_d{dkey}_compute_ms"] = round(c, 2)
                    figures[f"{algo}_{sync}_d{dkey}_comm_ms"] = round(m, 2)
                    print(f"{dkey:>6s} {algo:5s} {sync:9s} {c:10.2f} {m:8.2f} {c + m:8.2f}",
                          flush=True)
                print(f"       ({algo} compare took {time.monotonic() - t0:.0f} s)", flush=True)
            results[dkey] = entry
        finally:
            rack.down()
        if args.out:
            Path(args.out).write_text(json.dumps(results, indent=1))
    ppo = results.get("10", {}).get("algos", {}).get("ppo")
    if ppo:
        it = {s: ppo[s]["compute_s"] + ppo[s]["comm_s"] for s in SYNCS}
        figures["rack_inswitch_vs_gloo"] = round(it["allreduce"] / it["inswitch"], 3)
        figures["rack_inswitch_vs_ps"] = round(it["ps"] / it["inswitch"], 3)
    else:
        figures["rack_inswitch_vs_gloo"] = math.nan
        figures["rack_inswitch_vs_ps"] = math.nan
    if args.plot and results:
        plot(results, Path(args.plot))
    print(" ".join(f"{k}={v}" for k, v in figures.items()))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
