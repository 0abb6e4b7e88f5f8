"""cocotb testbench for ``hw/rtl/nrl_axil_regif.v`` (through ``tb_nrl_axil_regif.v``).

A cocotbext-axi ``AxiLiteMaster`` issues random reads and writes (full words
and byte writes, back to back and with gaps, writes refused by the register
file among them) to the small register file of the testbench top. Two Python
models check them:

* :class:`RegFile`, the register file of ``tb_nrl_axil_regif.v``: what each
  write does (a refused one keeps the value and answers SLVERR) and what each
  word reads;
* :class:`Handshake`, the slave's handshake clock by clock: from the bus
  inputs it sees in a clock (valid, ready, address, data) it predicts every
  output of that clock (awready/wready/arready, bvalid/bresp, rvalid/rdata,
  the accepted write and the read stages presented to the register file),
  with the register file read in the clock rd_data is sampled and written at
  the end of a write's clock, so the order of a read and a write in flight
  together is checked too.

Every clock is compared with :class:`Handshake`, every answer the master gets
with the model's answer for that transaction, and the registers are read back
at the end. Idle insertion on AW/W/AR and backpressure on B/R are the two
stress axes.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from dataclasses import dataclass, field

import cocotb
from cocotb.handle import HierarchyObject
from cocotb.task import Task
from cocotb.triggers import ClockCycles, FallingEdge
from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiResp

from sim.common.tb import STRESS, ClockReset

CLK_NS = 4
SEED = int(os.environ.get("REGIF_SEED", "1"))
MASK = 0xFFFFFFFF
OPS = 300


def strb_mask(strb: int) -> int:
    """The 32-bit mask of the byte strobes ``strb``."""
    return sum(0xFF << 8 * k for k in range(4) if strb >> k & 1)


class RegFile:
    """The register file of ``tb_nrl_axil_regif.v``.

    Words ``0 .. nreg-1`` are registers (reset 0) written with the byte
    strobes; a write to an odd one whose value has bit 31 set is refused.
    Other words ignore writes and read ``0xA5A50000 | word``.
    """

    def __init__(self, nreg: int) -> None:
        self.regs = [0] * nreg

    def write(self, word: int, data: int, strb: int) -> bool:
        """Apply a write; True when it is refused (the register keeps its value)."""
        if word >= len(self.regs):
            return False
        mask = strb_mask(strb)
        value = (self.regs[word] & ~mask) | (data & mask)
        if word & 1 and value >> 31:
            return True
        self.regs[word] = value
        return False

    def read(self, word: int) -> int:
        return self.regs[word] if word < len(self.regs) else 0xA5A50000 | word


@dataclass
class Handshake:
    """The slave's handshake, one clock per :meth:`step`, around a :class:`RegFile`.

    A write is taken in a clock where AW and W are valid and no B response is
    pending; a read in a clock where AR is valid and no read is in flight
    (stages or R pending). ``ready_reg`` moves awready/wready/arready to the
    clock after the take. ``write_reg`` presents the write taken to the
    register file (and lands it) that many clocks later; none is taken
    meanwhile, and with two the write is already on wr_addr/wr_data/wr_strb
    in the clock before it lands (the clock a register file judges it in). A
    read's word is sampled ``stages`` clocks after its take and answered in
    the next clock.
    """

    ready_reg: int
    stages: int
    regfile: RegFile
    write_reg: int = 0
    wpend: list[tuple[int, int, int] | None] = field(default_factory=list)
    bvalid: int = 0
    bresp: int = 0
    awready_r: int = 0
    arready_r: int = 0
    stage: list[int] = field(default_factory=list)
    rvalid: int = 0
    rdata: int = 0
    rd_word: int = 0
    writes: list[tuple[int, int, int, bool]] = field(default_factory=list)
    reads: list[tuple[int, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.stage = [0] * self.stages
        self.wpend = [None] * self.write_reg

    def step(self, i: dict[str, int]) -> dict[str, int]:
        """The outputs of a clock with bus inputs ``i``; then advance to the next clock.

        Outputs that are don't-care in this clock (data without its valid) are absent.
        """
        wr_take = int(i["awvalid"] and i["wvalid"] and not self.bvalid
                      and all(w is None for w in self.wpend))
        taken = (i["awaddr"] >> 2, i["wdata"], i["wstrb"]) if wr_take else None
        land = self.wpend[-1] if self.write_reg else taken  # the write of this clock
        rd_take = int(i["arvalid"] and not any(self.stage) and not self.rvalid)
        out = {
            "awready": self.awready_r if self.ready_reg else wr_take,
            "wready": self.awready_r if self.ready_reg else wr_take,
            "arready": self.arready_r if self.ready_reg else rd_take,
            "bvalid": self.bvalid,
            "rvalid": self.rvalid,
            "mon_wr_en": int(land is not None),
            "mon_rd_stage": sum(b << k for k, b in enumerate(self.stage)),
        }
        if self.bvalid:
            out["bresp"] = self.bresp
        if self.rvalid:
            out["rdata"] = self.rdata
            out["rresp"] = 0
        if any(self.stage) or self.rvalid:
            out["mon_rd_addr"] = self.rd_word
        if self.write_reg == 2 and self.wpend[0] is not None:
            # the judging clock: the write is held on the register file's inputs
            out["mon_wr_addr"], out["mon_wr_data"], out["mon_wr_strb"] = self.wpend[0]

        # the read word is sampled before this clock's write lands
        rdata = self.rdata
        if self.stage[-1]:
            rdata = self.regfile.read(self.rd_word)
            self.reads.append((self.rd_word, rdata))
        bresp = self.bresp
        if land is not None:
            word, data, strb = land
            refused = self.regfile.write(word, data, strb)
            self.writes.append((word, data & strb_mask(strb), strb, refused))
            out["mon_wr_addr"] = word
            out["mon_wr_data"] = data
            out["mon_wr_strb"] = strb
            out["mon_wr_refuse"] = int(refused)
            bresp = int(AxiResp.SLVERR) if refused else int(AxiResp.OKAY)
        if rd_take:
            self.rd_word = i["araddr"] >> 2

        self.bvalid = int(bool(self.bvalid and not i["bready"]) or land is not None)
        self.wpend = [taken, *self.wpend[:-1]] if self.write_reg else []
        self.bresp = bresp
        self.awready_r = wr_take
        self.arready_r = rd_take
        self.rvalid = int(bool(self.rvalid and not i["rready"]) or self.stage[-1])
        self.rdata = rdata
        self.stage = [rd_take, *self.stage[:-1]]
        return out


INPUTS = ("awvalid", "wvalid", "bready", "arvalid", "rready", "awaddr", "wdata", "wstrb", "araddr")


def pause(rng: random.Random, p: float) -> Iterator[int]:
    while True:
        yield int(rng.random() < p)


class Bench(ClockReset):
    def __init__(self, dut: HierarchyObject) -> None:
        super().__init__(dut, CLK_NS, idle_inputs=("s_axil_awvalid", "s_axil_wvalid", "s_axil_bready",
                                                   "s_axil_arvalid", "s_axil_rready"))
        self.addr_width = int(dut.ADDR_WIDTH.value)
        self.nreg = int(dut.NREG.value)
        self.model = Handshake(int(dut.READY_REG.value), int(dut.READ_STAGES.value), RegFile(self.nreg),
                               int(dut.WRITE_REG.value))
        self.master = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
        self.errors: list[str] = []
        self.clocks = 0

    def set_stress(self, rng: random.Random, idle: bool, backpressure: bool) -> None:
        for ch in (self.master.write_if.aw_channel, self.master.write_if.w_channel,
                   self.master.read_if.ar_channel):
            ch.set_pause_generator(pause(rng, 0.3) if idle else None)
            ch.pause = False  # a removed generator leaves its last value
        for ch in (self.master.write_if.b_channel, self.master.read_if.r_channel):
            ch.set_pause_generator(pause(rng, 0.4) if backpressure else None)
            ch.pause = False

    async def check_clocks(self) -> None:
        """Compare every clock's outputs with :class:`Handshake` (sampled mid-clock)."""
        dut = self.dut
        while True:
            await FallingEdge(dut.clk)
            # data and address inputs are X until the master first drives them (-1: never used)
            vals = {n: getattr(dut, f"s_axil_{n}").value for n in INPUTS}
            ins = {n: int(v) if v.is_resolvable else -1 for n, v in vals.items()}
            for n, want in self.model.step(ins).items():
                sig = getattr(dut, n if n.startswith("mon_") else f"s_axil_{n}")
                got = sig.value
                if not got.is_resolvable or int(got) != want:
                    self.errors.append(f"clock {self.clocks}: {n} = {got}, model {want:#x}")
            self.clocks += 1

    def word(self, rng: random.Random) -> int:
        """A register word most of the time, else any word of the address space."""
        if rng.random() < 0.75:
            return rng.randrange(self.nreg)
        return rng.randrange(1 << (self.addr_width - 2))


