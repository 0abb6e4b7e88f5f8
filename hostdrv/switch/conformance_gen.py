"""The builder of one conformance vector (:class:`VectorBuilder`): the member table,
frames of every kind, a lossy network, and the mutations that make every drop class
from legal frames. The suite (:mod:`hostdrv.switch.conformance_suite`) is built with it.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from hostdrv.switch.conformance_run import M32, MAX_STREAM_FRAME, Op, Vector
from hostdrv.wire import consts as C
from hostdrv.wire import regmap
from hostdrv.wire.protocol import Flags, Frame, Message, Opcode, build_frame

SWITCH_IP = regmap.REGISTERS["SWITCH_IP"].reset
UDP_PORT = regmap.REGISTERS["UDP_PORT"].reset
MEMBER_PORT = [1 << i for i in range(C.MAX_MEMBERS)]  # a soft switch's virtual ports
UPLINK = 1 << 7


class VectorBuilder:
    """Builds one vector: the member table, frames of every kind, a lossy network."""

    def __init__(self, name: str, seed: int, params: dict[str, int]) -> None:
        self.v = Vector(f"{name}_s{seed}", dict(params))
        self.rng = random.Random(seed)
        self.np = np.random.default_rng(seed)
        self.p = params
        self.packet_elems = 0
        self.dtype = 0
        self.slots = 1
        self.members = 0
        self.job = 0
        self.mode = 0
        self.staleness = 0
        self._threshold = 0
        self._written_threshold = 0  # the last AGG_THRESHOLD written
        self.size = 0  # replay records (what the generator believes)
        self.ip = [0x0A000100 + i for i in range(C.MAX_MEMBERS)]
        self.udp = [0] * C.MAX_MEMBERS
        self.role = [0] * C.MAX_MEMBERS
        self.sent: list[Op] = []  # frames the network may retransmit or deliver late
        self.stations: list[list[Any]] = []  # [MAC, port] of the hosts behind the switch
        self.unstreamable = 0  # frames of 0 or over MAX_STREAM_FRAME bytes so far
        self.page = 0  # the job whose registers write and read reach (section 11)
        self.rb, self.cap = params["record_bytes"], params["capacity"]  # the page's table
        self._tenants: dict[int, dict[str, Any]] = {}

    _TENANT = ("packet_elems", "dtype", "slots", "members", "job", "mode", "staleness",
               "_threshold", "_written_threshold", "size", "ip", "udp", "role", "page", "rb", "cap")

    def tenant(self, page: int) -> None:
        """Act as job ``page`` (section 11) from now on: its registers, member table and
        traffic state (the job left is remembered; a new one starts with hosts of its own:
        10.page.1.i)."""
        self._tenants[self.page] = {k: getattr(self, k) for k in self._TENANT}
        state = self._tenants.get(page)
        if state is None:
            state = {k: getattr(self, k) for k in self._TENANT}
            state.update(page=page, size=0, _written_threshold=0,
                         ip=[0x0A000100 + (page << 16) + i for i in range(C.MAX_MEMBERS)],
                         udp=[0] * C.MAX_MEMBERS, role=[0] * C.MAX_MEMBERS)
        for k, v in state.items():
            setattr(self, k, v)

    def _addr(self, name: str) -> int:
        r = regmap.REGISTERS[name]
        return regmap.job_address(r, self.page if r.job else 0)

    # -- operations ---------------------------------------------------------
    def write(self, name: str, value: int) -> None:
        self.v.ops.append(("write", self._addr(name), value))
        if name == "AGG_THRESHOLD":
            self._written_threshold = value

    def read(self, name: str) -> None:
        self.v.ops.append(("read", self._addr(name)))

    def frame(self, port: int, data: bytes) -> None:
        op = ("frame", port, data)
        self.v.ops.append(op)
        if not 0 < len(data) <= MAX_STREAM_FRAME:
            self.unstreamable += 1
            return  # sent once (the RTL leg leaves such frames out: keep them few)
        self.sent.append(op)
        if len(self.sent) > 400:
            del self.sent[:200]

    # -- configuration -----------------------------------------------------
    def make_leaf(self, leaf_id: int) -> tuple[int, int]:
        """Turn the job into a leaf of a two-level tree (member ``leaf_id`` of its parent,
        uplink port :data:`UPLINK`); returns the parent's (IPv4, UDP port)."""
        parent_ip, parent_udp = 0x0A0001FE, 0x4E60
        for name, value in (("AGG_ROLE", 1), ("AGG_UPLINK_PORT", UPLINK),
                            ("AGG_PARENT_IP", parent_ip), ("AGG_PARENT_UDP", parent_udp),
                            ("AGG_LEAF_ID", leaf_id)):
            self.write(name, value)
        return parent_ip, parent_udp

    def configure(self, *, members: int, slots: int, packet_elems: int, dtype: int = 0,
                  mode: int = 0, threshold: int = 0, staleness: int = 0, job: int = 0,
                  udp_zero: float = 0.3, roles: Iterable[int] | None = None) -> None:
        rng = self.rng
        self.members, self.slots, self.dtype = members, slots, dtype
        self.packet_elems = packet_elems
        self.job, self.mode, self.staleness = job, mode, staleness
        self._threshold = threshold
        roles = list(roles) if roles is not None else [
            C.ROLE_WORKER | rng.choice([0, C.ROLE_ACTOR, C.ROLE_LEARNER,
                                        C.ROLE_ACTOR | C.ROLE_LEARNER])
            if i < members else rng.choice([C.ROLE_ACTOR, C.ROLE_LEARNER,
                                             C.ROLE_ACTOR | C.ROLE_LEARNER, 0])
            for i in range(C.MAX_MEMBERS)]
        for i in range(C.MAX_MEMBERS):
            self.udp[i] = 0 if rng.random() < udp_zero else 40000 + i
            self.role[i] = roles[i]
            self.write(f"MEMBER_PORT_{i}", MEMBER_PORT[i])
            self.write(f"MEMBER_IP_{i}", self.ip[i])
            self.write(f"MEMBER_UDP_{i}", self.udp[i])
            self.write(f"MEMBER_ROLE_{i}", self.role[i])
        # AGG_THRESHOLD is 1 .. AGG_MEMBERS after every write (0: members, ignored in sync
        # mode); lowered first when the members shrink below the threshold written before
        h = threshold or members
        if members < self._written_threshold:
            self.write("AGG_THRESHOLD", h)
        for name, value in (("JOB_ID", job), ("AGG_MEMBERS", members), ("AGG_SLOTS", slots),
                            ("AGG_ELEMS", packet_elems), ("AGG_DTYPE", dtype), ("AGG_MODE", mode),
                            ("AGG_THRESHOLD", h), ("AGG_STALENESS", staleness)):
            self.write(name, value)

    # -- frames ----------------------------------------------------------------
    def build(self, w: int, op: int, *, flags: int = 0, slot: int = 0, seq: int = 0,
              count: int = 0, aux: int = 0, payload: bytes = b"", total: int = 0,
              ip_src: int | None = None, udp_src: int | None = None) -> bytes:
        msg = Message(Opcode.GRADIENT, flags, self.job, w, slot, seq & M32, count, aux & M32,
                      payload, C.VERSION, total & M32)
        msg.opcode = op  # type: ignore[assignment] - malformed opcodes too
        udp = self.udp[w % C.MAX_MEMBERS] if udp_src is None else udp_src
        fr = Frame(msg, eth_src=b"\x02\x00" + self.ip[w % C.MAX_MEMBERS].to_bytes(4, "big"),
                   ip_src=self.ip[w % C.MAX_MEMBERS] if ip_src is None else ip_src,
                   ip_dst=SWITCH_IP, udp_src=udp or self.rng.randrange(1024, 65536),
                   udp_dst=UDP_PORT)
        return build_frame(fr, validate=False)

    def elements(self, n: int) -> bytes:
        """fp32 (normals, random bit patterns: NaNs with payloads, infinities, subnormals) or int32."""
        g = self.np
        if self.dtype:
            return g.integers(0, 1 << 32, n, dtype=np.uint64).astype("<u4").tobytes()
        out = g.standard_normal(n).astype("<f4").view("<u4").copy()
        pick = g.random(n)
        rand_bits = g.integers(0, 1 << 32, n, dtype=np.uint64).astype("<u4")
        specials = np.array([0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001,
                             0x00000001, 0x80000001, 0x007FFFFF, 0x00000000, 0x80000000,
                             0x7F7FFFFF, 0xFF7FFFFF, 0x00800000], dtype="<u4")
        out = np.where(pick < 0.2, rand_bits, out)
        out = np.where(pick > 0.9, specials[g.integers(0, len(specials), n)], out)
        return out.astype("<u4").tobytes()

    def gradient(self, w: int, slot: int, rnd: int, total: int, aux: int | None = None,
                 flags: int = 0) -> bytes:
        """A GRADIENT of member ``w``; ``aux`` (sync: the step id) defaults to the round."""
        return self.build(w, Opcode.GRADIENT, flags=self.dtype | flags, slot=slot, seq=rnd,
                          count=self.packet_elems, aux=rnd if aux is None else aux,
                          payload=self.elements(self.packet_elems), total=total)

    def other_step(self, step: int) -> int:
        """A step id other than ``step``: the previous or next call, or any other."""
        rng = self.rng
        return (step + rng.choice([-1, 1, 1, 2, rng.randrange(3, 1 << 32)])) & M32

    def push(self, w: int, k: int | None = None) -> bytes:
        rng = self.rng
        fit = (C.MAX_FRAME_LEN - 2 * C.BLOCK) // self.rb  # a 65535-byte frame
        k = k or rng.randint(1, min(C.MAX_PUSH_RECORDS, fit))
        prios = [rng.choice([0, rng.randrange(1 << 18), C.PRIORITY_ONE, rng.randrange(1 << 32)])
                 for _ in range(k)]
        block = bytearray(C.BLOCK)
        block[:4 * k] = struct.pack(f"<{k}I", *prios)
        recs = self.np.integers(0, 256, k * self.rb, dtype=np.uint8).tobytes()
        self.size = min(self.size + k, self.cap)
        return self.build(w, Opcode.PUSH, seq=rng.randrange(1 << 32), count=k,
                          payload=bytes(block) + recs)

    def sample(self, w: int, stack: int = 0, max_log2_batch: int = 6) -> bytes:
        """A SAMPLE_REQ of member ``w``: a random batch (a power of two up to
        ``2**max_log2_batch``), prioritized or uniform, ``aux`` = ``stack`` (the depth k)."""
        rng = self.rng
        return self.build(w, Opcode.SAMPLE_REQ, seq=rng.randrange(1 << 32),
                          count=1 << rng.randint(0, max_log2_batch),
                          flags=int(Flags.PRIORITIZED) if rng.random() < 0.6 else 0, aux=stack)

    def update(self, w: int) -> bytes:
        rng = self.rng
        k = rng.randint(1, C.MAX_UPDATE_PAIRS)
        pairs = []
        for _ in range(k):
            hi = max(self.size, 1)
            idx = rng.randrange(hi) if rng.random() < 0.85 else rng.choice(
                [self.size, hi + rng.randrange(64), rng.randrange(1 << 32)])
            pairs += [idx & M32, rng.choice([0, rng.randrange(1 << 20), rng.randrange(1 << 32)])]
        return self.build(w, Opcode.UPDATE, seq=rng.randrange(1 << 32), count=k,
                          payload=struct.pack(f"<{2 * k}I", *pairs))

    def with_role(self, bit: int) -> int:
        ws = [i for i in range(C.MAX_MEMBERS) if self.role[i] & bit]
        return self.rng.choice(ws) if ws else 0

    # -- the network ---------------------------------------------------------
    def deliver(self, frames: list[tuple[int, bytes]], *, loss: float = 0.0, dup: float = 0.0,
                reorder: float = 0.0, late: float = 0.0) -> None:
        """Send ``frames`` (port, bytes) through a network that loses, duplicates, reorders
        and retransmits old frames."""
        rng = self.rng
        frames = list(frames)
        if reorder and rng.random() < reorder:
            rng.shuffle(frames)
        for port, data in frames:
            if rng.random() < loss:
                continue
            self.frame(port, data)
            if rng.random() < dup:
                self.frame(port, data)
            if self.sent and rng.random() < late:
                old = rng.choice(self.sent)
                self.frame(old[1], old[2])

    def port(self, w: int) -> int:
        return MEMBER_PORT[w]

    def threshold_members(self) -> int:
        """Contributions that complete an async round (``AGG_THRESHOLD``, 0 acting as 1)."""
        return max(1, self._threshold)

    # -- traffic patterns ------------------------------------------------------
    def aggregation(self, rounds: int, *, loss: float = 0.05, dup: float = 0.05,
                    reorder: float = 0.5, late: float = 0.03, mismatch: float = 0.02,
                    wrap: bool = False, jump: float = 0.03, step_mismatch: float = 0.02,
                    start: int | None = None) -> None:
        """``rounds`` rounds of every slot, two rounds in flight per slot (shadow copies).

        Round ``k`` of every slot is call ``k``: in sync mode its GRADIENTs carry the call's
        step id (``aux``), the same for every member, but for ``step_mismatch`` of them
        (another call's). ``start``: the slots' rounds begin at or just after it (default:
        anywhere below 2**20, or just below 2**32 for every other slot with ``wrap``)."""
        rng = self.rng
        if start is None:
            base = [(M32 - 3 + s) & M32 if wrap and s % 2 else rng.randrange(1 << 20)
                    for s in range(self.slots)]
        else:
            base = [(start + rng.randrange(4)) & M32 for _ in range(self.slots)]
        totals = [self.packet_elems * rng.randint(1, 50) for _ in range(self.slots)]
        first_step = rng.randrange(1 << 32)
        pending: list[tuple[int, bytes]] = []
        for k in range(rounds):
            step = (first_step + k) & M32
            for s in range(self.slots):
                rnd = (base[s] + k) & M32
                jumped = rng.random() < jump
                if jumped:
                    rnd = (rnd + 2) & M32  # reuses the copy of a round still in flight
                for w in range(self.members):
                    total = (totals[s] if rng.random() >= mismatch
                             else totals[s] + self.packet_elems)
                    if self.mode:
                        aux = (rnd - rng.randint(0, self.staleness + 2)) & M32
                    else:  # the call of that round (a jump: two calls later)
                        aux = (step + 2) & M32 if jumped else step
                        if rng.random() < step_mismatch:
                            aux = self.other_step(aux)
                    pending.append((self.port(w), self.gradient(w, s, rnd, total, aux)))
            cut = len(pending) // 2 if k < rounds - 1 else len(pending)
            self.deliver(pending[:cut], loss=loss, dup=dup, reorder=reorder, late=late)
            pending = pending[cut:]

    def replay(self, events: int) -> None:
        rng = self.rng
        for _ in range(events):
            r = rng.random()
            if r < 0.4:
                w = self.with_role(C.ROLE_ACTOR)
                self.frame(self.port(w), self.push(w))
            elif r < 0.75:
                w = self.with_role(C.ROLE_LEARNER)
                self.frame(self.port(w), self.sample(w))
            elif r < 0.95:
                w = self.with_role(C.ROLE_LEARNER)
                self.frame(self.port(w), self.update(w))
            elif r < 0.97:
                self.write("RPL_SEED", rng.choice([0, rng.randrange(1 << 32)]))
            elif r < 0.98:
                self.write("RPL_RESET", 1)
                self.size = 0
            else:
                for name in ("RPL_SIZE", "RPL_WPTR", "RPL_TOTAL_LO", "RPL_TOTAL_HI"):
                    self.read(name)

    def l2(self, count: int, *, stations: int = C.L2_ENTRIES + 8, age: float = 0.03) -> None:
        """Ordinary frames between hosts (more of them than the MAC table holds, the members'
        MACs among them, so protocol frames teach it too): known and unknown unicast,
        broadcast, multicast, frames shorter than an Ethernet header, multicast sources,
        hosts that move to another port, a destination on the source's own port (filtered),
        and ``L2_AGE_FRAMES`` set to small periods (aging) between them."""
        rng = self.rng
        if not self.stations:
            self.stations = [[b"\x02\x00" + self.ip[i].to_bytes(4, "big"), MEMBER_PORT[i]]
                             for i in range(C.MAX_MEMBERS)]
            self.stations += [[bytes([rng.randrange(256) & 0xFE]) + rng.randbytes(5),
                               1 << rng.randrange(8)] for _ in range(stations)]
        for _ in range(count):
            if rng.random() < age:
                self.write("L2_AGE_FRAMES", rng.choice([0, 1, 2, 3, 5, 8, 16, 40, 100]))
                continue
            st = rng.choice(self.stations)
            if rng.random() < 0.04:
                st[1] = 1 << rng.randrange(8)  # the host moved
            src, port = st[0], st[1]
            r = rng.random()
            if r < 0.1:
                dst = b"\xff" * 6
            elif r < 0.15:
                dst = bytes([rng.randrange(256) | 1]) + rng.randbytes(5)
            elif r < 0.22:
                dst = bytes([rng.randrange(256) & 0xFE]) + rng.randbytes(5)
            elif r < 0.3:
                dst = rng.choice([s for s in self.stations if s[1] == port])[0]
            else:
                dst = rng.choice(self.stations)[0]
            if rng.random() < 0.03:
                src = bytes([rng.randrange(256) | 1]) + rng.randbytes(5)
            n = rng.randrange(1, C.ETH_LEN) if rng.random() < 0.04 else rng.randrange(C.ETH_LEN, 200)
            data = (dst + src + rng.choice([b"\x08\x06", b"\x86\xdd", b"\x88\xb5", b"\x08\x00"])
                    + rng.randbytes(max(n - C.ETH_LEN, 0)))[:n]
            self.v.ops.append(("frame", port, data))

    def valid_frame(self) -> tuple[int, bytes]:
        """A legal frame of a random kind (before a mutation)."""
        rng = self.rng
        kind = rng.choice(["gradient", "push", "sample", "update"])
        if kind == "gradient" and self.members:
            w = rng.randrange(self.members)
            s = rng.randrange(self.slots)
            return self.port(w), self.gradient(w, s, rng.randrange(1 << 32), self.packet_elems * 4)
        bit = {"push": C.ROLE_ACTOR, "sample": C.ROLE_LEARNER}.get(kind, C.ROLE_LEARNER)
        w = self.with_role(bit)
        data = {"push": self.push, "sample": self.sample}.get(kind, self.update)(w)
        return self.port(w), data

    def malformed(self, count: int) -> None:
        """Every drop class and pass-through, from mutations of legal frames."""
        rng = self.rng
        mutations = sorted(_MUTATIONS)
        for i in range(count):
            port, data = self.valid_frame()
            name = mutations[i % len(mutations)] if i < 4 * len(mutations) else rng.choice(mutations)
            port, data = _MUTATIONS[name](self, port, bytearray(data))
            self.frame(port, bytes(data))

    def registers(self, count: int) -> None:
        """Random writes (legal, out of range, read-only, unknown fields) and reads."""
        rng = self.rng
        regs = [r for r in regmap.REGISTERS.values() if not r.server]
        for _ in range(count):
            r = rng.choice(regs)
            if rng.random() < 0.3:
                self.read(r.name)
                continue
            v = rng.choice([rng.randrange(1 << r.width), rng.randrange(1 << 32), 1 << r.width
                            if r.width < 32 else M32, 0, 3, 0x81, 1 << rng.randrange(8)])
            self.v.ops.append(("write", r.addr, v & M32))


