"""cocotb tests of the gradient aggregation engine against the golden model.

The testbench configures the DUT over AXI4-Lite and :class:`SwitchModel`
with the same register writes, feeds both the same frames (and ingress
ports), and compares every output frame (bytes and TUSER: length,
destination port bitmap) and every counter. No expected value is written
by hand.

Tests:

* ``test_stream``: a protocol-following workload with noise (duplicates,
  stragglers, malformed frames, tensor length and step mismatches, rounds
  far ahead of AGG_EPOCH, parent RESULTs with and without ERROR) in four
  jobs (root and leaf, sync and async, fp32 and int32), the same jobs under
  each of the four combinations of source idle insertion and sink
  backpressure (``sim.common.tb.StreamTB.set_stress``), and an AGG_EPOCH
  write while each runs (sometimes one that puts the job's rounds beyond
  the far-ahead bound);
* ``test_workloads``: phases with different jobs (sync / async, root /
  leaf, fp32 / int32, round numbers wrapping at 2**32);
* ``test_malformed``: every malformation and unauthorized class, alone and
  in pairs (the check order decides the counter), DISABLED, counter clear;
* ``test_line_rate``: back-to-back packets for one slot at several packet
  sizes, length and step mismatches and error copies included: no input
  stall once a packet has at least 7 beats, results exact (the
  read-after-write forwarding paths of the accumulator and of the slot
  state, its step id included);
* ``test_reset_mid_frame``: reset while a frame streams in and a result
  streams out;
* ``test_registers``: register read-back against the model;
* ``test_mismatch_and_errors``: tensor length mismatches on OPEN, UP and
  DONE copies, ERROR RESULTs multicast, re-sent and relayed from a parent,
  the order of addition in RESULT aux (each kind must occur);
* ``test_epoch``: AGG_EPOCH reads back and disturbs no slot copy;
* ``test_steps_and_ahead``: step mismatches (sync mode, docs/protocol.md
  section 4 step 4) on OPEN, UP, DONE and error copies, behind a length
  mismatch, at a leaf (upward aux = the copy's step) and ignored in async
  mode; the far-ahead bound of AGG_EPOCH at its edges (2^25 - 1 ahead taken,
  2^25 and 2^31 - 1 dropped as AHEAD, 2^31 and one behind processed), after
  BAD_SLOT and before STALE, with AGG_EPOCH at the rounds' block or before it, and
  epoch writes between packets; under the four stress combinations;
* ``test_port_refusal``: MEMBER_PORT / AGG_UPLINK_PORT writes that are not
  0 or one-hot answer SLVERR and change nothing;
* ``test_short_frames``: every length 42..63 with every opcode class,
  counted exactly as the model counts it;
* ``test_register_edges``: aggregation register values the model refuses
  (ranges, AGG_THRESHOLD <= AGG_MEMBERS, AGG_EPOCH a multiple of 2^24, byte
  strobes) answer SLVERR and change nothing; reads of addresses with no
  register;
* ``test_counter_carry`` (Verilator): counters past 2**16 (the carry into
  their high half), with the lean driver;
* ``test_soak`` (``GRAD_AGG_SOAK=1``): >= 100k packets with the lean
  per-clock driver of ``sim.common.tb`` instead of the BFMs;
* ``test_bench`` (``GRAD_AGG_BENCH_JSON=<path>``): throughput and latency
  figures for ``scripts/bench_grad_agg.py``.
"""

from __future__ import annotations

import json
import os
import struct
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import cocotb
import numpy as np
from cocotb.triggers import RisingEdge, with_timeout
from cocotbext.axi import AxiResp

from hostdrv.switch.reference import Egress, SwitchModel
from hostdrv.wire import protocol as proto
from hostdrv.wire import regmap
from hostdrv.wire.consts import AGG_AHEAD_ROUNDS, EPOCH_ROUNDS
from sim.common.tb import STRESS, StallMonitor, StreamTB, cycle_pause, model_refuses

M32 = 0xFFFFFFFF
MAC_PORTS = (0x01, 0x04, 0x10, 0x40)
"""SUME 10G MAC ports (one-hot); odd bits are the DMA ports."""
FP_SPECIALS = np.array(
    [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001,
     0x00000001, 0x807FFFFF, 0x7F7FFFFF, 0xFF7FFFFF, 0x00800000, 0x3F800000, 0xBF800000],
    dtype="<u4")
SEED = int(os.environ.get("GRAD_AGG_SEED", "20250"))
CLK_NS = 4


def _be16(b: bytes, off: int) -> int:
    return (b[off] << 8) | b[off + 1]


def _be32(b: bytes, off: int) -> int:
    return int.from_bytes(b[off:off + 4], "big")


def describe(frame: bytes) -> str:
    """Header fields of a frame, for mismatch reports."""
    if len(frame) < 64:
        return f"len={len(frame)} {frame.hex()}"
    ver, op, flags, job, worker, slot, seq, count, aux, res = proto.HEADER.unpack_from(frame, 42)
    return (f"len={len(frame)} dst={frame[0:6].hex()} src={frame[6:12].hex()} "
            f"iplen={_be16(frame, 16)} csum={_be16(frame, 24):#06x} ipsrc={_be32(frame, 26):#010x} "
            f"ipdst={_be32(frame, 30):#010x} udp={_be16(frame, 34)}->{_be16(frame, 36)} "
            f"ulen={_be16(frame, 38)} v={ver} op={op} fl={flags:#x} job={job} w={worker} "
            f"slot={slot} seq={seq} count={count} aux={aux} res={res}")


# ---------------------------------------------------------------------------
# job configuration


@dataclass
class Member:
    """One member table entry (and how its frames look)."""

    port: int
    ip: int
    udp: int
    role: int
    mac: bytes


@dataclass
class AggConfig:
    """Everything written into the registers for one aggregation job."""

    members: int
    threshold: int
    slots: int
    elems: int
    dtype_int: bool
    mode_async: bool
    staleness: int
    leaf: bool
    job_id: int
    leaf_id: int
    uplink: int
    parent_ip: int
    parent_udp: int
    table: list[Member]
    udp_port: int = proto.DEFAULT_UDP_PORT
    switch_ip: int = 0x0A000001
    mac_hi: int = 0x0002
    mac_lo: int = 0x4E524C00
    mcast_ip: int = 0xEF004E52
    epoch: int = 0

    def writes(self, threshold_now: int = 0) -> list[tuple[str, int]]:
        """Register writes, in order (``threshold_now``: the AGG_THRESHOLD they follow; it is
        lowered first when the new members are fewer, as AGG_THRESHOLD <= AGG_MEMBERS holds
        after every write)."""
        first = [("AGG_THRESHOLD", self.threshold)] if self.members < threshold_now else []
        out = first + [("CTRL", 0x3), ("UDP_PORT", self.udp_port), ("SWITCH_IP", self.switch_ip),
               ("SWITCH_MAC_HI", self.mac_hi), ("SWITCH_MAC_LO", self.mac_lo),
               ("MCAST_IP", self.mcast_ip), ("JOB_ID", self.job_id),
               ("AGG_MEMBERS", self.members), ("AGG_THRESHOLD", self.threshold),
               ("AGG_SLOTS", self.slots), ("AGG_ELEMS", self.elems),
               ("AGG_DTYPE", int(self.dtype_int)), ("AGG_MODE", int(self.mode_async)),
               ("AGG_STALENESS", self.staleness), ("AGG_ROLE", int(self.leaf)),
               ("AGG_UPLINK_PORT", self.uplink), ("AGG_PARENT_IP", self.parent_ip),
               ("AGG_PARENT_UDP", self.parent_udp), ("AGG_LEAF_ID", self.leaf_id),
               ("AGG_EPOCH", self.epoch)]
        for i, m in enumerate(self.table):
            out += [(f"MEMBER_PORT_{i}", m.port), (f"MEMBER_IP_{i}", m.ip),
                    (f"MEMBER_UDP_{i}", m.udp), (f"MEMBER_ROLE_{i}", m.role)]
        return out

    @property
    def parent_mac(self) -> bytes:
        return b"\x02\x00\x00\x00\xfe\x01"


def block_of(r: int) -> int:
    """The epoch block (a multiple of 2**24) round ``r`` is in."""
    return r & M32 & ~(EPOCH_ROUNDS - 1)


def epoch_for(rng: np.random.Generator, start: int) -> int:
    """An AGG_EPOCH under which rounds from ``start`` on are processed (within the far-ahead
    bound, for the next 2**20 rounds at least): the block of ``start``, the block before it
    (the rounds crossed into the next block) unless ``start`` is near its block's end, or a
    block after it (the rounds are behind the epoch: processed as ever)."""
    k = int(rng.choice([0, 0, -1, int(rng.integers(1, 128))]))
    if k == -1 and (start & (EPOCH_ROUNDS - 1)) >= EPOCH_ROUNDS - (1 << 20):
        k = 0
    return (block_of(start) + k * EPOCH_ROUNDS) & M32


