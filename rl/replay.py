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
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from hostdrv.wire.consts import NOT_YET_MIN_SIZE, NOT_YET_RATE
from hostdrv.wire.protocol import MAX_BATCH
from hostdrv.wire.ratelimit import RateLimiter, RateLimiterConfig, RateLimiterState
from hostdrv.wire.records import (
    SampleBatch,
    check_priorities,
    pack_records,
    record_dtype,
    records_from_bytes,
    to_fixed,
)
from hostdrv.wire.records import importance_weights as _weights
from hostdrv.wire.regmap import REGISTERS
from hostdrv.wire.sampler import DEFAULT_SEED, SumTree, XorShift32, draw_indices, sample_total
from rl.tcp import TcpServer, connect, recv_exact, recv_struct

REPLAY_KINDS = ("local", "innet", "server")
"""Names accepted for :attr:`ReplaySpec.kind`."""

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


def _batch(layout: RecordLayout, indices: np.ndarray, prio_q: np.ndarray, records: np.ndarray,
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


# --------------------------------------------------------------------------------------------
# The store: storage + writer (ring) + the switch's sampler (hostdrv.wire.sampler)
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------------


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
        return _batch(self.layout, idx, prio, rec, total, size, prioritized, beta)

    def _update(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        self.store.update(indices, to_q16(priorities))


# -- TCP replay server --------------------------------------------------------------------------

_RQ = struct.Struct("!BII")  # op, count, arg
_OP_PUSH, _OP_SAMPLE, _OP_UPDATE, _OP_LAYOUT = 1, 2, 3, 4
_U32 = struct.Struct("!I")  # capacity (LAYOUT), skipped pairs (UPDATE)
_PUSH_ACK = struct.Struct("!BII")  # status (0 ok, 2 not yet), first index or reason, size
_SAMPLE_HDR = struct.Struct("!BQII")  # status (0 ok, 1 empty, 2 not yet), total or reason,
#                                       size, batch
_OK, _EMPTY, _NOT_YET = 0, 1, 2


class ReplayServer:
    """A TCP replay server: one :class:`PrioritizedStore` shared by every client.

    Requests (``op``, ``count``, ``arg``) and their payloads:

    * PUSH: ``count`` u32 priorities + ``count`` records of R bytes →
      status, u32 first index (or the NOT_YET reason), u32 size;
    * SAMPLE: ``count`` = batch, ``arg`` = prioritized → status, u64 total
      (or the NOT_YET reason), u32 size, u32 batch, then when served batch ×
      u32 indices, batch × u32 priorities, batch records;
    * UPDATE: ``count`` × (u32 index, u32 priority) → u32 skipped pairs.

    A request the rate limiter refuses is answered "not yet" (status 2) at once, as the
    switch answers NOT_YET: the client asks again.

    Parameters
    ----------
    capacity : int
        Records (power of two).
    record_bytes : int
        R; the layout is fixed by the first client.
    seed : int
        xorshift32 seed.
    host, port : listen address (port 0: ephemeral, see :attr:`address`).
    limiter : RateLimiterConfig or None
        The rate limiter (None: off).
    """

    def __init__(self, capacity: int = DEFAULT_CAPACITY, record_bytes: int = DEFAULT_RECORD_BYTES,
                 seed: int = DEFAULT_SEED, host: str = "127.0.0.1", port: int = 0,
                 limiter: RateLimiterConfig | None = None) -> None:
        self.capacity = capacity
        self.record_bytes = record_bytes
        self.seed = seed
        self.store: PrioritizedStore | None = None
        self._limiter = limiter
        self._lock = threading.Lock()
        self._server = TcpServer(self._serve, host, port, name="replay")
        self.address: tuple[str, int] = self._server.address

    def start(self) -> ReplayServer:
        """Accept clients in a background thread."""
        self._server.start()
        return self

    def stop(self) -> None:
        """Close the listener and every client connection."""
        self._server.stop()

    def configure_rate_limiter(self, config: RateLimiterConfig) -> None:
        """Set the rate limiter (its accumulator starts at 0, as a write of ``RPL_SPI``)."""
        with self._lock:
            self._limiter = config
            if self.store is not None:
                self.store.limiter.configure(config)

    def rate_limiter(self) -> tuple[RateLimiterState, RateCounts, int]:
        """The limiter's state, the counts of served and refused requests and the size, at
        one moment."""
        with self._lock:
            if self.store is None:
                return RateLimiter(self._limiter).state(), RateCounts(), 0
            c = self.store.counts
            return (self.store.limiter.state(),
                    RateCounts(c.samples, c.pushes, c.push_not_yet, c.sample_not_yet),
                    self.store.size)

    def _serve(self, conn: socket.socket) -> None:
        r = self.record_bytes
        while True:
            op, count, arg = recv_struct(conn, _RQ)
            if op == _OP_LAYOUT:
                spec = recv_exact(conn, count).decode().split("|")
                layout = RecordLayout(
                    obs_shape=tuple(int(x) for x in spec[0].split(",") if x),
                    obs_dtype=spec[1],
                    action_shape=tuple(int(x) for x in spec[2].split(",") if x),
                    action_dtype=spec[3], record_bytes=r)
                with self._lock:
                    if self.store is None:
                        self.store = PrioritizedStore(self.capacity, layout, self.seed,
                                                      self._limiter)
                conn.sendall(_U32.pack(self.capacity))
                continue
            store = self.store
            if store is None:
                raise ConnectionError(f"replay op {op} before the layout")
            if op == _OP_PUSH:
                payload = recv_exact(conn, 4 * count + r * count)
                prio = np.frombuffer(payload, "<u4", count)
                rec = np.frombuffer(payload, store.layout.dtype, count, offset=4 * count)
                with self._lock:
                    try:
                        idx = store.push(rec, prio)
                    except RateLimited as e:
                        conn.sendall(_PUSH_ACK.pack(_NOT_YET, e.reason, e.size))
                        continue
                    size = store.size
                conn.sendall(_PUSH_ACK.pack(_OK, int(idx[0]), size))
            elif op == _OP_SAMPLE:
                with self._lock:
                    try:
                        idx, prio, rec, total, size = store.sample(count, bool(arg))
                    except RateLimited as e:
                        conn.sendall(_SAMPLE_HDR.pack(_NOT_YET, e.reason, e.size, count))
                        continue
                    except LookupError:
                        conn.sendall(_SAMPLE_HDR.pack(_EMPTY, 0, 0, count))
                        continue
                conn.sendall(_SAMPLE_HDR.pack(_OK, total, size, count)
                             + idx.astype("<u4").tobytes() + prio.astype("<u4").tobytes()
                             + rec.tobytes())
            elif op == _OP_UPDATE:
                pairs = np.frombuffer(recv_exact(conn, 8 * count), "<u4").reshape(count, 2)
                with self._lock:
                    skipped = store.update(pairs[:, 0].astype(np.int64), pairs[:, 1])
                conn.sendall(_U32.pack(skipped))
            else:
                raise ConnectionError(f"unknown replay op {op}")


class ServerReplay(Replay):
    """A client of a :class:`ReplayServer` (kernel TCP sockets).

    A request the server's rate limiter refuses, or a sample of an empty memory, is sent
    again after a backoff (:func:`hostdrv.client.replay.rate_backoff`, as the switch's
    client does) until it is served or ``rate_timeout`` seconds have passed (then
    :class:`RateLimited`, or :class:`LookupError` for a memory that stayed empty).
    """

    def __init__(self, layout: RecordLayout, address: tuple[str, int],
                 rate_timeout: float = 60.0) -> None:
        super().__init__(layout)
        self.rate_timeout = rate_timeout
        self._sock = connect(address)
        spec = "|".join([",".join(map(str, layout.obs_shape)), layout.obs_dtype,
                         ",".join(map(str, layout.action_shape)), layout.action_dtype]).encode()
        self._sock.sendall(_RQ.pack(_OP_LAYOUT, len(spec), 0) + spec)
        (self.capacity,) = recv_struct(self._sock, _U32)

    def _wait(self, since: float | None, tries: int, what: str, reason: int,
              size: int, empty: bool = False) -> float:
        """A NOT_YET (or empty) answer: sleep before asking again, or raise after
        ``rate_timeout`` (:class:`LookupError` when the memory stayed empty)."""
        from hostdrv.client.replay import rate_backoff

        now = time.monotonic()
        since = now if since is None else since
        if now - since > self.rate_timeout:
            if empty:
                raise LookupError(f"replay memory is empty ({what}, waited "
                                  f"{now - since:.1f} s)")
            raise RateLimited(what, reason, size, waited=now - since)
        time.sleep(rate_backoff(tries))
        return since

    def _push(self, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray,
              next_obs: np.ndarray, dones: np.ndarray, priorities: np.ndarray) -> np.ndarray:
        rec = self.layout.pack(obs, actions, rewards, next_obs, dones)
        k = len(rec)
        msg = (_RQ.pack(_OP_PUSH, k, 0) + to_q16(priorities).astype("<u4").tobytes()
               + rec.tobytes())
        since, tries = None, 0
        while True:
            self._sock.sendall(msg)
            status, first, size = recv_struct(self._sock, _PUSH_ACK)
            if status == _OK:
                return (first + np.arange(k)) % self.capacity
            tries += 1
            since = self._wait(since, tries, f"push of {k} records", first, size)

    def _sample(self, batch: int, prioritized: bool, beta: float) -> SampleBatch:
        if batch < 1 or batch > MAX_BATCH or batch & (batch - 1):
            raise ValueError(f"batch {batch} must be a power of two in 1..{MAX_BATCH}")
        since, tries = None, 0
        while True:
            self._sock.sendall(_RQ.pack(_OP_SAMPLE, batch, int(prioritized)))
            status, total, size, b = recv_struct(self._sock, _SAMPLE_HDR)
            if status == _OK:
                break
            tries += 1
            since = self._wait(since, tries, f"sample of {batch}", total, size,
                               empty=status == _EMPTY)
        body = recv_exact(self._sock, 8 * b + self.layout.record_bytes * b)
        idx = np.frombuffer(body, "<u4", b).astype(np.int64)
        prio = np.frombuffer(body, "<u4", b, offset=4 * b)
        rec = np.frombuffer(body, self.layout.dtype, b, offset=8 * b)
        return _batch(self.layout, idx, prio, rec, total, size, prioritized, beta)

    def _update(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        pairs = np.stack([indices.astype("<u4"), to_q16(priorities).astype("<u4")], axis=1)
        self._sock.sendall(_RQ.pack(_OP_UPDATE, len(pairs), 0) + pairs.tobytes())
        recv_struct(self._sock, _U32)

    def close(self) -> None:
        """Close the connection."""
        self._sock.close()


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


def make_replay(spec: ReplaySpec, rank: int, layout: RecordLayout) -> Replay:
    """Build worker ``rank``'s replay handle for the strategy named by ``spec.kind``."""
    if spec.kind == "local":
        return LocalReplay(layout, spec.capacity, spec.seed + rank, spec.rate_limiter)
    if spec.kind == "server":
        assert spec.address is not None, "server replay needs the server address"
        if spec.rate_timeout is None:
            return ServerReplay(layout, spec.address)
        return ServerReplay(layout, spec.address, rate_timeout=spec.rate_timeout)
    assert spec.url is not None, "innet replay needs the switch URL"
    return InNetReplay(layout, spec.url, rank + spec.member_offset,
                       rate_timeout=spec.rate_timeout)


class ReplayBackend:
    """Starts what a replay strategy needs outside the workers.

    ``server``: a :class:`ReplayServer` thread. ``innet``: a soft switch when
    no URL is given (or the one the gradient sync uses), then the replay engine
    is configured and seeded (and its rate limiter, given ``spec.rate_limiter``), and
    ``capacity`` is read from the switch. ``local``: nothing.

    Parameters
    ----------
    spec : ReplaySpec
        The strategy; its ``address`` or ``url`` is filled by :meth:`start`.
    host : str
        Address the replay server or a soft switch started here listens on.
    advertise : str or None
        Address the workers are given for them (default ``host``).
    key_file : str or None
        Control key file of a soft switch started here (as for
        :class:`rl.sync.SyncBackend`).
    """

    def __init__(self, spec: ReplaySpec, *, host: str = "127.0.0.1",
                 advertise: str | None = None, key_file: str | None = None) -> None:
        self.spec = spec
        self.host = host
        self.advertise = advertise or host
        self.key_file = key_file
        self.server: ReplayServer | None = None
        self.switch: object | None = None

    def start(self) -> ReplaySpec:
        """Bring the shared piece up and return the spec the workers use."""
        s = self.spec
        if s.kind == "server":
            self.server = ReplayServer(s.capacity, s.record_bytes, s.seed, host=self.host,
                                       limiter=s.rate_limiter).start()
            s.address = (self.advertise, self.server.address[1])
        elif s.kind == "innet":
            import hostdrv
            from rl.sync.backend import switch_url

            if s.url is None:
                switch = hostdrv.SoftSwitch((self.host, 0), capacity=s.capacity,
                                            control_key=self.key_file)
                self.switch = switch.start()
                s.url = switch_url(self.advertise, switch.address[1], self.key_file)
            ctl = hostdrv.SwitchControl(s.url)
            ctl.configure_replay(seed=s.seed)
            if s.rate_limiter is not None:
                lim = s.rate_limiter
                ctl.configure_rate_limiter(lim.min_size, lim.samples_per_insert,
                                           lim.error_buffer)
            s.capacity = ctl.read("RPL_CAPACITY")
            s.record_bytes = ctl.read("RPL_RECORD_BYTES")
            ctl.close()
        return s

    def stop(self) -> None:
        """Tear down what :meth:`start` brought up."""
        if self.server is not None:
            self.server.stop()
        if self.switch is not None:
            self.switch.stop()
