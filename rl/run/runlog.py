"""What the launcher shows and writes: the progress bar, the CSV columns of
``episodes.csv`` and ``iterations.csv``, and the :class:`RunSummary`
(``summary.json``)."""

from __future__ import annotations

import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any, TextIO

from rl.run.worker import WorkerResult


class ProgressBar:
    """A one-line progress bar with live return (no dependency; plain lines off a TTY)."""

    def __init__(self, total: int, stream: TextIO | None = None, width: int = 24,
                 enabled: bool = True) -> None:
        self.total = max(1, total)
        self.stream = stream or sys.stdout
        self.width = width
        self.enabled = enabled
        self.tty = self.stream.isatty()
        self._last = 0.0
        self._start = time.time()

    def update(self, steps: int, text: str, force: bool = False) -> None:
        """Redraw (at most 10 Hz on a TTY, every 5 s otherwise)."""
        if not self.enabled:
            return
        now = time.time()
        if not force and now - self._last < (0.1 if self.tty else 5.0):
            return
        self._last = now
        frac = min(1.0, steps / self.total)
        fill = int(frac * self.width)
        bar = "#" * fill + "." * (self.width - fill)
        line = f"[{bar}] {steps:>7d}/{self.total} steps {now - self._start:6.1f}s {text}"
        if self.tty:
            self.stream.write("\r" + line[:150].ljust(150))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        """End the line."""
        if self.enabled and self.tty:
            self.stream.write("\n")
            self.stream.flush()


# time_s: seconds since every worker was up (since launch until then)
EPISODE_FIELDS = ["time_s", "rank", "worker_step", "global_step", "return", "length"]
ITER_FIELDS = ["time_s", "rank", "iteration", "worker_step", "global_step", "compute_s",
               "comm_s", "metrics"]


@dataclass
class RunSummary:
    """What :func:`run_workers` returns (also written as ``summary.json``)."""

    algo: str
    env_id: str
    sync: str
    mode: str
    dtype: str
    workers: int
    replay: str | None
    solved: bool
    solve_seconds: float | None
    solve_steps: int | None
    wall_seconds: float
    train_seconds: float
    env_steps: int
    iterations: int
    mean_compute_s: float
    mean_comm_s: float
    last_mean_return: float | None
    run_dir: str | None
    results: list[WorkerResult] = field(default_factory=list, repr=False)

    def to_json(self) -> dict[str, Any]:
        """The summary without per-worker arrays."""
        d = asdict(self)
        d.pop("results")
        return d