def random_config(rng: np.random.Generator, *, max_slots: int, max_elems: int,
                  leaf: bool | None = None, mode_async: bool | None = None,
                  dtype_int: bool | None = None, elems: int | None = None,
                  slots: int | None = None, members: int | None = None,
                  start: int = 0) -> AggConfig:
    """A random but legal job configuration whose AGG_EPOCH lets rounds from ``start`` on in
    (:func:`epoch_for`)."""
    n = members if members is not None else int(rng.choice([1, 2, 3, 4, 4, 5, 8]))
    mode = bool(rng.random() < 0.4) if mode_async is None else mode_async
    thr = int(rng.integers(1, n + 1))  # 1 .. N (ignored in sync mode)
    s = slots if slots is not None else int(rng.integers(1, min(12, max_slots) + 1))
    p = elems if elems is not None else int(rng.choice([16, 16, 32, 32, 48, 64]))
    p = min(p, max_elems)
    table = []
    for i in range(8):
        # MEMBER_PORT is 0 (unused entry) or one-hot; members share ports
        port = int(rng.choice(MAC_PORTS + (0x02,)))
        if i >= n and rng.random() < 0.2:
            port = 0
        role = (1 | int(rng.integers(0, 4)) << 1) if i < n else int(rng.integers(0, 8))
        table.append(Member(port=port, ip=0x0A000100 + 7 * i + 1,
                            udp=int(rng.choice([0, 30000 + i])), role=role,
                            mac=bytes([0x02, 0, 0, 0, 0x10, i])))
    if mode and 1 <= thr < n and n > 1 and rng.random() < 0.5:
        table[n - 1].role &= 0b110  # a member id without the aggregation role
    return AggConfig(
        members=n, threshold=thr, slots=s, elems=p,
        dtype_int=bool(rng.random() < 0.4) if dtype_int is None else dtype_int,
        mode_async=mode, staleness=int(rng.integers(0, 4)),
        leaf=bool(rng.random() < 0.4) if leaf is None else leaf,
        job_id=int(rng.integers(0, 256)), leaf_id=int(rng.integers(0, 8)),
        uplink=int(rng.choice(MAC_PORTS)), parent_ip=0x0A0000FE,
        parent_udp=int(rng.choice([0, 20051])), table=table,
        udp_port=int(rng.choice([proto.DEFAULT_UDP_PORT, 4791])),
        switch_ip=int(rng.integers(1, 1 << 32)), mcast_ip=int(rng.integers(1, 1 << 32)),
        mac_hi=int(rng.integers(0, 1 << 16)), mac_lo=int(rng.integers(0, 1 << 32)),
        epoch=epoch_for(rng, start))


def rand_payload(rng: np.random.Generator, n: int, dtype_int: bool) -> bytes:
    """n random elements; fp32 payloads sometimes carry NaN, inf, -0, subnormals."""
    if n <= 0:
        return b""
    if dtype_int:
        if rng.random() < 0.2:
            vals = rng.choice(np.array([0, 1, -1, 2**31 - 1, -(2**31)], dtype=np.int64), n)
        else:
            vals = rng.integers(-(2**31), 2**31, n, dtype=np.int64)
        return vals.astype("<i4").tobytes()
    vals = (rng.standard_normal(n) * 10.0 ** float(rng.integers(-3, 4))).astype("<f4")
    bits = vals.view("<u4").copy()
    if rng.random() < 0.3:
        k = int(rng.integers(1, 4))
        bits[rng.integers(0, n, k)] = rng.choice(FP_SPECIALS, k)
    return bits.tobytes()


def one_hot_in(rng: np.random.Generator, bitmap: int) -> int:
    """A random one-hot port inside ``bitmap`` (any port when it is 0)."""
    bits = [1 << i for i in range(8) if bitmap >> i & 1] or [1 << i for i in range(8)]
    return int(rng.choice(bits))


# ---------------------------------------------------------------------------
# traffic


MALFORMATIONS = ("short", "iplen", "udplen", "paylen", "version", "opcode", "flags", "total0",
                 "job", "count", "dtype", "slot", "unknown", "spoof_port", "spoof_ip",
                 "spoof_udp", "norole", "headeronly")
FLAGS_IGNORED = int(proto.Flags.PRIORITIZED | proto.Flags.RESEND | proto.Flags.FROM_SWITCH
                    | proto.Flags.ERROR)
"""GRADIENT flag bits a switch ignores (bits 1-4)."""


