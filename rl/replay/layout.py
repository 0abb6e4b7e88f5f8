"""The record layout of a replay memory and the batch a sample returns.

:class:`RecordLayout` is the switch client's record format
(:func:`hostdrv.wire.records.record_dtype`); every strategy of :mod:`rl.replay`
returns a :class:`hostdrv.wire.records.SampleBatch` (:data:`ReplayBatch`), built by
:func:`sample_batch` from what a host store drew.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from hostdrv.wire.records import (
    SampleBatch,
    pack_records,
    record_dtype,
    records_from_bytes,
    to_fixed,
)
from hostdrv.wire.records import importance_weights as _weights
from hostdrv.wire.regmap import REGISTERS

__all__ = ["DEFAULT_CAPACITY", "DEFAULT_RECORD_BYTES", "RecordLayout", "ReplayBatch",
           "importance_weights", "sample_batch", "to_q16"]

DEFAULT_CAPACITY = REGISTERS["RPL_CAPACITY"].reset
"""Default replay records C: the switch's ``RPL_CAPACITY`` in the SUME bitstream (16384)."""

DEFAULT_RECORD_BYTES = REGISTERS["RPL_RECORD_BYTES"].reset
"""Default record size R: the switch's ``RPL_RECORD_BYTES`` (128)."""

to_q16 = to_fixed
"""Map float priorities to Q16.16, clamped to ``[1, 2^32 - 1]`` (the client's rule);
NaN, negative or infinite priorities raise ``ValueError``."""


@dataclass(frozen=True)
class RecordLayout:
    """How a transition is laid out in a fixed-size record.

    Attributes
    ----------
    obs_shape, obs_dtype : observation shape and dtype.
    action_shape, action_dtype : action shape and dtype.
    record_bytes : int
        Record size R (a multiple of 64, at least what the fields need).
    """

    obs_shape: tuple[int, ...]
    obs_dtype: str = "float32"
    action_shape: tuple[int, ...] = ()
    action_dtype: str = "int64"
    record_bytes: int = DEFAULT_RECORD_BYTES

    @cached_property
    def dtype(self) -> np.dtype:
        """The numpy structured dtype of one record: the switch client's layout
        (:func:`hostdrv.wire.records.record_dtype`), padded to ``record_bytes``."""
        return record_dtype(self.obs_shape, self.obs_dtype, self.action_shape,
                            self.action_dtype, self.record_bytes)

    def pack(self, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray,
             next_obs: np.ndarray, dones: np.ndarray) -> np.ndarray:
        """Pack k transitions into k records (:func:`hostdrv.wire.records.pack_records`)."""
        return pack_records(self.dtype, obs, actions, rewards, next_obs, dones)


ReplayBatch = SampleBatch
"""A sampled batch: :class:`hostdrv.wire.records.SampleBatch`, the switch client's type."""

importance_weights = _weights
"""``w = (size * p_i / total) ** -beta`` over the batch maximum:
:func:`hostdrv.wire.records.importance_weights`."""


def sample_batch(layout: RecordLayout, indices: np.ndarray, prio_q: np.ndarray, records: np.ndarray,
           total: int, size: int, prioritized: bool, beta: float) -> SampleBatch:
    b = len(indices)
    totals = np.full(b, total, np.uint64)
    prio_q = np.asarray(prio_q, np.uint32)
    weights = (importance_weights(prio_q, total, size, beta) if prioritized
               else np.ones(b, np.float32))
    t = records_from_bytes(records, records.dtype)
    return SampleBatch(t.obs, t.actions, t.rewards, t.next_obs, t.dones,
                       indices.astype(np.int64), prio_q, totals, size, weights,
                       np.ascontiguousarray(records).view(np.uint8).reshape(b, -1))
