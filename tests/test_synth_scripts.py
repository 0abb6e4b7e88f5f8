"""Cheap checks of the synthesis and board scripts; none needs Vivado.

* the Vivado Tcl (hw/boards/sume/build.tcl) names only files that exist, and
  its file lists are complete (nrl_switch.f carries both engines' lists);
* build.tcl runs under plain tclsh with the Vivado commands stubbed: the ooc
  flow reads exactly the listed sources (the full flow's dry run, on a
  stand-in SUME tree built like the real reference project, is
  tests/test_sume_flow.py);
* the SUME wrapper lints clean (verilator -Wall) and elaborates on Icarus;
* scripts/sume_build.sh and scripts/sume_flash.sh stop with a clear message
  when Vivado is not on PATH;
* scripts/synth_yosys.py parses Yosys output, and synthesizes a tiny top
  (`make setup` installs yosys).

A missing tclsh, verilator, iverilog or yosys skips the tests that need it
(tests/toolcheck.py), or fails them under CI.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SUME = REPO / "hw" / "boards" / "sume"
RTL = REPO / "hw" / "rtl"
BUILD_TCL = SUME / "build.tcl"

sys.path.insert(0, str(REPO / "scripts"))
import synth_yosys  # noqa: E402
from toolcheck import require_tool  # noqa: E402

from sim.common.runner import read_filelist, setup_tool_env  # noqa: E402


def tcl_repo_paths(tcl: Path) -> list[Path]:
    """Repository paths a Tcl script names as ``[file join $repo <path>]``."""
    return [REPO / m for m in re.findall(r"\$repo\s+([\w./-]+)\]", tcl.read_text())]


def wrapper_sources() -> list[Path]:
    return read_filelist(RTL / "nrl_switch.f") + read_filelist(SUME / "nf_nrl_top.f")


# ---------------------------------------------------------------------------
# Tcl and file lists


def test_build_tcl_references_existing_files() -> None:
    paths = tcl_repo_paths(BUILD_TCL)
    names = {p.name for p in paths}
    assert {"nrl_switch.f", "nf_nrl_top.f", "nrl.xdc"} <= names, names
    for p in paths:
        if p.suffix:  # folders (hw/rtl, build/sume) need not exist
            assert p.exists(), f"build.tcl names {p.relative_to(REPO)}, which does not exist"
    # literal read_verilog / read_xdc / source arguments, if any
    for line in BUILD_TCL.read_text().splitlines():
        m = re.match(r"\s*(?:read_verilog|read_xdc|source)\s+([^$\[]*)$", line)
        for path in re.findall(r"[^\s\"{}]+\.(?:v|vh|sv|xdc|tcl|f)\b", m.group(1) if m else ""):
            assert (SUME / path).exists() or (REPO / path).exists(), line


def test_file_lists_exist_and_are_complete() -> None:
    for flist in [*RTL.glob("*.f"), SUME / "nf_nrl_top.f"]:
        for src in read_filelist(flist):
            assert src.exists(), f"{flist.name} lists {src}, which does not exist"
    switch = {p.name for p in read_filelist(RTL / "nrl_switch.f")}
    for engine in ("grad_agg.f", "replay_engine.f"):
        missing = {p.name for p in read_filelist(RTL / engine)} - switch
        assert not missing, f"nrl_switch.f lacks {sorted(missing)} of {engine}"


TCL_STUBS = r"""
set ::reads {}
set ::synth {}
proc read_verilog {args} { lappend ::reads [lindex $args end] }
proc read_xdc {args} { lappend ::xdcs [lindex $args end] }
proc synth_design {args} { set ::synth $args }
foreach c {write_checkpoint report_timing_summary report_utilization report_clock_utilization
           opt_design place_design phys_opt_design route_design open_run create_project
           launch_runs set_property current_fileset} {
    proc $c {args} {}
}
proc get_timing_paths {args} { return path }
proc get_runs {args} { return impl_1 }
proc get_property {name args} {
    switch -- $name {
        SLACK { return 0.125 }
        PROGRESS { return 100% }
        DIRECTORY { return $::env(FAKE_RUN_DIR) }
    }
    return ""
}
"""


def run_tclsh(tmp: Path, args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    driver = tmp / "driver.tcl"
    driver.write_text(TCL_STUBS + f"set ::argv {{{' '.join(args)}}}\nsource {{{BUILD_TCL}}}\n"
                      "puts \"READS [join $::reads \\n]\"\nputs \"SYNTH $::synth\"\n")
    return subprocess.run(["tclsh", str(driver)], capture_output=True, text=True, cwd=tmp,
                          env={**os.environ, **env}, timeout=60)


@pytest.fixture
def tclsh() -> str:
    return require_tool("tclsh", "the build.tcl dry run")


def test_build_tcl_ooc_dry_run(tclsh: str, tmp_path: Path) -> None:
    env = {"FAKE_RUN_DIR": str(tmp_path)}
    r = run_tclsh(tmp_path, ["--flow", "ooc", "--out", str(tmp_path / "out"), "--param", "RPL_CAPACITY=1024"], env)
    assert r.returncode == 0, r.stdout + r.stderr
    reads = [Path(x) for x in r.stdout.split("READS ", 1)[1].split("SYNTH")[0].split()]
    assert reads == wrapper_sources()
    synth = r.stdout.split("SYNTH ", 1)[1]
    assert "-top nf_nrl_top" in synth and "xc7vx690tffg1761-3" in synth
    assert "out_of_context" in synth and "RPL_CAPACITY=1024" in synth and "BUILD_HASH=32'h" in synth


# ---------------------------------------------------------------------------
# the SUME wrapper's RTL


def test_sume_wrapper_lint_and_elaborate() -> None:
    setup_tool_env()
    srcs = [str(s) for s in wrapper_sources()]
    verilator = require_tool("verilator", "linting the SUME wrapper")
    iverilog = require_tool("iverilog", "elaborating the SUME wrapper")
    r = subprocess.run([verilator, "--lint-only", "-Wall", f"-I{RTL}", "--top-module", "nf_nrl_top",
                        *srcs], capture_output=True, text=True, timeout=300)
    # the engines' own lint is tests/test_lint.py's job: look at the board files here
    mine = [ln for ln in r.stderr.splitlines()
            if ln.startswith("%") and str(SUME) in ln]
    assert not mine, "\n".join(mine)
    assert "%Error" not in r.stderr.replace("%Error: Exiting due to", ""), r.stderr[-3000:]
    r = subprocess.run([iverilog, "-g2005", "-o", os.devnull, f"-I{RTL}", "-s", "nf_nrl_top", *srcs],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


# ---------------------------------------------------------------------------
# shell scripts without Vivado


def path_without_xilinx() -> str:
    """PATH minus every folder holding vivado or xsct (plus the basics)."""
    dirs = [d for d in os.environ.get("PATH", "").split(os.pathsep)
            if d and not any(Path(d, exe).exists() for exe in ("vivado", "xsct"))]
    return os.pathsep.join(dirs or ["/usr/bin", "/bin"])


@pytest.mark.parametrize("script", ["sume_build.sh", "sume_flash.sh"])
def test_scripts_fail_cleanly_without_vivado(script: str, tmp_path: Path) -> None:
    env = {**os.environ, "PATH": path_without_xilinx()}
    r = subprocess.run(["bash", str(REPO / "scripts" / script), "--out", str(tmp_path)]
                       if script == "sume_build.sh" else ["bash", str(REPO / "scripts" / script)],
                       capture_output=True, text=True, env=env, timeout=30)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "vivado" in r.stderr and "not found on PATH" in r.stderr
    assert "settings64.sh" in r.stderr
    assert "Traceback" not in r.stderr and "line " not in r.stderr


# ---------------------------------------------------------------------------
# synth_yosys.py


STAT = """
=== top ===

   Number of wires:                 10
   Number of cells:                 12
     CARRY4                          2
     FDRE                            5
     FDSE                            1
     LUT2                            1
     LUT6                            2
     RAM64M                          1
     RAMB36E1                        1