class Workload:
    """Frames of workers following the protocol, with duplicates, stragglers and noise.

    A slot starts round r+1 once every member has sent round r and the
    result of round r-1 was seen (at most two rounds in flight per slot, one
    per copy); a slot blocked for long goes on anyway. On a leaf the parent
    answers upward GRADIENTs with RESULTs (sometimes late, twice, or
    spoofed). Noise frames never replace a contribution. In sync mode a
    GRADIENT's aux is the step id of its round (:meth:`step_of`, the same
    for every member); in async mode the round minus a lag.
    """

    def __init__(self, rng: np.random.Generator, cfg: AggConfig, *, noise: float = 0.3,
                 start_round: int = 0, mismatch: float = 0.0) -> None:
        self.rng = rng
        self.cfg = cfg
        self.noise = noise
        self.mismatch_rate = mismatch
        self.start = start_round
        self.contrib = [i for i in range(cfg.members) if cfg.table[i].role & 1]
        self.cur = [start_round - 1] * cfg.slots
        self.pending: list[list[int]] = [[] for _ in range(cfg.slots)]
        self.blocked = [0] * cfg.slots
        self.done: set[tuple[int, int]] = set()
        self.up_wait: list[tuple[int, int]] = []
        self.history: list[tuple[bytes, int]] = []
        self.tensor = int(rng.integers(1, 1 << 32))
        self.step0 = int(rng.integers(0, 1 << 32))
        # probability that a RESULT from the parent is an ERROR RESULT
        self.parent_error = 0.15

    def total_of(self, s: int, r: int) -> int:
        """The tensor length every member's GRADIENT of slot ``s``, round ``r`` carries (never 0)."""
        return (self.tensor + 0x9E3779B1 * s + 7919 * (r & M32)) % M32 + 1

    def step_of(self, s: int, r: int) -> int:
        """The step id (sync aux) every member's GRADIENT of slot ``s``, round ``r`` carries:
        one per round number, as if a call used one round of every slot."""
        del s
        return (self.step0 + 0x10001 * (r & M32)) & M32

    def bad_step(self, s: int, r: int) -> int:
        """A step id other than the round's (a member in another call)."""
        good = self.step_of(s, r)
        bad = good
        while bad == good:
            bad = int(self.rng.choice([good + 1, good - 1, self.step_of(s, r + 1),
                                       int(self.rng.integers(0, 1 << 32))])) & M32
        return bad

    def bad_total(self, s: int, r: int) -> int:
        """A tensor length other than the round's (a member with another tensor)."""
        good = self.total_of(s, r)
        bad = good
        while bad in (good, 0):
            bad = int(self.rng.choice([good + 16, good - 1, good ^ 0x80000000,
                                       int(self.rng.integers(1, 1 << 32))])) & M32
        return bad

    # -- frame construction ---------------------------------------------------
    def frame(self, *, op: int = proto.Opcode.GRADIENT, worker: int, slot: int, seq: int,
              aux: int, count: int | None = None, payload: bytes | None = None,
              flags: int | None = None, job: int | None = None, version: int = 1,
              total: int | None = None, ingress: int | None = None, ip_src: int | None = None,
              udp_src: int | None = None, eth_src: bytes | None = None) -> tuple[bytes, int]:
        """A frame from member ``worker`` (or the parent, for a RESULT) and its ingress port.

        ``total`` (word 60) defaults to the round's tensor length."""
        cfg, rng = self.cfg, self.rng
        p = cfg.elems if count is None else count
        if payload is None:
            payload = rand_payload(rng, cfg.elems, cfg.dtype_int)
        if flags is None:
            flags = int(cfg.dtype_int)
        m = cfg.table[worker % 8]
        if op == proto.Opcode.RESULT:
            ing = cfg.uplink or 0x01
            src_ip, src_udp, mac = cfg.parent_ip, cfg.parent_udp or cfg.udp_port, cfg.parent_mac
        else:
            ing = one_hot_in(rng, m.port)
            src_ip, src_udp, mac = m.ip, m.udp or int(rng.integers(1024, 65536)), m.mac
        if total is None:
            total = self.total_of(slot, seq)
        msg = proto.Message(op, flags, cfg.job_id if job is None else job, worker & 0xFFFF,
                            slot & 0xFFFF, seq & M32, p & 0xFFFF, aux & M32, payload, version,
                            total & M32)
        fr = proto.Frame(msg, eth_dst=bytes(6 * [0xFF]), eth_src=mac if eth_src is None else eth_src,
                         ip_src=src_ip if ip_src is None else ip_src, ip_dst=cfg.switch_ip,
                         udp_src=src_udp if udp_src is None else udp_src, udp_dst=cfg.udp_port)
        return proto.build_frame(fr, validate=False), ing if ingress is None else ingress

    def gradient(self, w: int, s: int, r: int, *, lag: int | None = None,
                 total: int | None = None, step: int | None = None) -> tuple[bytes, int]:
        """A well-formed GRADIENT of member ``w`` for slot ``s``, round ``r``.

        aux: in sync mode ``step`` (default the round's, :meth:`step_of`), in
        async mode ``r - lag`` (a random lag by default). Flag bits 1-4
        (ignored on a GRADIENT) are sometimes set."""
        if lag is None:
            lag = 0
            if self.cfg.mode_async and self.rng.random() < 0.3:
                lag = int(self.rng.integers(1, self.cfg.staleness + 3))
        if self.cfg.mode_async:
            aux = r - lag if step is None else step
        else:
            aux = self.step_of(s, r) if step is None else step
        flags = int(self.cfg.dtype_int)
        if self.rng.random() < 0.1:
            flags |= int(self.rng.integers(0, 16)) << 1 & FLAGS_IGNORED
        return self.frame(worker=w, slot=s, seq=r, aux=aux, total=total, flags=flags)

    def mismatch(self) -> tuple[bytes, int]:
        """A contribution with another tensor length or (sync) step id, or both, for a round
        that is open, done or next."""
        rng = self.rng
        s = int(rng.integers(0, self.cfg.slots))
        r = max(self.cur[s], self.start) + int(rng.choice([0, 0, 0, -1, 1]))
        w = int(rng.choice(self.contrib)) if self.contrib else 0
        kind = rng.random() if not self.cfg.mode_async else 0.0
        total = self.bad_total(s, r) if kind < 0.5 or kind > 0.85 else None
        step = self.bad_step(s, r) if kind >= 0.5 else None
        return self.gradient(w, s, r, lag=0, total=total, step=step)

    def far_ahead(self) -> tuple[bytes, int]:
        """A GRADIENT whose round is AGG_AHEAD_ROUNDS or more (below 2**31) ahead of the
        epoch (``cfg.epoch``): dropped as AHEAD, whatever else it is."""
        rng = self.rng
        d = int(rng.choice([AGG_AHEAD_ROUNDS, AGG_AHEAD_ROUNDS + 1, 2**31 - 1,
                            int(rng.integers(AGG_AHEAD_ROUNDS, 2**31))]))
        s = int(rng.integers(0, self.cfg.slots))
        w = int(rng.choice(self.contrib)) if self.contrib else 0
        return self.gradient(w, s, (self.cfg.epoch + d) & M32)

    # -- the stream -------------------------------------------------------------
    def next(self) -> tuple[bytes, int]:
        """The next input frame and its one-hot ingress port."""
        rng = self.rng
        if self.cfg.leaf and self.up_wait and rng.random() < 0.4:
            return self.parent_result()
        if rng.random() < self.mismatch_rate:
            return self.mismatch()
        if rng.random() < self.noise:
            return self.noise_frame()
        return self.contribution()

    def observe(self, outs: list[Egress]) -> None:
        """Learn from the model's outputs: results seen, upward packets to answer."""
        for e in outs:
            f = e.frame
            key = (_be16(f, 48), _be32(f, 50))
            if f[43] == proto.Opcode.RESULT and not f[44] & proto.Flags.RESEND:
                self.done.add(key)
            elif f[43] == proto.Opcode.GRADIENT and key not in self.up_wait:
                self.up_wait.append(key)

    def _startable(self, s: int) -> bool:
        prev = self.cur[s] - 1
        if prev < self.start or (s, prev & M32) in self.done or self.blocked[s] > 40:
            return True
        self.blocked[s] += 1
        return False

    def contribution(self) -> tuple[bytes, int]:
        cands = [s for s in range(self.cfg.slots) if self.pending[s] or self._startable(s)]
        if not cands or not self.contrib:
            if self.up_wait:
                return self.parent_result()
            return self.malformed()
        s = int(self.rng.choice(cands))
        if not self.pending[s]:
            self.cur[s] += 1
            self.blocked[s] = 0
            self.pending[s] = [int(w) for w in self.rng.permutation(self.contrib)]
        w = self.pending[s].pop()
        fr = self.gradient(w, s, self.cur[s])
        self.history.append(fr)
        del self.history[:-40]
        return fr

    def parent_result(self, variant: str = "") -> tuple[bytes, int]:
        """The parent's RESULT for a partial sum the leaf sent up (or a spoofed one)."""
        rng, cfg = self.rng, self.cfg
        if self.up_wait:
            i = int(rng.integers(0, len(self.up_wait)))
            s, r = self.up_wait[i] if rng.random() < 0.9 else self.up_wait[0]
            if rng.random() < 0.85:
                self.up_wait.remove((s, r))
        else:
            s, r = int(rng.integers(0, cfg.slots)), max(self.cur[0], 0)
        flags = int(proto.Flags.FROM_SWITCH) | int(cfg.dtype_int)
        if rng.random() < 0.2:
            flags |= int(proto.Flags.RESEND)
        # the parent's aux (order of addition), total, ERROR flag and culprit
        # are relayed as they are; worker bits 15:3 are not the culprit's
        order = [int(x) for x in rng.integers(0, 8, int(rng.integers(1, 9)))]
        aux = proto.result_aux(order) if rng.random() < 0.7 else int(rng.integers(0, 1 << 32))
        worker = 0
        total = self.total_of(s, r) if rng.random() < 0.8 else int(rng.integers(0, 1 << 32))
        if rng.random() < self.parent_error:
            flags |= int(proto.Flags.ERROR)
            worker = int(rng.choice([int(rng.integers(0, 8)), int(rng.integers(0, 1 << 16))]))
            aux = self.bad_total(s, r)
        elif rng.random() < 0.1:
            worker = int(rng.integers(0, 1 << 16))  # not an error: no culprit relayed
        kw: dict[str, Any] = {}
        if variant == "port":
            kw["ingress"] = int(rng.choice([p for p in (0x01, 0x02, 0x04, 0x10, 0x40, 0x80)
                                            if not p & cfg.uplink]))
        elif variant == "ip":
            kw["ip_src"] = cfg.parent_ip ^ 0x100
        elif variant == "round":
            r += int(rng.choice([-2, -1, 1, 2]))
        return self.frame(op=proto.Opcode.RESULT, worker=worker, slot=s, seq=r, aux=aux,
                          flags=flags, total=total, **kw)

    def noise_frame(self) -> tuple[bytes, int]:
        rng = self.rng
        kind = rng.choice(["dup", "old", "future", "malformed", "result", "mismatch", "far"],
                          p=[0.22, 0.17, 0.03, 0.38, 0.08, 0.08, 0.04])
        if kind == "mismatch":
            return self.mismatch()
        if kind == "far":
            return self.far_ahead()
        if kind == "dup" and self.history:
            return self.history[int(rng.integers(0, len(self.history)))]
        if kind in ("old", "future") and self.contrib:
            s = int(rng.integers(0, self.cfg.slots))
            r = self.cur[s] + (2 if kind == "future" else -int(rng.integers(0, 4)))
            if r >= self.start or kind == "future":
                return self.gradient(int(rng.choice(self.contrib)), s, r)
        if kind == "result":
            variant = "" if not self.cfg.leaf else str(rng.choice(["", "port", "ip", "round"]))
            return self.parent_result(variant)
        return self.malformed()

    def malformed(self, kinds: tuple[str, ...] | None = None) -> tuple[bytes, int]:
        """A frame with one or two malformations (then the check order decides)."""
        rng, cfg = self.rng, self.cfg
        if kinds is None:
            k = 1 if rng.random() < 0.7 else 2
            kinds = tuple(str(x) for x in rng.choice(MALFORMATIONS, k, replace=False))
        w = int(rng.choice(self.contrib)) if self.contrib else 0
        s = int(rng.integers(0, cfg.slots))
        r = max(self.cur[s], self.start)
        kw: dict[str, Any] = {}
        if "paylen" in kinds:
            nbytes = max(0, 4 * cfg.elems + int(rng.choice([-64, -4, -1, 3, 64])))
            kw["payload"] = rand_payload(rng, cfg.elems + 16, cfg.dtype_int)[:nbytes]
        if "headeronly" in kinds:
            kw["payload"] = b""
        if "count" in kinds:
            c = int(rng.choice([cfg.elems + 16, max(cfg.elems - 16, 0), int(rng.integers(0, 1 << 16))]))
            if c == cfg.elems:
                c += 1
            kw["count"] = c
            if rng.random() < 0.5 and c <= 352:
                kw["payload"] = rand_payload(rng, c, cfg.dtype_int)
        if "version" in kinds:
            kw["version"] = int(rng.choice([0, 2, 255]))
        if "total0" in kinds:
            kw["total"] = 0
        if "job" in kinds:
            kw["job"] = (cfg.job_id + int(rng.integers(1, 256))) & 0xFF
        if "slot" in kinds:
            s = int(rng.choice([cfg.slots, cfg.slots + int(rng.integers(0, 64)), 127, 128, 0xFFFF]))
        if "unknown" in kinds:
            w = int(rng.choice([cfg.members, 7, 8, 0x103, 0xFFFF]))
            w = max(w, cfg.members)
        if "norole" in kinds:
            lack = [i for i in range(8) if not cfg.table[i].role & 1]
            if lack:
                w = int(rng.choice(lack))
        if "spoof_ip" in kinds:
            kw["ip_src"] = cfg.table[w % 8].ip ^ (1 << int(rng.integers(0, 32)))
        if "spoof_udp" in kinds:
            u = cfg.table[w % 8].udp
            kw["udp_src"] = (u ^ 0x8) if u else int(rng.integers(1, 65536))
        if "spoof_port" in kinds:
            kw["ingress"] = int(rng.choice([p for p in (1 << i for i in range(8))
                                            if not p & cfg.table[w % 8].port]))
        flags = int(cfg.dtype_int)
        if "dtype" in kinds:
            flags ^= 1
        if "flags" in kinds:
            flags |= 0x40 << int(rng.integers(0, 2))  # undefined bits 7:6 (bit 5 is NOT_YET)
        aux = r if self.cfg.mode_async else self.step_of(s, r)
        frame, port = self.frame(worker=w, slot=s, seq=r, aux=aux, flags=flags, **kw)
        f = bytearray(frame)
        if "opcode" in kinds:
            f[43] = int(rng.choice([0, 8, 9, 0x41, 0xFF]))
        if "iplen" in kinds:
            struct.pack_into("!H", f, 16, (len(f) - 14 + int(rng.choice([-4, -1, 1, 64]))) & 0xFFFF)
        if "udplen" in kinds:
            struct.pack_into("!H", f, 38, (len(f) - 34 + int(rng.choice([-4, -1, 1, 64]))) & 0xFFFF)
        if "short" in kinds:
            f = f[:int(rng.integers(42, 64))]
        return bytes(f), port


