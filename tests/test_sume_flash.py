"""The SUME board's flashing and register tools without a board.

* ``scripts/sume_flash.sh`` programs with ``open_hw`` as SUME's
  ``download.tcl`` does (a fake ``vivado`` records the Tcl) and prints the
  steps of SUME's ``run_load_image.sh``; with ``--reload`` it unloads the
  driver, removes the PCI device, programs, rescans and reloads, and without
  it refuses while ``sume_riffa`` is bound;
* :class:`hostdrv.client.board.RwaxiRegisterTransport` refuses a write that
  did not take: a fake ``rwaxi`` that, like the per-project ``rwaxi.c`` of
  NetFPGA-SUME-live, issues the read ioctl for ``-w``.

The build flow (``build.tcl`` under tclsh) is ``tests/test_sume_flow.py``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hostdrv.client.board import RwaxiRegisterTransport
from hostdrv.client.transport import RegisterAccessError
from hostdrv.switch.reference import SwitchModel
from hostdrv.wire import regmap

REPO = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------------
# sume_flash.sh

FAKE_VIVADO = '''#!{python}
"""Fake vivado: records its arguments and the Tcl it is asked to source."""
import json, sys
args = sys.argv[1:]
tcl = open(args[args.index("-source") + 1]).read()
with open({log!r}, "w") as f:
    json.dump({{"args": args, "tcl": tcl}}, f)
print("fake vivado: ran", len(tcl), "bytes of Tcl")
'''


def test_flash_uses_open_hw_and_prints_reload_steps(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "vivado.json"
    (bindir / "vivado").write_text(FAKE_VIVADO.format(python=sys.executable, log=str(log)))
    (bindir / "vivado").chmod(0o755)
    bit = tmp_path / "nf_nrl.bit"
    bit.write_bytes(b"bit")
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "NRL_SYSFS": str(tmp_path / "sys")}
    r = subprocess.run(["bash", str(REPO / "scripts" / "sume_flash.sh"), str(bit), "--url", "lab:3121"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    rec = json.loads(log.read_text())
    tcl = rec["tcl"]
    assert re.search(r"^open_hw\s*$", tcl, re.M), tcl
    assert "connect_hw_server -url lab:3121" in tcl
    assert "get_hw_targets */xilinx_tcf/Digilent/*" in tcl
    assert "program_hw_devices" in tcl and str(bit) in tcl
    out = r.stdout
    # run_load_image.sh's steps after programming, printed (no --reload, no driver loaded)
    assert f"{tmp_path / 'sys'}/bus/pci/rescan" in out
    assert "rmmod" not in out and "insmod" in out and "sume_riffa.ko" in out
    assert all(f"nf{i}" in out for i in range(4))
    assert "persistent" not in out.lower()


# ---------------------------------------------------------------------------
# rwaxi write check

FAKE_RWAXI = '''#!{python}
"""Fake rwaxi. MODE=lib: writes with -w (lib/sw/std/apps/sume_riffa_v1_0_0/rwaxi.c).
MODE=project: issues the read for -w and prints WROTE with the current value
(projects/*/sw/host/apps/rwaxi.c). MODE=sticky: writes nothing, echoes the value."""
import getopt, json, sys
STATE, MODE = {state!r}, {mode!r}
st = json.load(open(STATE))
o = dict(getopt.getopt(sys.argv[1:], "a:hi:w:")[0])
key = "0x%08x" % int(o["-a"], 0)
if "-w" in o and MODE == "lib":
    st[key] = int(o["-w"], 0)
    json.dump(st, open(STATE, "w"))
if "-w" in o:
    shown = int(o["-w"], 0) if MODE != "project" else st.get(key, 0)
    print("WROTE %s = 0x%04x" % (key, shown))
else:
    print("READ  %s = 0x%04x" % (key, st.get(key, 0)))
'''


def fake_rwaxi(tmp_path: Path, mode: str) -> RwaxiRegisterTransport:
    state = tmp_path / f"{mode}.json"
    state.write_text("{}")
    tool = tmp_path / f"rwaxi_{mode}"
    tool.write_text(FAKE_RWAXI.format(python=sys.executable, state=str(state), mode=mode))
    tool.chmod(0o755)
    return RwaxiRegisterTransport("udp://board", tool=str(tool))


@pytest.mark.parametrize("mode", ["lib", "project", "sticky"])
def test_rwaxi_write_is_checked(tmp_path: Path, mode: str) -> None:
    t = fake_rwaxi(tmp_path, mode)
    slots = regmap.REGISTERS["AGG_SLOTS"].addr
    if mode == "lib":
        t.write(slots, 12)
        assert t.read(slots) == 12
        # CTRL bit 31 self-clears on the board; the model says what reads back
        ctrl = regmap.REGISTERS["CTRL"].addr
        model = SwitchModel()
        model.write("CTRL", 0x80000003)
        t.write(ctrl, 0x80000003)
        assert model.read("CTRL") != 0x80000003
        return
    with pytest.raises(RegisterAccessError) as e:
        t.write(slots, 12)
    assert e.value.field == "AGG_SLOTS"
    if mode == "project":
        assert "issues the read ioctl for -w" in str(e.value)
        assert "lib/sw/std/apps/sume_riffa_v1_0_0/rwaxi.c" in str(e.value)
    else:
        assert "read back 0x00000000" in str(e.value) and "did not take effect" in str(e.value)


FAKE_TOOL = '''#!/bin/sh
echo "$(basename "$0") $*" >> {log}
'''


def _flash_env(tmp_path: Path) -> tuple[dict[str, str], Path, Path]:
    """Fake vivado, rmmod, insmod and ip (each logs its call, in order) and a fake sysfs
    with sume_riffa loaded and the SUME endpoint present."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    calls = tmp_path / "calls.log"
    for tool in ("vivado", "rmmod", "insmod", "ip"):
        (bindir / tool).write_text(FAKE_TOOL.format(log=calls))
        (bindir / tool).chmod(0o755)
    sysfs = tmp_path / "sys"
    (sysfs / "module" / "sume_riffa").mkdir(parents=True)
    dev = sysfs / "bus" / "pci" / "devices" / "0000:03:00.0"
    dev.mkdir(parents=True)
    (dev / "device").write_text("0x7028\n")
    other = sysfs / "bus" / "pci" / "devices" / "0000:00:1f.0"
    other.mkdir(parents=True)
    (other / "device").write_text("0x1234\n")
    drv = tmp_path / "driver"
    drv.mkdir()
    (drv / "sume_riffa.ko").write_bytes(b"ko")
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "NRL_SYSFS": str(sysfs),
           "DRIVER_FOLDER": str(drv)}
    return env, calls, sysfs


def test_flash_refuses_with_driver_bound(tmp_path: Path) -> None:
    """Without --reload, a loaded sume_riffa stops the script before Vivado runs."""
    env, calls, _ = _flash_env(tmp_path)
    bit = tmp_path / "nf_nrl.bit"
    bit.write_bytes(b"bit")
    r = subprocess.run(["bash", str(REPO / "scripts" / "sume_flash.sh"), str(bit)],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 1 and "sume_riffa is loaded" in r.stderr, r.stdout + r.stderr
    assert "rmmod sume_riffa" in r.stderr and "remove" in r.stderr
    assert not calls.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="--reload checks for root")
def test_flash_reload_unbinds_programs_rescans(tmp_path: Path) -> None:
    """--reload: rmmod and PCI remove before programming, rescan and insmod after (the
    blueswitch run_load_image.sh order)."""
    env, calls, sysfs = _flash_env(tmp_path)
    bit = tmp_path / "nf_nrl.bit"
    bit.write_bytes(b"bit")
    r = subprocess.run(["bash", str(REPO / "scripts" / "sume_flash.sh"), str(bit), "--reload"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    log = [ln.split()[0] for ln in calls.read_text().splitlines()]
    assert log == ["rmmod", "vivado", "insmod", "ip", "ip", "ip", "ip"], log
    assert (sysfs / "bus" / "pci" / "devices" / "0000:03:00.0" / "remove").read_text().strip() == "1"
    assert not (sysfs / "bus" / "pci" / "devices" / "0000:00:1f.0" / "remove").exists()
    assert (sysfs / "bus" / "pci" / "rescan").read_text().strip() == "1"
    assert "sume_riffa unloaded" in r.stdout and "removed" in r.stdout
