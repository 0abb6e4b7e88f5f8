"""Transports: how protocol messages and register accesses reach a switch.

A switch is named by a URL and the scheme picks the backend; callers never
change when the backend does::

    soft://127.0.0.1:20050     the soft switch (``hostdrv.switch.soft``), over UDP
    sim://127.0.0.1:20051      the RTL in simulation (``hostdrv.switch.sim``), over UDP
    dpdk://10.77.0.254:20050?port=af_packet:eth0
                               the soft switch over a DPDK port (kernel bypass,
                               ``hostdrv.client.transport_dpdk``, docs/bypass.md)
    udp://... / eth://...      the NetFPGA SUME board (``hostdrv.client.board``)

Every backend provides two channels, kept apart from the block drivers
(:mod:`hostdrv.client.control`, :mod:`hostdrv.client.aggregator`, :mod:`hostdrv.client.replay`) that give
them meaning:

* a :class:`DatagramTransport` carries protocol messages (a UDP payload:
  22-byte header + payload) to and from the switch;
* a :class:`RegisterTransport` reads and writes the 32-bit registers by
  address.

A backend is a :class:`Backend` entry in :data:`BACKENDS`; a new one is one
more entry (its factories may live in a module imported on first use), so
``sim://`` and the board plug in without changes in callers.

Control channel
---------------
A soft or sim switch answers register accesses on its protocol socket
(``NRLC`` datagrams; the wire format, signing included, is
:mod:`hostdrv.wire.control`). :class:`UdpRegisterTransport` signs every
request when it has a key: from ``key_file=`` (``SwitchControl(url,
key_file=...)``), else a ``?key=FILE`` query on the ``soft://``/``sim://``
URL, else the file named by the :data:`CONTROL_KEY_ENV` environment variable
(``NETRL_CONTROL_KEY``). A request the switch refuses for want of
authentication raises :class:`ControlAuthError`.

URLs
----
``soft://host:port`` and ``sim://host:port`` need both the host and the port
(there is no default port: a switch listening elsewhere would otherwise time
out with no hint why); the only query option is ``key=FILE``.
"""

from __future__ import annotations

import errno
import importlib
import os
import select
import socket
import struct
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from urllib.parse import parse_qsl, urlsplit

from hostdrv.errors import NetrlError, RegisterError
from hostdrv.wire.control import (
    CONTROL,
    CONTROL_AUTH_WINDOW_MS,
    CONTROL_MAGIC,
    CONTROL_READ,
    CONTROL_REPLY,
    CONTROL_WRITE,
    REPLAYED,
    ControlStatus,
    load_control_key,
    sign_control,
)
from hostdrv.wire.net import (
    GSO_MAX_BYTES,
    GSO_MAX_SEGMENTS,
    SOL_UDP,
    UDP_GRO,
    UDP_SEGMENT,
    TransportError,
    parse_hostport,
    tune_socket,
)

CONTROL_KEY_ENV = "NETRL_CONTROL_KEY"
"""Environment variable naming the control key file clients sign requests with."""


class SwitchTimeoutError(NetrlError, TimeoutError):
    """The switch did not answer in time.

    Attributes
    ----------
    url:
        The switch that was asked.
    what:
        What was asked (``"read of register 0x048"``, ``"slot 3 round 7"``, ...).
    tries:
        How many times the request was sent.
    """

    def __init__(self, url: str, what: str, tries: int, hint: str = "") -> None:
        self.url = url
        self.what = what
        self.tries = tries
        msg = f"switch {url} did not answer {what} after {tries} tries"
        super().__init__(msg + (f"; {hint}" if hint else ""))


def register_refusal(field: str, value: int | None, status: ControlStatus,
                     text: str) -> RegisterError:
    """The exception for a switch's refusal ``status``: :class:`ControlAuthError` for
    status 5 (not authenticated), :class:`ControlForbiddenError` for status 6 (a job key's
    write outside its job's registers), else :class:`~hostdrv.errors.RegisterError`."""
    cls = (ControlAuthError if status == ControlStatus.UNAUTHENTICATED
           else ControlForbiddenError if status == ControlStatus.FORBIDDEN else RegisterError)
    return cls(field, value, text, status)


