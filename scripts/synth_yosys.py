#!/usr/bin/env python3
"""Synthesize RTL tops with Yosys ``synth_xilinx -family xc7`` and report resources, depth and delay.

For each top (default: every one of fp32_add, grad_agg, replay_engine and
nrl_switch that exists in ``hw/rtl``) the sources come from ``hw/rtl/<top>.f``
(or ``hw/rtl/<top>.v`` alone), read with ``read_verilog -defer`` (every
script in this repository that runs Yosys goes through :func:`synth`),
parameters from ``--param K=V`` (applied to a top only if it declares that
parameter). Mapping is ``synth_xilinx -abc9`` (delay-driven; plain abc for a
design Yosys 0.23's abc9 flow aborts on, ``mapping=abc`` in the line). The
script prints the 7-series primitive counts (LUT, FF, RAMB36, RAMB18, DSP,
CARRY4, plus LUT RAM and SRL), the logic depth (``ltp -noff`` on the
flattened netlist with every sequential or memory primitive removed: the
LUT/MUXF/CARRY4 cells between two registers) and a delay-aware estimate of
the worst register-to-register path in ns (:func:`estimate_timing`: the
cell delays of Yosys's own xc7 timing model, DSP48E1 per its register
configuration, carry chains per CARRY4 pin, block RAM with and without its
output register; wires count zero, so this is the path before routing),
overall and per first-level instance. One ``key=value`` line per top, then
the worst of all, end the output, e.g.::

    synth top=nrl_switch lut=1234 ff=2345 ramb36=4 ramb18=0 dsp=0 carry=56 lutram=8 srl=0 depth=9 path_ns=3.21 mapping=abc9 seconds=42.0
    worst_path_ns=3.21 module=nrl_switch

The aim at the SUME datapath's 200 MHz (5 ns) is <= 3.5 ns per module,
leaving 1.5 ns for routing; Vivado's out-of-context run
(``scripts/sume_build.sh --flow ooc``) is the real check.

``--config NAME`` (repeatable) synthesizes a named configuration instead: a
top with its own parameter overrides (``--param`` still applies on top), and
its line carries ``config=NAME``. ``replay_bram`` / ``replay_ddr`` are the
replay engine with its records in block RAM (``REC_STORE=0``, the default) or
behind its AXI4 master (``REC_STORE=1``, external DDR3)::

    python scripts/synth_yosys.py --config replay_bram --config replay_ddr

Exit status: 0 when every top synthesized, 1 when one failed or timed out,
2 when Yosys is not installed (``make synth`` installs it).

This is a quick, vendor-neutral estimate; timing closure on the board is
Vivado's job (``scripts/sume_build.sh``).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RTL = REPO / "hw" / "rtl"
DEFAULT_TOPS = ("fp32_add", "grad_agg", "replay_engine", "nrl_switch")

# named configurations: top and parameter overrides
CONFIGS: dict[str, tuple[str, dict[str, str]]] = {
    "replay_bram": ("replay_engine", {"REC_STORE": "0"}),
    "replay_ddr": ("replay_engine", {"REC_STORE": "1"}),
}

# cell name patterns per reported class (7-series primitives after synth_xilinx)
CLASSES: dict[str, re.Pattern[str]] = {
    "lut": re.compile(r"^LUT[1-6]$"),
    "ff": re.compile(r"^FD[A-Z_0-9]*$"),
    "ramb36": re.compile(r"^RAMB36"),
    "ramb18": re.compile(r"^RAMB18"),
    "dsp": re.compile(r"^DSP48"),
    "carry": re.compile(r"^CARRY[48]$"),
    "lutram": re.compile(r"^RAM(32|64|128|256)"),
    "srl": re.compile(r"^SRL"),
}
# removed before ltp so paths end at registers and memories
SEQUENTIAL = "t:FD* t:RAMB* t:DSP48* t:SRL* t:RAM32* t:RAM64* t:RAM128* t:RAM256*"


@dataclass
class Result:
    """Outcome of one top's synthesis."""

    top: str
    ok: bool
    seconds: float
    counts: dict[str, int] = field(default_factory=dict)
    cells: dict[str, int] = field(default_factory=dict)
    depth: int = -1
    path: str = ""
    error: str = ""
    config: str = ""
    timing: Timing | None = None
    mapping: str = "abc9"

    def line(self) -> str:
        """The ``key=value`` summary line of this top."""
        name = f"top={self.top}" + (f" config={self.config}" if self.config else "")
        if not self.ok:
            return f"synth {name} status=fail seconds={self.seconds:.1f} error={self.error!r}"
        kv = " ".join(f"{k}={self.counts.get(k, 0)}" for k in CLASSES)
        ns = f" path_ns={self.timing.ns:.2f}" if self.timing is not None else ""
        return f"synth {name} {kv} depth={self.depth}{ns} mapping={self.mapping} seconds={self.seconds:.1f}"

