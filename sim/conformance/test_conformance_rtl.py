"""cocotb: the conformance vectors (``hostdrv.switch.conformance``) on nrl_switch, against the model.

Each vector file named in ``$NRL_CONF_VECTORS`` (written by
:func:`hostdrv.switch.conformance.save`; ``tests/test_conformance_rtl.py`` builds the
switch with the vector's parameters, :func:`sim.conformance.rtl_parameters`) is one
cocotb test: a reset switch, then the vector's operations in order, one at a time:

* ``frame``: the frame's beats go in back to back on ``s_axis`` with TUSER =
  length | source port << 16, ``m_axis_tready`` held high. The operation ends when
  the switch is idle: the model's count of frames for it has left (or 20000 clocks
  have passed) and neither stream has moved for a quiet window (96 clocks + 3 per
  bit of a replay index, as ``hostdrv.switch.rtl``). Each frame that left
  in the meantime is taken with its bytes (``tkeep`` of the last beat) and its
  egress bitmap (TUSER[31:24]); TUSER[15:0] must be its length. Once the frames the
  model expects have left, the rest of the quiet window is one wait for a timer or a
  rise of ``m_axis_tvalid``, whichever comes first (not a Python step per clock): a
  rise means a frame the model does not send, and the clock-by-clock watch resumes
  and takes it.
* ``write``: the hardware checks only ``MEMBER_PORT_i`` and ``AGG_UPLINK_PORT``
  (0 or one-hot, else SLVERR and the value kept; docs/registers.md) and the job
  table's admin registers (``JOB_ID`` beyond its width; ``JOB_ENABLE``,
  ``JOB_SLOT_*`` and ``JOB_RPL_*``, fixed in a one-job RTL: every write SLVERR,
  docs/protocol.md section 11). Those writes
  are always driven over AXI4-Lite and their response compared: OKAY where the
  model accepts, SLVERR where it refuses. SLVERR carries no message, so the
  *refusal* is compared, not its text: an SLVERR stands for the model's message,
  an OKAY for ``""``. Every other write the model refuses (read-only registers,
  values wider than the register or out of its range, undefined ``CTRL`` bits) is
  refused by the host before the bus (``SwitchControl``, ``hostdrv.switch.rtl``): it is not
  driven and its outcome is the model's; every write the model takes is driven and
  must answer OKAY.
* ``read``: an AXI4-Lite read (OKAY) of the address.

After every operation, once the switch is idle, ``CNT_*`` registers are read
over AXI4-Lite (4 to 5 clocks a read) and compared with the model's: the counters
the model changed at that operation after every operation, and all 29 after every
``FULL_READ_EVERY`` th operation, after every register write or read operation and
after the last one. The counters only count up between writes, so a count the RTL
changes and the model does not is caught at the next full read, at most
``FULL_READ_EVERY`` operations later (the difference then names that operation);
a counter not read at an operation is taken to be unchanged. A count read below
the model's is read again every ``COUNT_POLL`` clocks, up to ``OUTPUT_TIMEOUT``
(a priority update's entries are judged one by one after its frame has gone
quiet on the streams). After the last operation, every register of the map is read. After ``RPL_RESET`` (and reset) the clocks of the
replay sum tree's clearing sweep (capacity / 2 + 64) pass before the next
operation, as on ``hostdrv.switch.rtl``.

What the RTL did becomes a :class:`hostdrv.switch.conformance.Trace` and is compared,
with :func:`hostdrv.switch.conformance.compare`, with the trace of
:class:`hostdrv.switch.reference.SwitchModel` on the same operations, recomputed here: the
vector as the RTL can take it (:func:`hostdrv.switch.conformance.rtl_vector`, without
frames over 65535 bytes). The comparison runs after every operation and stops at
the first difference, which names the operation. Each test writes its outcome to
``$NRL_CONF_RESULTS/<name>.json`` (``diff`` empty when the traces agree, the
operations played and left out, the writes driven and refused on each side, the
clocks and seconds) for the pytest side to report. With ``$NRL_CONF_CORRUPT`` = *i*
the frame of operation *i* reaches the RTL cut to 20 bytes: the harness's check
that a difference is caught and named (at operation *i*). With ``$NRL_CONF_EXTRA`` =
``i:port:hex`` the RTL alone gets one more frame after operation *i*: the check that a
count the model does not make is caught by the next full read of the counters.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import cocotb
from cocotb.handle import HierarchyObject
from cocotb.triggers import First, RisingEdge, Timer
from cocotb.utils import get_sim_time

from hostdrv.switch import conformance as K
from hostdrv.switch.reference import SwitchModel
from hostdrv.wire import regmap
from sim.common.tb import ClockReset, frame_beats
from sim.conformance import CORRUPT_ENV, EXTRA_ENV, RESULTS_ENV, VECTORS_ENV

CLK_PERIOD_NS = 5
"""200 MHz, the SUME datapath clock."""

HW_CHECKED = frozenset([f"MEMBER_PORT_{i}" for i in range(8)] + ["AGG_UPLINK_PORT"] +
                       [r.name for r in regmap.REGISTERS.values() if r.access == "rw" and r.admin])
"""The registers whose illegal values the RTL refuses itself (SLVERR): the port registers and
the job table's admin registers (JOB_ID, JOB_ENABLE, JOB_SLOT_*, JOB_RPL_*)."""

