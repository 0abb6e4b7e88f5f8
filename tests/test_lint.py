"""Static checks: Python is ruff clean, RTL is verilator -Wall clean and elaborates on Icarus."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from toolcheck import require_tool

REPO = Path(__file__).resolve().parents[1]


def test_rtl_lint_clean() -> None:
    # scripts/lint_rtl.py runs both; it leaves Icarus out quietly when iverilog is missing
    require_tool("verilator", "verilator --lint-only -Wall of every RTL top")
    require_tool("iverilog", "checking that Icarus elaborates every RTL top")
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "lint_rtl.py")], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_python_ruff_clean() -> None:
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "hostdrv", "rl", "scripts", "sim", "tests"], cwd=REPO,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
