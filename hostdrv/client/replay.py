"""Replay client (:class:`ReplayClient`): push, sample and reprioritize through the switch.

Speaks the PUSH/PUSH_ACK, SAMPLE_REQ/SAMPLE_RESP and UPDATE part of
``docs/protocol.md`` (section 5) over a
:class:`~hostdrv.client.transport.DatagramTransport`, with a window of requests in
flight and retries.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from hostdrv.client.control import ROLE_ACTOR, ROLE_LEARNER, SwitchControl
from hostdrv.client.endpoint import Endpoint
from hostdrv.client.errors import RateLimitTimeoutError, ReplayEmptyError, ReplayTimeoutError
from hostdrv.client.transport import Backend, SwitchTimeoutError
from hostdrv.wire import consts as C
from hostdrv.wire.protocol import (
    BLOCK,
    DESCRIPTOR,
    HEADER,
    HEADER_LEN,
    MAX_BATCH,
    MAX_UPDATE_PAIRS,
    STACK_WORDS,
    VERSION,
    Flags,
    Opcode,
    check_stack,
)
from hostdrv.wire.records import (
    FIXED_HINT,
    MAX_IPV4_PACKET,
    SampleBatch,
    StackedSample,
    Transitions,
    check_priorities,
    check_record_mtu,
    check_u32,
    importance_weights,
    pack_records,
    push_count,
    record_dtype,
    records_from_bytes,
    to_fixed,
)

_PUSH_ACK = int(Opcode.PUSH_ACK)
_SAMPLE_RESP = int(Opcode.SAMPLE_RESP)
_PRIORITIZED = int(Flags.PRIORITIZED)
_NOT_YET = int(Flags.NOT_YET)
RATE_BACKOFF_MIN = 0.0005
"""Seconds before the first resend of a request answered NOT_YET (doubled per NOT_YET)."""
RATE_BACKOFF_MAX = 0.02
"""Longest wait between two resends of a request answered NOT_YET."""


_IP_MTU = getattr(socket, "IP_MTU", 14)  # Linux: a connected socket's path MTU


def path_mtu(transport: Any) -> int | None:
    """The IPv4 MTU of a datagram transport's path (its connected UDP socket's ``IP_MTU``:
    the interface's, or a smaller one the kernel learned), None when it cannot be read."""
    sock = getattr(transport, "sock", None)
    if not isinstance(sock, socket.socket):
        return None
    try:
        return int(sock.getsockopt(socket.IPPROTO_IP, _IP_MTU))
    except OSError:
        return None


def rate_backoff(not_yets: int) -> float:
    """Seconds to wait before resending a request after its ``not_yets``-th NOT_YET (from 1)."""
    return min(RATE_BACKOFF_MIN * (1 << min(not_yets - 1, 16)), RATE_BACKOFF_MAX)


