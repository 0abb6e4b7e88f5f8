"""The host package's rooms and the doors between them (``docs/architecture.md``).

``hostdrv.wire`` (what both ends of the wire agree on) imports nothing from
``hostdrv.switch`` or ``hostdrv.client``; ``hostdrv.switch`` imports nothing from
``hostdrv.client``; ``hostdrv.client`` reaches the switch package only through
``hostdrv.switch.launch``. Every import counts, also one inside a function or
under ``TYPE_CHECKING``. And the package is light: ``import hostdrv`` and
``import hostdrv.wire.regmap`` load neither a switch, nor a client, nor the
compiled extension.
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import hostdrv

REPO = Path(__file__).resolve().parents[1]
PKG = REPO / "hostdrv"

ALLOWED: dict[str, tuple[str, ...]] = {
    "hostdrv.wire": ("hostdrv.wire", "hostdrv.errors"),
    "hostdrv.switch": ("hostdrv.wire", "hostdrv.switch", "hostdrv._native", "hostdrv.extras",
                       "hostdrv.errors"),
    "hostdrv.client": ("hostdrv.wire", "hostdrv.client", "hostdrv.switch.launch",
                       "hostdrv.peers.ps", "hostdrv._native", "hostdrv.extras",
                       "hostdrv.errors"),
    "hostdrv.rack": ("hostdrv.wire", "hostdrv.rack", "hostdrv.errors"),
    # the baselines (the native parameter server): the wire and the extension, no switch or client
    "hostdrv.peers": ("hostdrv.wire", "hostdrv.peers", "hostdrv._native", "hostdrv.errors"),
}
"""Room → the modules (and packages) its modules may import from ``hostdrv``. Every room
may import ``hostdrv.errors``, the neutral leaf that holds the :class:`NetrlError` base."""

KNOWN_CUTS: dict[str, set[str]] = {}
"""Exceptions to :data:`ALLOWED` (a door still to close). None are left: the last two,
the board's register transports building a reference switch to predict read-backs,
went when the read-back rule moved into ``hw/regs.yaml`` / the generated regmap
(``regrules.RegisterFile``). The list may only shrink, so it stays empty."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def hostdrv_imports(path: Path) -> set[str]:
    """Every ``hostdrv`` module ``path`` imports, anywhere in the file."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "hostdrv")
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: relative import"
            mod = node.module or ""
            if mod.split(".")[0] != "hostdrv":
                continue
            for a in node.names:
                # `from pkg import sub` imports module pkg.sub when there is one
                sub = f"{mod}.{a.name}"
                is_module = (PKG.parent / sub.replace(".", "/")).with_suffix(".py").exists() \
                    or (PKG.parent / sub.replace(".", "/")).is_dir() or a.name == "_native"
                found.add(sub if is_module else mod)
    return found


def room_of(name: str) -> str | None:
    return next((r for r in ALLOWED if name == r or name.startswith(r + ".")), None)


def allowed(room: str, imported: str) -> bool:
    return any(imported == a or imported.startswith(a + ".") for a in ALLOWED[room])


SOURCES = sorted(p for p in PKG.rglob("*.py") if room_of(module_name(p)))


def test_every_room_is_checked() -> None:
    rooms = {room_of(module_name(p)) for p in SOURCES}
    assert rooms == set(ALLOWED)
    assert not (PKG / "backends").exists(), "hostdrv/backends/ is gone (hostdrv.switch, .client)"
    # the modules outside the rooms: the package, the documented alias, the shared leaves
    loose = {module_name(p) for p in PKG.glob("*.py")}
    assert loose == {"hostdrv", "hostdrv.errors", "hostdrv.extras", "hostdrv.torch_backend"}


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: module_name(p))
def test_imports_stay_in_their_room(path: Path) -> None:
    me = module_name(path)
    room = room_of(me)
    assert room is not None
    bad = sorted(m for m in hostdrv_imports(path) - KNOWN_CUTS.get(me, set())
                 if not allowed(room, m))
    assert not bad, f"{me} ({room}) imports {bad}; allowed: {ALLOWED[room]}"


def test_no_known_cuts_are_left() -> None:
    """The list of exceptions may only shrink, and it is empty: every door is closed."""
    assert KNOWN_CUTS == {}


def test_the_shared_leaves_import_no_switch() -> None:
    for leaf in ("errors.py", "extras.py"):
        assert not {m for m in hostdrv_imports(PKG / leaf) if m.startswith("hostdrv.switch")}
    # the error base is neutral: every room imports it, it imports nothing of the package
    assert hostdrv_imports(PKG / "errors.py") == set()


def loaded_by(statement: str) -> list[str]:
    """The ``hostdrv`` modules a fresh interpreter holds after ``statement``."""
    code = (f"import sys\n{statement}\n"
            "import json; print(json.dumps(sorted(m for m in sys.modules "
            "if m == 'hostdrv' or m.startswith('hostdrv.'))))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_import_hostdrv_is_light() -> None:
    assert loaded_by("import hostdrv") == ["hostdrv"]


def test_import_regmap_loads_the_register_map_only() -> None:
    assert loaded_by("import hostdrv.wire.regmap") == ["hostdrv", "hostdrv.errors", "hostdrv.wire",
                                                       "hostdrv.wire.regmap"]


@pytest.mark.parametrize("module", ["hostdrv.wire.protocol", "hostdrv.wire.records",
                                    "hostdrv.wire.sampler", "hostdrv.wire.control"])
def test_the_wire_loads_no_switch_client_or_extension(module: str) -> None:
    mods = loaded_by(f"import {module}")
    assert all(m in ("hostdrv", "hostdrv.errors") or m.startswith("hostdrv.wire")
               for m in mods), mods


def test_a_client_loads_no_switch() -> None:
    mods = loaded_by("from hostdrv import SwitchControl, Aggregator, ReplayClient")
    assert not [m for m in mods if m.startswith("hostdrv.switch")], mods


def test_public_names_resolve_lazily() -> None:
    """Every name of ``hostdrv.__all__`` is its defining module's object."""
    assert len(set(hostdrv.__all__)) == len(hostdrv.__all__)
    for name in hostdrv.__all__:
        value = getattr(hostdrv, name)
        assert value is getattr(importlib.import_module(hostdrv._WHERE[name]), name), name
    assert set(hostdrv._WHERE) == set(hostdrv.__all__)
    assert set(hostdrv.__all__) <= set(dir(hostdrv))
    with pytest.raises(AttributeError, match="no attribute 'NoSuchName'"):
        _ = hostdrv.NoSuchName  # type: ignore[attr-defined]


