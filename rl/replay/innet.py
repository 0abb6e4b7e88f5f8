"""The ``innet`` strategy: the switch's replay memory through :class:`hostdrv.ReplayClient`."""

from __future__ import annotations

import numpy as np

from hostdrv.wire.records import SampleBatch
from rl.replay.base import Replay
from rl.replay.layout import RecordLayout

__all__ = ["InNetReplay"]


class InNetReplay(Replay):
    """The switch's replay memory through :class:`hostdrv.ReplayClient`."""

    def __init__(self, layout: RecordLayout, url: str, worker: int, *,
                 rate_timeout: float | None = None) -> None:
        super().__init__(layout)
        from hostdrv import ReplayClient

        # retries: a loaded 2-core host can delay an answer past a few timeouts;
        # rate_timeout: how long the switch's rate limiter may answer "not yet"
        extra = {} if rate_timeout is None else {"rate_timeout": rate_timeout}
        self._client = ReplayClient(url, worker=worker, obs_shape=layout.obs_shape, retries=10,
                                    **extra,
                                    obs_dtype=np.dtype(layout.obs_dtype),
                                    action_shape=layout.action_shape,
                                    action_dtype=np.dtype(layout.action_dtype))

    def _push(self, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray,
              next_obs: np.ndarray, dones: np.ndarray, priorities: np.ndarray) -> np.ndarray:
        return np.asarray(self._client.push(obs, actions, rewards, next_obs, dones,
                                            priority=priorities), dtype=np.int64)

    def _sample(self, batch: int, prioritized: bool, beta: float) -> SampleBatch:
        return self._client.sample(batch, prioritized=prioritized, beta=beta)

    def _update(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        self._client.update_priorities(indices, priorities)

    def close(self) -> None:
        """Close the connection."""
        self._client.close()