RegisterAccessError = RegisterError
"""The name the switch's refusals had before they and the host's became one class."""


class ControlAuthError(RegisterError):
    """The switch refused a register access as not authenticated (status 5); nothing was executed.

    A switch executes control requests only from loopback addresses, or, when
    it was started with ``--control-key FILE``, only requests signed with that
    key, from any address (``docs/protocol.md`` section 9).
    """

    hint = ("; a switch executes control requests from loopback only, or, started with "
            "--control-key FILE, only requests signed with that file: pass it as "
            "SwitchControl(url, key_file=FILE), a ?key=FILE query on the URL or the "
            f"{CONTROL_KEY_ENV} environment variable")


class ControlForbiddenError(RegisterError):
    """The switch refused a write under a job's key (status 6, ``docs/protocol.md`` section
    11): job j's key writes only job j's job registers that are not *admin* (its ``AGG_*``,
    member table, ``RPL_*`` and ``JOB_LEASE``); nothing changed. ``field`` names the
    register (``NAME@j`` in job j's page)."""

    hint = ("; a job's key (SwitchControl(url, key_file=..., job=J, key_id=J + 1)) writes only job J's "
            "non-admin job registers: the global and admin registers (JOB_ENABLE, JOB_ID, "
            "JOB_SLOT_*, JOB_RPL_*) take the admin key (--control-key)")


# ---------------------------------------------------------------------------
# addresses


def switch_address(url: str) -> tuple[str, int]:
    """(host, port) of a ``soft://host:port`` or ``sim://host:port`` URL.

    Both parts are required: a URL without a port is refused rather than
    pointed at a default port where no switch may be listening.

    Raises
    ------
    TransportError
        When the host or the port is missing, or the port is not 1 … 65535.
    """
    parts = urlsplit(url)
    scheme = parts.scheme or "soft"
    expected = f"expected {scheme}://host:port"
    netloc = parts.netloc
    if not netloc:
        raise TransportError(f"bad url={url!r}: no address; {expected}")
    host, sep, port = netloc.rpartition(":")
    if not sep or not port:
        raise TransportError(f"bad url={url!r}: no port; {expected} (a soft or sim switch "
                             "prints the port it listens on)")
    if not host:
        raise TransportError(f"bad url={url!r}: no host; {expected}")
    h, p = parse_hostport(netloc)
    if p == 0:
        raise TransportError(f"bad port=0 in url={url!r}: a switch listens on 1..65535")
    return h, p


def _switch_options(url: str) -> dict[str, str]:
    """Query options of a ``soft://``/``sim://`` URL (``key`` only)."""
    out: dict[str, str] = {}
    for key, value in parse_qsl(urlsplit(url).query, keep_blank_values=True):
        if key != "key":
            raise TransportError(f"bad url={url!r}: unknown option {key!r}; known: key")
        if key in out:
            raise TransportError(f"bad url={url!r}: option {key!r} given twice")
        out[key] = value
    return out


# ---------------------------------------------------------------------------
# transport interfaces


