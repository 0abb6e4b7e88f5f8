#!/usr/bin/env python3
"""Lint every RTL top with ``verilator --lint-only -Wall`` (and check Icarus elaborates it).

Tops are the file lists ``hw/rtl/*.f`` plus single-file modules without one.
Exit status is non-zero when any top has a warning or an error.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sim.common.runner import RTL, read_filelist, setup_tool_env  # noqa: E402


def tops() -> dict[str, list[Path]]:
    """Map of top module name to its sources."""
    out: dict[str, list[Path]] = {}
    listed: set[Path] = set()
    for f in sorted(RTL.glob("*.f")):
        srcs = read_filelist(f)
        out[f.stem] = srcs
        listed.update(srcs)
    for v in sorted(RTL.glob("*.v")):
        if v.resolve() not in listed:
            out[v.stem] = [v]
    return out


VARIANTS: dict[str, list[dict[str, int]]] = {
    "nrl_axil_split": [{"JOBS": 4, "ADDR_WIDTH": 16}, {"JOBS": 8, "ADDR_WIDTH": 16}, {"JOBS": 3, "ADDR_WIDTH": 13}],
    "grad_agg": [{"JOBS": 4}, {"JOBS": 8}, {"JOBS": 3}, {"JOBS": 4, "DATA_WIDTH": 512}],
    "replay_engine": [{"JOBS": 4}, {"JOBS": 8}, {"JOBS": 3}, {"JOBS": 4, "DATA_WIDTH": 512},
                      {"JOBS": 4, "CAPACITY": 64, "RECORD_BYTES": 128}],
    "nrl_switch": [{"JOBS": 4}, {"JOBS": 8}],
}
"""Parameter sets linted besides a top's defaults (the job dimension, docs/protocol.md section 11)."""


def main() -> int:
    setup_tool_env()
    bad = 0
    runs = [(top, srcs, {}) for top, srcs in tops().items()]
    runs += [(top, tops()[top], params) for top, sets in VARIANTS.items() for params in sets]
    for top, srcs, params in runs:
        gs = [f"-G{k}={v}" for k, v in params.items()]
        ps = [f"-P{top}.{k}={v}" for k, v in params.items()]
        cmd = ["verilator", "--lint-only", "-Wall", f"-I{RTL}", "--top-module", top, *gs, *map(str, srcs)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        ok = r.returncode == 0 and "%Warning" not in r.stderr
        msg = "ok" if ok else "FAIL"
        if shutil.which("iverilog"):
            r2 = subprocess.run(["iverilog", "-g2005", "-o", "/dev/null", f"-I{RTL}", "-s", top, *ps, *map(str, srcs)],
                                capture_output=True, text=True)
            if r2.returncode != 0:
                ok = False
                msg = "FAIL (iverilog)"
                r = r2
        print(f"{top:24s} {' '.join(gs):36s} {msg}")
        if not ok:
            bad += 1
            print(r.stderr or r.stdout)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
