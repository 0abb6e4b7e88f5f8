"""The reference switch's top (``hw/rtl/nrl_switch.v``): registers, classifier and checks.

:class:`SwitchModel` implements ``docs/protocol.md`` (sections 4 to 7) exactly:
one call to :meth:`SwitchModel.process` takes one frame as it appears on the
SUME AXI4-Stream (no FCS) and returns the frames the switch emits, in
emission order. The RTL testbenches compare the hardware against it bit for
bit, and the soft switch runs it behind a UDP socket, so it is both exact and
reasonably fast: headers are parsed with :mod:`struct`, the accumulate path
is one vectorized numpy operation per packet and the replay sum tree costs
O(log C) per update and per sample.

Registers are addressed by name (``"AGG_SLOTS"``, ``"MEMBER_IP_3"``) or byte
address, as in :mod:`hostdrv.wire.regmap`; the model has no global state.

This module holds the register file, the classifier (ordinary traffic to the
MAC table of :mod:`.l2`) and the checks of section 6 every protocol frame
passes; the engines are blocks :class:`SwitchModel` is made of, as in the RTL:
aggregation (:mod:`.agg`, ``grad_agg*``) and replay (:mod:`.replay`,
``replay_*``), on the frame plumbing of :mod:`.frames`.
"""

from __future__ import annotations

import struct

import numpy as np

from hostdrv.switch.reference.agg import _INT32, _M_PORT, AGG_CONFIG, AggregationBlock, _Copy
from hostdrv.switch.reference.frames import M32, Egress, Rx, check_params, check_src_port
from hostdrv.switch.reference.l2 import L2Table
from hostdrv.switch.reference.replay import ReplayBlock
from hostdrv.wire import consts as C
from hostdrv.wire import regmap, regrules
from hostdrv.wire.protocol import (
    BLOCK,
    FLAGS_MASK,
    HEADER,
    MAX_BATCH,
    MAX_MEMBERS,
    MAX_PUSH_RECORDS,
    MAX_STACK,
    MAX_UPDATE_PAIRS,
    PAYLOAD_OFFSET,
    VERSION,
    Flags,
    Opcode,
)
from hostdrv.wire.ratelimit import RateLimiter, RateLimiterConfig
from hostdrv.wire.sampler import SumTree, XorShift32

__all__ = ["SwitchModel"]

_ETH_MIN_PROTO = C.HEADER_OFFSET  # Ethernet + IPv4 + UDP: shorter frames are never protocol frames
_MAX_FRAME = C.MAX_FRAME_LEN  # TUSER carries a 16-bit length: a longer frame (only a soft switch datagram
# can be one) is dropped as BAD_LENGTH
_OPCODE_AT = C.OFF_OPCODE
_L3 = struct.Struct("!2xH8xIIHHH2x")  # at 14: IPv4 total length, src, dst; UDP src, dst, length
assert _L3.size == 28

_RX_COUNTER = {
    Opcode.GRADIENT: "CNT_RX_GRADIENT",
    Opcode.RESULT: "CNT_RX_RESULT",
    Opcode.PUSH: "CNT_RX_PUSH",
    Opcode.SAMPLE_REQ: "CNT_RX_SAMPLE",
    Opcode.UPDATE: "CNT_RX_UPDATE",
}
_ROLE_BIT = {Opcode.GRADIENT: C.ROLE_WORKER, Opcode.PUSH: C.ROLE_ACTOR,
             Opcode.SAMPLE_REQ: C.ROLE_LEARNER, Opcode.UPDATE: C.ROLE_LEARNER}
_M_IP = tuple(f"MEMBER_IP_{i}" for i in range(MAX_MEMBERS))
_M_UDP = tuple(f"MEMBER_UDP_{i}" for i in range(MAX_MEMBERS))
_M_ROLE = tuple(f"MEMBER_ROLE_{i}" for i in range(MAX_MEMBERS))
_AHEAD = C.AGG_AHEAD_ROUNDS  # (seq - AGG_EPOCH) mod 2**32 in [_AHEAD, 2**31): dropped as AHEAD
_PRIORITIZED = int(Flags.PRIORITIZED)
_CTRL_CLEAR = C.CTRL_CLEAR_COUNTERS
# the rate limiter's registers: a write reaches the limiter (RPL_SPI also clears RPL_RATE_DIFF)
_LIMITER_WRITE = {"RPL_MIN_SIZE": RateLimiter.set_min_size, "RPL_SPI": RateLimiter.set_spi,
                  "RPL_SPI_ERROR": RateLimiter.set_error}


