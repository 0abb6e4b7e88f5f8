"""What the algorithms call instead of ``optimizer.step()``: :class:`GradientExchange`.

It flattens the gradients, appends the episode statistics and a contributor
flag, quantises to int32 when asked, runs the round (blocking in sync mode,
pipelined up to ``pipeline`` rounds in async mode), averages by the number of
contributors and steps the optimizer; :class:`StopBoard` is where workers agree
on the last round.
"""

from __future__ import annotations

import math
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from rl.sync.quantize import Quantizer, flatten_grads, params_digest, unflatten_into
from rl.sync.strategies import GradSync

STATS_SCALE = 16.0
"""int32 quantisation scale of the episode statistics carried with a gradient."""


class StopBoard:
    """Where workers post the first round nobody should send any more (the minimum wins).

    A worker posts when it stops: at the end of its budget, or ``pipeline + 1``
    rounds after the result that said "solved". Workers that see every result
    reach the same decision on their own; the board is for an async in-switch
    straggler that skipped that result while catching up.

    Parameters
    ----------
    shared : multiprocessing.Value or None
        A ``Value('q', -1)`` shared with worker processes; None for threads.
    """

    def __init__(self, shared: Any = None) -> None:
        self._shared = shared
        self._lock = threading.Lock() if shared is None else None
        self._value = -1

    def propose(self, round_: int) -> None:
        """Post ``round_`` unless a smaller round is already posted."""
        if self._shared is not None:
            with self._shared.get_lock():
                if self._shared.value < 0 or round_ < self._shared.value:
                    self._shared.value = round_
        else:
            assert self._lock is not None
            with self._lock:
                if self._value < 0 or round_ < self._value:
                    self._value = round_

    def get(self) -> int | None:
        """The posted round, or None."""
        v = self._shared.value if self._shared is not None else self._value
        return None if v < 0 else int(v)


