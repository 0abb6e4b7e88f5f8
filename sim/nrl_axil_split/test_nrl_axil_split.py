"""cocotb testbench for ``hw/rtl/nrl_axil_split.v`` (the switch's AXI4-Lite splitter).

Two Python AXI4-Lite slaves stand in for the engines' register files, with
random ready and response delays. The expected routing comes from
``hw/regs.yaml``: the owner (``engine:``) of each counter for reads, the
address blocks for writes (identity, control and members to both engines,
``RPL_*`` to the replay engine, the rest to the aggregation engine). Each engine
answers a read with a value derived from its name and the address, so a read
shows who answered and a ``both`` counter reads the 32-bit sum. An engine
answers SLVERR for one chosen address; the split must pass it on. CNT_PASS
counts ``pass_inc`` pulses and CTRL bit 31 clears it; UDP_PORT is shadowed.
L2_AGE_FRAMES is the split's own register: its writes reach no engine, read
back, drive ``l2_age_frames`` and pulse ``l2_age_load`` once. So is the job
table of a one-job switch (JOBS, JOB_ENABLE and group ``job``,
docs/protocol.md section 11): it reads the model's reset values, refuses the
writes the model refuses (SLVERR, nothing changed), keeps JOB_LEASE, and no
engine sees it. An address outside page 0 (bits above 11 of the address) is no
register: SLVERR on reads (0) and writes, and no engine sees it.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import cocotb
from cocotb.clock import Clock
from cocotb.handle import HierarchyObject
from cocotb.triggers import ClockCycles, FallingEdge, ReadOnly, RisingEdge
from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiResp

from hostdrv.switch.reference import SwitchModel
from hostdrv.wire import regmap

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import gen_regs  # noqa: E402

CLK_NS = 4
SEED = int(os.environ.get("SPLIT_SEED", "1"))
MASK = 0xFFFFFFFF
OKAY, SLVERR = 0, 2
ENGINES = ("agg", "rpl")


def engine_value(engine: str, addr: int) -> int:
    """What engine ``engine`` answers for a read of ``addr``."""
    if engine == "agg":
        return (addr * 0x9E3779B1 + 0x0000FFF0) & MASK
    return (addr * 0x85EBCA6B + 0x1234FFFF) & MASK


def split_regs() -> set[int]:
    """The job table the split answers itself: JOBS, JOB_ENABLE (and its set / clear pair)
    and the ``job`` group."""
    spec = gen_regs.load()
    return {r["addr"] for r in spec["flat"] if r["block"] == "job" or r["name"] in (
        "JOBS", "JOB_ENABLE", "JOB_ENABLE_SET", "JOB_ENABLE_CLR")}


SPLIT_REGS = split_regs()


def write_targets(addr: int) -> set[str]:
    if addr in SPLIT_REGS:
        return set()
    if addr < 0x040 or 0x100 <= addr < 0x200:
        return {"agg", "rpl"}
    if 0x080 <= addr < 0x100:
        return {"rpl"}
    return {"agg"}


def read_owner(addr: int, owners: dict[int, str]) -> str:
    """agg, rpl, both or switch: from the counter's ``engine:``, else by address block."""
    if addr in owners:
        return owners[addr]
    if 0x080 <= addr < 0x100:
        return "rpl"
    return "agg"


