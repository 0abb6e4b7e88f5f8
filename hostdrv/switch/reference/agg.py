"""In-switch aggregation (``docs/protocol.md`` sections 4, 6, 7 and 11), mirroring ``hw/rtl/grad_agg*``.

:class:`AggregationBlock` holds what ``grad_agg_ingress`` and ``grad_agg_egress``
do once a GRADIENT or RESULT passed the common checks: two shadow copies per
slot (:class:`_Copy`, their accumulators ``SwitchModel._acc`` as raw 32-bit
words), the fp32 / int32 accumulate path and the RESULT, re-sent RESULT and
upward GRADIENT frames.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hostdrv.switch.reference.frames import M32, Egress, Rx, SwitchBlock
from hostdrv.wire.fp32 import fp32_add_bits, fp32_add_inplace
from hostdrv.wire.protocol import (
    AUX_COUNT_MASK,
    AUX_ORDER_BITS,
    AUX_ORDER_SHIFT,
    BROADCAST_MAC,
    MAX_MEMBERS,
    PAYLOAD_OFFSET,
    Flags,
    Opcode,
)

__all__ = ["AGG_CONFIG", "AggregationBlock", "fp32_add"]

_OPEN, _UP, _DONE = 0, 1, 2
_M_PORT = tuple(f"MEMBER_PORT_{i}" for i in range(MAX_MEMBERS))
AGG_CONFIG = frozenset(
    ["JOB_ID", "JOB_SLOT_BASE", "JOB_SLOT_COUNT", "AGG_MEMBERS", "AGG_THRESHOLD", "AGG_SLOTS", "AGG_ELEMS", "AGG_DTYPE", "AGG_MODE",
     "AGG_STALENESS", "AGG_ROLE", "AGG_UPLINK_PORT", "AGG_PARENT_IP", "AGG_PARENT_UDP",
     "AGG_LEAF_ID"]
)
"""Job registers whose write frees the copies of the job's slots (a new job, sections 4 and 11)."""
_INT32 = int(Flags.INT32)
_ERROR = int(Flags.ERROR)
_RESEND = int(Flags.RESEND)