def _relen(data: bytearray) -> None:
    n = len(data)
    data[16:18] = (n - 14).to_bytes(2, "big")
    data[38:40] = (n - 34).to_bytes(2, "big")


_UNSTREAMABLE = 3
"""Frames per vector the SUME stream cannot carry (empty, oversize): at most this many, so the
RTL leg plays nearly all of a vector (tests/test_conformance_rtl.py)."""


def _truncate(g: VectorBuilder, port: int, d: bytearray) -> tuple[int, bytearray]:
    n = g.rng.choice([0, 14, 41, 42, 43, 44, 63, len(d) - 1, len(d) - 4])
    if n <= 0 and g.unstreamable >= _UNSTREAMABLE:
        n = 1
    return port, d[:max(n, 0)]


def _truncate_fixed(g: VectorBuilder, port: int, d: bytearray) -> tuple[int, bytearray]:
    d = d[:max(64, len(d) - 4 * g.rng.randint(1, 4))]
    _relen(d)
    return port, d


def _extend(g: VectorBuilder, port: int, d: bytearray) -> tuple[int, bytearray]:
    d += bytes(g.rng.randrange(256) for _ in range(g.rng.choice([1, 4, 64])))
    if g.rng.random() < 0.5:
        _relen(d)
    return port, d


def _oversize(g: VectorBuilder, port: int, d: bytearray) -> tuple[int, bytearray]:
    if g.unstreamable >= _UNSTREAMABLE:
        return _extend(g, port, d)
    d += bytes(70000 - len(d))  # lengths keep their low 16 bits, as a soft switch builds them
    d[16:18] = ((len(d) - 14) & 0xFFFF).to_bytes(2, "big")
    d[38:40] = ((len(d) - 34) & 0xFFFF).to_bytes(2, "big")
    return port, d


