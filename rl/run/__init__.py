"""The run harness: launching N workers, what a worker is handed, timing, run logs.

* :class:`DistConfig`: how the N workers are launched and synchronised
  (:mod:`rl.run.launch`).
* :func:`run_workers`: starts the strategy back ends (soft switch, parameter
  server, gloo store, replay server), N worker processes (``spawn``) or
  threads, shows a progress bar, writes ``episodes.csv``,
  ``iterations.csv`` and ``summary.json`` into the run directory and draws
  the plots (:mod:`rl.run.launch`, :mod:`rl.run.runlog`);
  :class:`Backends` (the shared pieces it starts) and :class:`RunCollector`
  (what it makes of the workers' reports) serve :mod:`rl.run.torchrun`
  too, which runs one worker per torchrun rank (``torchrun ... -m rl train``).
* :class:`WorkerContext` / :class:`Reporter`: a worker's rank, its sync and
  replay specs, and the channel its metrics go back to the launcher on
  (:mod:`rl.run.worker`).
* :class:`SplitTimer`: splits an iteration's wall time into computation
  and communication (time blocked in gradient exchange or replay calls);
  :func:`record_solved` and :func:`finish_result` are the bookkeeping every
  algorithm does with it at the end of an iteration and of the run
  (:mod:`rl.run.worker`).
* :mod:`rl.run.tblog`: the TensorBoard event files of a run, written by
  :class:`RunCollector` beside the CSV files.

What the algorithms are built from (envs, networks) is :mod:`rl.parts`. Every
public name above is importable from ``rl.run`` itself.
"""

from rl.run.launch import Backends, DistConfig, RunCollector, config_dict, run_workers
from rl.run.runlog import EPISODE_FIELDS, ITER_FIELDS, ProgressBar, RunSummary
from rl.run.worker import (
    EpisodeWindow,
    Reporter,
    SplitTimer,
    WorkerContext,
    WorkerResult,
    finish_result,
    record_solved,
    state_numpy,
)

__all__ = [
    "EPISODE_FIELDS",
    "ITER_FIELDS",
    "Backends",
    "DistConfig",
    "EpisodeWindow",
    "ProgressBar",
    "Reporter",
    "RunCollector",
    "RunSummary",
    "SplitTimer",
    "WorkerContext",
    "WorkerResult",
    "config_dict",
    "finish_result",
    "record_solved",
    "run_workers",
    "state_numpy",
]