# ---------------------------------------------------------------------------
# what the traffic exercised (from the model's verdicts and output frames)


@dataclass(frozen=True)
class CopyBefore:
    """The model's slot copy a GRADIENT names, as it was before the GRADIENT."""

    state: int
    """0 OPEN, 1 UP, 2 DONE."""
    error: bool
    step: int


def classify(frame: bytes, outs: list[Egress], before: dict[str, int],
             after: dict[str, int], pre: CopyBefore | None = None) -> list[str]:
    """Names of the behaviours one input frame exercised in the model.

    ``mismatch_error`` (a MISMATCH that made an error copy: its ERROR RESULT
    multicast; ``mismatch_up`` when the copy was a leaf's waiting for its
    parent), ``mismatch_resend`` (a MISMATCH on a DONE copy: RESULT re-sent),
    ``step_error`` / ``step_up`` / ``step_resend`` / ``step_error_resend``
    (the same for a step mismatch: the ERROR RESULT's aux equals its total;
    the RESULT of a DONE copy re-sent with ERROR forced on, or an error
    copy's as it is), ``ahead`` (dropped as AHEAD), ``error_resend`` (an
    error copy's RESULT re-sent), ``error_relay`` (a leaf relaying its
    parent's ERROR RESULT), ``order`` (a RESULT whose aux names at least two
    contributions, not in ascending member order), ``total_hi`` (a RESULT
    or upward GRADIENT whose total has bit 31 set), ``up``, ``up_step`` (an
    upward GRADIENT whose aux is not its round: a sync leaf's step id) and
    ``result``.
    """
    tags = []
    mism = after["CNT_DROP_MISMATCH"] != before["CNT_DROP_MISMATCH"]
    if after["CNT_DROP_AHEAD"] != before["CNT_DROP_AHEAD"]:
        tags.append("ahead")
    op_in = frame[43] if len(frame) > 43 else -1
    for e in outs:
        f = e.frame
        flags, aux, total = f[44], _be32(f, 56), _be32(f, 60)
        if total >> 31:
            tags.append("total_hi")
        if f[43] == proto.Opcode.GRADIENT:
            tags.append("up")
            if aux != _be32(f, 50):
                tags.append("up_step")
            continue
        tags.append("result")
        err, resend = bool(flags & proto.Flags.ERROR), bool(flags & proto.Flags.RESEND)
        if mism:
            # a step mismatch: the packet's total is the copy's (checked first)
            step = pre is not None and _be32(frame, 60) == total
            tags.append("mismatch_resend" if resend else "mismatch_error")
            if not resend and pre is not None and pre.state == 1:
                tags.append("mismatch_up")
            if step and not resend:
                tags.append("step_up" if pre is not None and pre.state == 1 else "step_error")
            elif step:
                tags.append("step_error_resend" if pre is not None and pre.error else "step_resend")
        if err and resend:
            tags.append("error_resend")
        if err and op_in == proto.Opcode.RESULT:
            tags.append("error_relay")
        if not err and op_in == proto.Opcode.GRADIENT:
            order = proto.result_order(aux)
            if len(order) >= 2 and order != sorted(order):
                tags.append("order")
    return tags


# ---------------------------------------------------------------------------
# testbench


class TB(StreamTB):
    """The common stream testbench with the golden model and the expected-output queue.

    ``streams=False`` drives the streams with the lean driver (soak, bench)."""

    IDLE_PATTERN = (0, 0, 1, 0, 1, 0, 0, 0, 1)
    BACKPRESSURE_PATTERN = (0, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0)

    def __init__(self, dut: Any, *, streams: bool = True) -> None:
        # control registers are undefined until the first reset: reset is held
        # from time zero and the BFMs are made after it (they sample tready/arready)
        super().__init__(dut, CLK_NS, lean=not streams, bfms_after_reset=True)
        self.model = SwitchModel()
        self.max_slots = 0
        """``AGG_MAX_SLOTS`` of the DUT (read at each reset)."""
        self.max_elems = 0
        """``AGG_MAX_ELEMS`` of the DUT (read at each reset)."""
        self.expected: list[Egress] = []
        self.sent = 0
        self.tally: Counter[str] = Counter()

    async def reset(self, cycles: int = 4, after: int = 4) -> None:
        """Reset the DUT and start a fresh model with the DUT's parameters."""
        await super().reset(cycles, after)
        await self.new_model()

    @classmethod
    async def start(cls, dut: Any, seed: int, *,
                    streams: bool = True) -> tuple[TB, np.random.Generator]:
        """A testbench out of reset with a fresh model, and the test's generator seeded ``seed``."""
        tb = cls(dut, streams=streams)
        await tb.reset()
        return tb, np.random.default_rng(seed)

    async def new_model(self) -> None:
        """A fresh model with the DUT's parameters (``AGG_MAX_SLOTS``, ``AGG_MAX_ELEMS``,
        ``BUILD_HASH``); nothing expected."""
        self.max_slots = await self.read("AGG_MAX_SLOTS")
        self.max_elems = await self.read("AGG_MAX_ELEMS")
        build_hash = await self.read("BUILD_HASH")
        self.model = SwitchModel(max_slots=self.max_slots, max_elems=self.max_elems,
                                 build_hash=build_hash)
        self.expected = []

    async def write(self, name: str, value: int) -> None:
        """The same register write into the DUT and the model; the DUT must answer OKAY."""
        await self.write_reg(name, value)
        self.model.write(name, value)

    async def configure(self, cfg: AggConfig) -> None:
        """Write every register of ``cfg`` into the DUT and the model."""
        for name, value in cfg.writes(self.model.read("AGG_THRESHOLD")):
            await self.write(name, value)

    def random_config(self, rng: np.random.Generator, **kw: Any) -> AggConfig:
        """:func:`random_config` within this DUT's ``AGG_MAX_SLOTS`` and ``AGG_MAX_ELEMS``."""
        return random_config(rng, max_slots=self.max_slots, max_elems=self.max_elems, **kw)

    async def configure_random(self, rng: np.random.Generator, **kw: Any) -> AggConfig:
        """A :meth:`random_config` (``kw`` as for :func:`random_config`), configured."""
        cfg = self.random_config(rng, **kw)
        await self.configure(cfg)
        return cfg

    async def send(self, frame: bytes, port: int) -> list[Egress]:
        """Queue a frame into the DUT and the model; returns the model's outputs."""
        before = self.model.counters()
        pre = self._copy_before(frame)
        outs = self.model.process(frame, port)
        self.tally.update(classify(frame, outs, before, self.model.counters(), pre))
        self.expected.extend(outs)
        self.sent += 1
        await self.send_frame(frame, port)
        return outs

    def _copy_before(self, frame: bytes) -> CopyBefore | None:
        """The model's copy a GRADIENT names if it holds the GRADIENT's round, else None."""
        if len(frame) < 64 or frame[43] != proto.Opcode.GRADIENT:
            return None
        copies = self.model._copies  # test introspection of the golden model
        slot, seq = _be16(frame, 48), _be32(frame, 50)
        if slot >= len(copies) or not copies[slot][seq & 1].valid:
            return None
        c = copies[slot][seq & 1]
        if c.round != seq:
            return None
        return CopyBefore(c.state, c.error, c.step)

    async def run(self, wl: Workload, n: int) -> None:
        for _ in range(n):
            wl.observe(await self.send(*wl.next()))

    async def settle(self) -> None:
        """Wait until every queued frame went in and the engine is quiet."""
        await self.send_done()
        await self.cycles(40)

    async def check(self, *, timeout_us: float = 400.0) -> None:
        """Every expected output, in order, then nothing more; then the counters."""
        await with_timeout(self.send_done(), timeout_us, "us")
        for i, exp in enumerate(self.expected):
            data, tuser = await self.recv_frame(timeout_us * 1000)
            self.compare(i, data, tuser, exp)
        n = len(self.expected)
        self.expected = []
        await self.cycles(60)
        assert not self.recv_pending(), f"unexpected output after {n} frames: {self.recv_pending()} more"
        await self.check_counters()

    def compare(self, i: int, data: bytes, tuser: int, exp: Egress) -> None:
        want_user = len(exp.frame) | exp.dst_ports << 24
        if data != exp.frame or (tuser & M32) != want_user:
            raise AssertionError(
                f"output {i} differs\n got  {describe(data)} tuser={tuser & M32:#010x}\n"
                f" want {describe(exp.frame)} tuser={want_user:#010x}\n"
                f" payload equal: {data[64:] == exp.frame[64:]}")

    async def check_counters(self) -> None:
        want = self.model.counters()
        got = {name: await self.read(name) for name in regmap.COUNTERS}
        self.log.info("counters: %s", {k[4:]: v for k, v in want.items() if v})
        diff = {k: (got[k], want[k]) for k in want if got[k] != want[k]}
        assert not diff, f"counters (dut, model) differ: {diff}"


# ---------------------------------------------------------------------------
# tests with the BFMs


STREAM_JOBS: list[dict[str, Any]] = [
    {"leaf": False, "mode_async": False, "dtype_int": False},
    {"leaf": False, "mode_async": True, "dtype_int": True},
    {"leaf": True, "mode_async": False, "dtype_int": True},
    {"leaf": True, "mode_async": True, "dtype_int": False},
]
"""The jobs of ``test_stream``: the same under every stress combination."""


