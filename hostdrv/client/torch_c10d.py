"""Build and load the ``netrl`` c10d backend (``hostdrv/native/netrl_c10d.cpp``).

The extension links against the installed torch, so it is compiled on the machine
that runs it, at first use, with :func:`torch.utils.cpp_extension.load`, and
cached: ``$NETRL_TORCH_EXT_DIR``, else ``$XDG_CACHE_HOME/netrl/torch_ext`` (else
``~/.cache/netrl/torch_ext``), one folder per torch version and source digest, so
a new torch or a changed source builds anew and never loads a stale binary.
Processes that start together (the ranks of a job) build it once: torch's build
takes a file lock in that folder and the others wait for it. ``make setup`` (and
``python -m hostdrv.client.torch_c10d``) warms the cache, so tests and jobs do not
pay the compile (about 35 s on two cores). The core install never needs it:
only ``hostdrv.torch_backend`` imports this module.

A failed build raises :class:`NetrlExtensionError` with the compiler's output; the
backend has no other implementation to fall back on.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import threading
from pathlib import Path
from types import ModuleType

from hostdrv.errors import NetrlError
from hostdrv.extras import EXTRAS, MissingExtraError

SOURCE = Path(__file__).resolve().parents[1] / "native" / "netrl_c10d.cpp"
"""The C++ source of the backend."""

_lock = threading.Lock()
_module: ModuleType | None = None


class NetrlExtensionError(NetrlError, RuntimeError):
    """The c10d extension could not be built or loaded (the message has why)."""


def _torch() -> ModuleType:
    try:
        import torch
    except ModuleNotFoundError as e:  # the core install: name the extra that brings torch
        raise MissingExtraError("torch", "torch", EXTRAS["torch"]) from e
    return torch


def cache_dir() -> Path:
    """The folder the extension of this torch and this source is built in."""
    torch = _torch()

    root = os.environ.get("NETRL_TORCH_EXT_DIR", "").strip()
    if root:
        base = Path(root)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
        base = (Path(xdg) if xdg else Path.home() / ".cache") / "netrl" / "torch_ext"
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]
    tag = f"py{sys.version_info[0]}{sys.version_info[1]}-torch{torch.__version__}-{digest}"
    return base / tag.replace("+", "_")


_NAME = "netrl_c10d"


def load(verbose: bool = False) -> ModuleType:
    """The extension module (built first when the cache has none).

    Raises
    ------
    NetrlExtensionError
        The build failed (no compiler, torch headers missing, a compile error).
    MissingExtraError
        torch is not installed (the ``torch`` extra).
    """
    global _module
    with _lock:
        if _module is not None:
            return _module
        folder = cache_dir()
        built = folder / f"{_NAME}.so"
        if built.exists() and not (folder / "lock").exists():
            spec = importlib.util.spec_from_file_location(_NAME, built)
            if spec is not None and spec.loader is not None:
                import torch.distributed  # noqa: F401 - the c10d types the module refers to

                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                _module = module
                return module
        folder.mkdir(parents=True, exist_ok=True)
        from torch.utils import cpp_extension

        try:
            _module = cpp_extension.load(_NAME, [str(SOURCE)], build_directory=str(folder),
                                         extra_cflags=["-O2"], verbose=verbose)
        except Exception as e:
            raise NetrlExtensionError(
                f"netrl: could not build the c10d backend {SOURCE} in {folder} "
                f"(torch.utils.cpp_extension, needs g++ and ninja): {type(e).__name__}: "
                f"{e}") from e
        return _module


def main() -> None:
    """``python -m hostdrv.client.torch_c10d``: build (or find) the extension, print where."""
    module = load(verbose="-v" in sys.argv[1:])
    print(f"netrl c10d backend: {module.__file__}")


if __name__ == "__main__":
    main()