async def setup(dut: HierarchyObject) -> Bench:
    bench = Bench(dut)
    await bench.reset()
    cocotb.start_soon(bench.check_clocks())
    return bench


def issue_write(bench: Bench, rng: random.Random, word: int | None = None) -> tuple[tuple[int, int, int], Task]:
    """Queue a random write (to ``word`` or a random word): a full word, or 1..3 bytes at a
    random offset, bit 31 often set. The master takes its commands in the order they are queued.
    """
    if word is None:
        word = bench.word(rng)
    if rng.random() < 0.6:
        off, length = 0, 4
    else:
        off = rng.randrange(4)
        length = rng.randint(1, 4 - off)
    data = rng.getrandbits(32) | (rng.random() < 0.5) << 31
    strb = ((1 << length) - 1) << off
    lanes = data & strb_mask(strb)
    task = cocotb.start_soon(bench.master.write(4 * word + off, (lanes >> 8 * off).to_bytes(length, "little")))
    return (word, lanes, strb), task


def issue_read(bench: Bench, word: int) -> tuple[int, Task]:
    """Queue a read of ``word``."""
    return word, cocotb.start_soon(bench.master.read(4 * word, 4))


async def answers(bench: Bench, writes: list[tuple[tuple[int, int, int], Task]],
                  reads: list[tuple[int, Task]], n_wr0: int, n_rd0: int) -> None:
    """Wait for every queued transaction; each answer equals the model's for it (from write n_wr0, read n_rd0)."""
    for _, task in writes + reads:
        await task
    taken = bench.model.writes[n_wr0:]
    assert len(taken) == len(writes), f"{len(taken)} writes taken, {len(writes)} issued"
    for k, ((issued, task), (word, lanes, strb, refused)) in enumerate(zip(writes, taken, strict=True)):
        assert (word, lanes, strb) == issued, f"write {k}: taken {(word, lanes, strb)}, issued {issued}"
        want = AxiResp.SLVERR if refused else AxiResp.OKAY
        assert task.result().resp == want, f"write {k} to word {word}: {task.result().resp}, model {want}"
    answered = bench.model.reads[n_rd0:]
    assert len(answered) == len(reads), f"{len(answered)} reads answered, {len(reads)} issued"
    for k, ((word, task), (mword, value)) in enumerate(zip(reads, answered, strict=True)):
        assert mword == word, f"read {k}: word {mword} sampled, {word} issued"
        resp = task.result()
        got = int.from_bytes(resp.data, "little")
        assert resp.resp == AxiResp.OKAY, f"read {k} of word {word}: {resp.resp}"
        assert got == value, f"read {k} of word {word}: {got:#010x}, model {value:#010x}"


