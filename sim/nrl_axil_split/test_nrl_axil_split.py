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
table (JOBS, JOB_ENABLE and its set / clear pair, group ``job``, and JOB_ID when
JOBS > 1; docs/protocol.md section 11): against a model with the split's
parameters it reads the model's values, takes and refuses the writes the model
takes and refuses (SLVERR, nothing changed), drives the rows on ``job_*``,
pulses ``slot_free`` with exactly the memory slots whose copies the model frees
and ``table_carve`` for exactly the jobs whose tables the model carves anew;
no engine sees it. A page (bits above 11 of the address) at or above JOBS, and
a global register's word in a page other than 0, is no register: SLVERR on
reads (0) and writes, and no engine sees it; a job register of page j reaches
the engines with ``m_axil_job`` = j.
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

from hostdrv.errors import UnknownRegisterError
from hostdrv.switch.reference import SwitchModel
from hostdrv.switch.reference.jobs import Page, resolve
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


def split_regs(jobs: int) -> set[int]:
    """The job table the split answers itself: JOBS, JOB_ENABLE (and its set / clear pair),
    the ``job`` group, and JOB_ID when the switch serves several jobs."""
    spec = gen_regs.load()
    return {r["addr"] for r in spec["flat"] if r["block"] == "job" or r["name"] in (
        "JOBS", "JOB_ENABLE", "JOB_ENABLE_SET", "JOB_ENABLE_CLR") or (
        jobs > 1 and r["name"] == "JOB_ID")}


def jobs_of(dut: HierarchyObject) -> int:
    return int(dut.JOBS.value)


def write_targets(addr: int, jobs: int) -> set[str]:
    if addr in split_regs(jobs):
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
        self.jobs: list[int] = []  # m_axil_job of each write, then read, taken
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
            if aw_fire or ar_fire:
                self.jobs.append(int(self.dut.m_axil_job.value))
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
                b = SLVERR if (aw & ~3) == self.error_addr else OKAY
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
        if addr in (regmap.CNT_PASS, regmap.L2_AGE_FRAMES) or addr in split_regs(jobs_of(dut)):
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
        if addr == regmap.L2_AGE_FRAMES or addr in split_regs(jobs_of(dut)):
            continue
        for sl in slaves.values():
            sl.writes.clear()
        # a whole word or a part of it (byte strobes)
        offset, length = rng.choice([(0, 4), (0, 4), (0, 1), (1, 1), (2, 2), (1, 3), (3, 1)])
        data = bytes(rng.getrandbits(8) for _ in range(length))
        strb = ((1 << length) - 1) << offset
        await master.write(addr + offset, data)
        got = {e for e, sl in slaves.items() if sl.writes}
        assert got == write_targets(addr, jobs_of(dut)), f"write {addr:#05x} went to {got}"
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
        if bad in write_targets(addr, jobs_of(dut)):
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


def new_model(dut: HierarchyObject) -> SwitchModel:
    """The reference switch with the split's parameters."""
    return SwitchModel(capacity=int(dut.RPL_CAPACITY.value), record_bytes=int(dut.RPL_RECORD_BYTES.value),
                       max_slots=int(dut.AGG_MAX_SLOTS.value), jobs=jobs_of(dut))


