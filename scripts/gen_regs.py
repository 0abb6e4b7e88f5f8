#!/usr/bin/env python3
"""Generate the register map and protocol constant artefacts.

From ``hw/regs.yaml`` (registers) it writes ``hw/rtl/nrl_regs.vh`` (Verilog
localparams), ``hostdrv/wire/regmap.py`` (Python constants) and
``docs/registers.md``; from ``hw/protocol.yaml`` (protocol constants)
``hw/rtl/nrl_protocol.vh``, ``hostdrv/wire/consts.py`` and
``docs/constants.md``; from both, the C/C++ header
``hostdrv/wire/nrl_protocol.h``. ``--check`` writes nothing and exits 1 when
any output would change (the test suite runs it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "hw" / "regs.yaml"
PROTOCOL = REPO / "hw" / "protocol.yaml"
OUT_VH = REPO / "hw" / "rtl" / "nrl_regs.vh"
OUT_PY = REPO / "hostdrv" / "wire" / "regmap.py"
OUT_MD = REPO / "docs" / "registers.md"
OUT_PROTO_VH = REPO / "hw" / "rtl" / "nrl_protocol.vh"
OUT_PROTO_PY = REPO / "hostdrv" / "wire" / "consts.py"
OUT_PROTO_MD = REPO / "docs" / "constants.md"
OUT_H = REPO / "hostdrv" / "wire" / "nrl_protocol.h"


ENGINES = ("agg", "rpl", "both", "switch")
"""Who keeps an RTL counter (``engine:`` in hw/regs.yaml); ``both``: each engine
counts its own frames and a read returns the sum (nrl_axil_split)."""

COUNTER_WINDOW_WORDS = 32
"""The RTL counters lie in one aligned window of this many 32-bit words."""
FIXED_SHARE_WORDS = 64
"""fixed_share: registers lie in the first this many words (the RTL's word mask FIXED_SHARE_WORDS)."""
JOB_SCOPE_WORDS = 256
"""Job registers lie in the first this many words (the RTL's word mask JOB_SCOPE_WORDS)."""


def counter_window(regs: list[dict[str, Any]]) -> int:
    """Base address of the aligned window that holds every RTL counter."""
    addrs = [r["addr"] for r in regs if r["access"] == "rc" and not r["server"]]
    size = 4 * COUNTER_WINDOW_WORDS
    base = min(addrs) - min(addrs) % size
    if max(addrs) >= base + size:
        raise ValueError(f"the counters do not fit one {size}-byte window at {base:#x}")
    return base


RULE_KEYS = ("bits", "max", "range", "multiple", "at_least", "one_hot", "bits_of")
"""The ``legal:`` keys of hw/regs.yaml (its header says what each means)."""


def check_write_rule(r: dict[str, Any]) -> None:
    """Refuse a malformed ``legal:`` / ``self_clear:`` on register ``r``."""
    legal = r.get("legal")
    if (legal is not None or "self_clear" in r) and r["access"] != "rw":
        raise ValueError(f"register {r['name']}: write rules are for rw registers only")
    top = (1 << r["width"]) - 1
    if not 0 <= r.get("self_clear", 0) <= top:
        raise ValueError(f"register {r['name']}: self_clear wider than the register")
    if legal is None:
        return
    bad = set(legal) - set(RULE_KEYS)
    if bad:
        raise ValueError(f"register {r['name']}: unknown legal keys {sorted(bad)}")
    rng = legal.get("range")
    if rng is not None and not (len(rng) == 2 and isinstance(rng[0], int) and isinstance(rng[1], str)):
        raise ValueError(f"register {r['name']}: range is [low, REGISTER]")
    for key in ("bits", "max", "multiple"):
        if key in legal and not 0 < legal[key] <= top:
            raise ValueError(f"register {r['name']}: legal {key} must be 1 .. {top:#x}")


def load(path: Path = SOURCE) -> dict[str, Any]:
    """Load and validate the YAML register map; expand arrays into flat registers."""
    spec = yaml.safe_load(path.read_text())
    regs: list[dict[str, Any]] = []
    arrays: list[dict[str, Any]] = []
    for block in spec["blocks"]:
        arr = block.get("array")
        for r in block["registers"]:
            base = dict(r)
            base.setdefault("reset", 0)
            base.setdefault("width", 32)
            base.setdefault("param", False)
            base.setdefault("server", False)
            base.setdefault("admin", False)
            base.setdefault("fixed_share", False)
            base["job"] = base.pop("scope", block.get("scope", "global")) == "job"
            base["block"] = block["name"]
            if arr:
                arrays.append({"name": r["name"], "base": arr["base"] + r["offset"],
                               "stride": arr["stride"], "count": arr["count"]})
                for i in range(arr["count"]):
                    e = dict(base)
                    e["name"] = f"{r['name']}_{i}"
                    e["addr"] = arr["base"] + i * arr["stride"] + r["offset"]
                    e["index"] = i
                    regs.append(e)
            else:
                regs.append(base)
    seen: dict[int, str] = {}
    for r in regs:
        a = r["addr"]
        if a % 4 or a >= (1 << spec["addr_width"]):
            raise ValueError(f"register {r['name']}: bad address {a:#x}")
        if a in seen:
            raise ValueError(f"register {r['name']}: address {a:#x} already used by {seen[a]}")
        if r["access"] not in ("ro", "rw", "rc"):
            raise ValueError(f"register {r['name']}: bad access {r['access']!r}")
        rtl_counter = r["access"] == "rc" and not r["server"]
        if rtl_counter and r.get("engine") not in ENGINES:
            raise ValueError(f"counter {r['name']}: engine must be one of {ENGINES}")
        if not rtl_counter and "engine" in r:
            raise ValueError(f"register {r['name']}: engine is for the RTL counters only")
        check_write_rule(r)
        if r["job"] and not r["server"] and a >= 4 * JOB_SCOPE_WORDS:
            raise ValueError(f"register {r['name']}: a job register must lie below {4 * JOB_SCOPE_WORDS:#x}")
        if r["fixed_share"] and ("index" in r or r["access"] != "rw" or a >= 4 * FIXED_SHARE_WORDS):
            raise ValueError(f"register {r['name']}: fixed_share is for rw registers below "
                             f"{4 * FIXED_SHARE_WORDS:#x} outside arrays")
        seen[a] = r["name"]
    names = {r["name"] for r in regs}
    for r in regs:
        for key in ("range", "at_least", "bits_of", "reset_param"):
            ref = r.get("legal", {}).get(key) if key != "reset_param" else r.get(key)
            ref = ref[1] if key == "range" and ref else ref
            if ref is not None and ref not in names:
                raise ValueError(f"register {r['name']}: legal {key} names no register {ref!r}")
    spec["flat"] = regs
    spec["counter_window"] = counter_window(regs)
    spec["arrays"] = arrays
    return spec


def render_vh(spec: dict[str, Any]) -> str:
    aw = spec["addr_width"]
    lines = [
        "// SPDX-License-Identifier: MIT",
        "// Generated by scripts/gen_regs.py from hw/regs.yaml. Do not edit.",
        "// Include inside a module body: localparams for register addresses and resets.",
        "",
    ]
    for r in spec["flat"]:
        if "index" in r or r["server"]:
            continue
        lines.append(f"localparam [{aw - 1}:0] REG_{r['name']} = {aw}'h{r['addr']:03X}; // {r['doc']}")
    for a in spec["arrays"]:
        lines.append(f"localparam [{aw - 1}:0] REG_{a['name']}_BASE = {aw}'h{a['base']:03X};")
    if spec["arrays"]:
        a0 = spec["arrays"][0]
        lines.append(f"localparam [{aw - 1}:0] REG_MEMBER_STRIDE = {aw}'h{a0['stride']:03X};")
        lines.append(f"localparam integer REG_MEMBER_COUNT = {a0['count']};")
    lines.append("")
    for r in spec["flat"]:
        if "index" in r or r["access"] == "rc":
            continue
        lines.append(f"localparam [31:0] RST_{r['name']} = 32'h{r['reset']:08X};")
    lines.append("")
    for name, words, key, what in (
            ("FIXED_SHARE_WORDS", FIXED_SHARE_WORDS, "fixed_share", "fixed_share: (hw/regs.yaml): a "
             "one-job switch (JOBS = 1) refuses every write to these"),
            ("JOB_SCOPE_WORDS", JOB_SCOPE_WORDS, "job", "scope: job: every job's page has these; "
             "any other word of a page other than 0 is no register")):
        mask = sum(1 << r["addr"] // 4 for r in spec["flat"] if r[key] and not r["server"])
        lines += [f"// {what} (docs/protocol.md section 11); bit k: the register at byte address 4*k.",
                  f"localparam [{words - 1}:0] {name} = {words}'h{mask:0{words // 4}X};"]
    lines.append("")
    base = spec["counter_window"]
    lines.append("// Counter owners (engine: in hw/regs.yaml): bit i of a mask stands for the counter at")
    lines.append("// REG_CNT_WINDOW + 4*i; `both` sets the bit in CNT_AGG and CNT_RPL (a read sums them).")
    lines.append(f"localparam [{aw - 1}:0] REG_CNT_WINDOW = {aw}'h{base:03X};")
    lines.append(f"localparam integer REG_CNT_WINDOW_WORDS = {COUNTER_WINDOW_WORDS};")
    for mask_name, owners in (("AGG", ("agg", "both")), ("RPL", ("rpl", "both")), ("SWITCH", ("switch",))):
        mask = 0
        for r in spec["flat"]:
            if r.get("engine") in owners:
                mask |= 1 << ((r["addr"] - base) // 4)
        lines.append(f"localparam [{COUNTER_WINDOW_WORDS - 1}:0] CNT_{mask_name} = "
                     f"{COUNTER_WINDOW_WORDS}'h{mask:08X};")
    lines.append("")
    return "\n".join(lines)


def render_py(spec: dict[str, Any]) -> str:
    out = [
        '"""Register map constants.',
        "",
        "Generated by ``scripts/gen_regs.py`` from ``hw/regs.yaml``. Do not edit.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from dataclasses import dataclass",
        "",
        "from hostdrv.errors import UnknownRegisterError",
        "",
        "",
        "@dataclass(frozen=True)",
        "class Register:",
        '    """One 32-bit AXI4-Lite register."""',
        "",
        "    name: str",
        "    addr: int",
        "    access: str",
        "    reset: int",
        "    width: int",
        "    param: bool",
        "    doc: str",
        "    server: bool = False",
        '    """Kept by the soft/sim switch server, not by the RTL (not decoded on the board)."""',
        "    job: bool = False",
        '    """Every job has its own copy, in its page (``job_address``); else global (page 0)."""',
        "    admin: bool = False",
        '    """Only the admin key writes it (a job key writes its own page\'s other job registers)."""',
        '    reset_param: str = ""',
        '    """The reset value is this build parameter\'s value (``reset`` at the RTL defaults)."""',
        "",
        "",
        "REGISTERS: dict[str, Register] = {",
    ]
    for r in spec["flat"]:
        out.append(
            f"    {r['name']!r}: Register({r['name']!r}, 0x{r['addr']:03X}, {r['access']!r}, "
            f"0x{r['reset']:X}, {r['width']}, {bool(r['param'])}, {r['doc']!r}"
            + (", server=True" if r["server"] else "") + (", job=True" if r["job"] else "")
            + (", admin=True" if r["admin"] else "")
            + (f", reset_param={r['reset_param']!r}" if r.get("reset_param") else "") + "),"
        )
    out.append("}")
    out.append('"""Every register by name; array entries are ``NAME_<i>``."""')
    out.append("")
    out.append("BY_ADDR: dict[int, Register] = {r.addr: r for r in REGISTERS.values()}")
    out.append("")
    out.append(f"JOB_PAGE = 0x{spec['job_page']:X}")
    out.append('"""Bytes between two jobs\' pages: job j\'s copy of a job register is at j * JOB_PAGE + addr."""')
    out.append("")
    for a in spec["arrays"]:
        out.append(f"{a['name']}_BASE = 0x{a['base']:03X}")
    if spec["arrays"]:
        out.append(f"MEMBER_STRIDE = 0x{spec['arrays'][0]['stride']:X}")
        out.append(f"MEMBER_COUNT = {spec['arrays'][0]['count']}")
    out.append("")
    out.append("COUNTERS: tuple[str, ...] = (")
    for r in spec["flat"]:
        if r["access"] == "rc" and not r["server"]:
            out.append(f"    {r['name']!r},")
    out.append(")")
    out.append('"""The switch\'s counters (RTL and model), register map order."""')
    out.append("")
    out.append("SERVER_COUNTERS: tuple[str, ...] = (")
    for r in spec["flat"]:
        if r["access"] == "rc" and r["server"]:
            out.append(f"    {r['name']!r},")
    out.append(")")
    out.append('"""Counters kept by the soft/sim switch server (``server=True``), not by the RTL."""')
    out.append("")
    for r in spec["flat"]:
        out.append(f"{r['name']} = 0x{r['addr']:03X}")
    out.append("")
    out.append("")
    out.append("def member_reg(field: str, index: int) -> str:")
    out.append('    """Name of member table register ``field`` (e.g. ``"MEMBER_IP"``) of entry ``index``."""')
    out.append("    if not 0 <= index < MEMBER_COUNT:")
    out.append('        raise ValueError(f"member index {index} out of range 0..{MEMBER_COUNT - 1}")')
    out.append('    return f"{field}_{index}"')
    out.append("")
    out.append("")
    out += RULES_PY_HEAD
    out.append("FIXED_SHARE: frozenset[str] = frozenset([")
    out += [f"    {r['name']!r}," for r in spec["flat"] if r["fixed_share"]]
    out.append("])")
    out.append('"""The share registers (fixed_share: in hw/regs.yaml) a one-job switch (``JOBS`` = 1, the RTL\'s)')
    out.append('keeps at their reset values: every write to them is refused (``docs/protocol.md`` section 11)."""')
    out.append("")
    out.append("SELF_CLEARING: dict[str, int] = {")
    for r in spec["flat"]:
        if r.get("self_clear"):
            out.append(f"    {r['name']!r}: 0x{r['self_clear']:X},")
    out.append("}")
    out.append('"""rw register -> its self-clearing bits: they act when written 1, and read 0."""')
    out.append("")
    out.append("WRITE_RULES: dict[str, WriteRule] = {")
    for r in spec["flat"]:
        legal = r.get("legal")
        if not legal:
            continue
        args = []
        for key in ("bits", "max", "multiple"):
            if key in legal:
                args.append(f"{key}=0x{legal[key]:X}" if key == "bits" else f"{key}={legal[key]:#x}"
                            if legal[key] > 0xFFFF else f"{key}={legal[key]}")
        if "range" in legal:
            args.append(f"low={legal['range'][0]}, high={legal['range'][1]!r}")
        if "at_least" in legal:
            args.append(f"at_least={legal['at_least']!r}")
        if legal.get("one_hot"):
            args.append("one_hot=True")
        if "bits_of" in legal:
            args.append(f"bits_of={legal['bits_of']!r}")
        out.append(f"    {r['name']!r}: WriteRule({', '.join(args)}),")
    out.append("}")
    out.append('"""rw register -> the rule a value written to it must keep (beyond its width)."""')
    out.append("")
    return "\n".join(out)


RULES_PY_HEAD = '''
# -- lookup ---------------------------------------------------------------------------


def find(reg: str | int) -> Register | None:
    """The register named ``reg`` (``"AGG_SLOTS"``, ``"MEMBER_IP_3"``) or at byte address
    ``reg`` (in any job's page: :func:`split`); ``None`` when there is none."""
    if isinstance(reg, str):
        return REGISTERS.get(reg)
    return split(reg)[1]


def split(addr: int) -> tuple[int, Register | None]:
    """``(job, register)`` of byte address ``addr``: its page and the register at its offset,
    ``None`` when there is none (a global register's offset in a page other than 0 has none;
    whether the switch has that many jobs is the switch's to say: ``JOBS``)."""
    if isinstance(addr, bool):
        return 0, None
    try:
        a = addr.__index__()  # int, numpy integer
    except (AttributeError, TypeError):
        return 0, None
    job, off = divmod(a, JOB_PAGE) if a >= 0 else (0, -1)
    r = BY_ADDR.get(off)
    return job, (r if r is not None and (job == 0 or r.job) else None)


def job_address(reg: str | int | Register, job: int) -> int:
    """The byte address of job ``job``'s copy of register ``reg`` (a global register: its own,
    for job 0 only).

    Raises
    ------
    UnknownRegisterError
        No such register, or a global register asked for another job than 0.
    """
    r = reg if isinstance(reg, Register) else lookup(reg)
    if job < 0 or (job and not r.job):
        raise UnknownRegisterError(f"{r.name} of job {job}")
    return job * JOB_PAGE + r.addr


def lookup(reg: str | int) -> Register:
    """The register named ``reg`` or at byte address ``reg``, member table entries included.

    Raises
    ------
    UnknownRegisterError
        No such register (a :class:`~hostdrv.errors.RegisterError`, a ``ValueError``).
    """
    r = find(reg)
    if r is None:
        raise UnknownRegisterError(reg)
    return r


def label(addr: int) -> str:
    """The name of the register at ``addr`` (``NAME@job`` in another job's page than 0), or the
    address in hex when it has none."""
    job, r = split(addr)
    return f"0x{addr:03X}" if r is None else (f"{r.name}@{job}" if job else r.name)


# -- write rules (hw/regs.yaml `legal:` and `self_clear:`) --------------------------


@dataclass(frozen=True)
class WriteRule:
    """What a rw register takes beyond its width (``legal:`` in hw/regs.yaml).

    ``high`` and ``at_least`` name registers whose value at the time of the write
    bounds this one.
    """

    bits: int | None = None
    """Only these bits are defined."""
    max: int | None = None
    """At most this."""
    multiple: int | None = None
    """A multiple of this."""
    low: int = 0
    """With ``high``: at least this."""
    high: str | None = None
    """At most this register's value."""
    at_least: str | None = None
    """Not below this register's value."""
    one_hot: bool = False
    """0 or one bit set (one SUME port)."""
    bits_of: str | None = None
    """Only bits 0 .. this register's value - 1."""

'''.splitlines()



def describe_rule(legal: dict[str, Any]) -> str:
    """A ``legal:`` rule in words (docs/registers.md)."""
    parts = []
    if "bits" in legal:
        bits = [str(i) for i in range(32) if legal["bits"] >> i & 1]
        parts.append("only bits " + ", ".join(bits[:-1]) + " and " + bits[-1] + " set")
    if "max" in legal:
        parts.append(f"at most {legal['max']}")
    m = legal.get("multiple")
    if "range" in legal:
        low, high = legal["range"]
        parts.append((f"a multiple of {m} in " if m else "") + f"{low} .. `{high}`")
    elif m:
        parts.append(f"a multiple of 0x{m:X}")
    if "at_least" in legal:
        parts.append(f"at least `{legal['at_least']}`")
    if legal.get("one_hot"):
        parts.append("0 or one-hot")
    if "bits_of" in legal:
        parts.append(f"only bits below `{legal['bits_of']}`")
    return "; ".join(parts) or "(width only)"


def describe_read_back(r: dict[str, Any]) -> str:
    """What a register reads after a taken write, in words (docs/registers.md)."""
    clear = r.get("self_clear", 0)
    if not clear:
        return "the value written"
    if clear == (1 << r.get("width", 32)) - 1:
        return "0 (self-clearing)"
    bits = ", ".join(str(i) for i in range(32) if clear >> i & 1)
    return f"the value written, bit {bits} cleared (self-clearing)"


def render_md(spec: dict[str, Any]) -> str:
    out = [
        "# Register map",
        "",
        "Generated by `scripts/gen_regs.py` from `hw/regs.yaml`; do not edit.",
        "AXI4-Lite, 32-bit registers, byte addresses. Access: `ro` read-only,",
        "`rw` read/write, `rc` 32-bit wrapping counter (cleared by `CTRL` bit 31).",
        "A `param` register reflects a build parameter: its reset column gives the",
        "RTL default (the soft switch takes it from its command line).",
        "",
        "A write of a value a register cannot hold (wider than the register, or",
        "outside the range its description gives) is refused and changes nothing",
        "(no slot is invalidated, no counter cleared): the soft and sim switches",
        "answer status 3 (out of range) on the control channel, naming the rule,",
        "`SwitchControl.write` raises `RegisterError` (`RegisterAccessError`), and the RTL answers",
        "AXI4-Lite `SLVERR`. A write whose strobes cover only some bytes is judged",
        "on the value it would leave. Ranges that depend on another register",
        "(`AGG_THRESHOLD` <= `AGG_MEMBERS`) are checked against that register's",
        "value at the time of the write: write `AGG_MEMBERS` first when it grows,",
        "`AGG_THRESHOLD` first when the members shrink below it",
        "(`SwitchControl.configure_aggregation` does).",
        "",
        "Jobs (`docs/protocol.md` section 11): a register marked *job* has one copy per job,",
        f"job j's at `j * 0x{spec['job_page']:X}` + its address (job 0's at the address itself, page 0,",
        "which also holds every global register); *admin*: only the admin key writes it (a job's",
        "key writes the other job registers of its own page, and no global one); *reset = P*:",
        "its reset value is build parameter P's; *fixed share*: a one-job switch (`JOBS` = 1, the",
        "RTL's today) keeps it at its reset value and refuses every write to it.",
        "",
        "## Write rules",
        "",
        "`legal:` and `self_clear:` in `hw/regs.yaml`; `hostdrv.wire.regmap` carries them",
        "(`WRITE_RULES`, `SELF_CLEARING`, `refusal`, `read_back`, `RegisterFile`), the reference",
        "model judges every write by them, and the board and serial transports predict what",
        "a register reads back after a write from them. Beyond its width, a write to these",
        "registers is refused unless:",
        "",
        "| register | refused unless | reads back after a taken write |",
        "|---|---|---|",
    ]
    for block in spec["blocks"]:
        for r in block["registers"]:
            if r.get("legal") or r.get("self_clear"):
                name = r["name"] + ("[i]" if block.get("array") else "")
                out.append(f"| `{name}` | {describe_rule(r.get('legal') or {})} | "
                           f"{describe_read_back(r)} |")
    out.append("")
    for block in spec["blocks"]:
        out.append(f"## {block['name']}")
        out.append("")
        out.append(block["doc"])
        arr = block.get("array")
        if arr:
            out.append("")
            out.append(f"{arr['count']} entries at `0x{arr['base']:03X} + i * 0x{arr['stride']:X}`.")
        out.append("")
        owned = any("engine" in r for r in block["registers"])
        if owned:
            out.append("Engine: who keeps the counter (`agg` aggregation engine, `rpl` replay engine,")
            out.append("`both` each engine for its own frames, a read returns the sum, `switch` the switch top).")
            out.append("")
            out.append("| address | name | access | engine | description |")
            out.append("|---|---|---|---|---|")
        else:
            out.append("| address | name | access | reset | description |")
            out.append("|---|---|---|---|---|")
        for r in block["registers"]:
            addr = r.get("addr", (arr or {}).get("base", 0) + r.get("offset", 0))
            name = f"`{r['name']}" + ("[i]" if arr else "") + "`"
            reset = "" if r["access"] == "rc" else f"0x{r.get('reset', 0):X}"
            if r.get("param"):
                reset += " (param)"
            if r.get("reset_param"):
                reset += f" (= `{r['reset_param']}`)"
            scope = r.get("scope", block.get("scope", "global"))
            marks = [m for m, on in (("job", scope == "job"), ("admin", r.get("admin")),
                                     ("fixed share", r.get("fixed_share"))) if on]
            if marks:
                name += " (" + ", ".join(marks) + ")"
            fourth = r["engine"] if owned else reset
            out.append(f"| 0x{addr:03X} | {name} | {r['access']} | {fourth} | {r['doc']} |")
        out.append("")
    return "\n".join(out)


def load_protocol(path: Path = PROTOCOL) -> list[dict[str, Any]]:
    """Load and validate the protocol constants: unique names, values that fit their width."""
    groups = yaml.safe_load(path.read_text())["groups"]
    seen: set[str] = set()
    for g in groups:
        for c in g["constants"]:
            c.setdefault("bits", 32)
            if c["name"] in seen:
                raise ValueError(f"constant {c['name']} defined twice")
            seen.add(c["name"])
            if not 0 <= c["value"] < 1 << c["bits"]:
                raise ValueError(f"constant {c['name']}={c['value']:#x} does not fit {c['bits']} bits")
    return groups


def render_proto_vh(groups: list[dict[str, Any]]) -> str:
    lines = [
        "// SPDX-License-Identifier: MIT",
        "// Generated by scripts/gen_regs.py from hw/protocol.yaml. Do not edit.",
        "// Include inside a module body: protocol constants (docs/protocol.md), prefixed NRL_.",
        "",
    ]
    for g in groups:
        lines.append(f"// {g['doc']}")
        for c in g["constants"]:
            b = c["bits"]
            lines.append(f"localparam [{b - 1}:0] NRL_{c['name']} = {b}'h{c['value']:0{(b + 3) // 4}X}; "
                         f"// {c['doc']}")
        lines.append("")
    return "\n".join(lines)


def render_proto_py(groups: list[dict[str, Any]]) -> str:
    out = [
        '"""Protocol constants (``docs/protocol.md``).',
        "",
        "Generated by ``scripts/gen_regs.py`` from ``hw/protocol.yaml``. Do not edit;",
        ":mod:`hostdrv.wire.protocol` re-exports them.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
    ]
    for g in groups:
        out.append(f"# {g['doc']}")
        for c in g["constants"]:
            v = c["value"]
            out.append(f"{c['name']} = {hex(v) if c.get('hex') else v}")
            out.append(f'"""{c["doc"][0].upper() + c["doc"][1:]}."""')
        out.append("")
    return "\n".join(out)


def render_h(spec: dict[str, Any], groups: list[dict[str, Any]]) -> str:
    out = [
        "// SPDX-License-Identifier: MIT",
        "// Generated by scripts/gen_regs.py from hw/protocol.yaml and hw/regs.yaml. Do not edit.",
        "// Protocol constants and the register map for C/C++ (docs/protocol.md, docs/registers.md).",
        "#ifndef NRL_PROTOCOL_H",
        "#define NRL_PROTOCOL_H",
        "",
    ]
    for g in groups:
        out.append(f"/* {g['doc']} */")
        for c in g["constants"]:
            out.append(f"#define NRL_{c['name']} 0x{c['value']:X}u /* {c['doc']} */")
        out.append("")
    out.append("/* Registers: byte addresses, reset values of rw/ro registers */")
    for r in spec["flat"]:
        out.append(f"#define NRL_REG_{r['name']} 0x{r['addr']:03X}u")
    for r in spec["flat"]:
        if r["access"] != "rc" and "index" not in r:
            out.append(f"#define NRL_RST_{r['name']} 0x{r['reset']:X}u")
    counters = [r for r in spec["flat"] if r["access"] == "rc" and not r["server"]]
    out.append(f"#define NRL_COUNTER_COUNT {len(counters)}u")
    out.append("")
    out.append("/* Every register, address order of hw/regs.yaml:")
    out.append("   X(name, address, access, reset, width, param, server, job, admin); access NRL_ACCESS_*;")
    out.append("   job: every job has a copy at job * NRL_JOB_PAGE + address; admin: admin key only */")
    out.append(f"#define NRL_JOB_PAGE 0x{spec['job_page']:X}u")
    out += [f"#define NRL_ACCESS_{a} {i}u" for i, a in enumerate(("RO", "RW", "RC"))]
    out.append("#define NRL_REGISTER_TABLE(X) \\")
    for r in spec["flat"]:
        out.append(f"    X({r['name']}, 0x{r['addr']:03X}u, NRL_ACCESS_{r['access'].upper()}, "
                   f"0x{r['reset']:X}u, {r['width']}u, {int(r['param'])}, {int(r['server'])}, "
                   f"{int(r['job'])}, {int(r['admin'])}) \\")
    out.append("")
    out.append("/* Registers whose reset value is a build parameter's: X(name, parameter) */")
    out.append("#define NRL_RESET_PARAMS(X) \\")
    out += [f"    X({r['name']}, {r['reset_param']}) \\" for r in spec["flat"] if r.get("reset_param")]
    out.append("")
    out += ["/* fixed_share registers: a one-job switch (JOBS = 1) refuses every write to them: X(name) */",
            "#define NRL_FIXED_SHARE(X) \\", *[f"    X({r['name']}) \\" for r in spec["flat"] if r["fixed_share"]], ""]
    out += render_h_rules(spec)
    out.append("#endif /* NRL_PROTOCOL_H */")
    out.append("")
    return "\n".join(out)


H_RULE_CHECKS = ("bits", "max", "multiple", "range", "at_least", "one_hot", "bits_of")  # NRL_RULE_* bit i


def render_h_rules(spec: dict[str, Any]) -> list[str]:
    """``legal:`` / ``self_clear:`` as the C X-macro table ``NRL_WRITE_RULES`` (regmap's rules)."""
    out = ["/* Write rules (hw/regs.yaml legal: and self_clear:; hostdrv.wire.regmap.WRITE_RULES,",
           "   SELF_CLEARING, refusal): X(name, checks, bits, max, multiple, low, high, high_name,",
           "   at_least, at_least_name, self_clear); checks: the NRL_RULE_* that apply; high and",
           "   at_least: a bounding register's address and name; an unused field is 0 or \"\". */"]
    out += [f"#define NRL_RULE_{k.upper()} 0x{1 << i:X}u" for i, k in enumerate(H_RULE_CHECKS)]
    out.append("#define NRL_WRITE_RULES(X) \\")
    for r in spec["flat"]:
        legal, clear = r.get("legal") or {}, r.get("self_clear", 0)
        if legal or clear:
            checks = " | ".join(f"NRL_RULE_{k.upper()}" for k in H_RULE_CHECKS if legal.get(k))
            low, high = legal.get("range", (0, ""))
            least = legal.get("at_least", "")
            out.append(f"    X({r['name']}, {checks or '0u'}, 0x{legal.get('bits', 0):X}u, "
                       f"{legal.get('max', 0)}u, 0x{legal.get('multiple', 0):X}u, {low}u, "
                       f"{f'NRL_REG_{high}' if high else '0u'}, \"{high}\", "
                       f"{f'NRL_REG_{least}' if least else '0u'}, \"{least}\", 0x{clear:X}u) \\")
    out += ["", "/* bits_of rules (NRL_RULE_BITS_OF): X(name, register) only bits 0 .. its value - 1 */",
            "#define NRL_BITS_OF(X) \\"]
    out += [f"    X({r['name']}, NRL_REG_{r['legal']['bits_of']}) \\" for r in spec["flat"]
            if "bits_of" in (r.get("legal") or {})]
    return out + [""]


def render_proto_md(groups: list[dict[str, Any]]) -> str:
    out = ["# Protocol constants", "",
           "Generated by `scripts/gen_regs.py` from `hw/protocol.yaml`; do not edit. The same values",
           "reach the RTL (`hw/rtl/nrl_protocol.vh`), Python (`hostdrv.wire.protocol`) and C/C++",
           "(`hostdrv/wire/nrl_protocol.h`, prefixed `NRL_`); [protocol.md](protocol.md) says what",
           "they mean.", ""]
    for g in groups:
        out += [f"## {g['name']}", "", g["doc"], "", "| name | value | description |", "|---|---|---|"]
        for c in g["constants"]:
            v = c["value"]
            out.append(f"| `{c['name']}` | {hex(v) if c.get('hex') else v} | {c['doc']} |")
        out.append("")
    return "\n".join(out)


def outputs() -> dict[Path, str]:
    """Every generated file and its content."""
    spec = load()
    groups = load_protocol()
    return {OUT_VH: render_vh(spec), OUT_PY: render_py(spec), OUT_MD: render_md(spec),
            OUT_PROTO_VH: render_proto_vh(groups), OUT_PROTO_PY: render_proto_py(groups),
            OUT_PROTO_MD: render_proto_md(groups), OUT_H: render_h(spec, groups)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if any output is out of date")
    args = ap.parse_args(argv)
    stale = []
    for path, text in outputs().items():
        if path.exists() and path.read_text() == text:
            continue
        stale.append(path)
        if not args.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    for p in stale:
        print(f"{'stale' if args.check else 'wrote'}: {p.relative_to(REPO)}")
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
