"""Clients: in-network all-reduce (:class:`Aggregator`) and replay (:class:`ReplayClient`).

A thin re-export kept for existing imports; the code lives in
:mod:`hostdrv.aggregator` (all-reduce), :mod:`hostdrv.replay_client` (replay),
:mod:`hostdrv.records` (record layout, Q16.16 priorities), :mod:`hostdrv.errors`
and :mod:`hostdrv.endpoint` (what both clients share).
"""

from __future__ import annotations

from hostdrv.aggregator import Aggregator
from hostdrv.control import ROLE_ACTOR, ROLE_LEARNER, ROLE_WORKER
from hostdrv.errors import (
    AllreduceDesyncError,
    AllreduceError,
    AllreduceTimeoutError,
    RateLimitTimeoutError,
    ReplayEmptyError,
    ReplayTimeoutError,
    StepMismatchError,
    TensorMismatchError,
)
from hostdrv.records import (
    SampleBatch,
    Transitions,
    check_priorities,
    check_u32,
    from_fixed,
    record_dtype,
    records_from_bytes,
    to_fixed,
)
from hostdrv.replay_client import ReplayClient

__all__ = [
    "Aggregator",
    "AllreduceDesyncError",
    "AllreduceError",
    "AllreduceTimeoutError",
    "ReplayClient",
    "RateLimitTimeoutError",
    "ReplayEmptyError",
    "ReplayTimeoutError",
    "SampleBatch",
    "StepMismatchError",
    "TensorMismatchError",
    "Transitions",
    "check_priorities",
    "check_u32",
    "from_fixed",
    "record_dtype",
    "records_from_bytes",
    "to_fixed",
    "ROLE_ACTOR",
    "ROLE_LEARNER",
    "ROLE_WORKER",
]