def _set(offset: int, size: int, values: Callable[[VectorBuilder], int]
         ) -> Callable[[VectorBuilder, int, bytearray], tuple[int, bytearray]]:
    def fn(g: VectorBuilder, port: int, d: bytearray) -> tuple[int, bytearray]:
        d[offset:offset + size] = (values(g) & ((1 << (8 * size)) - 1)).to_bytes(size, "big")
        return port, d
    return fn


def _spoof_port(g: VectorBuilder, port: int, d: bytearray) -> tuple[int, bytearray]:
    return g.rng.choice([p for p in MEMBER_PORT if p != port]), d


def _result_from(g: VectorBuilder, port: int, d: bytearray) -> tuple[int, bytearray]:
    d[C.OFF_OPCODE] = Opcode.RESULT
    return g.rng.choice([port, UPLINK]), d


_MUTATIONS: dict[str, Callable[[VectorBuilder, int, bytearray], tuple[int, bytearray]]] = {
    "truncate": _truncate,
    "truncate_fixed_lengths": _truncate_fixed,
    "extend": _extend,
    "oversize": _oversize,
    "ip_length": _set(16, 2, lambda g: g.rng.randrange(1 << 16)),
    "udp_length": _set(38, 2, lambda g: g.rng.randrange(1 << 16)),
    "ethertype": _set(12, 2, lambda g: g.rng.choice([0x86DD, 0x0806, 0x8100])),
    "ihl": _set(14, 1, lambda g: g.rng.choice([0x46, 0x44, 0x65])),
    "ip_proto": _set(23, 1, lambda g: g.rng.choice([6, 1, 0])),
    "udp_dst": _set(36, 2, lambda g: g.rng.choice([0x4E53, 53, 0])),
    "version": _set(C.OFF_VERSION, 1, lambda g: g.rng.choice([0, 2, 0x4E, 255])),
    "opcode": _set(C.OFF_OPCODE, 1, lambda g: g.rng.choice(
        [0, Opcode.PUSH_ACK, Opcode.SAMPLE_RESP, 8, 255])),
    "flags": _set(C.OFF_FLAGS, 1, lambda g: g.rng.choice([0x20, 0x40, 0x80, 0xFF])),
    "reserved": _set(C.OFF_TOTAL, 4, lambda g: g.rng.randrange(1, 1 << 32)),
    "job": _set(C.OFF_JOB, 1, lambda g: (g.job + g.rng.randrange(1, 256)) & 0xFF),
    "worker": _set(C.OFF_WORKER, 2, lambda g: g.rng.choice(
        [g.members, C.MAX_MEMBERS, g.rng.randrange(1 << 16)] + list(range(C.MAX_MEMBERS)))),
    "spoof_ip": _set(26, 4, lambda g: g.rng.randrange(1 << 32)),
    "spoof_udp": _set(34, 2, lambda g: g.rng.randrange(1, 1 << 16)),
    "spoof_port": _spoof_port,
    "count": _set(C.OFF_COUNT, 2,
                  lambda g: g.rng.choice([0, 1, 3, 17, 129, g.packet_elems + 16, 65535])),
    "dtype": _set(C.OFF_FLAGS, 1, lambda g: g.dtype ^ C.FLAG_INT32),
    "slot": _set(C.OFF_SLOT, 2, lambda g: g.slots + g.rng.randrange(1 << 15)),
    "zero_total": _set(C.OFF_TOTAL, 4, lambda g: 0),
    "result_on_root_or_uplink": _result_from,
}