# ---------------------------------------------------------------------------
# delay-aware estimate: longest register-to-register path in ns
#
# Cell delays in ps, from the timing model Yosys ships for its xc7 cells
# (share/xilinx/cells_sim.v, specify blocks and the DSP48E1 functions, taken
# there from Project X-Ray's timing database, slow corner). Wires count zero:
# this is the logic delay before routing, so at 200 MHz (5 ns) the aim is
# <= 3.5 ns, leaving 1.5 ns for the routes Vivado adds.

LUT_PIN_PS = (642, 631, 472, 407, 238, 127)  # LUT6 I0..I5; a LUTk uses the last k
MUXF_PS = {"MUXF7": {"I0": 217, "I1": 223, "S": 296}, "MUXF8": {"I0": 104, "I1": 94, "S": 273}}
# CARRY4 (input port, bit, output port, bit, ps)
CARRY4_ARCS = (
    ("CYINIT", 0, "O", 0, 482), ("S", 0, "O", 0, 223), ("CI", 0, "O", 0, 222), ("CYINIT", 0, "O", 1, 598),
    ("DI", 0, "O", 1, 407), ("S", 0, "O", 1, 400), ("S", 1, "O", 1, 205), ("CI", 0, "O", 1, 334),
    ("CYINIT", 0, "O", 2, 584), ("DI", 0, "O", 2, 556), ("DI", 1, "O", 2, 537), ("S", 0, "O", 2, 523),
    ("S", 1, "O", 2, 558), ("S", 2, "O", 2, 226), ("CI", 0, "O", 2, 239), ("CYINIT", 0, "O", 3, 642),
    ("DI", 0, "O", 3, 615), ("DI", 1, "O", 3, 596), ("DI", 2, "O", 3, 438), ("S", 0, "O", 3, 582),
    ("S", 1, "O", 3, 618), ("S", 2, "O", 3, 330), ("S", 3, "O", 3, 227), ("CI", 0, "O", 3, 313),
    ("CYINIT", 0, "CO", 0, 536), ("DI", 0, "CO", 0, 379), ("S", 0, "CO", 0, 340), ("CI", 0, "CO", 0, 271),
    ("CYINIT", 0, "CO", 1, 494), ("DI", 0, "CO", 1, 465), ("DI", 1, "CO", 1, 445), ("S", 0, "CO", 1, 433),
    ("S", 1, "CO", 1, 469), ("CI", 0, "CO", 1, 157), ("CYINIT", 0, "CO", 2, 592), ("DI", 0, "CO", 2, 540),
    ("DI", 1, "CO", 2, 520), ("DI", 2, "CO", 2, 356), ("S", 0, "CO", 2, 512), ("S", 1, "CO", 2, 548),
    ("S", 2, "CO", 2, 292), ("CI", 0, "CO", 2, 228), ("CYINIT", 0, "CO", 3, 580), ("DI", 0, "CO", 3, 526),
    ("DI", 1, "CO", 3, 507), ("DI", 2, "CO", 3, 398), ("DI", 3, "CO", 3, 385), ("S", 0, "CO", 3, 508),
    ("S", 1, "CO", 3, 528), ("S", 2, "CO", 3, 378), ("S", 3, "CO", 3, 380), ("CI", 0, "CO", 3, 114),
)
FF_CLK_Q_PS = 303
FF_SETUP_PS = {"D": 0, "CE": 109, "R": 404, "S": 404, "CLR": 404, "PRE": 404}
BRAM_CLK_DO_PS = {False: 2454, True: 882}  # without / with the output register (DO*_REG)
BRAM_SETUP_PS = {"ADDR": 566, "WE": 532, "DI": 737, "DIP": 737, "REGCE": 360, "RSTREG": 342,
                 "EN": 566, "RSTRAM": 566}
