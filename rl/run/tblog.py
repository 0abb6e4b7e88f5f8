"""TensorBoard event files of a run (``torch.utils.tensorboard``), beside its CSV files.

:class:`TensorBoardLog` is fed by :class:`rl.run.RunCollector` with the same reports
that become ``episodes.csv`` and ``iterations.csv``. Scalars (CleanRL's tag names
where CleanRL has one):

``charts/episodic_return``, ``charts/episodic_length``
    Every finished episode (all workers), at the global env step.
``losses/<name>``
    Rank 0's per-iteration metrics (``pg_loss``, ``v_loss``, ``loss``, ...), at the
    global env step.
``time/compute_s``, ``time/comm_s``, ``time/iteration_s``
    Rank 0's compute/communication split of each iteration, at its iteration number,
    with its metrics in seconds (``time/compute_cpu_s``, ``time/grad_comm_s``);
    ``charts/SPS`` the env steps per second over all workers.
``switch/<CNT_*>``
    When the run uses a switch: its counters (``CNT_RX_GRADIENT``, ``CNT_DROP_STALE``,
    ...) read through :class:`hostdrv.SwitchControl` once per rank-0 iteration, at
    its iteration number, while the run is live (under torchrun rank 0 writes the
    event file from the gathered reports after the run: no counters).

Open them with ``tensorboard --logdir runs`` (or one run's folder).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class TensorBoardLog:
    """A ``SummaryWriter`` on a run folder, plus the switch's counters per iteration.

    Parameters
    ----------
    out : Path
        The run folder; the event file goes into it.
    switch_url : str or None
        URL of the run's switch (``soft://...``, ``udp://...``); None: no counters.
    """

    def __init__(self, out: Path, switch_url: str | None = None) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=str(out))
        self.switch_url = switch_url
        self._ctl: Any = None

    def episode(self, global_step: int, ret: float, length: int) -> None:
        """One finished episode."""
        self.writer.add_scalar("charts/episodic_return", ret, global_step)
        self.writer.add_scalar("charts/episodic_length", length, global_step)

    def iteration(self, rank: int, it: int, global_step: int, compute_s: float, comm_s: float,
                  metrics: dict[str, float], elapsed_s: float) -> None:
        """One worker iteration (``elapsed_s`` after every worker was up); rank 0's are
        written, with the switch's counters."""
        if rank != 0:
            return
        w = self.writer
        for name, value in metrics.items():
            if name.endswith("_s"):  # compute_cpu_s, grad_comm_s: seconds of this iteration
                w.add_scalar(f"time/{name}", value, it)
            else:
                w.add_scalar(f"losses/{name}", value, global_step)
        w.add_scalar("time/compute_s", compute_s, it)
        w.add_scalar("time/comm_s", comm_s, it)
        w.add_scalar("time/iteration_s", compute_s + comm_s, it)
        if elapsed_s > 0:
            w.add_scalar("charts/SPS", global_step / elapsed_s, global_step)
        for name, value in self.switch_counters().items():
            w.add_scalar(f"switch/{name}", value, it)

    def switch_counters(self) -> dict[str, int]:
        """The switch's ``CNT_*`` registers (empty without a switch, or when it does not
        answer: the run goes on without them)."""
        if self.switch_url is None:
            return {}
        try:
            if self._ctl is None:
                from hostdrv.client.control import SwitchControl

                self._ctl = SwitchControl(self.switch_url)
            return self._ctl.counters()
        except (OSError, TimeoutError, RuntimeError, ValueError):
            self.switch_url = None  # gone (the run is ending): stop asking
            return {}

    def close(self) -> None:
        """Flush and close the event file and the control connection."""
        if self._ctl is not None:
            self._ctl.close()
            self._ctl = None
        self.writer.close()
