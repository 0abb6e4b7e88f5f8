"""The Python per-packet loop of one all-reduce call (:class:`CallLoop`) and the round
arithmetic it shares with :class:`~hostdrv.client.aggregator.Aggregator`.

:class:`CallLoop` is the reference the native ``agg_run`` (``hostdrv/native/nrl_client.cpp``)
follows decision for decision: the window of chunks in flight (one per slot), GSO sends of
runs of consecutive slots, the RESULTs received (taken, refused, or, in async mode, a round
other than the chunk's: catch-up, give-up, contribute), and the retransmission timers.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, NoReturn, Protocol

import numpy as np

from hostdrv.client.errors import AllreduceTimeoutError, StepMismatchError, TensorMismatchError
from hostdrv.client.transport import DatagramTransport
from hostdrv.errors import NetrlError
from hostdrv.wire.consts import EPOCH_ROUNDS
from hostdrv.wire.protocol import HEADER, HEADER_LEN, VERSION, Flags, Opcode

RESULT = int(Opcode.RESULT)
GRADIENT = int(Opcode.GRADIENT)
INT32 = int(Flags.INT32)
RESEND = int(Flags.RESEND)
ERROR = int(Flags.ERROR)
M32 = 0xFFFFFFFF
EPOCH_MASK = M32 & ~(EPOCH_ROUNDS - 1)


def is_newer(a: int, b: int) -> bool:
    """Whether round ``a`` is newer than round ``b`` (mod 2**32, half-range window)."""
    return 0 < ((a - b) & M32) < 1 << 31


def epoch_block(r: int) -> int:
    """The epoch block (a multiple of 2**24) round ``r`` is in."""
    return r & EPOCH_MASK


def newest_round(rounds: list[int]) -> int:
    """The newest of ``rounds`` (:func:`is_newer`)."""
    best = rounds[0]
    for r in rounds[1:]:
        if is_newer(r, best):
            best = r
    return best


def rounds_per_call(chunks: int, slots: int) -> int:
    """Rounds every slot advances by in one async call of ``chunks`` chunks.

    The power of two at or above ⌈chunks / slots⌉ (1 for an empty call): a call's
    base round is a multiple of it, so round ``r`` of slot ``s`` names iteration
    ``r // R`` and chunk ``(r mod R)·S + s`` the same way for every member
    (``docs/protocol.md`` section 4, "Async at any size").
    """
    k = -(-chunks // slots) if chunks else 1
    return 1 << (k - 1).bit_length()


def lag_aux(r: int, base: int, version: int | None, rpc: int) -> int:
    """GRADIENT ``aux`` of round ``r`` of a call based at ``base`` (a multiple of ``rpc``):
    the round minus the lag in iterations, so the switch's ``r - aux`` is the lag."""
    if version is None:
        return r
    d = (base - version * rpc) & M32
    return r if d >= 1 << 31 else (r - d // rpc) & M32


@dataclass
class Pending:
    """A call that timed out, kept so that the next call of the same step resumes it."""

    step: int
    total: int
    rounds: list[int]  # each slot's call base
    out: np.ndarray  # the results of the answered chunks
    taken: np.ndarray  # uint8 per chunk: answered
    aux: np.ndarray
    rounds_got: np.ndarray


class CallBuffers:
    """The tensor-sized buffers an aggregator keeps from call to call (packing the input,
    receiving the sums): a call faults in no fresh pages."""

    def __init__(self, dtype: np.dtype[Any]) -> None:
        self.dtype = dtype
        self._bufs: dict[str, np.ndarray] = {}

    def get(self, name: str, size: int) -> np.ndarray:
        """``size`` elements of buffer ``name`` (a new buffer when it is too small)."""
        buf = self._bufs.get(name)
        if buf is None or buf.size < size:
            buf = self._bufs[name] = np.empty(size, dtype=self.dtype)
        return buf[:size]

    def drop(self, name: str) -> None:
        """Forget buffer ``name`` (its memory is someone else's now)."""
        self._bufs.pop(name, None)


class OutOfStep(NetrlError):
    """Sync mode: a RESEND of a newer round than the chunk's (handled by a new epoch)."""

    def __init__(self, slot: int, round_: int) -> None:
        super().__init__(slot, round_)
        self.slot, self.round = slot, round_


class LoopOwner(Protocol):
    """What :class:`CallLoop` reads of the :class:`~hostdrv.client.aggregator.Aggregator`
    making the call (its configuration, its preallocated buffers, its slots' bases) and the
    two methods it calls on a timeout."""

    url: str
    slots: int
    window: int
    packet_elems: int
    job: int
    worker: int
    async_mode: bool
    timeout: float
    max_backoff: float
    retries: int
    wire_dtype: np.dtype
    transport: DatagramTransport
    _rounds: list[int]  # each slot's call base, updated in place
    _msg_len: int
    _sbuf: bytearray  # one GRADIENT per slot, back to back
    _smv: memoryview
    _spay: np.ndarray  # the payloads in _sbuf, one row per slot
    _pbuf: bytearray  # async: a poll GRADIENT
    _rbuf: bytearray
    _flags: int
    _poll_lag: int

    def _set_last(self, aux: np.ndarray, rounds: np.ndarray, rpc: int = 1) -> None: ...
    def _counters_now(self) -> dict[str, int]: ...


def send_chunks_once(owner: LoopOwner, x: np.ndarray, round_: int, total: int | None,
                     aux: int | None) -> int:
    """:meth:`Aggregator.send_chunks <hostdrv.client.aggregator.Aggregator.send_chunks>`:
    every chunk of ``x`` sent once from the owner's per-slot buffers (one GSO call per batch
    of slots); returns the payload bytes sent."""
    flat = np.ascontiguousarray(x, dtype=owner.wire_dtype).reshape(-1)
    p, s_count, L = owner.packet_elems, owner.slots, owner._msg_len
    n = flat.size // p
    chunks = flat[:n * p].reshape(n, p)
    pack = HEADER.pack_into
    for a in range(0, n, s_count):
        k = min(s_count, n - a)
        for s in range(k):
            pack(owner._sbuf, s * L, VERSION, GRADIENT, owner._flags, owner.job, owner.worker,
                 s, round_ & M32, p, (round_ if aux is None else aux) & M32,
                 n * p if total is None else total)
        owner._spay[:k] = chunks[a:a + k]
        owner.transport.send_segments(owner._smv[:k * L], L)
    return n * p * 4


class CallLoop:
    """One call's per-packet loop: send the chunks of a ``total``-element tensor not yet
    ``taken``, collect their results into ``out`` (see :meth:`Aggregator._run
    <hostdrv.client.aggregator.Aggregator._run>` for the rounds).

    Each slot holds at most one chunk in flight; :meth:`run` repeats: :meth:`launch` what
    the window allows, :meth:`flush` the GRADIENTs, wait for RESULTs until the earliest
    deadline and :meth:`receive` them, :meth:`retransmit` what is due. The counters of the
    call (:attr:`stale`, :attr:`resent`, :attr:`retrans`, :attr:`jumps`, :attr:`missing`)
    become the owner's statistics; on a timeout the owner's last-call results are set
    before :class:`~hostdrv.client.errors.AllreduceTimeoutError` is raised.
    """

    # fixed attributes: read faster than an instance dict's (each method binds what it uses to
    # locals once per batch of datagrams or chunks)
    __slots__ = (
        # the owner's configuration and buffers
        "owner", "s_count", "window", "p", "rounds", "L", "sbuf", "smv", "spay", "pbuf", "rbuf",
        "recv", "send", "send_segments", "wire", "flags", "job", "worker", "catch_up",
        "poll_lag", "timeout", "max_backoff", "retries",
        # the call
        "chunks", "out", "n", "total", "version", "rpc", "step", "step_aux", "low", "aux_of",
        "got_round", "taken",
        # per slot
        "chunk_of", "cur_round", "first_round", "sent_round", "seen", "waiting", "deadline",
        "tries",
        # counters and progress
        "stale", "resent", "retrans", "jumps", "missing", "nxt", "inflight", "done", "to_send",
        "next_scan",
    )

    def __init__(self, owner: LoopOwner, chunks: np.ndarray, out: np.ndarray, n: int, total: int,
                 version: int | None, rpc: int, step: int, taken: np.ndarray,
                 aux_of: np.ndarray, got_round: np.ndarray) -> None:
        self.owner = owner
        self.s_count, self.window, self.p = owner.slots, owner.window, owner.packet_elems
        self.rounds = owner._rounds  # each slot's call base
        self.L = owner._msg_len
        self.sbuf, self.smv, self.spay = owner._sbuf, owner._smv, owner._spay
        self.pbuf, self.rbuf = owner._pbuf, owner._rbuf
        tr = owner.transport
        self.recv, self.send, self.send_segments = tr.recv_into, tr.send, tr.send_segments
        self.wire = owner.wire_dtype
        self.flags, self.job, self.worker = owner._flags, owner.job, owner.worker
        self.catch_up = owner.async_mode
        self.poll_lag = owner._poll_lag
        self.timeout, self.max_backoff, self.retries = (owner.timeout, owner.max_backoff,
                                                        owner.retries)
        self.chunks, self.out, self.n, self.total = chunks, out, n, total
        self.version, self.rpc, self.step = version, rpc, step
        self.step_aux = step & M32
        self.low = rpc - 1  # async: round & low is the chunk's row j (chunk j*S + s)
        self.aux_of, self.got_round = aux_of, got_round
        self.taken = memoryview(taken)  # chunks whose result is in out (a resumed call: some)
        s_count = self.s_count
        self.chunk_of = [-1] * s_count  # chunk in flight on each slot
        self.cur_round = [0] * s_count  # the round the chunk is to be answered by
        self.first_round = [0] * s_count  # the round the chunk was launched with
        self.sent_round = [0] * s_count  # the round in the slot's GRADIENT (waiting: an old one)
        self.seen = [0] * s_count  # async: the newest round heard of on the slot
        self.waiting = [False] * s_count  # async: behind; the target round is not sent yet
        self.deadline = [0.0] * s_count
        self.tries = [0] * s_count
        self.stale = self.resent = self.retrans = self.jumps = self.missing = 0
        self.nxt = self.inflight = 0
        self.done = int(np.count_nonzero(taken))
        self.to_send: list[int] = []
        self.next_scan = float("inf")  # no deadline of an in-flight chunk is earlier

    def run(self) -> None:
        """Until every chunk has its result."""
        n, recv, rbuf, to_send = self.n, self.recv, self.rbuf, self.to_send
        launch, flush, receive, retransmit = (self.launch, self.flush, self.receive,
                                              self.retransmit)
        monotonic = time.monotonic
        while self.done < n:
            now = monotonic()
            launch(now)
            if to_send:
                flush()
            # wait for results until the earliest deadline
            nbytes, seg = recv(rbuf, max(0.0, self.next_scan - now))
            if nbytes:
                receive(nbytes, seg)
                now = monotonic()
                if now < self.next_scan:
                    continue
            else:
                now = monotonic()
            retransmit(now)

    # -- sending ---------------------------------------------------------------------------
    def launch(self, now: float) -> None:
        """Put the next chunks in flight as far as the window and the free slots allow."""
        nxt, inflight, n, window = self.nxt, self.inflight, self.n, self.window
        if nxt >= n or inflight >= window:
            return
        # locals: this runs once per chunk
        s_count, taken, chunk_of, rounds = self.s_count, self.taken, self.chunk_of, self.rounds
        cur_round, first_round, sent_round, seen = (self.cur_round, self.first_round,
                                                    self.sent_round, self.seen)
        waiting, deadline, tries, to_send = self.waiting, self.deadline, self.tries, self.to_send
        pack, sbuf, spay, chunks, L = HEADER.pack_into, self.sbuf, self.spay, self.chunks, self.L
        flags, job, worker, p, total = self.flags, self.job, self.worker, self.p, self.total
        catch_up, version, rpc, step_aux = self.catch_up, self.version, self.rpc, self.step_aux
        timeout, next_scan = self.timeout, self.next_scan
        while nxt < n and inflight < window:
            if taken[nxt]:  # answered in the call it resumes, or (async) before it was sent
                nxt += 1
                continue
            s = nxt % s_count
            if chunk_of[s] >= 0:
                break
            r = (rounds[s] + nxt // s_count) & M32
            chunk_of[s] = nxt
            cur_round[s] = first_round[s] = sent_round[s] = seen[s] = r
            waiting[s] = False
            aux = lag_aux(r, rounds[s], version, rpc) if catch_up else step_aux
            pack(sbuf, s * L, VERSION, GRADIENT, flags, job, worker, s, r & M32, p, aux, total)
            spay[s] = chunks[nxt]
            deadline[s], tries[s] = now + timeout, 1
            next_scan = min(next_scan, now + timeout)
            to_send.append(s)
            nxt += 1
            inflight += 1
        self.nxt, self.inflight, self.next_scan = nxt, inflight, next_scan

    def flush(self) -> None:
        """Send the launched slots' GRADIENTs: one GSO call per run of consecutive slots."""
        to_send, smv, L = self.to_send, self.smv, self.L
        i = 0
        while i < len(to_send):
            j = i + 1
            while j < len(to_send) and to_send[j] == to_send[j - 1] + 1:
                j += 1
            a, b = to_send[i], to_send[j - 1] + 1
            if b - a == 1:
                self.send(smv[a * L:b * L])
            else:
                self.send_segments(smv[a * L:b * L], L)
            i = j
        to_send.clear()

    def poll(self, s: int, r: int) -> None:
        """Async: a GRADIENT for round ``r`` that is never added (too stale), answered when
        round ``r``, or a newer one in its copy, is DONE."""
        HEADER.pack_into(self.pbuf, 0, VERSION, GRADIENT, self.flags, self.job, self.worker, s,
                         r, self.p, (r - self.poll_lag) & M32, self.total)
        self.send(self.pbuf)

    def contribute(self, s: int, r: int) -> None:
        """Async: the slot's GRADIENT now carries round ``r`` (the slot reached r - 1)."""
        L = self.L
        HEADER.pack_into(self.sbuf, s * L, VERSION, GRADIENT, self.flags, self.job, self.worker,
                         s, r, self.p, lag_aux(r, self.rounds[s], self.version, self.rpc),
                         self.total)
        self.sent_round[s] = r
        self.waiting[s] = False
        self.send(self.smv[s * L:(s + 1) * L])
        self.deadline[s], self.tries[s] = time.monotonic() + self.timeout, 1
        self.next_scan = min(self.next_scan, self.deadline[s])

    # -- receiving -------------------------------------------------------------------------
    def receive(self, nbytes: int, seg: int) -> None:
        """Take the RESULTs among ``nbytes`` received bytes (GRO segments of ``seg`` bytes)."""
        # locals: this runs once per datagram
        unpack, rbuf, L, p, total = HEADER.unpack_from, self.rbuf, self.L, self.p, self.total
        s_count, job, flags, low, n = self.s_count, self.job, self.flags, self.low, self.n
        chunk_of, cur_round, first_round, rounds = (self.chunk_of, self.cur_round,
                                                    self.first_round, self.rounds)
        taken, out, aux_of, got_round = self.taken, self.out, self.aux_of, self.got_round
        wire, catch_up, nxt = self.wire, self.catch_up, self.nxt
        done, inflight, resent, stale = self.done, self.inflight, self.resent, self.stale
        for off in range(0, nbytes, seg):
            if min(seg, nbytes - off) != L:
                continue
            (_v, op, fl, jb, w, s, seq, cnt, aux, tot) = unpack(rbuf, off)
            if op != RESULT or jb != job or s >= s_count or cnt != p or (fl & INT32) != flags:
                continue
            c = chunk_of[s]
            later = False  # async: the result of a later chunk of the slot, not sent yet
            if catch_up:
                c2 = (seq & low) * s_count + s
                later = c2 != c and nxt <= c2 < n and not taken[c2] \
                    and (seq - (seq & low)) & M32 == rounds[s]
                if later:
                    c = c2
            if c < 0:
                continue
            d = (seq - cur_round[s]) & M32
            if d and not later:  # another round than the chunk's
                if not catch_up:
                    if fl & RESEND and d < 1 << 31:  # nobody completes a round without us
                        raise OutOfStep(s, seq)
                    continue
                self.done, self.inflight = done, inflight  # other_round may give a chunk up
                take = self.other_round(s, c, seq, fl, d)
                done, inflight = self.done, self.inflight
                if not take:
                    continue
            if fl & ERROR or tot != total:
                self.refuse(fl, w, s, seq, aux, tot)
            out[c] = np.frombuffer(rbuf, dtype=wire, count=p, offset=off + HEADER_LEN)
            aux_of[c] = aux
            got_round[c] = seq
            if fl & RESEND:
                resent += 1
            taken[c] = 1
            done += 1
            if catch_up:
                if later:  # the round it would have been sent with: not stale
                    continue
                if seq != first_round[s]:
                    stale += 1  # answered by a newer iteration (straggler catch-up)
                rounds[s] = (seq - c // s_count) & M32
            chunk_of[s] = -1
            inflight -= 1
        self.done, self.inflight, self.resent, self.stale = done, inflight, resent, stale

    def other_round(self, s: int, c: int, seq: int, fl: int, d: int) -> bool:
        """Async: a RESULT of round ``seq`` on slot ``s``, ``d`` rounds after the one chunk
        ``c`` waits for (mod 2**32). Whether it answers the chunk; if not, what it tells:
        the slot moved on (jump to the chunk's round in a newer iteration, give the chunk
        up, or contribute to the round the slot reached)."""
        waiting, cur_round, rounds, tries, low = (self.waiting, self.cur_round, self.rounds,
                                                  self.tries, self.low)
        j = c // self.s_count
        ahead = d < 1 << 31
        if ahead and fl & RESEND and is_newer(seq, self.seen[s]):
            self.seen[s] = seq
            tries[s] = 1  # an answer showing the slot moved on: progress
        if ahead and (waiting[s] or fl & RESEND):
            if seq & low == j:
                return True
            # another chunk: wait for ours, send it, or give it up
            ib, jj = (seq & ~low) & M32, seq & low
            t = (ib + j) & M32
            if j + 1 < jj or (t == cur_round[s] and not waiting[s] and tries[s] > 3):
                # its round is gone from the slot (reused by a newer one; or unanswered
                # while the round after it is DONE)
                if rounds[s] != ib:
                    self.jumps += 1
                self.give_up(s, ib)
                return False
            # j > jj: ahead of the slot, wait; j = jj - 1: still held
            if t != cur_round[s]:
                cur_round[s] = t
                rounds[s] = ib
                self.jumps += 1
                waiting[s] = True
            if waiting[s] and ((t - seq) & M32 == 1 or (seq - t) & M32 == 1):
                self.contribute(s, t)
            return False
        if waiting[s] and d == M32:  # the slot reached the round before ours
            self.contribute(s, cur_round[s])
            return False
        return waiting[s] and seq & low == j and (seq - self.first_round[s]) & M32 < 1 << 31

    def give_up(self, s: int, ib: int) -> None:
        """Async: the chunk's round is gone: zeros, no contributor (aux 0); the slot goes
        on from iteration base ``ib`` (the slot's)."""
        c = self.chunk_of[s]
        self.out[c] = 0
        self.aux_of[c] = 0
        self.got_round[c] = (ib + c // self.s_count) & M32
        self.taken[c] = 1
        self.done += 1
        self.missing += 1
        self.rounds[s] = ib
        self.chunk_of[s] = -1
        self.waiting[s] = False
        self.inflight -= 1

    def refuse(self, fl: int, w: int, s: int, seq: int, aux: int, tot: int) -> None:
        """An ERROR RESULT, or one of another tensor length: the mismatch it reports."""
        if fl & ERROR:
            if aux == tot:  # an ERROR RESULT whose aux is its total: another step
                raise StepMismatchError(self.step, w & 0x7, s, seq)
            raise TensorMismatchError(self.total, tot, aux, w & 0x7, s, seq)
        raise TensorMismatchError(self.total, tot, tot, None, s, seq)

    # -- timers ----------------------------------------------------------------------------
    def retransmit(self, now: float) -> None:
        """Send again what is due (a waiting slot polls the round before its own and its
        own, never added; without safe polls it repeats its old round, whose copy holds a
        newer one); the next deadline."""
        chunk_of, deadline, tries, waiting, cur_round = (self.chunk_of, self.deadline,
                                                         self.tries, self.waiting, self.cur_round)
        poll_lag, L, smv = self.poll_lag, self.L, self.smv
        next_scan = float("inf")
        for s in range(self.s_count):
            if chunk_of[s] < 0:
                continue
            if deadline[s] <= now:
                if tries[s] > self.retries:
                    self.time_out(s)
                if waiting[s] and poll_lag:  # the round before ours, and ours
                    self.poll(s, (cur_round[s] - 1) & M32)
                    self.poll(s, cur_round[s])
                else:
                    self.send(smv[s * L:(s + 1) * L])
                    if self.catch_up and poll_lag and tries[s] > 2:
                        # unanswered: is the slot past our round (the round after it
                        # DONE while ours is not answered: its copy was reused)?
                        self.poll(s, (cur_round[s] + 1) & M32)
                deadline[s] = now + min(self.timeout * (1 << tries[s]), self.max_backoff)
                tries[s] += 1
                self.retrans += 1
            next_scan = min(next_scan, deadline[s])
        self.next_scan = next_scan

    def time_out(self, s: int) -> NoReturn:
        """Slot ``s``'s chunk is unanswered after every retry: :class:`AllreduceTimeoutError`
        (the results so far kept as the owner's last call)."""
        owner = self.owner
        owner._set_last(self.aux_of, self.got_round, self.rpc)
        raise AllreduceTimeoutError(owner.url, s, self.cur_round[s], self.chunk_of[s],
                                    self.tries[s], owner._counters_now())
