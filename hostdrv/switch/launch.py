"""Start a switch from client code without importing the switch package's internals.

The torch backend (:mod:`hostdrv.client.torch_backend`) embeds a soft switch when
it is given no URL; this is the one door from :mod:`hostdrv.client` into
:mod:`hostdrv.switch`, so a client module never names a server class and the
server modules load only when a switch is really started.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["EmbeddedSwitch", "start_soft_switch"]


class EmbeddedSwitch(Protocol):
    """A running switch: where clients reach it, and how to stop it."""

    @property
    def url(self) -> str:
        """``soft://host:port``."""
        ...

    def close(self) -> None:
        """Stop serving and release the socket."""
        ...


def start_soft_switch(host: str = "127.0.0.1", port: int = 0, **params: int) -> EmbeddedSwitch:
    """A soft switch serving on ``host:port`` in a thread of this process, started.

    Parameters
    ----------
    host, port:
        Address to bind (port 0 picks a free one; the switch's ``url`` says which).
    **params:
        Switch parameters, as :class:`hostdrv.switch.soft.SoftSwitch` takes them
        (``max_elems=...``).
    """
    from hostdrv.switch.soft import SoftSwitch

    return SoftSwitch((host, port), **params).start()  # type: ignore[arg-type]