class _Courier:
    """A daemon thread running one strategy's rounds in order (async mode).

    A daemon rather than a ``ThreadPoolExecutor`` so that a round abandoned at
    shutdown (its peers stopped) cannot keep the process alive.
    """

    def __init__(self, fn: Callable[..., Any], name: str) -> None:
        self._fn = fn
        self._jobs: queue.SimpleQueue[tuple[Future[Any], tuple[Any, ...],
                                            dict[str, Any]] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def submit(self, *args: Any, **kwargs: Any) -> Future[Any]:
        """Queue one round; its future resolves to the round's result."""
        fut: Future[Any] = Future()
        self._jobs.put((fut, args, kwargs))
        return fut

    def close(self) -> None:
        """Let the thread finish once the queued rounds ran."""
        self._jobs.put(None)

    def _loop(self) -> None:
        while (job := self._jobs.get()) is not None:
            fut, args, kwargs = job
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(self._fn(*args, **kwargs))
            except BaseException as e:  # noqa: BLE001 - handed to the waiting worker
                fut.set_exception(e)


@dataclass
class ExchangeLog:
    """Per-worker record of the rounds an exchange applied."""

    rounds: int = 0
    comm_seconds: float = 0.0
    comm_cpu_seconds: float = 0.0
    """CPU time of the calling (worker) thread inside the exchange's blocking calls (the
    host stack's share of ``comm_seconds`` in sync mode; async rounds run on the courier)."""
    contributors: list[int] = field(default_factory=list)
    staleness: list[int] = field(default_factory=list)
    digests: list[str] = field(default_factory=list)
    abandoned: int = 0


class GradientExchange:
    """Synchronise gradients and step the optimizer, in sync or async mode.

    Call :meth:`step` where a single-process loop would call
    ``optimizer.step()``, after ``loss.backward()``. The vector sent each round
    is ``[gradients..., window_return_sum, window_count, 1]``; the last element
    sums to the number of contributors, the gradient sum is divided by it.

    In **sync** mode ``step`` blocks for the round and applies its result.
    In **async** mode the round runs on a background thread; ``step`` returns
    as soon as at most ``pipeline`` rounds are in flight, applying every
    result that has arrived, in order. A gradient may so be computed on
    weights up to ``pipeline`` rounds old; ``version`` (sent with it) is one
    past the last applied round, and its staleness is ``round - version``.

    The episode statistics (sum and count over each worker's last ``window``
    episodes) come back summed over the contributors; when their mean reaches
    ``target_return`` in the result of round r, every worker (all see the
    same results) keeps sending up to round ``r + pipeline`` and then stops:
    :attr:`stopped` turns true and :meth:`step` returns False without sending.

    Parameters
    ----------
    sync : GradSync
        The strategy.
    params : sequence of torch.nn.Parameter
        Parameters whose gradients are exchanged (fixed order).
    optimizer : torch.optim.Optimizer or sequence of them
        Each steps once per applied round (DDPG: actor and critic).
    max_grad_norm : float or None
        Clip the *averaged* gradient to this norm before stepping.
    target_return : float or None
        Stop rule; ``None`` trains the whole budget.
    window : int
        Episodes per worker in the statistics window.
    board : StopBoard or None
        Shared stop board (see :class:`StopBoard`).
    record_digests : bool
        Keep a hash of the parameters after every applied round (tests).
    after_step : callable or None
        Called after every optimizer step (target-network updates), so that
        it runs once per applied round on every worker.
    grace : float
        Seconds to wait at shutdown for an async round whose peers may have
        stopped before giving it up.
    """

    def __init__(self, sync: GradSync, params: Sequence[torch.nn.Parameter],
                 optimizer: torch.optim.Optimizer | Sequence[torch.optim.Optimizer], *,
                 max_grad_norm: float | None = None, target_return: float | None = None,
                 window: int = 5, board: StopBoard | None = None,
                 record_digests: bool = False, after_step: Callable[[], None] | None = None,
                 grace: float = 5.0) -> None:
        self.sync = sync
        self.spec = sync.spec
        self.params = list(params)
        self.optimizers = ([optimizer] if isinstance(optimizer, torch.optim.Optimizer)
                           else list(optimizer))
        self.after_step = after_step
        self.max_grad_norm = max_grad_norm
        self.target_return = target_return
        self.window = window
        self.board = board if board is not None else StopBoard()
        self.record_digests = record_digests
        self.grace = grace
        self.n_grad = sum(p.numel() for p in self.params)
        scales = np.full(self.n_grad + 3, self.spec.scale)
        scales[self.n_grad:] = (STATS_SCALE, 1.0, 1.0)
        self.quantizer = Quantizer(scales, self.spec.world) if self.spec.dtype == "int32" else None
        self.applied_round = -1  # global round of the last applied result
        self.stop_round: int | None = None
        self.solved_round: int | None = None
        self.stopped_at: int | None = None  # the first round this worker did not send
        self.last_mean_return: float | None = None
        self.log = ExchangeLog()
        self._done = False
        self._inflight: deque[tuple[int, Future[Any]]] = deque()
        self._courier = (_Courier(self._round_trip, f"sync{sync.rank}")
                         if self.spec.mode == "async" else None)

    @property
    def stopped(self) -> bool:
        """True once this worker sent its last round and applied what came back."""
        return self._done

    @property
    def next_round(self) -> int:
        """Global round the next :meth:`step` would send."""
        return self.applied_round + 1 + len(self._inflight)

    def _limit(self) -> int | None:
        posted = self.board.get()
        if self.stop_round is None:
            return posted
        return self.stop_round if posted is None else min(posted, self.stop_round)

    def step(self, window_sum: float = 0.0, window_count: int = 0) -> bool:
        """Exchange the current gradients and apply aggregated results.

        Returns
        -------
        bool
            False once the workers agreed to stop (nothing was sent).
        """
        if self._done:
            return False
        limit = self._limit()
        if limit is not None and self.next_round >= limit:
            self._finish()
            return False
        vec = np.concatenate([flatten_grads(self.params),
                              np.array([window_sum, window_count, 1.0], dtype=np.float32)])
        if self.quantizer is not None:
            vec = self.quantizer.encode(vec)
        version = self.applied_round + 1
        if self._courier is None:
            t0, c0 = time.perf_counter(), time.thread_time()
            result = self._round_trip(vec, version)
            self.log.comm_seconds += time.perf_counter() - t0
            self.log.comm_cpu_seconds += time.thread_time() - c0
            self._apply(result, 0)
        else:
            self._inflight.append((len(self._inflight),
                                   self._courier.submit(vec, version)))
            # Apply what has arrived; block while more than `pipeline` rounds are out.
            while self._inflight and (len(self._inflight) > self.spec.pipeline
                                      or self._inflight[0][1].done()):
                self._apply_oldest()
        return True

    def _finish(self) -> None:
        """Post the stop round, apply what is still in flight (bounded wait), stop."""
        self.stopped_at = self.next_round
        self.board.propose(self.next_round)
        while self._inflight:
            staleness, fut = self._inflight[0]
            t0, c0 = time.perf_counter(), time.thread_time()
            try:
                result = fut.result(timeout=self.grace)
            except FutureTimeout:
                # Its peers stopped before completing it (async straggler): give it up.
                self.log.abandoned += len(self._inflight)
                self._inflight.clear()
                break
            finally:
                self.log.comm_seconds += time.perf_counter() - t0
                self.log.comm_cpu_seconds += time.thread_time() - c0
            self._inflight.popleft()
            self._apply(result, staleness)
        self._done = True

    def close(self) -> None:
        """Finish (end of budget: post the stop round), stop the courier, close the strategy."""
        if not self._done:
            self._finish()
        if self._courier is not None:
            self._courier.close()
        if not self.log.abandoned:
            self.sync.close()

    def _apply_oldest(self) -> None:
        staleness, fut = self._inflight.popleft()
        t0, c0 = time.perf_counter(), time.thread_time()
        result = fut.result()
        self.log.comm_seconds += time.perf_counter() - t0
        self.log.comm_cpu_seconds += time.thread_time() - c0
        self._apply(result, staleness)

    def _round_trip(self, vec: np.ndarray, version: int) -> tuple[np.ndarray, int]:
        """One round: the sum and the global round it belongs to."""
        total = self.sync.allreduce(vec, version=version)
        return total, self.sync.last_round

    def _apply(self, result: tuple[np.ndarray, int], staleness: int) -> None:
        total, round_ = result
        vec = self.quantizer.decode(total) if self.quantizer is not None else total
        if float(vec[-1]) < 0.5:
            # async in-switch: the chunk holding the contributor count came back given up
            # (zeros, no contributor: its round was gone, docs/protocol.md section 4); the
            # sum cannot be averaged, so this round is skipped like a stale contribution
            self.applied_round = max(round_, self.applied_round + 1)
            self.log.rounds += 1
            self.log.contributors.append(0)
            self.log.staleness.append(staleness)
            return
        contributors = max(1, int(round(float(vec[-1]))))
        grads = vec[:self.n_grad] / np.float32(contributors)
        with torch.no_grad():
            unflatten_into([p.grad if p.grad is not None else _zero_grad(p)
                            for p in self.params], grads)
        if self.max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(self.params, self.max_grad_norm)
        for opt in self.optimizers:
            opt.step()
        if self.after_step is not None:
            self.after_step()
        round_ = max(round_, self.applied_round + 1)
        self.applied_round = round_
        self.log.rounds += 1
        self.log.contributors.append(contributors)
        self.log.staleness.append(staleness)
        if self.record_digests:
            self.log.digests.append(params_digest(self.params))
        self._check_stop(round_, float(vec[-3]), float(vec[-2]), contributors)

    def _check_stop(self, round_: int, ret_sum: float, count: float, contributors: int) -> None:
        if count > 0:
            self.last_mean_return = ret_sum / count
        if (self.target_return is None or self.stop_round is not None or count <= 0
                or count < contributors * self.window - 0.5):
            return
        if ret_sum / count >= self.target_return:
            self.solved_round = round_
            self.stop_round = round_ + self.spec.pipeline + 1
            self.board.propose(self.stop_round)


def _zero_grad(p: torch.nn.Parameter) -> torch.Tensor:
    p.grad = torch.zeros_like(p)
    return p.grad


def default_window(world: int, episodes: int = 20) -> int:
    """Episodes per worker so that N windows cover ``episodes`` episodes."""
    return max(1, math.ceil(episodes / world))
