"""``netrl regs`` over a soft switch (``soft://``) and over the board's ``udp://...?regs=rwaxi``.

The ``serial://`` leg, against the firmware's native build, is in
``tests/test_serial_regs.py``. Expected values come from the switch's
reference model (:class:`hostdrv.switch.reference.SwitchModel`) and :mod:`hostdrv.wire.regmap`.
"""

from __future__ import annotations

import json
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from netutil import switch_of_kind, wait_for

from hostdrv import SoftSwitch, SwitchControl, open_registers
from hostdrv.client.regs_cli import counter_names, read_counters, resolve, watch_frames
from hostdrv.wire import protocol as P
from hostdrv.wire import regmap


@pytest.fixture
def soft() -> Iterator[SoftSwitch]:
    with switch_of_kind("soft") as sw:
        yield sw


def netrl(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    from netrl import main

    rc = main(["regs", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def _names_and_values(out: str) -> dict[str, int]:
    return {line.split()[0]: int(line.split()[1]) for line in out.splitlines() if line.strip()}


def test_read_write_soft(soft: SoftSwitch, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("MAGIC", "VERSION", "AGG_MAX_ELEMS", "RPL_CAPACITY", "UDP_PORT"):
        value = soft.model.read(name)
        rc, out, _ = netrl(capsys, soft.url, "read", name)
        assert rc == 0 and f"= 0x{value:08X} ({value})" in out
    slots = regmap.REGISTERS["AGG_SLOTS"]
    rc, out, _ = netrl(capsys, soft.url, "write", "AGG_SLOTS", hex(slots.reset // 4))
    assert rc == 0 and soft.model.read("AGG_SLOTS") == slots.reset // 4
    rc, out, _ = netrl(capsys, soft.url, "read", hex(slots.addr))
    assert rc == 0 and out.startswith(f"AGG_SLOTS 0x{slots.addr:03X} = ")
    # a value the switch refuses: the soft switch answers status 3
    agg_elems = regmap.REGISTERS["AGG_ELEMS"]
    rc, _, err = netrl(capsys, soft.url, "write", "AGG_ELEMS", str(agg_elems.reset + 1))
    assert rc == 1 and "ILLEGAL_VALUE" in err
    assert soft.model.read("AGG_ELEMS") == agg_elems.reset
    rc, _, err = netrl(capsys, soft.url, "write", "AGG_SLOTS", "many")
    assert rc == 1 and "not an integer" in err
    rc, _, err = netrl(capsys, soft.url, "read", "0x002")
    assert rc == 1 and "multiples of 4" in err


def _send_junk(sw: SoftSwitch, n: int) -> None:
    """``n`` SAMPLE_REQs for a job the switch does not serve (the model counts them)."""
    datagram = P.encode_message(P.sample_request(4, job=(sw.model.read("JOB_ID") + 1) & 0xFF,
                                                 worker=0))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _ in range(n):
            s.sendto(datagram, sw.address)


def test_dump_soft(soft: SoftSwitch, capsys: pytest.CaptureFixture[str]) -> None:
    _send_junk(soft, 3)
    assert wait_for(lambda: any(soft.model.counters()[n] for n in regmap.COUNTERS))
    names = regmap.COUNTERS + regmap.SERVER_COUNTERS
    rc, out, _ = netrl(capsys, soft.url, "dump", "--json")
    assert rc == 0
    got = json.loads(out)
    assert list(got) == list(names)
    model = soft.model.counters()
    assert {n: got[n] for n in regmap.COUNTERS} == {n: model[n] for n in regmap.COUNTERS}
    rc, out, _ = netrl(capsys, soft.url, "dump")
    assert rc == 0 and _names_and_values(out) == got


def _model_counters(sw: SoftSwitch) -> dict[str, int]:
    counters = sw.model.counters()
    return {n: counters[n] for n in regmap.COUNTERS}


def _send_and_settle(sw: SoftSwitch, n: int, per_frame: int) -> dict[str, int]:
    """Send ``n`` junk frames, wait until the model has counted them all; its counters."""
    before = sum(_model_counters(sw).values())
    _send_junk(sw, n)
    assert wait_for(lambda: sum(_model_counters(sw).values()) == before + n * per_frame)
    return _model_counters(sw)


def test_watch_rates_soft(soft: SoftSwitch) -> None:
    """Rates are counter increases over the time between samples (a fake clock here): each
    counter's rate is what the model counted between two samples over dt."""
    names = counter_names(soft.url)
    assert names == regmap.COUNTERS + regmap.SERVER_COUNTERS
    base = _model_counters(soft)
    _send_junk(soft, 1)  # how many counters one junk frame moves, per the model
    assert wait_for(lambda: sum(_model_counters(soft).values()) > sum(base.values()))
    time.sleep(0.05)
    per_frame = sum(_model_counters(soft).values()) - sum(base.values())
    snapshots = [_model_counters(soft)]
    sends = [0, 5, 7]
    ticks = iter(range(0, 100, 2))

    def sleep(_interval: float) -> None:
        snapshots.append(_send_and_settle(soft, sends[len(snapshots) - 1], per_frame))

    with SwitchControl(soft.url) as ctl:
        t = ctl._t
        frames = list(watch_frames(lambda: read_counters(ctl, t, names), interval=0.01, count=3,
                                   clock=lambda: float(next(ticks)), sleep=sleep))
    assert [f.index for f in frames] == [1, 2, 3]
    for i, frame in enumerate(frames):
        assert frame.seconds == 2.0
        assert {n: frame.values[n] for n in regmap.COUNTERS} == snapshots[i + 1]
        assert {n: frame.rates[n] for n in regmap.COUNTERS} == {
            n: (snapshots[i + 1][n] - snapshots[i][n]) / 2.0 for n in regmap.COUNTERS}
    assert sum(frames[2].rates[n] for n in regmap.COUNTERS) == 7 * per_frame / 2.0


def test_watch_command_soft(soft: SoftSwitch, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = netrl(capsys, soft.url, "watch", "--count", "2", "--interval", "0.01")
    assert rc == 0
    assert out.count(f"netrl regs {soft.url}  frame ") == 2
    assert "\x1b[" not in out  # not a terminal: frames one after the other
    rc, _, err = netrl(capsys, soft.url, "watch", "--interval", "0")
    assert rc == 1 and "interval" in err


def test_resolve() -> None:
    for name, reg in regmap.REGISTERS.items():
        assert resolve(name) == (name, reg.addr)
        assert resolve(name.lower()) == (name, reg.addr)
        assert resolve(hex(reg.addr)) == (name, reg.addr)
    unnamed = next(a for a in range(0, 0x1000, 4) if a not in regmap.BY_ADDR)
    assert resolve(hex(unnamed)) == (None, unnamed)


FAKE_RWAXI = '''\
#!{python}
"""rwaxi stand-in: NetFPGA SUME's options and output, registers from the reference model."""
import getopt, json, pathlib, sys
state = pathlib.Path({state!r})
regs = json.loads(state.read_text())
opts = dict(getopt.getopt(sys.argv[1:], "a:w:i:")[0])
addr = int(opts["-a"], 0)
if "-w" in opts:
    regs[str(addr)] = int(opts["-w"], 0)
    state.write_text(json.dumps(regs))
    print("WROTE 0x%08x = 0x%04x" % (addr, regs[str(addr)]))
else:
    print("READ 0x%08x = 0x%04x" % (addr, regs.get(str(addr), 0)))
'''


def test_udp_rwaxi(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``udp://...?regs=rwaxi`` with a stand-in rwaxi holding the model's reset register values."""
    from hostdrv.switch.reference import SwitchModel
    from hostdrv.wire.sume import SUME_S0_AXI_BASE

    model = SwitchModel()
    state = tmp_path / "regs.json"
    state.write_text(json.dumps({str(SUME_S0_AXI_BASE + r.addr): model.read(n)
                                 for n, r in regmap.REGISTERS.items() if not r.server}))
    tool = tmp_path / "rwaxi"
    tool.write_text(FAKE_RWAXI.format(python=sys.executable, state=str(state)))
    tool.chmod(0o755)
    url = f"udp://127.0.0.1:9?regs=rwaxi&rwaxi={tool}"
    rc, out, _ = netrl(capsys, url, "read", "AGG_MAX_SLOTS")
    assert rc == 0 and f"({model.read('AGG_MAX_SLOTS')})" in out
    rc, out, _ = netrl(capsys, url, "write", "JOB_ID", "7")
    assert rc == 0 and "= 0x00000007 (7)" in out
    rc, out, _ = netrl(capsys, url, "dump", "--json")
    assert rc == 0
    assert json.loads(out) == {n: model.read(n) for n in regmap.COUNTERS}  # no SRV_* on a board
    t = open_registers(url)
    assert t.read(regmap.JOB_ID) == 7
    t.close()
    np.testing.assert_equal(len(counter_names(url)), len(regmap.COUNTERS))