@cocotb.test()
async def test_job_table(dut: HierarchyObject) -> None:
    """The job table of page 0: the model's reset values (a model with the split's
    parameters), writes taken or refused (SLVERR) as the model takes them, JOB_LEASE
    kept with its strobes; no engine sees any of it."""
    master, slaves = await setup(dut)
    model = new_model(dut)
    names = [r.name for r in regmap.REGISTERS.values() if r.addr in split_regs(jobs_of(dut))]
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
    """Every register in every page (up to the address's width): no register (SLVERR, reads 0,
    reaching no engine, changing nothing) where the model has none (a page >= JOBS, a global
    register outside page 0); a job register of page j reaches its engines with m_axil_job =
    j, or the job table."""
    master, slaves = await setup(dut)
    jobs = jobs_of(dut)
    model = new_model(dut)
    width = len(dut.s_axil_araddr)
    pages = [p for p in (1, 2, 3, 4, 5, (1 << (width - 12)) - 1) if 0 < p < 1 << (width - 12)]
    udp = int(dut.udp_port.value)
    l2_age = await master.read_dword(regmap.L2_AGE_FRAMES)
    owners = counter_owners()
    for page in pages:
        for r in regmap.REGISTERS.values():
            if r.server:
                continue
            addr = page * regmap.JOB_PAGE + r.addr
            try:
                resolve(addr, 0, jobs)
                exists = True
            except UnknownRegisterError:
                exists = False
            for sl in slaves.values():
                sl.reads.clear()
                sl.writes.clear()
                sl.jobs.clear()
            rd = await master.read(addr, 4)
            if not exists:
                assert (rd.resp, int.from_bytes(rd.data, "little")) == (AxiResp.SLVERR, 0), f"read {addr:#06x}"
                w = await master.write(addr, (r.reset ^ 0x80000005).to_bytes(4, "little"))
                assert w.resp == AxiResp.SLVERR, f"write {addr:#06x}: {w.resp}"
                assert not any(sl.reads or sl.writes for sl in slaves.values()), f"{addr:#06x} reached an engine"
                continue
            if r.addr in split_regs(jobs):
                assert int.from_bytes(rd.data, "little") == model.read(r.name, page), f"read {addr:#06x}"
                assert not any(sl.reads for sl in slaves.values()), f"{addr:#06x} reached an engine"
                continue
            owner = read_owner(r.addr, owners)
            asked = {e for e, sl in slaves.items() if sl.reads}
            assert asked == ({"agg", "rpl"} if owner == "both" else {owner}), f"read {addr:#06x}: {asked}"
            assert all(sl.reads in ([], [r.addr]) and sl.jobs in ([], [page]) for sl in slaves.values()), \
                f"read {addr:#06x}: {[(sl.reads, sl.jobs) for sl in slaves.values()]}"
            if r.access != "rw":
                continue
            for sl in slaves.values():
                sl.jobs.clear()
            w = await master.write(addr, bytes(4))
            got = {e for e, sl in slaves.items() if sl.writes}
            assert (w.resp, got) == (AxiResp.OKAY, write_targets(r.addr, jobs)), f"write {addr:#06x}: {got}"
            assert all(sl.writes in ([], [(r.addr, 0, 0xF)]) and sl.jobs in ([], [page])
                       for sl in slaves.values()), f"write {addr:#06x}"
    assert int(dut.udp_port.value) == udp
    assert await master.read_dword(regmap.L2_AGE_FRAMES) == l2_age
    assert await master.read_dword(regmap.CNT_PASS) == 0
    assert await master.read_dword(regmap.JOB_LEASE) == regmap.REGISTERS["JOB_LEASE"].reset
    assert await master.read_dword(regmap.JOB_SLOT_COUNT) == int(dut.AGG_MAX_SLOTS.value)


def job_table_ports(dut: HierarchyObject, jobs: int) -> dict[str, list[int]]:
    """The rows the split drives (``job_*``) by register name, one value per job."""
    out: dict[str, list[int]] = {}
    for port, name, width in (("job_id", "JOB_ID", 8), ("job_slot_base", "JOB_SLOT_BASE", 7),
                              ("job_slot_count", "JOB_SLOT_COUNT", 7), ("job_rpl_base", "JOB_RPL_BASE", 32),
                              ("job_rpl_cap", "JOB_RPL_CAP", 32), ("job_rpl_record", "JOB_RPL_RECORD", 14)):
        v = int(getattr(dut, port).value)
        out[name] = [v >> (width * j) & ((1 << width) - 1) for j in range(jobs)]
    out["JOB_ENABLE"] = [int(dut.job_enable.value)]
    return out


