"""``serial://``: register access over the SUME board's USB-UART (the netfpga-rl firmware).

The MicroBlaze application in ``hw/boards/sume/firmware`` serves a line
protocol on the board's UART (``docs/board_uart.md``): read, write (answered
with the value read back), identity and a dump of every counter, each line
protected by a CRC-16. This module is its host side, a
:class:`~hostdrv.client.transport.RegisterTransport` built on
:func:`serial.serial_for_url`, so any port pyserial opens works::

    serial:///dev/ttyUSB1?baud=115200     the board (its FT2232 USB-UART)
    serial:///dev/pts/7                   a pty (the firmware's native build, --pty)
    serial://socket://127.0.0.1:7000      a TCP socket (ser2net, a bridge)
    serial://loop://                      pyserial's loopback (answers nothing: tests)

Everything after ``serial://`` up to the query is pyserial's port name or
URL. Query options: ``baud`` (default 115200), ``timeout`` (seconds per
reply), ``retries`` (requests sent before giving up); any other option is
passed on to pyserial's URL (``serial://socket://h:p?logging=debug``).

Only registers travel here; protocol messages use the board's 10G ports
(``udp://``, ``eth://``).
"""

from __future__ import annotations

import binascii
import time
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode

from hostdrv.client.transport import (
    DatagramTransport,
    RegisterTransport,
    SwitchTimeoutError,
)
from hostdrv.errors import RegisterError
from hostdrv.wire import regmap, regrules
from hostdrv.wire.control import ControlStatus
from hostdrv.wire.net import TransportError

SCHEME = "serial://"
DEFAULT_BAUD = 115200
"""The SUME reference design's AXI UART Lite runs at 115200 8N1."""
FIRMWARE_PROTOCOL = 2
"""Line protocol version this driver speaks (the identity reply's ``FW`` field); version 1
firmware (no ``LOL`` field) is still understood."""
LOL_STATUS = {0: "locked", 1: "loss of lock", 2: "not read"}
"""The identity reply's ``LOL`` field: the Si5324's loss-of-lock flag after calibration."""
REG_WINDOW = 0x1000
"""The register window the firmware serves: 4 KB."""
REPLY_MAX = 400
"""Longest reply line the firmware sends (``NRL_FW_REPLY_MAX``)."""
OPTIONS = frozenset({"baud", "timeout", "retries"})
"""Query options of a ``serial://`` URL that are this backend's (the rest go to pyserial)."""

_RETRY_CODES = frozenset({"CRC", "LONG"})
"""Firmware error codes that mean the request was damaged on the way: send it again."""
_STATUS_OF_CODE = {"SYNTAX": ControlStatus.BAD_REQUEST, "CMD": ControlStatus.BAD_REQUEST,
                   "ADDR": ControlStatus.UNKNOWN_REGISTER}


def crc16(data: bytes) -> int:
    """CRC-16/CCITT-FALSE of ``data`` (poly 0x1021, init 0xFFFF), the check of every line."""
    return binascii.crc_hqx(data, 0xFFFF)


def frame_line(body: str) -> bytes:
    """``body`` as a protocol line: ``BODY*CRC4`` and LF."""
    raw = body.encode("ascii")
    return raw + b"*%04X\n" % crc16(raw)


def check_line(line: bytes) -> str | None:
    """The body of a received line whose CRC is right, else ``None`` (CR/LF already stripped)."""
    body, star, crc = line.rpartition(b"*")
    if not star or len(crc) != 4:
        return None
    try:
        if int(crc, 16) != crc16(body):
            return None
        return body.decode("ascii")
    except (ValueError, UnicodeDecodeError):
        return None


@dataclass(frozen=True)
class FirmwareIdentity:
    """What the firmware's identity reply says.

    Attributes
    ----------
    magic, version, build_hash:
        The ``MAGIC``, ``VERSION`` and ``BUILD_HASH`` registers.
    firmware_protocol:
        The line protocol version (:data:`FIRMWARE_PROTOCOL`).
    clock_status:
        0 when the Si5324 set-up was acknowledged at boot, else 1 + the index
        of the first I2C step that was not (``docs/board_uart.md``).
    lol_status:
        The Si5324's loss of lock after calibration (:data:`LOL_STATUS`): 0
        locked, 1 still not locked after the firmware's wait (the 10G ports
        have no reference clock), 2 not read; ``None`` from a protocol 1
        firmware, which does not read it.
    """

    magic: int
    version: int
    build_hash: int
    firmware_protocol: int
    clock_status: int
    lol_status: int | None = None

    def clock_text(self) -> str:
        """The Si5324 status in words (for ``netrl regs URL identity``)."""
        setup = ("configured" if self.clock_status == 0
                 else f"I2C step {self.clock_status - 1} not acknowledged")
        if self.lol_status is None:
            return f"{setup}, lock not read (firmware protocol {self.firmware_protocol})"
        return f"{setup}, {LOL_STATUS.get(self.lol_status, f'LOL status {self.lol_status}')}"


