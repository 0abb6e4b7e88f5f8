"""Conformance vectors: one set of deterministic stimuli for every implementation of the switch.

A :class:`Vector` is the switch's parameters and a list of operations, in order:

* ``("frame", port, bytes)``: one frame on the AXI4-Stream from one-hot SUME ``port``;
* ``("write", addr, value)``: a register write (32-bit value; it may be refused);
* ``("read", addr)``: a register read.

:func:`run` plays a vector on anything with :class:`~hostdrv.switch.reference.SwitchModel`'s
surface (the golden model, :class:`~hostdrv.switch.native.NativeSwitchModel`) and
returns its :class:`Trace`: per operation the frames emitted (bytes and egress
bitmap, in order), the write's outcome (``""`` or the refusal message), the value
read, the counters after it, and at the end every register. Two traces agree
byte for byte or :func:`compare` names the first operation where they differ.

:func:`vectors` is the suite (random mixed traffic, every malformed class, loss,
duplication and reorder, async and a leaf of a hierarchy, replay sequences with
prioritized sampling and updates, the replay rate limiter, register writes including refused ones); each
is generated from a seed, so the same name gives the same bytes on every machine.
:func:`save` writes a vector with the model's expected results as JSON (frames in
hex) for a replay on the RTL: a cocotb test drives the frames with ``port`` in
TUSER's source field, the register operations over AXI4-Lite (a refused write is a
SLVERR), and compares what comes out with ``expect``. :func:`rtl_vector` is what of
a vector the RTL can be given: the SUME stream carries frames of 1..65535 bytes
(TUSER[15:0] is the length), so the longer ones (the ``oversize`` mutation, for the
soft switch's 16-bit length fields) are left out there and the model's results are
recomputed without them (``sim/conformance``, ``tests/test_conformance_rtl.py``).
Every vector's parameters are ones the RTL can be built with (a replay capacity
is a power of two of at least 4, a record a multiple of 64 bytes).

``python -m hostdrv.switch.conformance DIR`` writes every vector of the suite to
``DIR/<name>.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import struct
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from hostdrv.switch.reference import SwitchModel
from hostdrv.wire import consts as C
from hostdrv.wire import regmap
from hostdrv.wire.protocol import Flags, Frame, Message, Opcode, build_frame

__all__ = ["MAX_STREAM_FRAME", "Trace", "Vector", "compare", "describe", "load", "rtl_vector", "run",
           "save", "vectors"]

Op = tuple[Any, ...]
M32 = 0xFFFFFFFF
_SWITCH_IP = regmap.REGISTERS["SWITCH_IP"].reset
_UDP_PORT = regmap.REGISTERS["UDP_PORT"].reset
_MEMBER_PORT = [1 << i for i in range(C.MAX_MEMBERS)]  # a soft switch's virtual ports
_UPLINK = 1 << 7
MAX_STREAM_FRAME = 0xFFFF
"""The longest frame the SUME AXI4-Stream carries (TUSER[15:0] is its length in bytes)."""


class Switch(Protocol):
    """What :func:`run` needs of an implementation."""

    def process(self, frame: bytes, src_port: int) -> list[Any]: ...
    def read(self, reg: str | int) -> int: ...
    def write(self, reg: str | int, value: int) -> None: ...
    def counters(self) -> dict[str, int]: ...


@dataclass
class Vector:
    """Parameters and operations (see the module docstring)."""

    name: str
    params: dict[str, int]
    ops: list[Op] = field(default_factory=list)


@dataclass
class Trace:
    """What an implementation did with a vector: one entry per operation, then its registers."""

    results: list[Any]
    counters: list[dict[str, int]]
    registers: dict[int, int]


def run(vector: Vector, switch: Switch) -> Trace:
    """Play ``vector`` on ``switch`` (built with ``vector.params``)."""
    results: list[Any] = []
    counters: list[dict[str, int]] = []
    for op in vector.ops:
        kind = op[0]
        if kind == "frame":
            results.append([(bytes(e.frame), e.dst_ports) for e in switch.process(op[2], op[1])])
        elif kind == "write":
            try:
                switch.write(op[1], op[2])
                results.append("")
            except ValueError as e:
                results.append(str(e))
        else:
            results.append(switch.read(op[1]))
        counters.append(switch.counters())
    regs = {r.addr: switch.read(r.addr) for r in regmap.REGISTERS.values() if not r.server}
    return Trace(results, counters, regs)


def describe(op: Op) -> str:
    """One operation in words (for messages)."""
    if op[0] == "frame":
        f = op[2]
        what = f"opcode {f[C.OFF_OPCODE]}" if len(f) > C.OFF_OPCODE else "short"
        return f"frame of {len(f)} bytes ({what}) from port {op[1]:#04x}"
    name = regmap.BY_ADDR[op[1]].name if op[1] in regmap.BY_ADDR else f"{op[1]:#x}"
    return f"{op[0]} {name}" + (f" = {op[2]:#x}" if op[0] == "write" else "")


def compare(vector: Vector, want: Trace, got: Trace) -> str:
    """The first difference between two traces of ``vector`` ('' when they agree)."""
    for i, op in enumerate(vector.ops):
        a, b = want.results[i], got.results[i]
        if a != b:
            if op[0] == "frame" and isinstance(a, list) and isinstance(b, list):
                if len(a) != len(b):
                    return (f"{vector.name} op {i} ({describe(op)}): {len(a)} frames expected, "
                            f"{len(b)} emitted")
                for j, ((fa, pa), (fb, pb)) in enumerate(zip(a, b, strict=True)):
                    if pa != pb:
                        return (f"{vector.name} op {i} ({describe(op)}) frame {j}: ports "
                                f"{pa:#04x} expected, {pb:#04x} emitted")
                    if fa != fb:
                        k = next((k for k in range(min(len(fa), len(fb))) if fa[k] != fb[k]),
                                 min(len(fa), len(fb)))
                        return (f"{vector.name} op {i} ({describe(op)}) frame {j}: first byte "
                                f"that differs at offset {k} (lengths {len(fa)}, {len(fb)})")
            return f"{vector.name} op {i} ({describe(op)}): {a!r} expected, {b!r}"
        if want.counters[i] != got.counters[i]:
            diff = {k: (v, got.counters[i][k]) for k, v in want.counters[i].items()
                    if got.counters[i][k] != v}
            return f"{vector.name} op {i} ({describe(op)}): counters (expected, got) {diff}"
    diff = {regmap.BY_ADDR[a].name: (v, got.registers.get(a)) for a, v in want.registers.items()
            if got.registers.get(a) != v}
    return f"{vector.name} registers at the end (expected, got): {diff}" if diff else ""


def rtl_vector(vector: Vector) -> Vector:
    """``vector`` without the frames the SUME stream cannot carry (0 or over
    :data:`MAX_STREAM_FRAME` bytes): what the RTL leg plays. Its expected results are
    the model's on this vector, not on ``vector``."""
    ops = [op for op in vector.ops if op[0] != "frame" or 0 < len(op[2]) <= MAX_STREAM_FRAME]
    return Vector(vector.name, dict(vector.params), ops)