def fp32_add(acc: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Element-wise IEEE 754 binary32 addition with canonical NaNs.

    numpy ``float32`` addition (round to nearest even, subnormals kept), then
    every NaN result is replaced by the quiet NaN ``0x7FC00000``: the
    semantics of :func:`hostdrv.wire.fp32.fp32_add_bits` on float32 values.

    Parameters
    ----------
    acc, x:
        ``float32`` arrays of the same shape (or anything numpy casts to it).

    Returns
    -------
    numpy.ndarray
        A new ``float32`` array; the inputs are not modified.
    """
    a = np.ascontiguousarray(acc, dtype=np.float32)
    b = np.ascontiguousarray(x, dtype=np.float32)
    return fp32_add_bits(a.view(np.uint32), b.view(np.uint32)).view(np.float32)


@dataclass(slots=True)
class _Copy:
    """One shadow copy of an aggregation slot (its accumulator lives in ``SwitchModel._acc``)."""

    valid: bool = False
    round: int = 0
    bitmap: int = 0
    count: int = 0  # contributions added
    aux: int = 0  # RESULT aux: order and count; a leaf's DONE copy: the parent's; error: bad total
    total: int = 0  # tensor length of the round (the GRADIENT that opened it)
    error: bool = False  # DONE by a length or step mismatch: RESULTs carry Flags.ERROR
    culprit: int = 0  # error: the member whose contribution was refused
    state: int = _OPEN
    step: int = 0  # the aux of the GRADIENT that opened it: the step id (sync; never read in async)


class AggregationBlock(SwitchBlock):
    """The aggregation engine of :class:`~hostdrv.switch.reference.SwitchModel`."""

    _copies: list[list[_Copy]]
    _acc: np.ndarray
    _sbase: int  # JOB_SLOT_BASE of the job whose frame is being processed: its slot s is _sbase + s

    def _gradient(self, frame: bytes, w: int, slot: int, r: int, aux: int, total: int,
                  rx: Rx) -> list[Egress]:
        regs = self._regs
        q = r & 1
        c = self._copies[self._sbase + slot][q]
        if regs["AGG_MODE"] and ((r - aux) & M32) > regs["AGG_STALENESS"]:
            # too stale: never added; a DONE copy of this round or a newer one answers
            # (the async catch-up of a member lagging beyond the bound)
            self._inc("CNT_DROP_STALE")
            if c.valid and c.state == _DONE and ((c.round - r) & M32) < 1 << 31:
                return [self._resend(slot, q, rx)]
            return []
        if c.valid:
            d = (c.round - r) & M32
            if 0 < d < 1 << 31:  # the copy was reused by a newer round
                self._inc("CNT_DROP_STALE")
                return [self._resend(slot, q, rx)] if c.state == _DONE else []
            if d:
                c.valid = False
        if not c.valid:
            c.valid, c.round, c.bitmap, c.count, c.state = True, r, 0, 0, _OPEN
            c.aux, c.total, c.error, c.culprit, c.step = 0, total, False, 0, aux
        if total != c.total:  # a tensor of another length: never added
            self._inc("CNT_DROP_MISMATCH")
            if c.state == _DONE:
                return [self._resend(slot, q, rx)]
            c.state, c.error, c.culprit, c.aux = _DONE, True, w, total
            return [self._multicast(slot, q)]
        if not regs["AGG_MODE"] and aux != c.step:  # another call's chunk: never added
            self._inc("CNT_DROP_MISMATCH")
            if c.state != _DONE:  # an error copy whose aux (= total) tells a step mismatch
                c.state, c.error, c.culprit, c.aux = _DONE, True, w, total
                return [self._multicast(slot, q)]
            if c.error:
                return [self._resend(slot, q, rx)]
            return [self._resend(slot, q, rx, step_error=w)]
        bit = 1 << w
        if c.bitmap & bit or c.state != _OPEN:
            self._inc("CNT_DROP_DUPLICATE" if c.bitmap & bit else "CNT_DROP_LATE")
            if c.state == _DONE:
                return [self._resend(slot, q, rx)]
            if c.state == _UP and c.bitmap & bit:
                return [self._up(slot, q)]
            return []
        p = regs["AGG_ELEMS"]
        x = np.frombuffer(frame, dtype="<u4", count=p, offset=PAYLOAD_OFFSET)
        acc = self._acc[self._sbase + slot, q, :p]
        if c.count == 0:
            acc[:] = x
        elif regs["AGG_DTYPE"]:
            a = acc.view("<i4")
            np.add(a, x.view("<i4"), out=a)  # wraps modulo 2**32
        else:
            fp32_add_inplace(acc, x)
        c.bitmap |= bit
        c.aux = (c.aux & ~AUX_COUNT_MASK) | (w << (AUX_ORDER_SHIFT + AUX_ORDER_BITS * c.count))
        c.count += 1
        c.aux |= c.count
        if c.count >= (regs["AGG_THRESHOLD"] if regs["AGG_MODE"] else regs["AGG_MEMBERS"]):
            if regs["AGG_ROLE"]:
                c.state = _UP
                return [self._up(slot, q)]
            c.state = _DONE
            return [self._multicast(slot, q)]
        return []

    def _result(self, frame: bytes, slot: int, r: int, aux: int, total: int, flags: int,
                 worker: int) -> list[Egress]:
        q = r & 1
        c = self._copies[self._sbase + slot][q]
        if c.valid and c.round == r and c.state == _UP:
            p = self._regs["AGG_ELEMS"]
            self._acc[self._sbase + slot, q, :p] = np.frombuffer(frame, dtype="<u4", count=p,
                                                   offset=PAYLOAD_OFFSET)
            c.state = _DONE
            c.aux, c.total = aux, total
            c.error, c.culprit = bool(flags & _ERROR), worker & 0x7
            return [self._multicast(slot, q)]
        if c.valid and c.round == r and c.state == _DONE:
            return self._drop("DUPLICATE")
        return self._drop("STALE")

    def _agg_flags(self, c: _Copy | None = None) -> int:
        f = Flags.FROM_SWITCH | (Flags.INT32 if self._regs["AGG_DTYPE"] else 0)
        return f | Flags.ERROR if c is not None and c.error else f

    def _payload(self, slot: int, q: int) -> bytes:
        return self._acc[self._sbase + slot, q, :self._regs["AGG_ELEMS"]].tobytes()

    def _multicast(self, slot: int, q: int) -> Egress:
        regs = self._regs
        c = self._copies[self._sbase + slot][q]
        ports = 0
        for i in range(regs["AGG_MEMBERS"]):
            ports |= regs[_M_PORT[i]]
        self._inc("CNT_TX_RESULT")
        f = self._frame(BROADCAST_MAC, regs["MCAST_IP"], regs["UDP_PORT"], Opcode.RESULT,
                        self._agg_flags(c), c.culprit if c.error else 0, slot, c.round,
                        regs["AGG_ELEMS"], c.aux, self._payload(slot, q), c.total)
        return Egress(f, ports)

    def _resend(self, slot: int, q: int, rx: Rx, step_error: int | None = None) -> Egress:
        """The copy's RESULT to one member (``RESEND``); with ``step_error`` = w, the answer to
        w's step mismatch on a DONE copy: ``ERROR`` forced on, ``worker`` = w, ``aux`` = the
        copy's ``total`` (the copy itself is unchanged)."""
        c = self._copies[self._sbase + slot][q]
        self._inc("CNT_TX_RESEND")
        flags = self._agg_flags(c) | _RESEND
        worker, aux = (c.culprit if c.error else 0), c.aux
        if step_error is not None:
            flags, worker, aux = flags | _ERROR, step_error, c.total
        f = self._frame(rx.eth_src, rx.ip_src, rx.udp_src, Opcode.RESULT, flags, worker, slot,
                        c.round, self._regs["AGG_ELEMS"], aux, self._payload(slot, q), c.total)
        return Egress(f, rx.port)

    def _up(self, slot: int, q: int) -> Egress:
        regs = self._regs
        c = self._copies[self._sbase + slot][q]
        self._inc("CNT_TX_UP")
        f = self._frame(BROADCAST_MAC, regs["AGG_PARENT_IP"],
                        regs["AGG_PARENT_UDP"] or regs["UDP_PORT"], Opcode.GRADIENT,
                        self._agg_flags(), regs["AGG_LEAF_ID"], slot, c.round,
                        regs["AGG_ELEMS"], c.round if regs["AGG_MODE"] else c.step,
                        self._payload(slot, q), c.total)
        return Egress(f, regs["AGG_UPLINK_PORT"])
