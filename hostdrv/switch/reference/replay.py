"""In-network replay (``docs/protocol.md`` section 5), mirroring ``hw/rtl/replay_*``.

:class:`ReplayBlock` holds what ``replay_executor`` and ``replay_responder`` do
with a PUSH, SAMPLE_REQ or UPDATE that passed the common checks: the record
ring, the sum tree and the xorshift32 draws (the arithmetic is
:mod:`hostdrv.wire.sampler`'s), the rate limiter
(:class:`hostdrv.wire.ratelimit.RateLimiter`) and the PUSH_ACK / SAMPLE_RESP /
NOT_YET frames.

Stacked samples (a SAMPLE_REQ with ``aux`` = k in 2 .. ``MAX_STACK``) follow each actor's
record chain: every record keeps, beside its bytes, the member id that pushed it
(``owner``), that member's PUSHed-record count when it was written (``wseq``, from 1
after ``RPL_RESET``) and the index of the member's previous record (``prev``, from the
member's ``last`` register). Record ``p`` is the valid predecessor of ``x`` iff
``p == prev[x]``, ``owner[p] == owner[x]`` and ``wseq[p] == wseq[x] - 1``: an
overwritten predecessor breaks the chain.

Each job's table (``docs/protocol.md`` section 11) is a :class:`ReplayTable`: its
records, tree, pointers and chains; the generator and the rate limiter, which survive
the table's emptying and re-carving, are the job's page's (``_rng``, ``_limiter``).
"""

from __future__ import annotations

import struct
from array import array

from hostdrv.switch.reference.frames import M32, Egress, Rx, SwitchBlock
from hostdrv.wire import consts as C
from hostdrv.wire.protocol import (
    BLOCK,
    DESCRIPTOR,
    MAX_MEMBERS,
    NO_INDEX,
    PAYLOAD_OFFSET,
    STACK_WORDS,
    Flags,
    Opcode,
)
from hostdrv.wire.ratelimit import RateLimiter
from hostdrv.wire.sampler import SumTree, XorShift32, draw_indices, sample_total, stack_chain

__all__ = ["ReplayBlock", "ReplayTable"]

NOT_YET_EMPTY = C.NOT_YET_EMPTY
NOT_YET_RATE = C.NOT_YET_RATE


class ReplayTable:
    """One replay table: ``cap`` records of ``rb`` bytes, their sum tree, the write pointer,
    the valid-record count and the record chains (section 5)."""

    def __init__(self, cap: int, rb: int) -> None:
        self.cap = cap
        self.rb = rb
        self.records = bytearray(cap * rb)
        self.tree = SumTree(cap)
        self.owner = array("B", bytes(cap))  # per record: the member id that pushed it
        self.wseq = array("I", bytes(4 * cap))  # per record: its pusher's count when written
        self.prev = array("I", [NO_INDEX]) * cap  # per record: the pusher's previous record
        self.wp = 0
        self.size = 0
        self.last: list[int] = []  # per member: its last record (NO_INDEX: none since the reset)
        self.pushed: list[int] = []  # per member: records it PUSHed since the reset (mod 2**32)
        self.reset_chains()

    def reset_chains(self) -> None:
        """No member has a last record, counts restart (the per-record metadata left behind is
        never reached: records are overwritten before they are drawn)."""
        self.last = [NO_INDEX] * MAX_MEMBERS
        self.pushed = [0] * MAX_MEMBERS

    def empty(self) -> None:
        """``RPL_RESET``: size, write pointer and priorities to 0, chains restarted."""
        self.tree.clear()
        self.wp = 0
        self.size = 0
        self.reset_chains()


