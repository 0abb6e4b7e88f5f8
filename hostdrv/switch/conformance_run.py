"""Conformance vectors and traces (:mod:`hostdrv.switch.conformance`): a :class:`Vector`,
what playing it on an implementation gives (:func:`run`, a :class:`Trace`), the first
difference between two traces (:func:`compare`), the part the RTL can be given
(:func:`rtl_vector`), and the JSON files the RTL leg reads (:func:`save`, :func:`load`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from hostdrv.switch.reference import SwitchModel
from hostdrv.wire import consts as C
from hostdrv.wire import regmap

__all__ = ["FULL", "M32", "MAX_STREAM_FRAME", "RTL", "Capabilities", "Op", "Switch", "Trace",
           "Vector", "compare", "describe", "load", "needs", "rtl_vector", "run", "save",
           "unsupported"]

Op = tuple[Any, ...]
M32 = 0xFFFFFFFF
MAX_STREAM_FRAME = 0xFFFF
"""The longest frame the SUME AXI4-Stream carries (TUSER[15:0] is its length in bytes)."""


@dataclass(frozen=True)
class Capabilities:
    """What of the replay protocol an implementation of the switch has (the vectors it can play).

    Attributes
    ----------
    max_stack:
        Largest SAMPLE_REQ ``aux`` it handles as the protocol says: 1 (one record per sample,
        ``aux`` not decoded) or ``MAX_STACK`` (stacked samples, and ``aux`` above
        ``MAX_STACK`` dropped as BAD_COUNT).
    max_record_bytes:
        Largest record size R it can be built with.
    max_jobs:
        Largest ``JOBS`` it can be built with (section 11).
    """

    max_stack: int
    max_record_bytes: int
    max_jobs: int = 1


FULL = Capabilities(C.MAX_STACK, C.MAX_RECORD_BYTES, C.MAX_JOBS)
"""The whole protocol: the golden model and the native engine."""
RTL = Capabilities(max_stack=C.MAX_STACK, max_record_bytes=C.MAX_RECORD_BYTES, max_jobs=C.MAX_JOBS)
"""``hw/rtl`` (nrl_switch): stacked samples (``replay_stack``: record chains written by PUSH,
``aux`` = k walked oldest first, ``aux`` above ``MAX_STACK`` dropped as BAD_COUNT), records up
to ``MAX_RECORD_BYTES`` (8192) in both record stores (block RAM and the DDR3 AXI store, whose
records over 4 KB are two bursts) and up to ``MAX_JOBS`` jobs (``JOBS``, section 11; a
one-job build has a fixed share; several jobs with the block RAM store): the whole protocol."""


def needs(vector: Vector) -> Capabilities:
    """What ``vector`` asks of an implementation: the largest ``aux`` of its well-formed-length
    SAMPLE_REQ frames (0 when it has none) and its record size."""
    stack = 0
    for op in vector.ops:
        f = op[2] if op[0] == "frame" else b""
        if len(f) == C.PAYLOAD_OFFSET and f[C.OFF_OPCODE] == C.OP_SAMPLE_REQ:
            stack = max(stack, int.from_bytes(f[C.OFF_AUX:C.OFF_AUX + 4], "big"))
    return Capabilities(stack, vector.params["record_bytes"], vector.params.get("jobs", 1))


def unsupported(vector: Vector, caps: Capabilities) -> str:
    """Why an implementation with ``caps`` cannot play ``vector`` ('' when it can)."""
    want = needs(vector)
    why = []
    # an implementation with stacks up to MAX_STACK also drops any deeper aux (BAD_COUNT)
    if want.max_stack > caps.max_stack and caps.max_stack < C.MAX_STACK:
        why.append(f"SAMPLE_REQ stack depth (aux) up to {want.max_stack}, handled up to "
                   f"{caps.max_stack}")
    if want.max_record_bytes > caps.max_record_bytes:
        why.append(f"records of {want.max_record_bytes} bytes, built up to "
                   f"{caps.max_record_bytes}")
    if want.max_jobs > caps.max_jobs:
        why.append(f"{want.max_jobs} jobs, built with up to {caps.max_jobs}")
    return "; ".join(why)


class Switch(Protocol):
    """What :func:`run` needs of an implementation."""

    def process(self, frame: bytes, src_port: int) -> list[Any]: ...
    def read(self, reg: str | int) -> int: ...
    def write(self, reg: str | int, value: int) -> None: ...
    def counters(self, job: int = 0) -> dict[str, int]: ...


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


def _counters(switch: Switch, jobs: int) -> dict[str, int]:
    """Every page's counters: job 0's by name, job j's as ``NAME@j`` (its job registers: a
    global counter such as ``CNT_PASS`` is a register of page 0 only)."""
    out = dict(switch.counters())
    for j in range(1, jobs):
        out.update({f"{k}@{j}": v for k, v in switch.counters(j).items()
                    if regmap.REGISTERS[k].job})
    return out


def run(vector: Vector, switch: Switch) -> Trace:
    """Play ``vector`` on ``switch`` (built with ``vector.params``); a vector of several jobs
    (``params["jobs"]``) records every page's counters and registers."""
    results: list[Any] = []
    counters: list[dict[str, int]] = []
    jobs = vector.params.get("jobs", 1)
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
        counters.append(_counters(switch, jobs))
    regs = {r.addr: switch.read(r.addr) for r in regmap.REGISTERS.values() if not r.server}
    for j in range(1, jobs):
        regs.update({a: switch.read(a) for a in (regmap.job_address(r, j)
                     for r in regmap.REGISTERS.values() if r.job and not r.server)})
    return Trace(results, counters, regs)


def describe(op: Op) -> str:
    """One operation in words (for messages)."""
    if op[0] == "frame":
        f = op[2]
        what = f"opcode {f[C.OFF_OPCODE]}" if len(f) > C.OFF_OPCODE else "short"
        return f"frame of {len(f)} bytes ({what}) from port {op[1]:#04x}"
    return f"{op[0]} {regmap.label(op[1])}" + (f" = {op[2]:#x}" if op[0] == "write" else "")


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
    diff = {regmap.label(a): (v, got.registers.get(a)) for a, v in want.registers.items()
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
