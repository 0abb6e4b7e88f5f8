"""The host replay store: ring storage, a sum tree and the switch's sampler, bit for bit.

:class:`PrioritizedStore` holds the memory of a ``local`` replay (:class:`LocalReplay`,
in the worker's process) and of the TCP :class:`rl.replay.ReplayServer`; its rate
limiter refuses with :class:`RateLimited`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hostdrv.wire.consts import NOT_YET_MIN_SIZE, NOT_YET_RATE
from hostdrv.wire.protocol import MAX_BATCH
from hostdrv.wire.ratelimit import RateLimiter, RateLimiterConfig, RateLimiterState
from hostdrv.wire.sampler import DEFAULT_SEED, SumTree, XorShift32, draw_indices, sample_total
from rl.replay.base import Replay
from rl.replay.layout import RecordLayout, ReplayBatch, sample_batch, to_q16

__all__ = ["LocalReplay", "PrioritizedStore", "RateCounts", "RateLimited"]


class RateLimited(RuntimeError):
    """A push or a sample the replay's rate limiter refused.

    Raised at once by a :class:`LocalReplay` (its one process cannot wait for itself), by a
    :class:`ServerReplay` after ``rate_timeout`` seconds of refusals.

    Attributes
    ----------
    what : str
        The refused request.
    reason : int
        ``NOT_YET_MIN_SIZE`` or ``NOT_YET_RATE`` (:mod:`hostdrv.wire.consts`).
    size : int
        Valid records when it was refused.
    state : RateLimiterState or None
        The limiter (configuration and accumulator), when known.
    """

    def __init__(self, what: str, reason: int, size: int,
                 state: RateLimiterState | None = None, waited: float = 0.0) -> None:
        self.what, self.reason, self.size, self.state = what, reason, size, state
        why = {NOT_YET_MIN_SIZE: "fewer records than min_size",
               NOT_YET_RATE: "the samples-per-insert ratio would leave its error buffer"}
        lim = "" if state is None else (
            f"; min_size={state.min_size} samples_per_insert={state.samples_per_insert:g} "
            f"error_buffer={state.error_buffer:g} diff={state.diff:g}")
        super().__init__(f"{what} refused by the replay rate limiter"
                         + (f" for {waited:.1f} s" if waited else "")
                         + f": {why.get(reason, f'reason {reason}')} (size {size}{lim})")


@dataclass
class RateCounts:
    """What a host replay memory's rate limiter did (the switch's counters' names in brackets).

    Attributes
    ----------
    samples : int
        Samples served (``CNT_TX_SAMPLE_RESP``).
    pushes : int
        Pushes accepted (``CNT_TX_PUSH_ACK``).
    push_not_yet, sample_not_yet : int
        Requests refused (``CNT_TX_PUSH_NOT_YET``, ``CNT_TX_SAMPLE_NOT_YET``).
    """

    samples: int = 0
    pushes: int = 0
    push_not_yet: int = 0
    sample_not_yet: int = 0


class PrioritizedStore:
    """Ring storage with a sum tree and the switch's sampler, bit for bit.

    Parameters
    ----------
    capacity : int
        C records, a power of two.
    layout : RecordLayout
        Record format.
    seed : int
        xorshift32 seed.
    limiter : RateLimiterConfig or None
        Rate limiter configuration (None: off, the switch's reset values).

    Attributes
    ----------
    sum_tree : hostdrv.wire.sampler.SumTree
        The Q16.16 priorities and their sums.
    rng : hostdrv.wire.sampler.XorShift32
        The sampler's generator.
    limiter : hostdrv.wire.ratelimit.RateLimiter
        Reverb's rate limiter, as the switch applies it.
    counts : RateCounts
        Requests served and refused.
    """

    def __init__(self, capacity: int, layout: RecordLayout, seed: int = DEFAULT_SEED,
                 limiter: RateLimiterConfig | None = None) -> None:
        if capacity < 1 or capacity & (capacity - 1):
            raise ValueError(f"capacity {capacity} must be a power of two")
        self.capacity = capacity
        self.layout = layout
        self.records = np.zeros(capacity, dtype=layout.dtype)
        self.sum_tree = SumTree(capacity)
        self.rng = XorShift32(seed)
        self.wp = 0
        self.size = 0
        self.limiter = RateLimiter(limiter)
        self.counts = RateCounts()

    @property
    def total(self) -> int:
        """Sum of all priorities (Q16.16)."""
        return self.sum_tree.total

    @property
    def tree(self) -> np.ndarray:
        """A ``uint64`` copy of the sum tree's nodes (root at 1, leaf i at C + i)."""
        return np.array(self.sum_tree.nodes, dtype=np.uint64)

    def _set_leaves(self, indices: np.ndarray, prio_q: np.ndarray) -> None:
        set_leaf = self.sum_tree.set
        for i, p in zip(indices.tolist(), np.asarray(prio_q).astype(np.uint64).tolist(),
                        strict=True):
            set_leaf(i, p)

    def push(self, records: np.ndarray, prio_q: np.ndarray) -> np.ndarray:
        """Write ``records`` at the write pointer; return their indices.

        Raises :class:`RateLimited` (nothing written) when the limiter refuses them.
        """
        k = len(records)
        if not self.limiter.can_insert(k, self.size):
            self.counts.push_not_yet += 1
            raise RateLimited(f"push of {k} records", NOT_YET_RATE, self.size,
                              self.limiter.state())
        self.limiter.insert(k)
        self.counts.pushes += 1
        idx = (self.wp + np.arange(k)) % self.capacity
        self.records[idx] = records
        self._set_leaves(idx, prio_q)
        self.wp = int((self.wp + k) % self.capacity)
        self.size = min(self.size + k, self.capacity)
        return idx

    def update(self, indices: np.ndarray, prio_q: np.ndarray) -> int:
        """Set priorities; pairs with ``index >= size`` are skipped. Return how many."""
        indices = np.asarray(indices, dtype=np.int64)
        ok = (indices >= 0) & (indices < self.size)
        if ok.any():
            self._set_leaves(indices[ok], np.asarray(prio_q)[ok])
        return int((~ok).sum())

    def sample_indices(self, batch: int, prioritized: bool) -> tuple[np.ndarray, int, int]:
        """Draw ``batch`` indices; return (indices, total, size) as the switch reports them.

        Raises :class:`LookupError` when the memory is empty, :class:`RateLimited` when the
        limiter refuses the batch (nothing drawn).
        """
        if batch < 1 or batch > MAX_BATCH or batch & (batch - 1):
            raise ValueError(f"batch {batch} must be a power of two in 1..{MAX_BATCH}")
        total = sample_total(self.sum_tree, self.size, prioritized)
        if self.size == 0 or total == 0:
            raise LookupError("replay memory is empty")
        why = self.limiter.sample_refusal(batch, self.size)
        if why:
            self.counts.sample_not_yet += 1
            raise RateLimited(f"sample of {batch}", why, self.size, self.limiter.state())
        self.limiter.sample(batch)
        self.counts.samples += batch
        idx = draw_indices(self.sum_tree, self.rng, batch, self.size, prioritized)
        return np.array(idx, np.int64), total, self.size

    def sample(self, batch: int, prioritized: bool
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
        """Draw a batch: (indices, Q16.16 priorities, records, total, size)."""
        idx, total, size = self.sample_indices(batch, prioritized)
        leaf = self.sum_tree.leaf
        prio = np.array([leaf(i) for i in idx.tolist()], dtype=np.uint32)
        return idx, prio, self.records[idx].copy(), total, size


class LocalReplay(Replay):
    """An in-process :class:`PrioritizedStore` owned by one worker.

    Its rate limiter (``limiter``, off by default) cannot make the one process wait for
    itself: a refused :meth:`push` or :meth:`sample` raises :class:`RateLimited` at once
    (nothing stored or drawn); ask :meth:`can_push` / :meth:`can_sample` first.
    """

    def __init__(self, layout: RecordLayout, capacity: int, seed: int,
                 limiter: RateLimiterConfig | None = None) -> None:
        super().__init__(layout)
        self.store = PrioritizedStore(capacity, layout, seed, limiter)

    def can_push(self, k: int) -> bool:
        """Whether the limiter lets ``k`` records in now (Reverb's ``CanInsert``)."""
        return self.store.limiter.can_insert(k, self.store.size)

    def can_sample(self, batch: int) -> bool:
        """Whether the limiter lets a batch of ``batch`` be drawn now (Reverb's
        ``CanSample``; an empty memory is not the limiter's: :meth:`sample` raises
        ``LookupError``)."""
        return self.store.limiter.can_sample(batch, self.store.size)

    def _push(self, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray,
              next_obs: np.ndarray, dones: np.ndarray, priorities: np.ndarray) -> np.ndarray:
        return self.store.push(self.layout.pack(obs, actions, rewards, next_obs, dones),
                               to_q16(priorities))

    def _sample(self, batch: int, prioritized: bool, beta: float) -> ReplayBatch:
        idx, prio, rec, total, size = self.store.sample(batch, prioritized)
        return sample_batch(self.layout, idx, prio, rec, total, size, prioritized, beta)

    def _update(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        self.store.update(indices, to_q16(priorities))
