"""In-network replay (``docs/protocol.md`` section 5), mirroring ``hw/rtl/replay_*``.

:class:`ReplayBlock` holds what ``replay_executor`` and ``replay_responder`` do
with a PUSH, SAMPLE_REQ or UPDATE that passed the common checks: the record
ring, the sum tree and the xorshift32 draws (the arithmetic is
:mod:`hostdrv.wire.sampler`'s), the rate limiter
(:class:`hostdrv.wire.ratelimit.RateLimiter`) and the PUSH_ACK / SAMPLE_RESP /
NOT_YET frames.
"""

from __future__ import annotations

import struct

from hostdrv.switch.reference.frames import Egress, Rx, SwitchBlock
from hostdrv.wire import consts as C
from hostdrv.wire.protocol import BLOCK, DESCRIPTOR, PAYLOAD_OFFSET, Flags, Opcode
from hostdrv.wire.ratelimit import RateLimiter
from hostdrv.wire.sampler import SumTree, XorShift32, draw_indices, sample_total

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
        for j in range(count):
            wp = self._wp
            self._records[wp * rb:(wp + 1) * rb] = frame[src + j * rb:src + (j + 1) * rb]
            self._tree.set(wp, prios[j])
            self._wp = (wp + 1) & mask
            self._size = min(self._size + 1, self._cap)
        self._inc("CNT_TX_PUSH_ACK")
        f = self._frame(rx.eth_src, rx.ip_src, rx.udp_src, Opcode.PUSH_ACK, Flags.FROM_SWITCH, w,
                        0, seq, count, first, b"")
        return [Egress(f, rx.port)]

    def _sample(self, w: int, seq: int, batch: int, prioritized: bool, rx: Rx) -> list[Egress]:
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
        for i, index in enumerate(draw_indices(tree, self._rng, batch, size, prioritized)):
            DESCRIPTOR.pack_into(desc, 0, index, nodes[cap + index], total, batch, size)
            record = self._records[index * rb:(index + 1) * rb]
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
