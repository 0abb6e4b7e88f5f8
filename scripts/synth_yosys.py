#!/usr/bin/env python3
"""Synthesize RTL tops with Yosys ``synth_xilinx -family xc7`` and report resources and logic depth.

For each top (default: every one of fp32_add, grad_agg, replay_engine and
nrl_switch that exists in ``hw/rtl``) the sources come from ``hw/rtl/<top>.f``
(or ``hw/rtl/<top>.v`` alone), parameters from ``--param K=V`` (applied to a
top only if it declares that parameter). The script prints the 7-series
primitive counts (LUT, FF, RAMB36, RAMB18, DSP, CARRY4, plus LUT RAM and SRL)
and the logic depth: ``ltp -noff`` on the flattened netlist with every
sequential or memory primitive (FD*, RAMB*, DSP48*, SRL*, RAM*) removed, so
the longest path counts the LUT/MUXF/CARRY4 cells between two registers.
One ``key=value`` line per top ends the output, e.g.::

    synth top=nrl_switch lut=1234 ff=2345 ramb36=4 ramb18=0 dsp=0 carry=56 lutram=8 srl=0 depth=9 seconds=42.0

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

    def line(self) -> str:
        """The final ``key=value`` summary line."""
        name = f"top={self.top}" + (f" config={self.config}" if self.config else "")
        if not self.ok:
            return f"synth {name} status=fail seconds={self.seconds:.1f} error={self.error!r}"
        kv = " ".join(f"{k}={self.counts.get(k, 0)}" for k in CLASSES)
        return f"synth {name} {kv} depth={self.depth} seconds={self.seconds:.1f}"


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


def yosys_script(top: str, srcs: list[Path], params: dict[str, str], stat: Path, ltp: Path) -> str:
    """The Yosys command script for one top."""
    files = " ".join(str(s) for s in srcs)
    # chparam on the deferred (abstract) top: Yosys 0.23 asserts on
    # `hierarchy -chparam` for a top with generate blocks (replay_engine)
    chparam = [f"chparam -set {k} {v} {top}" for k, v in params.items()]
    return "\n".join([
        f"read_verilog -defer -I{RTL} {files}",
        *chparam,
        f"hierarchy -top {top}",
        f"synth_xilinx -family xc7 -top {top} -flatten -noiopad",
        f"tee -q -o {stat} stat",
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
          config: str = "") -> Result:
    """Synthesize one top (``config``: the named configuration, if any) and collect its numbers."""
    srcs = sources(top)
    declared = declared_params(top, srcs)
    use = {k: v for k, v in params.items() if k in declared}
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"synth_{top}_") as tmp:
        d = Path(tmp)
        stat, ltp, script = d / "stat.txt", d / "ltp.txt", d / "synth.ys"
        script.write_text(yosys_script(top, srcs, use, stat, ltp))
        try:
            r = subprocess.run(["yosys", "-q", "-l", str(d / "yosys.log"), "-s", str(script)],
                               capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return Result(top, False, time.monotonic() - t0, error=f"timeout after {timeout:.0f} s")
        if keep_log is not None and (d / "yosys.log").exists():
            keep_log.mkdir(parents=True, exist_ok=True)
            shutil.copy(d / "yosys.log", keep_log / f"{config or top}.log")
        if r.returncode != 0 or not stat.exists():
            err = (r.stderr or r.stdout).strip().splitlines()
            return Result(top, False, time.monotonic() - t0, error=err[-1] if err else "yosys failed")
        cells = parse_stat(stat.read_text())
        ltp_text = ltp.read_text() if ltp.exists() else ""
        depth = parse_ltp(ltp_text) if ltp_text else -1
    return Result(top, True, time.monotonic() - t0, classify(cells), cells, depth,
                  ltp_endpoints(ltp_text), config=config)


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
        res = synth(t, p, args.timeout, args.log_dir, cfg)
        res.config = cfg
        results.append(res)
        if res.ok:
            c = res.counts
            print(f"   LUT {c['lut']}  FF {c['ff']}  RAMB36 {c['ramb36']}  RAMB18 {c['ramb18']}  "
                  f"DSP {c['dsp']}  CARRY4 {c['carry']}  LUTRAM {c['lutram']}  SRL {c['srl']}  "
                  f"logic depth {res.depth}  ({res.seconds:.1f} s)", flush=True)
            if res.path:
                print(f"   longest path: {res.path}", flush=True)
        else:
            print(f"   FAILED: {res.error}", flush=True)
    for res in results:
        print(res.line())
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
