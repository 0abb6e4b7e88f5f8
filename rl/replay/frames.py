"""Atari frames stored once, stacked at sampling (issue 26): the in-network replay of DQN on
Pong at the papers' scale.

A transition of stacked Atari frames is 56 KB; one 84×84 frame and what led to it is 7104
bytes. So an actor pushes one record per env step (:class:`FrameWriter`): record x holds
frame o_x, the action a_{x−1} and reward r_{x−1} that led to it, ``terminal`` (the episode
ended at x) and ``first`` (x is an episode's first frame, reached by no transition: pushed
with priority 0, never drawn by priority). The learner asks the switch for stacks of
k = history + 1 records (``SAMPLE_REQ aux``, ``docs/protocol.md`` section 5: the sampled
record and its predecessors in the same actor's chain) and rebuilds the transition
(:func:`stack_frames`): s = o_{x−4..x−1}, s' = o_{x−3..x}, a = a_{x−1}, r = r_{x−1},
done = terminal_x. As in Dopamine's circular buffer, every frame older than the newest
``first`` of a stack is zeros (the episode had not begun), and so is a position whose chain
broke. A sample that is no transition (x is a ``first``: a uniform draw; or x's own
predecessor is gone: overwritten) is dropped and replaced (:class:`InNetFrameReplay`).

:class:`LocalFrameReplay` is the same on a worker's own :class:`rl.replay.PrioritizedStore`
(the switch's sampler bit for bit, and its chain rule, :func:`hostdrv.wire.sampler.stack_chain`):
``--replay local`` for the comparison at the same seed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from hostdrv.wire.consts import NO_INDEX
from hostdrv.wire.records import SampleBatch, StackedSample, importance_weights, to_fixed
from hostdrv.wire.sampler import stack_chain

__all__ = ["FRAME_HISTORY", "FrameLayout", "FrameWriter", "InNetFrameReplay", "LocalFrameReplay",
           "frame_record_bytes", "stack_frames"]

FRAME_HISTORY = 4
"""Frames of one Atari observation (rl.parts.envs.ATARI_STACK): stacks of 5 records."""
_TAIL = 12  # reward f32, actor step u32, action u16, first u8, terminal u8


def frame_record_bytes(frame_shape: tuple[int, ...]) -> int:
    """Bytes of a frame record: the uint8 frame and 12 bytes, rounded up to 64 (7104 for
    84×84)."""
    need = int(np.prod(frame_shape)) + _TAIL
    return -(-need // 64) * 64


@dataclass(frozen=True)
class FrameLayout:
    """The frame record: ``frame`` (uint8, ``frame_shape``) @0, then ``reward`` (f32),
    ``step`` (u32, the actor's env step), ``action`` (u16), ``first``, ``terminal`` (u8),
    little-endian, zero-padded to ``record_bytes``.

    Attributes
    ----------
    frame_shape : (H, W) of one frame.
    history : frames per observation; a sample is a stack of ``history + 1`` records.
    record_bytes : R (0: :func:`frame_record_bytes`); at least what the fields need.
    """

    frame_shape: tuple[int, ...] = (84, 84)
    history: int = FRAME_HISTORY
    record_bytes: int = 0

    @property
    def stack(self) -> int:
        """Records per sample (k of the SAMPLE_REQ)."""
        return self.history + 1

    @cached_property
    def dtype(self) -> np.dtype:
        """The structured record dtype."""
        f = int(np.prod(self.frame_shape))
        size = self.record_bytes or frame_record_bytes(self.frame_shape)
        if size < f + _TAIL:
            raise ValueError(f"bad record size={size}: a {self.frame_shape} frame record needs "
                             f"{f + _TAIL} bytes")
        return np.dtype({"names": ["frame", "reward", "step", "action", "first", "terminal"],
                         "formats": [(np.uint8, tuple(self.frame_shape)), "<f4", "<u4", "<u2",
                                     "u1", "u1"],
                         "offsets": [0, f, f + 4, f + 8, f + 10, f + 11], "itemsize": size})


class FrameWriter:
    """One actor's frame records, in the order it pushes them.

    :meth:`first` at an episode's start, :meth:`step` after every env step. The Q16.16
    priority of each record is in :attr:`priorities` (0 for a ``first`` record).
    """

    def __init__(self, layout: FrameLayout) -> None:
        self.layout = layout
        self._recs: list[np.ndarray] = []
        self._prios: list[int] = []
        self.steps = 0

    def _record(self, frame: np.ndarray, action: int, reward: float, first: bool,
                terminal: bool, priority: int) -> None:
        r = np.zeros((), self.layout.dtype)
        r["frame"] = frame
        r["reward"], r["step"], r["action"] = reward, self.steps & 0xFFFFFFFF, action
        r["first"], r["terminal"] = first, terminal
        self._recs.append(r)
        self._prios.append(priority)

    def first(self, frame: np.ndarray) -> None:
        """An episode's first frame (priority 0: no transition leads to it)."""
        self._record(frame, 0, 0.0, True, False, 0)

    def step(self, frame: np.ndarray, action: int, reward: float, terminal: bool,
             priority: float) -> None:
        """The frame ``action`` led to, with its ``reward``; ``priority`` a float (to Q16.16)."""
        self.steps += 1
        self._record(frame, action, reward, False, terminal, int(to_fixed(priority)))

    def __len__(self) -> int:
        return len(self._recs)

    def take(self) -> tuple[np.ndarray, np.ndarray]:
        """The records gathered so far as ``uint8`` (n, R) and their Q16.16 priorities; cleared."""
        n = len(self._recs)
        out = np.zeros(n, self.layout.dtype)  # np.stack would drop the padding
        for i, r in enumerate(self._recs):
            out[i] = r
        recs = out.view(np.uint8).reshape(n, self.layout.dtype.itemsize)
        prios = np.asarray(self._prios, np.uint32)
        self._recs.clear()
        self._prios.clear()
        return recs, prios


@dataclass
class FrameBatch:
    """Transitions rebuilt from stacks: the :class:`SampleBatch` of the usable samples and which
    samples of the stacked answer they were."""

    batch: SampleBatch
    usable: np.ndarray


def stack_frames(sample: StackedSample, layout: FrameLayout, beta_weights: bool = True
                 ) -> FrameBatch:
    """Rebuild transitions from a :class:`StackedSample` of ``layout.stack`` records.

    Frames older than the newest ``first`` of their stack, and positions whose chain broke,
    are zeros (Dopamine's padding). A sample is usable when its record x is no ``first``
    and x's predecessor is valid; only usable ones are in the batch (weights renormalised
    over them when ``beta_weights``).
    """
    k = layout.stack
    b = len(sample.indices)
    if sample.records.shape[1] != k:
        raise ValueError(f"bad stack={sample.records.shape[1]}: the layout stacks {k} records")
    rec = np.ascontiguousarray(sample.records).view(layout.dtype).reshape(b, k)
    valid = sample.valid
    first = rec["first"].astype(bool) & valid
    # a first at a later position hides every older one (that frame is another episode's)
    later_first = np.flip(np.cumsum(np.flip(first, 1), 1), 1) - first > 0
    keep = valid & ~later_first
    frames = rec["frame"] * keep[:, :, None, None]
    usable = valid[:, -2] & ~first[:, -1]
    sel = np.flatnonzero(usable)
    x = rec[sel, -1]
    w = sample.weights[sel]
    if beta_weights and len(w) and w.max() > 0:
        w = (w / w.max()).astype(np.float32)
    out = SampleBatch(frames[sel, :-1], x["action"].astype(np.int64), x["reward"].copy(),
                      frames[sel, 1:], x["terminal"].astype(np.float32),
                      sample.indices[sel].copy(), sample.priorities_fixed[sel].copy(),
                      sample.totals[sel].copy(), sample.size, w, sample.records[sel, -1].copy())
    return FrameBatch(out, usable)


class InNetFrameReplay:
    """The switch's replay memory holding frame records (a :class:`hostdrv.ReplayClient` of raw
    records): :meth:`push_frames` what a :class:`FrameWriter` gathered, :meth:`sample`
    transitions rebuilt from stacks, :meth:`update_priorities` as every :class:`Replay`.

    Raises
    ------
    ValueError
        When the switch's records are smaller than the layout's, or the path's MTU cannot
        carry them (:class:`hostdrv.ReplayClient`).
    """

    def __init__(self, layout: FrameLayout, url: str, worker: int, *,
                 rate_timeout: float | None = None) -> None:
        from hostdrv import ReplayClient

        extra = {} if rate_timeout is None else {"rate_timeout": rate_timeout}
        self._client = ReplayClient(url, worker=worker, obs_shape=None, retries=10, **extra)
        need = layout.dtype.itemsize if layout.record_bytes else frame_record_bytes(
            layout.frame_shape)
        if self._client.record_bytes < need:
            self._client.close()
            raise ValueError(f"bad record size={need}: the switch at {url} holds records of "
                             f"RPL_RECORD_BYTES={self._client.record_bytes}")
        from dataclasses import replace

        self.layout = replace(layout, record_bytes=self._client.record_bytes)
        self.max_priority = 1.0
        self.comm_seconds = 0.0
        self.dropped = 0
        """Samples drawn but no transition (a ``first`` or a broken chain), replaced."""

    def _draw(self, batch: int, prioritized: bool, beta: float) -> StackedSample:
        """One stacked sample of ``batch`` (the switch's answer)."""
        s = self._client.sample(batch, prioritized=prioritized, beta=beta,
                                stack=self.layout.stack)
        assert isinstance(s, StackedSample)
        return s

    def push_frames(self, records: np.ndarray, priorities: np.ndarray) -> np.ndarray:
        """Push ``uint8`` (n, R) frame records with Q16.16 priorities; their indices."""
        t0 = time.perf_counter()
        out = self._client.push_records(records, priorities)
        self.comm_seconds += time.perf_counter() - t0
        return out

    def sample(self, batch: int, *, prioritized: bool = True, beta: float = 0.4,
               tries: int = 16) -> SampleBatch:
        """``batch`` transitions rebuilt from stacks; draws that are none are replaced (up to
        ``tries`` requests, then ``RuntimeError``)."""
        t0 = time.perf_counter()
        parts: list[SampleBatch] = []
        have = 0
        for _ in range(tries):
            s = self._draw(batch, prioritized, beta)
            fb = stack_frames(s, self.layout, beta_weights=False)
            self.dropped += int((~fb.usable).sum())
            parts.append(fb.batch)
            have += len(fb.batch.indices)
            if have >= batch:
                break
        else:
            raise RuntimeError(f"{tries} stacked samples of {batch} gave {have} transitions: "
                               "the memory holds mostly episode starts")
        self.comm_seconds += time.perf_counter() - t0
        return _concat(parts, batch, prioritized, beta)

    def update_priorities(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        """New float priorities of the sampled records (:meth:`hostdrv.ReplayClient.update_priorities`)."""
        t0 = time.perf_counter()
        p = np.asarray(priorities, np.float64)
        if p.size:
            self.max_priority = max(self.max_priority, float(p.max()))
        self._client.update_priorities(indices, p)
        self.comm_seconds += time.perf_counter() - t0

    def close(self) -> None:
        """Close the connection."""
        self._client.close()


class LocalFrameReplay(InNetFrameReplay):
    """Frame records in a worker's own :class:`rl.replay.PrioritizedStore`: one actor's chain
    (its records in push order), stacked as the switch stacks them, the same sampler."""

    def __init__(self, layout: FrameLayout, capacity: int, seed: int) -> None:
        from dataclasses import replace

        from rl.replay.store import PrioritizedStore

        size = layout.record_bytes or frame_record_bytes(layout.frame_shape)
        self.layout = replace(layout, record_bytes=size)
        self.store = PrioritizedStore(capacity, self.layout, seed)  # type: ignore[arg-type]
        self._wseq = np.zeros(capacity, np.int64)
        self._prev = np.full(capacity, NO_INDEX, np.int64)
        self._owner = np.zeros(capacity, np.uint8)  # one actor: every record is its own
        self._last, self._pushed = NO_INDEX, 0
        self.max_priority = 1.0
        self.comm_seconds = 0.0
        self.dropped = 0

    def push_frames(self, records: np.ndarray, priorities: np.ndarray) -> np.ndarray:
        """Write ``uint8`` (n, R) frame records with Q16.16 priorities; their indices."""
        t0 = time.perf_counter()
        recs = np.ascontiguousarray(records).view(self.layout.dtype).reshape(-1)
        idx = self.store.push(recs, np.asarray(priorities, np.uint32))
        for i in idx.tolist():
            self._pushed += 1
            self._wseq[i], self._prev[i], self._last = self._pushed, self._last, i
        self.comm_seconds += time.perf_counter() - t0
        return idx

    def _draw(self, batch: int, prioritized: bool, beta: float) -> StackedSample:
        """One stacked sample of ``batch`` from the store, as the switch would answer it."""
        k = self.layout.stack
        idx, prio, _, total, size = self.store.sample(batch, prioritized)
        wseq, prev, owner = self._wseq.tolist(), self._prev.tolist(), self._owner.tolist()
        chains = np.array([stack_chain(i, k, owner, wseq, prev) for i in idx.tolist()], np.int64)
        valid = chains != NO_INDEX
        recs = np.zeros((batch, k, self.layout.dtype.itemsize), np.uint8)
        flat = self.store.records.view(np.uint8).reshape(self.store.capacity, -1)
        recs[valid] = flat[chains[valid]]
        w = (importance_weights(prio, total, size, beta) if prioritized
             else np.ones(batch, np.float32))
        return StackedSample(recs, valid, np.where(valid, chains, -1), idx, prio,
                             np.full(batch, total, np.uint64), size, w)

    def update_priorities(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        """New float priorities of the sampled records."""
        p = np.asarray(priorities, np.float64)
        if p.size:
            self.max_priority = max(self.max_priority, float(p.max()))
        self.store.update(np.asarray(indices, np.int64), to_fixed(p))

    def close(self) -> None:
        """Nothing to release."""


def _concat(parts: list[SampleBatch], n: int, prioritized: bool, beta: float) -> SampleBatch:
    def cat(name: str) -> np.ndarray:
        return np.concatenate([getattr(p, name) for p in parts])[:n]

    prio, totals = cat("priorities_fixed"), cat("totals")
    size = parts[-1].size
    w = (importance_weights(prio, totals, size, beta) if prioritized
         else np.ones(n, np.float32))
    return SampleBatch(cat("obs"), cat("actions"), cat("rewards"), cat("next_obs"), cat("dones"),
                       cat("indices"), prio, totals, size, w, cat("records"))
