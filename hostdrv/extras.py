"""Optional dependencies: import one, or fail with the extra that installs it.

The core package needs numpy and pyserial only (a board owner's ``SwitchControl``, the
clients, the soft switch). The rest comes in extras named after who needs them
(``pyproject.toml``): ``torch`` (the ``netrl`` torch.distributed backend), ``rl`` (the RL
package: ``netrl train``, ``compare``, ``demo``), ``atari``, ``mujoco``, ``sim`` (the RTL in Verilator:
``sim://``, the cocotb testbenches) and ``dev``. :func:`require` imports a module of one
of them and, when it is missing, raises :class:`MissingExtraError` naming the ``pip
install`` line that fixes it.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from hostdrv.errors import NetrlError

PACKAGE = "netfpga-rl"

EXTRAS: dict[str, str] = {
    "torch": "the torch.distributed backend 'netrl' (hostdrv.torch_backend)",
    "rl": "the RL package (rl: DQN, A2C, PPO, DDPG; netrl train, compare and demo)",
    "atari": "Atari environments (the paper's DQN on Pong)",
    "mujoco": "MuJoCo environments (the paper's DDPG on HalfCheetah)",
    "sim": "the RTL in simulation (sim://, the cocotb testbenches)",
    "dev": "the test suite, the linter and the register generator",
}
"""Every extra of the package and what it is for."""


class MissingExtraError(NetrlError, ImportError):
    """An optional dependency is not installed; the message names the extra to install.

    Attributes
    ----------
    module:
        The module that could not be imported.
    extra:
        The extra of ``netfpga-rl`` that installs it.
    """

    def __init__(self, module: str, extra: str, purpose: str) -> None:
        super().__init__(f"{purpose} needs the Python module {module!r}, which is not "
                         f"installed: pip install '{PACKAGE}[{extra}]'", name=module)
        self.module = module
        self.extra = extra


def require(module: str, extra: str, purpose: str | None = None) -> ModuleType:
    """Import ``module``, which the extra ``extra`` installs.

    Parameters
    ----------
    module:
        Dotted module name, e.g. ``"torch"``.
    extra:
        The extra of this package that provides it (a key of :data:`EXTRAS`).
    purpose:
        What needs it, for the message; by default the extra's description.

    Returns
    -------
    ModuleType
        The imported module.

    Raises
    ------
    MissingExtraError
        The module (or one of its own dependencies) is not installed.
    ValueError
        ``extra`` is not an extra of this package.
    """
    if extra not in EXTRAS:
        raise ValueError(f"bad extra={extra!r}: the extras are {sorted(EXTRAS)}")
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        raise MissingExtraError(module, extra, purpose or EXTRAS[extra]) from e


def check(extra: str, *modules: str, purpose: str | None = None) -> None:
    """Raise :class:`MissingExtraError` unless every module of ``modules`` is installed.

    Looks the modules up without importing them (cheap enough for a package's
    ``__init__``); the first missing one is named.
    """
    if extra not in EXTRAS:
        raise ValueError(f"bad extra={extra!r}: the extras are {sorted(EXTRAS)}")
    for m in modules:
        try:
            found = importlib.util.find_spec(m) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise MissingExtraError(m, extra, purpose or EXTRAS[extra])


__all__ = ["EXTRAS", "PACKAGE", "MissingExtraError", "check", "require"]
