"""``netrl``: one command for the switches, their registers, training and the benchmarks.

::

    netrl switch --listen 127.0.0.1:20050     # the soft switch (soft://), alias netfpga-softswitch
    netrl simswitch --listen 127.0.0.1:20060  # the sim switch (sim://), alias netfpga-simswitch
    netrl regs soft://127.0.0.1:20050 dump    # switch registers by name (--job J: job J's page)
    netrl jobs soft://127.0.0.1:20050 list    # the jobs of a switch: admit, release, reclaim
    netrl train --algo ppo --workers 4        # RL training through the switch (python -m rl)
    netrl compare --algo ppo                  # the sync strategies side by side
    netrl demo                                # PPO, then DQN with in-network replay (make demo)
    netrl bench                               # list the benchmarks of a checkout; bench NAME runs one
    netrl rack up --hosts 4                   # a rack of network namespaces (root, a checkout)
    netrl COMMAND --help                      # a command's own options

The dispatcher needs the core install only (numpy): it imports a command's
module when that command runs, so ``netrl switch`` or ``netrl regs`` work
without torch. A command whose extra is missing stops with the ``pip install``
line that adds it (:class:`hostdrv.extras.MissingExtraError`), e.g. ``netrl
train`` without ``netfpga-rl[rl]``. ``bench`` and ``rack`` run the scripts under
``scripts/`` of a source checkout, which a wheel does not hold: from an
installed wheel they say so. ``python -m netrl`` is the same command.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

PROG = "netrl"


@dataclass(frozen=True)
class Command:
    """One subcommand of ``netrl``.

    Attributes
    ----------
    name : str
        What follows ``netrl`` on the command line.
    summary : str
        One line for ``netrl --help``.
    target : str
        ``module:function`` run with the arguments after the name (a list of str),
        returning the exit status; imported only when the command runs.
    extra : str or None
        The extra of ``netfpga-rl`` the command needs beyond the core, for the listing
        (the error for a missing one comes from the module that needs it).
    with_name : bool
        Pass the command name on as the first argument (``rl.cli`` parses
        ``train``/``compare`` itself).
    takes_prog : bool
        The entry function takes ``prog=`` (the name its usage lines show), given
        ``netrl NAME`` here.
    """

    name: str
    summary: str
    target: str
    extra: str | None = None
    with_name: bool = False
    takes_prog: bool = False

    def resolve(self) -> Callable[[list[str]], int]:
        """Import the command's module and return its entry function."""
        module, _, attr = self.target.partition(":")
        # this module's own commands from this very module (also when it runs as __main__)
        where = sys.modules[__name__] if module == "netrl" else import_module(module)
        fn: Callable[[list[str]], int] = getattr(where, attr)
        return fn


COMMANDS: dict[str, Command] = {c.name: c for c in (
    Command("switch", "the soft switch (soft://); also netfpga-softswitch",
            "hostdrv.switch.soft:main", takes_prog=True),
    Command("simswitch", "the sim switch: the switch RTL in Verilator (sim://); "
                         "also netfpga-simswitch", "hostdrv.switch.sim:main", "sim", takes_prog=True),
    Command("regs", "read, write, dump or watch switch registers by name", "netrl:regs_main"),
    Command("jobs", "list, admit, release, renew or reclaim the jobs of a switch",
            "netrl:jobs_main"),
    Command("train", "train DQN, A2C, PPO or DDPG with one sync strategy", "rl.cli:main", "rl",
            with_name=True),
    Command("compare", "train with each sync strategy on one seed, plot them", "rl.cli:main",
            "rl", with_name=True),
    Command("demo", "PPO, then DQN with in-network replay, through a soft switch", "rl.demo:main",
            "rl"),
    Command("bench", "list the benchmarks of a checkout (scripts/bench_*.py); bench NAME runs one",
            "netrl:bench_main"),
    Command("rack", "hosts in network namespaces around one switch (scripts/rack.py; root)",
            "netrl:rack_main"),
)}
"""Every subcommand, in the order ``netrl --help`` lists them."""