async def traffic(bench: Bench, rng: random.Random, ops: int) -> None:
    """Random reads and writes, queued back to back or with gaps; every answer from the model."""
    writes: list[tuple[tuple[int, int, int], Task]] = []
    reads: list[tuple[int, Task]] = []
    n_wr0, n_rd0 = len(bench.model.writes), len(bench.model.reads)
    for _ in range(ops):
        if rng.random() < 0.5:
            writes.append(issue_write(bench, rng))
        else:
            reads.append(issue_read(bench, bench.word(rng)))
        r = rng.random()
        if r < 0.15:
            await ClockCycles(bench.clk, rng.randint(1, 6))
        elif r < 0.2:
            # drain: the next transaction starts from an idle slave
            await answers(bench, writes, reads, n_wr0, n_rd0)
            writes, reads = [], []
            n_wr0, n_rd0 = len(bench.model.writes), len(bench.model.reads)
    await answers(bench, writes, reads, n_wr0, n_rd0)


async def check_registers(bench: Bench) -> None:
    """Every register and a few other words read what the model holds, one read at a time."""
    rng = random.Random(SEED + 99)
    words = list(range(bench.nreg)) + [bench.word(rng) | bench.nreg for _ in range(4)]
    for word in words:
        got = await bench.master.read_dword(4 * word)
        want = bench.model.regfile.read(word)
        assert got == want, f"word {word}: {got:#010x}, model {want:#010x}"


def finish(bench: Bench) -> None:
    assert not bench.errors, f"{len(bench.errors)} clock mismatches, first: " + "; ".join(bench.errors[:5])
    refused = sum(w[3] for w in bench.model.writes)
    assert refused > 0 and refused < len(bench.model.writes), f"{refused} of {len(bench.model.writes)} refused"
    bench.log.info("%d clocks, %d writes (%d refused), %d reads checked", bench.clocks,
                   len(bench.model.writes), refused, len(bench.model.reads))


@cocotb.test(timeout_time=200, timeout_unit="us")
@cocotb.parametrize(idle=STRESS, backpressure=STRESS)
async def test_random_access(dut: HierarchyObject, idle: bool, backpressure: bool) -> None:
    """Random reads and writes with refusals, under idle insertion and backpressure."""
    bench = await setup(dut)
    rng = random.Random(SEED * 4 + 2 * idle + backpressure)
    bench.set_stress(rng, idle, backpressure)
    await traffic(bench, rng, OPS)
    bench.set_stress(rng, False, False)
    await check_registers(bench)
    await ClockCycles(dut.clk, 4)
    finish(bench)


@cocotb.test(timeout_time=200, timeout_unit="us")
async def test_read_write_same_word(dut: HierarchyObject) -> None:
    """Reads and writes of one register queued together: each read sees exactly the writes before its sample."""
    bench = await setup(dut)
    rng = random.Random(SEED + 7)
    writes: list[tuple[tuple[int, int, int], Task]] = []
    reads: list[tuple[int, Task]] = []
    for _ in range(40):
        word = rng.randrange(bench.nreg)
        writes += [issue_write(bench, rng, word) for _ in range(rng.randint(1, 3))]
        reads += [issue_read(bench, word) for _ in range(rng.randint(1, 3))]
        writes += [issue_write(bench, rng, word) for _ in range(rng.randint(0, 2))]
        await ClockCycles(dut.clk, rng.randint(0, 3))
    await answers(bench, writes, reads, 0, 0)
    await check_registers(bench)
    await ClockCycles(dut.clk, 4)
    finish(bench)
