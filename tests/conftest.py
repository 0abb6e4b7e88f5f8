"""Shared pytest setup: simulator tool paths, repo root on sys.path."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from sim.common.runner import setup_tool_env  # noqa: E402

setup_tool_env()