class SwitchModel(AggregationBlock, ReplayBlock):
    """Bit-exact reference model of the switch (``docs/protocol.md``).

    Parameters
    ----------
    capacity:
        C, replay records; a power of two (``RPL_CAPACITY``).
    record_bytes:
        R, bytes per record; a multiple of 64, at most ``MAX_RECORD_BYTES`` (8192: one
        record in a jumbo frame; ``RPL_RECORD_BYTES``). A PUSH frame is 128 + count * R
        bytes and one over 65535 is a BAD_LENGTH drop: 16 records need R <= 4032.
    max_slots:
        Slot memory depth, 1 to 64 (``AGG_MAX_SLOTS``).
    max_elems:
        Largest P the slot memory holds, a multiple of 16 in 16 to 352 for
        Ethernet frames, up to 16352 for a loopback soft switch with jumbo
        UDP datagrams (``AGG_MAX_ELEMS``).
    build_hash:
        Value of ``BUILD_HASH`` (32 bits).

    Attributes
    ----------
    l2:
        The learning switch's MAC table (:class:`L2Table`, ``L2_ENTRIES``
        entries): every frame teaches it, ordinary frames are forwarded by it.

    Raises
    ------
    ValueError
        When a parameter is out of range.

    Notes
    -----
    ``AGG_SLOTS`` and ``AGG_ELEMS`` reset to their register map reset values
    clipped to ``max_slots`` and ``max_elems``.
    """

    def __init__(self, *, capacity: int = 1024, record_bytes: int = 128, max_slots: int = 64,
                 max_elems: int = 352, build_hash: int = 0) -> None:
        check_params(capacity, record_bytes, max_slots, max_elems, build_hash)
        self._params = {
            "RPL_CAPACITY": capacity,
            "RPL_RECORD_BYTES": record_bytes,
            "AGG_MAX_SLOTS": max_slots,
            "AGG_MAX_ELEMS": max_elems,
            "BUILD_HASH": build_hash,
        }
        self._cap = capacity
        self._rb = record_bytes
        self._regs: dict[str, int] = {
            r.name: r.reset for r in regmap.REGISTERS.values() if r.access == "rw"
        }
        self._regs["AGG_SLOTS"] = min(self._regs["AGG_SLOTS"], max_slots)
        self._regs["AGG_ELEMS"] = min(self._regs["AGG_ELEMS"], max_elems)
        self._regs["RPL_RESET"] = 0
        self._cnt: dict[str, int] = dict.fromkeys(regmap.COUNTERS, 0)
        # aggregation: two shadow copies per slot, accumulators as raw 32-bit words
        self._copies = [[_Copy(), _Copy()] for _ in range(max_slots)]
        self._acc = np.zeros((max_slots, 2, max_elems), dtype="<u4")
        # replay: records, sum tree (node 1 is the root, leaf i is node C + i), PRNG
        self._records = bytearray(capacity * record_bytes)
        self._tree = SumTree(capacity)
        self._wp = 0
        self._size = 0
        self._rng = XorShift32(self._regs["RPL_SEED"])
        self._init_chains()  # per record: owner, wseq, prev (stacked samples, section 5)
        # rate limiter (section 5): its registers' copy and the RPL_RATE_DIFF accumulator
        self._limiter = RateLimiter(RateLimiterConfig(
            self._regs["RPL_MIN_SIZE"], self._regs["RPL_SPI"], self._regs["RPL_SPI_ERROR"]))
        # ordinary traffic: the learning switch's MAC table
        self.l2 = L2Table(C.L2_ENTRIES, self._regs["L2_AGE_FRAMES"])

    # -- registers -----------------------------------------------------------
    def read(self, reg: str | int) -> int:
        """Read a register.

        Parameters
        ----------
        reg:
            Register name (``"AGG_SLOTS"``, ``"MEMBER_IP_3"``, ``"CNT_DROP_STALE"``)
            or byte address.

        Returns
        -------
        int
            The 32-bit value. Self-clearing bits (``CTRL`` bit 31,
            ``RPL_RESET``) read as 0.

        Raises
        ------
        ValueError
            For an unknown name or address.
        """
        r = regmap.lookup(reg)
        name = r.name
        if name in self._cnt:
            return self._cnt[name]
        if name in self._params:
            return self._params[name]
        if name == "RPL_SIZE":
            return self._size
        if name == "RPL_WPTR":
            return self._wp
        if name == "RPL_TOTAL_LO":
            return self._tree.total & M32
        if name == "RPL_TOTAL_HI":
            return self._tree.total >> 32
        if name == "RPL_RATE_DIFF_LO":
            return self._limiter.word & M32
        if name == "RPL_RATE_DIFF_HI":
            return self._limiter.word >> 32
        if name in self._regs:
            return self._regs[name]
        return r.reset  # MAGIC, VERSION

    def write(self, reg: str | int, value: int) -> None:
        """Write a register.

        Side effects: ``CTRL`` bit 31 clears every counter (and reads back
        0); a write to ``RPL_SEED`` reseeds the generator (0 seeds
        ``0x2545F491``); writing 1 to ``RPL_RESET`` empties the replay memory
        and clears the rate limiter's ``RPL_RATE_DIFF``, and so does any write
        to ``RPL_SPI``;
        a write to ``JOB_ID`` or any ``AGG_`` configuration register
        invalidates every aggregation slot copy.

        Parameters
        ----------
        reg:
            Register name or byte address.
        value:
            The value to write.

        Raises
        ------
        ValueError
            For an unknown or read-only register, or a value out of the
            register's range (the message names both); nothing is changed.
        """
        r = regmap.lookup(reg)
        name = r.name
        if r.access != "rw":
            raise ValueError(f"register {name} is read-only ({r.access})")
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise ValueError(f"register {name}: value {value!r} is not an integer")
        value = int(value)
        why = self._illegal(name, value)
        if why:
            raise ValueError(f"register {name}: value {value:#x} out of range: {why}")
        if name == "CTRL":
            if value & _CTRL_CLEAR:
                self._cnt = dict.fromkeys(regmap.COUNTERS, 0)
        elif name == "RPL_SEED":
            self._rng.seed(value)
        elif name == "RPL_RESET":
            if value:
                self._tree.clear()
                self._wp = 0
                self._size = 0
                self._limiter.reset()
                self._reset_chains()
        elif name in _LIMITER_WRITE:
            _LIMITER_WRITE[name](self._limiter, value)
        elif name == "L2_AGE_FRAMES":
            self.l2.set_age(value)
        elif name in AGG_CONFIG:
            for pair in self._copies:
                for c in pair:
                    c.valid = False
        self._regs[name] = regrules.read_back(r, value)  # self-clearing bits read 0

    def _illegal(self, name: str, value: int) -> str:
        """Why ``value`` is not legal for rw register ``name`` ('' when it is): its width
        and the register map's write rule (``legal:`` in ``hw/regs.yaml``), judged on
        the registers' values now."""
        return regrules.refusal(name, value, self._value)

    def _value(self, name: str) -> int:
        """A rw or parameter register's value (what a write rule compares with)."""
        return self._params[name] if name in self._params else self._regs[name]

    def counters(self) -> dict[str, int]:
        """Every ``CNT_*`` register by name.

        Returns
        -------
        dict[str, int]
            A snapshot (a new dict) in register map order.
        """
        return dict(self._cnt)

    # -- frames ----------------------------------------------------------------
    def process(self, frame: bytes, src_port: int) -> list[Egress]:
        """Process one input frame.

        Parameters
        ----------
        frame:
            The whole frame as on the AXI4-Stream (destination MAC first, no
            FCS); ``bytes``, ``bytearray`` or ``memoryview``.
        src_port:
            One-hot SUME ingress port bitmap.

        Returns
        -------
        list[Egress]
            Frames emitted because of this input, in emission order (empty
            when it was dropped or needs no reply).

        Raises
        ------
        ValueError
            When ``src_port`` is not one-hot.
        """
        check_src_port(src_port)
        n = len(frame)
        regs = self._regs
        l2 = self.l2
        if (n < _ETH_MIN_PROTO or frame[12] != 0x08 or frame[13] != 0x00 or frame[14] != 0x45
                or frame[23] != 17 or ((frame[36] << 8) | frame[37]) != regs["UDP_PORT"]):
            # ordinary traffic: look up, then learn and age (L2Table)
            self._inc("CNT_PASS")
            ports = l2.egress(frame, src_port)
            l2.learn(frame, src_port)
            l2.tick()
            return [Egress(bytes(frame), ports)] if ports else []
        # a protocol frame teaches the MAC table too
        l2.learn(frame, src_port)
        l2.tick()

        # 0. RX counters, before any check
        if n > _OPCODE_AT:
            rx = _RX_COUNTER.get(frame[_OPCODE_AT])  # type: ignore[call-overload]
            if rx:
                self._inc(rx)
        # 1. frame, IPv4 and UDP lengths
        if n < PAYLOAD_OFFSET or n > _MAX_FRAME:
            return self._drop("BAD_LENGTH")
        ip_len, ip_src, _, udp_src, _, udp_len = _L3.unpack_from(frame, 14)
        if ip_len != n - 14 or udp_len != n - 34:
            return self._drop("BAD_LENGTH")
        # 2. header
        ver, op, flags, job, worker, slot, seq, count, aux, total = HEADER.unpack_from(frame, 42)
        agg = op in (Opcode.GRADIENT, Opcode.RESULT)
        if (ver != VERSION or op not in _RX_COUNTER or flags & ~FLAGS_MASK
                or (total and not agg)):
            return self._drop("BAD_HEADER")
        # 3. job
        if job != regs["JOB_ID"]:
            return self._drop("BAD_JOB")
        # 4. engine
        if not regs["CTRL"] & (1 if agg else 2):
            return self._drop("DISABLED")
        # 5-6. sender
        if op == Opcode.RESULT:
            if (regs["AGG_ROLE"] != 1 or not src_port & regs["AGG_UPLINK_PORT"]
                    or ip_src != regs["AGG_PARENT_IP"]):
                return self._drop("SPOOFED")
        else:
            limit = regs["AGG_MEMBERS"] if op == Opcode.GRADIENT else MAX_MEMBERS
            if worker >= limit or not regs[_M_ROLE[worker]] & _ROLE_BIT[op]:
                return self._drop("UNKNOWN_WORKER")
            m_udp = regs[_M_UDP[worker]]
            if (not src_port & regs[_M_PORT[worker]] or ip_src != regs[_M_IP[worker]]
                    or (m_udp and udp_src != m_udp)):
                return self._drop("SPOOFED")
        # 7. count, 8. payload length
        if agg:
            ok = count == regs["AGG_ELEMS"] and (total or op == Opcode.RESULT)
            plen = 4 * count
        elif op == Opcode.PUSH:
            ok = 1 <= count <= MAX_PUSH_RECORDS
            plen = BLOCK + count * self._rb
        elif op == Opcode.SAMPLE_REQ:
            ok = 1 <= count <= MAX_BATCH and count & (count - 1) == 0 and aux <= MAX_STACK
            plen = 0
        else:
            ok = 1 <= count <= MAX_UPDATE_PAIRS
            plen = 8 * count
        if not ok:
            return self._drop("BAD_COUNT")
        if n != PAYLOAD_OFFSET + plen:
            return self._drop("BAD_LENGTH")
        rx_addr = Rx(bytes(frame[6:12]), ip_src, udp_src, src_port)
        if agg:
            # 9. dtype, 10. slot
            if (flags & _INT32) != regs["AGG_DTYPE"]:
                return self._drop("BAD_DTYPE")
            if slot >= regs["AGG_SLOTS"]:
                return self._drop("BAD_SLOT")
            # 11. a GRADIENT's round too far ahead of the epoch (behind it: processed)
            if op == Opcode.GRADIENT and _AHEAD <= ((seq - regs["AGG_EPOCH"]) & M32) < 1 << 31:
                return self._drop("AHEAD")
            if op == Opcode.GRADIENT:
                return self._gradient(frame, worker, slot, seq, aux, total, rx_addr)
            return self._result(frame, slot, seq, aux, total, flags, worker)
        if op == Opcode.PUSH:
            return self._push(frame, worker, seq, count, rx_addr)
        if op == Opcode.SAMPLE_REQ:
            return self._sample(worker, seq, count, bool(flags & _PRIORITIZED), aux, rx_addr)
        self._update(frame, count)
        return []
