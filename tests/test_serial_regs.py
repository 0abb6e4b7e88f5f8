"""The UART register path: the firmware's command loop (native build) driven through ``serial://``.

The firmware in ``hw/boards/sume/firmware`` is built with its ``host`` target
(gcc, the same command loop as ``app.elf`` against a stub register space made
from the generated ``nrl_protocol.h``), started on a pseudo-terminal, and
driven from pyserial through :mod:`hostdrv.client.serial`: identity,
reads, writes read back, the counter dump, damaged lines, bad commands,
timeouts. ``socket://`` goes through a TCP bridge that can damage lines on the
way. Expected values come from :mod:`hostdrv.wire.regmap` and
:class:`hostdrv.switch.reference.SwitchModel`, never from numbers written here.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import serial
import toolcheck

from hostdrv import SwitchControl, TransportError, open_datagram, open_registers
from hostdrv.client.serial import (
    FIRMWARE_PROTOCOL,
    SerialRegisterTransport,
    check_line,
    crc16,
    frame_line,
    parse_serial_url,
)
from hostdrv.client.transport import RegisterAccessError, SwitchTimeoutError
from hostdrv.switch.reference import SwitchModel
from hostdrv.wire import protocol as P
from hostdrv.wire import regmap, regrules
from hostdrv.wire.control import ControlStatus
from hostdrv.wire.sume import SUME_S0_AXI_BASE

REPO = Path(__file__).resolve().parents[1]
FIRMWARE = REPO / "hw" / "boards" / "sume" / "firmware"


# ---------------------------------------------------------------------------
# the firmware, natively


@pytest.fixture(scope="module")
def fw_binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``make host`` of the firmware, in a temporary build folder."""
    toolcheck.require_tool("make", "building the firmware's native command loop")
    cc = toolcheck.require_tool("gcc", "building the firmware's native command loop")
    build = tmp_path_factory.mktemp("fw")
    proc = subprocess.run(["make", "-C", str(FIRMWARE), "host", f"BUILD_DIR={build}", f"CC={cc}"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return build / "nrl_fw_host"


@dataclass
class Firmware:
    """The native firmware serving on a pty."""

    proc: subprocess.Popen[str]
    path: str
    stderr_path: Path
    urls: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"serial://{self.path}"

    def log(self) -> str:
        """What the firmware wrote on stderr (the stub's I2C log)."""
        return self.stderr_path.read_text()


def start_firmware(binary: Path, tmp: Path, preload: dict[int, int] | None = None,
                   lol: str | None = None) -> Firmware:
    """Start the native firmware on a pty; ``lol``: the stub Si5324's LOL_INT ("1": not locked,
    "N": the read is not acknowledged)."""
    args = [str(binary), "--pty"]
    env = {**os.environ}
    env.pop("NRL_FW_SI5324_LOL", None)
    if lol is not None:
        env["NRL_FW_SI5324_LOL"] = lol
    if preload:
        f = tmp / "preload.txt"
        f.write_text("".join(f"{a:x} {v:x}\n" for a, v in preload.items()))
        args += ["--preload", str(f)]
    err = tmp / "fw_stderr.txt"
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err.open("w"), text=True, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("pty "), f"firmware did not start: {line!r}"
    return Firmware(proc, line.split()[1], err)


@pytest.fixture
def firmware(fw_binary: Path, tmp_path: Path) -> Iterator[Firmware]:
    fw = start_firmware(fw_binary, tmp_path)
    yield fw
    fw.proc.terminate()
    fw.proc.wait(timeout=10)


def model_counters() -> dict[str, int]:
    """Counters of the reference model after a few frames it refuses, each a different number
    of times, so that the values differ from each other and from 0."""
    model = SwitchModel()
    junk = P.encode_message(P.sample_request(4, job=7, worker=0))
    grad = P.encode_message(P.gradient(np.zeros(16, np.float32), job=0, worker=5, slot=0,
                                       round_=0))
    for i, datagram in enumerate([junk, grad, b"\x01\x02"]):
        for _ in range(i + 2):
            model.process(_frame(datagram), 0x80)
    counters = model.counters()
    assert any(counters[n] for n in regmap.COUNTERS)
    return {n: counters[n] for n in regmap.COUNTERS}


def _frame(datagram: bytes) -> bytes:
    from netutil import datagram_frame

    return datagram_frame(datagram, ip_src=0x0A000002, udp_src=40000,
                          udp_dst=regmap.REGISTERS["UDP_PORT"].reset)


# ---------------------------------------------------------------------------
# line format


def test_crc_and_framing() -> None:
    """CRC-16/CCITT-FALSE: the catalogue check value; framing and checking are inverses."""
    assert crc16(b"123456789") == 0x29B1
    line = frame_line("R 01 48")
    assert line.endswith(b"\n")
    assert check_line(line.rstrip(b"\n")) == "R 01 48"
    damaged = bytearray(line.rstrip(b"\n"))
    damaged[2] ^= 0x01
    assert check_line(bytes(damaged)) is None
    assert check_line(b"no star") is None


def test_url_parsing() -> None:
    assert parse_serial_url("serial:///dev/ttyUSB1?baud=115200") == ("/dev/ttyUSB1",
                                                                      {"baud": "115200"})
    assert parse_serial_url("serial://socket://127.0.0.1:7000?timeout=2&logging=debug") == (
        "socket://127.0.0.1:7000?logging=debug", {"timeout": "2"})
    assert parse_serial_url("serial://loop://") == ("loop://", {})
    for bad in ("serial://", "serial://loop://?baud=1&baud=2"):
        with pytest.raises(TransportError):
            parse_serial_url(bad)
    with pytest.raises(TransportError, match="not a number"):
        open_registers("serial://loop://?baud=fast")


def test_datagram_channel_refused_clearly() -> None:
    with pytest.raises(TransportError, match="register accesses only"):
        open_datagram("serial:///dev/ttyUSB1")


# ---------------------------------------------------------------------------
# the firmware through serial://


def test_identity(firmware: Firmware) -> None:
    """Identity reply: the stub's MAGIC/VERSION/BUILD_HASH are the register map's reset values."""
    with SwitchControl(firmware.url) as ctl:
        ident = ctl.identity()  # checks MAGIC and the protocol version
        assert ident.magic == regmap.REGISTERS["MAGIC"].reset
        assert ident.build_hash == regmap.REGISTERS["BUILD_HASH"].reset
        fw = ctl._t.identity()  # type: ignore[attr-defined]
    assert fw.magic == regmap.REGISTERS["MAGIC"].reset
    assert fw.version == regmap.REGISTERS["VERSION"].reset
    assert fw.firmware_protocol == FIRMWARE_PROTOCOL
    assert fw.clock_status == 0 and fw.lol_status == 0


def test_reads_give_reset_values(firmware: Firmware) -> None:
    """Every register of the map reads its reset value (stub from nrl_protocol.h vs regmap)."""
    with SwitchControl(firmware.url) as ctl:
        for name, reg in regmap.REGISTERS.items():
            assert ctl.read(name) == reg.reset, name


def test_writes_read_back_like_the_model(firmware: Firmware) -> None:
    """Each rw register, written with a value the model accepts, reads back what the model reads."""
    model = SwitchModel()
    with SwitchControl(firmware.url) as ctl:
        for name, reg in regmap.REGISTERS.items():
            # a one-job switch (the model's and the RTL's JOBS = 1) refuses every write to
            # its share; the host HAL models no refusal
            if reg.access != "rw" or reg.server or name in regrules.FIXED_SHARE:
                continue
            for value in ((1 << reg.width) - 1, 1 << (reg.width - 1), 1, 16, reg.reset):
                try:
                    model.write(name, value)
                except ValueError:
                    continue
                ctl.write(name, value)
                assert ctl.read(name) == model.read(name), (name, value)
                break
            else:
                pytest.fail(f"the model accepts none of the test values for {name}")


def test_refused_writes_raise(firmware: Firmware) -> None:
    """A write the register file ignores is caught by the read-back: ro, rc, truncated."""
    t = open_registers(firmware.url)
    try:
        with pytest.raises(RegisterAccessError) as e:
            t.write(regmap.MAGIC, regmap.REGISTERS["MAGIC"].reset ^ 1)
        assert e.value.status == ControlStatus.READ_ONLY
        with pytest.raises(RegisterAccessError) as e:
            t.write(regmap.CNT_PASS, 5)
        assert e.value.status == ControlStatus.READ_ONLY
        job = regmap.REGISTERS["JOB_ID"]
        with pytest.raises(RegisterAccessError) as e:
            t.write(job.addr, 1 << job.width)
        assert e.value.status == ControlStatus.ILLEGAL_VALUE
        assert "reads back" in str(e.value)
    finally:
        t.close()


def test_counter_dump_matches_model(fw_binary: Path, tmp_path: Path) -> None:
    """The D command dumps every RTL counter in register map order; values preloaded from a model
    run come back by name, through one request and through register reads alike."""
    expected = model_counters()
    fw = start_firmware(fw_binary, tmp_path,
                        {regmap.REGISTERS[n].addr: v for n, v in expected.items()})
    try:
        t = open_registers(fw.url)
        assert isinstance(t, SerialRegisterTransport)
        assert t.counters() == expected
        with SwitchControl(fw.url, transport=t) as ctl:
            assert ctl.counters() == expected
            ctl.clear_counters()  # CTRL bit 31
            assert all(v == 0 for v in ctl.counters().values())
    finally:
        fw.proc.terminate()
        fw.proc.wait(timeout=10)


def _raw_exchange(port: serial.Serial, line: bytes) -> str:
    port.write(line)
    while True:
        reply = port.readline()
        assert reply.endswith(b"\n"), f"no reply to {line!r}"
        # pyserial flushes the input when it opens the port, so all or part of the boot banner
        # may have gone: skip whatever is not a reply
        if reply.startswith((b"OK ", b"ER ")):
            body = check_line(reply.rstrip(b"\r\n"))
            assert body is not None, reply
            return body


def test_damaged_and_bad_requests(firmware: Firmware) -> None:
    """The firmware refuses a line whose CRC fails, a long line, an unknown command, bad syntax
    and an address outside the window, each with a CRC-checked ER reply."""
    port = serial.serial_for_url(firmware.path, baudrate=115200, timeout=5)
    try:
        good = frame_line("R 01 0")
        damaged = bytearray(good)
        damaged[4] ^= 0x02
        assert _raw_exchange(port, bytes(damaged)).startswith("ER ?? CRC")
        assert _raw_exchange(port, b"R 02 0\n").startswith("ER ?? CRC")  # no CRC at all
        assert _raw_exchange(port, b"X" * 200 + b"\n").startswith("ER ?? LONG")
        assert _raw_exchange(port, frame_line("Q 03")).startswith("ER 03 CMD")
        assert _raw_exchange(port, frame_line("R 04 zz")).startswith("ER 04 SYNTAX")
        assert _raw_exchange(port, frame_line("W 05 10")).startswith("ER 05 SYNTAX")
        assert _raw_exchange(port, frame_line("R 06 2")).startswith("ER 06 ADDR")
        magic = regmap.REGISTERS["MAGIC"].reset
        assert _raw_exchange(port, good) == f"OK 01 R 000 {magic:08X}"
    finally:
        port.close()
    t = open_registers(firmware.url)
    assert isinstance(t, SerialRegisterTransport)
    try:
        with pytest.raises(RegisterAccessError) as e:
            t.request("R", (0x1000,), what="read of 0x1000")  # past the host-side check
        assert e.value.status == ControlStatus.BAD_REQUEST  # four hex digits: not an address
        with pytest.raises(RegisterAccessError) as e:
            t.request("R", (0x002,), what="read of 0x002")
        assert e.value.status == ControlStatus.UNKNOWN_REGISTER
        with pytest.raises(RegisterAccessError) as e:
            t.request("Z", what="command Z")
        assert e.value.status == ControlStatus.BAD_REQUEST
        with pytest.raises(RegisterAccessError):
            t.read(0x1000)  # refused before anything is sent
    finally:
        t.close()


def test_si5324_sequence_matches_docs(firmware: Firmware) -> None:
    """At boot the firmware plays the Si5324 sequence; the stub's I2C log equals the table in
    docs/board_uart.md, so the documented sequence is the one the code sends."""
    with SwitchControl(firmware.url) as ctl:
        ctl.read("MAGIC")  # the firmware has booted
    log = [line.split(":") for line in firmware.log().splitlines() if line.startswith("i2c ")]
    sent = [(int(a.split()[1], 16), [int(b, 16) for b in d.split()]) for a, d in log]
    doc = (REPO / "docs" / "board_uart.md").read_text()
    table = re.findall(r"^\| (\d+) \| 0x([0-9A-F]{2}) \| ((?:0x[0-9A-F]{2} ?)+) \|", doc, re.M)
    assert table, "no I2C table in docs/board_uart.md"
    documented = [(int(a, 16), [int(b, 16) for b in data.split()]) for _i, a, data in table]
    assert sent == documented


def test_si5324_reset_timing_and_lol_readback(firmware: Firmware) -> None:
    """The reset pulse is held at least 1 us and the parts get time before the first I2C
    access; after the sequence the firmware reads the Si5324's LOL_INT (register 130)."""
    with SwitchControl(firmware.url) as ctl:
        ctl.read("MAGIC")  # the firmware has booted
    log = firmware.log().splitlines()
    assert log[:4] == ["gpo FF", log[1], "gpo 00", log[3]], log[:4]
    hold, settle = (int(re.fullmatch(r"delay (\d+) us", x).group(1)) for x in (log[1], log[3]))  # type: ignore[union-attr]
    assert hold >= 1 and settle >= 1000, (hold, settle)
    assert log[4].startswith("i2c ")
    last_write = max(i for i, x in enumerate(log) if x.startswith("i2c "))
    assert log[last_write + 1].startswith("delay ")
    assert log[last_write + 2] == "i2c-read 68: 82 -> 1 bytes"


@pytest.mark.parametrize("lol, rc, text", [(None, 0, "configured, locked"),
                                           ("1", 1, "configured, loss of lock"),
                                           ("N", 1, "configured, not read")])
def test_netrl_regs_identity_reports_lol(fw_binary: Path, tmp_path: Path, lol: str | None, rc: int,
                                         text: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``netrl regs URL identity`` shows the Si5324's lock and fails while it is not locked."""
    fw = start_firmware(fw_binary, tmp_path, lol=lol)
    try:
        code, out, err = netrl(capsys, fw.url, "identity")
        assert code == rc, out + err
        assert f"SI5324      {text}" in out, out
        assert f"MAGIC       0x{regmap.REGISTERS['MAGIC'].reset:08X}" in out
        assert (rc == 0) == ("no reference clock" not in err), err
        with SwitchControl(fw.url) as ctl:
            ident = ctl._t.identity()  # type: ignore[attr-defined]
        assert ident.lol_status == {None: 0, "1": 1, "N": 2}[lol]
    finally:
        fw.proc.terminate()
        fw.proc.wait(timeout=10)


# ---------------------------------------------------------------------------
# timeouts and damaged lines on the way


def test_timeout_on_loopback_says_so() -> None:
    t = open_registers("serial://loop://?timeout=0.05&retries=2")
    try:
        with pytest.raises(SwitchTimeoutError, match="loopback") as e:
            t.read(regmap.MAGIC)
        assert e.value.tries == 2
    finally:
        t.close()


def test_timeout_on_silent_port_says_so() -> None:
    """A pty with nobody behind it: the error names the port and what to check."""
    master, slave = os.openpty()
    try:
        path = os.ttyname(slave)
        t = open_registers(f"serial://{path}", timeout=0.05, retries=2)
        try:
            with pytest.raises(SwitchTimeoutError, match="nothing came back") as e:
                t.read(regmap.MAGIC)
            assert path in str(e.value) and "115200" in str(e.value)
        finally:
            t.close()
    finally:
        os.close(master)
        os.close(slave)


def test_unopenable_port() -> None:
    with pytest.raises(TransportError, match="cannot open serial port"):
        open_registers("serial:///dev/nonexistent-tty")


class DamagingBridge:
    """A TCP server in a thread that runs the firmware on pipes for each connection and damages
    chosen lines on the way: requests (host to firmware) numbered in ``damage_requests`` and
    replies (firmware to host) numbered in ``damage_replies`` get one bit flipped."""

    def __init__(self, binary: Path, damage_requests: set[int], damage_replies: set[int]) -> None:
        self.binary = binary
        self.damage_requests = damage_requests
        self.damage_replies = damage_replies
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        self.procs: list[subprocess.Popen[bytes]] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        proc = subprocess.Popen([str(self.binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
        self.procs.append(proc)
        assert proc.stdin is not None and proc.stdout is not None
        stdin, stdout = proc.stdin, proc.stdout

        def upstream() -> None:
            n = 0
            buf = b""
            while True:
                data = conn.recv(4096)
                if not data:
                    stdin.close()
                    return
                buf += data
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    n += 1
                    if n in self.damage_requests:
                        line = bytes([line[0] ^ 0x04]) + line[1:]
                    stdin.write(line + b"\n")
                    stdin.flush()

        threading.Thread(target=upstream, daemon=True).start()
        n = 0
        for line in stdout:
            if not line.startswith(b"#"):
                n += 1
                if n in self.damage_replies:
                    line = line[:3] + bytes([line[3] ^ 0x01]) + line[4:]
            try:
                conn.sendall(line)
            except OSError:
                break
        conn.close()

    def close(self) -> None:
        self.sock.close()
        for p in self.procs:
            p.kill()
            p.wait()


@pytest.mark.parametrize("where", ["request", "reply"])
def test_damaged_line_is_retried_over_socket(fw_binary: Path, where: str) -> None:
    """serial://socket://: the first request (or reply) is damaged; the backend sends again and
    gets the right value; a line damaged every time ends in a timeout that says so."""
    bridge = DamagingBridge(fw_binary, {1} if where == "request" else set(),
                            {1} if where == "reply" else set())
    try:
        t = open_registers(f"serial://socket://127.0.0.1:{bridge.port}?timeout=1")
        try:
            assert t.read(regmap.MAGIC) == regmap.REGISTERS["MAGIC"].reset
        finally:
            t.close()
    finally:
        bridge.close()
    always = set(range(1, 10))
    bridge = DamagingBridge(fw_binary, always if where == "request" else set(),
                            always if where == "reply" else set())
    try:
        t = open_registers(f"serial://socket://127.0.0.1:{bridge.port}?timeout=1&retries=3")
        try:
            with pytest.raises(SwitchTimeoutError, match="CRC"):
                t.read(regmap.MAGIC)
        finally:
            t.close()
    finally:
        bridge.close()


def test_reg_base_matches_board_backend() -> None:
    """The firmware's default register window base is the board backend's (rwaxi) one."""
    text = (FIRMWARE / "Makefile").read_text()
    m = re.search(r"^NRL_REG_BASE\s*\?=\s*(0x[0-9A-Fa-f]+)", text, re.M)
    assert m is not None and int(m.group(1), 16) == SUME_S0_AXI_BASE


def test_app_elf_without_toolchain_fails_clearly(tmp_path: Path) -> None:
    toolcheck.require_tool("make", "the firmware Makefile")
    proc = subprocess.run(["make", "-C", str(FIRMWARE), "app.elf", f"BUILD_DIR={tmp_path}",
                           "MB_GCC=nrl-no-such-mb-gcc"], capture_output=True, text=True,
                          check=False)
    assert proc.returncode != 0
    assert "Xilinx SDK 2016.4" in proc.stdout + proc.stderr
    proc = subprocess.run(["make", "-C", str(FIRMWARE), "app.elf", f"BUILD_DIR={tmp_path}",
                           "MB_GCC=true", f"BSP={tmp_path / 'nobsp'}"], capture_output=True,
                          text=True, check=False)
    assert proc.returncode != 0
    assert "no built BSP" in proc.stdout + proc.stderr


# ---------------------------------------------------------------------------
# netrl regs over serial://


def netrl(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    from netrl import main

    rc = main(["regs", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_netrl_regs_read_write(firmware: Firmware, capsys: pytest.CaptureFixture[str]) -> None:
    magic = regmap.REGISTERS["MAGIC"].reset
    rc, out, _ = netrl(capsys, firmware.url, "read", "MAGIC")
    assert rc == 0 and f"MAGIC 0x000 = 0x{magic:08X} ({magic})" in out
    slots = regmap.REGISTERS["AGG_SLOTS"]
    rc, out, _ = netrl(capsys, firmware.url, "read", f"0x{slots.addr:03x}")
    assert rc == 0 and f"AGG_SLOTS 0x{slots.addr:03X} = 0x{slots.reset:08X}" in out
    new = slots.reset // 2
    rc, out, _ = netrl(capsys, firmware.url, "write", "agg_slots", str(new))
    assert rc == 0 and f"= 0x{new:08X} ({new})" in out
    with SwitchControl(firmware.url) as ctl:
        assert ctl.read("AGG_SLOTS") == new
    rc, _, err = netrl(capsys, firmware.url, "write", "MAGIC", "1")
    assert rc == 1 and "read-only" in err
    rc, _, err = netrl(capsys, firmware.url, "write", "0x000", "1")  # the address has a name
    assert rc == 1 and "read-only" in err
    rc, _, err = netrl(capsys, firmware.url, "read", "NO_SUCH_REG")
    assert rc == 1 and "no register of that name" in err


def test_netrl_regs_dump_and_watch(fw_binary: Path, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    import json

    expected = model_counters()
    fw = start_firmware(fw_binary, tmp_path,
                        {regmap.REGISTERS[n].addr: v for n, v in expected.items()})
    try:
        rc, out, _ = netrl(capsys, fw.url, "dump", "--json")
        assert rc == 0 and json.loads(out) == expected
        rc, out, _ = netrl(capsys, fw.url, "dump")
        assert rc == 0
        assert {line.split()[0]: int(line.split()[1]) for line in out.splitlines()} == expected
        rc, out, _ = netrl(capsys, fw.url, "watch", "--count", "2", "--interval", "0.01")
        assert rc == 0
        frames = [f for f in out.split("netrl regs ") if f.strip()]
        assert len(frames) == 2
        for frame in frames:
            rows = {r.split()[0]: r.split()[1:] for r in frame.splitlines()[2:] if r.strip()}
            assert {n: int(v[0]) for n, v in rows.items()} == expected
            assert all(float(v[1]) == 0.0 for v in rows.values())  # nothing counts in the stub
    finally:
        fw.proc.terminate()
        fw.proc.wait(timeout=10)


def test_netrl_regs_timeout_message(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = netrl(capsys, "serial://loop://", "--timeout", "0.02", "--retries", "1",
                       "read", "MAGIC")
    assert rc == 1 and "did not answer read of register MAGIC" in err
