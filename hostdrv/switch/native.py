"""The native switch engine with :class:`hostdrv.switch.reference.SwitchModel`'s Python surface.

:class:`NativeSwitchModel` runs the compiled engine (``hostdrv/native/nrl_engine.cpp``,
built into ``hostdrv._native`` by ``pip install``) behind the same methods as the
golden model: :meth:`~NativeSwitchModel.process` returns the same
:class:`~hostdrv.switch.reference.Egress` frames, :meth:`~NativeSwitchModel.read` and
:meth:`~NativeSwitchModel.write` take the same names or addresses and refuse the same
values with the same messages, :meth:`~NativeSwitchModel.counters` returns the same
dict. ``tests/test_conformance.py`` holds the two to byte-for-byte agreement.

:func:`available` says whether the extension is built (``native_error`` says why not).
"""

from __future__ import annotations

import sys

import numpy as np

from hostdrv.switch.reference import Egress, check_params, check_src_port
from hostdrv.switch.reference.jobs import resolve
from hostdrv.wire import consts, regmap

try:
    import hostdrv._native as _native
except ImportError as e:  # not built (a source tree without `pip install -e .`)
    _native = None
    native_error: str = f"hostdrv._native is not built ({e}); run `pip install -e .`"
else:
    native_error = ""

__all__ = ["NativeSwitchModel", "available", "native_error", "server"]

_ACCESS_RW = "rw"


def available() -> bool:
    """Whether the compiled engine can be loaded."""
    return _native is not None


class NativeSwitchModel:
    """The compiled switch engine, a drop-in for :class:`~hostdrv.switch.reference.SwitchModel`.

    Parameters
    ----------
    capacity, record_bytes, max_slots, max_elems, build_hash, jobs:
        As :class:`~hostdrv.switch.reference.SwitchModel` (same checks, same errors);
        ``jobs`` is ``JOBS``, the register pages (1 .. ``MAX_JOBS``, docs/protocol.md
        section 11).
    module:
        The extension module to use (tests pass a copy built with a planted bug).

    Raises
    ------
    ValueError
        When a parameter is out of range.
    RuntimeError
        When the extension is not built.
    """

    def __init__(self, *, capacity: int = 1024, record_bytes: int = 128, max_slots: int = 64,
                 max_elems: int = 352, build_hash: int = 0, jobs: int = 1,
                 module: object = None) -> None:
        check_params(capacity, record_bytes, max_slots, max_elems, build_hash)
        if isinstance(jobs, bool) or not isinstance(jobs, int) or not 1 <= jobs <= consts.MAX_JOBS:
            raise ValueError(f"jobs={jobs!r} is invalid: must be 1 .. {consts.MAX_JOBS}")
        mod = module if module is not None else _native
        if mod is None:
            raise RuntimeError(native_error)
        self.jobs = jobs
        self.engine = mod.Engine(capacity, record_bytes, max_slots, max_elems, build_hash, jobs)
        self._process = self.engine.process

    # -- registers -------------------------------------------------------------
    def _address(self, reg: str | int, job: int) -> tuple[regmap.Register, int]:
        """The register ``reg`` of job ``job`` (a page address names its job itself, then
        ``job`` must be 0) and its byte address in this switch (as ``SwitchModel._resolve``).

        Raises
        ------
        UnknownRegisterError
            No such register in this switch (a job at or above ``JOBS``, a global register
            outside page 0).
        ValueError
            A page address with a ``job`` other than 0.
        """
        j, r = resolve(reg, job, self.jobs)
        return r, j * regmap.JOB_PAGE + r.addr

    def read(self, reg: str | int, job: int = 0) -> int:
        """Read a register by name or byte address, of job ``job`` (as :meth:`SwitchModel.read`)."""
        return self.engine.read(self._address(reg, job)[1])

    def write(self, reg: str | int, value: int, job: int = 0) -> None:
        """Write a register by name or byte address, of job ``job`` (as
        :meth:`SwitchModel.write`).

        Raises
        ------
        ValueError
            For an unknown or read-only register, or an illegal value (the register map's
            rules, the job table's refusals); nothing changed.
        """
        r, addr = self._address(reg, job)
        name = r.name
        if r.access != _ACCESS_RW:
            raise ValueError(f"register {name} is read-only ({r.access})")
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise ValueError(f"register {name}: value {value!r} is not an integer")
        value = int(value)
        if not 0 <= value <= 0xFFFFFFFF:
            raise ValueError(f"register {name}: value {value:#x} out of range: "
                             f"must be an unsigned {r.width}-bit value")
        status, why = self.engine.write(addr, value)
        if status:
            raise ValueError(f"register {name}: value {value:#x} out of range: {why}")

    def counters(self, job: int = 0) -> dict[str, int]:
        """Every ``CNT_*`` register of job ``job``'s page by name, in register map order.

        Raises
        ------
        ValueError
            For a job the switch does not have.
        """
        if isinstance(job, bool) or not isinstance(job, int) or not 0 <= job < self.jobs:
            raise ValueError(f"job {job!r} out of range 0 .. {self.jobs - 1}")
        return dict(zip(regmap.COUNTERS, self.engine.counters(job), strict=True))

    # -- frames ----------------------------------------------------------------
    def process(self, frame: bytes, src_port: int) -> list[Egress]:
        """Process one input frame (as :meth:`SwitchModel.process`; ValueError when
        ``src_port`` is not one-hot)."""
        check_src_port(src_port)
        return [Egress(f, p) for f, p in self._process(frame, src_port)]


def server(model: NativeSwitchModel, fd: int, control: object, *,
           log_arrivals: bool = False) -> object:
    """The native socket loop (``hostdrv/native/nrl_server.cpp``) serving ``model`` on the
    bound non-blocking UDP socket ``fd``; ``control(data, host, port) -> bytes`` answers
    control requests. ``serve(poll_ms)`` runs it (GIL released) until ``stop()``;
    ``stats()`` returns its figures; with ``log_arrivals``, ``arrivals()`` returns (and
    forgets) the GRADIENT datagrams received since the last call as (slot, seq,
    worker, aux, payload) tuples."""
    module = sys.modules[type(model.engine).__module__]  # the engine's own extension module
    return module.Server(model.engine, fd, control, log_arrivals)