class SerialRegisterTransport(RegisterTransport):
    """Register access through the netfpga-rl firmware's UART line protocol.

    Every request carries a tag the reply echoes and a CRC; a reply whose CRC
    fails, or an ``ER ?? CRC`` answer (the request was damaged), makes the
    request go out again, up to ``retries`` times. Writes are answered with
    the value read back and checked, so a write the register file ignored
    (read-only register, refused value) raises instead of passing silently.

    Parameters
    ----------
    url:
        The ``serial://`` URL (for messages).
    port:
        pyserial port name or URL (``/dev/ttyUSB1``, ``socket://h:p``, ``loop://``).
    baud:
        Line rate (the firmware's UART Lite: 115200).
    timeout:
        Seconds to wait for a reply, on top of the time its bytes take at ``baud``.
    retries:
        Requests sent before :class:`~hostdrv.client.transport.SwitchTimeoutError`.

    Raises
    ------
    TransportError
        When pyserial cannot open the port.
    """

    def __init__(self, url: str, port: str, *, baud: int = DEFAULT_BAUD, timeout: float = 0.5,
                 retries: int = 4) -> None:
        import serial  # pyserial, a declared dependency; imported on first use

        self.url = url
        self.port_name = port
        self.baud = baud
        self.timeout = timeout
        self.retries = max(1, retries)
        self._tag = 0
        self._rx = bytearray()
        self._regs = regrules.RegisterFile()  # what a register reads back after a write
        try:
            self._port = serial.serial_for_url(port, baudrate=baud, timeout=0,
                                               write_timeout=max(1.0, 10 * timeout))
        except (serial.SerialException, ValueError, OSError) as e:
            raise TransportError(f"cannot open serial port {port!r} of {url}: {e}") from e
        self._serial_error: type[Exception] = serial.SerialException
        self._port.reset_input_buffer()  # the boot banner, a previous session's leftovers

    # -- line I/O -------------------------------------------------------------------
    def _readline(self, deadline: float) -> bytes | None:
        """Next line (without CR/LF) before ``deadline``, or ``None``."""
        while True:
            nl = self._rx.find(b"\n")
            if nl >= 0:
                line = bytes(self._rx[:nl]).rstrip(b"\r")
                del self._rx[:nl + 1]
                return line
            if len(self._rx) > 4 * REPLY_MAX:  # no line end in sight: noise
                self._rx.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self._port.timeout = min(left, 0.05)
            try:
                chunk = self._port.read(max(1, self._port.in_waiting))
            except (self._serial_error, OSError) as e:
                raise TransportError(f"serial port {self.port_name!r} of {self.url} "
                                     f"failed: {e}") from e
            self._rx += chunk

    @staticmethod
    def _field(addr: int) -> str:
        return regmap.label(addr)

    def request(self, cmd: str, args: tuple[int, ...] = (), *, what: str = "",
                field: str = "", value: int | None = None) -> list[str]:
        """Send one request and return the fields of its ``OK`` reply after the command letter.

        Parameters
        ----------
        cmd:
            ``"I"``, ``"R"``, ``"W"`` or ``"D"``.
        args:
            Its arguments (sent in hex).
        what, field, value:
            For messages: what was asked, the register, the value written.

        Raises
        ------
        RegisterAccessError
            The firmware answered ``ER`` (bad address, bad request).
        SwitchTimeoutError
            No valid reply after ``retries`` requests; the message says what
            came back instead, if anything.
        """
        what = what or f"command {cmd}"
        seen_echo = corrupt = damaged = 0
        other: list[bytes] = []
        wait = self.timeout + 10.0 * (32 + REPLY_MAX) / self.baud
        for _attempt in range(self.retries):
            self._tag = (self._tag + 1) & 0xFF
            tag = f"{self._tag:02X}"
            body = " ".join([cmd, tag] + [f"{a:X}" for a in args])
            line_out = frame_line(body)
            try:
                self._port.write(line_out)
                self._port.flush()
            except (self._serial_error, OSError) as e:
                raise TransportError(f"serial port {self.port_name!r} of {self.url} "
                                     f"failed: {e}") from e
            deadline = time.monotonic() + wait
            while True:
                line = self._readline(deadline)
                if line is None:
                    break
                if not line or line.startswith(b"#"):
                    continue  # banner and log lines
                if line + b"\n" == line_out:
                    seen_echo += 1
                    continue
                text = check_line(line)
                if text is None:
                    corrupt += 1
                    break  # a damaged reply: ask again
                fields = text.split(" ")
                if len(fields) >= 3 and fields[0] == "ER":
                    if fields[1] == "??" and fields[2] in _RETRY_CODES:
                        damaged += 1
                        break
                    if fields[1] != tag:
                        continue  # the answer to an earlier, timed-out request
                    status = _STATUS_OF_CODE.get(fields[2], ControlStatus.INTERNAL)
                    raise RegisterError(field or what, value,
                                        f"firmware: {' '.join(fields[2:])}",
                                        status)
                if len(fields) >= 3 and fields[0] == "OK":
                    if fields[1] != tag or fields[2] != cmd:
                        continue
                    return fields[3:]
                other.append(line)
        raise SwitchTimeoutError(self.url, what, self.retries,
                                 self._hint(seen_echo, corrupt, damaged, other))

    def _hint(self, echo: int, corrupt: int, damaged: int, other: list[bytes]) -> str:
        if corrupt or damaged:
            return (f"{corrupt} replies failed their CRC and the firmware reported {damaged} "
                    f"damaged requests: a noisy line or a wrong baud rate (baud={self.baud})")
        if echo:
            return ("the port sent back exactly what was written and nothing else: a loopback "
                    "(loop://) or a terminal that echoes, no netfpga-rl firmware answered")
        if other:
            return (f"{len(other)} lines that are not replies came back (last: "
                    f"{other[-1][:60]!r}): another program on the board, or a wrong baud rate "
                    f"(baud={self.baud})")
        return (f"nothing came back from {self.port_name!r}: is the bitstream with the "
                "netfpga-rl firmware (app.elf) loaded, is this the board's USB-UART (the second "
                "FT2232 port, usually /dev/ttyUSB1) and the rate 115200 "
                "(docs/board_uart.md)?")

    # -- RegisterTransport ---------------------------------------------------------------
    @staticmethod
    def _check_addr(addr: int) -> None:
        if not 0 <= addr < REG_WINDOW or addr % 4:
            raise RegisterError(f"0x{addr:X}", None,
                                "address outside the 4 KB register window or not a "
                                "multiple of 4",
                                ControlStatus.UNKNOWN_REGISTER)

    def _reply_value(self, fields: list[str], addr: int, what: str) -> int:
        try:
            raddr, rvalue = int(fields[0], 16), int(fields[1], 16)
        except (IndexError, ValueError):
            raise RegisterError(self._field(addr), None,
                                f"malformed reply to {what}: {fields!r}",
                                ControlStatus.INTERNAL) from None
        if raddr != addr:
            raise RegisterError(self._field(addr), None,
                                f"reply to {what} is for address 0x{raddr:03X}",
                                ControlStatus.INTERNAL)
        return rvalue

    def read(self, addr: int) -> int:
        self._check_addr(addr)
        what = f"read of register {self._field(addr)}"
        return self._reply_value(self.request("R", (addr,), what=what, field=self._field(addr)),
                                 addr, what)

    def write(self, addr: int, value: int) -> None:
        """Write one register and check the value read back.

        Raises
        ------
        RegisterAccessError
            The firmware refused the request, or the register reads back
            something else than was written (status ``READ_ONLY`` for ``ro``
            and ``rc`` registers, ``ILLEGAL_VALUE`` otherwise). What the
            register map's write rules say it reads after the same write is
            accepted too (self-clearing ``CTRL`` bit 31 and ``RPL_RESET``):
            :func:`readback_ok`.
        """
        self._check_addr(addr)
        if not 0 <= value <= 0xFFFFFFFF:
            raise RegisterError(self._field(addr), value,
                                "not an unsigned 32-bit value",
                                ControlStatus.ILLEGAL_VALUE)
        field = self._field(addr)
        what = f"write of register {field}"
        back = self._reply_value(self.request("W", (addr, value), what=what, field=field,
                                              value=value), addr, what)
        if not readback_ok(addr, value, back, self._regs):
            reg = regmap.find(addr)
            if reg is not None and reg.access != "rw":
                raise RegisterError(field, value,
                                    f"register is {reg.access}; it still reads 0x{back:08X}",
                                    ControlStatus.READ_ONLY)
            raise RegisterError(field, value,
                                f"reads back 0x{back:08X} after the write: the register "
                                "file refused or truncated the value",
                                ControlStatus.ILLEGAL_VALUE)

    def identity(self) -> FirmwareIdentity:
        """The firmware's identity reply (one request).

        Raises
        ------
        RegisterAccessError
            A malformed reply, or a firmware of another line protocol version.
        """
        fields = self.request("I", what="identity")
        try:
            values = [int(f, 16) for f in fields]
        except ValueError:
            values = []
        if len(values) < 5 or len(values) != {1: 5, 2: 6}.get(values[3], len(values)):
            raise RegisterError("identity", None,
                                f"malformed identity reply {fields!r}",
                                ControlStatus.INTERNAL)
        magic, version, build, fw, clk = values[:5]
        if fw not in (1, FIRMWARE_PROTOCOL):
            raise RegisterError("identity", None,
                                f"firmware speaks line protocol {fw}, this driver "
                                f"{FIRMWARE_PROTOCOL}: rebuild app.elf or update netfpga-rl",
                                ControlStatus.INTERNAL)
        return FirmwareIdentity(magic, version, build, fw, clk, values[5] if fw >= 2 else None)

    def counters(self) -> dict[str, int]:
        """Every RTL counter by name (:data:`hostdrv.wire.regmap.COUNTERS`), in one request.

        Raises
        ------
        RegisterAccessError
            The firmware was built against a register map with another number
            of counters.
        """
        fields = self.request("D", what="counter dump")
        try:
            values = [int(f, 16) for f in fields]
        except ValueError:
            raise RegisterError("counters", None,
                                f"malformed counter dump {fields!r}",
                                ControlStatus.INTERNAL) from None
        names = regmap.COUNTERS
        if not values or values[0] != len(values) - 1 or values[0] != len(names):
            raise RegisterError("counters", None,
                                f"the firmware dumps {values[0] if values else 0} counters, "
                                f"the register map has {len(names)}: rebuild app.elf "
                                "from this checkout",
                                ControlStatus.INTERNAL)
        return dict(zip(names, values[1:], strict=True))

    def close(self) -> None:
        self._port.close()


