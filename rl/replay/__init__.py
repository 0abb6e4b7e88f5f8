"""Experience replay strategies behind one interface.

Three strategies, picked by name (``ReplaySpec.kind``):

``local``
    An in-process prioritized buffer per worker (:class:`PrioritizedStore`:
    ring storage, a sum tree, a stratified prioritized sampler).
``innet``
    The replay memory in the switch, through :class:`hostdrv.ReplayClient`,
    shared by every worker.
``server``
    A kernel-socket TCP replay server (:class:`ReplayServer`) holding one
    :class:`PrioritizedStore`, shared by every worker: the host baseline.

:class:`PrioritizedStore` implements the switch's replay semantics exactly
(``docs/protocol.md`` section 5) with the switch model's own sampler
(:mod:`hostdrv.wire.sampler`): Q16.16 integer priorities, a 64-bit sum tree, the
xorshift32 generator with one draw per sample in batch order, the uniform
rule ``index = (u * size) >> 32`` and the stratified prioritized rule
``target = i * seg + ((u * seg) >> 32)`` with ``seg = total >> log2(B)``. So
the three strategies return the same records for the same seed.

Priorities follow prioritized experience replay (TorchRL's formulas): the
learner computes ``p = (|delta| + eps) ** alpha`` and passes ``p``;
importance weights are ``w = (N * P(i)) ** -beta`` with
``P(i) = p_i / sum_j p_j`` and N the number of valid records, normalised by
the batch maximum (:func:`hostdrv.wire.records.importance_weights`, the
client's). Priorities stay Q16.16 from the store to the batch
(:attr:`SampleBatch.priorities_fixed`); ``priorities`` is their float view.
Every strategy returns a :class:`hostdrv.wire.records.SampleBatch`
(:data:`ReplayBatch` is that type).

Every memory has Reverb's rate limiter (:class:`hostdrv.wire.ratelimit.RateLimiter`,
the switch's own rule, off by default): ``innet`` through the switch's registers
(:meth:`hostdrv.SwitchControl.configure_rate_limiter`), ``server`` in the
:class:`ReplayServer` (:meth:`ReplayServer.configure_rate_limiter`; a refused
request is answered "not yet" and the :class:`ServerReplay` asks again after a
backoff, as :class:`hostdrv.ReplayClient` does with the switch, for up to its
``rate_timeout``), ``local`` in the :class:`LocalReplay`. A local replay lives in
one process, which cannot wait for itself: a push or sample its limiter refuses
raises :class:`RateLimited` at once, and the caller asks
:meth:`LocalReplay.can_push` / :meth:`LocalReplay.can_sample` first to decide
what to do next (:mod:`rl.apex` acts when the learner may not sample and learns
when the actors may not push).

DQN on Atari frames with ``innet`` stores one frame per record and rebuilds observations
from the switch's stacked samples (:mod:`.frames`, ``ReplaySpec.frames``).

The package: :mod:`.layout` (record layout, batch), :mod:`.store` (the host
store, :class:`LocalReplay`), :mod:`.base` (:class:`ReplaySpec`, :class:`Replay`),
:mod:`.server` (TCP server and client), :mod:`.innet` (the switch's memory) and
:mod:`.backend` (:func:`make_replay`, :class:`ReplayBackend`).
"""

from __future__ import annotations

from hostdrv.wire.sampler import XorShift32
from rl.replay.backend import ReplayBackend, innet_refusal, make_replay
from rl.replay.base import REPLAY_KINDS, Replay, ReplaySpec
from rl.replay.frames import FrameLayout, FrameWriter, InNetFrameReplay, LocalFrameReplay
from rl.replay.innet import InNetReplay
from rl.replay.layout import (
    DEFAULT_CAPACITY,
    DEFAULT_RECORD_BYTES,
    RecordLayout,
    ReplayBatch,
    importance_weights,
    to_q16,
)
from rl.replay.server import ReplayServer, ServerReplay
from rl.replay.store import LocalReplay, PrioritizedStore, RateCounts, RateLimited

__all__ = [
    "DEFAULT_CAPACITY",
    "DEFAULT_RECORD_BYTES",
    "REPLAY_KINDS",
    "FrameLayout",
    "FrameWriter",
    "InNetFrameReplay",
    "InNetReplay",
    "LocalFrameReplay",
    "LocalReplay",
    "PrioritizedStore",
    "RateCounts",
    "RateLimited",
    "RecordLayout",
    "Replay",
    "ReplayBackend",
    "ReplayBatch",
    "ReplayServer",
    "ReplaySpec",
    "ServerReplay",
    "XorShift32",
    "importance_weights",
    "innet_refusal",
    "make_replay",
    "to_q16",
]
