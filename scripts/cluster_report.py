"""The cluster model's output (``scripts/cluster_model.py``): the figures of
``docs/results.md`` (``--plots``), its tables (``--markdown``) and the final ``key=value`` line.
"""

from __future__ import annotations

import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from cluster_analytic import (  # noqa: E402
    ALGOS,
    PAPER,
    STRATEGIES,
    HostCost,
    Network,
    Workload,
    host_costs_from,
    iteration,
    scaling,
)

from hostdrv.wire.consts import MAX_MEMBERS  # noqa: E402


def make_plots(outdir: Path, val: dict[str, Any], pap: dict[str, Any],
               workloads: dict[str, Workload], host: dict[str, HostCost],
               pap_net: Network) -> list[Path]:
    """The four figures of docs/results.md."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outdir.mkdir(parents=True, exist_ok=True)
    paths = []
    colors = {s: f"C{i}" for i, s in enumerate(STRATEGIES)}
    # 1. iteration time by strategy and algorithm: compute (light) + comm (dark), / PS sync
    fig, axes = plt.subplots(2, 2, figsize=(11, 6.5), sharey="row")
    algos = [a for a in ALGOS if a in workloads]
    for row, matched in enumerate((False, True)):
        for col, mode in enumerate(("sync", "async")):
            ax = axes[row][col]
            for i, a in enumerate(algos):
                w = workloads[a]
                if matched:
                    w = replace(w, compute_s=w.compute_s * pap["matched"][a]["scale"])
                ref = iteration("ps", "sync", 4, w, pap_net, host)["total"]
                for k, s in enumerate(STRATEGIES):
                    t = iteration(s, mode, 4, w, pap_net, host)
                    x = i + 0.2 * k - 0.3
                    ax.bar(x, t["compute"] / ref, 0.2, color=colors[s], alpha=0.35)
                    ax.bar(x, t["comm"] / ref, 0.2, bottom=t["compute"] / ref, color=colors[s],
                           label=s if i == 0 else None)
            ax.set_xticks(range(len(algos)), [a.upper() for a in algos])
            ax.set_title(f"{mode}, {'matched' if matched else 'measured'} compute", fontsize=9)
            ax.set_ylabel("iteration / PS sync iteration")
    axes[0][0].legend(fontsize=7)
    fig.suptitle("model, 4 workers, 10 GbE, 1 µs links: compute (light) + communication (dark)",
                 fontsize=10)
    fig.tight_layout()
    paths.append(outdir / "results_iteration.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    # 2. scaling to 64 workers (PPO and DQN at their measured compute)
    ns = [4, 6, 8, 9, 12, 16, 24, 32, 48, 64]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, rate in zip(axes, (10.0, 40.0, 100.0), strict=True):
        net = replace(pap_net, rate_gbps=rate)
        for algo, style in (("ppo", "o-"), ("dqn", "s--")):
            if algo not in workloads:
                continue
            w = workloads[algo]
            for s in STRATEGIES:
                ax.plot(ns, [scaling(s, n, 4, w, net, host) for n in ns], style, ms=3,
                        color=colors[s], label=f"{algo.upper()} {s}")
        ax.plot(ns, [n / 4 for n in ns], ":", color="grey", label="ideal")
        ax.axvline(MAX_MEMBERS + 0.5, color="grey", lw=0.5)
        ax.set_title(f"{rate:g} GbE, sync, measured compute", fontsize=9)
        ax.set_xlabel("workers (leaf/root beyond 8)")
        ax.set_ylabel("throughput / 4 workers'")
    axes[0].legend(fontsize=6, ncol=2)
    fig.tight_layout()
    paths.append(outdir / "results_scaling.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    # 3. model vs rack
    fig, ax = plt.subplots(figsize=(6, 5))
    for r in val["rows"]:
        k = ("inswitch", "ps", "allreduce").index(r["sync"])
        ax.scatter(r["rack_comm_ms"], r["model_comm_ms"], color=f"C{k}",
                   marker="o" if r["delay_us"] == 0 else "^")
        ax.annotate(f"{r['algo']}", (r["rack_comm_ms"], r["model_comm_ms"]), fontsize=6)
    lim = [1, 3000]
    ax.plot(lim, lim, "k:", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("rack: measured comm ms / iteration")
    ax.set_ylabel("model: comm ms / iteration")
    ax.set_title(f"rack, 4 hosts, 0 us (o) / 50 us (^); max error {val['max_error']:.0%}",
                 fontsize=9)
    for k, s in enumerate(("inswitch", "ps", "allreduce")):
        ax.scatter([], [], color=f"C{k}", label=s)
    ax.legend(fontsize=8)
    fig.tight_layout()
    paths.append(outdir / "results_rack.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    # 4. ours vs papers
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    ax = axes[0]
    algos = [a for a in ALGOS if a in workloads]
    x = np.arange(len(algos))
    series = [("paper all-reduce", [PAPER["vs_ps"]["allreduce"][a] for a in algos], "C1", 0.3),
              ("model all-reduce", [pap["vs_ps"][f"{a}_sync"]["allreduce"] for a in algos], "C1", 1),
              ("paper iSwitch", [PAPER["vs_ps"]["iswitch"][a] for a in algos], "C3", 0.3),
              ("model all-reduce, matched", [pap["matched"][a]["sync"]["allreduce"]
                                             for a in algos], "C1", 0.65),
              ("paper iSwitch", [PAPER["vs_ps"]["iswitch"][a] for a in algos], "C3", 0.3),
              ("model iswitch", [pap["vs_ps"][f"{a}_sync"]["iswitch"] for a in algos], "C3", 1),
              ("model ours", [pap["vs_ps"][f"{a}_sync"]["inswitch"] for a in algos], "C2", 1),
              ("model ours, matched", [pap["matched"][a]["sync"]["inswitch"] for a in algos],
               "C2", 0.65)]
    for k, (lab, ys, c, al) in enumerate(series):
        ax.bar(x + 0.12 * k - 0.39, ys, 0.12, label=lab, color=c, alpha=al)
    ax.set_ylim(0, 2.5)
    ax.set_title("sync, 4 workers; 'matched': compute scaled so that iswitch = paper",
                 fontsize=8)
    ax.axhline(1.0, color="grey", lw=0.5)
    ax.set_xticks(x, [a.upper() for a in algos])
    ax.set_ylabel("iteration time / PS's (sync)")
    ax.legend(fontsize=7)
    ax = axes[1]
    wn = PAPER["ppo_scaling"]["workers"]
    for s, c in (("iswitch", "C3"), ("ps", "C0"), ("allreduce", "C1")):
        ax.plot(wn, PAPER["ppo_scaling"][s], "o:", color=c, label=f"paper {s}")
        if "ppo_scaling" in pap:
            ax.plot(wn, pap["ppo_scaling"][s], "s-", color=c, label=f"model {s}")
        if "ppo_scaling_matched" in pap:
            ax.plot(wn, pap["ppo_scaling_matched"][s], "^--", color=c,
                    label=f"model {s}, matched")
    if "ppo_scaling" in pap:
        ax.plot(wn, pap["ppo_scaling"]["inswitch"], "s-", color="C2", label="model ours")
    ax.set_xlabel("workers")
    ax.set_ylabel("PPO sync speedup over 4 workers")
    ax.legend(fontsize=7)
    fig.tight_layout()
    paths.append(outdir / "results_papers.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    return paths


# ---------------------------------------------------------------------------
# markdown tables (docs/results.md)


def markdown(val: dict[str, Any] | None, pap: dict[str, Any] | None,
             workloads: dict[str, Workload], cuts: dict[str, Any] | None,
             host_data: dict[str, Any], pap_net: Network,
             local: dict[str, Any] | None = None) -> str:
    """The tables of docs/results.md, from the same figures the final line holds."""
    out: list[str] = []
    hc = host_costs_from(host_data)
    out += ["### Inputs: host cost of one aggregation round (4 workers, loopback)", "",
            "| strategy | " + " | ".join(f"{g / 4:.0f} elems" for g in
                                         host_data["strategies"]["ps"]["grad_bytes"]) + " |",
            "|---|" + "---|" * len(host_data["strategies"]["ps"]["grad_bytes"])]
    for name, st in host_data["strategies"].items():
        out.append(f"| {name} | " + " | ".join(f"{1e3 * v:.2f} ms" for v in st["round_s"]) + " |")
    out += ["", "| strategy | sync wait / compute per round (kappa) at rank 0's compute per round |",
            "|---|---|"]
    for name, h in hc.items():
        out.append(f"| {name} | " + ", ".join(f"{k:.2f} at {1e3 * c:.1f} ms" for c, k in h.kappa)
                   + " |")
    rtl = host_data.get("rtl", {})
    if rtl:
        out += ["", f"RTL: `grad_agg` {rtl['agg_latency_clocks']} clocks from the last input beat "
                f"to the first result beat, {rtl['agg_beats_per_clock']:.2f} beats per clock, "
                f"{rtl['data_width_bits']} bits at {rtl['clock_hz'] / 1e6:g} MHz "
                f"({rtl['agg_latency_clocks'] / rtl['clock_hz'] * 1e9:.0f} ns; datapath "
                f"{rtl['data_width_bits'] * rtl['clock_hz'] * rtl['agg_beats_per_clock'] / 1e9:.1f}"
                f" Gbit/s). Loopback UDP RTT {host_data['loopback_rtt_us']:.1f} us."]
    if val:
        out += ["", "### Model vs rack (4 hosts, 10 Gbit/s, communication ms per iteration)", "",
                "| algorithm | delay | sync | rack compute | rack comm | model comm "
                "| of which network + host | error |", "|---|---|---|---|---|---|---|---|"]
        for r in val["rows"]:
            out.append(f"| {r['algo'].upper()} | {r['delay_us']:g} µs | {r['sync']} | "
                       f"{r['compute_ms']:.1f} | {r['rack_comm_ms']:.1f} | {r['model_comm_ms']:.1f}"
                       f" | {r['model_network_host_ms']:.2f} | {r['error']:+.0%} |")
        by = ", ".join(f"{s} {e:.0%}" for s, e in val["max_error_by_sync"].items())
        out += ["", f"Max |error| {val['max_error']:.0%} (`model_vs_rack_error="
                f"{round(val['max_error'], 3)}`), median {val['median_error']:.0%}; by "
                f"strategy: {by}; network + host alone (no sync wait): max "
                f"{val['max_error_without_wait']:.0%}."]
    if local and local["rows"]:
        out += ["", "### Model vs the paper workloads on this machine (4 processes, loopback, "
                "comm ms per iteration)", "",
                "| workload | sync | compute | measured comm | model comm | error |",
                "|---|---|---|---|---|---|"]
        for r in local["rows"]:
            out.append(f"| {r['workload']} | {r['sync']} | {r['compute_ms']:.1f} | "
                       f"{r['measured_comm_ms']:.1f} | {r['model_comm_ms']:.1f} | "
                       f"{r['error']:+.0%} |")
        out += ["", f"Max |error| {local['max_error']:.0%}, median {local['median_error']:.0%}."]
    if pap:
        out += ["", "### Papers' setup: iteration time relative to PS (4 workers, sync)", "",
                "| workload | gradient | compute (measured, CPU) | all-reduce model / paper "
                "| iSwitch model / paper | ours | ours async / PS async | PS aggregation share |",
                "|---|---|---|---|---|---|---|---|"]
        for a, w in workloads.items():
            v, va = pap["vs_ps"][f"{a}_sync"], pap["vs_ps"][f"{a}_async"]
            out.append(f"| {a.upper()} | {w.grad_bytes / 1e3:.1f} kB | {1e3 * w.compute_s:.1f} ms"
                       f" | {v['allreduce']:.2f} / {PAPER['vs_ps']['allreduce'][a]:.2f} | "
                       f"{v['iswitch']:.2f} / {PAPER['vs_ps']['iswitch'][a]:.2f} | "
                       f"{v['inswitch']:.2f} | {va['inswitch']:.2f} | "
                       f"{pap['agg_fraction_ps'][a]:.0%} |")
        hi = PAPER["agg_fraction"][1]
        out += ["", "### One aggregation round alone (4 workers): network only / with host costs",
                "", "| workload | PS | all-reduce | ours | iSwitch-style | ours / PS "
                f"| paper-implied iSwitch / PS at {hi:.0%} aggregation |",
                "|---|---|---|---|---|---|---|"]
        for a, v in pap["aggregation_only"].items():
            wo, wh = v["network_only_ms"], v["with_host_ms"]
            implied = (PAPER["vs_ps"]["iswitch"][a] - (1 - hi)) / hi
            out.append(f"| {a.upper()} | " + " | ".join(
                f"{wo[s]:.3f} / {wh[s]:.2f} ms" for s in ("ps", "allreduce", "inswitch", "iswitch"))
                + f" | {wo['inswitch'] / wo['ps']:.2f} / {wh['inswitch'] / wh['ps']:.2f} | "
                f"{implied:.2f} |")
        out += ["", "### Papers' setup at matched compute", "",
                "| workload | compute scale | iSwitch/PS at zero compute | PS aggregation share "
                "| all-reduce model / paper | ours sync | ours async / PS async |",
                "|---|---|---|---|---|---|---|"]
        for a, m in pap["matched"].items():
            sc = f"{m['scale']:.4f}" if m["reached"] else f"{m['scale']:.4f} (not reached)"
            out.append(f"| {a.upper()} | {sc} | {m['floor']:.2f} | {m['agg_fraction_ps']:.0%} | "
                       f"{m['sync']['allreduce']:.2f} / {PAPER['vs_ps']['allreduce'][a]:.2f} | "
                       f"{m['sync']['inswitch']:.2f} | {m['async']['inswitch']:.2f} |")
        if "ppo_scaling" in pap:
            out += ["", "### PPO sync speedup over 4 workers (6 / 9 / 12 workers)", "",
                    "| strategy | model, measured compute | model, matched compute | paper |",
                    "|---|---|---|---|"]
            for s in ("inswitch", "iswitch", "ps", "allreduce"):
                ref = PAPER["ppo_scaling"].get(s)
                out.append(f"| {s} | " + " / ".join(f"{y:.2f}" for y in pap["ppo_scaling"][s])
                           + " | " + " / ".join(f"{y:.2f}" for y in pap["ppo_scaling_matched"][s])
                           + " | " + (" / ".join(f"{y:.2f}" for y in ref) if ref else "–")
                           + " |")
        big = [n for n in (8, 9, 16, 32, 64)]
        out += ["", "### Scaling to 64 workers (sync, measured compute, 1 µs links): throughput "
                "over 4 workers'", "",
                "| workload | link | strategy | " + " | ".join(f"{n} workers" for n in big) + " |",
                "|---|---|---|" + "---|" * len(big)]
        for a in ("ppo", "dqn"):
            if a not in workloads:
                continue
            wm = workloads[a]
            for rate in (10.0, 40.0, 100.0):
                net = replace(pap_net, rate_gbps=rate)
                for s in STRATEGIES:
                    out.append(f"| {a.upper()} | {rate:g} GbE | {s} | " + " | ".join(
                        f"{scaling(s, n, 4, wm, net, hc):.2f}" for n in big) + " |")
        out += ["", "### Link delay (sync, measured compute): iteration time / PS's", "",
                "| workload | link | workers | delay | all-reduce | ours | iSwitch-style |",
                "|---|---|---|---|---|---|---|"]
        for a in ("dqn", "ppo"):
            if a not in workloads:
                continue
            for rate, n in ((10.0, 4), (100.0, 4), (100.0, 64)):
                for d in (1.0, 10.0, 50.0, 200.0):
                    net = replace(pap_net, rate_gbps=rate, delay_us=d)
                    t = {s: iteration(s, "sync", n, workloads[a], net, hc)["total"]
                         for s in STRATEGIES}
                    out.append(f"| {a.upper()} | {rate:g} GbE | {n} | {d:g} µs | "
                               f"{t['allreduce'] / t['ps']:.2f} | {t['inswitch'] / t['ps']:.2f} | "
                               f"{t['iswitch'] / t['ps']:.2f} |")
        out += ["", "### Ours over PS, best of the four workloads (modelled / fitted, not measured)",
                "", "| mode | measured compute | matched compute | paper (reported) |",
                "|---|---|---|---|",
                f"| sync | modelled: {pap['headline_sync']:.2f} "
                f"({pap['headline_sync_algo'].upper()}) | fitted: "
                f"{pap['headline_sync_matched']:.2f} | 3.66 |",
                f"| async | modelled: {pap['headline_async']:.2f} "
                f"({pap['headline_async_algo'].upper()}) | fitted: "
                f"{pap['headline_async_matched']:.2f} | 3.71 |"]
    if cuts:
        out += ["", "### PDP'22: in-network replay vs a replay server (4 actors, 128-byte records,"
                " 40 GbE)", "", "| latency | in-network | server | model cut | paper cut |",
                "|---|---|---|---|---|"]
        for k, v in cuts.items():
            lo, hi = PAPER["pdp22_cut"][k]
            out.append(f"| {k.replace('_', ' ')} | {v['innet_us']:.1f} µs | {v['server_us']:.1f} µs"
                       f" | {v['cut']:.1%} | {lo:.1%}–{hi:.1%} |")
    return "\n".join(out) + "\n"


def summary_line(val: dict[str, Any] | None, pap: dict[str, Any] | None,
                 cuts: dict[str, Any] | None, local: dict[str, Any] | None = None) -> str:
    """The final ``key=value`` line."""
    kv: dict[str, Any] = {
        "model_vs_rack_error": round(val["max_error"], 3) if val else math.nan,
        "model_vs_rack_median_error": round(val["median_error"], 3) if val else math.nan,
        "model_vs_local_error": round(local["max_error"], 3) if local else math.nan}
    for a in ALGOS:
        for mode in ("sync", "async"):
            key = f"{a}_{mode}"
            v = pap["vs_ps"].get(key) if pap else None
            kv[f"{a}_{mode}_vs_ps"] = round(1 / v["inswitch"], 3) if v else math.nan
    sc = pap.get("ppo_scaling") if pap else None
    kv["ppo_sync_scaling_12"] = round(sc["inswitch"][-1], 3) if sc else math.nan
    kv["headline_sync"] = round(pap["headline_sync"], 3) if pap else math.nan
    kv["headline_async"] = round(pap["headline_async"], 3) if pap else math.nan
    if pap:
        for a in ALGOS:
            m = pap["matched"].get(a)
            if m:
                kv[f"{a}_compute_scale_matched"] = round(m["scale"], 4)
                kv[f"{a}_allreduce_vs_ps_matched"] = round(m["sync"]["allreduce"], 3)
        kv["headline_sync_matched"] = round(pap["headline_sync_matched"], 3)
        kv["headline_async_matched"] = round(pap["headline_async_matched"], 3)
        scm = pap.get("ppo_scaling_matched")
        kv["ppo_sync_scaling_12_matched"] = round(scm["inswitch"][-1], 3) if scm else math.nan
    if cuts:
        kv["replay_access_cut"] = round(cuts["replay_access"]["cut"], 3)
        kv["prioritized_cut"] = round(cuts["prioritized"]["cut"], 3)
    keep = ("model_vs_rack_error", "dqn_sync_vs_ps", "dqn_async_vs_ps", "ppo_sync_scaling_12")
    order = list(keep) + [k for k in kv if k not in keep]
    return " ".join(f"{k}={kv[k]}" for k in order)

