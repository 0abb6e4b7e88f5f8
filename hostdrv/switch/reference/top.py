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
from hostdrv.switch.reference.jobs import TABLE_SHAPE, Page, resolve, share_refusal, slot_range
from hostdrv.switch.reference.l2 import L2Table
from hostdrv.switch.reference.replay import ReplayBlock
from hostdrv.wire import consts as C
from hostdrv.wire import regmap, regrules
from hostdrv.wire.consts import MAX_JOBS
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
from hostdrv.wire.ratelimit import RateLimiter

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
_JOB_AT = C.OFF_JOB  # a frame shorter than this + 1 names no job: its counters are page 0's
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
    jobs:
        ``JOBS``, jobs served at once, 1 to ``MAX_JOBS`` (section 11): one register page,
        counter set, slot range and replay table each; 1 has a fixed share (the RTL's default).

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
                 max_elems: int = 352, build_hash: int = 0, jobs: int = 1) -> None:
        check_params(capacity, record_bytes, max_slots, max_elems, build_hash)
        if isinstance(jobs, bool) or not isinstance(jobs, int) or not 1 <= jobs <= MAX_JOBS:
            raise ValueError(f"jobs={jobs!r} is invalid: must be 1 .. {MAX_JOBS}")
        self._params = {
            "RPL_CAPACITY": capacity,
            "RPL_RECORD_BYTES": record_bytes,
            "AGG_MAX_SLOTS": max_slots,
            "AGG_MAX_ELEMS": max_elems,
            "BUILD_HASH": build_hash,
            "JOBS": jobs,
        }
        reset: dict[str, int] = {
            r.name: self._params[r.reset_param] if r.reset_param else r.reset
            for r in regmap.REGISTERS.values() if r.access == "rw"
        }
        reset["AGG_SLOTS"] = min(reset["AGG_SLOTS"], max_slots)
        reset["AGG_ELEMS"] = min(reset["AGG_ELEMS"], max_elems)
        reset["RPL_RESET"] = 0
        # one page per job (section 11): registers, counters, generator, limiter, table
        self._pages = [Page(dict(reset), regmap.COUNTERS) for _ in range(jobs)]
        self._pages[0].carve(True)  # job 0 is enabled at reset and owns all the memory
        self._by_id: dict[int, int] = {}  # JOB_ID -> job, for the enabled jobs
        self._index_ids()
        # aggregation: two shadow copies per memory slot, accumulators as raw 32-bit words
        self._copies = [[_Copy(), _Copy()] for _ in range(max_slots)]
        self._acc = np.zeros((max_slots, 2, max_elems), dtype="<u4")
        self._bind(0)
        # ordinary traffic: the learning switch's MAC table
        self.l2 = L2Table(C.L2_ENTRIES, reset["L2_AGE_FRAMES"])

    def _bind(self, j: int) -> None:
        """Serve job ``j``: the blocks read its registers, count in its page, use its slots,
        generator, limiter and table."""
        p = self._pages[j]
        self._page = p
        self._regs, self._cnt = p.regs, p.cnt
        self._rng, self._limiter = p.rng, p.limiter
        self._t = p.table  # type: ignore[assignment]  # None: no table (DISABLED before use)
        self._sbase = p.regs["JOB_SLOT_BASE"]

    def _index_ids(self) -> None:
        """``_by_id``: the enabled jobs by ``JOB_ID`` (section 11: never two with one id)."""
        on = self._pages[0].regs["JOB_ENABLE"]
        self._by_id = {p.regs["JOB_ID"]: j for j, p in reversed(list(enumerate(self._pages)))
                       if on >> j & 1}

    def _resolve(self, reg: str | int, job: int) -> tuple[int, regmap.Register]:
        """``(job, register)`` of a name and ``job``, or of a page address (``job`` 0)."""
        return resolve(reg, job, len(self._pages))

    # -- registers -----------------------------------------------------------
    def read(self, reg: str | int, job: int = 0) -> int:
        """Read a register.

        Parameters
        ----------
        reg:
            Register name (``"AGG_SLOTS"``, ``"MEMBER_IP_3"``, ``"CNT_DROP_STALE"``)
            or byte address (in any job's page, section 11).
        job:
            With a name: whose copy of a job register (0 for a global one).

        Returns
        -------
        int
            The 32-bit value. Self-clearing bits (``CTRL`` bit 31,
            ``RPL_RESET``) read as 0.

        Raises
        ------
        ValueError
            For an unknown name or address, a job the switch does not have, or a
            global register of another job than 0 (:class:`UnknownRegisterError`).
        """
        j, r = self._resolve(reg, job)
        name = r.name
        p = self._pages[j]
        if name in p.cnt:
            return p.cnt[name]
        if name in self._params:
            return self._params[name]
        t = p.table
        if name == "RPL_SIZE":
            return t.size if t else 0
        if name == "RPL_WPTR":
            return t.wp if t else 0
        if name == "RPL_TOTAL_LO":
            return t.tree.total & M32 if t else 0
        if name == "RPL_TOTAL_HI":
            return t.tree.total >> 32 if t else 0
        if name == "RPL_RATE_DIFF_LO":
            return p.limiter.word & M32
        if name == "RPL_RATE_DIFF_HI":
            return p.limiter.word >> 32
        if name in p.regs:
            return p.regs[name]
        return r.reset  # MAGIC, VERSION

    def write(self, reg: str | int, value: int, job: int = 0) -> None:
        """Write a register.

        Side effects: ``CTRL`` bit 31 clears every counter of every job (and reads
        back 0); a write to ``RPL_SEED`` reseeds the job's generator (0 seeds
        ``0x2545F491``); writing 1 to ``RPL_RESET`` empties the job's table and
        clears its rate limiter's ``RPL_RATE_DIFF``, and so does any write to
        ``RPL_SPI``; a write to ``JOB_ID``, ``JOB_SLOT_*`` or any ``AGG_``
        configuration register frees the copies of the job's slots (an enabled job's); a write to
        ``JOB_RPL_*`` empties the job's table; changing a ``JOB_ENABLE`` bit does
        both for that job (section 11), and so does ``JOB_ENABLE_SET`` /
        ``JOB_ENABLE_CLR``, which set / clear the bits of their mask in ``JOB_ENABLE``
        (and read 0).

        Parameters
        ----------
        reg:
            Register name or byte address (in any job's page).
        value:
            The value to write.
        job:
            With a name: whose copy of a job register (0 for a global one).

        Raises
        ------
        ValueError
            For an unknown or read-only register, or a value out of the
            register's range or refused by section 11's rules (the message names
            both); nothing is changed.
        """
        j, r = self._resolve(reg, job)
        name = r.name
        if r.access != "rw":
            raise ValueError(f"register {name} is read-only ({r.access})")
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise ValueError(f"register {name}: value {value!r} is not an integer")
        value = int(value)
        pages = self._pages
        p = pages[j]
        why = regrules.refusal(name, value, lambda n: self._value(n, j))
        if not why and (name.startswith("JOB_") and name != "JOB_LEASE"):
            why = share_refusal(pages, j, name, value, self._params)
        if why:
            raise ValueError(f"register {name}: value {value:#x} out of range: {why}")
        stored = regrules.read_back(r, value)  # self-clearing bits read 0
        if name in ("JOB_ENABLE_SET", "JOB_ENABLE_CLR"):  # the JOB_ENABLE they make (read 0)
            on = p.regs["JOB_ENABLE"]
            stored = on | value if name == "JOB_ENABLE_SET" else on & ~value
            name, r = "JOB_ENABLE", regmap.lookup("JOB_ENABLE")
        if name == "CTRL":
            if value & _CTRL_CLEAR:
                for q in pages:
                    q.cnt.update(dict.fromkeys(q.cnt, 0))
        elif name == "RPL_SEED":
            p.rng.seed(value)
        elif name == "RPL_RESET":
            if value:
                if p.table is not None:
                    p.table.empty()
                p.limiter.reset()
        elif name in _LIMITER_WRITE:
            _LIMITER_WRITE[name](p.limiter, value)
        elif name == "L2_AGE_FRAMES":
            self.l2.set_age(value)
        elif name == "JOB_ENABLE":
            changed = stored ^ p.regs["JOB_ENABLE"]
            for q in pages:
                q.regs[name] = stored
            for k, q in enumerate(pages):
                if changed >> k & 1:
                    self._free(slot_range(q.regs))
                    q.carve(bool(stored >> k & 1))
        elif name in AGG_CONFIG and p.regs["JOB_ENABLE"] >> j & 1:
            # an enabled job's slots only: a disabled job's range may be an enabled one's
            self._free(slot_range(p.regs))
            p.regs[name] = stored
            self._free(slot_range(p.regs))
        elif name in TABLE_SHAPE:
            p.regs[name] = stored
            p.carve(bool(p.regs["JOB_ENABLE"] >> j & 1))
        if r.job:
            p.regs[name] = stored
        else:
            for q in pages:
                q.regs[name] = stored
        if name in ("JOB_ID", "JOB_ENABLE"):
            self._index_ids()
        self._bind(0)

    def _free(self, slots: range) -> None:
        """Free the copies of memory slots ``slots``."""
        for pair in self._copies[slots.start:slots.stop]:
            for c in pair:
                c.valid = False

    def _value(self, name: str, job: int = 0) -> int:
        """A rw or parameter register's value in job ``job``'s page (what a write rule compares with)."""
        return self._params[name] if name in self._params else self._pages[job].regs[name]

    def counters(self, job: int = 0) -> dict[str, int]:
        """Every ``CNT_*`` register of job ``job``'s page by name.

        Returns
        -------
        dict[str, int]
            A snapshot (a new dict) in register map order.

        Raises
        ------
        ValueError
            For a job the switch does not have.
        """
        if isinstance(job, bool) or not isinstance(job, int) or not 0 <= job < len(self._pages):
            raise ValueError(f"job {job!r} out of range 0 .. {len(self._pages) - 1}")
        return dict(self._pages[job].cnt)

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
        if self._page is not self._pages[0]:
            self._bind(0)
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
        # the job the frame names (section 11): its page counts the frame, its registers judge it
        job = self._by_id.get(frame[_JOB_AT], -1) if n > _JOB_AT else -1
        if job > 0:
            self._bind(job)
            regs = self._regs

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
        ver, op, flags, _job, worker, slot, seq, count, aux, total = HEADER.unpack_from(frame, 42)
        agg = op in (Opcode.GRADIENT, Opcode.RESULT)
        if (ver != VERSION or op not in _RX_COUNTER or flags & ~FLAGS_MASK
                or (total and not agg)):
            return self._drop("BAD_HEADER")
        # 3. job
        if job < 0:
            return self._drop("BAD_JOB")
        # 4. engine (and, for replay, the job's table)
        if not regs["CTRL"] & (1 if agg else 2) or not (agg or self._t):
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
            plen = BLOCK + count * self._t.rb
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
            if slot >= min(regs["AGG_SLOTS"], regs["JOB_SLOT_COUNT"]):
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