LUTRAM_CLK_O_PS = 1153
LUTRAM_SETUP_PS = {"D": 453, "WE": 654, "A": 362}
SRL_CLK_Q_PS = 1472
CLOCK_PORTS = {"C", "CLK", "CLKARDCLK", "CLKBWRCLK", "WCLK", "CLKA", "CLKB"}


def _param_int(params: dict[str, str], name: str, default: int = 0) -> int:
    v = params.get(name, default)
    if isinstance(v, int):
        return v
    s = str(v).strip()
    if s and set(s) <= {"0", "1", "x", "z"}:  # Yosys JSON: binary strings
        return int(s.replace("x", "0").replace("z", "0"), 2)
    return default


def _param_str(params: dict[str, str], name: str, default: str) -> str:
    v = params.get(name)
    if v is None:
        return default
    s = str(v).strip()
    if s and set(s) <= {"0", "1"} and len(s) % 8 == 0:  # a string parameter as bits
        s = bytes(int(s[i:i + 8], 2) for i in range(0, len(s), 8)).decode(errors="replace").strip("\0 ")
    return s


def _dsp_timing(params: dict[str, str]) -> tuple[dict[tuple[str, str], int], dict[str, int], dict[str, int]]:
    """DSP48E1: (combinational arcs, clock-to-output arrivals, input setups) for its configuration."""
    r = {k: _param_int(params, k, 1 if k in ("AREG", "BREG") else 0)
         for k in ("AREG", "BREG", "CREG", "DREG", "ADREG", "MREG", "PREG")}
    mult = _param_str(params, "USE_MULT", "MULTIPLY") == "MULTIPLY"
    dport = _param_str(params, "USE_DPORT", "FALSE") == "TRUE"
    comb: dict[tuple[str, str], int] = {}
    setup: dict[str, int] = {}
    if r["PREG"] == 0 and r["MREG"] == 0 and r["AREG"] == 0 and r["ADREG"] == 0:
        comb[("A", "P")] = 3806 if dport else 2823 if mult else 1523
        comb[("A", "PCOUT")] = 3954 if dport else 2970 if mult else 1671
    else:
        setup["A"] = 254 if r["AREG"] else (1416 if r["MREG"] else 2739) if mult else 1441
    if r["PREG"] == 0 and r["MREG"] == 0 and r["BREG"] == 0:
        comb[("B", "P")] = 2690 if mult else 1509
        comb[("B", "PCOUT")] = 2838 if mult else 1658
    else:
        setup["B"] = 324 if r["BREG"] else 1285 if r["MREG"] else 2608 if mult else 1428
    if r["PREG"] == 0 and r["CREG"] == 0:
        comb[("C", "P")] = 1325
        comb[("C", "PCOUT")] = 1474
    else:
        setup["C"] = 168 if r["CREG"] else 1244
    if dport:
        if r["PREG"] == 0 and r["MREG"] == 0 and r["ADREG"] == 0 and r["DREG"] == 0:
            comb[("D", "P")] = 3717
            comb[("D", "PCOUT")] = 3700
        else:
            setup["D"] = 248 if r["DREG"] else 1195 if r["ADREG"] else 2310 if r["MREG"] else 3635
    if r["PREG"] == 0:
        comb[("PCIN", "P")] = 1107
        comb[("PCIN", "PCOUT")] = 1255
    else:
        setup["PCIN"] = 1025
    arrival: dict[str, int] = {}
    if any(r.values()):
        if r["PREG"]:
            p, pc = 329, 435
        elif r["CREG"] or r["MREG"]:
            p, pc = 1687, 1835
        elif mult:
            p, pc = (3935, 4083) if dport else (2952, 3098)
        else:
            p, pc = 1632, 1780
        arrival = {"P": p, "PCOUT": pc}
    return comb, arrival, setup


