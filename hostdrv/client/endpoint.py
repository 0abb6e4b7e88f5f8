"""What both clients share: control, transport, member registration, sequence ids.

:class:`Endpoint` is the base of :class:`~hostdrv.client.aggregator.Aggregator` and
:class:`~hostdrv.client.replay.ReplayClient`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from hostdrv.client.control import SwitchControl
from hostdrv.client.transport import Backend, DatagramTransport, UdpDatagramTransport, open_datagram
from hostdrv.wire import regmap
from hostdrv.wire.net import ip_to_int
from hostdrv.wire.protocol import MAX_MEMBERS

try:
    import hostdrv._native as _native
except ImportError:  # not built: the clients run their Python loops
    _native = None

_M32 = 0xFFFFFFFF
_RECV_BYTES = 65536


class Endpoint:
    """A member of the switch's job: control channel, datagram transport, member entry.

    Checks ``worker`` and ``job`` against the switch (``JOB_ID``), opens the
    transport for ``url`` and, with ``register``, writes the member entry
    (:meth:`register`). Sequence ids start at a random value.
    """

    def __init__(self, url: str, *, worker: int, job: int, register: bool, roles: int,
                 port: int | None, member_address: tuple[str, int] | None,
                 control: str | SwitchControl | None,
                 backends: Mapping[str, Backend] | None) -> None:
        if not 0 <= worker < MAX_MEMBERS:
            raise ValueError(f"bad worker={worker!r}: member ids are 0..{MAX_MEMBERS - 1}")
        if not 0 <= job <= 0xFF:
            raise ValueError(f"bad job={job!r}: must be 0..255")
        self.url = url
        self.worker = worker
        self.job = job
        self.control = control if isinstance(control, SwitchControl) else SwitchControl(
            control or url, backends=backends)
        try:
            switch_job = self.control.read("JOB_ID")
            if switch_job != job:
                raise ValueError(f"bad job={job}: the switch at {url} runs JOB_ID={switch_job}; "
                                 "every packet of another job would be dropped (CNT_DROP_BAD_JOB)")
            self.transport: DatagramTransport = open_datagram(url, backends=backends)
        except BaseException:
            self.control.close()
            raise
        self._rbuf = bytearray(_RECV_BYTES)
        self._seq = int.from_bytes(os.urandom(4), "little")
        if register:
            self.register(roles, port=port, address=member_address)

    def register(self, roles: int, *, port: int | None = None,
                 address: tuple[str, int] | None = None) -> None:
        """Write this endpoint's member table entry and add ``roles`` to its role bits.

        Parameters
        ----------
        roles:
            Role bits to set (``ROLE_WORKER``, ``ROLE_ACTOR``, ``ROLE_LEARNER``).
        port:
            One-hot switch port (default ``1 << worker``, the soft switch's
            convention of one virtual port per member).
        address:
            (IPv4, UDP port) the switch sees this endpoint as (default: the
            socket's own address).
        """
        ctl, w = self.control, self.worker
        ip, udp = address if address is not None else self.transport.local_address
        ctl.write(regmap.member_reg("MEMBER_PORT", w), port if port is not None else 1 << w)
        ctl.write(regmap.member_reg("MEMBER_IP", w), ip_to_int(ip))
        ctl.write(regmap.member_reg("MEMBER_UDP", w), udp)
        role = ctl.read(regmap.member_reg("MEMBER_ROLE", w))
        ctl.write(regmap.member_reg("MEMBER_ROLE", w), role | roles)

    def _native(self) -> Any:
        """The native library (``hostdrv/native/nrl_client.cpp``) when the per-packet loops
        run in it: a UDP transport (or one with ``native_loops``: a DPDK port), the extension
        built, not ``NRL_NATIVE_CLIENT=0``; else
        ``None`` (the Python loops, which the native ones follow decision for decision)."""
        if (_native is not None and (type(self.transport) is UdpDatagramTransport
                                     or getattr(self.transport, "native_loops", False))
                and os.environ.get("NRL_NATIVE_CLIENT", "1") != "0"):
            return _native
        return None

    def _next_seq(self) -> int:
        self._seq = (self._seq + 1) & _M32
        return self._seq

    def close(self) -> None:
        """Release the transport and the control channel."""
        self.transport.close()
        self.control.close()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["Endpoint"]