class EngineSlave:
    """An engine's register file: random handshakes, records the writes, answers reads."""

    def __init__(self, dut: HierarchyObject, name: str, rng: random.Random) -> None:
        self.dut = dut
        self.name = name
        self.rng = rng
        self.sig = {s: getattr(dut, f"m_axil_{name}_{s}") for s in (
            "awaddr", "awvalid", "awready", "wdata", "wstrb", "wvalid", "wready", "bresp", "bvalid",
            "bready", "araddr", "arvalid", "arready", "rdata", "rresp", "rvalid", "rready")}
        self.writes: list[tuple[int, int, int]] = []
        self.reads: list[int] = []
        self.error_addr = -1
        for s in ("awready", "wready", "bvalid", "arready", "rvalid"):
            self.sig[s].value = 0
        self.sig["bresp"].value = 0
        self.sig["rresp"].value = 0
        self.sig["rdata"].value = 0

    async def run(self) -> None:
        aw = w = b = ar = r = None
        s = self.sig
        while True:
            await FallingEdge(self.dut.clk)
            awready = int(aw is None and self.rng.random() < 0.6)
            wready = int(w is None and self.rng.random() < 0.6)
            arready = int(ar is None and r is None and self.rng.random() < 0.6)
            s["awready"].value = awready
            s["wready"].value = wready
            s["arready"].value = arready
            s["bvalid"].value = int(b is not None)
            s["bresp"].value = b if b is not None else 0
            s["rvalid"].value = int(r is not None)
            s["rdata"].value = r[0] if r is not None else 0
            s["rresp"].value = r[1] if r is not None else 0
            await ReadOnly()
            aw_fire = awready and int(s["awvalid"].value)
            w_fire = wready and int(s["wvalid"].value)
            ar_fire = arready and int(s["arvalid"].value)
            b_fire = b is not None and int(s["bready"].value)
            r_fire = r is not None and int(s["rready"].value)
            awaddr = int(s["awaddr"].value) if aw_fire else None
            wbeat = (int(s["wdata"].value), int(s["wstrb"].value)) if w_fire else None
            araddr = int(s["araddr"].value) if ar_fire else None
            await RisingEdge(self.dut.clk)
            if b_fire:
                b = None
            if r_fire:
                r = None
            if awaddr is not None:
                aw = awaddr
            if wbeat is not None:
                w = wbeat
            if aw is not None and w is not None and b is None and self.rng.random() < 0.7:
                self.writes.append((aw, *w))
                b = SLVERR if aw == self.error_addr else OKAY
                aw = w = None
            if araddr is not None:
                ar = araddr
            if ar is not None and r is None and self.rng.random() < 0.7:
                self.reads.append(ar)
                r = (engine_value(self.name, ar), SLVERR if ar == self.error_addr else OKAY)
                ar = None


async def setup(dut: HierarchyObject) -> tuple[AxiLiteMaster, dict[str, EngineSlave]]:
    cocotb.start_soon(Clock(dut.clk, CLK_NS, unit="ns").start())
    rng = random.Random(SEED)
    slaves = {e: EngineSlave(dut, e, rng) for e in ENGINES}
    dut.pass_inc.value = 0
    dut.rst.value = 1
    master = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
    await ClockCycles(dut.clk, 3)
    dut.rst.value = 0
    for sl in slaves.values():
        cocotb.start_soon(sl.run())
    await ClockCycles(dut.clk, 2)
    return master, slaves


def addresses() -> list[int]:
    """Every RTL register, every word of the counter window, and some unused words."""
    spec = gen_regs.load()
    regs = {r["addr"] for r in spec["flat"] if not r["server"]}
    window = spec["counter_window"]
    regs |= {window + 4 * i for i in range(gen_regs.COUNTER_WINDOW_WORDS)}
    regs |= {0x030, 0x07C, 0x0A0, 0x0FC, 0x1FC, 0x280, 0x3F0, 0x800, 0xFFC}
    return sorted(regs)


def counter_owners() -> dict[int, str]:
    return {r["addr"]: r["engine"] for r in gen_regs.load()["flat"] if "engine" in r}


@cocotb.test()
async def test_reads_reach_the_owner(dut: HierarchyObject) -> None:
    """A read reaches the engine(s) that own the address; `both` counters read the sum."""
    master, slaves = await setup(dut)
    owners = counter_owners()
    for addr in addresses():
        if addr in (regmap.CNT_PASS, regmap.L2_AGE_FRAMES) or addr in SPLIT_REGS:
            continue
        for sl in slaves.values():
            sl.reads.clear()
        owner = read_owner(addr, owners)
        resp = await master.read_dword(addr)
        want = {"agg": engine_value("agg", addr), "rpl": engine_value("rpl", addr),
                "both": (engine_value("agg", addr) + engine_value("rpl", addr)) & MASK}[owner]
        assert resp == want, f"read {addr:#05x} ({owner}): {resp:#010x}, want {want:#010x}"
        asked = {e for e, sl in slaves.items() if sl.reads}
        expect = {"agg", "rpl"} if owner == "both" else {owner}
        assert asked == expect, f"read {addr:#05x} went to {asked}, owner {owner}"
        assert all(sl.reads in ([], [addr]) for sl in slaves.values())


@cocotb.test()
async def test_writes_reach_their_block(dut: HierarchyObject) -> None:
    """A write reaches the engines of its address block with data and strobes intact."""
    master, slaves = await setup(dut)
    rng = random.Random(SEED + 7)
    for addr in addresses():
        if addr == regmap.L2_AGE_FRAMES or addr in SPLIT_REGS:
            continue
        for sl in slaves.values():
            sl.writes.clear()
        # a whole word or a part of it (byte strobes)
        offset, length = rng.choice([(0, 4), (0, 4), (0, 1), (1, 1), (2, 2), (1, 3), (3, 1)])
        data = bytes(rng.getrandbits(8) for _ in range(length))
        strb = ((1 << length) - 1) << offset
        await master.write(addr + offset, data)
        got = {e for e, sl in slaves.items() if sl.writes}
        assert got == write_targets(addr), f"write {addr:#05x} went to {got}"
        for e in got:
            [(waddr, wdata, wstrb)] = slaves[e].writes
            assert (waddr & ~3, wstrb) == (addr, strb), f"{e}: {slaves[e].writes}"
            assert wdata.to_bytes(4, "little")[offset:offset + length] == data, f"{e}: {wdata:#010x}"


