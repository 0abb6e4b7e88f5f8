#!/usr/bin/env python3
"""Per-iteration compute and communication of the papers' four workloads, per sync strategy.

For each workload of :data:`rl.workloads.PAPER` (DQN and A2C on ``ALE/Pong-v5``
with the Nature CNN, PPO and DDPG on ``HalfCheetah-v5``), one bounded run
(``netrl train --workload paper --iterations N``, N workers on this machine, the
soft switch with its native engine) per strategy: ``inswitch/sync``, ``ps/sync``,
``allreduce/sync`` (gloo) and ``inswitch/async``. DQN and DDPG use a local replay
buffer (the paper workloads' records do not fit the switch's 128-byte records),
so communication is the gradient exchange alone (``grad_comm_s``; a worker's
``comm_s`` also counts its replay calls). The first iteration of every worker
is left out (warm-up: replay filling, lazy initialisation).

Prints a table and writes ``docs/data/workloads.json`` (``--out``), which the
cluster model (``scripts/cluster_model.py``) reads. Its schema (version 1)::

    {
      "schema": 1,
      "generated": "2026-12-01T07:30:00Z",         # UTC
      "host": {"hostname": str, "cpus": int, "platform": str, "python": str,
               "torch": str, "switch": "soft (native engine)",
               "loadavg_at_start": [float, float, float]},   # other load on the machine
      "workers": int,                               # N of every run
      "workloads": {
        "<algo>_<atari|mujoco>": {                  # dqn_atari, a2c_atari, ppo_mujoco, ddpg_mujoco
          "algo": str, "env": str,
          "params": int,                            # elements of one gradient (from the model)
          "grad_bytes": int,                        # fp32: 4 * params
          "paper_grad_bytes": int,                  # what the iSwitch paper states
          "iterations": int,                        # --iterations of each run
          "rounds_per_iteration": float | null,     # gradient exchanges per iteration
                                                    # (PPO: epochs x minibatches; else 1)
          "compute_s": {"mean": float, "median": float, "n": int},
                                                    # per iteration, pooled over the ok runs
                                                    # (null, null, 0 when none is ok)
          "compute_cpu_s": {"mean", "median", "n"}, # the same in CPU seconds of the worker
                                                    # thread outside the gradient exchange:
                                                    # compute on a core of its own
          "strategies": {
            "<sync>/<mode>": {                      # inswitch/sync, ps/sync, allreduce/sync,
                                                    # inswitch/async
              "status": "ok" | "refused" | "failed",
              "reason": str,                        # refused/failed only (the error's text)
              "compute_s": {"mean", "median", "n"}, # per iteration, this run
              "compute_cpu_s": {"mean", "median", "n"},
              "comm_s": {"mean", "median", "n"},    # gradient communication per iteration
              "iteration_s": {"mean", "median", "n"},   # compute + comm, per iteration
              "wall_s": float                       # the whole run, launch to exit
            }
          }
        }
      }
    }

Statistics are over (worker, iteration) pairs after the first iteration; times
are seconds. ``comm_s`` is time a worker spent blocked in the gradient exchange:
on a shared machine it includes waiting for the slowest worker (skew), not only
the transfer; per round it is ``comm_s / rounds_per_iteration``. A strategy is ``refused`` when the sync strategy declines the
model (in-switch async above S*P elements until that limit is lifted), ``failed``
for any other error. The output ends with one line of ``key=value``:
``<workload>_compute_ms``, ``<workload>_compute_cpu_ms``, ``<workload>_grad_bytes`` and
``<workload>_comm_ms_<sync>_<mode>`` (medians, ms; ``refused`` where refused)::

    python scripts/bench_workloads.py                 # all four, 4 workers
    python scripts/bench_workloads.py --algos ppo --workers 2 --out /tmp/w.json
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import os
import platform
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

STRATEGIES = ("inswitch/sync", "ps/sync", "allreduce/sync", "inswitch/async")
"""The runs made per workload, ``<sync>/<mode>``."""
ITERATIONS = {"dqn": 20, "a2c": 20, "ppo": 4, "ddpg": 30}
"""Default --iterations per algorithm (a PPO iteration is 64 gradient exchanges)."""
DOMAIN = {"dqn": "atari", "a2c": "atari", "ppo": "mujoco", "ddpg": "mujoco"}
REFUSED = "async in-switch needs one round per slot"
"""Text of the error :class:`rl.sync.InSwitchSync` raises for a model it refuses."""


def stats(values: list[float]) -> dict[str, float | int | None]:
    """Mean, median and count of ``values`` (None when empty)."""
    if not values:
        return {"mean": None, "median": None, "n": 0}
    return {"mean": statistics.fmean(values), "median": statistics.median(values),
            "n": len(values)}


def read_iterations(run_dir: Path) -> tuple[list[float], list[float], list[float]]:
    """Per-iteration compute, gradient communication and compute CPU seconds of a run,
    first iteration of every worker left out (``grad_comm_s`` where the worker logs it,
    else ``comm_s``)."""
    compute, comm, cpu = [], [], []
    with open(run_dir / "iterations.csv", newline="") as f:
        for row in csv.DictReader(f):
            if int(row["iteration"]) <= 1:
                continue
            metrics = json.loads(row["metrics"])
            compute.append(float(row["compute_s"]))
            comm.append(float(metrics.get("grad_comm_s", row["comm_s"])))
            cpu.append(float(metrics["compute_cpu_s"]))
    return compute, comm, cpu


def run_one(algo: str, sync: str, mode: str, *, workers: int, iterations: int, seed: int,
            run_dir: Path) -> tuple[dict[str, Any], float]:
    """One bounded run; returns its entry of ``strategies`` and its rounds per iteration."""
    from rl.cli import build_parser, train_once

    argv = ["train", "--workload", "paper", "--algo", algo, "--workers", str(workers),
            "--sync", sync, "--mode", mode, "--iterations", str(iterations),
            "--seed", str(seed), "--no-progress", "--no-tensorboard"]
    args = build_parser(algo).parse_args(argv)
    args.store, args.launcher = None, "process"
    t0 = time.time()
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            summary = train_once(args, sync, run_dir)
    except (RuntimeError, ValueError) as e:
        text = str(e)
        status = "refused" if REFUSED in text else "failed"
        reason = next((ln.strip() for ln in reversed(text.splitlines())
                       if "Error" in ln), text.splitlines()[-1] if text else "")
        return {"status": status, "reason": reason[:300], "wall_s": time.time() - t0}, 0.0
    wall = time.time() - t0
    compute, comm, cpu = read_iterations(run_dir)
    r0 = summary.results[0]
    rounds = r0.rounds / max(1, r0.iterations)
    return {"status": "ok", "compute_s": stats(compute), "compute_cpu_s": stats(cpu),
            "comm_s": stats(comm),
            "iteration_s": stats([a + b for a, b in zip(compute, comm, strict=True)]),
            "wall_s": wall}, rounds


def bench(algos: list[str], strategies: list[str], *, workers: int,
          iterations: dict[str, int], seed: int, runs: Path) -> dict[str, Any]:
    """Every (workload, strategy) run; the ``workloads.json`` document."""
    import torch

    from rl.workloads import PAPER, gradient_size

    doc: dict[str, Any] = {
        "schema": 1, "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": {"hostname": socket.gethostname(), "cpus": os.cpu_count(),
                 "platform": platform.platform(), "python": platform.python_version(),
                 "torch": torch.__version__, "switch": "soft (native engine)",
                 "loadavg_at_start": list(os.getloadavg())},
        "workers": workers, "workloads": {}}
    for algo in algos:
        wl = PAPER[algo]
        params, nbytes = gradient_size(algo)
        name = f"{algo}_{DOMAIN[algo]}"
        entry: dict[str, Any] = {
            "algo": algo, "env": wl.env_id, "params": params, "grad_bytes": nbytes,
            "paper_grad_bytes": wl.paper_grad_bytes, "iterations": iterations[algo],
            "rounds_per_iteration": None, "compute_s": stats([]),
            "compute_cpu_s": stats([]), "strategies": {}}
        pooled: list[float] = []
        pooled_cpu: list[float] = []
        for strat in strategies:
            sync, mode = strat.split("/")
            print(f"  {name} {strat} ...", flush=True, file=sys.stderr)
            res, rounds = run_one(algo, sync, mode, workers=workers,
                                  iterations=iterations[algo], seed=seed,
                                  run_dir=runs / f"{name}-{sync}-{mode}")
            entry["strategies"][strat] = res
            if res["status"] == "ok":
                entry["rounds_per_iteration"] = rounds
                compute, _, cpu = read_iterations(runs / f"{name}-{sync}-{mode}")
                pooled += compute
                pooled_cpu += cpu
        entry["compute_s"] = stats(pooled)
        entry["compute_cpu_s"] = stats(pooled_cpu)
        doc["workloads"][name] = entry
    return doc


def table(doc: dict[str, Any]) -> str:
    """The per-iteration figures as a text table (ms, medians)."""
    lines = [f"{'workload':12s} {'params':>9s} {'grad':>9s} {'rnd/it':>6s} {'compute':>9s} "
             f"{'cpu':>9s}  "
             + "  ".join(f"{s:>15s}" for s in STRATEGIES)]
    for name, e in doc["workloads"].items():
        cells = []
        for s in STRATEGIES:
            r = e["strategies"].get(s)
            if r is None:
                cells.append(f"{'-':>15s}")
            elif r["status"] != "ok":
                cells.append(f"{r['status']:>15s}")
            else:
                cells.append(f"{1e3 * r['comm_s']['median']:12.1f} ms")
        rounds = e["rounds_per_iteration"]
        compute, cpu = e["compute_s"]["median"], e["compute_cpu_s"]["median"]
        lines.append(f"{name:12s} {e['params']:9d} {e['grad_bytes']:9d} "
                     + (f"{rounds:6.0f} " if rounds is not None else f"{'-':>6s} ")
                     + (f"{1e3 * compute:6.1f} ms " if compute is not None else f"{'-':>9s} ")
                     + (f"{1e3 * cpu:6.1f} ms  " if cpu is not None else f"{'-':>9s}  ")
                     + "  ".join(cells))
    lines.append("(medians per iteration; compute: wall, cpu: CPU of the worker thread; "
                 "columns per strategy: gradient communication)")
    return "\n".join(lines)


def figures(doc: dict[str, Any]) -> dict[str, str]:
    """The final ``key=value`` line's figures."""
    kv: dict[str, str] = {}
    for name, e in doc["workloads"].items():
        compute, cpu = e["compute_s"]["median"], e["compute_cpu_s"]["median"]
        kv[f"{name}_compute_ms"] = "failed" if compute is None else f"{1e3 * compute:.2f}"
        kv[f"{name}_compute_cpu_ms"] = "failed" if cpu is None else f"{1e3 * cpu:.2f}"
        kv[f"{name}_grad_bytes"] = str(e["grad_bytes"])
        for s, r in e["strategies"].items():
            key = f"{name}_comm_ms_{s.replace('/', '_')}"
            kv[key] = f"{1e3 * r['comm_s']['median']:.2f}" if r["status"] == "ok" \
                else r["status"]
    return kv


def main(argv: list[str] | None = None) -> int:
    """Run the bench, print the table, write the JSON, print the key=value line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--algos", default="dqn,a2c,ppo,ddpg")
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--iterations", type=int, default=None,
                        help="per run (default: 20 DQN and A2C, 4 PPO, 30 DDPG); "
                             "the first is warm-up")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default=str(REPO / "docs" / "data" / "workloads.json"))
    parser.add_argument("--runs-dir", default=None, help="keep the runs here (default: a "
                                                        "temporary folder)")
    args = parser.parse_args(argv)
    algos = [a.strip() for a in args.algos.split(",") if a.strip()]
    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    iters = {a: args.iterations or ITERATIONS[a] for a in algos}
    with tempfile.TemporaryDirectory(prefix="bench_workloads_") as tmp:
        runs = Path(args.runs_dir) if args.runs_dir else Path(tmp)
        doc = bench(algos, strategies, workers=args.workers, iterations=iters, seed=args.seed,
                    runs=runs)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n")
    print(table(doc))
    print(f"wrote {out}")
    print(" ".join(f"{k}={v}" for k, v in figures(doc).items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
