"""The ``server`` strategy: a kernel-socket TCP replay server (:class:`ReplayServer`)
holding one :class:`~rl.replay.store.PrioritizedStore`, and its client (:class:`ServerReplay`)."""

from __future__ import annotations

import socket
import struct
import threading
import time

import numpy as np

from hostdrv.wire.protocol import MAX_BATCH
from hostdrv.wire.ratelimit import RateLimiter, RateLimiterConfig, RateLimiterState
from hostdrv.wire.records import SampleBatch
from hostdrv.wire.sampler import DEFAULT_SEED
from rl.replay.base import Replay
from rl.replay.layout import (
    DEFAULT_CAPACITY,
    DEFAULT_RECORD_BYTES,
    RecordLayout,
    sample_batch,
    to_q16,
)
from rl.replay.store import PrioritizedStore, RateCounts, RateLimited
from rl.tcp import TcpServer, connect, recv_exact, recv_struct

__all__ = ["ReplayServer", "ServerReplay"]

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
        return sample_batch(self.layout, idx, prio, rec, total, size, prioritized, beta)

    def _update(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        pairs = np.stack([indices.astype("<u4"), to_q16(priorities).astype("<u4")], axis=1)
        self._sock.sendall(_RQ.pack(_OP_UPDATE, len(pairs), 0) + pairs.tobytes())
        recv_struct(self._sock, _U32)

    def close(self) -> None:
        """Close the connection."""
        self._sock.close()
