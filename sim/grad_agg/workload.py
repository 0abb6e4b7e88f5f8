"""Job configurations and traffic of the grad_agg testbench (``sim/grad_agg/test_grad_agg.py``).

:class:`AggConfig` is one job's register writes (members, mode, dtype, slots,
elements, staleness, epoch); :func:`random_config` draws one within the DUT's
``AGG_MAX_SLOTS`` / ``AGG_MAX_ELEMS``; :class:`Workload` generates the frames a
job's members send (protocol-following, with noise: duplicates, stragglers,
malformed frames, mismatches, rounds far ahead). Expected outputs come from
the golden model (:mod:`grad_agg_tb`), never from here.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from hostdrv.switch.reference import Egress
from hostdrv.wire import protocol as proto
from hostdrv.wire.consts import AGG_AHEAD_ROUNDS, EPOCH_ROUNDS

M32 = 0xFFFFFFFF
MAC_PORTS = (0x01, 0x04, 0x10, 0x40)
"""SUME 10G MAC ports (one-hot); odd bits are the DMA ports."""
FP_SPECIALS = np.array(
    [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001,
     0x00000001, 0x807FFFFF, 0x7F7FFFFF, 0xFF7FFFFF, 0x00800000, 0x3F800000, 0xBF800000],
    dtype="<u4")


def be16(b: bytes, off: int) -> int:
    """The big-endian 16-bit field at ``off``."""
    return (b[off] << 8) | b[off + 1]


def be32(b: bytes, off: int) -> int:
    """The big-endian 32-bit field at ``off``."""
    return int.from_bytes(b[off:off + 4], "big")


def describe(frame: bytes) -> str:
    """Header fields of a frame, for mismatch reports."""
    if len(frame) < 64:
        return f"len={len(frame)} {frame.hex()}"
    ver, op, flags, job, worker, slot, seq, count, aux, res = proto.HEADER.unpack_from(frame, 42)
    return (f"len={len(frame)} dst={frame[0:6].hex()} src={frame[6:12].hex()} "
            f"iplen={be16(frame, 16)} csum={be16(frame, 24):#06x} ipsrc={be32(frame, 26):#010x} "
            f"ipdst={be32(frame, 30):#010x} udp={be16(frame, 34)}->{be16(frame, 36)} "
            f"ulen={be16(frame, 38)} v={ver} op={op} fl={flags:#x} job={job} w={worker} "
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
    packet_elems: int
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
               ("AGG_SLOTS", self.slots), ("AGG_ELEMS", self.packet_elems),
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
                  dtype_int: bool | None = None, packet_elems: int | None = None,
                  slots: int | None = None, members: int | None = None,
                  start: int = 0) -> AggConfig:
    """A random but legal job configuration whose AGG_EPOCH lets rounds from ``start`` on in
    (:func:`epoch_for`)."""
    n = members if members is not None else int(rng.choice([1, 2, 3, 4, 4, 5, 8]))
    mode = bool(rng.random() < 0.4) if mode_async is None else mode_async
    thr = int(rng.integers(1, n + 1))  # 1 .. N (ignored in sync mode)
    s = slots if slots is not None else int(rng.integers(1, min(12, max_slots) + 1))
    p = packet_elems if packet_elems is not None else int(rng.choice([16, 16, 32, 32, 48, 64]))
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
        members=n, threshold=thr, slots=s, packet_elems=p,
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
        p = cfg.packet_elems if count is None else count
        if payload is None:
            payload = rand_payload(rng, cfg.packet_elems, cfg.dtype_int)
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
            key = (be16(f, 48), be32(f, 50))
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
            nbytes = max(0, 4 * cfg.packet_elems + int(rng.choice([-64, -4, -1, 3, 64])))
            kw["payload"] = rand_payload(rng, cfg.packet_elems + 16, cfg.dtype_int)[:nbytes]
        if "headeronly" in kinds:
            kw["payload"] = b""
        if "count" in kinds:
            p = cfg.packet_elems
            c = int(rng.choice([p + 16, max(p - 16, 0), int(rng.integers(0, 1 << 16))]))
            if c == p:
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