OUTPUT_TIMEOUT = 20000
"""Clocks an operation may take to emit the frames the model expects."""

COUNT_POLL = 32
"""Clocks between two reads of a counter that has not reached the model's count yet."""

FULL_READ_EVERY = 8
"""Every counter is read after every this many operations (and after every register
operation and the last one); in between, the counters the model changed."""

_INPUTS = ("s_axis_tvalid", "s_axis_tdata", "s_axis_tkeep", "s_axis_tlast", "s_axis_tuser",
           "m_axis_tready", "s_axil_awvalid", "s_axil_awaddr", "s_axil_awprot", "s_axil_wvalid",
           "s_axil_wdata", "s_axil_wstrb", "s_axil_bready", "s_axil_arvalid", "s_axil_araddr",
           "s_axil_arprot", "s_axil_rready")
_OKAY, _SLVERR = 0, 2

PATHS = {Path(p).stem: p for p in os.environ.get(VECTORS_ENV, "").split(os.pathsep) if p}


class Rtl(ClockReset):
    """nrl_switch with one lean driver: every clock one coroutine drives the inputs and
    takes any output beat, so an operation is a sequence of :meth:`tick` calls."""

    def __init__(self, dut: HierarchyObject, capacity: int) -> None:
        super().__init__(dut, CLK_PERIOD_NS, idle_inputs=_INPUTS)
        self.nbytes = len(dut.s_axis_tdata) // 8
        self.full_keep = (1 << self.nbytes) - 1
        self.edge = RisingEdge(self.clk)
        self.window = 96 + 3 * max(capacity - 1, 1).bit_length()
        self.settle = capacity // 2 + 64
        self.out: list[tuple[bytes, int]] = []
        self.cur = bytearray()
        self.quiet = 0
        self.clock = 0
        self.errors: list[str] = []
        """Stream protocol errors seen (ragged ``tkeep``, a TUSER length that is not the frame's)."""

    async def start(self) -> None:
        """Reset, the output always ready, the replay sweep done."""
        self.dut.m_axis_tready.value = 1
        await self.reset()
        await self.idle(self.settle)

    async def tick(self) -> None:
        """One clock; an output beat that left at it is taken."""
        await self.edge
        self.clock += 1
        self.quiet += 1
        d = self.dut
        v = d.m_axis_tvalid.value
        if not (v.is_resolvable and int(v)):
            return
        self.quiet = 0
        keep = int(d.m_axis_tkeep.value)
        data = int(d.m_axis_tdata.value).to_bytes(self.nbytes, "little")
        if int(d.m_axis_tlast.value):
            n = keep.bit_length()
            if keep != (1 << n) - 1 or n == 0:
                self.errors.append(f"last beat with tkeep {keep:#x}")
            self.cur += data[:n]
            user = int(d.m_axis_tuser.value)
            if user & 0xFFFF != len(self.cur):
                self.errors.append(f"TUSER length {user & 0xFFFF} for a frame of {len(self.cur)} "
                                   f"bytes")
            self.out.append((bytes(self.cur), (user >> 24) & 0xFF))
            self.cur.clear()
        else:
            if keep != self.full_keep:
                self.errors.append(f"beat before the last with tkeep {keep:#x}")
            self.cur += data

    async def idle(self, clocks: int) -> None:
        for _ in range(clocks):
            await self.tick()

    def take(self) -> list[tuple[bytes, int]]:
        out, self.out = self.out, []
        return out

    # -- operations -------------------------------------------------------------
    async def frame(self, data: bytes, port: int, expect: int) -> list[tuple[bytes, int]]:
        """Send one frame; wait until ``expect`` frames left and the switch is quiet."""
        d = self.dut
        valid, ready = d.s_axis_tvalid, d.s_axis_tready
        for tdata, tkeep, tuser, tlast in frame_beats([(data, port)], self.nbytes):
            d.s_axis_tdata.value = tdata
            d.s_axis_tkeep.value = tkeep
            d.s_axis_tuser.value = tuser
            d.s_axis_tlast.value = tlast
            valid.value = 1
            while True:
                await self.tick()
                if int(ready.value):
                    break
            self.quiet = 0
        valid.value = 0
        start = self.clock
        while True:
            await self.tick()
            if self.cur:
                continue
            if len(self.out) >= expect and 0 < self.quiet < self.window:
                await self.wait_quiet()
            if self.quiet >= self.window and (
                    len(self.out) >= expect or self.clock - start > OUTPUT_TIMEOUT):
                break
        return self.take()

    async def wait_quiet(self) -> None:
        """The rest of the quiet window (see :meth:`watch`)."""
        await self.watch(self.window - self.quiet)

    async def watch(self, clocks: int) -> None:
        """Up to ``clocks`` clocks as one wait: a timer, or ``m_axis_tvalid`` rising
        first. Called right after a clock at which no beat left (``quiet`` > 0: a valid that
        stays high past a beat has no rise to wait for); after a rise (or a valid raised at
        that clock) the clock-by-clock watch takes over again."""
        tvalid = self.dut.m_axis_tvalid
        t0 = get_sim_time("ns")
        await First(Timer(clocks * CLK_PERIOD_NS, "ns"), RisingEdge(tvalid))
        clocks = round((get_sim_time("ns") - t0) / CLK_PERIOD_NS)
        self.clock += clocks
        v = tvalid.value
        if v.is_resolvable and int(v):
            self.quiet = 0  # a beat is presented: tick() takes it at the next clock
        else:
            self.quiet += clocks

    async def write(self, addr: int, value: int) -> int:
        """An AXI4-Lite write of a whole word; its BRESP."""
        d = self.dut
        d.s_axil_awaddr.value = addr
        d.s_axil_wdata.value = value
        d.s_axil_wstrb.value = 0xF
        d.s_axil_awvalid.value = 1
        d.s_axil_wvalid.value = 1
        d.s_axil_bready.value = 1
        aw = w = True
        while aw or w:
            await self.tick()
            if aw and int(d.s_axil_awready.value):
                aw = False
                d.s_axil_awvalid.value = 0
            if w and int(d.s_axil_wready.value):
                w = False
                d.s_axil_wvalid.value = 0
        while True:
            await self.tick()
            if int(d.s_axil_bvalid.value):
                break
        resp = int(d.s_axil_bresp.value)
        d.s_axil_bready.value = 0
        return resp

    async def read(self, addr: int) -> int:
        """An AXI4-Lite read; a response other than OKAY is a protocol error."""
        d = self.dut
        d.s_axil_araddr.value = addr
        d.s_axil_arvalid.value = 1
        d.s_axil_rready.value = 1
        while True:
            await self.tick()
            if int(d.s_axil_arready.value):
                break
        d.s_axil_arvalid.value = 0
        while True:
            await self.tick()
            if int(d.s_axil_rvalid.value):
                break
        data, resp = int(d.s_axil_rdata.value), int(d.s_axil_rresp.value)
        d.s_axil_rready.value = 0
        if resp != _OKAY:
            self.errors.append(f"read of {addr:#05x} answered RRESP={resp}")
        return data

    async def counters(self, want: dict[str, int],
                       names: Iterable[str] = regmap.COUNTERS) -> dict[str, int]:
        """The counters ``names``; those that differ from ``want`` are read again every
        ``COUNT_POLL`` clocks until they agree or ``OUTPUT_TIMEOUT`` clocks have passed (an
        operation's last counts can land after the streams went quiet: a priority update's
        entries are judged one by one after its frame)."""
        got = {name: await self.read(counter_address(name)) for name in names}
        start = self.clock
        while self.clock - start < OUTPUT_TIMEOUT:
            late = [n for n, c in got.items() if c != want[n]]
            if not late:
                break
            if self.quiet:
                await self.watch(COUNT_POLL)
            else:
                await self.tick()
            got.update({n: await self.read(counter_address(n)) for n in late})
        return got


