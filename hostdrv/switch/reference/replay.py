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

__all__ = ["ReplayBlock"]

NOT_YET_EMPTY = C.NOT_YET_EMPTY
NOT_YET_RATE = C.NOT_YET_RATE


class ReplayBlock(SwitchBlock):
    """The replay engine of :class:`~hostdrv.switch.reference.SwitchModel`."""

    _cap: int
    _rb: int
    _records: bytearray
    _tree: SumTree
    _wp: int
    _size: int
    _rng: XorShift32
    _limiter: RateLimiter
    _owner: array  # per record: the member id that pushed it
    _wseq: array  # per record: that member's PUSHed-record count when it was written
    _prev: array  # per record: the member's previous record (NO_INDEX: none since RPL_RESET)
    _last: list[int]  # per member: its last record (NO_INDEX: none since RPL_RESET)
    _pushed: list[int]  # per member: records it PUSHed since RPL_RESET (mod 2**32)

    def _init_chains(self) -> None:
        """The record chain metadata of a memory of ``_cap`` records (all empty)."""
        self._owner = array("B", bytes(self._cap))
        self._wseq = array("I", bytes(4 * self._cap))
        self._prev = array("I", [NO_INDEX]) * self._cap
        self._reset_chains()

    def _reset_chains(self) -> None:
        """``RPL_RESET``: no member has a last record, counts restart (the per-record
        metadata left behind is never reached: records are overwritten before they are drawn)."""
        self._last = [NO_INDEX] * MAX_MEMBERS
        self._pushed = [0] * MAX_MEMBERS

    def _chain(self, index: int, k: int) -> list[int]:
        """Stack positions 0 .. k - 1 of sampled record ``index``: the record indices, oldest
        first, ``NO_INDEX`` where the chain broke (every position older than a break too):
        :func:`hostdrv.wire.sampler.stack_chain`, the host replay stores' rule too."""
        return stack_chain(index, k, self._owner, self._wseq, self._prev)

    def _not_yet(self, op: int, w: int, seq: int, reason: int, rx: Rx) -> list[Egress]:
        """The NOT_YET answer to a refused PUSH or SAMPLE_REQ (section 5)."""
        self._inc("CNT_TX_PUSH_NOT_YET" if op == Opcode.PUSH_ACK else "CNT_TX_SAMPLE_NOT_YET")
        f = self._frame(rx.eth_src, rx.ip_src, rx.udp_src, op, Flags.FROM_SWITCH | Flags.NOT_YET,
                        w, reason, seq, 0, self._size, b"")
        return [Egress(f, rx.port)]

    def _push(self, frame: bytes, w: int, seq: int, count: int, rx: Rx) -> list[Egress]:
        if not self._limiter.can_insert(count, self._size):
            return self._not_yet(Opcode.PUSH_ACK, w, seq, NOT_YET_RATE, rx)
        self._limiter.insert(count)
        rb, mask = self._rb, self._cap - 1
        prios = struct.unpack_from(f"<{count}I", frame, PAYLOAD_OFFSET)
        first = self._wp
        src = PAYLOAD_OFFSET + BLOCK
        last, pushed = self._last, self._pushed
        for j in range(count):
            wp = self._wp
            self._records[wp * rb:(wp + 1) * rb] = frame[src + j * rb:src + (j + 1) * rb]
            self._tree.set(wp, prios[j])
            pushed[w] = (pushed[w] + 1) & M32
            self._owner[wp], self._wseq[wp], self._prev[wp] = w, pushed[w], last[w]
            last[w] = wp
            self._wp = (wp + 1) & mask
            self._size = min(self._size + 1, self._cap)
        self._inc("CNT_TX_PUSH_ACK")
        f = self._frame(rx.eth_src, rx.ip_src, rx.udp_src, Opcode.PUSH_ACK, Flags.FROM_SWITCH, w,
                        0, seq, count, first, b"")
        return [Egress(f, rx.port)]

    def _sample(self, w: int, seq: int, batch: int, prioritized: bool, stack: int,
                rx: Rx) -> list[Egress]:
        tree, size, rb = self._tree, self._size, self._rb
        total = sample_total(tree, size, prioritized)
        if size == 0 or total == 0:
            self._inc("CNT_DROP_EMPTY")
            return self._not_yet(Opcode.SAMPLE_RESP, w, seq, NOT_YET_EMPTY, rx)
        why = self._limiter.sample_refusal(batch, size)
        if why:
            return self._not_yet(Opcode.SAMPLE_RESP, w, seq, why, rx)
        self._limiter.sample(batch)
        nodes, cap = tree.nodes, self._cap
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
                record = zero if at == NO_INDEX else self._records[at * rb:(at + 1) * rb]
                self._inc("CNT_TX_SAMPLE_RESP")
                f = self._frame(rx.eth_src, rx.ip_src, rx.udp_src, Opcode.SAMPLE_RESP,
                                Flags.FROM_SWITCH, w, 0, seq, 1, i, bytes(desc) + record)
                out.append(Egress(f, rx.port))
        return out

    def _update(self, frame: bytes, count: int) -> None:
        pairs = struct.unpack_from(f"<{2 * count}I", frame, PAYLOAD_OFFSET)
        for k in range(0, 2 * count, 2):
            if pairs[k] < self._size:
                self._tree.set(pairs[k], pairs[k + 1])
            else:
                self._inc("CNT_DROP_BAD_INDEX")