class Effects:
    """What the model frees and carves (its slot copies, its pages' tables) and what the
    split pulses (``slot_free``, ``table_carve``), since the last :meth:`take`."""

    def __init__(self, dut: HierarchyObject, model: SwitchModel) -> None:
        self.dut = dut
        self.model_freed: set[int] = set()
        self.model_carved: set[int] = set()
        self.rtl_freed: set[int] = set()
        self.rtl_carved: set[int] = set()
        free, carve, pages = model._free, Page.carve, model._pages  # noqa: SLF001 - the spec's own effects

        def model_free(slots: range) -> None:
            self.model_freed.update(slots)
            free(slots)

        def model_carve(page: Page, enabled: bool) -> None:
            self.model_carved.update(j for j, q in enumerate(pages) if q is page)
            carve(page, enabled)

        model._free = model_free  # type: ignore[method-assign]
        self._restore = lambda: setattr(Page, "carve", carve)
        Page.carve = model_carve  # type: ignore[method-assign]

    async def watch(self) -> None:
        while True:
            await RisingEdge(self.dut.clk)
            await ReadOnly()
            f, c = int(self.dut.slot_free.value), int(self.dut.table_carve.value)
            self.rtl_freed.update(i for i in range(f.bit_length()) if f >> i & 1)
            self.rtl_carved.update(i for i in range(c.bit_length()) if c >> i & 1)

    def take(self) -> tuple[tuple[set[int], set[int]], tuple[set[int], set[int]]]:
        """(model's freed slots and carved jobs, the split's), cleared."""
        out = ((self.model_freed, self.model_carved), (self.rtl_freed, self.rtl_carved))
        self.model_freed, self.model_carved, self.rtl_freed, self.rtl_carved = set(), set(), set(), set()
        return out

    def close(self) -> None:
        self._restore()


def job_write(rng: random.Random, jobs: int, ids: list[int], slots: int, cap: int,
              record: int) -> tuple[str, int, int]:
    """A random write to the job table, or to an aggregation register whose write frees the
    job's slots: (register name, job, value), values mostly near the rules' edges."""
    pick = rng.random()
    j = rng.randrange(jobs)
    if pick < 0.08:  # one job: the engines hold JOB_ID (the test's engines take any value)
        return "JOB_ID", j, rng.choice(ids) if rng.random() < 0.8 or jobs == 1 else rng.choice(
            [rng.getrandbits(8), 0x100])
    if pick < 0.22:
        return rng.choice(["JOB_SLOT_BASE", "JOB_SLOT_COUNT"]), j, rng.choice(
            [rng.randrange(slots + 2), rng.randrange(slots + 2), 0x80])
    if pick < 0.40:
        powers = [0] + [1 << k for k in range(cap.bit_length() + 1)]
        if rng.random() < 0.5:
            return "JOB_RPL_CAP", j, rng.choice(powers + [3, cap - 1, cap * 2])
        return "JOB_RPL_BASE", j, rng.choice([rng.choice(powers), rng.randrange(cap + 4),
                                              (1 << 32) - cap])
    if pick < 0.46:
        return "JOB_RPL_RECORD", j, rng.choice([64, record, record - 64, record + 64, 96, 0, 1 << 14])
    if pick < 0.50:
        return "JOB_LEASE", j, rng.getrandbits(32)
    if pick < 0.58:
        return "JOB_OWNER", j, rng.choice([0, 0, 0x600D, 0xBAD])
    if pick < 0.80:
        name = rng.choice(["JOB_ENABLE", "JOB_ENABLE", "JOB_ENABLE_SET", "JOB_ENABLE_CLR"])
        return name, 0, rng.getrandbits(jobs) if rng.random() < 0.9 else rng.getrandbits(8)
    return rng.choice(["AGG_STALENESS", "AGG_DTYPE", "AGG_MODE"]), j, rng.randrange(2)


