"""What every replay strategy shares: :class:`ReplaySpec` (how a worker reaches the
memory) and :class:`Replay` (a worker's handle on it)."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from hostdrv.wire.ratelimit import RateLimiterConfig
from hostdrv.wire.records import check_priorities
from rl.replay.layout import DEFAULT_CAPACITY, DEFAULT_RECORD_BYTES, RecordLayout, ReplayBatch

__all__ = ["REPLAY_KINDS", "Replay", "ReplaySpec"]

REPLAY_KINDS = ("local", "innet", "server")
"""Names accepted for :attr:`ReplaySpec.kind`."""


@dataclass
class ReplaySpec:
    """Everything a worker needs to reach the replay memory.

    Attributes
    ----------
    kind : str
        ``local``, ``innet`` or ``server``.
    capacity : int
        Records (power of two); for ``innet`` the switch's ``RPL_CAPACITY``.
    seed : int
        Sampler seed (``local``: per worker, offset by rank).
    record_bytes : int
        Record size R.
    url : str or None
        Switch URL (``innet``).
    address : tuple of (str, int) or None
        Server address (``server``).
    """

    kind: str = "local"
    capacity: int = DEFAULT_CAPACITY
    seed: int = 1
    record_bytes: int = DEFAULT_RECORD_BYTES
    url: str | None = None
    address: tuple[str, int] | None = None
    member_offset: int = 0
    """``innet``: worker ``rank`` uses member id ``rank + member_offset`` (the
    aggregation workers hold ids 0 … N−1 with their own sockets when the same
    switch also aggregates, so the replay clients take N … 2N−1)."""
    rate_limiter: RateLimiterConfig | None = None
    """The memory's rate limiter (None: off): the switch's registers (``innet``, written by
    :class:`ReplayBackend`), the server's (``server``) or each local memory's (``local``)."""
    rate_timeout: float | None = None
    """``innet`` and ``server``: seconds a request may be refused by the limiter before the
    call fails (None: the client's default)."""
    frames: int = 0
    """``innet`` DQN on frames: 0 stores transitions; h > 0 stores one frame per record and
    rebuilds observations of h frames from stacks of h + 1 (:mod:`rl.replay.frames`)."""

    def __post_init__(self) -> None:
        if self.kind not in REPLAY_KINDS:
            raise ValueError(f"replay kind {self.kind!r} not in {REPLAY_KINDS}")


class Replay(ABC):
    """A worker's handle on a replay memory.

    New records get the largest priority seen so far (1.0 at first), as in
    prioritized experience replay. ``comm_seconds`` accumulates the time spent
    in push/sample/update calls.
    """

    def __init__(self, layout: RecordLayout) -> None:
        self.layout = layout
        self.max_priority = 1.0
        self.comm_seconds = 0.0

    def push(self, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray,
             next_obs: np.ndarray, dones: np.ndarray,
             priorities: np.ndarray | None = None) -> np.ndarray:
        """Store k transitions (arrays with k rows); return their indices.

        Raises ``ValueError`` (before anything is stored or sent) when a
        priority is NaN, negative or infinite.
        """
        rewards = np.asarray(rewards, dtype=np.float32).reshape(-1)
        if priorities is None:
            priorities = np.full(len(rewards), self.max_priority)
        priorities = check_priorities(priorities, "priorities")
        t0 = time.perf_counter()
        out = self._push(obs, actions, rewards, next_obs, dones, priorities)
        self.comm_seconds += time.perf_counter() - t0
        return out

    def sample(self, batch: int, *, prioritized: bool = True, beta: float = 0.4) -> ReplayBatch:
        """Sample ``batch`` records (power of two ≤ 64), prioritized or uniform."""
        t0 = time.perf_counter()
        out = self._sample(batch, prioritized, beta)
        self.comm_seconds += time.perf_counter() - t0
        return out

    def update_priorities(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        """Set new float priorities ``p = (|delta| + eps) ** alpha`` for ``indices``.

        Raises ``ValueError`` (before anything is changed or sent, the largest
        priority included) when a priority is NaN, negative or infinite.
        """
        priorities = check_priorities(priorities, "priorities")
        self.max_priority = max(self.max_priority, float(priorities.max(initial=0.0)))
        t0 = time.perf_counter()
        self._update(np.asarray(indices, dtype=np.int64), priorities)
        self.comm_seconds += time.perf_counter() - t0

    @abstractmethod
    def _push(self, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray,
              next_obs: np.ndarray, dones: np.ndarray, priorities: np.ndarray) -> np.ndarray: ...

    @abstractmethod
    def _sample(self, batch: int, prioritized: bool, beta: float) -> ReplayBatch: ...

    @abstractmethod
    def _update(self, indices: np.ndarray, priorities: np.ndarray) -> None: ...

    def close(self) -> None:  # noqa: B027 - the local buffer holds nothing to release
        """Release sockets."""
