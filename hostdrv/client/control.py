"""Control plane: read and write switch registers by name, configure jobs.

:class:`SwitchControl` is the block driver for the register file
(``docs/registers.md``); how the accesses travel is the transport's business
(:mod:`hostdrv.client.transport`), so the same code drives the soft switch, the RTL
in simulation and the board.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass

from hostdrv.client.transport import (
    Backend,
    RegisterAccessError,  # noqa: F401 - re-exported: the same class as RegisterError
    RegisterTransport,
    open_registers,
)
from hostdrv.errors import NetrlError, RegisterError
from hostdrv.wire import consts as C
from hostdrv.wire import regmap
from hostdrv.wire.net import int_to_ip, ip_to_int, parse_hostport
from hostdrv.wire.protocol import MAX_MEMBERS, VERSION
from hostdrv.wire.ratelimit import RateLimiterConfig, RateLimiterState

MAGIC_VALUE = regmap.REGISTERS["MAGIC"].reset
"""Value of the ``MAGIC`` register: ASCII ``NRL1``."""

ROLE_WORKER = C.ROLE_WORKER
"""``MEMBER_ROLE`` bit: aggregation worker."""
ROLE_ACTOR = C.ROLE_ACTOR
"""``MEMBER_ROLE`` bit: replay actor (PUSH)."""
ROLE_LEARNER = C.ROLE_LEARNER
"""``MEMBER_ROLE`` bit: replay learner (SAMPLE_REQ, UPDATE)."""

CTRL_AGG = C.CTRL_AGG_ENABLE
CTRL_REPLAY = C.CTRL_RPL_ENABLE
CTRL_CLEAR = C.CTRL_CLEAR_COUNTERS

_PORT_VALUES = frozenset([0] + [1 << i for i in range(8)])
"""Legal ``MEMBER_PORT`` values: 0 (entry unused) or one port bit."""


class IdentityError(NetrlError, RuntimeError):
    """The device at the URL is not a netfpga-rl switch of a compatible version.

    Attributes
    ----------
    field:
        ``"MAGIC"`` or ``"VERSION"``.
    value:
        The value read.
    """

    def __init__(self, field: str, value: int, reason: str) -> None:
        self.field = field
        self.value = value
        super().__init__(f"bad {field}=0x{value:08X}: {reason}")


@dataclass(frozen=True)
class SwitchIdentity:
    """What ``MAGIC``, ``VERSION`` and ``BUILD_HASH`` say.

    Attributes
    ----------
    magic:
        ``0x4E524C31`` (``NRL1``).
    major, minor:
        Register file version; ``major`` is the protocol version.
    build_hash:
        First 32 bits of the git commit of the bitstream (0 for the soft switch
        unless set).
    """

    magic: int
    major: int
    minor: int
    build_hash: int


class SwitchControl:
    """Register access and configuration of one switch.

    Parameters
    ----------
    url:
        Switch URL (``soft://127.0.0.1:20050``, see :mod:`hostdrv.client.transport`).
    timeout:
        Seconds to wait for each register reply.
    retries:
        Attempts before :class:`~hostdrv.client.transport.SwitchTimeoutError`.
    transport:
        An already open register transport (``url`` is then only a label).
    backends:
        Backend table overriding :data:`hostdrv.client.transport.BACKENDS`.
    key_file:
        File holding the control key of a soft or sim switch started with
        ``--control-key``: every request is signed with it (``docs/protocol.md``
        section 9). Default: the URL's ``?key=FILE`` query, else the
        ``NETRL_CONTROL_KEY`` environment variable, else unsigned requests
        (which a switch executes from loopback only, and only without a key).
    job:
        The job whose page the job registers are read and written in (``AGG_*``, the
        member table, ``RPL_*``, ``JOB_*``, the counters; ``docs/protocol.md`` section
        11); global registers are page 0's whatever it is. ``None``: job 0.
    key_id:
        Byte 5 of the signed requests: which key ``key_file`` holds. 0 (the default): the
        admin key (``--control-key``), whatever page ``job`` addresses; j + 1
        (:func:`~hostdrv.wire.control.job_key_id`) for job j's key (``--job-key J:FILE``).

    Examples
    --------
    >>> ctl = SwitchControl("soft://127.0.0.1:20050")       # doctest: +SKIP
    >>> ctl.configure_aggregation(members=4, slots=16, packet_elems=256)  # doctest: +SKIP
    >>> ctl.counters()["CNT_RX_GRADIENT"]                   # doctest: +SKIP
    0
    """

    def __init__(self, url: str, *, timeout: float = 0.25, retries: int = 8,
                 transport: RegisterTransport | None = None,
                 backends: Mapping[str, Backend] | None = None,
                 key_file: str | os.PathLike[str] | None = None,
                 job: int | None = None, key_id: int | None = None) -> None:
        if job is not None and (isinstance(job, bool) or not isinstance(job, int)
                                or not 0 <= job < C.MAX_JOBS):
            raise RegisterError("job", job, f"a job is 0..{C.MAX_JOBS - 1} (a register page)")
        self.url = url
        self.job = 0 if job is None else job
        """The job (register page) job registers are addressed in."""
        self.key_id = 0 if key_id is None else key_id
        """Byte 5 of the signed requests: 0 the admin key, j + 1 job j's."""
        options: dict[str, object] = {}
        if key_file is not None:
            options["key_file"] = key_file
        if self.key_id:
            options["key_id"] = self.key_id
        if transport is not None:
            self._t = transport
        else:
            self._t = open_registers(url, backends=backends, timeout=timeout, retries=retries,
                                     **options)

    # -- raw access ------------------------------------------------------------
    @staticmethod
    def _reg(name: str) -> regmap.Register:
        return regmap.lookup(name)  # UnknownRegisterError, a RegisterError

    def address(self, name: str, job: int | None = None) -> int:
        """The byte address ``name`` is read and written at: a job register's in job
        ``job``'s page (default :attr:`job`), a global register's own.

        Raises
        ------
        RegisterError
            Unknown register name, or a job below 0.
        """
        reg = self._reg(name)
        j = self.job if job is None else job
        return regmap.job_address(reg, j) if reg.job else reg.addr

    def read(self, name: str, *, job: int | None = None) -> int:
        """Read register ``name`` (e.g. ``"AGG_SLOTS"``, ``"MEMBER_IP_3"``): a job register
        in job ``job``'s page (default :attr:`job`).

        Raises
        ------
        RegisterError
            Unknown register name.
        RegisterAccessError
            The switch refused the access (:class:`~hostdrv.client.transport.ControlAuthError`
            when it is not authenticated; status 2 for a job the switch does not serve).
        SwitchTimeoutError
            The switch did not answer.
        """
        addr = self.address(name, job)
        try:
            return self._t.read(addr)
        except RegisterError as e:  # name the register (and its job), not its address
            if e.status is None:
                raise
            raise type(e)(regmap.label(addr), None, e.text, e.status) from None

    def write(self, name: str, value: int, *, job: int | None = None) -> None:
        """Write register ``name`` (a job register in job ``job``'s page, default :attr:`job`).

        Raises
        ------
        RegisterError
            Unknown or read-only register, or a value wider than the register
            (checked before anything is sent).
        RegisterAccessError
            The switch refused the value (e.g. ``AGG_ELEMS`` not a multiple of 16,
            ``MEMBER_PORT_i`` not 0 or one-hot, a job share that overlaps another's:
            status 3), or the request (:class:`~hostdrv.client.transport.ControlAuthError`,
            status 5: not from loopback, or not signed with a key of the switch;
            :class:`~hostdrv.client.transport.ControlForbiddenError`, status 6: a job's key
            writing outside its job's non-admin job registers). The error names the
            register as ``NAME@j`` in job j's page.
        SwitchTimeoutError
            The switch did not answer.
        """
        reg = self._reg(name)
        if reg.access != "rw":
            raise RegisterError(name, value, f"register is read-only ({reg.access})")
        if isinstance(value, bool) or not isinstance(value, int):
            raise RegisterError(name, value, "value must be an integer")
        if not 0 <= value < (1 << reg.width) and not (name == "CTRL" and value >> 31 == 1):
            raise RegisterError(name, value, f"must be an unsigned {reg.width}-bit value")
        addr = self.address(name, job)
        try:
            self._t.write(addr, value)
        except RegisterError as e:  # name the register (and its job), not its address
            if e.status is None:
                raise
            raise type(e)(regmap.label(addr), value, e.text, e.status) from None

    def close(self) -> None:
        """Release the transport."""
        self._t.close()

    def __enter__(self) -> SwitchControl:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- identity and counters ---------------------------------------------------
    def identity(self) -> SwitchIdentity:
        """Read and check ``MAGIC``, ``VERSION``, ``BUILD_HASH``.

        Raises
        ------
        IdentityError
            ``MAGIC`` is not ``NRL1`` or the major version is not the protocol
            version this driver speaks.
        """
        magic = self.read("MAGIC")
        if magic != MAGIC_VALUE:
            raise IdentityError("MAGIC", magic, f"expected 0x{MAGIC_VALUE:08X} ('NRL1'): "
                                f"{self.url} is not a netfpga-rl switch")
        version = self.read("VERSION")
        major, minor = version >> 16, version & 0xFFFF
        if major != VERSION:
            raise IdentityError("VERSION", version, f"protocol version {major} is not the "
                                f"driver's {VERSION}")
        return SwitchIdentity(magic, major, minor, self.read("BUILD_HASH"))

    def counters(self) -> dict[str, int]:
        """Every ``CNT_*`` register by name, in register map order."""
        return {name: self.read(name) for name in regmap.COUNTERS}

    def server_counters(self) -> dict[str, int]:
        """The soft or sim switch server's own counters (``SRV_*``) by name.

        ``SRV_RX_OVERFLOW``: datagrams the kernel dropped before the switch
        read them; ``SRV_CTRL_REFUSED``: control requests refused as not
        authenticated. A board does not decode these addresses.
        """
        return {name: self.read(name) for name in regmap.SERVER_COUNTERS}

    def clear_counters(self) -> None:
        """Zero every counter (``CTRL`` bit 31, self-clearing)."""
        self.write("CTRL", self.read("CTRL") | CTRL_CLEAR)

    # -- member table ------------------------------------------------------------
    def set_member(self, index: int, *, port: int, ip: str | int, udp: int = 0,
                   role: int = ROLE_WORKER) -> None:
        """Write member table entry ``index``.

        Parameters
        ----------
        index:
            Member id, 0 … 7.
        port:
            One-hot SUME port bitmap the member is behind (a soft or sim switch:
            ``1 << index``), or 0 to mark the entry unused. Any other value is
            refused here, before anything is written (the switch would refuse
            it too: control status 3).
        ip:
            IPv4 address (dotted quad or integer).
        udp:
            UDP source port (0 = any source port of ``ip``; a soft or sim switch
            then sends multicast RESULTs to where the member last sent from).
        role:
            Bitwise OR of :data:`ROLE_WORKER`, :data:`ROLE_ACTOR`, :data:`ROLE_LEARNER`.

        Raises
        ------
        RegisterError
            An argument out of range, before anything is written.
        """
        if not 0 <= index < MAX_MEMBERS:
            raise RegisterError("index", index, f"member ids are 0..{MAX_MEMBERS - 1}")
        if isinstance(port, bool) or port not in _PORT_VALUES:
            raise RegisterError("port", port, "must be 0 (entry unused) or a one-hot 8-bit "
                                "port bitmap (one SUME port)")
        try:
            ip_value = ip_to_int(ip)
        except ValueError as e:
            raise RegisterError("ip", ip, str(e)) from None
        if isinstance(udp, bool) or not isinstance(udp, int) or not 0 <= udp <= 0xFFFF:
            raise RegisterError("udp", udp, "must be a UDP port 0..65535 (0 = any)")
        if not 0 <= role <= 7:
            raise RegisterError("role", role, "bits 0 (worker), 1 (actor), 2 (learner) only")
        self.write(regmap.member_reg("MEMBER_PORT", index), port)
        self.write(regmap.member_reg("MEMBER_IP", index), ip_value)
        self.write(regmap.member_reg("MEMBER_UDP", index), udp)
        self.write(regmap.member_reg("MEMBER_ROLE", index), role)

    def member(self, index: int) -> dict[str, int | str]:
        """Member table entry ``index`` as ``{"port", "ip", "udp", "role"}``."""
        return {
            "port": self.read(regmap.member_reg("MEMBER_PORT", index)),
            "ip": int_to_ip(self.read(regmap.member_reg("MEMBER_IP", index))),
            "udp": self.read(regmap.member_reg("MEMBER_UDP", index)),
            "role": self.read(regmap.member_reg("MEMBER_ROLE", index)),
        }

    # -- configuration -------------------------------------------------------------
    def configure_aggregation(self, *, members: int, slots: int,
                              packet_elems: int | None = None, dtype: str = "fp32",
                              mode: str = "sync", threshold: int | None = None,
                              staleness: int = 0,
                              role: str = "root", uplink_port: int = 0,
                              parent: str | tuple[str, int] | None = None,
                              leaf_id: int = 0, job: int | None = None,
                              elems: int | None = None) -> None:
        """Configure (and enable) the aggregation engine for a job.

        Writing any of these registers invalidates every slot, so this starts
        a fresh job; the member entries are left as they are. The switch keeps
        ``AGG_THRESHOLD`` within 1 … ``AGG_MEMBERS`` at every write, so the
        threshold is written first when the members shrink below the current one.

        Parameters
        ----------
        members:
            N, aggregation members (ids 0 … N−1), 1 … 8.
        slots:
            S, slots in use (1 … ``AGG_MAX_SLOTS``).
        packet_elems:
            P, elements per packet (``AGG_ELEMS``; multiple of 16, 16 …
            ``AGG_MAX_ELEMS``). Required.
        dtype:
            ``"fp32"`` or ``"int32"``.
        mode:
            ``"sync"`` (complete at N) or ``"async"`` (complete at ``threshold``).
        threshold:
            H, async only: contributions that complete a round (default N).
        staleness:
            Async only: largest ``seq − aux`` accepted.
        role:
            ``"root"`` (or flat) or ``"leaf"``.
        uplink_port:
            Leaf: one-hot port towards the parent.
        parent:
            Leaf: the parent switch, ``"ip:port"`` or ``(ip, port)``.
        leaf_id:
            Leaf: this switch's member id at the parent.
        job:
            Job id to set (``JOB_ID`` of this control's job; an admin register: the
            admin key only); unchanged when ``None``.
        elems:
            Deprecated name of ``packet_elems`` (a :class:`DeprecationWarning`).

        Raises
        ------
        RegisterError
            An argument out of range (named, with its value).
        TypeError
            Neither or both of ``packet_elems`` and ``elems`` given.
        """
        p_name = "packet_elems"
        if elems is not None:
            if packet_elems is not None:
                raise TypeError("configure_aggregation() got both packet_elems= and its "
                                "deprecated name elems=")
            warnings.warn("configure_aggregation(elems=...) is deprecated: use packet_elems=",
                          DeprecationWarning, stacklevel=2)
            packet_elems, p_name = elems, "elems"
        if packet_elems is None:
            raise TypeError("configure_aggregation() missing required keyword argument: "
                            "'packet_elems'")
        if not 1 <= members <= MAX_MEMBERS:
            raise RegisterError("members", members, f"must be 1..{MAX_MEMBERS}")
        max_slots = self.read("AGG_MAX_SLOTS")
        if not 1 <= slots <= max_slots:
            raise RegisterError("slots", slots, f"must be 1..AGG_MAX_SLOTS ({max_slots})")
        max_elems = self.read("AGG_MAX_ELEMS")
        if not (16 <= packet_elems <= max_elems and packet_elems % 16 == 0):
            raise RegisterError(p_name, packet_elems,
                                f"must be a multiple of 16 in 16..{max_elems}")
        dtypes = {"fp32": 0, "float32": 0, "int32": 1}
        if dtype not in dtypes:
            raise RegisterError("dtype", dtype, "must be 'fp32' or 'int32'")
        if mode not in ("sync", "async"):
            raise RegisterError("mode", mode, "must be 'sync' or 'async'")
        h = members if threshold is None else threshold
        if not 1 <= h <= members:
            raise RegisterError("threshold", threshold, f"must be 1..members ({members})")
        if mode == "sync" and h != members:
            raise RegisterError("threshold", threshold, "a threshold needs mode='async'")
        if not 0 <= staleness <= 0xFFFFFFFF:
            raise RegisterError("staleness", staleness, "must be an unsigned 32-bit value")
        if role not in ("root", "leaf"):
            raise RegisterError("role", role, "must be 'root' or 'leaf'")
        parent_ip, parent_udp = 0, 0
        if role == "leaf":
            if uplink_port not in {1 << i for i in range(8)}:
                raise RegisterError("uplink_port", uplink_port, "a leaf needs a one-hot port")
            if parent is None:
                raise RegisterError("parent", parent, "a leaf needs its parent's address")
            host, parent_udp = parse_hostport(parent) if isinstance(parent, str) else parent
            try:
                parent_ip = ip_to_int(host)
            except ValueError as e:
                raise RegisterError("parent", parent, str(e)) from None
            if not 0 <= leaf_id < MAX_MEMBERS:
                raise RegisterError("leaf_id", leaf_id, f"must be 0..{MAX_MEMBERS - 1}")
        if job is not None:
            self.write("JOB_ID", job)
        # AGG_THRESHOLD <= AGG_MEMBERS holds after every write (the switch refuses a
        # write that breaks it): lower the threshold first when the members shrink below it
        if members < self.read("AGG_THRESHOLD"):
            self.write("AGG_THRESHOLD", h)
        self.write("AGG_MEMBERS", members)
        self.write("AGG_THRESHOLD", h)
        self.write("AGG_SLOTS", slots)
        self.write("AGG_ELEMS", packet_elems)
        self.write("AGG_DTYPE", dtypes[dtype])
        self.write("AGG_MODE", 1 if mode == "async" else 0)
        self.write("AGG_STALENESS", staleness)
        self.write("AGG_ROLE", 1 if role == "leaf" else 0)
        self.write("AGG_UPLINK_PORT", uplink_port if role == "leaf" else 0)
        self.write("AGG_PARENT_IP", parent_ip)
        self.write("AGG_PARENT_UDP", parent_udp)
        self.write("AGG_LEAF_ID", leaf_id if role == "leaf" else 0)
        ctrl = self.read("CTRL")
        if not ctrl & CTRL_AGG:  # global: a job's key finds it on, it cannot write it
            self.write("CTRL", ctrl | CTRL_AGG)

    def configure_replay(self, *, seed: int = regmap.REGISTERS["RPL_SEED"].reset, reset: bool = True) -> None:
        """Enable the replay engine, seed its generator and (by default) empty it.

        Parameters
        ----------
        seed:
            xorshift32 seed (``RPL_SEED``; 0 means ``0x2545F491``).
        reset:
            Also empty the memory (``RPL_RESET``).
        """
        if not 0 <= seed <= 0xFFFFFFFF:
            raise RegisterError("seed", seed, "must be an unsigned 32-bit value")
        self.write("RPL_SEED", seed)
        if reset:
            self.reset_replay()
        ctrl = self.read("CTRL")
        if not ctrl & CTRL_REPLAY:  # global: a job's key finds it on, it cannot write it
            self.write("CTRL", ctrl | CTRL_REPLAY)

    def reset_replay(self) -> None:
        """Empty the replay memory (size, write pointer and priorities to 0)."""
        self.write("RPL_RESET", 1)

    def configure_rate_limiter(self, min_size: int = 1, samples_per_insert: float = 0.0,
                               error_buffer: float = 0.0) -> None:
        """Configure the replay rate limiter (docs/protocol.md section 5, "Rate limiting").

        Reverb's ``MinSize(min_size)`` is ``configure_rate_limiter(min_size)``; its
        ``SampleToInsertRatio(samples_per_insert, min_size_to_sample, error_buffer)`` is
        ``configure_rate_limiter(min_size_to_sample, samples_per_insert, error_buffer)``.
        Writing ``RPL_SPI`` clears the accumulator ``RPL_RATE_DIFF``.

        Parameters
        ----------
        min_size:
            Records before any SAMPLE_REQ is served (``RPL_MIN_SIZE``).
        samples_per_insert:
            Target samples per inserted record (``RPL_SPI``, rounded to Q16.16); 0 turns
            ratio limiting off.
        error_buffer:
            Allowed deviation in samples (``RPL_SPI_ERROR``, Q16.16). It must let the
            largest requests through: a PUSH of n records needs
            ``n * samples_per_insert <= 2 * error_buffer``, a batch of B needs
            ``B <= 2 * error_buffer``.

        Raises
        ------
        RegisterError
            A value does not fit its 32-bit register (nothing is written), or a nonzero
            ``samples_per_insert`` with an error buffer below ``max(1, samples_per_insert)``
            (a single record or sample could never pass, as Reverb refuses).
        """
        spi = round(samples_per_insert * C.SPI_ONE)
        err = round(error_buffer * C.SPI_ONE)
        for name, value in (("min_size", min_size), ("samples_per_insert", spi),
                            ("error_buffer", err)):
            if not 0 <= value <= 0xFFFFFFFF:
                raise RegisterError(name, value, "must fit an unsigned 32-bit register "
                                    "(Q16.16 for the ratio and the error buffer)")
        try:
            cfg = RateLimiterConfig.from_ratio(min_size, samples_per_insert, error_buffer)
        except ValueError as e:
            raise RegisterError("error_buffer", error_buffer, str(e)) from None
        self.write("RPL_MIN_SIZE", cfg.min_size)
        self.write("RPL_SPI_ERROR", cfg.error)
        self.write("RPL_SPI", cfg.spi)

    def rate_limiter(self) -> RateLimiterState:
        """The limiter's registers: its :class:`~hostdrv.wire.ratelimit.RateLimiterConfig`
        (``RPL_MIN_SIZE``, ``RPL_SPI``, ``RPL_SPI_ERROR``) and the signed accumulator
        ``RPL_RATE_DIFF`` (Q16.16; its two halves read as :meth:`replay_total` reads the tree
        total). ``state.samples_per_insert``, ``.error_buffer`` and ``.diff`` are in samples."""
        hi = self.read("RPL_RATE_DIFF_HI")
        lo = self.read("RPL_RATE_DIFF_LO")
        hi2 = self.read("RPL_RATE_DIFF_HI")
        if hi2 != hi:  # the low word wrapped between the reads: take the second high word's
            hi, lo = hi2, self.read("RPL_RATE_DIFF_LO")
        d = (hi << 32) | lo
        cfg = RateLimiterConfig(self.read("RPL_MIN_SIZE"), self.read("RPL_SPI"),
                                self.read("RPL_SPI_ERROR"))
        return RateLimiterState(cfg, d - (1 << 64) if d >> 63 else d)

    def replay_total(self) -> int:
        """Sum tree total (64 bits, read as two halves)."""
        hi = self.read("RPL_TOTAL_HI")
        lo = self.read("RPL_TOTAL_LO")
        hi2 = self.read("RPL_TOTAL_HI")
        return ((hi2 << 32) | self.read("RPL_TOTAL_LO")) if hi2 != hi else ((hi << 32) | lo)