def carving(jobs: int, ids: list[int], slots: int, cap: int) -> list[tuple[str, int, int]]:
    """Writes that carve the memories into one disjoint share per job (a slot range, a table),
    give each job an id of its own and enable them all, in an order the rules take: from
    there random writes collide with enabled jobs."""
    out = [("JOB_ENABLE", 0, 1)]
    span, tcap = max(slots // jobs, 1), 1 << max((cap // jobs).bit_length() - 1, 0)
    for j in range(jobs):
        out += [("JOB_SLOT_COUNT", j, span if span * (j + 1) <= slots else 0),
                ("JOB_SLOT_BASE", j, min(span * j, slots) if span * (j + 1) <= slots else 0),
                ("JOB_RPL_CAP", j, tcap), ("JOB_RPL_BASE", j, tcap * j), ("JOB_ID", j, ids[j % len(ids)])]
    return out + [("JOB_ENABLE", 0, (1 << jobs) - 1)]


@cocotb.test()
async def test_job_table_rules(dut: HierarchyObject) -> None:
    """Random writes to every job's share (carvings, ids, claims, enables, partial strobes, an
    aggregation register an engine takes or refuses), from time to time after a carving
    that enables every job with a share of its own, against the model of the split's
    parameters: the response, the register read back in every page, the rows on job_*, and
    the slots freed and tables carved by each write, write by write."""
    master, slaves = await setup(dut)
    jobs = jobs_of(dut)
    model = new_model(dut)
    effects = Effects(dut, model)
    watcher = cocotb.start_soon(effects.watch())
    rng = random.Random(SEED + 13)
    slots, cap = int(dut.AGG_MAX_SLOTS.value), int(dut.RPL_CAPACITY.value)
    record = int(dut.RPL_RECORD_BYTES.value)
    ids = rng.sample(range(256), jobs)
    names = [r.name for r in regmap.REGISTERS.values() if r.addr in split_regs(jobs)]
    count = {"taken": 0, "refused": 0, "freed": 0}
    carve: list[tuple[str, int, int]] = []

    async def write(step: int, name: str, j: int, value: int, part: bool) -> None:
        r = regmap.REGISTERS[name]
        addr = regmap.job_address(name, j) if r.job else r.addr
        if r.addr not in split_regs(jobs):
            # an engine register: the engine takes it (OKAY) or, for AGG_MODE, refuses it
            slaves["agg"].error_addr = regmap.AGG_MODE if rng.random() < 0.5 else -1
        offset, length = rng.choice([(0, 1), (1, 1), (0, 2), (2, 2)]) if part else (0, 4)
        data = value.to_bytes(8, "little")[offset:offset + length]
        try:
            word = bytearray(model.read(name, j).to_bytes(4, "little"))
            word[offset:offset + length] = data
            if slaves["agg"].error_addr == r.addr:
                raise ValueError("the engine refuses it")
            model.write(name, int.from_bytes(word, "little"), j)
            want = AxiResp.OKAY
        except ValueError:
            want = AxiResp.SLVERR
        w = await master.write(addr + offset, data)
        slaves["agg"].error_addr = -1
        count["taken" if want == AxiResp.OKAY else "refused"] += 1
        what = f"write {step}: {name} of job {j} = {int.from_bytes(data, 'little'):#x} at +{offset}"
        assert w.resp == want, f"{what}: {w.resp}, the model {want}"
        model_fx, rtl_fx = effects.take()
        assert rtl_fx == model_fx, f"{what}: (freed, carved) {rtl_fx}, the model {model_fx}"
        count["freed"] += bool(model_fx[0])
        if r.addr in split_regs(jobs):
            assert await master.read_dword(addr) == model.read(name, j), what
        if step % 25 == 0:
            for page in range(jobs):
                for n in names:
                    if regmap.REGISTERS[n].job or page == 0:
                        got = await master.read_dword(regmap.job_address(n, page))
                        assert got == model.read(n, page), f"{what}: then {n} of job {page}"
            ports = job_table_ports(dut, jobs)
            want_ports = {n: [model.read(n, q) for q in range(jobs)] for n in ports if n != "JOB_ENABLE"}
            want_ports["JOB_ENABLE"] = [model.read("JOB_ENABLE")]
            assert ports == want_ports, f"{what}: job_* {ports}, the model {want_ports}"

    try:
        # a one-job switch's share is fixed: fewer writes tell all there is
        for step in range(int(os.environ.get("SPLIT_JOB_WRITES", "400" if jobs > 1 else "150"))):
            if step % 125 == 0 and jobs > 1:
                carve = carving(jobs, ids, slots, cap)
            if carve:
                await write(step, *carve.pop(0), part=False)
            else:
                await write(step, *job_write(rng, jobs, ids, slots, cap, record), part=rng.random() < 0.2)
    finally:
        watcher.cancel()
        effects.close()
    dut._log.info("job table: %d writes taken, %d refused, %d freed slots", count["taken"], count["refused"],
                  count["freed"])
    assert count["refused"] and count["taken"] and (count["freed"] or jobs == 1)