class ReplayBlock(SwitchBlock):
    """The replay engine of :class:`~hostdrv.switch.reference.SwitchModel`: it serves the
    table ``_t`` of the job whose frame is being processed, with that job's generator
    ``_rng`` and rate limiter ``_limiter``."""

    _t: ReplayTable
    _rng: XorShift32
    _limiter: RateLimiter

    def _chain(self, index: int, k: int) -> list[int]:
        """Stack positions 0 .. k - 1 of sampled record ``index``: the record indices, oldest
        first, ``NO_INDEX`` where the chain broke (every position older than a break too):
        :func:`hostdrv.wire.sampler.stack_chain`, the host replay stores' rule too."""
        t = self._t
        return stack_chain(index, k, t.owner, t.wseq, t.prev)

    def _not_yet(self, op: int, w: int, seq: int, reason: int, rx: Rx) -> list[Egress]:
        """The NOT_YET answer to a refused PUSH or SAMPLE_REQ (section 5)."""
        self._inc("CNT_TX_PUSH_NOT_YET" if op == Opcode.PUSH_ACK else "CNT_TX_SAMPLE_NOT_YET")
        f = self._frame(rx.eth_src, rx.ip_src, rx.udp_src, op, Flags.FROM_SWITCH | Flags.NOT_YET,
                        w, reason, seq, 0, self._t.size, b"")
        return [Egress(f, rx.port)]

    def _push(self, frame: bytes, w: int, seq: int, count: int, rx: Rx) -> list[Egress]:
        t = self._t
        if not self._limiter.can_insert(count, t.size):
            return self._not_yet(Opcode.PUSH_ACK, w, seq, NOT_YET_RATE, rx)
        self._limiter.insert(count)
        rb, mask, cap = t.rb, t.cap - 1, t.cap
        prios = struct.unpack_from(f"<{count}I", frame, PAYLOAD_OFFSET)
        first = t.wp
        src = PAYLOAD_OFFSET + BLOCK
        last, pushed, records, tree = t.last, t.pushed, t.records, t.tree
        for j in range(count):
            wp = t.wp
            records[wp * rb:(wp + 1) * rb] = frame[src + j * rb:src + (j + 1) * rb]
            tree.set(wp, prios[j])
            pushed[w] = (pushed[w] + 1) & M32
            t.owner[wp], t.wseq[wp], t.prev[wp] = w, pushed[w], last[w]
            last[w] = wp
            t.wp = (wp + 1) & mask
            t.size = min(t.size + 1, cap)
        self._inc("CNT_TX_PUSH_ACK")
        f = self._frame(rx.eth_src, rx.ip_src, rx.udp_src, Opcode.PUSH_ACK, Flags.FROM_SWITCH, w,
                        0, seq, count, first, b"")
        return [Egress(f, rx.port)]

    def _sample(self, w: int, seq: int, batch: int, prioritized: bool, stack: int,
                rx: Rx) -> list[Egress]:
        t = self._t
        tree, size, rb = t.tree, t.size, t.rb
        total = sample_total(tree, size, prioritized)
        if size == 0 or total == 0:
            self._inc("CNT_DROP_EMPTY")
            return self._not_yet(Opcode.SAMPLE_RESP, w, seq, NOT_YET_EMPTY, rx)
        why = self._limiter.sample_refusal(batch, size)
        if why:
            return self._not_yet(Opcode.SAMPLE_RESP, w, seq, why, rx)
        self._limiter.sample(batch)
        nodes, cap = tree.nodes, t.cap
        out = []
        desc = bytearray(BLOCK)
        zero = bytes(rb)
        for i, index in enumerate(draw_indices(tree, self._rng, batch, size, prioritized)):
            # k <= 1: the sampled record alone, descriptor words @24.. zero (as before stacks)
            chain = self._chain(index, stack) if stack > 1 else [index]
            for j, at in enumerate(chain):
                DESCRIPTOR.pack_into(desc, 0, at, nodes[cap + index], total, batch, size)
                if stack > 1:
                    STACK_WORDS.pack_into(desc, DESCRIPTOR.size, stack, j, int(at != NO_INDEX))
                record = zero if at == NO_INDEX else t.records[at * rb:(at + 1) * rb]
                self._inc("CNT_TX_SAMPLE_RESP")
                f = self._frame(rx.eth_src, rx.ip_src, rx.udp_src, Opcode.SAMPLE_RESP,
                                Flags.FROM_SWITCH, w, 0, seq, 1, i, bytes(desc) + record)
                out.append(Egress(f, rx.port))
        return out

    def _update(self, frame: bytes, count: int) -> None:
        t = self._t
        pairs = struct.unpack_from(f"<{2 * count}I", frame, PAYLOAD_OFFSET)
        for k in range(0, 2 * count, 2):
            if pairs[k] < t.size:
                t.tree.set(pairs[k], pairs[k + 1])
            else:
                self._inc("CNT_DROP_BAD_INDEX")
