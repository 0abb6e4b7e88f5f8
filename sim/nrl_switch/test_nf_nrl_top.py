"""cocotb testbench for the SUME wrapper ``hw/boards/sume/nf_nrl_top.v``.

Checks what the wrapper adds around nrl_switch: SUME's active-low resets,
the five-input packet arbiter, the per-port output queues that fan frames
out by ``TUSER[31:24]``, and the register window on ``S0_AXI``. Ordinary
frames enter on all five inputs at once (4 MAC ports and DMA, each with its
SUME source bit); every output port must deliver, per source, exactly the
frames ``hostdrv.switch.reference.SwitchModel`` floods to it, in order, with sink
backpressure on. A read of ``MAGIC`` through ``S0_AXI`` must reach the
switch's register map, and ``S1_AXI`` must answer with zero.
"""

from __future__ import annotations

import itertools
import logging
import random

import cocotb
from cocotb.clock import Clock
from cocotb.handle import HierarchyObject
from cocotb.triggers import ClockCycles, RisingEdge, with_timeout
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from hostdrv.switch.reference import SwitchModel
from hostdrv.wire import regmap
from hostdrv.wire.sume import SUME_S0_AXI_BASE

CLK_PERIOD_NS = 5
# input i's SUME source bit: MAC port i on bit 2i, the DMA input on bit 1
SRC_BITS = (0x01, 0x04, 0x10, 0x40, 0x02)


def queues_of(dst: int) -> list[int]:
    """Output queues for a destination bitmap (SUME output_queues mapping)."""
    q = [i for i in range(4) if dst >> (2 * i) & 1]
    return q + [4] if dst & 0xAA else q


async def axil_read(dut: HierarchyObject, prefix: str, addr: int) -> int:
    """One AXI4-Lite read on a SUME-style upper-case port group (OKAY)."""
    data, resp = await axil_read_resp(dut, prefix, addr)
    assert resp == 0, f"{prefix} read {addr:#010x}: RRESP={resp}"
    return data


async def axil_read_resp(dut: HierarchyObject, prefix: str, addr: int) -> tuple[int, int]:
    """One AXI4-Lite read on a SUME-style upper-case port group: (data, RRESP)."""
    sig = lambda name: getattr(dut, f"{prefix}_AXI_{name}")  # noqa: E731
    sig("ARADDR").value = addr
    sig("ARVALID").value = 1
    sig("RREADY").value = 1
    while True:
        await RisingEdge(dut.axis_aclk)
        if sig("ARREADY").value:
            sig("ARVALID").value = 0
        if sig("RVALID").value:
            data, resp = int(sig("RDATA").value), int(sig("RRESP").value)
            break
    await RisingEdge(dut.axis_aclk)
    sig("RREADY").value = 0
    return data, resp


@cocotb.test()
async def run_wrapper(dut: HierarchyObject) -> None:
    """Five inputs at once through arbiter, switch and output queues."""
    for p in ("S0", "S1", "S2"):
        for name in ("AWVALID", "WVALID", "BREADY", "ARVALID", "RREADY", "AWADDR", "ARADDR",
                     "WDATA", "WSTRB"):
            getattr(dut, f"{p}_AXI_{name}").setimmediatevalue(0)
    dut.axis_resetn.setimmediatevalue(0)
    dut.axi_resetn.setimmediatevalue(0)
    Clock(dut.axis_aclk, CLK_PERIOD_NS, unit="ns").start()
    Clock(dut.axi_aclk, CLK_PERIOD_NS, unit="ns").start()

    sources = [AxiStreamSource(AxiStreamBus.from_prefix(dut, f"s_axis_{i}"), dut.axis_aclk,
                               dut.axis_resetn, reset_active_level=False) for i in range(5)]
    sinks = [AxiStreamSink(AxiStreamBus.from_prefix(dut, f"m_axis_{i}"), dut.axis_aclk,
                           dut.axis_resetn, reset_active_level=False) for i in range(5)]
    for i in range(5):
        logging.getLogger(f"cocotb.{dut._name}.s_axis_{i}").setLevel(logging.WARNING)
        logging.getLogger(f"cocotb.{dut._name}.m_axis_{i}").setLevel(logging.WARNING)
        sinks[i].set_pause_generator(itertools.cycle([0, 0, 1] if i % 2 else [0, 1, 1, 0]))

    await ClockCycles(dut.axis_aclk, 8)
    dut.axis_resetn.value = 1
    dut.axi_resetn.value = 1
    await ClockCycles(dut.axis_aclk, 8)

    assert await axil_read(dut, "S0", regmap.REGISTERS["MAGIC"].addr) == regmap.REGISTERS["MAGIC"].reset
    # the full SUME address: the window's base bits are not decoded, bits 15:12 are the job
    # page, and a one-job switch has no register outside page 0 (SLVERR)
    base = SUME_S0_AXI_BASE
    assert await axil_read(dut, "S0", base + regmap.MAGIC) == regmap.REGISTERS["MAGIC"].reset
    assert await axil_read_resp(dut, "S0", base + regmap.job_address("JOB_ID", 1)) == (0, 2)
    assert await axil_read(dut, "S1", 0x0) == 0

    rng = random.Random(5)
    model = SwitchModel()
    expected: dict[tuple[int, int], list[bytes]] = {}
    per_input: list[list[bytes]] = []
    for i, src in enumerate(SRC_BITS):
        frames = []
        for n in range(6):
            length = rng.choice([20, 60, 64, 65, 97, 200])
            frame = b"\xff" * 6 + bytes([2, 0, 0, 0, i, n]) + b"\x88\xb5" + bytes(
                rng.getrandbits(8) for _ in range(length - 14))
            frames.append(frame)
            for e in model.process(frame, src):
                for q in queues_of(e.dst_ports):
                    expected.setdefault((q, src), []).append(e.frame)
        per_input.append(frames)

    for i, frames in enumerate(per_input):
        for frame in frames:
            await sources[i].send(AxiStreamFrame(frame, tuser=len(frame) | SRC_BITS[i] << 16))

    got: dict[tuple[int, int], list[bytes]] = {}
    for q in range(5):
        n = sum(len(v) for (qq, _), v in expected.items() if qq == q)
        for _ in range(n):
            f = await with_timeout(sinks[q].recv(), 50, "us")
            tuser = f.tuser[0] if isinstance(f.tuser, list) else int(f.tuser)
            got.setdefault((q, tuser >> 16 & 0xFF), []).append(bytes(f.tdata))
    await ClockCycles(dut.axis_aclk, 100)
    assert all(s.empty() for s in sinks), "extra output frames"
    assert got == expected
    assert await axil_read(dut, "S0", regmap.REGISTERS["CNT_PASS"].addr) == model.read("CNT_PASS")
