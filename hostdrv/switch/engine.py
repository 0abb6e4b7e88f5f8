"""The interface every switch engine offers the servers.

:class:`Engine` is what :class:`hostdrv.switch.soft.SoftSwitch` (and so the sim
switch, :class:`hostdrv.switch.sim.SimSwitch`) calls on the switch it serves:
the reference model (:class:`hostdrv.switch.reference.SwitchModel`), its
compiled twin (:class:`hostdrv.switch.native.NativeSwitchModel`) and the RTL in
Verilator (:class:`hostdrv.switch.rtl.RtlSwitch`) all satisfy it, structurally
(no base class to inherit: ``isinstance(x, Engine)`` checks the methods).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from hostdrv.switch.reference import Egress

__all__ = ["Engine"]


@runtime_checkable
class Engine(Protocol):
    """A switch: registers by name or address, counters, and one frame in, frames out."""

    def read(self, reg: str | int) -> int:
        """The 32-bit value of register ``reg`` (name or byte address)."""
        ...

    def write(self, reg: str | int, value: int) -> None:
        """Write register ``reg``; ``ValueError`` for a refused value (nothing changes)."""
        ...

    def counters(self) -> dict[str, int]:
        """Every counter by name, register map order (a new dict)."""
        ...

    def process(self, frame: bytes, src_port: int) -> list[Egress]:
        """The frames emitted for one input ``frame`` from one-hot port ``src_port``."""
        ...