def readback_ok(addr: int, written: int, back: int,
                regs: regrules.RegisterFile | None = None) -> bool:
    """Whether ``back``, read after writing ``written`` at ``addr``, shows the write took.

    Accepted: the value written, or what the register map's write rules say the
    register reads after the same write (:class:`hostdrv.wire.regrules.RegisterFile`,
    ``regs`` or a fresh one: ``CTRL`` bit 31 and ``RPL_RESET`` clear themselves).
    """
    if back == written:
        return True
    reg = regmap.find(addr)
    if reg is None or reg.access != "rw":
        return False
    expected = (regs if regs is not None else regrules.RegisterFile()).write(reg.name, written)
    return expected is not None and back == expected  # None: the rules refuse it too


# ---------------------------------------------------------------------------
# URL and factories


def parse_serial_url(url: str) -> tuple[str, dict[str, str]]:
    """(pyserial port, this backend's options) of a ``serial://`` URL.

    Raises
    ------
    TransportError
        No port, an option given twice, or a bad option value.
    """
    if not url.startswith(SCHEME):
        raise TransportError(f"bad url={url!r}: expected serial://PORT[?baud=115200]")
    spec, _, query = url[len(SCHEME):].partition("?")
    if not spec:
        raise TransportError(f"bad url={url!r}: no port; expected serial:///dev/ttyUSB1, "
                             "serial://socket://HOST:PORT or serial://loop://")
    ours: dict[str, str] = {}
    theirs: list[tuple[str, str]] = []
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key in OPTIONS:
            if key in ours:
                raise TransportError(f"bad url={url!r}: option {key!r} given twice")
            ours[key] = value
        else:
            theirs.append((key, value))
    port = spec + ("?" + urlencode(theirs) if theirs else "")
    return port, ours


