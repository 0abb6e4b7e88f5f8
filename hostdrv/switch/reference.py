"""Reference switch: the golden model of the netfpga-rl switch.

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
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from hostdrv.wire import consts as C
from hostdrv.wire import regmap
from hostdrv.wire.fp32 import CANONICAL_NAN, fp32_add_bits, fp32_add_inplace
from hostdrv.wire.protocol import (
    AUX_COUNT_MASK,
    AUX_ORDER_BITS,
    AUX_ORDER_SHIFT,
    BLOCK,
    BROADCAST_MAC,
    DESCRIPTOR,
    ELEM_QUANTUM,
    FLAGS_MASK,
    HEADER,
    MAX_BATCH,
    MAX_JUMBO_ELEMS,
    MAX_MEMBERS,
    MAX_PUSH_RECORDS,
    MAX_UPDATE_PAIRS,
    PAYLOAD_OFFSET,
    VERSION,
    Flags,
    Opcode,
)
from hostdrv.wire.ratelimit import RateLimiter, RateLimiterConfig
from hostdrv.wire.sampler import (
    DEFAULT_SEED,
    SumTree,
    XorShift32,
    draw_indices,
    sample_total,
    xorshift32,
)

__all__ = [
    "CANONICAL_NAN",
    "DEFAULT_SEED",
    "MAC_PORTS",
    "Egress",
    "L2Table",
    "SwitchModel",
    "fp32_add",
    "xorshift32",
]

M32 = 0xFFFFFFFF
M64 = (1 << 64) - 1
NOT_YET_EMPTY = C.NOT_YET_EMPTY
NOT_YET_MIN_SIZE = C.NOT_YET_MIN_SIZE
NOT_YET_RATE = C.NOT_YET_RATE
SPI_ONE = C.SPI_ONE
MAC_PORTS = C.MAC_PORTS
"""SUME port bitmap of the four 10G MAC ports (even bits; odd bits are DMA)."""

_ETH_LEN = C.ETH_LEN  # shorter frames neither teach the MAC table nor are looked up in it
_ETH_MIN_PROTO = C.HEADER_OFFSET  # Ethernet + IPv4 + UDP: shorter frames are never protocol frames
_MAX_FRAME = C.MAX_FRAME_LEN  # TUSER carries a 16-bit length: a longer frame (only a soft switch datagram
# can be one) is dropped as BAD_LENGTH
_OPCODE_AT = C.OFF_OPCODE
_L3 = struct.Struct("!2xH8xIIHHH2x")  # at 14: IPv4 total length, src, dst; UDP src, dst, length
_TX = struct.Struct("!6s6sHBBHHHBBHIIHHHHBBBBHHIHII")  # Ethernet + IPv4 + UDP + header = 64 bytes
assert _TX.size == PAYLOAD_OFFSET and _L3.size == 28

_OPEN, _UP, _DONE = 0, 1, 2

_RX_COUNTER = {
    Opcode.GRADIENT: "CNT_RX_GRADIENT",
    Opcode.RESULT: "CNT_RX_RESULT",
    Opcode.PUSH: "CNT_RX_PUSH",
    Opcode.SAMPLE_REQ: "CNT_RX_SAMPLE",
    Opcode.UPDATE: "CNT_RX_UPDATE",
}
_ROLE_BIT = {Opcode.GRADIENT: C.ROLE_WORKER, Opcode.PUSH: C.ROLE_ACTOR,
             Opcode.SAMPLE_REQ: C.ROLE_LEARNER, Opcode.UPDATE: C.ROLE_LEARNER}
_M_PORT = tuple(f"MEMBER_PORT_{i}" for i in range(MAX_MEMBERS))
_M_IP = tuple(f"MEMBER_IP_{i}" for i in range(MAX_MEMBERS))
_M_UDP = tuple(f"MEMBER_UDP_{i}" for i in range(MAX_MEMBERS))
_M_ROLE = tuple(f"MEMBER_ROLE_{i}" for i in range(MAX_MEMBERS))
_ONE_HOT = frozenset(1 << i for i in range(8))
# writes that invalidate every aggregation slot copy (a new job, section 4)
_AGG_CONFIG = frozenset(
    ["JOB_ID", "AGG_MEMBERS", "AGG_THRESHOLD", "AGG_SLOTS", "AGG_ELEMS", "AGG_DTYPE", "AGG_MODE",
     "AGG_STALENESS", "AGG_ROLE", "AGG_UPLINK_PORT", "AGG_PARENT_IP", "AGG_PARENT_UDP",
     "AGG_LEAF_ID"]
)
_INT32 = int(Flags.INT32)
_ERROR = int(Flags.ERROR)
_RESEND = int(Flags.RESEND)
_AHEAD = C.AGG_AHEAD_ROUNDS  # (seq - AGG_EPOCH) mod 2**32 in [_AHEAD, 2**31): dropped as AHEAD
_PRIORITIZED = int(Flags.PRIORITIZED)
_CTRL_CLEAR = C.CTRL_CLEAR_COUNTERS
# the rate limiter's registers: a write reaches the limiter (RPL_SPI also clears RPL_RATE_DIFF)
_LIMITER_WRITE = {"RPL_MIN_SIZE": RateLimiter.set_min_size, "RPL_SPI": RateLimiter.set_spi,
                  "RPL_SPI_ERROR": RateLimiter.set_error}


# ---------------------------------------------------------------------------
# arithmetic shared with the RTL (the replay sampler's is in hostdrv.wire.sampler)


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


def _ip_checksum(total_len: int, src: int, dst: int) -> int:
    """RFC 791 checksum of the fixed IPv4 header the switch emits."""
    s = (0x4500 + total_len + 0x4000 + 0x4011
         + (src >> 16) + (src & 0xFFFF) + (dst >> 16) + (dst & 0xFFFF))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


# ---------------------------------------------------------------------------
# model


@dataclass(frozen=True)
class Egress:
    """One frame the switch emits.

    Attributes
    ----------
    frame:
        The whole Ethernet/IPv4/UDP frame (no FCS).
    dst_ports:
        SUME egress port bitmap (8 bits, one-hot for unicast, multi-hot for
        multicast and flooding).
    """

    frame: bytes
    dst_ports: int


class L2Table:
    """MAC table of the learning switch (ordinary, non-protocol traffic).

    The switch learns like the SUME reference ``output_port_lookup``
    (``mac_cam_lut``): the source MAC of every received frame is bound to the
    port it came in on, and an ordinary frame to a learned unicast MAC goes to
    that port only. ``docs/architecture.md`` (L2 switching) is the prose of
    these rules; the RTL (``hw/rtl/nrl_l2_learn.v``) and the native engine
    implement them bit for bit. Per frame, in this order:

    1. **Lookup** (:meth:`egress`, only ordinary frames use it): a frame
       shorter than an Ethernet header (14 bytes), a broadcast or multicast
       destination (bit 0 of byte 0) and an unknown destination are flooded
       to the MAC ports but the source (``MAC_PORTS & ~src``); a learned
       destination goes to its port, and to no port at all (filtered, as the
       reference's ``rd_oq & ~src_port``) when it was learned on the frame's
       own source port.
    2. **Learning** (:meth:`learn`): a frame of at least 14 bytes whose source
       MAC is unicast teaches the table, protocol frames included. A known
       MAC takes the new port (a station that moved); an unknown one takes
       the entry at the replacement pointer, free or not, which then
       advances (round robin modulo the table size: the reference's
       ``pointer_add_cam``, so entries are replaced in the order they were
       taken). Either way the entry is marked active.
    3. **Aging** (:meth:`tick`): every received frame counts one towards the
       aging period of ``L2_AGE_FRAMES`` frames (0: no aging). The frame that
       ends a period sweeps the table: entries not marked active during the
       period are removed, then every mark is cleared. An entry thus lives
       between one and two periods after its last frame. Writing
       ``L2_AGE_FRAMES`` restarts the period.

    Parameters
    ----------
    entries:
        Table size (``L2_ENTRIES`` in the switch).
    age_frames:
        Initial aging period in frames (``L2_AGE_FRAMES``'s reset value).
    """

    __slots__ = ("active", "age", "left", "macs", "ports", "size", "victim", "_index")

    def __init__(self, entries: int = C.L2_ENTRIES,
                 age_frames: int = regmap.REGISTERS["L2_AGE_FRAMES"].reset) -> None:
        if entries < 1:
            raise ValueError(f"entries={entries!r} is invalid: must be at least 1")
        self.size = entries
        self.macs: list[bytes | None] = [None] * entries  # None: free entry
        self.ports = [0] * entries
        self.active = [False] * entries
        self.victim = 0  # replacement pointer: the entry the next new MAC takes
        self._index: dict[bytes, int] = {}
        self.age = age_frames
        self.left = age_frames  # frames until the end of the aging period

    def set_age(self, age_frames: int) -> None:
        """Set the aging period (``L2_AGE_FRAMES``) and restart it."""
        self.age = self.left = age_frames

    def egress(self, frame: bytes, src_port: int) -> int:
        """SUME egress bitmap of an ordinary frame (0: filtered), before it teaches the table."""
        if len(frame) < _ETH_LEN or frame[0] & 1:
            return MAC_PORTS & ~src_port
        i = self._index.get(bytes(frame[0:6]))
        if i is None:
            return MAC_PORTS & ~src_port
        return self.ports[i] & ~src_port

    def learn(self, frame: bytes, src_port: int) -> None:
        """Bind the frame's source MAC to ``src_port`` (rule 2)."""
        if len(frame) < _ETH_LEN or frame[6] & 1:
            return
        mac = bytes(frame[6:12])
        i = self._index.get(mac)
        if i is None:
            i = self.victim
            self.victim = (i + 1) % self.size
            old = self.macs[i]
            if old is not None:
                del self._index[old]
            self.macs[i] = mac
            self._index[mac] = i
        self.ports[i] = src_port
        self.active[i] = True

    def tick(self) -> None:
        """Count one received frame towards the aging period (rule 3)."""
        if not self.age:
            return
        if self.left > 1:
            self.left -= 1
            return
        self.left = self.age
        for i, mac in enumerate(self.macs):
            if mac is not None and not self.active[i]:
                del self._index[mac]
                self.macs[i] = None
            self.active[i] = False

    def entries(self) -> dict[bytes, int]:
        """The learned MACs and their ports (a snapshot)."""
        return {mac: self.ports[i] for mac, i in self._index.items()}


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


@dataclass(frozen=True, slots=True)
class _Rx:
    """Addressing of the frame being processed, for unicast replies."""

    eth_src: bytes
    ip_src: int
    udp_src: int
    port: int


class SwitchModel:
    """Bit-exact reference model of the switch (``docs/protocol.md``).

    Parameters
    ----------
    capacity:
        C, replay records; a power of two (``RPL_CAPACITY``).
    record_bytes:
        R, bytes per record; a multiple of 64, at most 4032 so that a
        16-record PUSH fits an IPv4 datagram (``RPL_RECORD_BYTES``).
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
        elif name in _LIMITER_WRITE:
            _LIMITER_WRITE[name](self._limiter, value)
        elif name == "L2_AGE_FRAMES":
            self.l2.set_age(value)
        elif name in _AGG_CONFIG:
            for pair in self._copies:
                for c in pair:
                    c.valid = False
        self._regs[name] = regmap.read_back(r, value)  # self-clearing bits read 0

    def _illegal(self, name: str, value: int) -> str:
        """Why ``value`` is not legal for rw register ``name`` ('' when it is): its width
        and the register map's write rule (``legal:`` in ``hw/regs.yaml``), judged on
        the registers' values now."""
        return regmap.refusal(name, value, self._value)

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
            ok = 1 <= count <= MAX_BATCH and count & (count - 1) == 0
            plen = 0
        else:
            ok = 1 <= count <= MAX_UPDATE_PAIRS
            plen = 8 * count
        if not ok:
            return self._drop("BAD_COUNT")
        if n != PAYLOAD_OFFSET + plen:
            return self._drop("BAD_LENGTH")
        rx_addr = _Rx(bytes(frame[6:12]), ip_src, udp_src, src_port)
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
            return self._sample(worker, seq, count, bool(flags & _PRIORITIZED), rx_addr)
        self._update(frame, count)
        return []

    # -- aggregation -------------------------------------------------------------
    def _gradient(self, frame: bytes, w: int, slot: int, r: int, aux: int, total: int,
                  rx: _Rx) -> list[Egress]:
        regs = self._regs
        q = r & 1
        c = self._copies[slot][q]
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
        acc = self._acc[slot, q, :p]
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
        c = self._copies[slot][q]
        if c.valid and c.round == r and c.state == _UP:
            p = self._regs["AGG_ELEMS"]
            self._acc[slot, q, :p] = np.frombuffer(frame, dtype="<u4", count=p,
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
        return self._acc[slot, q, :self._regs["AGG_ELEMS"]].tobytes()

    def _multicast(self, slot: int, q: int) -> Egress:
        regs = self._regs
        c = self._copies[slot][q]
        ports = 0
        for i in range(regs["AGG_MEMBERS"]):
            ports |= regs[_M_PORT[i]]
        self._inc("CNT_TX_RESULT")
        f = self._frame(BROADCAST_MAC, regs["MCAST_IP"], regs["UDP_PORT"], Opcode.RESULT,
                        self._agg_flags(c), c.culprit if c.error else 0, slot, c.round,
                        regs["AGG_ELEMS"], c.aux, self._payload(slot, q), c.total)
        return Egress(f, ports)

    def _resend(self, slot: int, q: int, rx: _Rx, step_error: int | None = None) -> Egress:
        """The copy's RESULT to one member (``RESEND``); with ``step_error`` = w, the answer to
        w's step mismatch on a DONE copy: ``ERROR`` forced on, ``worker`` = w, ``aux`` = the
        copy's ``total`` (the copy itself is unchanged)."""
        c = self._copies[slot][q]
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
        c = self._copies[slot][q]
        self._inc("CNT_TX_UP")
        f = self._frame(BROADCAST_MAC, regs["AGG_PARENT_IP"],
                        regs["AGG_PARENT_UDP"] or regs["UDP_PORT"], Opcode.GRADIENT,
                        self._agg_flags(), regs["AGG_LEAF_ID"], slot, c.round,
                        regs["AGG_ELEMS"], c.round if regs["AGG_MODE"] else c.step,
                        self._payload(slot, q), c.total)
        return Egress(f, regs["AGG_UPLINK_PORT"])

    # -- replay (sampler arithmetic: hostdrv.wire.sampler) ------------------------------
    def _not_yet(self, op: int, w: int, seq: int, reason: int, rx: _Rx) -> list[Egress]:
        """The NOT_YET answer to a refused PUSH or SAMPLE_REQ (section 5)."""
        self._inc("CNT_TX_PUSH_NOT_YET" if op == Opcode.PUSH_ACK else "CNT_TX_SAMPLE_NOT_YET")
        f = self._frame(rx.eth_src, rx.ip_src, rx.udp_src, op, Flags.FROM_SWITCH | Flags.NOT_YET,
                        w, reason, seq, 0, self._size, b"")
        return [Egress(f, rx.port)]

    def _push(self, frame: bytes, w: int, seq: int, count: int, rx: _Rx) -> list[Egress]:
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

    def _sample(self, w: int, seq: int, batch: int, prioritized: bool, rx: _Rx) -> list[Egress]:
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

    # -- helpers -----------------------------------------------------------------
    def _inc(self, name: str) -> None:
        self._cnt[name] = (self._cnt[name] + 1) & M32

    def _drop(self, reason: str) -> list[Egress]:
        self._inc("CNT_DROP_" + reason)
        return []

    def _frame(self, eth_dst: bytes, ip_dst: int, udp_dst: int, op: int, flags: int, worker: int,
               slot: int, seq: int, count: int, aux: int, payload: bytes, total: int = 0) -> bytes:
        """A frame the switch originates (section 7)."""
        regs = self._regs
        n = PAYLOAD_OFFSET + len(payload)
        ip_src = regs["SWITCH_IP"]
        mac = ((regs["SWITCH_MAC_HI"] << 32) | regs["SWITCH_MAC_LO"]).to_bytes(6, "big")
        hdr = _TX.pack(eth_dst, mac, 0x0800,
                       0x45, 0, n - 14, 0, 0x4000, 64, 17, _ip_checksum(n - 14, ip_src, ip_dst),
                       ip_src, ip_dst,
                       regs["UDP_PORT"], udp_dst, n - 34, 0,
                       VERSION, op, int(flags), regs["JOB_ID"], worker, slot, seq & M32, count,
                       aux & M32, total & M32)
        return hdr + payload


def check_src_port(src_port: int) -> None:
    """Raise ValueError unless ``src_port`` is a one-hot 8-bit SUME port bitmap."""
    if src_port not in _ONE_HOT:
        raise ValueError(f"src_port {src_port!r} must be a one-hot 8-bit port bitmap")


def _check_param(name: str, value: int, ok: bool, rule: str) -> None:
    if not ok:
        raise ValueError(f"{name}={value!r} is invalid: must be {rule}")


def check_params(capacity: int, record_bytes: int, max_slots: int, max_elems: int,
                 build_hash: int) -> None:
    """Raise ValueError when a switch parameter (see :class:`SwitchModel`) is out of range."""
    for name, value in (("capacity", capacity), ("record_bytes", record_bytes),
                        ("max_slots", max_slots), ("max_elems", max_elems),
                        ("build_hash", build_hash)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{name}={value!r} is invalid: must be an integer")
    _check_param("capacity", capacity, 1 <= capacity <= 1 << 31
                 and capacity & (capacity - 1) == 0, "a power of two in 1 .. 2**31")
    _check_param("record_bytes", record_bytes,
                 0 < record_bytes <= 4032 and record_bytes % BLOCK == 0,
                 "a positive multiple of 64, at most 4032")
    _check_param("max_slots", max_slots, 1 <= max_slots <= 64, "1 .. 64")
    _check_param("max_elems", max_elems,
                 ELEM_QUANTUM <= max_elems <= MAX_JUMBO_ELEMS and max_elems % ELEM_QUANTUM == 0,
                 f"a multiple of {ELEM_QUANTUM} in {ELEM_QUANTUM} .. {MAX_JUMBO_ELEMS}")
    _check_param("build_hash", build_hash, 0 <= build_hash <= M32, "a 32-bit value")
