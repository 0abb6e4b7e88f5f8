"""The soft switch's control channel: register reads and writes in ``NRLC`` datagrams.

:class:`ControlServer` is the part of :class:`~hostdrv.switch.soft.SoftSwitch` that
executes control requests (format in :mod:`hostdrv.wire.control`) and the
:meth:`read`/:meth:`write` it offers in-process: which sources it trusts (loopback,
or requests signed with the admin key or a job's key), what a job's key may write,
the reply cache for retries, and the server's own registers (``SRV_RX_OVERFLOW``,
``SRV_CTRL_REFUSED``). Registers are reached by byte address, a job's page included
(``docs/protocol.md`` section 11): the model takes page addresses. The rules are in
the module documentation of :mod:`hostdrv.switch.soft` (Control channel).
"""

from __future__ import annotations

import argparse
import os
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from hostdrv.errors import UnknownRegisterError
from hostdrv.switch.engine import Engine
from hostdrv.wire import regmap
from hostdrv.wire.consts import MAX_JOBS
from hostdrv.wire.control import (
    ADMIN_KEY_ID,
    CONTROL,
    CONTROL_MAGIC,
    CONTROL_READ,
    CONTROL_REPLY,
    CONTROL_WRITE,
    ControlReplayGuard,
    ControlStatus,
    SignedRequest,
    job_key_id,
    key_job,
    load_control_key,
    parse_signed,
)

_M32 = 0xFFFFFFFF
_CTRL_CLEAR = 1 << 31
_SERVER_STATS = {"SRV_RX_OVERFLOW": "rx_overflow", "SRV_CTRL_REFUSED": "ctrl_refused"}
"""Server register → the :attr:`SoftSwitch.stats` figure it counts (since the last clear)."""
assert set(_SERVER_STATS) == set(regmap.SERVER_COUNTERS)


KeySource = bytes | str | os.PathLike[str]
"""A control key: its bytes (whitespace around them stripped), or a file holding it."""


def _load_key(source: KeySource, what: str) -> bytes:
    if isinstance(source, bytes | bytearray):
        key = bytes(source).strip()
        if not key:
            raise ValueError(f"bad {what}: empty")
        return key
    return load_control_key(source)


def control_keys(control_key: KeySource | None,
                 job_keys: Mapping[int, KeySource] | None, jobs: int = MAX_JOBS) -> dict[int, bytes]:
    """A switch's keys by key id: the admin key (``--control-key``) at 0, job j's key
    (``--job-key J:FILE``) at j + 1; empty without keys (unsigned requests from loopback).

    Raises
    ------
    ValueError
        An empty key, job keys without an admin key, or a job not below ``jobs``.
    OSError
        A key file that cannot be read (:class:`~hostdrv.wire.net.TransportError`).
    """
    keys: dict[int, bytes] = {}
    if control_key is not None:
        keys[ADMIN_KEY_ID] = _load_key(control_key, "control_key")
    for job, source in (job_keys or {}).items():
        if isinstance(job, bool) or not isinstance(job, int) or not 0 <= job < jobs:
            raise ValueError(f"bad job key for job {job!r}: this switch serves jobs 0..{jobs - 1}")
        keys[job_key_id(job)] = _load_key(source, f"key of job {job}")
    if keys and ADMIN_KEY_ID not in keys:
        raise ValueError("job keys (--job-key) need an admin key (--control-key FILE): a switch "
                         "with keys executes signed requests only, and only the admin key "
                         "writes the global and admin registers")
    return keys


def parse_job_key(text: str) -> tuple[int, str]:
    """``J:FILE`` of ``--job-key`` as (J, FILE) (an ``argparse`` type)."""
    job, sep, path = text.partition(":")
    try:
        j = int(job)
    except ValueError:
        j = -1
    if not sep or not path or not 0 <= j < MAX_JOBS:
        raise argparse.ArgumentTypeError(f"expected J:FILE with J in 0..{MAX_JOBS - 1}, "
                                         f"got {text!r}")
    return j, path


def job_key_refusal(key_id: int, addr: int) -> str:
    """Why a write to ``addr`` under key ``key_id`` is forbidden, or ``""`` when it may be
    made: the admin key writes everything, job j's key only page j's job registers that
    are not *admin* (``docs/protocol.md`` section 11). An address with no register is
    not refused here (the switch answers it as no register)."""
    kj = key_job(key_id)
    page, r = regmap.split(addr)
    if kj is None or r is None or (r.job and not r.admin and page == kj):
        return ""
    what = (f"{r.name} is a global register" if not r.job
            else f"{r.name} is an admin register" if r.admin
            else f"{regmap.label(addr)} is job {page}'s")
    return (f"job {kj}'s key (key id {key_id}) writes only job {kj}'s job registers that are "
            f"not admin (its AGG_*, member table, RPL_* and JOB_LEASE); {what}: write it "
            "with the admin key")