def _number(url: str, opts: Mapping[str, str], key: str, kind: type, low: float) -> float | None:
    text = opts.get(key)
    if text is None:
        return None
    try:
        value = kind(text)
    except ValueError:
        raise TransportError(f"bad {key}={text!r} in url={url!r}: not a number") from None
    if value < low:
        raise TransportError(f"bad {key}={text!r} in url={url!r}: must be at least {low}")
    return float(value)


def serial_registers(url: str, *, timeout: float = 0.5, retries: int = 4,
                     **_options: object) -> RegisterTransport:
    """Register channel of a ``serial://`` URL (see the module docstring).

    ``timeout`` and ``retries`` are defaults the URL's own options override;
    other keyword options (a control key file, ...) do not apply to a UART and
    are ignored.
    """
    port, opts = parse_serial_url(url)
    baud = _number(url, opts, "baud", int, 1)
    t = _number(url, opts, "timeout", float, 0.0)
    r = _number(url, opts, "retries", int, 1)
    return SerialRegisterTransport(url, port, baud=int(baud) if baud else DEFAULT_BAUD,
                                   timeout=timeout if t is None else t,
                                   retries=retries if r is None else int(r))


def serial_datagram(url: str, **_options: object) -> DatagramTransport:
    """Always raises: ``serial://`` carries registers only.

    Raises
    ------
    TransportError
        With where protocol messages go instead.
    """
    raise TransportError(f"url={url!r}: serial:// carries register accesses only (the board's "
                         "USB-UART); protocol messages travel through the board's 10G ports: "
                         "use udp://SWITCH_IP:PORT or eth://IFNAME for the data path")
