"""A worker's side of a run: what the launcher hands it (:class:`WorkerContext`), the
channel its metrics go back on (:class:`Reporter`), the compute/communication split
(:class:`SplitTimer`), its stop statistic (:class:`EpisodeWindow`) and what it hands
back (:class:`WorkerResult`, filled at the end by :func:`finish_result`)."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from rl.replay import ReplaySpec
from rl.sync import GradientExchange, StopBoard, SyncSpec


class Reporter:
    """A worker's channel back to the launcher (a multiprocessing or thread queue)."""

    def __init__(self, q: Any, rank: int) -> None:
        self.q = q
        self.rank = rank

    def start(self) -> None:
        """The worker process or thread is up."""
        self.q.put(("start", self.rank, time.time()))

    def episode(self, step: int, ret: float, length: int) -> None:
        """One finished episode at this worker's env step ``step``."""
        self.q.put(("episode", self.rank, time.time(), step, ret, length))

    def iteration(self, it: int, step: int, compute_s: float, comm_s: float,
                  **metrics: float) -> None:
        """One training iteration with its compute/communication split."""
        self.q.put(("iteration", self.rank, time.time(), it, step, compute_s, comm_s,
                    {k: float(v) for k, v in metrics.items()}))

    def done(self, result: WorkerResult) -> None:
        """The worker finished."""
        self.q.put(("done", self.rank, time.time(), result))

    def error(self, text: str) -> None:
        """The worker failed."""
        self.q.put(("error", self.rank, time.time(), text))


@dataclass
class WorkerContext:
    """What the launcher hands each worker."""

    rank: int
    world: int
    sync: SyncSpec
    replay: ReplaySpec | None
    reporter: Reporter
    target_return: float | None = None
    window: int = 5
    record_digests: bool = False
    board: StopBoard | None = None
    max_iterations: int | None = None
    """Stop after this many logged iterations (``--iterations``; None: the budget)."""

    def iterations_done(self, iterations: int) -> bool:
        """Whether a worker that has logged ``iterations`` iterations has reached
        :attr:`max_iterations`."""
        return self.max_iterations is not None and iterations >= self.max_iterations


@dataclass
class WorkerResult:
    """What a worker hands back when it stops."""

    rank: int
    env_steps: int = 0
    iterations: int = 0
    rounds: int = 0
    """Aggregation results applied (an async straggler may apply fewer, abandoning what
    its stopped peers never completed)."""
    stopped_at: int | None = None
    """The first round this worker did not send: the same on every worker when they
    stop together."""
    solved: bool = False
    solve_seconds: float | None = None
    solve_steps: int | None = None
    train_seconds: float = 0.0
    compute_seconds: float = 0.0
    comm_seconds: float = 0.0
    contributors: list[int] = field(default_factory=list)
    staleness: list[int] = field(default_factory=list)
    digests: list[str] = field(default_factory=list)
    params: dict[str, np.ndarray] = field(default_factory=dict)


class SplitTimer:
    """Splits wall time into computation and communication.

    ``comm`` is a function returning the cumulative seconds spent blocked in
    communication; :meth:`lap` returns (compute, comm) since the last lap.
    With ``comm_cpu`` (the cumulative CPU seconds of this thread inside those
    calls, :attr:`rl.sync.ExchangeLog.comm_cpu_seconds`) a lap also sets
    :attr:`compute_cpu`: the CPU seconds this thread spent outside them, the
    iteration's compute on a core of its own, whatever else shares the machine.
    """

    def __init__(self, comm: Callable[[], float],
                 comm_cpu: Callable[[], float] | None = None) -> None:
        self.comm = comm
        self.comm_cpu = comm_cpu
        self.start = time.perf_counter()
        self._t = self.start
        self._c = comm()
        self._cpu = time.thread_time()
        self._ccpu = comm_cpu() if comm_cpu is not None else 0.0
        self.compute_total = 0.0
        self.comm_total = 0.0
        self.compute_cpu = 0.0
        """CPU seconds of the last lap outside communication (0 without ``comm_cpu``)."""

    def lap(self) -> tuple[float, float]:
        """(compute seconds, communication seconds) since the previous lap."""
        t, c = time.perf_counter(), self.comm()
        comm = c - self._c
        compute = max(0.0, t - self._t - comm)
        self._t, self._c = t, c
        self.compute_total += compute
        self.comm_total += comm
        if self.comm_cpu is not None:
            cpu, ccpu = time.thread_time(), self.comm_cpu()
            self.compute_cpu = max(0.0, cpu - self._cpu - (ccpu - self._ccpu))
            self._cpu, self._ccpu = cpu, ccpu
        return compute, comm

    def elapsed(self) -> float:
        """Seconds since the timer was created."""
        return time.perf_counter() - self.start


class EpisodeWindow:
    """A worker's last ``n`` episode returns (the stop statistic it contributes)."""

    def __init__(self, n: int) -> None:
        self.returns: deque[float] = deque(maxlen=n)

    def add(self, ret: float) -> None:
        """Record a finished episode's return."""
        self.returns.append(ret)

    @property
    def stats(self) -> tuple[float, int]:
        """(sum, count) of the window."""
        return float(sum(self.returns)), len(self.returns)


def state_numpy(*modules: torch.nn.Module) -> dict[str, np.ndarray]:
    """Copies of the parameters of ``modules`` as numpy arrays (by qualified name)."""
    out = {}
    for i, m in enumerate(modules):
        for name, p in m.named_parameters():
            out[f"{i}.{name}"] = p.detach().numpy().copy()
    return out



def record_solved(result: WorkerResult, exchange: GradientExchange, timer: SplitTimer,
                  env_steps: int) -> None:
    """Note, once, that the workers agreed the task is solved.

    Parameters
    ----------
    result : WorkerResult
        Gets ``solved``, ``solve_seconds`` (the timer's elapsed time) and
        ``solve_steps`` the first time ``exchange`` reports a solved round.
    exchange : GradientExchange
        The worker's exchange (its ``solved_round``).
    timer : SplitTimer
        The worker's timer.
    env_steps : int
        Env steps over all workers so far.
    """
    if exchange.solved_round is not None and result.solve_seconds is None:
        result.solved, result.solve_seconds = True, timer.elapsed()
        result.solve_steps = env_steps


def finish_result(result: WorkerResult, exchange: GradientExchange, timer: SplitTimer,
                  env_steps: int, *modules: torch.nn.Module,
                  final_lap: bool = False) -> WorkerResult:
    """Fill in the end-of-run fields of ``result`` and return it.

    Parameters
    ----------
    result : WorkerResult
        The worker's result (``iterations`` and the solve fields already set).
    exchange : GradientExchange
        The closed exchange: rounds, contributors, staleness and digests come
        from its log.
    timer : SplitTimer
        The worker's timer: training time and the compute/communication totals.
    env_steps : int
        This worker's env steps.
    *modules : torch.nn.Module
        The networks whose final parameters go into ``result.params``.
    final_lap : bool
        Lap the timer once more first, so that the totals include the time
        since the last logged iteration (algorithms that log every few updates).

    Returns
    -------
    WorkerResult
        ``result``.
    """
    result.env_steps, result.rounds = env_steps, exchange.log.rounds
    result.stopped_at = exchange.stopped_at
    result.train_seconds = timer.elapsed()
    if final_lap:
        timer.lap()
    result.compute_seconds, result.comm_seconds = timer.compute_total, timer.comm_total
    result.contributors, result.staleness = exchange.log.contributors, exchange.log.staleness
    result.digests, result.params = exchange.log.digests, state_numpy(*modules)
    return result