def test_torch_backend_alias_is_the_backend_module() -> None:
    """``import hostdrv.torch_backend`` (documented) is the module in ``hostdrv.client``."""
    from toolcheck import require_module

    require_module("torch", "the torch backend")
    import hostdrv.client.torch_backend as backend
    import hostdrv.torch_backend as alias

    assert alias is backend
    assert sys.modules["hostdrv.torch_backend"] is backend


def test_console_scripts_name_existing_functions() -> None:
    import tomllib

    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    for name, target in scripts.items():
        module, _, attr = target.partition(":")
        assert callable(getattr(importlib.import_module(module), attr)), name


def test_every_engine_is_an_engine() -> None:
    """The servers take an :class:`~hostdrv.switch.engine.Engine`; the three switches are one."""
    from hostdrv.switch.engine import Engine
    from hostdrv.switch.native import NativeSwitchModel, available, native_error
    from hostdrv.switch.reference import SwitchModel
    from hostdrv.switch.rtl import RtlSwitch

    assert isinstance(SwitchModel(), Engine)
    assert available(), native_error
    assert isinstance(NativeSwitchModel(), Engine)
    # RtlSwitch needs a Verilator build to exist: its class has the methods
    assert all(callable(getattr(RtlSwitch, m, None))
               for m in ("read", "write", "counters", "process"))