@cocotb.test()
@cocotb.parametrize(idle=STRESS, backpressure=STRESS)
async def test_stream(dut: Any, idle: bool, backpressure: bool) -> None:
    """A noisy workload (every role and mode) under idle insertion and backpressure.

    The jobs do not depend on the stress: each of the four combinations runs
    root and leaf, sync and async, fp32 and int32."""
    tb, rng = await TB.start(dut, SEED + 2 * int(idle) + int(backpressure))
    tb.set_stress(idle, backpressure)
    for job in STREAM_JOBS:
        cfg = await tb.configure_random(rng, members=3, **job)
        wl = Workload(rng, cfg, noise=0.3, mismatch=0.03)
        await tb.run(wl, 75)
        # a member restarting its rounds writes AGG_EPOCH while traffic flows; now and
        # then one that leaves the job's rounds beyond the far-ahead bound (AHEAD drops)
        # (AGG_EPOCH now bounds the rounds: the frames before the write reach the
        # engine first, as the model takes them)
        cfg.epoch = (epoch_for(rng, max(wl.cur)) if rng.random() < 0.75
                     else block_of(max(wl.cur)) - 2 * EPOCH_ROUNDS) & M32
        await tb.settle()
        await tb.write("AGG_EPOCH", cfg.epoch)
        await tb.run(wl, 75)
        await tb.check()
    tb.log.info("exercised: %s", dict(tb.tally))


@cocotb.test()
async def test_workloads(dut: Any) -> None:
    """Jobs one after the other: every role, mode and dtype; rounds wrapping at 2**32."""
    tb, rng = await TB.start(dut, SEED + 10)
    phases: list[tuple[dict[str, Any], int]] = [
        ({"leaf": False, "mode_async": False, "dtype_int": False}, 300),
        ({"leaf": False, "mode_async": True, "dtype_int": True}, 300),
        ({"leaf": True, "mode_async": False, "dtype_int": False}, 300),
        ({"leaf": True, "mode_async": True, "dtype_int": True}, 300),
        ({"leaf": False, "mode_async": False, "dtype_int": True, "members": 1}, 300),
        ({"leaf": True, "mode_async": True, "dtype_int": False, "members": 8}, 300),
        ({"leaf": False, "mode_async": True, "dtype_int": False, "slots": tb.max_slots,
          "elems": 16}, 300),
        # all slots in use, the largest packets (the top of the slot memory)
        ({"leaf": False, "mode_async": False, "slots": tb.max_slots, "elems": tb.max_elems}, 120),
    ]
    for k, (ph, n) in enumerate(phases):
        start = int(rng.choice([0, 5, 2**31 - 2, 2**32 - 3]))
        cfg = tb.random_config(rng, start=start, **ph)
        tb.log.info("phase %d: %s start round %d", k, ph, start)
        await tb.configure(cfg)
        await tb.run(Workload(rng, cfg, noise=0.3, start_round=start), n)
        await tb.check()


@cocotb.test()
async def test_malformed(dut: Any) -> None:
    """Every malformed and unauthorized class, alone and in pairs; DISABLED; counter clear."""
    tb, rng = await TB.start(dut, SEED + 20)
    cfg = tb.random_config(rng, leaf=True, mode_async=True, members=4, elems=32)
    cfg.threshold = 3
    cfg.table[3].role = 0b110
    cfg.table[0].udp = 30000
    await tb.configure(cfg)
    wl = Workload(rng, cfg, noise=0.0)
    for kind in MALFORMATIONS:
        await tb.send(*wl.malformed((kind,)))
    for _ in range(200):
        await tb.send(*wl.malformed())
    # RESULTs that are not from the parent, and a RESULT on a root
    for variant in ("port", "ip", "round", ""):
        await tb.send(*wl.parent_result(variant))
    # valid traffic interleaved with noise, then engine off
    await tb.run(Workload(rng, cfg, noise=0.5), 120)
    await tb.check()
    await tb.write("CTRL", 0x2)
    await tb.run(wl, 6)
    await tb.check()
    await tb.write("CTRL", 0x3 | 1 << 31)
    await tb.check_counters()
    cfg.leaf = False
    await tb.configure(cfg)
    await tb.send(*wl.parent_result())
    await tb.run(Workload(rng, cfg, noise=0.4), 100)
    await tb.check()


@cocotb.test()
async def test_line_rate(dut: Any) -> None:
    """Back-to-back packets for one slot: one beat per clock from 7 beats up, exact sums."""
    tb, rng = await TB.start(dut, SEED + 30)
    hdr_beats = 64 // tb.bytes
    for p in (16, 32, 48, 96, 112):
        if p > tb.max_elems:
            continue
        for dtype_int in (False, True):
            cfg = await tb.configure_random(rng, leaf=False, mode_async=False,
                                            dtype_int=dtype_int, elems=p, slots=2, members=3)
            await tb.settle()
            wl = Workload(rng, cfg, noise=0.0)
            frames = []
            for r in range(4):
                for w in range(cfg.members):
                    frames.append(wl.gradient(w, 0, r))
                frames.append(wl.gradient(0, 0, r))  # duplicate after DONE: resend
            # every packet triggers an output of its own size: resends back to back
            frames += [wl.gradient(int(w) % cfg.members, 0, 3) for w in range(12)]
            # another tensor length right behind an open round's contributions (the
            # copy's total, aux, error and culprit forwarded to the next packet):
            # an ERROR RESULT, then its resends and MISMATCH resends
            for r in (4, 5):
                frames += [wl.gradient(0, 0, r), wl.gradient(1, 0, r),
                           wl.gradient(2, 0, r, total=wl.bad_total(0, r)),
                           wl.gradient(0, 0, r), wl.gradient(2, 0, r),
                           wl.gradient(1, 0, r, total=wl.bad_total(0, r))]
            # rounds reopened over error copies, completed back to back
            frames += [wl.gradient(w, 0, r) for r in (6, 7) for w in range(cfg.members)]
            # another step id right behind an open round's contributions (the copy's
            # step forwarded to the next packet): an ERROR RESULT (aux = total), its
            # resends; a DONE copy answers another step with ERROR forced on, then
            # its own step with its real result
            for r in (8, 9):
                frames += [wl.gradient(0, 0, r), wl.gradient(1, 0, r),
                           wl.gradient(2, 0, r, step=wl.bad_step(0, r)),
                           wl.gradient(0, 0, r), wl.gradient(2, 0, r, step=wl.bad_step(0, r))]
            for r in (10, 11):
                frames += [wl.gradient(w, 0, r) for w in range(cfg.members)]
                frames += [wl.gradient(1, 0, r, step=wl.bad_step(0, r)), wl.gradient(2, 0, r),
                           wl.gradient(0, 0, r, step=wl.bad_step(0, r))]
            mon = StallMonitor(dut)
            for fr in frames:
                await tb.send(*fr)
            await tb.check()
            await mon.stop()
            stalls = mon.stalls
            plen = hdr_beats + p * 4 // tb.bytes
            tb.log.info("P=%d dtype_int=%s beats/packet=%d: %d beats, %d stall clocks",
                        p, dtype_int, plen, mon.beats, stalls)
            if plen >= 7:
                assert stalls == 0, f"input stalled {stalls} clocks at {plen} beats per packet"
            else:
                assert stalls <= len(frames) * (7 - plen)


