"""The ``netrl`` command (``netrl.py``): its subcommands, their help and the old names.

Each subcommand's ``--help`` runs through ``python -m netrl`` in a child process
(the console script of an installed wheel is ``tests/test_wheel.py``'s, which also
checks the core install's error for a missing extra). The old entry points stay:
``netfpga-softswitch`` and ``netfpga-simswitch`` are the functions ``netrl switch``
and ``netrl simswitch`` run, ``python -m rl`` is ``netrl train``/``compare``/``regs``,
and every ``python -m MODULE`` the docs show names a module that runs.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
from netutil import switch_of_kind

import netrl
from hostdrv.extras import MissingExtraError
from hostdrv.wire import regmap

REPO = Path(__file__).resolve().parents[1]

HELP_SAYS = {
    "switch": ("usage: netrl switch", "--listen"),
    "simswitch": ("usage: netrl simswitch", "--top"),
    "regs": ("usage: netrl regs", "dump"),
    "jobs": ("usage: netrl jobs", "admit"),
    "train": ("usage: netrl train", "--sync"),
    "compare": ("usage: netrl compare", "--syncs"),
    "demo": ("usage: netrl demo", "--skip-dqn"),
    "bench": ("usage: netrl bench", "replay_host"),
    "rack": ("usage: rack.py", "status"),
}
"""Per subcommand: its usage line, and an option or name its help shows."""


def run(*argv: str, cwd: Path = REPO, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout)


def test_netrl_help_lists_every_subcommand_on_one_line() -> None:
    r = run("-m", "netrl", "--help")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: netrl COMMAND")
    for cmd in netrl.COMMANDS.values():
        (line,) = [ln for ln in r.stdout.splitlines() if ln.split()[:1] == [cmd.name]]
        assert cmd.summary in line and (cmd.extra is None or f"[{cmd.extra}]" in line)
    assert set(HELP_SAYS) == set(netrl.COMMANDS)
    assert {"switch", "simswitch", "regs", "train", "bench", "rack"} <= set(netrl.COMMANDS)


@pytest.mark.parametrize("name", sorted(HELP_SAYS))
def test_each_subcommand_has_help(name: str) -> None:
    r = run("-m", "netrl", name, "--help")
    usage, shown = HELP_SAYS[name]
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(usage) and shown in r.stdout, r.stdout


def test_no_or_unknown_command_is_a_usage_error() -> None:
    r = run("-m", "netrl")
    assert r.returncode == 2 and "usage: netrl COMMAND" in r.stderr
    r = run("-m", "netrl", "trian")
    assert r.returncode == 2 and "unknown command 'trian'" in r.stderr and "train" in r.stderr


def test_console_scripts_are_the_dispatcher_and_its_aliases() -> None:
    import tomllib

    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["netrl"] == "netrl:main"
    # the old names run what the subcommands run
    assert scripts["netfpga-softswitch"] == netrl.COMMANDS["switch"].target
    assert scripts["netfpga-simswitch"] == netrl.COMMANDS["simswitch"].target


@pytest.mark.parametrize("argv,shown", [
    (["-m", "rl", "--help"], "{train,compare,regs}"),
    (["-m", "rl", "train", "--help"], "usage: netrl train"),
    (["-m", "rl.cli", "compare", "--help"], "usage: netrl compare"),
    (["-m", "rl.demo", "--help"], "--skip-dqn"),
    (["-m", "hostdrv.switch.soft", "--help"], "usage: netfpga-softswitch"),
    (["-m", "hostdrv.switch.sim", "--help"], "usage: netfpga-simswitch"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_old_entry_points_still_run(argv: list[str], shown: str) -> None:
    r = run(*argv)
    assert r.returncode == 0 and shown in r.stdout, r.stdout + r.stderr


def test_every_python_m_the_docs_show_names_a_runnable_module() -> None:
    docs = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    shown = {m for p in docs for m in re.findall(r"(?:^|\s)-m ([a-z_][\w.]*[a-z_])\b",
                                                 p.read_text(), re.M)}
    assert {"netrl", "rl", "rl.demo", "hostdrv.switch.soft", "hostdrv.switch.sim"} <= shown
    for module in sorted(shown - {"pytest", "torch.distributed.run"}):
        spec = importlib.util.find_spec(module)
        assert spec is not None, f"python -m {module}: no such module"
        if spec.submodule_search_locations is not None:  # a package runs its __main__
            assert importlib.util.find_spec(f"{module}.__main__") is not None, module
        else:
            assert spec.origin and "__main__" in Path(spec.origin).read_text(), module


def test_regs_runs_against_a_soft_switch(capsys: pytest.CaptureFixture[str]) -> None:
    with switch_of_kind("soft") as sw:
        assert netrl.main(["regs", sw.url, "read", "MAGIC"]) == 0
        magic = sw.model.read("MAGIC")
    out = capsys.readouterr().out
    assert f"MAGIC 0x{regmap.REGISTERS['MAGIC'].addr:03X} = 0x{magic:08X}" in out


def test_bench_lists_and_runs_the_checkout_benchmarks(capsys: pytest.CaptureFixture[str]) -> None:
    scripts = sorted(p.stem.removeprefix("bench_") for p in (REPO / "scripts").glob("bench_*.py"))
    assert sorted(netrl.benchmarks(netrl.checkout_root())) == scripts
    assert netrl.main(["bench"]) == 0
    listed = [ln.split()[0] for ln in capsys.readouterr().out.splitlines()
              if ln.startswith("  ")]
    assert listed == scripts
    # by name, with or without the file's prefix and suffix, arguments passed on
    for name in ("host", "bench_host.py"):
        r = run("-m", "netrl", "bench", name, "--help")
        assert r.returncode == 0 and "usage: bench_host.py" in r.stdout, r.stderr
    r = run("-m", "netrl", "bench", "no_such")
    assert r.returncode == 2 and "no benchmark 'no_such'" in r.stderr and "host" in r.stderr


def test_bench_and_rack_outside_a_checkout_say_so(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(netrl, "__file__", str(tmp_path / "site" / "netrl.py"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(netrl.NoCheckoutError, match="source checkout"):
        netrl.checkout_root()
    for name in ("bench", "rack"):
        assert netrl.main([name, "--help"]) == 2
        assert f"netrl {name}: " in capsys.readouterr().err
    # a checkout as the working directory serves when the module is installed elsewhere
    monkeypatch.chdir(REPO)
    assert netrl.checkout_root() == REPO


def test_a_missing_extra_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "needs_extra.py").write_text(
        "from hostdrv.extras import require\n"
        "def main(argv):\n"
        "    require('no_such_module_netrl', 'rl')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(netrl.COMMANDS, "train",
                        netrl.Command("train", "x", "needs_extra:main", "rl", with_name=True))
    assert netrl.main(["train", "--algo", "ppo"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("netrl train: ") and "pip install 'netfpga-rl[rl]'" in err
    assert issubclass(MissingExtraError, ImportError)


def test_rl_common_is_an_alias_of_parts_and_run() -> None:
    """``rl.common`` (before issue 20) is :mod:`rl.parts` plus :mod:`rl.run`, module for
    module, and every name it exported still imports from it."""
    import rl.common
    import rl.common.envs
    import rl.common.launch
    from rl import parts, run

    assert rl.common.envs is parts.envs and rl.common.launch is run.launch
    assert sorted(rl.common.__all__) == sorted(parts.__all__ + run.__all__)
    assert all(getattr(rl.common, n) is getattr(parts if n in parts.__all__ else run, n)
               for n in rl.common.__all__)
    assert not set(parts.__all__) & set(run.__all__)