def _bram_setup(port: str) -> int | None:
    for prefix, ps in BRAM_SETUP_PS.items():
        if port.startswith(prefix):
            return ps
    return None


@dataclass
class Timing:
    """Worst register-to-register path of one netlist (delays before routing)."""

    ns: float
    start: str
    end: str
    levels: int
    by_instance: dict[str, float] = field(default_factory=dict)
    # per first-level instance: the start and end point of its worst path
    paths: dict[str, tuple[str, str]] = field(default_factory=dict)


def estimate_timing(netlist: dict, top: str) -> Timing:
    """Longest path through the xc7 cells of Yosys JSON ``netlist`` (module ``top``, flattened).

    Start points: flip-flop, block RAM, LUT RAM, SRL and registered DSP outputs
    (clock to output) and the module inputs (0); end points: their data inputs
    (plus setup) and the module outputs. ``by_instance`` holds the worst path
    ending in each first-level instance (the part of the end point's name
    before the first ``.``), so per-submodule figures come from one run.
    """
    mod = netlist["modules"][top]
    names: dict[int, str] = {}
    for name, net in mod.get("netnames", {}).items():
        for i, b in enumerate(net["bits"]):
            if isinstance(b, int) and (b not in names or not net.get("hide_name")):
                names[b] = f"{name}[{i}]" if len(net["bits"]) > 1 else name
    # per net bit: its driver's arcs (input bit, delay) or a start arrival
    drv_arcs: dict[int, list[tuple[int, int]]] = {}
    start_at: dict[int, int] = {}
    endpoints: list[tuple[int, int, str]] = []  # (bit, setup, cell name)
    unknown: set[str] = set()
    for cname, cell in mod["cells"].items():
        ctype = cell["type"].lstrip("\\$")
        conns: dict[str, list] = cell["connections"]
        dirs: dict[str, str] = cell.get("port_directions", {})
        params = cell.get("parameters", {})

        def bits(port: str, conns: dict[str, list] = conns) -> list:
            return conns.get(port, [])

        def arc(pin: str, pout: str, ps: int, pin_bit: int | None = None, pout_bit: int | None = None) -> None:
            ins = bits(pin) if pin_bit is None else bits(pin)[pin_bit:pin_bit + 1]
            outs = bits(pout) if pout_bit is None else bits(pout)[pout_bit:pout_bit + 1]
            for o in outs:
                if isinstance(o, int):
                    drv_arcs.setdefault(o, []).extend((i, ps) for i in ins if isinstance(i, int))

        def start(port: str, ps: int) -> None:
            for o in bits(port):
                if isinstance(o, int):
                    start_at[o] = max(start_at.get(o, 0), ps)

        out_bits = [b for p, d in dirs.items() if d == "output" for b in conns.get(p, []) if isinstance(b, int)]
        label = next((names[b] for b in out_bits if b in names and not names[b].startswith("$")),
                     cname.lstrip("\\"))

        def end(port: str, ps: int, label: str = label) -> None:
            endpoints.extend((b, ps, label) for b in bits(port) if isinstance(b, int))

        m = re.fullmatch(r"LUT([1-6])", ctype)
        if m:
            k = int(m.group(1))
            for i in range(k):
                arc(f"I{i}", "O", LUT_PIN_PS[6 - k + i])
        elif ctype in MUXF_PS:
            for p, ps in MUXF_PS[ctype].items():
                arc(p, "O", ps)
        elif ctype == "CARRY4":
            for pin, ib, pout, ob, ps in CARRY4_ARCS:
                arc(pin, pout, ps, ib, ob)
        elif re.fullmatch(r"FD[A-Z]*", ctype):
            start("Q", FF_CLK_Q_PS)
            for p in conns:
                if p in FF_SETUP_PS:
                    end(p, FF_SETUP_PS[p])
        elif ctype.startswith("RAMB"):
            for p, d in dirs.items():
                if d == "output" and p.startswith("DO"):
                    reg = _param_int(params, "DOA_REG" if "A" in p[2:4] or p in ("DOADO", "DOPADOP")
                                     else "DOB_REG")
                    start(p, BRAM_CLK_DO_PS[bool(reg)])
                elif d == "input" and p not in CLOCK_PORTS:
                    s = _bram_setup(p)
                    if s is not None:
                        end(p, s)
        elif ctype.startswith("DSP48"):
            comb, arrival, setup = _dsp_timing(params)
            for (pin, pout), ps in comb.items():
                arc(pin, pout, ps)
            for p, ps in arrival.items():
                start(p, ps)
            for p, ps in setup.items():
                end(p, ps)
            for p in ("CEP", "CEM", "CEA2", "CEB2", "RSTP", "RSTM"):
                end(p, 400)
        elif re.match(r"RAM\d+", ctype):
            wide = 368 if re.match(r"RAM(128|256)", ctype) else 0
            outs = [p for p, d in dirs.items() if d == "output"]
            for p, d in dirs.items():
                if d != "input" or p in CLOCK_PORTS:
                    continue
                if re.match(r"(A|DPRA|ADDR)", p):
                    for o in outs:
                        arc(p, o, 642 + wide)
                    end(p, LUTRAM_SETUP_PS["A"])
                elif p.startswith("WE"):
                    end(p, LUTRAM_SETUP_PS["WE"])
                else:
                    end(p, LUTRAM_SETUP_PS["D"])
            for o in outs:
                start(o, LUTRAM_CLK_O_PS)
        elif ctype.startswith("SRL"):
            for p in conns:
                if p == "A" or re.fullmatch(r"A\d", p):
                    arc(p, "Q", 642)
            start("Q", SRL_CLK_Q_PS)
            start("Q31", 1114)
            end("D", 173)
            end("CE", 109)
        elif ctype in ("BUFG", "IBUF", "OBUF", "INV", "VCC", "GND"):
            if ctype == "INV":
                arc("I", "O", 0)
        else:
            unknown.add(ctype)
    if unknown:
        raise ValueError(f"no timing model for cell types {sorted(unknown)}")
    for pname, port in mod.get("ports", {}).items():
        if port["direction"] == "output":
            endpoints.extend((b, 0, pname) for b in port["bits"] if isinstance(b, int))

    # arrival per bit, iteratively (the graph is acyclic between registers)
    arrival: dict[int, tuple[int, int, int]] = {}  # bit -> (ps, from bit or -1, levels)

    def resolve(root: int) -> tuple[int, int, int]:
        stack = [root]
        while stack:
            b = stack[-1]
            if b in arrival:
                stack.pop()
                continue
            pending = [i for i, _ in drv_arcs.get(b, ()) if i not in arrival]
            if pending:
                if len(stack) > 10_000_000:
                    raise ValueError("combinational loop in the netlist")
                stack.extend(pending)
                continue
            best = (start_at.get(b, 0), -1, 0)
            for i, ps in drv_arcs.get(b, ()):
                a = arrival[i][0] + ps
                if a > best[0]:
                    best = (a, i, arrival[i][2] + 1)
            arrival[b] = best
            stack.pop()
        return arrival[root]

    def origin(b: int) -> str:
        while arrival[b][1] >= 0:
            b = arrival[b][1]
        return names.get(b, f"bit {b}")

    worst = (-1, -1, "", 0)
    by_inst: dict[str, float] = {}
    inst_end: dict[str, tuple[int, int, str]] = {}  # instance -> (ps, end bit, end name)
    for b, setup, cname in endpoints:
        a, _, lv = resolve(b)
        total = a + setup
        inst = cname.split(".")[0] if "." in cname else "(top)"
        by_inst[inst] = max(by_inst.get(inst, 0.0), total / 1000)
        if total > inst_end.get(inst, (-1, -1, ""))[0]:
            inst_end[inst] = (total, b, cname)
        if total > worst[0]:
            worst = (total, b, cname, lv)
    paths = {inst: (origin(b), cname) for inst, (_, b, cname) in inst_end.items()}
    if worst[1] < 0:
        return Timing(0.0, "", "", 0, by_inst, paths)
    return Timing(worst[0] / 1000, origin(worst[1]), worst[2], worst[3], by_inst, paths)


