"""The switch engines a test can run against: the golden model and the native engine.

``tests/test_model_*.py`` run every test on both (:func:`use_engine`, an autouse
fixture per module; ``tests/modelutil.py``'s helpers are pointed at the engine too);
the soft switch tests pick the server's engine with ``NRL_SOFTSWITCH_ENGINE``
(``hostdrv.switch.soft``).
"""

from __future__ import annotations

import sys

import pytest

from hostdrv.switch.reference import SwitchModel

ENGINES = ("model", "native")


def switch_class(engine: str) -> type:
    """The class behind ``engine``; a missing native build fails the test (it is part of
    ``pip install``), it is never skipped."""
    if engine == "model":
        return SwitchModel
    from hostdrv.switch.native import NativeSwitchModel, available, native_error

    if not available():
        pytest.fail(native_error)
    return NativeSwitchModel


def use_engine(module: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Point ``module``'s ``SwitchModel`` at the engine named by ``request.param``."""
    monkeypatch.setattr(sys.modules[module], "SwitchModel", switch_class(request.param))
    return request.param