class DatagramTransport(ABC):
    """A channel that carries protocol messages to and from one switch."""

    url: str

    @property
    @abstractmethod
    def local_address(self) -> tuple[str, int]:
        """(IPv4, UDP port) the switch sees this endpoint as."""

    @abstractmethod
    def send(self, data: bytes | bytearray | memoryview) -> None:
        """Send one message."""

    def send_segments(self, data: memoryview, seg: int) -> None:
        """Send ``data`` as consecutive messages of ``seg`` bytes (the last may be shorter).

        Backends that can hand the whole batch to the kernel in one call
        (UDP GSO) override this; the default sends them one by one.
        """
        for off in range(0, len(data), seg):
            self.send(data[off:off + seg])

    @abstractmethod
    def recv_into(self, buf: bytearray | memoryview, timeout: float) -> tuple[int, int]:
        """Receive into ``buf`` (64 KiB so that a coalesced batch fits).

        Returns
        -------
        (nbytes, seg):
            ``nbytes`` received (0 when ``timeout`` expired first) made of
            messages of ``seg`` bytes each (the last may be shorter); ``seg``
            equals ``nbytes`` for a single message.
        """

    @abstractmethod
    def close(self) -> None:
        """Release the channel."""

    def __enter__(self) -> DatagramTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RegisterTransport(ABC):
    """A channel that reads and writes switch registers by address."""

    url: str

    @abstractmethod
    def read(self, addr: int) -> int:
        """Read one 32-bit register."""

    @abstractmethod
    def write(self, addr: int, value: int) -> None:
        """Write one 32-bit register.

        Raises
        ------
        RegisterAccessError
            When the switch refuses the value.
        """

    @abstractmethod
    def close(self) -> None:
        """Release the channel."""


# ---------------------------------------------------------------------------
# UDP (soft switch) backend