def usage() -> str:
    """``netrl --help``: the commands, one line each."""
    width = max(len(n) for n in COMMANDS) + 2
    lines = [f"usage: {PROG} COMMAND [ARGS...]", "",
             "netfpga-rl: in-network gradient aggregation and experience replay for distributed "
             "deep RL", "on a NetFPGA switch, or on its soft and sim switches.", "",
             "commands:"]
    for c in COMMANDS.values():
        extra = f"  [{c.extra}]" if c.extra else ""
        lines.append(f"  {c.name:<{width}}{c.summary}{extra}")
    lines += ["", f"'{PROG} COMMAND --help' shows a command's options.",
              "[X]: needs the extra X (pip install 'netfpga-rl[X]').", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``netrl`` console script (and ``python -m netrl``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        print(usage(), end="", file=sys.stderr)
        return 2
    if args[0] in ("-h", "--help", "help"):
        print(usage(), end="")
        return 0
    if args[0] == "--version":
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"{PROG} {version('netfpga-rl')}")
        except PackageNotFoundError:
            print(f"{PROG} (netfpga-rl not installed: a source tree)")
        return 0
    cmd = COMMANDS.get(args[0])
    if cmd is None:
        print(f"{PROG}: unknown command {args[0]!r} (choose from {', '.join(COMMANDS)}; "
              f"'{PROG} --help' says what each does)", file=sys.stderr)
        return 2
    from hostdrv.extras import MissingExtraError

    rest = args if cmd.with_name else args[1:]
    try:
        fn = cmd.resolve()
        if cmd.takes_prog:  # its usage lines say "netrl switch", not the alias's name
            return int(fn(rest, prog=f"{PROG} {cmd.name}") or 0)
        return int(fn(rest) or 0)
    except MissingExtraError as e:
        print(f"{PROG} {cmd.name}: {e}", file=sys.stderr)
        return 1


# ---------------------------------------------------------------------------
# regs: hostdrv.client.regs_cli's parser under "netrl regs"


def regs_main(argv: Sequence[str]) -> int:
    """``netrl regs URL ACTION ...`` (:mod:`hostdrv.client.regs_cli`)."""
    import argparse

    from hostdrv.client.regs_cli import add_regs_parser, run_regs

    parser = argparse.ArgumentParser(prog=PROG)
    add_regs_parser(parser.add_subparsers(dest="command", required=True))
    return run_regs(parser.parse_args(["regs", *argv]))


def jobs_main(argv: Sequence[str]) -> int:
    """``netrl jobs URL ACTION ...`` (:mod:`hostdrv.client.jobs_cli`)."""
    import argparse

    from hostdrv.client.jobs_cli import add_jobs_parser, run_jobs

    parser = argparse.ArgumentParser(prog=PROG)
    add_jobs_parser(parser.add_subparsers(dest="command", required=True))
    return run_jobs(parser.parse_args(["jobs", *argv]))


# ---------------------------------------------------------------------------
# bench and rack: the scripts of a source checkout


class NoCheckoutError(RuntimeError):
    """``scripts/`` is not there: this is an installed wheel, not a source checkout."""


def _is_checkout(root: Path) -> bool:
    return (root / "scripts" / "rack.py").is_file() and (root / "pyproject.toml").is_file() \
        and (root / "hostdrv").is_dir()


def checkout_root() -> Path:
    """The source checkout whose ``scripts/`` ``bench`` and ``rack`` run: the one this
    module is in (an editable install or a run from the tree), else the working directory
    when it is one.

    Raises
    ------
    NoCheckoutError
        Neither is a checkout of netfpga-rl.
    """
    for root in (Path(__file__).resolve().parent, Path.cwd()):
        if _is_checkout(root):
            return root
    raise NoCheckoutError(
        "the benchmarks and the rack tool are scripts of a source checkout (scripts/), "
        "which an installed wheel does not hold; run this command in a checkout "
        "(git clone the netfpga-rl repository, cd into it, make setup)")


def benchmarks(root: Path) -> dict[str, tuple[Path, str]]:
    """``name -> (script, first line of its docstring)`` of ``root/scripts/bench_*.py``."""
    out = {}
    for path in sorted((root / "scripts").glob("bench_*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(), str(path))) or ""
        line = doc.strip().splitlines()[0].replace("``", "") if doc.strip() else ""
        out[path.stem.removeprefix("bench_")] = (path, line)
    return out


def _run_script(path: Path, argv: Sequence[str]) -> int:
    """Run a checkout script with this interpreter; its exit status."""
    try:
        return subprocess.call([sys.executable, str(path), *argv], cwd=os.getcwd())
    except KeyboardInterrupt:
        return 130


def bench_main(argv: Sequence[str]) -> int:
    """``netrl bench`` lists the benchmarks; ``netrl bench NAME [ARGS...]`` runs
    ``scripts/bench_NAME.py ARGS...`` (``NAME --help`` for its options)."""
    try:
        root = checkout_root()
    except NoCheckoutError as e:
        print(f"{PROG} bench: {e}", file=sys.stderr)
        return 2
    found = benchmarks(root)
    if not argv or argv[0] in ("-h", "--help"):
        width = max(len(n) for n in found) + 2
        print(f"usage: {PROG} bench [NAME [ARGS...]]\n\nThe benchmarks in {root / 'scripts'} "
              "(each ends with one key=value line;\n"
              f"'{PROG} bench NAME --help' shows a benchmark's options):")
        for name, (_path, summary) in found.items():
            print(f"  {name:<{width}}{summary}")
        return 0
    name = argv[0].removesuffix(".py").removeprefix("bench_")
    if name not in found:
        print(f"{PROG} bench: no benchmark {argv[0]!r} (choose from {', '.join(found)})",
              file=sys.stderr)
        return 2
    return _run_script(found[name][0], argv[1:])


def rack_main(argv: Sequence[str]) -> int:
    """``netrl rack ...``: ``scripts/rack.py ...`` of the checkout (``docs/rack.md``)."""
    try:
        root = checkout_root()
    except NoCheckoutError as e:
        print(f"{PROG} rack: {e}", file=sys.stderr)
        return 2
    return _run_script(root / "scripts" / "rack.py", argv)


__all__ = ["COMMANDS", "Command", "NoCheckoutError", "bench_main", "benchmarks",
           "checkout_root", "jobs_main", "main", "rack_main", "regs_main", "usage"]

if __name__ == "__main__":
    raise SystemExit(main())
