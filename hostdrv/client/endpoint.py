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
from hostdrv.wire.consts import MAX_JOBS
from hostdrv.wire.net import ip_to_int
from hostdrv.wire.protocol import MAX_MEMBERS

try:
    import hostdrv._native as _native
except ImportError:  # not built: the clients run their Python loops
    _native = None

_M32 = 0xFFFFFFFF
_RECV_BYTES = 65536


class Endpoint:
    """A member of one of the switch's jobs: control channel, datagram transport, member entry.

    ``page`` is the job (register page, ``docs/protocol.md`` section 11) the endpoint
    belongs to: its control reads and writes that page's job registers, and the ``job``
    byte of its messages is that page's ``JOB_ID``. ``job`` (the id) defaults to it; a
    ``job`` given is checked against it. Without ``page``: job 0's page, and ``job``
    (default 0) must be its ``JOB_ID``. Opens the transport for ``url`` and, with
    ``register``, writes the member entry (:meth:`register`). Sequence ids start at a
    random value. On a switch with keys (section 11) pass ``control=SwitchControl(url,
    key_file=FILE, job=page)``, FILE job ``page``'s key (or the admin key with ``key_id=0``).
    """

    def __init__(self, url: str, *, worker: int, job: int | None, register: bool, roles: int,
                 port: int | None, member_address: tuple[str, int] | None,
                 control: str | SwitchControl | None,
                 backends: Mapping[str, Backend] | None, page: int | None = None) -> None:
        if not 0 <= worker < MAX_MEMBERS:
            raise ValueError(f"bad worker={worker!r}: member ids are 0..{MAX_MEMBERS - 1}")
        if job is not None and not 0 <= job <= 0xFF:
            raise ValueError(f"bad job={job!r}: must be 0..255")
        if page is not None and (isinstance(page, bool) or not isinstance(page, int)
                                 or not 0 <= page < MAX_JOBS):
            raise ValueError(f"bad page={page!r}: a job (register page) is 0..{MAX_JOBS - 1}")
        self.url = url
        self.worker = worker
        self.page = 0 if page is None else page
        """The job (register page) this endpoint is a member of."""
        if isinstance(control, SwitchControl):
            if control.job != self.page:
                raise ValueError(f"bad control: it addresses job {control.job}'s page, this "
                                 f"endpoint is job {self.page}'s (SwitchControl(..., "
                                 f"job={self.page}))")
            self.control = control
        else:
            self.control = SwitchControl(control or url, backends=backends, job=page)
        try:
            switch_job = self.control.read("JOB_ID")
            want = switch_job if job is None and page is not None else (job or 0)
            if switch_job != want:
                raise ValueError(f"bad job={want}: the switch at {url} runs JOB_ID={switch_job}"
                                 + (f" in job {self.page}'s page" if self.page else "")
                                 + "; every packet of another job would be dropped "
                                 "(CNT_DROP_BAD_JOB)")
            if page is not None and not self.control.read("JOB_ENABLE") >> page & 1:
                raise ValueError(f"bad page={self.page}: job {self.page} is not enabled on the "
                                 f"switch at {url} (JOB_ENABLE): admit it first "
                                 "(hostdrv.client.jobs.admit, netrl jobs admit)")
            self.job = switch_job
            """The ``job`` byte of this endpoint's messages (its page's ``JOB_ID``)."""
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
