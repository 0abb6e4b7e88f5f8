"""Shared pytest setup: simulator tool paths, repo root on sys.path."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from sim.common.runner import setup_tool_env  # noqa: E402

setup_tool_env()

# The slowest tests of the default run (`make test` prints them: --durations=25), started
# first: pytest-xdist hands the first quarter of the run out one test at a time, in turn,
# so these are spread over the workers instead of one of them being left at the end of the
# run with a long test while the other idles. Everything keeps its order otherwise.
SLOW_FIRST = (
    "tests/test_conformance_rtl.py::test_rtl_matches_the_model",
    "tests/test_replay_engine.py",
    "tests/test_grad_agg.py",
    "tests/test_replay_ddr.py",
    "tests/test_wheel.py",
    "tests/test_control_auth.py",
    "tests/test_rack.py",
    "tests/test_nrl_switch.py",
)


def _slow_rank(nodeid: str) -> int:
    return next((i for i, p in enumerate(SLOW_FIRST) if nodeid.startswith(p)), len(SLOW_FIRST))


def pytest_collection_modifyitems(items: list[Any]) -> None:
    """Move the slowest tests (:data:`SLOW_FIRST`) to the front of the run."""
    items.sort(key=lambda item: _slow_rank(item.nodeid))