@cocotb.test()
async def test_reset_mid_frame(dut: Any) -> None:
    """Reset while a frame streams in and a result streams out; then a clean run."""
    tb, rng = await TB.start(dut, SEED + 40)
    assert tb.source is not None and tb.sink is not None
    for cut in (3, 9):
        cfg = await tb.configure_random(rng, leaf=False, mode_async=False, members=2,
                                        elems=min(tb.max_elems, 128))
        wl = Workload(rng, cfg, noise=0.0)
        tb.set_stress(False, cycle_pause([0, 1]))
        # the second contribution completes round 0: its result is on its way out
        # while the next frame is cut by the reset
        for fr in (wl.gradient(0, 0, 0), wl.gradient(1, 0, 0), wl.gradient(0, 0, 1)):
            await tb.send_frame(*fr)
        n_beats = 2 * (len(wl.gradient(0, 0, 0)[0]) // tb.bytes) + cut
        seen = 0
        for _ in range(20 * n_beats):
            await RisingEdge(dut.clk)
            if int(dut.s_axis_tvalid.value) and int(dut.s_axis_tready.value):
                seen += 1
                if seen == n_beats:
                    break
        assert seen == n_beats, f"only {seen} of {n_beats} input beats"
        dut.rst.value = 1
        await tb.cycles(3)
        dut.rst.value = 0
        tb.source.clear()
        await tb.cycles(5)
        tb.sink.clear()
        tb.set_stress(False, False)
        await tb.new_model()
        # registers are back to their reset values: configure again, run clean
        await tb.configure(cfg)

        await tb.run(Workload(rng, cfg, noise=0.3), 60)
        await tb.check()


def engine_registers() -> list[str]:
    """The registers grad_agg holds: not the replay engine's, not the server's, not the
    L2 table's (held by the switch top, nrl_axil_split)."""
    return [n for n, r in regmap.REGISTERS.items()
            if not n.startswith(("RPL_", "L2_")) and not r.server]


@cocotb.test()
async def test_registers(dut: Any) -> None:
    """Every register reads back what the model holds, after random legal writes."""
    tb, rng = await TB.start(dut, SEED + 50)
    names = engine_registers()
    for n in names:
        assert await tb.read(n) == tb.model.read(n), n
    await tb.configure_random(rng)
    for n in names:
        assert await tb.read(n) == tb.model.read(n), n
    await tb.check()


@cocotb.test()
async def test_mismatch_and_errors(dut: Any) -> None:
    """Tensor length mismatches on open, up and done rounds; ERROR RESULTs sent, re-sent, relayed.

    Every kind must occur (counted from the model's verdicts and output
    frames), so the frame-by-frame comparison covers each of them."""
    tb, rng = await TB.start(dut, SEED + 80)
    phases = [{"leaf": False, "mode_async": False}, {"leaf": True, "mode_async": False},
              {"leaf": False, "mode_async": True}, {"leaf": True, "mode_async": True}]
    for ph in phases:
        start = int(rng.choice([0, 2**32 - 5]))
        cfg = await tb.configure_random(rng, members=int(rng.choice([2, 3, 4])),
                                        slots=int(rng.integers(1, 4)), start=start, **ph)
        wl = Workload(rng, cfg, noise=0.3, mismatch=0.08, start_round=start)
        wl.parent_error = 0.3
        await tb.run(wl, 250)
        await tb.check()
        if cfg.leaf:
            # a leaf waiting for its parent (UP) gets another length: error copy
            s, r = 0, wl.cur[0] + 8
            for w in wl.contrib:
                await tb.send(*wl.gradient(w, s, r, lag=0))
            await tb.send(*wl.gradient(wl.contrib[0], s, r, lag=0, total=wl.bad_total(s, r)))
            await tb.check()
    tb.log.info("exercised: %s", dict(tb.tally))
    for tag in ("mismatch_error", "mismatch_up", "mismatch_resend", "error_resend",
                "error_relay", "order", "total_hi", "up", "result"):
        assert tb.tally[tag] > 0, f"the traffic never exercised {tag}: {dict(tb.tally)}"
    assert tb.model.read("CNT_DROP_MISMATCH") > 0


@cocotb.test()
async def test_epoch(dut: Any) -> None:
    """AGG_EPOCH reads back what was written and leaves every slot copy as it was."""
    tb, rng = await TB.start(dut, SEED + 90)
    assert await tb.read("AGG_EPOCH") == tb.model.read("AGG_EPOCH") == 0
    for leaf in (False, True):
        cfg = await tb.configure_random(rng, leaf=leaf, mode_async=False, members=3,
                                        slots=min(4, tb.max_slots))
        wl = Workload(rng, cfg, noise=0.0)
        # two of three contributions in every slot; slot 0 complete (DONE or UP)
        for s in range(cfg.slots):
            for w in (0, 1):
                await tb.send(*wl.gradient(w, s, 0))
        await tb.send(*wl.gradient(2, 0, 0))
        await tb.settle()
        for v in (0x01000000, 0xFF000000, int(rng.integers(0, 256)) << 24, 0x7F000000):
            await tb.write("AGG_EPOCH", v)
            assert await tb.read("AGG_EPOCH") == tb.model.read("AGG_EPOCH") == v
        # byte writes merge into it (bits 31:24; a byte in 23:0 is refused, test_register_edges)
        assert await tb.write_resp(regmap.AGG_EPOCH + 3, b"\x5a") == AxiResp.OKAY
        tb.model.write("AGG_EPOCH", 0x5A000000)
        assert await tb.read("AGG_EPOCH") == tb.model.read("AGG_EPOCH")
        # the rounds complete with three contributions (an invalidated copy would
        # restart at one), and slot 0 answers a duplicate from its DONE or UP copy
        outs = []
        for s in range(1, cfg.slots):
            outs += await tb.send(*wl.gradient(2, s, 0))
        outs += await tb.send(*wl.gradient(0, 0, 0))
        await tb.check()
        assert len(outs) == cfg.slots
        for e in outs:
            if e.frame[43] == proto.Opcode.RESULT:
                assert _be32(e.frame, 56) & 0xF == 3


STEP_TAGS = ("step_error", "step_up", "step_resend", "step_error_resend", "mismatch_error",
             "mismatch_resend", "ahead", "up_step")
"""What ``test_steps_and_ahead`` must exercise (tags of :func:`classify`)."""


async def steps_directed(tb: TB, wl: Workload, base: int) -> None:
    """Step mismatches in every copy state, on slots 0 and 1, rounds from ``base`` on.

    Sync mode: a step mismatch on an OPEN copy (error copy, aux = total), then
    on that error copy (re-sent as it is) and a late contribution of the
    right step; another length and another step at once (length first:
    aux = the refused length); a complete round (root: DONE, leaf: UP, then
    the parent's RESULT makes it DONE) answering another step with ERROR
    forced on and the right step with its real result; a leaf's UP copy
    becoming an error copy. Async mode: the same frames, where aux is a
    version and no step is checked."""
    cfg = wl.cfg
    w0, w1 = wl.contrib[0], wl.contrib[-1]
    r = base
    # OPEN: w0 opens with the round's step, w1 another step
    await tb.send(*wl.gradient(w0, 0, r, lag=0))
    await tb.send(*wl.gradient(w1, 0, r, lag=0, step=wl.bad_step(0, r)))
    await tb.send(*wl.gradient(w1, 0, r, lag=0, step=wl.bad_step(0, r)))  # error copy: resend
    await tb.send(*wl.gradient(w1, 0, r, lag=0))                          # right step: resend
    # another length and another step: the length decides (aux = refused length)
    r += 1
    await tb.send(*wl.gradient(w0, 0, r, lag=0))
    await tb.send(*wl.gradient(w1, 0, r, lag=0, total=wl.bad_total(0, r),
                               step=wl.bad_step(0, r)))
    # a complete round: DONE (root) or UP (leaf)
    r2 = base
    for w in wl.contrib:
        await tb.send(*wl.gradient(w, 1, r2, lag=0))
    if cfg.leaf:
        # UP: another step makes an error copy (ERROR RESULT to the members)
        await tb.send(*wl.gradient(w0, 1, r2, lag=0, step=wl.bad_step(1, r2)))
        # the next round goes UP, then DONE with the parent's RESULT
        r2 += 1
        for w in wl.contrib:
            await tb.send(*wl.gradient(w, 1, r2, lag=0))
        flags = int(proto.Flags.FROM_SWITCH) | int(cfg.dtype_int)
        await tb.send(*wl.frame(op=proto.Opcode.RESULT, worker=0, slot=1, seq=r2,
                                aux=proto.result_aux(wl.contrib), flags=flags))
    # DONE: another step gets the result with ERROR forced on (worker = sender, aux = total);
    # the copy is unchanged: the right step gets the real result, again another step the
    # forced ERROR
    await tb.send(*wl.gradient(w1, 1, r2, lag=0, step=wl.bad_step(1, r2)))
    await tb.send(*wl.gradient(w0, 1, r2, lag=0))
    await tb.send(*wl.gradient(w0, 1, r2, lag=0, step=wl.bad_step(1, r2)))
    # another length on the DONE copy: resent as it is
    await tb.send(*wl.gradient(w0, 1, r2, lag=0, total=wl.bad_total(1, r2)))


async def ahead_directed(tb: TB, wl: Workload, rng: np.random.Generator) -> None:
    """The far-ahead bound at its edges, on slot 2 (and a slot beyond AGG_SLOTS).

    Rounds 2**25 - 1 ahead of AGG_EPOCH are taken (a copy opens), 2**25 and
    2**31 - 1 ahead dropped as AHEAD, 2**31 ahead and one behind processed;
    BAD_SLOT before AHEAD; AHEAD before STALE (async lag beyond the bound);
    a leaf's RESULT is never AHEAD. Then AGG_EPOCH moves one block on
    between packets: the round 2**25 ahead of the old epoch is taken."""
    cfg = wl.cfg
    e = cfg.epoch
    w = wl.contrib[0]
    s = 2 % cfg.slots
    for d in (AGG_AHEAD_ROUNDS - 1, AGG_AHEAD_ROUNDS, AGG_AHEAD_ROUNDS + 1, 2**31 - 1,
              2**31, M32, int(rng.integers(AGG_AHEAD_ROUNDS, 2**31))):
        await tb.send(*wl.gradient(w, s, (e + d) & M32, lag=0))
    # BAD_SLOT is checked first
    await tb.send(*wl.frame(worker=w, slot=cfg.slots, seq=(e + AGG_AHEAD_ROUNDS) & M32, aux=0))
    # AHEAD before STALE: a contribution far ahead and (async) far too stale
    r = (e + AGG_AHEAD_ROUNDS + 2) & M32
    await tb.send(*wl.gradient(w, s, r, lag=cfg.staleness + 1 if cfg.mode_async else 0))
    if cfg.leaf:
        flags = int(proto.Flags.FROM_SWITCH) | int(cfg.dtype_int)
        await tb.send(*wl.frame(op=proto.Opcode.RESULT, worker=0, slot=s, aux=1, flags=flags,
                                seq=(e + AGG_AHEAD_ROUNDS + 4) & M32))
    # the epoch moves on one block: 2**25 ahead of the old one is 2**24 ahead now (the
    # frames before the write reach the engine first: the model takes them in that order)
    cfg.epoch = (e + EPOCH_ROUNDS) & M32
    await tb.settle()
    await tb.write("AGG_EPOCH", cfg.epoch)
    await tb.send(*wl.gradient(w, s, (e + AGG_AHEAD_ROUNDS + 6) & M32, lag=0))
    await tb.send(*wl.gradient(w, s, (e + EPOCH_ROUNDS + AGG_AHEAD_ROUNDS) & M32, lag=0))
    cfg.epoch = e
    await tb.settle()
    await tb.write("AGG_EPOCH", e)


STEP_JOBS: list[dict[str, Any]] = [
    {"leaf": False, "mode_async": False, "dtype_int": False},
    {"leaf": True, "mode_async": False, "dtype_int": True},
    {"leaf": False, "mode_async": True, "dtype_int": True},
    {"leaf": True, "mode_async": True, "dtype_int": False},
]
"""The jobs of ``test_steps_and_ahead`` (the same under every stress combination)."""


@cocotb.test()
@cocotb.parametrize(idle=STRESS, backpressure=STRESS)
async def test_steps_and_ahead(dut: Any, idle: bool, backpressure: bool) -> None:
    """Step mismatches in every copy state and the far-ahead bound, then noisy traffic with both.

    Each job: the directed step cases, the far-ahead edges (an AGG_EPOCH
    at the rounds' block, or a block before it: the bound is (seq - AGG_EPOCH)
    mod 2**32), then a workload with step and
    length mismatches and far-ahead noise. Every output frame and counter
    against the model; every kind of STEP_TAGS must occur."""
    tb, rng = await TB.start(dut, SEED + 140 + 2 * int(idle) + int(backpressure))
    tb.set_stress(idle, backpressure)
    for k, job in enumerate(STEP_JOBS):
        start = int(rng.choice([0, 2**31 - 3, 2**32 - 3]))
        cfg = tb.random_config(rng, members=int(rng.choice([2, 3])),
                               slots=int(rng.integers(3, 6)), start=start, **job)
        # async: rounds complete with every member, as in sync
        cfg.threshold = cfg.members
        for m in cfg.table[:cfg.members]:
            m.role |= 1
        if k % 2:  # a block before the rounds' own (a write that is no multiple of 2**24 is
            # refused, docs/registers.md): the bound counts from the register, not the block
            cfg.epoch = (start - int(rng.integers(0, AGG_AHEAD_ROUNDS // 2))) & M32 \
                & ~(EPOCH_ROUNDS - 1)
        await tb.configure(cfg)
        wl = Workload(rng, cfg, noise=0.0, start_round=start)
        await steps_directed(tb, wl, start)
        await ahead_directed(tb, wl, rng)
        await tb.check()
        wl = Workload(rng, cfg, noise=0.25, mismatch=0.1, start_round=(start + 16) & M32)
        await tb.run(wl, 60)
        await tb.check()
    tb.log.info("exercised: %s", dict(tb.tally))
    for tag in STEP_TAGS:
        assert tb.tally[tag] > 0, f"the traffic never exercised {tag}: {dict(tb.tally)}"


@cocotb.test()
async def test_port_refusal(dut: Any) -> None:
    """MEMBER_PORT and AGG_UPLINK_PORT refuse values that are not 0 or one-hot: SLVERR, value kept."""
    tb, rng = await TB.start(dut, SEED + 100)
    cfg = await tb.configure_random(rng, leaf=True, mode_async=False, members=3, slots=2)
    wl = Workload(rng, cfg, noise=0.0)
    for s in range(cfg.slots):
        await tb.send(*wl.gradient(0, s, 0))
    await tb.settle()
    names = [f"MEMBER_PORT_{i}" for i in range(8)] + ["AGG_UPLINK_PORT"]
    bad_values = [0x03, 0x81, 0xFF, 0x100, 0x101, 0x8000, 0x80000000, 0x10001]
    refused = 0
    for name in names:
        addr = regmap.REGISTERS[name].addr
        old = await tb.read(name)
        assert old == tb.model.read(name), name
        for bad in bad_values + [int(x) for x in rng.integers(0, 1 << 32, 3)]:
            if bad in (0, *(1 << i for i in range(8))):
                continue
            model_refuses(tb.model, name, bad)
            resp = await tb.write_resp(addr, bad.to_bytes(4, "little"))
            assert resp == AxiResp.SLVERR, f"{name} = {bad:#x} answered {resp!r}"
            assert await tb.read(name) == old, f"{name} changed by a refused write of {bad:#x}"
            refused += 1
        # byte strobes: the byte lands on the old value; lane 0 with two bits, or
        # any nonzero byte in lanes 1-3, makes a value the register cannot hold
        for lane, byte in ((0, 0x11), (0, 0xC0), (1, 0x01), (2, 0x80), (3, 0x04)):
            merged = (old & ~(0xFF << 8 * lane)) | byte << 8 * lane
            model_refuses(tb.model, name, merged)
            assert await tb.write_resp(addr + lane, bytes([byte])) == AxiResp.SLVERR
            assert await tb.read(name) == old
            refused += 1
    assert refused >= 9 * 13
    # nothing was invalidated and no member moved: the open rounds complete
    for s in range(cfg.slots):
        for w in (1, 2):
            await tb.send(*wl.gradient(w, s, 0))
    await tb.check()
    # legal values are taken (OKAY): 0 and every one-hot byte, also by byte strobe
    for name in ("MEMBER_PORT_7", "AGG_UPLINK_PORT"):
        addr = regmap.REGISTERS[name].addr
        for v in (0, *(1 << i for i in range(8))):
            await tb.write(name, v)
            assert await tb.read(name) == tb.model.read(name) == v
        assert await tb.write_resp(addr, b"\x20") == AxiResp.OKAY
        tb.model.write(name, 0x20)
        assert await tb.read(name) == tb.model.read(name) == 0x20
    await tb.configure(cfg)
    await tb.run(Workload(rng, cfg, noise=0.2), 60)
    await tb.check()


@cocotb.test()
async def test_short_frames(dut: Any) -> None:
    """Every frame length 42..63 and opcode: counted exactly like the model (RX, BAD_LENGTH)."""
    tb, rng = await TB.start(dut, SEED + 110)
    cfg = await tb.configure_random(rng, leaf=True, mode_async=False, members=2, slots=2)
    wl = Workload(rng, cfg, noise=0.0)
    n_short = 0
    for n in range(42, 64):
        for op in (proto.Opcode.GRADIENT, proto.Opcode.RESULT, 0, 9):
            if op == proto.Opcode.RESULT:
                fr, port = wl.frame(op=op, worker=0, slot=0, seq=0, aux=1,
                                    flags=int(proto.Flags.FROM_SWITCH) | int(cfg.dtype_int))
            else:
                fr, port = wl.gradient(int(rng.integers(0, 2)), 0, 0)
            f = bytearray(fr[:n])
            f[43:44] = bytes([op])[:len(f) - 43]
            if rng.random() < 0.5:  # lengths consistent with the frame: only n < 64 fails
                struct.pack_into("!H", f, 16, n - 14)
                struct.pack_into("!H", f, 38, n - 34)
            await tb.send(bytes(f), port)
            n_short += 1
        if n % 5 == 0:
            await tb.send(*wl.gradient(n // 5 % 2, 1, n // 10))
    await tb.check()
    cnt = tb.model.counters()
    assert cnt["CNT_DROP_BAD_LENGTH"] == n_short
    assert cnt["CNT_RX_GRADIENT"] > 0 and cnt["CNT_RX_RESULT"] > 0


@cocotb.test()
async def test_register_edges(dut: Any) -> None:
    """Register values the model refuses answer SLVERR and change nothing; reads of
    addresses with no register.

    Every value the model refuses (wider than the register, AGG_MEMBERS below
    AGG_THRESHOLD or above 8, AGG_THRESHOLD 0 or above AGG_MEMBERS, AGG_SLOTS /
    AGG_ELEMS out of range, AGG_EPOCH not a multiple of 2^24), written whole or
    by byte strobes, answers SLVERR; the register keeps its value and no slot
    copy is invalidated (the open rounds then complete as the model's). Legal
    edge values answer OKAY. Reads of addresses the register map does not
    define complete and change nothing."""
    tb, rng = await TB.start(dut, SEED + 120)
    cfg = await tb.configure_random(rng, leaf=False, mode_async=True, members=4, slots=2,
                                    elems=16)
    await tb.write("AGG_THRESHOLD", 3)
    cfg.threshold = 3
    wl = Workload(rng, cfg, noise=0.0)
    for s in range(cfg.slots):  # one contribution each: every copy OPEN
        await tb.send(*wl.gradient(0, s, 0))
    await tb.settle()
    bad = {"AGG_MEMBERS": [9, 15, 16, 0x100, 2, 0],
           "AGG_THRESHOLD": [0, 5, 8, 9, 0x13, 0x100],
           "AGG_SLOTS": [0, tb.max_slots + 1, 0x7F, 0x80],
           "AGG_ELEMS": [0, 8, 24, tb.max_elems + 16, 0x3FF0, 0x10000],
           "AGG_DTYPE": [2, 0x101], "AGG_MODE": [3], "AGG_ROLE": [0x80000000],
           "AGG_LEAF_ID": [8, 0xF], "AGG_PARENT_UDP": [0x10000, 0x12345678],
           "AGG_EPOCH": [1, 0x00800000, 0x12345678, 0xFFFFFFFF, 0x00FFFFFF],
           # the control block and the member table (nrl_common_regs): widths
           "JOB_ID": [0x100], "UDP_PORT": [0x10000], "SWITCH_MAC_HI": [0x10000],
           "CTRL": [0x4, 0x80000007], "MEMBER_UDP_3": [0x10000], "MEMBER_ROLE_3": [8]}
    refused = 0
    for name, values in bad.items():
        addr = regmap.REGISTERS[name].addr
        old = await tb.read(name)
        assert old == tb.model.read(name), name
        for v in values:
            model_refuses(tb.model, name, v)
            resp = await tb.write_resp(addr, v)
            assert resp == AxiResp.SLVERR, f"{name} = {v:#x} answered {resp!r}"
            assert await tb.read(name) == old, f"{name} changed by a refused write of {v:#x}"
            refused += 1
    # byte strobes: the byte lands on the old value and the merged value is judged
    for name, lane, byte in (("AGG_EPOCH", 0, 0x01), ("AGG_EPOCH", 2, 0x80),
                             ("AGG_THRESHOLD", 0, 0x00), ("AGG_THRESHOLD", 1, 0x01),
                             ("AGG_MEMBERS", 0, 0x09), ("AGG_SLOTS", 3, 0x01)):
        old = await tb.read(name)
        merged = (old & ~(0xFF << 8 * lane)) | byte << 8 * lane
        model_refuses(tb.model, name, merged)
        addr = regmap.REGISTERS[name].addr
        assert await tb.write_resp(addr + lane, bytes([byte])) == AxiResp.SLVERR, name
        assert await tb.read(name) == old, name
        refused += 1
    # nothing was invalidated: the open rounds complete at the threshold
    for s in range(cfg.slots):
        for w in (1, 2):
            await tb.send(*wl.gradient(w, s, 0))
    await tb.check()
    # legal edges are taken: H = N, H = 1, N = H, AGG_EPOCH's top byte alone
    for name, value in (("AGG_THRESHOLD", 4), ("AGG_THRESHOLD", 1), ("AGG_MEMBERS", 1),
                        ("AGG_MEMBERS", 8), ("AGG_THRESHOLD", 8), ("AGG_MEMBERS", 8),
                        ("AGG_EPOCH", 0xFF000000), ("AGG_SLOTS", tb.max_slots),
                        ("AGG_ELEMS", tb.max_elems)):
        await tb.write(name, value)
        assert await tb.read(name) == tb.model.read(name) == value, name
    assert await tb.write_resp(regmap.REGISTERS["AGG_EPOCH"].addr + 3, b"\x01") == AxiResp.OKAY
    tb.model.write("AGG_EPOCH", 0x01000000)
    assert await tb.read("AGG_EPOCH") == tb.model.read("AGG_EPOCH")
    tb.log.info("%d refused writes", refused)
    cfg = await tb.configure_random(rng, leaf=False, mode_async=False, members=2, slots=2,
                                    elems=16)
    for addr in (0x080, 0x0FC, 0x180, 0x1C0, 0x280, 0x2C0, 0x300, 0x380, 0x4F0, 0xFFC):
        if addr in regmap.BY_ADDR:
            continue
        try:
            tb.model.read(addr)
        except ValueError:
            pass
        else:
            raise AssertionError(f"the model has a register at {addr:#x}")
        assert tb.axil is not None
        await with_timeout(tb.axil.read_dword(addr), 10, "us")
    for n in engine_registers():
        assert await tb.read(n) == tb.model.read(n), n
    await tb.run(Workload(rng, cfg, noise=0.2), 30)
    await tb.check()


@cocotb.test(skip=cocotb.SIM_NAME.lower().startswith("icarus"))
async def test_counter_carry(dut: Any) -> None:
    """Counters carry from their low 16 bits into the high half (2**16 + 5 drops each).

    44-byte frames are counted in CNT_RX_GRADIENT and dropped as BAD_LENGTH;
    the lean driver streams them at line rate. Verilator only: on Icarus
    the ~130k clocks take minutes."""
    tb, rng = await TB.start(dut, SEED + 130, streams=False)
    cfg = await tb.configure_random(rng, members=2)
    wl = Workload(rng, cfg, noise=0.0)
    frame, port = wl.gradient(0, 0, 0)
    short = (frame[:44], port)
    frames = [short] * ((1 << 16) + 5)
    assert not any(tb.model.process(*fr) for fr in frames)
    res = await lean_run(tb, frames, 0)
    assert res.outputs == []
    await tb.check_counters()
    assert tb.model.read("CNT_DROP_BAD_LENGTH") > 0xFFFF


# ---------------------------------------------------------------------------
# the lean driver of sim.common.tb: whole beats written each clock (soak and bench)


@dataclass
class LeanRun:
    """What a lean run saw: output frames and handshake clocks."""

    outputs: list[tuple[bytes, int]] = field(default_factory=list)
    in_clocks: list[int] = field(default_factory=list)
    out_first_clocks: list[int] = field(default_factory=list)
    clocks: int = 0
    gaps: int = 0
    """Clocks with an output packet started, the sink ready and no valid beat."""


async def lean_run(tb: TB, frames: list[tuple[bytes, int]], n_out: int, *,
                   record: bool = False) -> LeanRun:
    """``frames`` through the testbench's lean driver; what it saw during this run."""
    lean = tb.lean
    assert lean is not None
    lean.record = record
    lean.in_clocks.clear()
    lean.out_first_clocks.clear()
    gaps, clock = lean.gaps, lean.clock
    outputs = await lean.run(frames, n_out)
    return LeanRun(outputs, list(lean.in_clocks), list(lean.out_first_clocks),
                   lean.clock - clock, lean.gaps - gaps)


def lean_compare(tb: TB, got: list[tuple[bytes, int]], want: list[Egress]) -> None:
    assert len(got) == len(want), f"{len(got)} outputs, model expects {len(want)}"
    for i, ((data, user), exp) in enumerate(zip(got, want, strict=True)):
        tb.compare(i, data, user, exp)


@cocotb.test(skip=os.environ.get("GRAD_AGG_SOAK") != "1")
async def test_soak(dut: Any) -> None:
    """>= 100k packets over many jobs, with idle insertion and backpressure."""
    tb, rng = await TB.start(dut, SEED + 60, streams=False)
    assert tb.lean is not None
    tb.lean.rand = rng.random
    total = int(os.environ.get("GRAD_AGG_SOAK_PACKETS", "100000"))
    chunk = 4000
    sent = 0
    job = 0
    while sent < total:
        start = int(rng.choice([0, 2**32 - 20]))
        cfg = await tb.configure_random(
            rng, elems=int(rng.choice([16, 16, 32, 48, 64, 96, 160, 352])),
            slots=int(rng.choice([1, 2, 4, 8, 12, tb.max_slots])), start=start)
        wl = Workload(rng, cfg, noise=float(rng.choice([0.05, 0.2, 0.4])),
                      start_round=start, mismatch=float(rng.choice([0.0, 0.02])))
        frames = []
        want: list[Egress] = []
        for _ in range(min(chunk, total - sent)):
            fr = wl.next()
            outs = tb.model.process(*fr)
            wl.observe(outs)
            want += outs
            frames.append(fr)
        idle, bp = (float(rng.choice([0.0, 0.0, 0.1, 0.3])), float(rng.choice([0.0, 0.0, 0.2, 0.5])))
        tb.set_stress(idle, bp)
        res = await lean_run(tb, frames, len(want))
        lean_compare(tb, res.outputs, want)
        assert res.gaps == 0, f"{res.gaps} clocks of gap inside output packets"
        await tb.check_counters()
        sent += len(frames)
        job += 1
        tb.log.info("soak job %d: %d packets, %d outputs, %d clocks (idle %.1f, bp %.1f), total %d",
                    job, len(frames), len(want), res.clocks, idle, bp, sent)


@cocotb.test(skip="GRAD_AGG_BENCH_JSON" not in os.environ)
async def test_bench(dut: Any) -> None:
    """Saturation throughput and completion latency for the bench script."""
    tb, rng = await TB.start(dut, SEED + 70, streams=False)
    hdr_beats = 64 // tb.bytes
    results: dict[str, Any] = {"data_width": tb.width, "per_elems": {}}
    sizes = [p for p in (16, 32, 48, 64, 96, 128, 256, 352) if p <= tb.max_elems]
    default_p = min(256, tb.max_elems)
    for p in sizes:
        cfg = await tb.configure_random(rng, leaf=False, mode_async=False, dtype_int=False,
                                        elems=p, slots=16, members=4)
        wl = Workload(rng, cfg, noise=0.0)
        rounds = max(4, 2000 // (hdr_beats + p * 4 // tb.bytes) // cfg.members)
        frames = [wl.gradient(w, 0, r) for r in range(rounds) for w in range(cfg.members)]
        want = [e for fr in frames for e in tb.model.process(*fr)]
        res = await lean_run(tb, frames, len(want), record=True)
        lean_compare(tb, res.outputs, want)
        assert res.gaps == 0, f"{res.gaps} clocks of gap inside output packets"
        span = res.in_clocks[-1] - res.in_clocks[0] + 1
        bpc = len(res.in_clocks) / span
        # last beat of every completing packet (every members-th) to its result's first beat
        per_pkt = hdr_beats + p * 4 // tb.bytes
        last_beats = [res.in_clocks[(k + 1) * per_pkt - 1]
                      for k in range(len(frames)) if (k + 1) % cfg.members == 0]
        lat = [o - i for i, o in zip(last_beats, res.out_first_clocks, strict=True)]
        results["per_elems"][p] = {"beats_per_packet": per_pkt, "beats_per_clock": bpc,
                                   "latency_min": min(lat), "latency_max": max(lat),
                                   "packets": len(frames)}
        tb.log.info("P=%d: %d beats/packet, %.3f beats/clock, latency %d..%d", p, per_pkt, bpc,
                    min(lat), max(lat))
    results["beats_per_clock"] = results["per_elems"][default_p]["beats_per_clock"]
    results["latency_clocks"] = results["per_elems"][default_p]["latency_max"]
    results["default_elems"] = default_p
    with open(os.environ["GRAD_AGG_BENCH_JSON"], "w") as f:
        json.dump(results, f, indent=1)