"""


def test_synth_yosys_parsers() -> None:
    cells = synth_yosys.parse_stat(STAT)
    assert synth_yosys.classify(cells) == {"lut": 3, "ff": 6, "ramb36": 1, "ramb18": 0, "dsp": 0,
                                           "carry": 2, "lutram": 1, "srl": 0}
    ltp = "Longest topological path in top (length=2):\n    0: \\a [1]\n    1: $x.Y (via $c)\n    2: \\b [0] (via $d)\n"
    assert synth_yosys.parse_ltp(ltp) == 2
    assert synth_yosys.ltp_endpoints(ltp) == "\\a [1] -> \\b [0]"
    assert synth_yosys.parse_params(["DATA_WIDTH=512", "X=32'h1"]) == {"DATA_WIDTH": "512", "X": "32'h1"}
    with pytest.raises(SystemExit):
        synth_yosys.parse_params(["DATA_WIDTH"])
    assert {"DATA_WIDTH", "S_COUNT", "USER_WIDTH"} <= synth_yosys.declared_params(
        "nrl_axis_merge", [RTL / "nrl_axis_merge.v"])


def test_synth_yosys_tiny_top() -> None:
    require_tool("yosys", "synthesizing a tiny top with scripts/synth_yosys.py")
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "synth_yosys.py"), "--top", "nrl_axis_merge",
                        "--param", "DATA_WIDTH=16", "--param", "USER_WIDTH=4", "--param", "NOT_A_PARAM=1",
                        "--timeout", "120"], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    *_, line, last = r.stdout.strip().splitlines()
    kv = dict(item.split("=", 1) for item in line.split()[1:])
    assert kv["top"] == "nrl_axis_merge"
    assert int(kv["lut"]) > 0 and int(kv["ff"]) > 0 and int(kv["depth"]) > 0
    assert {"ramb36", "ramb18", "dsp", "carry"} <= kv.keys()
    # the delay-aware estimate: one figure per top, and the final worst_path_ns line
    assert 0.3 < float(kv["path_ns"]) < 5.0
    m = re.fullmatch(r"worst_path_ns=(\d+\.\d\d) module=nrl_axis_merge", last)
    assert m and m.group(1) == kv["path_ns"], last


def test_timing_estimate_counts_dsp_and_carry() -> None:
    """A chain of two flip-flops around an unregistered DSP48E1 multiply and a CARRY4:
    clock to Q, the DSP's A -> P delay, the carry's CI -> CO[3] delay and nothing else."""
    cells = {
        "a_reg": {"type": "FDRE", "port_directions": {"Q": "output", "D": "input"},
                  "connections": {"Q": [2], "D": [9], "C": [1], "CE": ["1"], "R": ["0"]}},
        "mul": {"type": "DSP48E1", "parameters": {"AREG": "0", "BREG": "0", "MREG": "0", "PREG": "0"},
                "port_directions": {"A": "input", "P": "output"},
                "connections": {"A": [2], "P": [3]}},
        "cy": {"type": "CARRY4", "port_directions": {"CI": "input", "CO": "output"},
               "connections": {"CI": [3], "CO": [4, 5, 6, 7]}},
        "b_reg": {"type": "FDRE", "port_directions": {"Q": "output", "D": "input"},
                  "connections": {"Q": [8], "D": [7], "C": [1], "CE": ["1"], "R": ["0"]}},
    }
    netlist = {"modules": {"t": {"cells": cells, "ports": {}, "netnames": {
        "a": {"bits": [2]}, "b": {"bits": [8]}}}}}
    tm = synth_yosys.estimate_timing(netlist, "t")
    assert tm.ns == pytest.approx((synth_yosys.FF_CLK_Q_PS + 2823 + 114) / 1000)
    assert (tm.start, tm.end, tm.levels) == ("a", "b", 2)
    with pytest.raises(ValueError, match="no timing model"):
        synth_yosys.estimate_timing({"modules": {"t": {"cells": {"x": {"type": "WEIRD", "connections": {}}},
                                                       "ports": {}}}}, "t")
