"""Static checks: Python is ruff clean, RTL is verilator -Wall clean and elaborates on Icarus."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_rtl_lint_clean() -> None:
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "lint_rtl.py")], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_python_ruff_clean() -> None:
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "hostdrv", "rl", "scripts", "sim", "tests"], cwd=REPO,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