def sources(top: str) -> list[Path]:
    """Source files of ``top``: its ``.f`` list, or its single ``.v``."""
    flist = RTL / f"{top}.f"
    if flist.exists():
        out = []
        for line in flist.read_text().splitlines():
            line = line.split("//")[0].split("#")[0].strip()
            if line:
                out.append((flist.parent / line).resolve())
        return out
    return [RTL / f"{top}.v"]


def available(top: str) -> bool:
    """Whether ``top`` and all its sources exist."""
    srcs = sources(top)
    return bool(srcs) and all(s.exists() for s in srcs)


def declared_params(top: str, srcs: list[Path]) -> set[str]:
    """Parameter names the module ``top`` declares (a light-weight scan)."""
    for s in srcs:
        text = s.read_text(errors="replace")
        m = re.search(rf"\bmodule\s+{re.escape(top)}\b(.*?)\)\s*;", text, re.S)
        if m:
            return set(re.findall(r"\bparameter\s+(?:\[[^\]]*\]\s*)?(?:integer\s+)?(\w+)", m.group(1)))
    return set()


def yosys_script(top: str, srcs: list[Path], params: dict[str, str], stat: Path, ltp: Path,
                 netlist: Path | None = None, abc9: bool = True) -> str:
    """The Yosys command script for one top (``netlist``: also write the mapped netlist as JSON;
    ``abc9``: delay-driven LUT mapping, ``synth_xilinx -abc9``)."""
    files = " ".join(str(s) for s in srcs)
    # chparam on the deferred (abstract) top: Yosys 0.23 asserts on
    # `hierarchy -chparam` for a top with generate blocks (replay_engine)
    chparam = [f"chparam -set {k} {v} {top}" for k, v in params.items()]
    return "\n".join([
        f"read_verilog -defer -I{RTL} {files}",
        *chparam,
        f"hierarchy -top {top}",
        f"synth_xilinx -family xc7 -top {top} -flatten -noiopad" + (" -abc9" if abc9 else ""),
        f"tee -q -o {stat} stat",
        *([f"write_json {netlist}"] if netlist is not None else []),
        f"delete {SEQUENTIAL}",
        f"tee -q -o {ltp} ltp -noff",
        "",
    ])


