"""PNG plots of a run and of a comparison (matplotlib, Agg backend)."""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def _read_csv(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def rolling_mean(x: np.ndarray, n: int = 20) -> np.ndarray:
    """Mean of the last ``n`` values at each position (fewer at the start)."""
    c = np.cumsum(np.insert(x.astype(np.float64), 0, 0.0))
    idx = np.arange(1, len(x) + 1)
    lo = np.maximum(0, idx - n)
    return (c[idx] - c[lo]) / (idx - lo)


def episode_curve(run_dir: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(global steps, returns, rolling mean over 20 episodes) of a run."""
    rows = _read_csv(run_dir / "episodes.csv")
    steps = np.array([int(r["global_step"]) for r in rows])
    rets = np.array([float(r["return"]) for r in rows])
    times = np.array([float(r["time_s"]) for r in rows])
    order = np.argsort(times, kind="stable")
    steps, rets = steps[order], rets[order]
    return steps, rets, rolling_mean(rets) if len(rets) else rets


def iteration_split(run_dir: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(iteration, mean compute s, mean comm s) over workers."""
    by_it: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for r in _read_csv(run_dir / "iterations.csv"):
        by_it[int(r["iteration"])].append((float(r["compute_s"]), float(r["comm_s"])))
    its = np.array(sorted(by_it))
    comp = np.array([np.mean([c for c, _ in by_it[i]]) for i in its])
    comm = np.array([np.mean([m for _, m in by_it[i]]) for i in its])
    return its, comp, comm


def plot_run(run_dir: str | Path, title: str = "", target: float | None = None) -> list[Path]:
    """Write ``return.png`` and ``time_split.png`` for one run; return their paths."""
    run_dir = Path(run_dir)
    out: list[Path] = []
    steps, rets, mean = episode_curve(run_dir)
    if target is None:
        summary = run_dir / "summary.json"
        if summary.exists():
            from rl.targets import default_target

            target = default_target(json.loads(summary.read_text()).get("env_id", ""))
    fig, ax = plt.subplots(figsize=(7, 4))
    if len(steps):
        ax.scatter(steps, rets, s=4, alpha=0.25, label="episode return")
        ax.plot(steps, mean, lw=2, label="mean of last 20 episodes")
    if target is not None:
        ax.axhline(target, ls="--", c="gray", lw=1, label=f"solved ({target:g})")
    ax.set_xlabel("env steps (all workers)")
    ax.set_ylabel("return")
    ax.set_title(title or run_dir.name)
    if ax.get_legend_handles_labels()[0]:  # nothing to label: no episode ended, no target
        ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    out.append(run_dir / "return.png")
    fig.savefig(out[-1], dpi=110)
    plt.close(fig)

    its, comp, comm = iteration_split(run_dir)
    fig, ax = plt.subplots(figsize=(7, 4))
    if len(its):
        ax.stackplot(its, 1e3 * comp, 1e3 * comm, labels=["compute", "communication"],
                     alpha=0.8)
    ax.set_xlabel("iteration")
    ax.set_ylabel("time per iteration (ms, mean over workers)")
    ax.set_title(title or run_dir.name)
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    out.append(run_dir / "time_split.png")
    fig.savefig(out[-1], dpi=110)
    plt.close(fig)
    return out


def plot_compare(run_dirs: Sequence[str | Path], labels: Sequence[str], out: str | Path,
                 title: str = "", target: float | None = None) -> Path:
    """Side by side: return vs env steps, return vs wall time, per-iteration split."""
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    names, comps, comms = [], [], []
    for d, label in zip(run_dirs, labels, strict=True):
        d = Path(d)
        steps, _, mean = episode_curve(d)
        times = np.sort(np.array([float(r["time_s"]) for r in _read_csv(d / "episodes.csv")]))
        if len(steps):
            axes[0].plot(steps, mean, lw=2, label=label)
            axes[1].plot(times, mean, lw=2, label=label)
        _, comp, comm = iteration_split(d)
        names.append(label)
        comps.append(1e3 * float(np.mean(comp)) if len(comp) else 0.0)
        comms.append(1e3 * float(np.mean(comm)) if len(comm) else 0.0)
    for ax, xl in ((axes[0], "env steps (all workers)"), (axes[1], "wall time (s)")):
        if target is not None:
            ax.axhline(target, ls="--", c="gray", lw=1)
        ax.set_xlabel(xl)
        ax.set_ylabel("mean return (last 20 episodes)")
        ax.legend(fontsize=8)
    x = np.arange(len(names))
    axes[2].bar(x, comps, label="compute")
    axes[2].bar(x, comms, bottom=comps, label="communication")
    axes[2].set_xticks(x, names)
    axes[2].set_ylabel("time per iteration (ms)")
    axes[2].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    path = Path(out)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
