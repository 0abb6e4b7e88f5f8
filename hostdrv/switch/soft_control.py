"""The soft switch's control channel: register reads and writes in ``NRLC`` datagrams.

:class:`ControlServer` is the part of :class:`~hostdrv.switch.soft.SoftSwitch` that
executes control requests (format in :mod:`hostdrv.wire.control`) and the
:meth:`read`/:meth:`write` it offers in-process: which sources it trusts (loopback,
or requests signed with the control key), the reply cache for retries, and the
server's own registers (``SRV_RX_OVERFLOW``, ``SRV_CTRL_REFUSED``). The rules are
in the module documentation of :mod:`hostdrv.switch.soft` (Control channel).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from hostdrv.switch.engine import Engine
from hostdrv.wire import regmap
from hostdrv.wire.control import (
    CONTROL,
    CONTROL_MAGIC,
    CONTROL_READ,
    CONTROL_REPLY,
    CONTROL_WRITE,
    ControlReplayGuard,
    ControlStatus,
    SignedRequest,
    parse_signed,
)

_M32 = 0xFFFFFFFF
_CTRL_CLEAR = 1 << 31
_SERVER_STATS = {"SRV_RX_OVERFLOW": "rx_overflow", "SRV_CTRL_REFUSED": "ctrl_refused"}
"""Server register → the :attr:`SoftSwitch.stats` figure it counts (since the last clear)."""
assert set(_SERVER_STATS) == set(regmap.SERVER_COUNTERS)


class ControlServer:
    """The control channel of a soft switch (a mixin of :class:`~hostdrv.switch.soft.SoftSwitch`,
    which sets the attributes below)."""

    model: Engine
    lock: threading.Lock
    _control_key: bytes | None
    _guard: ControlReplayGuard
    _replies: dict[tuple[str, int], tuple[bytes, bytes]]
    _stats: dict[str, int]
    _srv_base: dict[str, int]
    _tables_valid: bool
    _last_addr: dict[int, tuple[str, int]]

    if TYPE_CHECKING:
        def _sync_stats(self) -> None: ...

    # -- register access (thread safe) ---------------------------------------------
    def _reg_read(self, name: str) -> int:
        stat = _SERVER_STATS.get(name)
        if stat is not None:
            self._sync_stats()
            return (self._stats[stat] - self._srv_base[stat]) & _M32
        return self.model.read(name)

    def _reg_write(self, name: str, value: int) -> None:
        self.model.write(name, value)  # ValueError: read-only or out of range, nothing changed
        self._tables_valid = False
        if name == "CTRL" and value & _CTRL_CLEAR:
            self._sync_stats()
            self._srv_base = {k: self._stats[k] for k in self._srv_base}
        elif name.startswith("MEMBER_"):
            self._last_addr.pop(int(name.rsplit("_", 1)[1]), None)

    def read(self, reg: str | int) -> int:
        """Read a register (by name or address): the model's, or the server's ``SRV_*``.

        Raises
        ------
        UnknownRegisterError
            For an unknown name or address (a ``ValueError``).
        """
        name = regmap.lookup(reg).name
        with self.lock:
            return self._reg_read(name)

    def write(self, reg: str | int, value: int) -> None:
        """Write a model register (by name or address), as the control channel does.

        ``CTRL`` bit 31 also clears the server's ``SRV_*`` counters; a write to a
        member entry's register forgets the address a ``MEMBER_UDP`` = 0 member
        last sent from.

        Raises
        ------
        ValueError
            For an unknown (:class:`~hostdrv.errors.UnknownRegisterError`) or read-only
            register or an illegal value; nothing changed.
        """
        name = regmap.lookup(reg).name
        with self.lock:
            self._reg_write(name, value)

    def counters(self) -> dict[str, int]:
        """Every counter of the model by name."""
        with self.lock:
            return self.model.counters()

    def server_counters(self) -> dict[str, int]:
        """The server's own counters (``SRV_RX_OVERFLOW``, ``SRV_CTRL_REFUSED``) by name."""
        with self.lock:
            return {name: self._reg_read(name) for name in regmap.SERVER_COUNTERS}

    # -- serving -----------------------------------------------------------------
    def _control(self, data: memoryview, addr: tuple[str, int]) -> bytes:
        """Execute one control request and return the reply datagram.

        Without a control key: executed when from loopback, a retry (the same 16
        bytes from the same address as the last request) answered from the
        per-address cache. With a key: the :class:`~hostdrv.wire.control.ControlReplayGuard`
        rules (``docs/protocol.md`` section 9).
        """
        self._stats["control"] += 1
        short = len(data) < CONTROL.size
        _m, op, _z, tag, reg, value = (CONTROL_MAGIC, 0, 0, 0, 0, 0) if short \
            else CONTROL.unpack_from(data)
        ckey = self._control_key
        signed: SignedRequest | None = None
        cached: bytes | None = None
        if ckey is None:
            why = "" if _is_loopback(addr[0]) else (
                "this switch executes control requests from loopback addresses only (started "
                "with --control-key FILE it executes signed requests from any address)")
        else:
            parsed = parse_signed(data, ckey)
            if isinstance(parsed, str):
                why = parsed
            else:
                signed = parsed
                why, cached = self._guard.check(parsed)
        if why:  # nothing executed, nothing cached
            if signed is None or signed.session != 0:  # session 0: a client learning it
                self._stats["ctrl_refused"] += 1
            # a request signed for another session learns this one from the reply's value
            session = self._guard.session
            named = session if signed is not None and signed.session != session else 0
            return CONTROL.pack(CONTROL_MAGIC, (op | CONTROL_REPLY) & 0xFF,
                                ControlStatus.UNAUTHENTICATED, tag, reg, named) \
                + f"request from {addr[0]}: {why}".encode()
        if cached is not None:
            return cached  # a retry: answer again, do not execute twice
        if short:
            return CONTROL.pack(CONTROL_MAGIC, CONTROL_REPLY, ControlStatus.BAD_REQUEST, 0, 0, 0) \
                + b"request shorter than 16 bytes"
        key = bytes(data[:CONTROL.size])
        if signed is None:
            hit = self._replies.get(addr)
            if hit is not None and hit[0] == key:
                return hit[1]  # a retried request: answer again, do not execute twice
        status, text, out = ControlStatus.OK, "", 0
        r = regmap.find(reg)
        name = r.name if r is not None else ""
        if r is None:
            status, text = ControlStatus.UNKNOWN_REGISTER, f"no register at address 0x{reg:03X}"
        elif op == CONTROL_READ:
            out = self._reg_read(name)
        elif op == CONTROL_WRITE:
            if r.access != "rw":
                status, text = ControlStatus.READ_ONLY, f"register {name} is read-only"
            else:
                try:
                    self._reg_write(name, value)
                    out = value
                except ValueError as e:
                    status, text = ControlStatus.ILLEGAL_VALUE, str(e)
        else:
            status, text = ControlStatus.BAD_REQUEST, f"unknown op {op} (1 read, 2 write)"
        reply = CONTROL.pack(CONTROL_MAGIC, op | CONTROL_REPLY, status, tag, reg, out & 0xFFFFFFFF) \
            + text.encode()
        if signed is not None:
            self._guard.remember(signed, reply)
            return reply
        if len(self._replies) > 4096:
            self._replies.clear()
        self._replies[addr] = (key, reply)
        return reply

    def _native_control(self, data: bytes, host: str, port: int) -> bytes:
        """A control request the native loop hands back (it sends the reply)."""
        with self.lock:
            return self._control(memoryview(data), (host, port))


def _is_loopback(host: str) -> bool:
    """Whether ``host`` (as a socket reports a peer) is a loopback address."""
    return host.startswith("127.") or host in ("::1", "localhost") or host.startswith("::ffff:127.")