class UdpDatagramTransport(DatagramTransport):
    """Protocol messages over a connected UDP socket, with GSO/GRO batching.

    Parameters
    ----------
    url:
        URL of the switch (for error messages).
    switch:
        (host, port) of the switch.
    bind:
        Local (host, port) to bind; by default an ephemeral port on the
        interface that routes to the switch.
    gro:
        Ask the kernel to coalesce received datagrams (``UDP_GRO``).
    """

    def __init__(self, url: str, switch: tuple[str, int], *, bind: tuple[str, int] | None = None,
                 gro: bool = True) -> None:
        self.url = url
        self.switch = switch
        try:
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            tune_socket(sock)
            sock.bind(bind or ("0.0.0.0", 0))
            sock.connect(switch)
        except OSError as e:
            raise TransportError(f"cannot open UDP socket to {url}: {e}") from e
        sock.setblocking(False)
        self.sock = sock
        self._gso = True
        self._gro = False
        if gro:
            try:
                sock.setsockopt(SOL_UDP, UDP_GRO, 1)
                self._gro = True
            except OSError:
                pass
        self._poll = select.poll()
        self._poll.register(sock, select.POLLIN)
        self._anc = socket.CMSG_SPACE(4)

    @property
    def local_address(self) -> tuple[str, int]:
        host, port = self.sock.getsockname()[:2]
        return str(host), int(port)

    def fileno(self) -> int:
        """File descriptor of the socket (for ``select``)."""
        return self.sock.fileno()

    def send(self, data: bytes | bytearray | memoryview) -> None:
        try:
            self.sock.send(data)
        except (BlockingIOError, ConnectionRefusedError):
            # A full send buffer or an ICMP error from an earlier datagram:
            # UDP is lossy anyway and the caller retransmits.
            pass

    def send_segments(self, data: memoryview, seg: int) -> None:
        n = len(data)
        if n <= seg or not self._gso:
            super().send_segments(data, seg)
            return
        per_call = max(1, min(GSO_MAX_SEGMENTS, GSO_MAX_BYTES // seg))
        step = per_call * seg
        cmsg = [(SOL_UDP, UDP_SEGMENT, struct.pack("=H", seg))]
        for off in range(0, n, step):
            part = data[off:off + step]
            try:
                if len(part) > seg:
                    self.sock.sendmsg([part], cmsg)
                else:
                    self.sock.send(part)
            except (BlockingIOError, ConnectionRefusedError):
                pass
            except OSError as e:
                if e.errno not in (errno.EINVAL, errno.EIO, errno.ENOPROTOOPT, errno.EOPNOTSUPP):
                    raise
                self._gso = False
                super().send_segments(part, seg)

    def recv_into(self, buf: bytearray | memoryview, timeout: float) -> tuple[int, int]:
        sock = self.sock
        deadline = -1.0
        while True:
            try:
                if self._gro:
                    n, anc, _flags, _addr = sock.recvmsg_into([buf], self._anc)
                    seg = n
                    for level, kind, data in anc:
                        if level == SOL_UDP and kind == UDP_GRO and len(data) >= 4:
                            seg = struct.unpack_from("=i", data)[0]
                    return n, (seg or n)
                n = sock.recv_into(buf)
                return n, n
            except BlockingIOError:
                pass
            except ConnectionRefusedError:
                continue  # ICMP port unreachable from an earlier send
            now = time.monotonic()
            if deadline < 0:
                deadline = now + timeout
            left = deadline - now
            if left <= 0:
                return 0, 0
            self._poll.poll(max(1, int(left * 1000 + 0.999)))

    def close(self) -> None:
        self.sock.close()


class UdpRegisterTransport(RegisterTransport):
    """Register access over the soft switch's control channel (``NRLC`` datagrams).

    Parameters
    ----------
    url:
        URL of the switch (for error messages).
    switch:
        (host, port) of the switch.
    timeout:
        Seconds to wait for each reply.
    retries:
        Requests sent before giving up.
    key:
        Control key: sign every request with it (session, timestamp, nonce, attempt
        and HMAC-SHA256, ``docs/protocol.md`` section 9). ``None``: send plain
        requests, which a switch executes only from a loopback address and without
        ``--control-key``. A signing client learns the switch's session from its
        first request's refusal (one more round trip) and again after the switch
        restarts; it ignores a refusal of a replayed attempt (a duplicate of one of
        its sends) and waits for the answer to its own.
    key_id:
        Which key ``key`` is, sent as byte 5 of every signed request: 0 the admin key
        (``--control-key``), j + 1 job j's (``--job-key J:FILE``; ``docs/protocol.md``
        section 11).
    """

    def __init__(self, url: str, switch: tuple[str, int], *, timeout: float = 0.25,
                 retries: int = 8, key: bytes | None = None, key_id: int = 0) -> None:
        if isinstance(key_id, bool) or not isinstance(key_id, int) or not 0 <= key_id <= 0xFF:
            raise TransportError(f"bad key_id={key_id!r}: 0 (admin key) or j + 1 (job j's key)")
        self.url = url
        self.timeout = timeout
        self.retries = retries
        self._key = key
        self.key_id = key_id
        """Byte 5 of the signed requests: the key they are signed with."""
        try:
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self.sock.bind(("0.0.0.0", 0))
            self.sock.connect(switch)
        except OSError as e:
            raise TransportError(f"cannot open control socket to {url}: {e}") from e
        self._tag = int.from_bytes(os.urandom(2), "little")
        self._buf = bytearray(2048)
        self._session = 0
        """The switch's session this client signs for (learned from its first refusal)."""

    @property
    def signed(self) -> bool:
        """Whether requests carry a timestamp and HMAC."""
        return self._key is not None

    def _request(self, op: int, addr: int, value: int) -> int:
        self._tag = (self._tag + 1) & 0xFFFF
        tag = self._tag
        req = CONTROL.pack(CONTROL_MAGIC, op, 0, tag, addr & 0xFFFFFFFF, value & 0xFFFFFFFF)
        key = self._key
        what = (f"read of register 0x{addr:03X}" if op == CONTROL_READ
                else f"write of register 0x{addr:03X}")
        # a signed request keeps its timestamp and nonce in every retry; each send is a
        # new attempt, which the switch answers from its reply cache once it executed
        # the request (a resent attempt would be refused as a replay)
        first = int(time.time() * 1000)
        nonce = int.from_bytes(os.urandom(8), "big")
        sends = 0
        relearned = 0
        attempt = 0
        while attempt < self.retries:
            if key is not None and int(time.time() * 1000) - first > CONTROL_AUTH_WINDOW_MS:
                break  # the switch would refuse this request as expired: give up
            try:
                self.sock.send(req if key is None else sign_control(
                    req, key, session=self._session, timestamp=first, nonce=nonce,
                    attempt=sends, key_id=self.key_id))
            except ConnectionRefusedError:
                pass
            sends += 1
            session = self._session
            resend = False
            deadline = time.monotonic() + self.timeout * (1 << min(attempt, 3))
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.sock.settimeout(left)
                try:
                    n = self.sock.recv_into(self._buf)
                except TimeoutError:
                    break
                except ConnectionRefusedError:
                    time.sleep(min(left, 0.01))
                    continue
                if n < CONTROL.size:
                    continue
                magic, rop, status, rtag, raddr, rvalue = CONTROL.unpack_from(self._buf)
                if magic != CONTROL_MAGIC or rtag != tag or rop != op | CONTROL_REPLY:
                    continue
                if status != ControlStatus.OK:
                    text = bytes(self._buf[CONTROL.size:n]).decode("utf-8", "replace")
                    if key is not None and status == ControlStatus.UNAUTHENTICATED:
                        if text.split(": ", 1)[-1].startswith(REPLAYED):
                            continue  # a duplicate of one of our sends: wait for its answer
                        if rvalue and rvalue != session and relearned < 3:
                            # the switch runs another session (it restarted, or this is
                            # our first request): sign again for it
                            self._session = rvalue
                            relearned += 1
                            resend = True
                            break
                    try:
                        st = ControlStatus(status)
                    except ValueError:
                        st = ControlStatus.INTERNAL
                        text = f"status {status}: {text}"
                    raise register_refusal(
                        f"0x{addr:03X}", value if op == CONTROL_WRITE else None, st, text)
                return int(rvalue)
            if not resend:
                attempt += 1
        raise SwitchTimeoutError(self.url, what, self.retries,
                                 "is the soft switch running at that address?")

    def read(self, addr: int) -> int:
        return self._request(CONTROL_READ, addr, 0)

    def write(self, addr: int, value: int) -> None:
        self._request(CONTROL_WRITE, addr, value)

    def close(self) -> None:
        self.sock.close()


def control_key_for(url: str, key_file: str | os.PathLike[str] | None = None) -> bytes | None:
    """The control key a client of ``url`` signs with, or ``None``.

    The first of: ``key_file``, the URL's ``?key=FILE`` query, the file named by
    the :data:`CONTROL_KEY_ENV` environment variable (``NETRL_CONTROL_KEY``).

    Raises
    ------
    TransportError
        When the URL has an unknown option or the key file cannot be read or is empty.
    """
    path: str | os.PathLike[str] | None = key_file
    if path is None:
        path = _switch_options(url).get("key") or None
    if path is None:
        path = os.environ.get(CONTROL_KEY_ENV) or None
    return None if path is None else load_control_key(path)


def udp_switch_datagram(url: str, **options: object) -> DatagramTransport:
    """Protocol channel to a soft or sim switch at ``scheme://host:port`` (UDP)."""
    _switch_options(url)
    return UdpDatagramTransport(url, switch_address(url), **options)  # type: ignore[arg-type]


def udp_switch_registers(url: str, *, key_file: str | os.PathLike[str] | None = None,
                         **options: object) -> RegisterTransport:
    """Register channel to a soft or sim switch at ``scheme://host:port`` (control datagrams).

    Parameters
    ----------
    url:
        ``soft://host:port`` or ``sim://host:port``, optionally ``?key=FILE``.
    key_file:
        Control key file to sign requests with (see :func:`control_key_for`).
    **options:
        ``timeout``, ``retries``, ``key_id`` of :class:`UdpRegisterTransport`.
    """
    address = switch_address(url)
    key = control_key_for(url, key_file)
    return UdpRegisterTransport(url, address, key=key, **options)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# backend registry


@dataclass(frozen=True)
class Backend:
    """How to reach switches of one URL scheme.

    Attributes
    ----------
    scheme:
        URL scheme (``"soft"``).
    datagram:
        Factory ``(url, **options) -> DatagramTransport``, or ``"module:attr"``
        imported on first use; ``None`` when not implemented yet.
    registers:
        Factory ``(url, **options) -> RegisterTransport`` (same forms).
    doc:
        One line for error messages and ``--help``.
    """

    scheme: str
    datagram: Callable[..., DatagramTransport] | str | None
    registers: Callable[..., RegisterTransport] | str | None
    doc: str


BACKENDS: Mapping[str, Backend] = MappingProxyType({
    "soft": Backend("soft", udp_switch_datagram, udp_switch_registers,
                    "soft switch over UDP: soft://host:port[?key=FILE]"),
    "sim": Backend("sim", udp_switch_datagram, udp_switch_registers,
                   "RTL simulation (netfpga-simswitch) over UDP: "
                   "sim://host:port[?key=FILE]"),
    "dpdk": Backend("dpdk", "hostdrv.client.transport_dpdk:dpdk_datagram",
                    "hostdrv.client.transport_dpdk:dpdk_registers",
                    "soft switch over a DPDK port (kernel bypass, netfpga-softswitch --dpdk): "
                    "dpdk://SWITCH_IP:PORT?port=af_packet:IFACE|af_xdp:IFACE|memif:PATH[@ID]"
                    "[&ip=A.B.C.D][&control=HOST:PORT][&key=FILE]"),
    "udp": Backend("udp", "hostdrv.client.board:udp_datagram",
                   "hostdrv.client.board:udp_registers",
                   "NetFPGA SUME board over UDP, registers with rwaxi: "
                   "udp://SWITCH_IP:PORT?regs=rwaxi&base=0x44010000"),
    "eth": Backend("eth", "hostdrv.client.board:eth_datagram",
                   "hostdrv.client.board:eth_registers",
                   "NetFPGA SUME board over raw Ethernet (root), registers with rwaxi: "
                   "eth://IFNAME?switch_ip=A.B.C.D&regs=rwaxi"),
    "serial": Backend("serial", "hostdrv.client.serial:serial_datagram",
                      "hostdrv.client.serial:serial_registers",
                      "NetFPGA SUME board's USB-UART (netfpga-rl firmware), registers only: "
                      "serial:///dev/ttyUSB1?baud=115200 (any pyserial port or URL)"),
})
"""Every known URL scheme; an entry with no factories is reserved but not implemented."""


def _resolve(factory: Callable[..., object] | str) -> Callable[..., object]:
    if callable(factory):
        return factory
    module, _, attr = factory.partition(":")
    return getattr(importlib.import_module(module), attr)  # type: ignore[no-any-return]


def backend_for(url: str, backends: Mapping[str, Backend] | None = None) -> Backend:
    """The :class:`Backend` of ``url``'s scheme.

    Raises
    ------
    TransportError
        When the scheme is missing or unknown.
    """
    table = BACKENDS if backends is None else backends
    scheme = urlsplit(url).scheme
    if not scheme:
        raise TransportError(f"bad url={url!r}: no scheme; expected one of "
                             + ", ".join(f"{s}://" for s in table))
    try:
        return table[scheme]
    except KeyError:
        raise TransportError(f"bad url={url!r}: unknown scheme {scheme!r}; known: "
                             + "; ".join(b.doc for b in table.values())) from None


def open_datagram(url: str, *, backends: Mapping[str, Backend] | None = None,
                  **options: object) -> DatagramTransport:
    """Open the protocol-message channel to the switch at ``url``."""
    b = backend_for(url, backends)
    if b.datagram is None:
        raise TransportError(f"bad url={url!r}: the {b.scheme}:// backend ({b.doc}) "
                             "is not implemented yet")
    return _resolve(b.datagram)(url, **options)  # type: ignore[return-value]


def open_registers(url: str, *, backends: Mapping[str, Backend] | None = None,
                   **options: object) -> RegisterTransport:
    """Open the register channel to the switch at ``url``."""
    b = backend_for(url, backends)
    if b.registers is None:
        raise TransportError(f"bad url={url!r}: the {b.scheme}:// backend ({b.doc}) "
                             "is not implemented yet")
    return _resolve(b.registers)(url, **options)  # type: ignore[return-value]


def known_schemes(backends: Mapping[str, Backend] | None = None) -> Sequence[str]:
    """Schemes with a working backend."""
    table = BACKENDS if backends is None else backends
    return [s for s, b in table.items() if b.datagram is not None]
