"""``pip install .`` (not editable) gives a working package, RTL and harness included.

The wheel is built from a fresh copy of what it is made of (``pyproject.toml``,
``README.md``, ``hostdrv/``, ``rl/`` and ``hw/``, which ``hostdrv/backends/hw_rtl``
links to), so that no ``build/`` left in the checkout can leak stale files into
it, and installed with ``pip install --no-deps --target DIR``. Everything then
runs with the venv's interpreter, ``PYTHONPATH=DIR`` and a working directory
outside the repository, so the checkout is not importable:

* the wheel holds every module of ``hostdrv`` and ``rl``, the RTL sources of
  ``hw/rtl``, the C++ harness and the compiled native engine (``hostdrv._native``);
* ``netrl --help`` works;
* ``netfpga-softswitch`` serves a ``soft://`` all-reduce;
* a ``sim://`` all-reduce runs the RTL that Verilator builds from the packaged
  sources into a temporary build folder (about 25-60 s).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from toolcheck import require_module, require_tool

REPO = Path(__file__).resolve().parents[1]
RTL = REPO / "hw" / "rtl"
SOURCES = ("pyproject.toml", "setup.py", "README.md", "hostdrv", "rl", "hw")

CHILD = '''\
"""Run with PYTHONPATH=<install>: an all-reduce of two workers through soft:// or sim://."""
import json, subprocess, sys, threading
from pathlib import Path

import numpy as np

import hostdrv
from hostdrv import Aggregator, SwitchControl
from hostdrv.backends import rtl_model

kind, site, bindir = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
assert Path(hostdrv.__file__).resolve().is_relative_to(site), hostdrv.__file__
assert rtl_model.RTL_DIR.is_relative_to(site), rtl_model.RTL_DIR


def allreduce(url):
    ctl = SwitchControl(url)
    ctl.configure_aggregation(members=2, slots=4, elems=32)
    aggs = [Aggregator(url, worker=i) for i in range(2)]
    rng = np.random.default_rng(7)
    xs = [rng.standard_normal(300).astype(np.float32) for _ in range(2)]
    out = [None, None]
    ths = [threading.Thread(target=lambda i=i: out.__setitem__(i, aggs[i].allreduce(xs[i])))
           for i in range(2)]
    for t in ths:
        t.start()
    for t in ths:
        t.join(120)
    for o in out:
        np.testing.assert_array_equal(o, xs[0] + xs[1])
    for a in aggs:
        a.close()
    ctl.close()


if kind == "soft":
    proc = subprocess.Popen([str(bindir / "netfpga-softswitch"), "--listen", "127.0.0.1:0"],
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line.startswith("listening soft://"), line
    allreduce(line.split()[1])
    proc.terminate()
    rest = proc.communicate(timeout=30)[0]
    assert proc.returncode == 0 and "counters" in rest, (proc.returncode, rest)
else:
    from hostdrv.backends.rtl_server import SimSwitchProcess

    with SimSwitchProcess(ready_timeout=600) as sw:
        allreduce(sw.url)
print("ALLREDUCE-OK " + kind)
'''


def _no_isolation() -> list[str]:
    """``--no-build-isolation`` when the venv has the build backend the wheel asks for
    (no download); otherwise pip fetches it into an isolated build environment."""
    try:
        major = int(importlib.metadata.version("setuptools").split(".")[0])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return []
    return ["--no-build-isolation"] if major >= 77 else []


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the wheel, the folder it is installed in with ``pip install --target``)."""
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    for name in SOURCES:
        p = REPO / name
        if p.is_dir():
            shutil.copytree(p, src / name, symlinks=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.so"))
        else:
            src.mkdir(exist_ok=True)
            shutil.copy2(p, src / name)
    dist = base / "dist"
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *_no_isolation(),
                        "-w", str(dist), str(src)],
                       capture_output=True, text=True, timeout=300, cwd=base)
    assert r.returncode == 0, r.stdout + r.stderr
    (wheel,) = dist.glob("netfpga_rl-*.whl")
    site = base / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                        "--target", str(site), str(wheel)],
                       capture_output=True, text=True, timeout=300, cwd=base)
    assert r.returncode == 0, r.stdout + r.stderr
    return wheel, site


def _env(site: Path, **extra: str) -> dict[str, str]:
    """The environment of a child that sees the installed package and not the checkout."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(site), PYTHONUNBUFFERED="1", **extra)
    return env


def _run(site: Path, cwd: Path, args: list[str], timeout: float,
         **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env=_env(site, **extra))


def test_wheel_holds_every_module_the_rtl_and_the_harness(
        installed: tuple[Path, Path]) -> None:
    wheel, _site = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {p.relative_to(REPO).as_posix() for pkg in ("hostdrv", "rl")
               for p in (REPO / pkg).rglob("*.py") if "__pycache__" not in p.parts}
    assert modules - names == set()
    rtl = {f"hostdrv/backends/hw_rtl/{p.name}" for p in RTL.iterdir()
           if p.suffix in (".v", ".vh", ".f")}
    assert rtl and rtl - names == set()
    assert "hostdrv/backends/rtl_harness.cpp" in names
    # the native engine, compiled by the wheel build
    assert any(n.startswith("hostdrv/_native.") and n.endswith(".so") for n in names), names


def test_netrl_help_from_the_installed_package(installed: tuple[Path, Path],
                                               tmp_path: Path) -> None:
    _wheel, site = installed
    r = _run(site, tmp_path, [sys.executable, "-c",
                              "import hostdrv, rl; print(hostdrv.__file__); print(rl.__file__)"],
             timeout=120)
    assert r.returncode == 0, r.stderr
    for line in r.stdout.split():
        assert Path(line).resolve().is_relative_to(site.resolve()), r.stdout
    r = _run(site, tmp_path, [str(site / "bin" / "netrl"), "--help"], timeout=120)
    assert r.returncode == 0, r.stderr
    assert "usage: netrl" in r.stdout and "train" in r.stdout


def test_softswitch_console_script_serves_an_allreduce(installed: tuple[Path, Path],
                                                       tmp_path: Path) -> None:
    _wheel, site = installed
    (tmp_path / "child.py").write_text(CHILD)
    r = _run(site, tmp_path, [sys.executable, "child.py", "soft", str(site.resolve()),
                              str(site / "bin")], timeout=120)
    assert r.returncode == 0 and "ALLREDUCE-OK soft" in r.stdout, r.stdout + r.stderr


def test_sim_allreduce_builds_the_packaged_rtl(installed: tuple[Path, Path],
                                               tmp_path: Path) -> None:
    require_tool("verilator", "the Verilator build of the packaged RTL")
    require_module("pyverilator", "the Verilator build of the packaged RTL")
    _wheel, site = installed
    build = tmp_path / "sim_build"
    (tmp_path / "child.py").write_text(CHILD)
    r = _run(site, tmp_path, [sys.executable, "child.py", "sim", str(site.resolve()),
                              str(site / "bin")], timeout=900, NRL_SIM_BUILD=str(build))
    assert r.returncode == 0 and "ALLREDUCE-OK sim" in r.stdout, r.stdout + r.stderr[-4000:]
    (stamp,) = build.glob("nrl_switch_*/build.json")
    sources = [Path(s) for s in json.loads(stamp.read_text())["sources"]]
    assert sources and all(s.is_relative_to(site.resolve()) for s in sources), sources
