#!/usr/bin/env python3
"""Line and toggle coverage of the RTL regression (``make coverage``).

1. Runs the cocotb tests (every ``tests/test_*.py`` that builds with
   ``sim.common.runner.run_cocotb``, the Verilator cases, ``slow`` excluded)
   with ``NRL_COVERAGE=1``: Verilator builds with ``--coverage-line
   --coverage-toggle`` and each run writes a ``.dat`` file to
   ``sim_build/coverage/dat``.
2. Merges the ``.dat`` files (Verilator's ``SystemC::Coverage-3`` format: a
   point's counts are summed over runs, instances of one module are one
   module, bus widths add their bits) and writes ``sim_build/coverage/coverage.info``
   (lcov: ``DA`` per source line, each toggle point as a ``BRDA`` branch of its
   line, so genhtml shows toggles as branches).
3. Runs ``genhtml`` (Debian ``lcov``) into ``sim_build/coverage/html`` when it
   is on PATH; ``make coverage`` installs it when missing.
4. Prints each module's line and toggle coverage and ends with one
   ``key=value`` line.

A line's count is the largest count of the coverage points (statement
blocks and branch arms) whose lines include it; a line is covered when that
count is not 0. Verilator's specializations of a parameterized module
(``grad_agg_fifo__W101_D80``) count as the module. Lines of constant
functions (called only in ``localparam``/``parameter`` declarations, so run
at elaboration and never in simulation) are not counted; the table says how
many lines that leaves out. Modules whose source is not under ``hw/`` (Verilog
harnesses of a testbench in ``sim/``) are left out of the table and the totals. ``--report-only`` skips step 1 and reports the ``.dat`` files
already there; ``-k``/``--tests`` narrow the run.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "sim_build" / "coverage"
DAT_DIR = OUT / "dat"
ENGINES = ("grad_agg", "replay_")
"""Module name prefixes of the engines, which must reach ENGINE_TARGET % line coverage."""
ENGINE_TARGET = 95.0


def cocotb_test_files() -> list[Path]:
    """The pytest files that build a cocotb testbench."""
    return sorted(p for p in (REPO / "tests").glob("test_*.py") if "run_cocotb" in p.read_text())


def run_tests(files: list[Path], jobs: str, select: str) -> int:
    env = dict(os.environ, NRL_COVERAGE="1", NRL_COVERAGE_DIR=str(DAT_DIR))
    cmd = [sys.executable, "-m", "pytest", "-q", "-n", jobs, "-m", "not slow", "-k", select,
           *[str(f.relative_to(REPO)) for f in files]]
    print("[coverage]", " ".join(cmd), flush=True)
    return subprocess.call(cmd, cwd=REPO, env=env)


# ---------------------------------------------------------------------------
# Verilator coverage.dat


_POINT = re.compile(r"^C '(.*)' (\d+)\s*$")


def parse_point(key: str) -> dict[str, str]:
    """The fields of one point: ``\\x01`` before each key, ``\\x02`` between key and value."""
    out = {}
    for item in key.split("\x01"):
        if "\x02" in item:
            k, v = item.split("\x02", 1)
            out[k] = v
    return out


def read_dat(paths: list[Path]) -> dict[tuple[str, ...], tuple[dict[str, str], int]]:
    """Points summed over ``paths``, keyed without the instance (``h``) field."""
    points: dict[tuple[str, ...], tuple[dict[str, str], int]] = {}
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = _POINT.match(line)
                if not m:
                    continue
                fields = parse_point(m.group(1))
                key = tuple(fields.get(k, "") for k in ("page", "f", "l", "n", "o", "S"))
                old = points.get(key)
                points[key] = (fields, int(m.group(2)) + (old[1] if old else 0))
    return points


def line_span(fields: dict[str, str]) -> list[int]:
    """Source lines of a point: its ``S`` ranges (``12-14,16``) or its line."""
    spec = fields.get("S")
    if not spec:
        return [int(fields.get("l", "0"))]
    lines: list[int] = []
    for part in spec.split(","):
        a, _, b = part.partition("-")
        lines.extend(range(int(a), int(b or a) + 1))
    return lines


_FUNC = re.compile(r"^\s*function\b[^;]*?(\w+)\s*[(;]")


def elaboration_only_lines(path: str) -> set[int]:
    """Lines of the functions in ``path`` that only parameter declarations call."""
    try:
        src = Path(path).read_text(errors="replace").split("\n")
    except OSError:
        return set()
    out: set[int] = set()
    i = 0
    while i < len(src):
        m = _FUNC.match(src[i])
        if not m:
            i += 1
            continue
        name, start = m.group(1), i
        while i < len(src) and not re.match(r"^\s*endfunction\b", src[i]):
            i += 1
        body = set(range(start + 1, i + 2))
        use = re.compile(rf"\b{re.escape(name)}\s*\(")
        calls = [n + 1 for n, text in enumerate(src)
                 if n + 1 not in body and use.search(text.split("//")[0])]
        if calls and all(re.search(r"\b(localparam|parameter)\b", src[n - 1]) for n in calls):
            out |= body
        i += 1
    return out


@dataclass
class Module:
    name: str
    file: str = ""
    lines: dict[int, int] = field(default_factory=dict)
    toggles: list[tuple[int, str, int]] = field(default_factory=list)
    waived: int = 0

    @property
    def line_hit(self) -> int:
        return sum(1 for c in self.lines.values() if c)

    @property
    def toggle_hit(self) -> int:
        return sum(1 for *_, c in self.toggles if c)


def modules_of(points: dict[tuple[str, ...], tuple[dict[str, str], int]]) -> dict[str, Module]:
    mods: dict[str, Module] = {}
    for fields, count in points.values():
        kind, _, name = fields.get("page", "").partition("/")
        if not name:
            continue
        name = name.split("__")[0]  # a parameter specialization is its module
        mod = mods.setdefault(name, Module(name))
        mod.file = mod.file or fields.get("f", "")
        if kind in ("v_line", "v_branch"):
            for ln in line_span(fields):
                mod.lines[ln] = max(mod.lines.get(ln, 0), count)
        elif kind == "v_toggle":
            mod.toggles.append((int(fields.get("l", "0")), fields.get("o", ""), count))
    for mod in mods.values():
        waive = elaboration_only_lines(mod.file) & set(mod.lines)
        for ln in waive:
            del mod.lines[ln]
        mod.waived = len(waive)
    return mods


def write_info(mods: dict[str, Module], path: Path) -> None:
    """lcov tracefile: per source file its lines (DA) and its toggle points (BRDA)."""
    per_file: dict[str, tuple[dict[int, int], list[tuple[int, str, int]]]] = defaultdict(
        lambda: ({}, []))
    for mod in mods.values():
        lines, toggles = per_file[mod.file]
        for ln, c in mod.lines.items():
            lines[ln] = max(lines.get(ln, 0), c)
        toggles.extend(mod.toggles)
    with open(path, "w") as f:
        f.write("TN:rtl_regression\n")
        for src in sorted(per_file):
            lines, toggles = per_file[src]
            f.write(f"SF:{src}\n")
            for ln in sorted(lines):
                f.write(f"DA:{ln},{lines[ln]}\n")
            f.write(f"LF:{len(lines)}\nLH:{sum(1 for c in lines.values() if c)}\n")
            by_line: dict[int, int] = defaultdict(int)
            for ln, _, c in sorted(toggles):
                f.write(f"BRDA:{ln},0,{by_line[ln]},{c if c else '-'}\n")
                by_line[ln] += 1
            f.write(f"BRF:{len(toggles)}\nBRH:{sum(1 for *_, c in toggles if c)}\n")
            f.write("end_of_record\n")


def genhtml(info: Path, html: Path) -> bool:
    exe = shutil.which("genhtml")
    if exe is None:
        print("[coverage] genhtml not found (Debian package lcov): no HTML report")
        return False
    shutil.rmtree(html, ignore_errors=True)
    r = subprocess.run([exe, "-q", "--branch-coverage", "--title", "netfpga-rl RTL regression",
                        "--legend", "-o", str(html), str(info)], capture_output=True, text=True)
    if r.returncode:
        print(f"[coverage] genhtml failed: {r.stderr.strip()[-2000:]}")
        return False
    return True


def pct(hit: int, total: int) -> float:
    return 100.0 * hit / total if total else 100.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--report-only", action="store_true", help="merge the .dat files already there")
    ap.add_argument("-n", "--jobs", default=os.environ.get("JOBS", "2"), help="pytest-xdist workers")
    ap.add_argument("-k", dest="select", default="verilator",
                    help="pytest -k expression (default: the Verilator cases)")
    ap.add_argument("--tests", nargs="*", type=Path, help="test files (default: every cocotb test)")
    args = ap.parse_args()

    rc = 0
    if not args.report_only:
        shutil.rmtree(DAT_DIR, ignore_errors=True)
        DAT_DIR.mkdir(parents=True)
        files = [p.resolve() for p in args.tests] if args.tests else cocotb_test_files()
        rc = run_tests(files, args.jobs, args.select)
    dats = sorted(DAT_DIR.glob("*.dat"))
    if not dats:
        print(f"[coverage] no .dat files in {DAT_DIR}")
        return rc or 1
    mods = modules_of(read_dat(dats))
    hw = str(REPO / "hw") + os.sep
    harness = sorted(n for n, m in mods.items() if not m.file.startswith(hw))
    for n in harness:
        del mods[n]
    info = OUT / "coverage.info"
    write_info(mods, info)
    html = OUT / "html"
    have_html = genhtml(info, html)

    print(f"\n{'module':<24} {'file':<36} {'lines':>13} {'line %':>7} {'toggles':>15} "
          f"{'toggle %':>8}  not counted")
    lo_engines = []
    tot_l = hit_l = tot_t = hit_t = 0
    for name in sorted(mods):
        m = mods[name]
        lp, tp = pct(m.line_hit, len(m.lines)), pct(m.toggle_hit, len(m.toggles))
        rel = os.path.relpath(m.file, REPO) if m.file.startswith(str(REPO)) else m.file
        note = f"  {m.waived} lines of constant functions" if m.waived else ""
        print(f"{name:<24} {rel:<36} {m.line_hit:>6}/{len(m.lines):<6} {lp:>7.1f} "
              f"{m.toggle_hit:>7}/{len(m.toggles):<7} {tp:>8.1f}{note}")
        if name.startswith(ENGINES) and lp < ENGINE_TARGET:
            lo_engines.append(f"{name}:{lp:.1f}")
        tot_l += len(m.lines)
        hit_l += m.line_hit
        tot_t += len(m.toggles)
        hit_t += m.toggle_hit
    print(f"{'total':<24} {'':<36} {hit_l:>6}/{tot_l:<6} {pct(hit_l, tot_l):>7.1f} "
          f"{hit_t:>7}/{tot_t:<7} {pct(hit_t, tot_t):>8.1f}")
    if harness:
        print(f"(not counted, testbench harnesses outside hw/: {', '.join(harness)})")
    where = html / "index.html" if have_html else info
    print(f"line_pct={pct(hit_l, tot_l):.1f} toggle_pct={pct(hit_t, tot_t):.1f} "
          f"modules={len(mods)} runs={len(dats)} engines_below_{ENGINE_TARGET:.0f}="
          f"{','.join(lo_engines) or 'none'} tests_rc={rc} report={os.path.relpath(where, REPO)}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