def counter_address(name: str) -> int:
    """The address of a counter of the trace: ``NAME`` (job 0's) or ``NAME@j`` (job j's page,
    :func:`hostdrv.switch.conformance_run._counters`)."""
    reg, _, job = name.partition("@")
    return regmap.job_address(reg, int(job or 0))


def _prefix(vector: K.Vector, trace: K.Trace, n: int) -> tuple[K.Vector, K.Trace]:
    return (K.Vector(vector.name, vector.params, vector.ops[:n]),
            K.Trace(trace.results[:n], trace.counters[:n], {}))


async def play(dut: HierarchyObject, path: str) -> dict[str, Any]:
    """Play one vector file; its outcome (``diff`` is '' when the RTL agrees with the model)."""
    t0 = time.monotonic()
    full = K.load(path)
    vector = K.rtl_vector(full)
    want = K.run(vector, SwitchModel(**vector.params))
    rtl = Rtl(dut, vector.params["capacity"])
    await rtl.start()
    got = K.Trace([], [], {})
    stats = {"driven_okay": 0, "driven_slverr": 0, "refused_by_host": 0}
    diff = ""
    corrupt = int(os.environ.get(CORRUPT_ENV, "-1"))
    extra_at, extra_port, extra = (os.environ.get(EXTRA_ENV) or "-1:0:").split(":")
    every = list(want.counters[0]) if want.counters else list(regmap.COUNTERS)
    for i, op in enumerate(vector.ops):
        expected = want.results[i]
        if op[0] == "frame":
            data = op[2][:20] if i == corrupt else op[2]
            got.results.append(await rtl.frame(data, op[1], len(expected)))
            if i == int(extra_at):  # the RTL alone gets one more frame: see EXTRA_ENV
                got.results[-1] += await rtl.frame(bytes.fromhex(extra), int(extra_port), 0)
        elif op[0] == "write":
            found = regmap.split(op[1])[1]
            name = found.name if found else ""
            if expected and name not in HW_CHECKED:
                stats["refused_by_host"] += 1
                got.results.append(expected)
            else:
                resp = await rtl.write(op[1], op[2])
                stats["driven_okay" if resp == _OKAY else "driven_slverr"] += 1
                if resp == _SLVERR:
                    got.results.append(expected or f"SLVERR (the model takes {op[2]:#x})")
                else:
                    got.results.append("" if resp == _OKAY else f"BRESP={resp}")
                if name.startswith(("RPL_RESET", "JOB_RPL", "JOB_ENABLE")) and resp == _OKAY:
                    await rtl.idle(rtl.settle)
        else:
            got.results.append(await rtl.read(op[1]))
        if op[0] != "frame" or i % FULL_READ_EVERY == 0 or i == len(vector.ops) - 1:
            got.counters.append(await rtl.counters(want.counters[i], every))
        else:  # the counters the model changed; the others as they were (see the docstring)
            before = want.counters[i - 1]
            changed = [n for n, c in want.counters[i].items() if before[n] != c]
            got.counters.append({**got.counters[-1],
                                 **await rtl.counters(want.counters[i], changed)})
        if rtl.errors:
            diff = f"{vector.name} op {i} ({K.describe(op)}): {rtl.errors[0]}"
            break
        if got.results[i] != expected or got.counters[i] != want.counters[i]:
            diff = K.compare(*_prefix(vector, want, i + 1), _prefix(vector, got, i + 1)[1])
            break
    if not diff:
        got.registers = {a: await rtl.read(a) for a in want.registers}
        diff = K.compare(vector, want, got) or (
            f"{vector.name} registers at the end: {rtl.errors[0]}" if rtl.errors else "")
    return {"name": vector.name, "diff": diff, "ops": len(vector.ops),
            "ops_played": len(got.results), "left_out": len(full.ops) - len(vector.ops),
            "frames_out": sum(len(r) for r in got.results if isinstance(r, list)),
            "clocks": rtl.clock, "seconds": round(time.monotonic() - t0, 2), **stats}


@cocotb.test(skip=not PATHS)
@cocotb.parametrize(vector=sorted(PATHS) or [""])
async def run_vector(dut: HierarchyObject, vector: str) -> None:
    """One conformance vector, byte for byte and counter for counter against the model."""
    outcome = await play(dut, PATHS[vector])
    out = os.environ.get(RESULTS_ENV)
    if out:
        Path(out, f"{vector}.json").write_text(json.dumps(outcome, indent=1))
    dut._log.info("%s", {k: v for k, v in outcome.items() if k != "diff"})
    assert not outcome["diff"], outcome["diff"]
