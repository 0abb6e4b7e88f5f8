"""cocotb testbench for ``hw/rtl/nrl_counter_bank.v`` (through ``tb_nrl_counter_bank.v``).

A Python reference counts the same random increment pulses (several counters
in one clock, bursts on one counter across the 16-bit carry); every counter is
read through AXI4-Lite (cocotbext-axi ``AxiLiteMaster``) while the pulses keep
coming and once they stop, and must equal the reference. Counters preloaded
near 2^32 wrap to 0. A CTRL write with bit 31 clears them all; words where no
counter is read 0. With JOBS > 1 every event carries a random job (each
counter's its own) and every job's bank is read (its page, address bits 15:12)
against the reference's count of that job's events; the clear zeroes them all.
"""

from __future__ import annotations

import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.handle import HierarchyObject
from cocotb.triggers import ClockCycles, FallingEdge
from cocotbext.axi import AxiLiteBus, AxiLiteMaster

from hostdrv.wire import regmap

CLK_NS = 4
SEED = int(os.environ.get("BANK_SEED", "1"))
WINDOW = 0x200
MASK = 0xFFFFFFFF


class Bench:
    def __init__(self, dut: HierarchyObject) -> None:
        self.dut = dut
        self.count = int(dut.COUNT.value)
        words = int(dut.WORDS.value)
        self.words = [(words >> (5 * i)) & 31 for i in range(self.count)]
        self.delay = int(dut.REGISTER_INC.value)
        self.mod = (1 << (2 * int(dut.HALF_WIDTH.value))) - 1
        self.jobs = int(dut.JOBS.value)
        self.jw = int(dut.JW.value)
        self.rng = random.Random(SEED + 99)
        self.refs = [[0] * self.count for _ in range(self.jobs)]
        self.ref = self.refs[0]
        self.master = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)

    async def pulse(self, vectors: list[int], job0: bool = False) -> None:
        """Drive one inc vector per clock, each event of a random job (of job 0 with
        ``job0``), and count it in the reference."""
        for v in vectors:
            await FallingEdge(self.dut.clk)
            jobs = [0 if job0 else self.rng.randrange(self.jobs) for _ in range(self.count)]
            self.dut.inc.value = v
            self.dut.inc_job.value = sum(j << (self.jw * i) for i, j in enumerate(jobs))
            for i in range(self.count):
                if v >> i & 1:
                    ref = self.refs[jobs[i]]
                    ref[i] = (ref[i] + 1) & self.mod
        await FallingEdge(self.dut.clk)
        self.dut.inc.value = 0

    def clear(self) -> None:
        for ref in self.refs:
            ref[:] = [0] * self.count

    async def settle(self) -> None:
        await ClockCycles(self.dut.clk, 3 + self.delay)

    async def check_all(self) -> None:
        for job, ref in enumerate(self.refs):
            page = job * regmap.JOB_PAGE
            for i, w in enumerate(self.words):
                got = await self.master.read_dword(page + WINDOW + 4 * w)
                assert got == ref[i], f"job {job} counter {i} (word {w}): {got:#x}, reference {ref[i]:#x}"
            for w in sorted(set(range(32)) - set(self.words))[:4]:
                assert await self.master.read_dword(page + WINDOW + 4 * w) == 0, f"word {w} without counter"


async def setup(dut: HierarchyObject) -> Bench:
    cocotb.start_soon(Clock(dut.clk, CLK_NS, unit="ns").start())
    dut.inc.value = 0
    dut.inc_job.value = 0
    dut.rst.value = 1
    bench = Bench(dut)
    await ClockCycles(dut.clk, 3)
    dut.rst.value = 0
    await ClockCycles(dut.clk, 2)
    return bench


@cocotb.test()
async def test_random_increments(dut: HierarchyObject) -> None:
    """Random pulse vectors; reads during and after the traffic equal the reference."""
    bench = await setup(dut)
    rng = random.Random(SEED)
    n = bench.count
    # a read while pulses arrive: the value is between the counts before and after
    before = list(bench.ref)
    traffic = cocotb.start_soon(bench.pulse([rng.getrandbits(n) for _ in range(200)]))
    w = bench.words[0]
    got = await bench.master.read_dword(WINDOW + 4 * w)
    await traffic
    await bench.settle()
    assert before[0] <= got <= bench.ref[0], f"counter 0 read {got} outside {before[0]}..{bench.ref[0]}"
    await bench.check_all()
    # dense: every counter every clock, sparse: one at a time
    await bench.pulse([(1 << n) - 1] * 50 + [1 << rng.randrange(n) for _ in range(100)])
    await bench.settle()
    await bench.check_all()


@cocotb.test()
async def test_carry_and_wrap(dut: HierarchyObject) -> None:
    """Across the carry between the halves (reads racing it) and the wrap to 0.

    With narrow halves (HALF_WIDTH <= 6) every counter wraps; with 16-bit halves
    (the engines') the carry into the high half is crossed when BANK_CARRY16 is
    set (65536 clocks: the runner sets it for one Verilator build).
    """
    bench = await setup(dut)
    n = bench.count
    half = int(dut.HALF_WIDTH.value)
    if half > 6 and not os.environ.get("BANK_CARRY16"):
        return
    clocks = (1 << (2 * half)) + 40 if half <= 6 else (1 << 16) + 40
    # counter 0 every clock, the last one every other clock, the rest at random
    rng = random.Random(SEED + 2)
    vectors = [1 | (k % 2) << (n - 1) | (rng.getrandbits(n) & ~1) for k in range(clocks)]
    mod = (1 << (2 * half)) - 1
    task = cocotb.start_soon(bench.pulse(vectors, job0=True))
    last = 0
    while not task.done():
        before = bench.ref[0]
        got = await bench.master.read_dword(WINDOW + 4 * bench.words[0])
        after = bench.ref[0]
        # every read is an exact count between the counts before and after it
        assert (got - before) & mod <= (after - before) & mod, f"read {got:#x} outside {before:#x}..{after:#x}"
        assert (got - last) & mod <= clocks, "counter went backwards"
        last = got
    for ref in bench.refs:
        for i in range(n):
            ref[i] &= mod
    await bench.settle()
    await bench.check_all()


@cocotb.test()
async def test_clear(dut: HierarchyObject) -> None:
    """CTRL bit 31 clears every counter; CTRL without bit 31 does not."""
    bench = await setup(dut)
    rng = random.Random(SEED + 1)
    await bench.pulse([rng.getrandbits(bench.count) for _ in range(64)])
    await bench.settle()
    await bench.master.write_dword(regmap.CTRL, 0x3)
    await bench.settle()
    await bench.check_all()
    await bench.master.write_dword(regmap.CTRL, 0x80000003)
    bench.clear()
    await bench.settle()
    await bench.check_all()
    await bench.pulse([rng.getrandbits(bench.count) for _ in range(16)])
    await bench.settle()
    await bench.check_all()
