"""cocotb testbench for ``hw/rtl/replay_regs.v`` built with several jobs (``JOBS`` > 1, docs/protocol.md
section 11) against ``SwitchModel(jobs=J)``: the replay engine's register pages.

``test_pages``: random writes to every job's ``RPL_SEED``, ``RPL_MIN_SIZE``, ``RPL_SPI``,
``RPL_SPI_ERROR``, ``RPL_RESET`` and member table (legal and refused values, partial strobes) at
its page (address ``job * 0x1000 + offset``): each response against the model's verdict, the
pulse it makes (``seed_wr``, ``spi_wr``, ``rpl_reset`` with ``pulse_job``) or none, the
configuration outputs of every job against the model's registers, and every page's read-back;
the status words of each page (``RPL_SIZE``, ``RPL_WPTR``, ``RPL_TOTAL_*``, ``RPL_RATE_DIFF_*``)
read the page's job's inputs; counter events tagged with random jobs are read per page against
a count of each job's, and CTRL bit 31 clears every job's.
"""

from __future__ import annotations

import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.handle import HierarchyObject
from cocotb.triggers import ClockCycles, FallingEdge, RisingEdge
from cocotbext.axi import AxiLiteBus, AxiLiteMaster

from hostdrv.switch.reference import SwitchModel
from hostdrv.wire import regmap

CLK_NS = 4
SEED = int(os.environ.get("REGS_SEED", "1"))
CONFIG = ("RPL_SEED", "RPL_MIN_SIZE", "RPL_SPI", "RPL_SPI_ERROR")
"""Registers every job keeps and drives out (seed, min_size, spi, spi_error)."""
PULSES = {"RPL_SEED": "seed_wr", "RPL_SPI": "spi_wr", "RPL_RESET": "rpl_reset"}
COUNTERS = ("CNT_RX_PUSH", "CNT_RX_SAMPLE", "CNT_RX_UPDATE", "CNT_TX_PUSH_ACK", "CNT_TX_SAMPLE_RESP",
            "CNT_DROP_BAD_LENGTH", "CNT_DROP_BAD_HEADER", "CNT_DROP_BAD_JOB", "CNT_DROP_DISABLED",
            "CNT_DROP_UNKNOWN_WORKER", "CNT_DROP_SPOOFED", "CNT_DROP_BAD_COUNT", "CNT_DROP_EMPTY",
            "CNT_DROP_BAD_INDEX", "CNT_TX_PUSH_NOT_YET", "CNT_TX_SAMPLE_NOT_YET")
"""The engine's counters in the order of ``cnt_inc`` (bit 0 first)."""
STATUS = {"RPL_SIZE": ("rpl_size", 32, 0), "RPL_WPTR": ("rpl_wptr", 32, 0),
          "RPL_TOTAL_LO": ("rpl_total", 64, 0), "RPL_TOTAL_HI": ("rpl_total", 64, 32),
          "RPL_RATE_DIFF_LO": ("rate_diff", 64, 0), "RPL_RATE_DIFF_HI": ("rate_diff", 64, 32)}
"""Status word: (input, its width per job, the word's bit offset in it)."""


class Bench:
    def __init__(self, dut: HierarchyObject) -> None:
        self.dut = dut
        self.jobs = int(dut.JOBS.value)
        self.jw = int(dut.JW.value)
        self.rng = random.Random(SEED)
        self.model = SwitchModel(jobs=self.jobs, capacity=int(dut.CAPACITY.value),
                                 record_bytes=int(dut.RECORD_BYTES.value))
        self.master = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
        self.pulses: list[tuple[str, int]] = []
        self.status: dict[str, int] = {}

    async def monitor(self) -> None:
        dut = self.dut
        while True:
            await RisingEdge(dut.clk)
            for sig in ("seed_wr", "spi_wr", "rpl_reset"):
                if int(getattr(dut, sig).value):
                    self.pulses.append((sig, int(dut.pulse_job.value)))

    def drive_status(self) -> None:
        """Random status inputs, every job's."""
        for sig, width in (("rpl_size", 32), ("rpl_wptr", 32), ("rpl_total", 64), ("rate_diff", 64)):
            v = self.rng.getrandbits(width * self.jobs)
            getattr(self.dut, sig).value = v
            self.status[sig] = v

    async def write(self, name: str, value: int, job: int, strb: int = 0xF) -> None:
        """One write at ``job``'s page; its response, pulse and effects against the model."""
        addr = regmap.job_address(name, job)
        data = value.to_bytes(4, "little")
        old = self.model.read(name, job=job)
        merged = int.from_bytes(bytes(data[k] if strb >> k & 1 else old.to_bytes(4, "little")[k]
                                      for k in range(4)), "little")
        try:
            self.model.write(name, merged, job=job)
            want_ok = True
        except ValueError:
            want_ok = False
        self.pulses.clear()
        # the strobed bytes only (cocotbext-axi writes the bytes given at their offsets)
        first = (strb & -strb).bit_length() - 1
        last = strb.bit_length()
        resp = await self.master.write(addr + first, data[first:last])
        await ClockCycles(self.dut.clk, 3)
        assert (int(resp.resp) == 0) == want_ok, \
            f"{name} of job {job} = {merged:#x} (strb {strb:#x}): resp {resp.resp}, model {want_ok}"
        want = [(PULSES[name], job)] if want_ok and name in PULSES and (name != "RPL_RESET"
                                                                       or merged & 1) else []
        assert self.pulses == want, f"{name} of job {job}: pulses {self.pulses}, want {want}"

    async def check(self) -> None:
        """Every job's configuration outputs and registers, and its status words."""
        dut = self.dut
        for j in range(self.jobs):
            for name, sig in zip(CONFIG, ("seed", "min_size", "spi", "spi_error"), strict=True):
                got = int(getattr(dut, sig).value) >> (32 * j) & 0xFFFFFFFF
                assert got == self.model.read(name, job=j), f"job {j} {sig}"
            for i in range(8):
                for field, sig, w in (("PORT", "member_port", 8), ("IP", "member_ip", 32),
                                      ("UDP", "member_udp", 16), ("ROLE", "member_role", 3)):
                    name = f"MEMBER_{field}_{i}"
                    got = int(getattr(dut, sig).value) >> (w * (8 * j + i)) & ((1 << w) - 1)
                    assert got == self.model.read(name, job=j), f"job {j} {name} output"
                    assert await self.read(name, j) == self.model.read(name, job=j), f"job {j} {name}"
            for name in CONFIG:
                assert await self.read(name, j) == self.model.read(name, job=j), f"job {j} {name}"
            for name, (sig, width, off) in STATUS.items():
                want = self.status[sig] >> (width * j + off) & 0xFFFFFFFF
                assert await self.read(name, j) == want, f"job {j} {name}"

    async def read(self, name: str, job: int) -> int:
        return int(await self.master.read_dword(regmap.job_address(name, job)))