def test_every_exception_is_a_netrl_error() -> None:
    """Every exception class a ``hostdrv`` module defines derives from ``NetrlError`` (and
    keeps its builtin base, so ``except ValueError`` callers keep working). Private ones
    (``_Name``, control flow inside one module that never reaches a caller) are exempt."""
    from hostdrv.errors import NetrlError

    seen = []
    for path in sorted(PKG.rglob("*.py")):
        name = module_name(path)
        if name in ("hostdrv.client.torch_backend", "hostdrv.torch_backend"):
            from toolcheck import require_module

            require_module("torch", "the torch backend")
        module = importlib.import_module(name)
        for obj in vars(module).values():
            if (isinstance(obj, type) and issubclass(obj, BaseException)
                    and obj.__module__ == name and not obj.__name__.startswith("_")):
                seen.append(obj)
                assert issubclass(obj, NetrlError), f"{name}.{obj.__name__} is no NetrlError"
    names = {c.__name__ for c in seen}
    assert {"ProtocolError", "TransportError", "SwitchTimeoutError", "RegisterError",
            "ControlAuthError", "UnknownRegisterError", "IdentityError", "RtlSimError",
            "MissingExtraError", "AllreduceError", "ReplayTimeoutError"} <= names, names
    # the builtin bases callers catch are kept
    import hostdrv.client.transport as transport
    from hostdrv.errors import RegisterError

    assert transport.RegisterAccessError is RegisterError
    assert issubclass(RegisterError, ValueError)
    assert issubclass(transport.SwitchTimeoutError, TimeoutError)
    assert issubclass(transport.TransportError, OSError)


def test_the_soft_switch_names_stay_importable() -> None:
    """``hostdrv.switch.soft`` is split (control channel, datagram path, child process);
    every name it offered before the split is still importable from it, and
    ``netfpga-softswitch`` / ``python -m hostdrv.switch.soft`` run its ``main``."""
    import hostdrv.switch.soft as soft
    from hostdrv.switch import soft_control, soft_loop, soft_process

    for name in ("Arrival", "DEFAULT_ENGINE", "ENGINES", "SO_RXQ_OVFL", "SoftSwitch",
                 "SoftSwitchProcess", "build_parser", "default_engine", "main", "make_model",
                 "_is_loopback"):
        assert hasattr(soft, name), name
    assert soft.Arrival is soft_loop.Arrival
    assert soft.SoftSwitchProcess is soft_process.SoftSwitchProcess
    assert issubclass(soft.SoftSwitch, soft_control.ControlServer)
    assert issubclass(soft.SoftSwitch, soft_loop.DatagramLoop)
    assert soft.SoftSwitchProcess.module == "hostdrv.switch.soft"
    r = subprocess.run([sys.executable, "-m", "hostdrv.switch.soft", "--help"],
                       capture_output=True, text=True, cwd=REPO, timeout=120)
    assert r.returncode == 0 and "netfpga-softswitch" in r.stdout, r.stderr


#: a room's size limit, in lines: past it a file is cut at a seam (issue 20, docs/architecture.md)
ROOM_LINES = 700
#: the folders of source the limit holds for, and the kinds of file it counts
ROOM_FOLDERS = ("hostdrv", "rl", "scripts", "hw", "sim", "tests")
ROOM_SUFFIXES = {".py", ".v", ".vh", ".cpp", ".h", ".c", ".tcl", ".sh"}
#: files allowed past the limit, with the reason (generated, or one table that reads as one)
ROOM_EXCEPTIONS: dict[str, str] = {}


def _tracked_sources() -> list[Path]:
    out = subprocess.run(["git", "ls-files", *ROOM_FOLDERS, "netrl.py"], capture_output=True,
                         text=True, cwd=REPO, check=False)
    if out.returncode != 0:  # not a git checkout (an sdist): every file on disk
        return sorted(p for d in ROOM_FOLDERS for p in (REPO / d).rglob("*")
                      if p.suffix in ROOM_SUFFIXES and p.is_file())
    return sorted(REPO / f for f in out.stdout.split()
                  if Path(f).suffix in ROOM_SUFFIXES and (REPO / f).is_file())


def test_no_room_past_its_size() -> None:
    """Every source file stays within :data:`ROOM_LINES` lines (a reader holds one room in
    mind); one that grows past it is cut at a natural seam, as the ones issue 20 named
    were, not left to grow."""
    big = {str(p.relative_to(REPO)): n for p in _tracked_sources()
           if (n := len(p.read_text(encoding="utf-8", errors="replace").splitlines()))
           > ROOM_LINES}
    over = {f: n for f, n in big.items() if f not in ROOM_EXCEPTIONS}
    assert not over, f"files over {ROOM_LINES} lines, cut them at a seam: {over}"
    assert set(ROOM_EXCEPTIONS) <= set(big), "an exception no longer needed: drop it"