class ControlServer:
    """The control channel of a soft switch (a mixin of :class:`~hostdrv.switch.soft.SoftSwitch`,
    which sets the attributes below)."""

    model: Engine
    lock: threading.Lock
    _control_key: bytes | None
    _keys: dict[int, bytes]
    _guard: ControlReplayGuard
    _replies: dict[tuple[str, int], tuple[bytes, bytes]]
    _stats: dict[str, int]
    _srv_base: dict[str, int]
    _tables_valid: bool
    _last_addr: dict[tuple[int, int], tuple[str, int]]

    if TYPE_CHECKING:
        def _sync_stats(self) -> None: ...

    # -- register access by byte address, pages included (thread safe) -------------
    def _reg_read(self, addr: int) -> int:
        _job, r = regmap.split(addr)
        stat = _SERVER_STATS.get(r.name) if r is not None and r.server else None
        if stat is not None:
            self._sync_stats()
            return (self._stats[stat] - self._srv_base[stat]) & _M32
        return self.model.read(addr)  # UnknownRegisterError: no such register or page

    def _reg_write(self, addr: int, value: int) -> None:
        self.model.write(addr, value)  # ValueError: read-only or out of range, nothing changed
        self._tables_valid = False
        job, r = regmap.split(addr)
        name = r.name if r is not None else ""
        if name == "CTRL" and value & _CTRL_CLEAR:
            self._sync_stats()
            self._srv_base = {k: self._stats[k] for k in self._srv_base}
        elif name.startswith("MEMBER_"):
            self._last_addr.pop((job, int(name.rsplit("_", 1)[1])), None)

    @staticmethod
    def _address(reg: str | int, job: int) -> int:
        """The byte address of ``reg`` (a name, or an address in any page) in job ``job``'s
        page (``job`` = 0: as given)."""
        if isinstance(reg, str) or job:
            return regmap.job_address(reg if isinstance(reg, str) else regmap.lookup(reg), job)
        regmap.lookup(reg)  # UnknownRegisterError
        return int(reg)

    def read(self, reg: str | int, job: int = 0) -> int:
        """Read a register (by name or byte address, page addresses included; ``job``: that
        job's copy of a job register): the model's, or the server's ``SRV_*``.

        Raises
        ------
        UnknownRegisterError
            For an unknown name or address, or a page the switch does not have (a
            ``ValueError``).
        """
        addr = self._address(reg, job)
        with self.lock:
            return self._reg_read(addr)

    def write(self, reg: str | int, value: int, job: int = 0) -> None:
        """Write a model register (by name or byte address; ``job``: that job's copy), as
        the control channel does with the admin key.

        ``CTRL`` bit 31 also clears the server's ``SRV_*`` counters; a write to a
        member entry's register forgets the address a ``MEMBER_UDP`` = 0 member
        last sent from.

        Raises
        ------
        ValueError
            For an unknown (:class:`~hostdrv.errors.UnknownRegisterError`) or read-only
            register or an illegal value; nothing changed.
        """
        addr = self._address(reg, job)
        with self.lock:
            self._reg_write(addr, value)

    def counters(self, job: int = 0) -> dict[str, int]:
        """Every counter of the model by name (``job``: that job's page)."""
        with self.lock:
            return self.model.counters(job) if job else self.model.counters()

    def server_counters(self) -> dict[str, int]:
        """The server's own counters (``SRV_RX_OVERFLOW``, ``SRV_CTRL_REFUSED``) by name."""
        with self.lock:
            return {name: self._reg_read(regmap.REGISTERS[name].addr)
                    for name in regmap.SERVER_COUNTERS}

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
        keys = self._keys
        signed: SignedRequest | None = None
        cached: bytes | None = None
        if not keys:
            why = "" if _is_loopback(addr[0]) else (
                "this switch executes control requests from loopback addresses only (started "
                "with --control-key FILE it executes signed requests from any address)")
        else:
            parsed = parse_signed(data, keys)
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
        status, text, out = self._execute(op, reg, value,
                                          signed.key_id if signed is not None else ADMIN_KEY_ID)
        reply = CONTROL.pack(CONTROL_MAGIC, op | CONTROL_REPLY, status, tag, reg, out & 0xFFFFFFFF) \
            + text.encode()
        if signed is not None:
            self._guard.remember(signed, reply)
            return reply
        if len(self._replies) > 4096:
            self._replies.clear()
        self._replies[addr] = (key, reply)
        return reply

    def _execute(self, op: int, addr: int, value: int, key_id: int) -> tuple[int, str, int]:
        """(status, reason, value) of an authenticated request under key ``key_id``."""
        job, r = regmap.split(addr)
        if r is None:
            return ControlStatus.UNKNOWN_REGISTER, f"no register at address 0x{addr:03X}", 0
        if op not in (CONTROL_READ, CONTROL_WRITE):
            return ControlStatus.BAD_REQUEST, f"unknown op {op} (1 read, 2 write)", 0
        if op == CONTROL_WRITE:
            forbidden = job_key_refusal(key_id, addr)
            if forbidden:
                self._stats["ctrl_refused"] += 1
                return ControlStatus.FORBIDDEN, forbidden, 0
            if r.access != "rw":
                return ControlStatus.READ_ONLY, f"register {regmap.label(addr)} is read-only", 0
        try:
            if op == CONTROL_READ:
                return ControlStatus.OK, "", self._reg_read(addr)
            self._reg_write(addr, value)
            return ControlStatus.OK, "", value
        except UnknownRegisterError:
            return (ControlStatus.UNKNOWN_REGISTER,
                    f"no register at address 0x{addr:03X}: {regmap.label(addr)} is in page "
                    f"{job}, and this switch has JOBS={self._reg_read(regmap.JOBS)} jobs", 0)
        except ValueError as e:
            return ControlStatus.ILLEGAL_VALUE, str(e), 0

    def _native_control(self, data: bytes, host: str, port: int) -> bytes:
        """A control request the native loop hands back (it sends the reply)."""
        with self.lock:
            return self._control(memoryview(data), (host, port))


def _is_loopback(host: str) -> bool:
    """Whether ``host`` (as a socket reports a peer) is a loopback address."""
    return host.startswith("127.") or host in ("::1", "localhost") or host.startswith("::ffff:127.")