async def setup(dut: HierarchyObject) -> Bench:
    cocotb.start_soon(Clock(dut.clk, CLK_NS, unit="ns").start())
    dut.cnt_inc.value = 0
    dut.cnt_inc_job.value = 0
    dut.rpl_axi_err.value = 0
    dut.rst.value = 1
    bench = Bench(dut)
    bench.drive_status()
    await ClockCycles(dut.clk, 4)
    dut.rst.value = 0
    cocotb.start_soon(bench.monitor())
    await ClockCycles(dut.clk, 2)
    return bench


def random_value(rng: random.Random, name: str) -> int:
    if name == "RPL_RESET":
        return rng.choice([0, 1, 1, 2, 0x80000000])
    if name.startswith("MEMBER_PORT"):
        return rng.choice([0, 1 << rng.randrange(8), 0x03, 0x100])
    if name.startswith("MEMBER_ROLE"):
        return rng.randrange(12)
    if name.startswith("MEMBER_UDP"):
        return rng.choice([rng.randrange(1 << 16), 1 << 16])
    return rng.getrandbits(32)


@cocotb.test()
async def test_pages(dut: HierarchyObject) -> None:
    """Every job's replay registers, pulses, outputs, status words and counters (docstring)."""
    bench = await setup(dut)
    rng = bench.rng
    assert bench.jobs > 1, "test_pages needs replay_regs built with JOBS > 1"
    names = list(CONFIG) + ["RPL_RESET"] + [f"MEMBER_{f}_{i}" for f in ("PORT", "IP", "UDP", "ROLE")
                                             for i in range(8)]
    await bench.check()
    counts = [[0] * len(COUNTERS) for _ in range(bench.jobs)]
    for rnd in range(6):
        for _ in range(40):
            name = rng.choice(names)
            strb = 0xF if rng.random() < 0.7 else rng.choice([1, 2, 3, 4, 8, 0xC, 0x6])
            await bench.write(name, random_value(rng, name), rng.randrange(bench.jobs), strb)
        bench.drive_status()
        await ClockCycles(dut.clk, 2)
        await bench.check()
        # counter events of random jobs (several counters a clock, each its own job)
        for _ in range(rng.randrange(50, 200)):
            await FallingEdge(dut.clk)
            v = rng.getrandbits(len(COUNTERS))
            jobs = [rng.randrange(bench.jobs) for _ in COUNTERS]
            dut.cnt_inc.value = v
            dut.cnt_inc_job.value = sum(j << (bench.jw * i) for i, j in enumerate(jobs))
            for i in range(len(COUNTERS)):
                counts[jobs[i]][i] += v >> i & 1
        await FallingEdge(dut.clk)
        dut.cnt_inc.value = 0
        await ClockCycles(dut.clk, 4)
        for j in range(bench.jobs):
            got = [await bench.read(n, j) for n in COUNTERS]
            assert got == counts[j], f"job {j} counters {got}, want {counts[j]}"
        if rnd % 2 == 1:  # CTRL bit 31 clears every job's counters
            await bench.master.write_dword(regmap.REGISTERS["CTRL"].addr, 0x80000003)
            await ClockCycles(dut.clk, 4)
            counts = [[0] * len(COUNTERS) for _ in range(bench.jobs)]
            for j in range(bench.jobs):
                assert [await bench.read(n, j) for n in COUNTERS] == counts[j]
        tb_log = dut._log
        tb_log.info("round %d: pages, pulses, outputs, status and counters as the model", rnd)