@cocotb.test()
async def test_error_responses(dut: HierarchyObject) -> None:
    """SLVERR from either engine reaches the host, on writes and reads, alone or with OKAY."""
    master, slaves = await setup(dut)
    cases = [(regmap.REGISTERS["MEMBER_PORT_0"].addr, "agg"), (regmap.REGISTERS["MEMBER_PORT_0"].addr, "rpl"),
             (regmap.AGG_UPLINK_PORT, "agg"), (regmap.RPL_SEED, "rpl"),
             (regmap.CNT_DROP_BAD_JOB, "rpl"), (regmap.CNT_DROP_BAD_JOB, "agg")]
    for addr, bad in cases:
        slaves[bad].error_addr = addr
        if bad in write_targets(addr):
            w = await master.write(addr, bytes(4))
            assert w.resp == AxiResp.SLVERR, f"write {addr:#05x}, {bad} SLVERR: {w.resp}"
        r = await master.read(addr, 4)
        owner = read_owner(addr, counter_owners())
        if owner in (bad, "both"):
            assert r.resp == AxiResp.SLVERR, f"read {addr:#05x}, {bad} SLVERR: {r.resp}"
        else:
            assert r.resp == AxiResp.OKAY, f"read {addr:#05x} (not {bad}'s): {r.resp}"
        slaves[bad].error_addr = -1
        w = await master.write(addr, bytes(4))
        assert w.resp == AxiResp.OKAY
        r = await master.read(addr, 4)
        assert r.resp == AxiResp.OKAY


@cocotb.test()
async def test_cnt_pass_and_udp_port(dut: HierarchyObject) -> None:
    """CNT_PASS counts pass_inc pulses, a CTRL bit 31 write clears it; UDP_PORT is shadowed;
    a refused value (wider than the register) changes neither."""
    master, slaves = await setup(dut)
    assert int(dut.udp_port.value) == regmap.REGISTERS["UDP_PORT"].reset
    rng = random.Random(SEED + 3)
    pulses = 0
    for _ in range(300):
        await FallingEdge(dut.clk)
        bit = rng.random() < 0.7
        dut.pass_inc.value = int(bit)
        pulses += bit
    await FallingEdge(dut.clk)
    dut.pass_inc.value = 0
    assert await master.read_dword(regmap.CNT_PASS) == pulses
    assert not any(sl.reads for sl in slaves.values()), "CNT_PASS read reached an engine"
    await master.write_dword(regmap.CTRL, 0x80000003)
    assert await master.read_dword(regmap.CNT_PASS) == 0
    await master.write(regmap.UDP_PORT, bytes([0x34]))
    assert int(dut.udp_port.value) == (regmap.REGISTERS["UDP_PORT"].reset & 0xFF00) | 0x34
    await master.write_dword(regmap.UDP_PORT, 0x5678)
    assert int(dut.udp_port.value) == 0x5678
    # values the engines refuse (SLVERR: wider than the register, CTRL bits 30:2) move
    # neither the shadow nor CNT_PASS
    await FallingEdge(dut.clk)
    dut.pass_inc.value = 1
    await FallingEdge(dut.clk)
    dut.pass_inc.value = 0
    assert await master.read_dword(regmap.CNT_PASS) == 1
    await master.write(regmap.UDP_PORT, (0x00011234).to_bytes(4, "little"))
    await master.write(regmap.UDP_PORT + 2, bytes([0x01]))
    assert int(dut.udp_port.value) == 0x5678
    await master.write(regmap.CTRL, (0x80000007).to_bytes(4, "little"))
    assert await master.read_dword(regmap.CNT_PASS) == 1