def parse_stat(text: str) -> dict[str, int]:
    """Cell type counts from Yosys ``stat`` output."""
    cells: dict[str, int] = {}
    in_cells = False
    for line in text.splitlines():
        if "Number of cells" in line:
            in_cells = True
            continue
        if in_cells:
            m = re.match(r"^\s+(\S+)\s+(\d+)\s*$", line)
            if m:
                cells[m.group(1).lstrip("\\$")] = cells.get(m.group(1).lstrip("\\$"), 0) + int(m.group(2))
            elif line.strip():
                in_cells = False
    return cells


def classify(cells: dict[str, int]) -> dict[str, int]:
    """Sum cell counts into the reported classes."""
    return {k: sum(n for c, n in cells.items() if pat.match(c)) for k, pat in CLASSES.items()}


def parse_ltp(text: str) -> int:
    """Longest path length from Yosys ``ltp`` output (0 when there is no path)."""
    m = re.findall(r"length=(\d+)", text)
    return max(int(x) for x in m) if m else 0


def ltp_endpoints(text: str) -> str:
    """``start -> end`` net names of the longest path in Yosys ``ltp`` output."""
    nodes = re.findall(r"^\s+\d+:\s+(\S+(?: \[\d+\])?)", text, re.M)
    return f"{nodes[0]} -> {nodes[-1]}" if nodes else ""