class ReplayClient(Endpoint):
    """Push transitions into, sample from and reprioritize the switch's replay memory.

    Parameters
    ----------
    url:
        Switch URL.
    worker:
        Member id (0 … 7) of this actor/learner.
    job:
        Job id, the ``job`` byte of its messages: must be its table's job's ``JOB_ID``
        (default: that ``JOB_ID`` with ``table``, else 0).
    table:
        The job (register page, ``docs/protocol.md`` section 11) whose replay table this
        client uses: its capacity and record size are that page's ``JOB_RPL_CAP`` and
        ``JOB_RPL_RECORD``, its limiter and size registers that page's ``RPL_*``.
        Default: job 0's.
    obs_shape, obs_dtype, action_shape, action_dtype:
        Layout of a transition. A record is ``obs``, ``action``, ``reward``
        (float32), ``next_obs``, ``done`` (uint8), little-endian, packed
        back to back from byte 0 and padded with zeros to R =
        ``JOB_RPL_RECORD`` of the table. ``obs_shape=None``: raw records of another layout
        (Atari frame records, :mod:`rl.replay.frames`): :meth:`push_records` and the
        ``records`` of a sample, no :meth:`pack` / :meth:`push`.
    timeout:
        Seconds to wait for an answer before asking again.
    retries:
        Attempts before :class:`ReplayTimeoutError`.
    register:
        Write this endpoint's member entry with ``roles``.
    roles:
        Role bits to register (default actor and learner).
    port, member_address, control:
        As for :class:`Aggregator`.
    window:
        Requests in flight at once.
    mtu:
        IPv4 MTU of the path to the switch; default: the connected socket's (``IP_MTU``,
        the interface's: about 64 KiB on loopback, 1500 on plain Ethernet, 9000 with jumbo
        frames). A record that does not fit one frame (114 + R bytes of IPv4) is refused
        before anything is sent (``ValueError`` naming R, the MTU and the fix); a PUSH
        carries ``min(16, (MTU - 114) // R)`` records (:attr:`push_batch`).
    rate_timeout:
        Seconds a PUSH or SAMPLE_REQ may keep being answered NOT_YET by the switch's rate
        limiter (protocol section 5, "Rate limiting": ``RPL_MIN_SIZE``, ``RPL_SPI``,
        ``RPL_SPI_ERROR``, or an empty memory) before the call raises
        :class:`~hostdrv.client.errors.RateLimitTimeoutError` (:class:`ReplayEmptyError` when the
        memory stayed empty). Meanwhile the request is resent after a backoff of
        :data:`RATE_BACKOFF_MIN` doubling up to :data:`RATE_BACKOFF_MAX` seconds; a refused
        PUSH wrote nothing and is resent whole, so no record is lost.

    Raises
    ------
    ValueError
        When a record does not fit in R bytes, or R does not fit the path's MTU.

    Notes
    -----
    A PUSH whose PUSH_ACK is lost is sent again, so its records may be
    stored twice (at least once). UPDATE has no acknowledgement: a lost
    UPDATE leaves the old priorities.
    """

    def __init__(self, url: str, *, worker: int, job: int | None = None,
                 obs_shape: tuple[int, ...] | None, table: int | None = None,
                 obs_dtype: Any = np.float32, action_shape: tuple[int, ...] = (),
                 action_dtype: Any = np.int64, timeout: float = 0.2, retries: int = 5,
                 register: bool = True, roles: int = ROLE_ACTOR | ROLE_LEARNER,
                 port: int | None = None, member_address: tuple[str, int] | None = None,
                 control: str | SwitchControl | None = None, window: int = 8,
                 backends: Mapping[str, Backend] | None = None,
                 rate_timeout: float = 10.0, mtu: int | None = None) -> None:
        super().__init__(url, worker=worker, job=job, register=register, roles=roles,
                         port=port, member_address=member_address, control=control,
                         backends=backends, page=table)
        self.record_bytes = self.control.read("JOB_RPL_RECORD")
        """R, bytes per record of this client's table (``JOB_RPL_RECORD``)."""
        self.capacity = self.control.read("JOB_RPL_CAP")
        """C, records of this client's table (``JOB_RPL_CAP``; its indices are 0 .. C - 1)."""
        if not self.capacity:
            self.close()
            raise ValueError(f"bad table={self.page}: job {self.page} has no replay table on "
                             f"the switch at {url} (JOB_RPL_CAP=0): admit it with table records "
                             "(hostdrv.client.jobs.admit(..., table_records=...))")
        self.timeout = timeout
        self.retries = retries
        self.window = max(1, window)
        self.rate_timeout = rate_timeout
        self.max_priority = 1.0
        """Priority given to pushed transitions without one (largest seen so far)."""
        self.mtu = mtu if mtu is not None else path_mtu(self.transport)
        """The path's IPv4 MTU the record size was checked against (None: unknown, not checked)."""
        try:
            if self.mtu is not None:
                check_record_mtu(self.record_bytes, self.mtu, f"the path to {url}")
            self.record_dtype: np.dtype | None = None if obs_shape is None else record_dtype(
                obs_shape, obs_dtype, action_shape, action_dtype, self.record_bytes)
        except ValueError:
            self.close()
            raise
        self.push_batch = push_count(self.record_bytes, self.mtu or MAX_IPV4_PACKET)
        """Records per PUSH: ``min(16, (MTU − 114) // R)``."""

    # -- records ---------------------------------------------------------------------
    def pack(self, obs: Any, action: Any, reward: Any, next_obs: Any, done: Any) -> np.ndarray:
        """Transitions as structured records (``self.record_dtype``, shape (n,)).

        A single transition (``obs`` of shape ``obs_shape``) gives n = 1.
        """
        return pack_records(self._layout(), obs, action, reward, next_obs, done)

    def unpack(self, records: Any) -> Transitions:
        """Records (bytes, ``uint8`` (n, R) or structured) back to :class:`Transitions`."""
        return records_from_bytes(records, self._layout())

    def _layout(self) -> np.dtype:
        if self.record_dtype is None:
            raise ValueError("bad obs_shape=None: this client has no transition layout (raw "
                             "records: push_records, sample(...).records)")
        return self.record_dtype

    # -- push ------------------------------------------------------------------------
    def push(self, obs: Any, action: Any, reward: Any, next_obs: Any, done: Any,
             priority: Any = None) -> np.ndarray:
        """Store transitions; return their replay indices.

        Parameters
        ----------
        obs, action, reward, next_obs, done:
            One transition or a batch (leading dimension n).
        priority:
            Float priorities (scalar or n values, already ``(|δ| + ε)^α``);
            default :attr:`max_priority`. Sent as Q16.16 (:func:`to_fixed`:
            0 and tiny priorities become 1, huge ones 2**32 − 1).

        Returns
        -------
        numpy.ndarray
            ``int64`` index of each transition.

        Raises
        ------
        ValueError
            A priority is NaN, negative or infinite (nothing is sent).
        ReplayTimeoutError
            A PUSH got no PUSH_ACK after every retry.
        RateLimitTimeoutError
            The rate limiter answered NOT_YET for longer than :attr:`rate_timeout`.
        """
        rec = self.pack(obs, action, reward, next_obs, done)
        n = len(rec)
        prio = to_fixed(self.max_priority if priority is None else priority)
        prio = np.broadcast_to(prio, (n,))
        raw = rec.view(np.uint8).reshape(n, self.record_bytes)
        return self.push_records(raw, prio)

    def push_records(self, records: np.ndarray, priorities: np.ndarray) -> np.ndarray:
        """Push raw records (``uint8`` (n, R)) with Q16.16 priorities; return indices.

        ``priorities`` are sent as they are (0 allowed: never sampled by priority).

        Raises
        ------
        ValueError
            A priority is not an integer in [0, 2**32 − 1] (NaN, infinite,
            negative, fractional or too large), or the counts differ; nothing
            is sent.
        ReplayTimeoutError
            A PUSH got no PUSH_ACK after every retry.
        RateLimitTimeoutError
            The rate limiter answered NOT_YET for longer than :attr:`rate_timeout` (the
            batches acknowledged so far are stored; the refused one wrote nothing).

        Batches of up to :attr:`push_batch` records go out :attr:`window` at a time; a batch the
        rate limiter refuses is resent, oldest first, before any newer refused one, so the
        records keep their order in the ring unless the limiter opens between two batches
        already in flight (the returned indices always say where each record went).
        """
        rb = self.record_bytes
        records = np.ascontiguousarray(records, dtype=np.uint8).reshape(-1, rb)
        prios = check_u32(priorities, "priorities", FIXED_HINT).reshape(-1)
        n = len(records)
        if len(prios) != n:
            raise ValueError(f"bad priorities length={len(prios)}: need one per record ({n})")
        indices = np.full(n, -1, dtype=np.int64)
        per = self.push_batch
        batches = [(a, min(a + per, n)) for a in range(0, n, per)]
        # seq -> [message, start, count, deadline, tries, first NOT_YET time, NOT_YETs]
        pending: dict[int, list[Any]] = {}
        nxt = 0
        while nxt < len(batches) or pending:
            now = time.monotonic()
            while nxt < len(batches) and len(pending) < self.window:
                a, b = batches[nxt]
                k = b - a
                seq = self._next_seq()
                msg = bytearray(HEADER_LEN + BLOCK + k * rb)
                HEADER.pack_into(msg, 0, VERSION, int(Opcode.PUSH), 0, self.job, self.worker,
                                 0, seq, k, 0, 0)
                msg[HEADER_LEN:HEADER_LEN + 4 * k] = prios[a:b].tobytes()
                msg[HEADER_LEN + BLOCK:] = records[a:b].tobytes()
                self.transport.send(msg)
                pending[seq] = [msg, a, k, now + self.timeout, 1, 0.0, 0]
                nxt += 1
            first = min(v[3] for v in pending.values())
            nbytes, seg = self.transport.recv_into(self._rbuf, max(0.0, first - now))
            for off in range(0, nbytes, max(seg, 1)):
                if min(seg, nbytes - off) < HEADER_LEN:
                    continue
                _v, op, fl, jb, _w, why, seq, cnt, aux, _r = HEADER.unpack_from(self._rbuf, off)
                entry = pending.get(seq)
                if op != _PUSH_ACK or jb != self.job or entry is None:
                    continue
                if fl & _NOT_YET and cnt == 0:  # resent whole after a backoff
                    entry[5], entry[6], entry[3] = self._rate_wait(
                        entry[5], entry[6], why, aux, f"PUSH of {entry[2]} records (seq {seq})")
                    entry[4] = 0  # answered: the resend is no retry of a lost frame
                    continue
                if cnt != entry[2]:
                    continue
                a, k = entry[1], entry[2]
                indices[a:a + k] = (aux + np.arange(k)) % self.capacity
                del pending[seq]
                held = next((e for e in pending.values() if e[6]), None)
                if held is not None:  # the next refused batch goes now that this one passed
                    held[3] = min(held[3], now)
            if nbytes:
                continue
            now = time.monotonic()
            # A batch the limiter refused is resent only when no older batch is still refused,
            # so one actor's records land in the order it pushed them (a newer batch's shorter
            # backoff must not overtake an older one's; frame stacks read consecutive records).
            hold = 0.0
            for seq, entry in pending.items():  # insertion order = seq order
                if hold and entry[6]:
                    entry[3] = max(entry[3], hold)
                    continue
                if entry[3] <= now:
                    if entry[4] >= self.retries:
                        raise ReplayTimeoutError(self.url, f"PUSH of {entry[2]} records (seq {seq})",
                                                 entry[4], "is this worker registered as an actor "
                                                 "(MEMBER_ROLE bit 1) and the replay engine on?")
                    self.transport.send(entry[0])
                    entry[3] = now + self.timeout * (1 << min(entry[4], 4))
                    entry[4] += 1
                if entry[6]:
                    hold = entry[3]
        return indices

    # -- sample ----------------------------------------------------------------------
    def sample(self, batch: int, *, prioritized: bool = True, beta: float = 0.4,
               stack: int = 0) -> SampleBatch | StackedSample:
        """Draw ``batch`` transitions (several requests when ``batch`` > 64).

        Parameters
        ----------
        batch:
            Number of samples (any positive integer: split into power-of-two
            requests of at most 64).
        prioritized:
            Sample proportionally to priority (stratified), else uniformly.
        beta:
            Importance-sampling exponent.
        stack:
            k, records per sample (SAMPLE_REQ ``aux``, protocol section 5): 0 or 1 one record
            (a :class:`SampleBatch`); 2 … 8 the sampled record and its k − 1 predecessors in
            the chain of the actor that pushed it (a :class:`StackedSample`, with validity).

        Returns
        -------
        SampleBatch or StackedSample

        Raises
        ------
        ValueError
            ``batch`` < 1 or ``stack`` not in 0 … 8.
        ReplayEmptyError
            The memory stayed empty (or every priority 0) for :attr:`rate_timeout`.
        RateLimitTimeoutError
            The rate limiter (``RPL_MIN_SIZE``, ``RPL_SPI``) answered NOT_YET for longer
            than :attr:`rate_timeout`.
        ReplayTimeoutError
            Some request got no complete answer after every retry.
        """
        if batch < 1:
            raise ValueError(f"bad batch={batch!r}: must be >= 1")
        check_stack(stack)
        k = max(int(stack), 1)
        sizes: list[int] = []
        left = batch
        while left:
            b = min(MAX_BATCH, 1 << (left.bit_length() - 1))
            sizes.append(b)
            left -= b
        rb = self.record_bytes
        idx = np.zeros((batch, k), dtype=np.int64)
        valid = np.ones((batch, k), dtype=bool)
        prio = np.zeros(batch, dtype=np.uint32)
        totals = np.zeros(batch, dtype=np.uint64)
        size_of = np.zeros(batch, dtype=np.uint32)
        recs = np.zeros((batch, k, rb), dtype=np.uint8)
        flags = _PRIORITIZED if prioritized else 0
        reqs: list[tuple[int, int]] = []
        base = 0
        for b in sizes:
            reqs.append((base, b))
            base += b
        native = self._native() if k == 1 else None  # the native loop asks one record a sample
        if native is not None:
            tr: Any = self.transport
            flat_idx = idx.reshape(batch)
            code, v, self._seq, waited = native.replay_sample(
                tr.sock.fileno(), sizes, flags, self.job, self.worker, self._seq, self.window,
                self.retries, self.timeout, rb, tr._gro, len(self._rbuf), flat_idx, prio, totals,
                size_of, recs.reshape(batch, rb), self.rate_timeout)
            if code == 1:
                self._sample_failed(v[0], v[1])
            elif code == 3:
                self._rate_failed(f"SAMPLE_REQ of {v[0]}", v[1], v[2], v[3], waited)
            elif code:
                raise OSError(v[0], os.strerror(v[0]))
        else:
            self._sample_loop(reqs, flags, rb, stack, idx, valid, prio, totals, size_of, recs)
        w = (importance_weights(prio, totals, size_of, beta) if prioritized
             else np.ones(batch, np.float32))
        if k > 1:
            return StackedSample(recs, valid, np.where(valid, idx, -1), idx[:, -1].copy(), prio,
                                 totals, int(size_of[-1]), w)
        flat = recs.reshape(batch, rb)
        if self.record_dtype is None:
            none = np.zeros((batch, 0), np.uint8)
            t = Transitions(none, none, none, none, none)
        else:
            t = self.unpack(flat)
        return SampleBatch(t.obs, t.actions, t.rewards, t.next_obs, t.dones, idx.reshape(batch),
                           prio, totals, int(size_of[-1]), w, flat)

    def _rate_wait(self, since: float, count: int, reason: int, size: int,
                   what: str) -> tuple[float, int, float]:
        """A NOT_YET answer to a request first refused at ``since`` (``count`` NOT_YETs
        before this one): return the new ``(since, count, time to resend)``, or raise when it
        has been refused for longer than :attr:`rate_timeout`."""
        now = time.monotonic()
        if not count:
            since = now
        count += 1
        if now - since > self.rate_timeout:
            self._rate_failed(what, count, reason, size, now - since)
        return since, count, now + rate_backoff(count)

    def _rate_failed(self, what: str, tries: int, reason: int, size: int, waited: float) -> None:
        """Raise :class:`RateLimitTimeoutError` (or :class:`ReplayEmptyError`) naming the
        limiter's registers as far as they can be read."""
        limiter: dict[str, int] = {}
        try:
            for name in ("RPL_MIN_SIZE", "RPL_SPI", "RPL_SPI_ERROR"):
                limiter[name] = self.control.read(name)
            d = (self.control.read("RPL_RATE_DIFF_HI") << 32) | self.control.read(
                "RPL_RATE_DIFF_LO")
            limiter["diff"] = d - (1 << 64) if d >> 63 else d
        except (SwitchTimeoutError, OSError):
            limiter = {}
        cls = ReplayEmptyError if reason == C.NOT_YET_EMPTY else RateLimitTimeoutError
        raise cls(self.url, what, tries, reason=reason, size=size, waited=waited, limiter=limiter)

    def _sample_loop(self, reqs: list[tuple[int, int]], flags: int, rb: int, stack: int,
                     idx: np.ndarray, valid: np.ndarray, prio: np.ndarray, totals: np.ndarray,
                     size_of: np.ndarray, recs: np.ndarray) -> None:
        """The request/receive loop of :meth:`sample` (the reference of ``replay_sample`` in
        ``hostdrv/native/nrl_client.cpp``, which asks one record a sample): ``idx``,
        ``valid`` (B, k), ``recs`` (B, k, R) per stack position; ``prio``, ``totals``,
        ``size_of`` (B,) per sample."""
        k = max(stack, 1)
        expected_len = 64 + rb + HEADER_LEN
        # seq -> [request number, got mask, deadline, tries]; per request: first NOT_YET, count
        pending: dict[int, list[Any]] = {}
        rate = [[0.0, 0] for _ in reqs]
        tries_of = [0] * len(reqs)
        nxt = 0
        while nxt < len(reqs) or pending:
            now = time.monotonic()
            while nxt < len(reqs) and len(pending) < self.window:
                self._sample_request(reqs[nxt][1], flags, nxt, pending, tries_of, now, stack)
                nxt += 1
            first = min(v[2] for v in pending.values())
            nbytes, seg = self.transport.recv_into(self._rbuf, max(0.0, first - now))
            rmv = memoryview(self._rbuf)
            for off in range(0, nbytes, max(seg, 1)):
                n = min(seg, nbytes - off)
                if n != expected_len and n != HEADER_LEN:
                    continue
                _v, op, fl, jb, _w, why, seq, cnt, i, _r = HEADER.unpack_from(rmv, off)
                entry = pending.get(seq)
                if op != _SAMPLE_RESP or jb != self.job or entry is None:
                    continue
                if n == HEADER_LEN:
                    if fl & _NOT_YET and cnt == 0:
                        r = entry[0]  # asked again (new seq) after a backoff
                        rate[r][0], rate[r][1], entry[2] = self._rate_wait(
                            rate[r][0], rate[r][1], why, i, f"SAMPLE_REQ of {reqs[r][1]}")
                        tries_of[r] = 0
                    continue
                a, b = reqs[entry[0]]
                d = off + HEADER_LEN
                st, j, ok = STACK_WORDS.unpack_from(rmv, d + C.DESC_STACK)
                if k > 1 and st != k:
                    if st == 0:  # a k = 1 answer: a switch that does not decode aux (one built before stacks)
                        raise ValueError(
                            f"bad stack={stack}: the switch at {self.url} answered with one "
                            "record per sample (no stack words): it does not implement stacked "
                            "samples (docs/protocol.md section 5); sample with stack=0")
                    continue
                if i >= b or j >= k or entry[1][i, j]:
                    continue
                ix, pr, tot, _bb, sz = DESCRIPTOR.unpack_from(rmv, d)
                idx[a + i, j] = ix
                valid[a + i, j] = bool(ok) or k == 1
                if j == k - 1:
                    prio[a + i], totals[a + i], size_of[a + i] = pr, tot, sz
                recs[a + i, j] = np.frombuffer(self._rbuf, dtype=np.uint8, count=rb,
                                               offset=d + BLOCK)
                entry[1][i, j] = True
                if entry[1].all():
                    del pending[seq]
            if nbytes:
                continue
            now = time.monotonic()
            for seq, entry in list(pending.items()):
                if entry[2] <= now:
                    r = entry[0]
                    del pending[seq]
                    if tries_of[r] >= self.retries:
                        self._sample_failed(reqs[r][1], tries_of[r])
                    # partial answers are dropped: a new request draws a new stratified batch
                    self._sample_request(reqs[r][1], flags, r, pending, tries_of, now, stack)

    def _sample_request(self, b: int, flags: int, r: int, pending: dict[int, list[Any]],
                        tries_of: list[int], now: float, stack: int = 0) -> None:
        seq = self._next_seq()
        msg = bytearray(HEADER_LEN)
        HEADER.pack_into(msg, 0, VERSION, int(Opcode.SAMPLE_REQ), flags, self.job, self.worker,
                         0, seq, b, stack, 0)
        self.transport.send(msg)
        tries_of[r] += 1
        pending[seq] = [r, np.zeros((b, max(stack, 1)), dtype=bool),
                        now + self.timeout * (1 << min(tries_of[r] - 1, 4)), tries_of[r]]

    def _sample_failed(self, b: int, tries: int) -> None:
        try:
            size = self.control.read("RPL_SIZE")
            total = self.control.replay_total()
        except SwitchTimeoutError:
            size = total = -1
        if size == 0 or total == 0:
            raise ReplayEmptyError(self.url, f"SAMPLE_REQ of {b}", tries,
                                   f"the replay memory is empty (RPL_SIZE={size}, total={total})")
        raise ReplayTimeoutError(self.url, f"SAMPLE_REQ of {b}", tries,
                                 "is this worker registered as a learner (MEMBER_ROLE bit 2)?")

    # -- update ----------------------------------------------------------------------
    def update_priorities(self, indices: Any, priorities: Any) -> None:
        """Set new priorities (floats, already ``(|δ| + ε)^α``) of replay records.

        Sent as UPDATEs of at most 128 pairs as Q16.16 (:func:`to_fixed`: 0 and
        tiny priorities become 1, huge ones 2**32 − 1); there is no acknowledgement.

        Raises
        ------
        ValueError
            A priority is NaN, negative or infinite, an index is not a u32, or
            the counts differ; nothing is sent and :attr:`max_priority` is kept.
        """
        idx = check_u32(indices, "indices").reshape(-1)
        p = check_priorities(priorities, "priorities").reshape(-1)
        if idx.shape != p.shape:
            raise ValueError(f"bad priorities length={p.size}: need one per index ({idx.size})")
        fixed = to_fixed(p, "priorities")
        if p.size:
            self.max_priority = max(self.max_priority, float(p.max()))
        self.update_fixed(idx, fixed)

    def update_fixed(self, indices: Any, priorities: Any) -> None:
        """Set Q16.16 priorities (``uint32``, sent as they are: 0 allowed) of replay records.

        Raises
        ------
        ValueError
            An index or a priority is not an integer in [0, 2**32 − 1] (NaN,
            infinite, negative, fractional or too large), or the counts
            differ; nothing is sent.
        """
        idx = check_u32(indices, "indices").reshape(-1)
        pr = check_u32(priorities, "priorities", FIXED_HINT).reshape(-1)
        if idx.shape != pr.shape:
            raise ValueError(f"bad priorities length={pr.size}: need one per index ({idx.size})")
        pairs = np.empty(2 * len(idx), dtype="<u4")
        pairs[0::2], pairs[1::2] = idx, pr
        for a in range(0, len(idx), MAX_UPDATE_PAIRS):
            k = min(MAX_UPDATE_PAIRS, len(idx) - a)
            msg = bytearray(HEADER_LEN + 8 * k)
            HEADER.pack_into(msg, 0, VERSION, int(Opcode.UPDATE), 0, self.job, self.worker, 0,
                             self._next_seq(), k, 0, 0)
            msg[HEADER_LEN:] = pairs[2 * a:2 * (a + k)].tobytes()
            self.transport.send(msg)


__all__ = ["ReplayClient", "path_mtu"]