@cocotb.test()
async def test_l2_age_frames(dut: HierarchyObject) -> None:
    """L2_AGE_FRAMES: reset value, whole and partial writes kept here (no engine sees them),
    read back, on l2_age_frames, one l2_age_load pulse per write."""
    master, slaves = await setup(dut)
    addr = regmap.L2_AGE_FRAMES
    reset = regmap.REGISTERS["L2_AGE_FRAMES"].reset
    assert int(dut.l2_age_frames.value) == reset
    assert await master.read_dword(addr) == reset
    loads = 0

    async def count_loads() -> None:
        nonlocal loads
        while True:
            await RisingEdge(dut.clk)
            await ReadOnly()
            loads += int(dut.l2_age_load.value)

    watcher = cocotb.start_soon(count_loads())
    value = reset
    rng = random.Random(SEED + 11)
    for k in range(12):
        offset, length = rng.choice([(0, 4), (0, 1), (1, 1), (2, 2), (3, 1)])
        data = bytes(rng.getrandbits(8) for _ in range(length))
        w = await master.write(addr + offset, data)
        assert w.resp == AxiResp.OKAY
        word = bytearray(value.to_bytes(4, "little"))
        word[offset:offset + length] = data
        value = int.from_bytes(word, "little")
        assert await master.read_dword(addr) == value
        assert int(dut.l2_age_frames.value) == value
        assert loads == k + 1, f"{loads} l2_age_load pulses after {k + 1} writes"
    watcher.cancel()
    assert not any(sl.reads or sl.writes for sl in slaves.values()), "L2_AGE_FRAMES reached an engine"


@cocotb.test()
async def test_job_table(dut: HierarchyObject) -> None:
    """The job table of a one-job switch: the model's reset values (a model with the split's
    parameters), writes taken or refused (SLVERR) as the model takes them, JOB_LEASE
    kept with its strobes; no engine sees any of it."""
    master, slaves = await setup(dut)
    model = SwitchModel(capacity=int(dut.RPL_CAPACITY.value), record_bytes=int(dut.RPL_RECORD_BYTES.value),
                        max_slots=int(dut.AGG_MAX_SLOTS.value))
    names = [r.name for r in regmap.REGISTERS.values() if r.addr in SPLIT_REGS]
    assert names and "JOB_LEASE" in names
    for name in names:
        assert await master.read_dword(regmap.REGISTERS[name].addr) == model.read(name), name
    rng = random.Random(SEED + 5)
    for name in names:
        r = regmap.REGISTERS[name]
        if r.access != "rw":  # read-only (JOBS): the host refuses its writes before the bus
            continue
        for value in (model.read(name), rng.getrandbits(r.width), 0):
            try:
                model.write(name, value)
                want = AxiResp.OKAY
            except ValueError:
                want = AxiResp.SLVERR
            w = await master.write(r.addr, value.to_bytes(4, "little"))
            assert w.resp == want, f"write {name} = {value:#x}: {w.resp}, the model {want}"
            assert await master.read_dword(r.addr) == model.read(name), name
    lease = regmap.JOB_LEASE
    model.write("JOB_LEASE", (model.read("JOB_LEASE") & ~0xFF0000) | 0xA50000)
    assert (await master.write(lease + 2, bytes([0xA5]))).resp == AxiResp.OKAY
    assert await master.read_dword(lease) == model.read("JOB_LEASE")
    assert not any(sl.reads or sl.writes for sl in slaves.values()), "the job table reached an engine"


@cocotb.test()
async def test_pages(dut: HierarchyObject) -> None:
    """An address outside page 0 is no register (one job): SLVERR, reads 0, reaches no engine,
    changes neither the split's registers nor the UDP_PORT shadow."""
    master, slaves = await setup(dut)
    width = len(dut.s_axil_araddr)
    pages = [p for p in (1, 2, (1 << (width - 12)) - 1) if 0 < p < 1 << (width - 12)]
    udp = int(dut.udp_port.value)
    l2_age = await master.read_dword(regmap.L2_AGE_FRAMES)
    for page in pages:
        for r in regmap.REGISTERS.values():
            if r.server:
                continue
            addr = page * regmap.JOB_PAGE + r.addr
            rd = await master.read(addr, 4)
            assert (rd.resp, int.from_bytes(rd.data, "little")) == (AxiResp.SLVERR, 0), f"read {addr:#06x}"
            w = await master.write(addr, (r.reset ^ 0x80000005).to_bytes(4, "little"))
            assert w.resp == AxiResp.SLVERR, f"write {addr:#06x}: {w.resp}"
    assert not any(sl.reads or sl.writes for sl in slaves.values()), "a page address reached an engine"
    assert int(dut.udp_port.value) == udp
    assert await master.read_dword(regmap.L2_AGE_FRAMES) == l2_age
    assert await master.read_dword(regmap.CNT_PASS) == 0
    assert await master.read_dword(regmap.JOB_LEASE) == regmap.REGISTERS["JOB_LEASE"].reset
    assert await master.read_dword(regmap.JOB_SLOT_COUNT) == int(dut.AGG_MAX_SLOTS.value)
