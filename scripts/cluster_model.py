#!/usr/bin/env python3
"""A calibrated cluster model: per-iteration time of PS, ring all-reduce and in-switch aggregation.

An analytic model of one data-parallel RL iteration on N workers behind one
switch (or a leaf/root tree of them), for the parameter server (``ps``),
ring all-reduce (``allreduce``), in-switch aggregation as this project does
it (``inswitch``: per-packet streaming with a window of slots) and as the
iSwitch paper describes it (``iswitch``), in sync and async mode, for 4-64
workers at 10/40/100 GbE with the link delay as a parameter. Its inputs are
measured on this machine, each read from a file that says where it came
from:

* compute per iteration of the papers' workloads: ``--workloads``
  (``docs/data/workloads.json``, written by ``scripts/bench_workloads.py``);
* host stack costs per aggregation round of the soft switch client, the TCP
  parameter server and gloo, and the sync wait of N processes on this
  machine's cores: ``--host-costs`` (``docs/data/host_costs.json``, written by
  this script's ``--calibrate`` mode);
* the switch latency in clocks and beats per clock of ``grad_agg``
  (``scripts/bench_grad_agg.py --no-synth``, run by ``--calibrate``), at the
  200 MHz clock;
* the rack of network namespaces (``docs/rack.md``'s measured table, parsed
  into ``docs/data/rack.json`` by ``--extract-rack``), which validates the
  model at 4 workers and link delays 0 and 50 us;
* the replay latencies of ``scripts/bench_replay_host.py`` (``--replay``,
  ``docs/data/replay_latency.json``) for PDP'22's cuts.

The model (one aggregation of G gradient bytes; ``hop`` = one link crossing =
link delay d; ``ser(x)`` = x wire bytes over the link rate; ``h_s`` = the
calibrated host cost of strategy s (see :class:`HostCost` for how it carries
from the calibration's 4 workers to N: PS x N/4, ring (N-1)/3 steps' worth of
G 4/N, in-switch unchanged); beyond
``--ports`` (MAX_MEMBERS = 8) workers a leaf layer doubles every path's links)::

    ps        4 hops (8 in a tree) + ser(N G) in at the PS NIC + ser(N G) out + h_ps(G, N)
    allreduce 2(N-1) steps of 2 hops (4 in a tree): (4N-4) hops
              + ser(2(N-1)/N G) + h_ring(G, N)
    inswitch  RTT_1 + (C-1) max(ser(chunk), RTT_1 / S) + h_sw(G)
              RTT_1 = 2 hops (4 in a tree) + store-and-forward of one chunk per switch crossed
              C = ceil(elements / P) chunks, S slots in flight (the window)
    iswitch   RTT_1 + (C-1) ser(chunk) + h_sw(G)      (no window: "2 hops, on the fly")

    sync   iteration = compute + E (aggregation + w)
    async  iteration = max(compute, E aggregation)   (threshold H <= N; for the
           PS, aggregation = 4 hops + ser(N G) + h_ps(G, N): its full-duplex NIC
           takes N pushes in while N pulls go out, and its host handles N)

E is the number of aggregation rounds per iteration and w the sync wait per
round: zero on dedicated machines (the papers' setup), and on this machine
(N processes sharing 2 cores, as on the rack) kappa_s(c) x c for a round
after c seconds of compute (PPO: the rollout before the first round, the
minibatch updates before the others, split as measured by
``--extract-rack``), kappa measured by ``--calibrate`` with fixed CPU work
between rounds.
Async with threshold H: a round completes at the H-th arrival; with N equal
workers that is the last one, so H changes staleness, not time, in this model.

The comm-only rows of the network-bound rack (``scripts/rack_allreduce.py``) are
predicted by ``scripts/cluster_comm.py`` (``--comm RESULT.json``: each row's error and
``model_comm_error``, the largest).

Usage::

    python scripts/cluster_model.py --calibrate            # host_costs.json (~8 min, 4 processes)
    python scripts/cluster_model.py --calibrate --add-repeats   # 3 more repeats, select from all
    python scripts/cluster_model.py --extract-rack         # docs/rack.md -> docs/data/rack.json
    python scripts/cluster_model.py [--workloads PATH] [--replay PATH] [--plots docs]
        [--markdown TABLES.md] [--json FIGURES.json] [--rate 10] [--delay-us 1]

prints the validation table, the papers' comparison and one last line of
``key=value``: ``model_vs_rack_error`` (largest relative error of modelled
vs measured communication per iteration over the rack rows at 0 and 50 us),
``dqn_sync_vs_ps``, ``dqn_async_vs_ps`` (PS iteration time over ours, papers'
setup), ``ppo_sync_scaling_12`` (ours, 12 workers' throughput over 4's),
and more.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from cluster_analytic import (  # noqa: E402  (re-exported: tests/test_cluster_model.py)
    ALGOS,
    CALIBRATION_WORKERS,
    CLOCK_HZ,
    DATA,
    ETH_FRAMING,
    HOST_STRATEGY,
    PAPER,
    STRATEGIES,
    TCP_HEADERS,
    Breakdown,
    HostCost,
    Network,
    Workload,
    aggregation,
    host_costs_from,
    iteration,
    latency_hops,
    matched_scale,
    papers,
    papers_network,
    rack_network,
    rack_workloads,
    read_json,
    replay_cuts,
    scaling,
    tcp_wire_bytes,
    tree_levels,
    validate,
    validate_local,
    workloads_from,
)
from cluster_calibration import (  # noqa: E402
    RACK_ROW,
    RACK_RTT,
    calibrate,
    extract_rack,
    loopback_rtt_us,
    parse_rack_md,
    ppo_compute_profile,
    rack_workload_sizes,
    rtl_figures,
    select_repeats,
)
from cluster_comm import (  # noqa: E402
    HostCalibration,
    comm_rows_error,
    format_comm_errors,
    predict_s,
)
from cluster_report import make_plots, markdown, summary_line  # noqa: E402

from hostdrv.wire.consts import MAX_ELEMS  # noqa: E402

__all__ = [
    "ALGOS", "CALIBRATION_WORKERS", "CLOCK_HZ", "DATA", "ETH_FRAMING", "HOST_STRATEGY", "PAPER",
    "HostCalibration", "comm_rows_error", "format_comm_errors", "predict_s",
    "RACK_ROW", "RACK_RTT", "STRATEGIES", "TCP_HEADERS", "Breakdown", "HostCost", "Network",
    "Workload", "aggregation", "calibrate", "extract_rack", "host_costs_from", "iteration",
    "latency_hops", "loopback_rtt_us", "main", "make_plots", "markdown", "matched_scale", "papers",
    "papers_network", "parse_rack_md", "ppo_compute_profile", "rack_network", "rack_workload_sizes",
    "rack_workloads", "read_json", "replay_cuts", "rtl_figures", "scaling", "select_repeats",
    "summary_line", "tcp_wire_bytes", "tree_levels", "validate", "validate_local", "workloads_from",
]

def main(argv: list[str] | None = None) -> int:
    """Entry point (see the module doc)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calibrate", action="store_true", help="measure host costs, write --host-costs")
    ap.add_argument("--extract-rack", action="store_true", help="docs/rack.md -> --rack")
    ap.add_argument("--host-costs", type=Path, default=DATA / "host_costs.json")
    ap.add_argument("--rack", type=Path, default=DATA / "rack.json")
    ap.add_argument("--workloads", type=Path, default=DATA / "workloads.json")
    ap.add_argument("--replay", type=Path, default=DATA / "replay_latency.json")
    ap.add_argument("--rate", type=float, default=10.0, help="papers' setup link rate, Gbit/s")
    ap.add_argument("--delay-us", type=float, default=1.0, help="papers' setup link delay")
    ap.add_argument("--replay-rate", type=float, default=40.0, help="PDP'22's link rate, Gbit/s")
    ap.add_argument("--packet-elems", "--elems", type=int, default=MAX_ELEMS,
                    help="P (elements per packet) of the papers' setup; --elems: the old name")
    ap.add_argument("--compute", choices=("cpu", "wall"), default="cpu",
                    help="papers' setup: the workloads' CPU seconds per iteration (a core per "
                         "worker) or their wall time on this shared machine")
    ap.add_argument("--plots", type=Path, default=None, help="folder for the results_*.png")
    ap.add_argument("--json", type=Path, default=None, help="write every figure here")
    ap.add_argument("--markdown", type=Path, default=None, help="write docs/results.md's tables here")
    ap.add_argument("--sizes", default="2048,16384,131072,1048576",
                    help="--calibrate: fp32 elements per round")
    ap.add_argument("--loads-ms", default="1,2.5,5,12,25,60",
                    help="--calibrate: CPU work per round (one process alone), ms")
    ap.add_argument("--reps", type=int, default=40, help="--calibrate: rounds per size")
    ap.add_argument("--repeats", type=int, default=3, help="--calibrate: repeats of everything")
    ap.add_argument("--add-repeats", action="store_true",
                    help="--calibrate: keep the repeats already in --host-costs and select "
                         "from all of them")
    ap.add_argument("--no-rtl", action="store_true", help="--calibrate: skip the Verilator run")
    ap.add_argument("--comm", type=Path, default=None,
                    help="predict every row of a `scripts/rack_allreduce.py --json` result, "
                         "print each row's error and end with model_comm_error=")
    ap.add_argument("--host-allreduce", type=Path, default=None,
                    help="--comm: the one-host calibration (default docs/data/host_allreduce.json)")
    args = ap.parse_args(argv)

    if args.comm:
        cal = HostCalibration.load(args.host_allreduce) if args.host_allreduce else None
        _pred, err = comm_rows_error(read_json(args.comm), cal)
        print(format_comm_errors(err))
        print(f"model_comm_error={err['max']:.3f}")
        return 0
    if args.calibrate:
        data = calibrate([int(s) for s in args.sizes.split(",")],
                         [float(s) for s in args.loads_ms.split(",")], 2048, args.reps,
                         not args.no_rtl, args.repeats)
        if args.host_costs.exists():
            prev = read_json(args.host_costs)
            if "rtl" not in data:
                data["rtl"] = prev.get("rtl")
            prev_sizes = prev.get("sizes_elems") or [
                int(g) // 4 for g in prev["strategies"]["ps"]["grad_bytes"]]
            prev_loads = [p["solo_compute_s"] for p in prev["sync_wait"]["ps"]]
            loads = [p["solo_compute_s"] for p in data["sync_wait"]["ps"]]
            if args.add_repeats and (prev_sizes, prev_loads) != (data["sizes_elems"], loads):
                print("warning: --add-repeats: other sizes or loads in the previous file; "
                      "not merged", file=sys.stderr)
            elif args.add_repeats:
                data["all"] = prev.get("all", []) + data["all"]
                data["date"] = f"{prev.get('date')} .. {data['date']}"
                select_repeats(data)
        args.host_costs.parent.mkdir(parents=True, exist_ok=True)
        args.host_costs.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {args.host_costs}")
        return 0
    if args.extract_rack:
        data = extract_rack(ROOT / "docs" / "rack.md")
        args.rack.parent.mkdir(parents=True, exist_ok=True)
        args.rack.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {args.rack}: {len(data['rows'])} rows")
        return 0

    host_data = read_json(args.host_costs)
    host = host_costs_from(host_data)
    figures: dict[str, Any] = {"inputs": {"host_costs": str(args.host_costs)}}
    val = validate(read_json(args.rack), host_data) if args.rack.exists() else None
    if val:
        figures["validation"] = val
        print("== model vs rack (4 hosts, 10 Gbit/s, comm ms per iteration)")
        print(f"{'algo':5s} {'delay':>5s} {'sync':9s} {'rack':>8s} {'model':>8s} "
              f"{'net+host':>8s} {'error':>7s}")
        for r in val["rows"]:
            print(f"{r['algo']:5s} {r['delay_us']:5g} {r['sync']:9s} {r['rack_comm_ms']:8.1f} "
                  f"{r['model_comm_ms']:8.1f} {r['model_network_host_ms']:8.2f} "
                  f"{r['error']:+7.0%}")
        print(f"max |error| {val['max_error']:.0%}, median {val['median_error']:.0%}; "
              f"without the sync wait (network + host only) max {val['max_error_without_wait']:.0%}")
    pap = None
    local = None
    workloads: dict[str, Workload] = {}
    net = papers_network(host_data, args.rate, args.delay_us, args.packet_elems)
    if args.workloads.exists():
        wdata = read_json(args.workloads)
        workloads = workloads_from(wdata, str(args.workloads), args.compute)
        local = validate_local(wdata, host_data)
        figures["validation_local"] = local
        print(f"== model vs the paper workloads on this machine: max |error| "
              f"{local['max_error']:.0%}, median {local['median_error']:.0%} over "
              f"{len(local['rows'])} runs")
        pap = papers(workloads, host, net)
        figures["papers"] = pap
        figures["workloads"] = {a: vars(w) for a, w in workloads.items()}
        print(f"== papers' setup: 4 workers, {args.rate:g} GbE, {args.delay_us:g} us links, "
              f"P = {args.packet_elems}; iteration time / PS's (model | paper)")
        for a, w in workloads.items():
            v = pap["vs_ps"][f"{a}_sync"]
            va = pap["vs_ps"][f"{a}_async"]
            print(f"{a:5s} G {w.grad_bytes / 1e3:9.1f} kB compute {w.compute_s * 1e3:8.1f} ms | "
                  f"sync allreduce {v['allreduce']:.2f} | {PAPER['vs_ps']['allreduce'][a]:.2f}  "
                  f"iswitch {v['iswitch']:.2f} | {PAPER['vs_ps']['iswitch'][a]:.2f}  "
                  f"ours {v['inswitch']:.2f}  async ours {va['inswitch']:.2f}")
        if "ppo_scaling" in pap:
            for s, ys in pap["ppo_scaling"].items():
                ref = PAPER["ppo_scaling"].get(s)
                print(f"PPO scaling {s:9s} 6/9/12: " + " ".join(f"{y:.2f}" for y in ys)
                      + (f"  | paper {ref}" if ref else ""))
        print("matched compute (the scale of this machine's compute at which the modelled "
              "iswitch/PS equals the paper's; the rest is predicted there):")
        for a, m in pap["matched"].items():
            print(f"{a:5s} scale {m['scale']:.4f}{'' if m['reached'] else ' (not reached)'} "
                  f"floor {m['floor']:.2f} (PS aggregation share "
                  f"{m['agg_fraction_ps']:.0%}): allreduce {m['sync']['allreduce']:.2f} | "
                  f"{PAPER['vs_ps']['allreduce'][a]:.2f}  ours {m['sync']['inswitch']:.2f}  "
                  f"async ours {m['async']['inswitch']:.2f}")
        if "ppo_scaling_matched" in pap:
            for s, ys in pap["ppo_scaling_matched"].items():
                ref = PAPER["ppo_scaling"].get(s)
                print(f"PPO scaling, matched compute, {s:9s} 6/9/12: "
                      + " ".join(f"{y:.2f}" for y in ys) + (f"  | paper {ref}" if ref else ""))
        print(f"headline (ours over PS, best workload): sync {pap['headline_sync']:.2f} "
              f"({pap['headline_sync_algo']}) | paper 3.66; async {pap['headline_async']:.2f} "
              f"({pap['headline_async_algo']}) | paper 3.71; matched compute: sync "
              f"{pap['headline_sync_matched']:.2f}, async {pap['headline_async_matched']:.2f}")
        if args.plots and val:
            for p in make_plots(args.plots, val, pap, workloads, host, net):
                print(f"wrote {p}")
    else:
        print(f"(no {args.workloads}: the papers' comparison needs scripts/bench_workloads.py's "
              "output)")
    cuts = None
    if args.replay.exists():
        cuts = replay_cuts(read_json(args.replay),
                           replace(Network(), rate_gbps=args.replay_rate, delay_us=args.delay_us))
        figures["replay"] = cuts
        for k, v in cuts.items():
            print(f"PDP'22 {k}: in-network {v['innet_us']:.1f} us vs server {v['server_us']:.1f} us"
                  f" -> cut {v['cut']:.1%} (loopback only {v['cut_loopback']:.1%}); paper "
                  f"{PAPER['pdp22_cut'][k][0]:.1%}-{PAPER['pdp22_cut'][k][1]:.1%}")
    if args.markdown:
        args.markdown.write_text(markdown(val, pap, workloads, cuts, host_data, net, local))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1, default=str) + "\n")
    print(summary_line(val, pap, cuts, local))
    return 0


if __name__ == "__main__":
    sys.exit(main())