def synth(top: str, params: dict[str, str], timeout: float, keep_log: Path | None,
          config: str = "", abc9: bool = True) -> Result:
    """Synthesize one top (``config``: the named configuration, if any) and collect its numbers
    (``abc9=False``: map with plain abc from the start)."""
    srcs = sources(top)
    declared = declared_params(top, srcs)
    use = {k: v for k, v in params.items() if k in declared}
    t0 = time.monotonic()
    if not abc9:
        return _synth_once(top, srcs, use, timeout, keep_log, config, t0, abc9=False)
    res = _synth_once(top, srcs, use, timeout, keep_log, config, t0, abc9=True)
    if not res.ok and not res.error.startswith("timeout") and not res.error.startswith("timing"):
        # Yosys 0.23's abc9 flow aborts on some designs (a std::vector range check in
        # replay_engine): map those with plain abc; the delay estimate works on either netlist
        print(f"   note: synth_xilinx -abc9 failed ({res.error}); mapping with abc instead", flush=True)
        res = _synth_once(top, srcs, use, timeout, keep_log, config, t0, abc9=False)
    return res


def _synth_once(top: str, srcs: list[Path], use: dict[str, str], timeout: float, keep_log: Path | None,
                config: str, t0: float, abc9: bool) -> Result:
    mapping = "abc9" if abc9 else "abc"
    with tempfile.TemporaryDirectory(prefix=f"synth_{top}_") as tmp:
        d = Path(tmp)
        stat, ltp, script, net = d / "stat.txt", d / "ltp.txt", d / "synth.ys", d / "netlist.json"
        script.write_text(yosys_script(top, srcs, use, stat, ltp, net, abc9))
        try:
            r = subprocess.run(["yosys", "-q", "-l", str(d / "yosys.log"), "-s", str(script)],
                               capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return Result(top, False, time.monotonic() - t0, error=f"timeout after {timeout:.0f} s")
        if keep_log is not None and (d / "yosys.log").exists():
            keep_log.mkdir(parents=True, exist_ok=True)
            shutil.copy(d / "yosys.log", keep_log / f"{config or top}.{mapping}.log")
        if r.returncode != 0 or not stat.exists():
            err = (r.stderr or r.stdout).strip().splitlines()
            return Result(top, False, time.monotonic() - t0, error=err[-1].strip() if err else "yosys failed")
        cells = parse_stat(stat.read_text())
        ltp_text = ltp.read_text() if ltp.exists() else ""
        depth = parse_ltp(ltp_text) if ltp_text else -1
        try:
            timing = estimate_timing(json.loads(net.read_text()), top)
        except (OSError, ValueError, KeyError) as e:
            return Result(top, False, time.monotonic() - t0, error=f"timing estimate: {e}")
    return Result(top, True, time.monotonic() - t0, classify(cells), cells, depth,
                  ltp_endpoints(ltp_text), config=config, timing=timing, mapping=mapping)


def parse_params(items: list[str]) -> dict[str, str]:
    """``K=V`` strings to a dict; raises ``SystemExit`` on a malformed item."""
    out: dict[str, str] = {}
    for item in items:
        k, sep, v = item.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_]\w*", k) or not v:
            raise SystemExit(f"--param {item!r}: expected NAME=VALUE")
        out[k] = v
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--top", action="append", default=[],
                    help="top module to synthesize (repeatable; default: all of "
                         + ", ".join(DEFAULT_TOPS) + " that exist)")
    ap.add_argument("--config", action="append", default=[], choices=sorted(CONFIGS),
                    help="named configuration (top and parameters) to synthesize (repeatable)")
    ap.add_argument("--param", action="append", default=[], metavar="K=V",
                    help="parameter override, applied to every top that declares it (repeatable)")
    ap.add_argument("--timeout", type=float, default=3600.0,
                    help="seconds allowed per top (default 3600)")
    ap.add_argument("--log-dir", type=Path, default=None,
                    help="keep each top's full Yosys log here")
    ap.add_argument("--no-abc9", action="store_true",
                    help="map with plain abc (not delay-driven) instead of trying abc9 first: "
                         "saves the failed abc9 run on a design Yosys 0.23's abc9 aborts on")
    args = ap.parse_args(argv)

    if shutil.which("yosys") is None:
        print("error: yosys not found on PATH; `make synth` installs it "
              "(Debian/Ubuntu: apt-get install yosys)", file=sys.stderr)
        return 2
    params = parse_params(args.param)
    # (top, parameters, config name) per run
    runs: list[tuple[str, dict[str, str], str]] = [
        (CONFIGS[c][0], {**CONFIGS[c][1], **params}, c) for c in args.config]
    if args.top or not runs:
        tops = args.top or [t for t in DEFAULT_TOPS if available(t)]
        runs += [(t, params, "") for t in tops]
    if not runs:
        print("error: no synthesizable top found in hw/rtl", file=sys.stderr)
        return 1
    for t, _, _ in runs:
        if not available(t):
            print(f"error: top {t!r}: missing sources {[str(s) for s in sources(t) if not s.exists()]}",
                  file=sys.stderr)
            return 1

    results = []
    for t, p, cfg in runs:
        print(f"== {t}{f' ({cfg})' if cfg else ''}: synth_xilinx -family xc7 ...", flush=True)
        res = synth(t, p, args.timeout, args.log_dir, cfg, abc9=not args.no_abc9)
        res.config = cfg
        results.append(res)
        if res.ok:
            c = res.counts
            print(f"   LUT {c['lut']}  FF {c['ff']}  RAMB36 {c['ramb36']}  RAMB18 {c['ramb18']}  "
                  f"DSP {c['dsp']}  CARRY4 {c['carry']}  LUTRAM {c['lutram']}  SRL {c['srl']}  "
                  f"logic depth {res.depth}  ({res.seconds:.1f} s)", flush=True)
            if res.path:
                print(f"   longest path: {res.path}", flush=True)
            tm = res.timing
            if tm is not None:
                print(f"   worst path {tm.ns:.2f} ns before routing ({tm.levels} cells): "
                      f"{tm.start} -> {tm.end}", flush=True)
                for inst, ns in sorted(tm.by_instance.items(), key=lambda kv: -kv[1]):
                    frm, to = tm.paths.get(inst, ("", ""))
                    print(f"     {ns:5.2f} ns  ending in {inst}: {frm} -> {to}", flush=True)
        else:
            print(f"   FAILED: {res.error}", flush=True)
    for res in results:
        print(res.line())
    timed = [r for r in results if r.ok and r.timing is not None]
    if timed:
        w = max(timed, key=lambda r: r.timing.ns if r.timing else 0.0)
        print(f"worst_path_ns={w.timing.ns if w.timing else 0.0:.2f} module={w.config or w.top}")
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