# ---------------------------------------------------------------------------
# files


def save(vector: Vector, path: str | Path, expect: Trace | None = None) -> None:
    """Write ``vector`` and the golden model's results (``expect``; computed when None) as JSON."""
    if expect is None:
        expect = run(vector, SwitchModel(**vector.params))
    ops = [[op[0], op[1], op[2].hex()] if op[0] == "frame" else list(op) for op in vector.ops]
    results = [[[p, f.hex()] for f, p in r] if isinstance(r, list) else r for r in expect.results]
    doc = {"name": vector.name, "params": vector.params, "ops": ops, "expect": results,
           "counters": expect.counters[-1] if expect.counters else {},
           "registers": {f"{a:#05x}": v for a, v in expect.registers.items()}}
    Path(path).write_text(json.dumps(doc, separators=(",", ":")))


def load(path: str | Path) -> Vector:
    """Read a vector written by :func:`save` (its expected results are in the file too)."""
    doc = json.loads(Path(path).read_text())
    ops: list[Op] = [("frame", o[1], bytes.fromhex(o[2])) if o[0] == "frame" else tuple(o)
                     for o in doc["ops"]]
    return Vector(doc["name"], doc["params"], ops)


# ---------------------------------------------------------------------------
# generation


class _Gen:
    """Builds one vector: the member table, frames of every kind, a lossy network."""

    def __init__(self, name: str, seed: int, params: dict[str, int]) -> None:
        self.v = Vector(f"{name}_s{seed}", dict(params))
        self.rng = random.Random(seed)
        self.np = np.random.default_rng(seed)
        self.p = params
        self.elems = 0
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

    # -- operations ---------------------------------------------------------
    def write(self, name: str, value: int) -> None:
        self.v.ops.append(("write", regmap.REGISTERS[name].addr, value))
        if name == "AGG_THRESHOLD":
            self._written_threshold = value

    def read(self, name: str) -> None:
        self.v.ops.append(("read", regmap.REGISTERS[name].addr))

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
        uplink port :data:`_UPLINK`); returns the parent's (IPv4, UDP port)."""
        parent_ip, parent_udp = 0x0A0001FE, 0x4E60
        for name, value in (("AGG_ROLE", 1), ("AGG_UPLINK_PORT", _UPLINK),
                            ("AGG_PARENT_IP", parent_ip), ("AGG_PARENT_UDP", parent_udp),
                            ("AGG_LEAF_ID", leaf_id)):
            self.write(name, value)
        return parent_ip, parent_udp

    def configure(self, *, members: int, slots: int, elems: int, dtype: int = 0, mode: int = 0,
                  threshold: int = 0, staleness: int = 0, job: int = 0, udp_zero: float = 0.3,
                  roles: Iterable[int] | None = None) -> None:
        rng = self.rng
        self.members, self.slots, self.elems, self.dtype = members, slots, elems, dtype
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
            self.write(f"MEMBER_PORT_{i}", _MEMBER_PORT[i])
            self.write(f"MEMBER_IP_{i}", self.ip[i])
            self.write(f"MEMBER_UDP_{i}", self.udp[i])
            self.write(f"MEMBER_ROLE_{i}", self.role[i])
        # AGG_THRESHOLD is 1 .. AGG_MEMBERS after every write (0: members, ignored in sync
        # mode); lowered first when the members shrink below the threshold written before
        h = threshold or members
        if members < self._written_threshold:
            self.write("AGG_THRESHOLD", h)
        for name, value in (("JOB_ID", job), ("AGG_MEMBERS", members), ("AGG_SLOTS", slots),
                            ("AGG_ELEMS", elems), ("AGG_DTYPE", dtype), ("AGG_MODE", mode),
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
                   ip_dst=_SWITCH_IP, udp_src=udp or self.rng.randrange(1024, 65536),
                   udp_dst=_UDP_PORT)
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
                          count=self.elems, aux=rnd if aux is None else aux,
                          payload=self.elements(self.elems), total=total)

    def other_step(self, step: int) -> int:
        """A step id other than ``step``: the previous or next call, or any other."""
        rng = self.rng
        return (step + rng.choice([-1, 1, 1, 2, rng.randrange(3, 1 << 32)])) & M32

    def push(self, w: int, k: int | None = None) -> bytes:
        rng = self.rng
        k = k or rng.randint(1, C.MAX_PUSH_RECORDS)
        prios = [rng.choice([0, rng.randrange(1 << 18), C.PRIORITY_ONE, rng.randrange(1 << 32)])
                 for _ in range(k)]
        block = bytearray(C.BLOCK)
        block[:4 * k] = struct.pack(f"<{k}I", *prios)
        recs = self.np.integers(0, 256, k * self.p["record_bytes"], dtype=np.uint8).tobytes()
        self.size = min(self.size + k, self.p["capacity"])
        return self.build(w, Opcode.PUSH, seq=rng.randrange(1 << 32), count=k,
                          payload=bytes(block) + recs)

    def sample(self, w: int) -> bytes:
        rng = self.rng
        return self.build(w, Opcode.SAMPLE_REQ, seq=rng.randrange(1 << 32),
                          count=1 << rng.randint(0, 6),
                          flags=int(Flags.PRIORITIZED) if rng.random() < 0.6 else 0)

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
        return _MEMBER_PORT[w]

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
        totals = [self.elems * rng.randint(1, 50) for _ in range(self.slots)]
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
                    total = totals[s] if rng.random() >= mismatch else totals[s] + self.elems
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
            self.stations = [[b"\x02\x00" + self.ip[i].to_bytes(4, "big"), _MEMBER_PORT[i]]
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
            return self.port(w), self.gradient(w, s, rng.randrange(1 << 32), self.elems * 4)
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


def _truncate(g: _Gen, port: int, d: bytearray) -> tuple[int, bytearray]:
    n = g.rng.choice([0, 14, 41, 42, 43, 44, 63, len(d) - 1, len(d) - 4])
    if n <= 0 and g.unstreamable >= _UNSTREAMABLE:
        n = 1
    return port, d[:max(n, 0)]


def _truncate_fixed(g: _Gen, port: int, d: bytearray) -> tuple[int, bytearray]:
    d = d[:max(64, len(d) - 4 * g.rng.randint(1, 4))]
    _relen(d)
    return port, d


def _extend(g: _Gen, port: int, d: bytearray) -> tuple[int, bytearray]:
    d += bytes(g.rng.randrange(256) for _ in range(g.rng.choice([1, 4, 64])))
    if g.rng.random() < 0.5:
        _relen(d)
    return port, d


def _oversize(g: _Gen, port: int, d: bytearray) -> tuple[int, bytearray]:
    if g.unstreamable >= _UNSTREAMABLE:
        return _extend(g, port, d)
    d += bytes(70000 - len(d))  # lengths keep their low 16 bits, as a soft switch builds them
    d[16:18] = ((len(d) - 14) & 0xFFFF).to_bytes(2, "big")
    d[38:40] = ((len(d) - 34) & 0xFFFF).to_bytes(2, "big")
    return port, d


def _set(offset: int, size: int, values: Callable[[_Gen], int]
         ) -> Callable[[_Gen, int, bytearray], tuple[int, bytearray]]:
    def fn(g: _Gen, port: int, d: bytearray) -> tuple[int, bytearray]:
        d[offset:offset + size] = (values(g) & ((1 << (8 * size)) - 1)).to_bytes(size, "big")
        return port, d
    return fn


def _spoof_port(g: _Gen, port: int, d: bytearray) -> tuple[int, bytearray]:
    return g.rng.choice([p for p in _MEMBER_PORT if p != port]), d


def _result_from(g: _Gen, port: int, d: bytearray) -> tuple[int, bytearray]:
    d[C.OFF_OPCODE] = Opcode.RESULT
    return g.rng.choice([port, _UPLINK]), d


_MUTATIONS: dict[str, Callable[[_Gen, int, bytearray], tuple[int, bytearray]]] = {
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
    "count": _set(C.OFF_COUNT, 2, lambda g: g.rng.choice([0, 1, 3, 17, 129, g.elems + 16, 65535])),
    "dtype": _set(C.OFF_FLAGS, 1, lambda g: g.dtype ^ C.FLAG_INT32),
    "slot": _set(C.OFF_SLOT, 2, lambda g: g.slots + g.rng.randrange(1 << 15)),
    "zero_total": _set(C.OFF_TOTAL, 4, lambda g: 0),
    "result_on_root_or_uplink": _result_from,
}


# ---------------------------------------------------------------------------
# the suite


def _params(**kw: int) -> dict[str, int]:
    """The switch's parameters: small memories, and one set for most vectors (the RTL leg
    builds nrl_switch once per set)."""
    p = {"capacity": 64, "record_bytes": 64, "max_slots": 8, "max_elems": 64,
         "build_hash": 0xC0FFEE}
    p.update(kw)
    return p


def _sync(seed: int, dtype: int, elems: int = 32) -> Vector:
    g = _Gen(f"sync_{'int32' if dtype else 'fp32'}_p{elems}", seed,
             _params(max_elems=max(elems, 64)))
    g.configure(members=4, slots=4, elems=elems, dtype=dtype)
    g.aggregation(30, wrap=True)
    g.malformed(60)
    g.aggregation(10, loss=0.2, dup=0.2, late=0.1)
    return g.v


def _async(seed: int) -> Vector:
    g = _Gen("async", seed, _params())
    g.configure(members=5, slots=3, elems=16, mode=1, threshold=3, staleness=2)
    g.aggregation(30, loss=0.1, dup=0.1, late=0.05)
    g.write("AGG_THRESHOLD", 1)  # every contribution completes a round
    g.aggregation(5)
    return g.v


def _async_catchup(seed: int) -> Vector:
    """Async members lagging beyond the staleness bound: never added, answered by a DONE
    copy of their round or a newer one (protocol section 4, step 1)."""
    g = _Gen("async_catchup", seed, _params())
    g.configure(members=4, slots=2, elems=16, mode=1, threshold=2, staleness=1)
    rng = g.rng
    base = [rng.randrange(1 << 20), (M32 - 5) & M32]
    for k in range(40):
        for s in range(g.slots):
            rnd = (base[s] + k) & M32
            total = g.elems * 7
            fresh = rng.sample(range(g.members), g.threshold_members())
            frames = [(g.port(w), g.gradient(w, s, rnd, total)) for w in fresh]
            for w in range(g.members):  # laggards: this round, older or newer ones
                if w in fresh and rng.random() < 0.7:
                    continue
                r = (rnd + rng.choice([0, 0, 0, -1, -2, -3, 1])) & M32
                lag = rng.choice([0, 1, 2, 2, 3, 5, 1 << 20])
                frames.append((g.port(w), g.gradient(w, s, r, total, (r - lag) & M32)))
            g.deliver(frames, dup=0.1, reorder=0.3, late=0.05)
    return g.v


def _leaf(seed: int) -> Vector:
    """A leaf of a two-level tree: partial sums go up, the parent's RESULTs come down."""
    g = _Gen("hierarchy_leaf", seed, _params())
    g.configure(members=3, slots=4, elems=16, dtype=seed % 2)
    parent_ip, parent_udp = g.make_leaf(5)
    rng = g.rng
    first_step = rng.randrange(1 << 32)
    for k in range(40):
        s = rng.randrange(g.slots)
        rnd = 100 + k
        step = (first_step + k) & M32
        frames = [(g.port(w), g.gradient(w, s, rnd, g.elems * 3,
                                         step if rng.random() >= 0.03 else g.other_step(step)))
                  for w in range(g.members)]
        g.deliver(frames, dup=0.15, reorder=0.5, late=0.05)
        for _ in range(rng.choice([0, 1, 1, 2])):  # the parent's RESULT (maybe twice, maybe late)
            err = rng.random() < 0.1
            data = g.build(rng.randrange(8), Opcode.RESULT,
                           flags=g.dtype | (int(Flags.ERROR) if err else 0)
                           | int(Flags.FROM_SWITCH),
                           slot=s, seq=rnd - rng.choice([0, 0, 0, 2]), count=g.elems,
                           aux=rng.randrange(1 << 32), payload=g.elements(g.elems),
                           total=g.elems * 3, ip_src=rng.choice([parent_ip] * 5 + [g.ip[0]]),
                           udp_src=parent_udp)
            g.frame(rng.choice([_UPLINK] * 5 + [g.port(0)]), data)
    g.malformed(40)
    return g.v


_STEP_CASES = ("clean", "clean", "open", "done", "error", "length", "straggler")
"""What happens to one round of the step vectors (:func:`_step_round`)."""


def _step_round(g: _Gen, s: int, rnd: int, step: int, total: int, case: str,
                flags: int = 0) -> tuple[list[tuple[int, bytes]], list[tuple[int, bytes]]]:
    """One sync round of call ``step`` (protocol section 4 step 4): the members' GRADIENTs,
    and what comes after them. ``case``: ``clean``; ``open``, a member of another step among
    them (an error copy, or a wrong step opens the copy and the others are refused);
    ``error``, that and more mismatches on the error copy; ``done``, members of other steps
    after the round completed (the ERROR-forced RESEND) and a retransmission of the right
    step; ``length``, a member of another length and step (a length mismatch: tested
    first); ``straggler``, member 0 one call behind (issue 19); ``up`` (a leaf), as
    ``done``, before or after the parent's RESULT."""
    rng = g.rng
    n = g.members
    m = rng.randrange(n)
    steps = [step] * n
    if case in ("open", "error"):
        steps[m] = g.other_step(step)
    elif case == "straggler":
        steps[0] = (step - 1) & M32
    first = [(g.port(w), g.gradient(w, s, rnd, total, steps[w], flags)) for w in range(n)]
    after: list[tuple[int, bytes]] = []
    if case == "length":
        first[m] = (g.port(m), g.gradient(m, s, rnd, total + g.elems, g.other_step(step), flags))
    elif case in ("done", "up"):
        after = [(g.port(w), g.gradient(w, s, rnd, total, g.other_step(step), flags))
                 for w in rng.sample(range(n), rng.randint(1, min(2, n)))]
        w = rng.randrange(n)
        after.append((g.port(w), g.gradient(w, s, rnd, total, step, flags)))
    elif case == "error":
        w = rng.randrange(n)
        after = [(g.port(m), g.gradient(m, s, rnd, total, steps[m], flags)),
                 (g.port(w), g.gradient(w, s, rnd, total, g.other_step(step), flags))]
    return first, after


def _step_traffic(g: _Gen, calls: int, flags: int = 0) -> None:
    """``calls`` sync calls, one round of every slot each, every round a :data:`_STEP_CASES`
    case; a lossy, duplicating, reordering network."""
    rng = g.rng
    base = [rng.randrange(1 << 20) for _ in range(g.slots)]
    totals = [g.elems * rng.randint(1, 50) for _ in range(g.slots)]
    first_step = rng.randrange(1 << 32)
    for k in range(calls):
        step = (first_step + k) & M32
        for s in range(g.slots):
            first, after = _step_round(g, s, (base[s] + k) & M32, step, totals[s],
                                       rng.choice(_STEP_CASES), flags)
            g.deliver(first, loss=0.03, dup=0.1, reorder=0.5, late=0.03)
            g.deliver(after, dup=0.1, reorder=0.5)


def _step_flat(seed: int) -> Vector:
    """Step identity on a flat switch (sync): step mismatches on OPEN, DONE and error copies,
    a length mismatch with another step, a straggler one call behind; then mixed traffic."""
    g = _Gen("step_flat", seed, _params())
    g.configure(members=3, slots=2, elems=16, dtype=seed % 2)
    _step_traffic(g, 30)
    g.aggregation(8, step_mismatch=0.1)
    g.malformed(20)
    return g.v


def _step_root(seed: int) -> Vector:
    """Step identity at a root: its members are leaves, whose upward GRADIENTs (from their
    ``UDP_PORT``, ``FROM_SWITCH`` set) carry their members' step id."""
    g = _Gen("step_root", seed, _params())
    g.configure(members=3, slots=3, elems=16, dtype=seed % 2)
    for i in range(g.members):
        g.udp[i] = _UDP_PORT
        g.write(f"MEMBER_UDP_{i}", _UDP_PORT)
    _step_traffic(g, 25, flags=int(Flags.FROM_SWITCH))
    return g.v


def _step_leaf(seed: int) -> Vector:
    """Step identity at a leaf: its upward GRADIENT carries the copy's step (sync; async
    the round), a member of another step refused while OPEN, UP (waiting for the parent)
    or DONE (the parent's RESULT relayed), the parent's ERROR RESULTs of a step mismatch
    (aux = total) relayed down."""
    g = _Gen("step_leaf", seed, _params())
    g.configure(members=3, slots=2, elems=16, dtype=seed % 2)
    parent_ip, parent_udp = g.make_leaf(2)
    rng = g.rng
    total = g.elems * 5
    first_step = rng.randrange(1 << 32)

    def parent_result(s: int, rnd: int) -> None:
        err = rng.random() < 0.3
        data = g.build(rng.randrange(8), Opcode.RESULT,
                       flags=g.dtype | int(Flags.FROM_SWITCH) | (int(Flags.ERROR) if err else 0),
                       slot=s, seq=rnd, count=g.elems,
                       aux=total if err and rng.random() < 0.7 else rng.randrange(1 << 32),
                       payload=g.elements(g.elems), total=total, ip_src=parent_ip,
                       udp_src=parent_udp)
        g.frame(_UPLINK, data)

    for k in range(24):
        step = (first_step + k) & M32
        for s in range(g.slots):
            rnd = (200 + k) & M32
            first, after = _step_round(g, s, rnd, step, total,
                                       rng.choice(_STEP_CASES + ("up", "up")))
            g.deliver(first, loss=0.03, dup=0.1, reorder=0.5)
            answered = rng.random() < 0.5
            if answered:  # the parent's RESULT before the late members: DONE at the leaf
                parent_result(s, rnd)
            g.deliver(after, dup=0.1, reorder=0.5)
            if not answered and rng.random() < 0.8:
                parent_result(s, rnd)
    # async: the upward aux is the round, and steps are not checked
    g.write("AGG_MODE", 1)
    g.write("AGG_THRESHOLD", 2)
    g.write("AGG_STALENESS", 2)
    g.mode, g.staleness, g._threshold = 1, 2, 2
    for k in range(10):
        s = rng.randrange(g.slots)
        rnd = (500 + k) & M32
        frames = [(g.port(w), g.gradient(w, s, rnd, total, (rnd - rng.randint(0, 3)) & M32))
                  for w in range(g.members)]
        g.deliver(frames, dup=0.1, reorder=0.5)
        parent_result(s, rnd)
    return g.v


def _ahead(seed: int) -> Vector:
    """The far-ahead bound (protocol section 6, check 11): for several ``AGG_EPOCH`` values
    (0, a block, one that wraps), sync and async, full rounds exactly 2**25 - 1 ahead
    (accepted), 2**25 and more ahead up to 2**31 - 1 (dropped as AHEAD), and behind (2**31
    and more: processed); ordinary traffic crossing the bound; stragglers of an old epoch
    after ``AGG_EPOCH`` moves on (processed: STALE/RESEND) and after it moves back (their
    rounds are now far ahead)."""
    g = _Gen("ahead", seed, _params())
    g.configure(members=3, slots=2, elems=16, dtype=seed % 2)
    rng = g.rng
    ahead, half = C.AGG_AHEAD_ROUNDS, 1 << 31
    epochs = [0, rng.randrange(1, 255) * C.EPOCH_ROUNDS, 0xFF000000]
    for mode in (0, 1):
        if mode:
            g.write("AGG_MODE", 1)
            g.write("AGG_THRESHOLD", 2)
            g.write("AGG_STALENESS", 1)
            g.mode, g.staleness, g._threshold = 1, 1, 2
        rng.shuffle(epochs)
        for epoch in epochs:
            g.write("AGG_EPOCH", epoch)
            probes = [ahead - 1, ahead, ahead + 1, half - 1, half, half + 1, M32, 0, 1,
                      rng.randrange(ahead, half), rng.randrange(half, 1 << 32),
                      rng.randrange(ahead)]
            rng.shuffle(probes)
            for d in probes:
                rnd = (epoch + d) & M32
                s = rng.randrange(g.slots)
                step = rng.randrange(1 << 32)
                frames = [(g.port(w), g.gradient(w, s, rnd, g.elems * 3,
                                                 (rnd - rng.randint(0, 2)) & M32 if mode else step))
                          for w in range(g.members)]
                g.deliver(frames, dup=0.1, reorder=0.3)
            g.aggregation(6, start=(epoch + ahead - 3) & M32)  # crossing the bound
            g.aggregation(4, start=(epoch - 2) & M32)  # around the epoch
            g.write("AGG_EPOCH", (epoch + C.EPOCH_ROUNDS) & M32)  # the job moved on
            for op in rng.sample(g.sent[-40:], 12):  # stragglers of the old epoch
                g.frame(op[1], op[2])
            g.write("AGG_EPOCH", (epoch - ahead) & M32)  # moved back: the rounds are ahead
            for op in rng.sample(g.sent[-40:], 8):
                g.frame(op[1], op[2])
            g.read("AGG_EPOCH")
    return g.v


def _replay(seed: int, capacity: int, record_bytes: int) -> Vector:
    g = _Gen(f"replay_c{capacity}_r{record_bytes}", seed,
             _params(capacity=capacity, record_bytes=record_bytes))
    g.configure(members=2, slots=1, elems=16)
    w = g.with_role(C.ROLE_LEARNER)
    g.frame(g.port(w), g.sample(w))  # from an empty memory
    g.replay(400)
    g.malformed(40)
    return g.v


def _rate(seed: int) -> Vector:
    """The replay rate limiter (protocol section 5): minimum size, samples-per-insert ratios
    with error buffers (NOT_YET answers to PUSH and SAMPLE_REQ), the accumulator read back,
    cleared by RPL_SPI and RPL_RESET, and extreme register values (a 64-bit offset)."""
    g = _Gen("rate", seed, _params())
    g.configure(members=2, slots=1, elems=16,
                roles=[C.ROLE_ACTOR, C.ROLE_LEARNER, C.ROLE_ACTOR | C.ROLE_LEARNER,
                       C.ROLE_ACTOR, C.ROLE_LEARNER, 0, 0, 0])
    rng, one = g.rng, C.SPI_ONE
    diff = ("RPL_RATE_DIFF_LO", "RPL_RATE_DIFF_HI")
    w = g.with_role(C.ROLE_LEARNER)
    g.write("RPL_MIN_SIZE", rng.randint(8, 24))
    g.frame(g.port(w), g.sample(w))  # empty
    g.replay(60)  # ratio limiting off: MIN_SIZE only, diff counts the samples down
    for name in diff:
        g.read(name)
    for _ in range(4):
        g.write("RPL_MIN_SIZE", rng.randint(0, 40))
        spi = rng.choice([one, one // 2, 3 * one + rng.randrange(one), 8 * one, 1])
        g.write("RPL_SPI", spi)
        g.write("RPL_SPI_ERROR", rng.choice([16 * one, 40 * one + 7, 64 * one,
                                             16 * spi + rng.randrange(one), 0]))
        g.replay(rng.randint(60, 120))
        for name in diff:
            g.read(name)
    # extreme values: offset = SPI * MIN_SIZE near 2**64, then a small minimum size
    g.write("RPL_SPI", M32)
    g.write("RPL_SPI_ERROR", M32)
    g.write("RPL_MIN_SIZE", M32)
    g.replay(30)
    g.write("RPL_MIN_SIZE", 3)
    g.replay(40)
    for name in diff:
        g.read(name)
    g.write("RPL_RESET", 1)
    g.write("RPL_SPI", 2 * one)
    g.write("RPL_SPI_ERROR", 40 * one)
    g.replay(60)
    return g.v


def _mixed(seed: int) -> Vector:
    """Everything at once, with register writes (legal and refused) between the frames."""
    g = _Gen("mixed", seed, _params(capacity=128, record_bytes=128, max_elems=352) if seed % 2
             else _params())
    g.configure(members=4, slots=8, elems=352 if seed % 2 else 48, job=seed & 0xFF)
    rng = g.rng
    for _ in range(12):
        r = rng.random()
        if r < 0.35:
            g.aggregation(rng.randint(1, 4))
        elif r < 0.6:
            g.replay(rng.randint(5, 40))
        elif r < 0.8:
            g.malformed(rng.randint(5, 20))
        elif r < 0.9:
            g.l2(rng.randint(5, 40))
        else:
            g.registers(rng.randint(3, 10))
            g.configure(members=rng.randint(1, 8), slots=rng.randint(1, 8),
                        elems=16 * rng.randint(1, 4), dtype=rng.randint(0, 1),
                        mode=rng.randint(0, 1), threshold=rng.randint(0, 4),
                        staleness=rng.randint(0, 3), job=g.job)
            g.write("CTRL", rng.choice([0x3, 0x3, 0x1, 0x2, 0x80000003]))
    return g.v


def _l2(seed: int) -> Vector:
    """The learning switch: ordinary traffic, aging, a full table, protocol frames between."""
    g = _Gen("l2", seed, _params())
    g.configure(members=3, slots=2, elems=16)
    g.read("L2_AGE_FRAMES")
    g.l2(150, age=0.0)  # no aging (the reset period is far away): learning and a full table
    g.aggregation(3)
    g.replay(8)
    g.l2(250)
    g.write("CTRL", 0x80000003)
    g.aggregation(2)
    g.l2(150, age=0.06)
    g.read("L2_AGE_FRAMES")
    return g.v


def _registers(seed: int) -> Vector:
    g = _Gen("registers", seed, _params())
    g.registers(600)
    g.configure(members=3, slots=2, elems=16)
    g.write("UDP_PORT", _UDP_PORT)  # the random writes may have moved it: protocol frames again
    g.write("CTRL", 0)  # both engines off
    g.malformed(20)
    for _ in range(4):  # legal frames of every engine: DISABLED
        g.frame(*g.valid_frame())
    g.replay(10)
    g.write("CTRL", 0x80000003)  # clear the counters, engines on
    g.aggregation(4)
    g.registers(200)
    return g.v


def vectors(scale: int = 1) -> list[Vector]:
    """The conformance suite (deterministic); ``scale`` > 1 adds seeds of every kind."""
    out: list[Vector] = []
    for k in range(scale):
        s = 1000 * k
        out += [_sync(s + 1, 0), _sync(s + 2, 1), _sync(s + 3, 0, elems=352), _async(s + 4),
                _leaf(s + 5), _leaf(s + 6), _replay(s + 7, 64, 64), _replay(s + 8, 128, 192),
                _replay(s + 9, 4, 64), _mixed(s + 10), _mixed(s + 11), _registers(s + 12),
                _l2(s + 13), _l2(s + 14), _rate(s + 15), _rate(s + 16),
                _async_catchup(s + 17), _step_flat(s + 18), _step_flat(s + 19),
                _step_leaf(s + 20), _step_leaf(s + 21), _step_root(s + 22), _ahead(s + 23),
                _ahead(s + 24)]
    return out


def main(argv: list[str] | None = None) -> int:
    """Write the suite's vectors with the model's expected results, one JSON file each."""
    ap = argparse.ArgumentParser(prog="python -m hostdrv.switch.conformance",
                                 description="Write the conformance vectors as JSON files.")
    ap.add_argument("out", type=Path, help="folder to write <name>.json into")
    ap.add_argument("--scale", type=int, default=1, help="seeds of every kind")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for v in vectors(args.scale):
        save(v, args.out / f"{v.name}.json")
        print(f"{args.out / v.name}.json: {len(v.ops)} operations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
