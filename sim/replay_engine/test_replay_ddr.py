"""cocotb testbench for ``hw/rtl/replay_engine.v`` with ``REC_STORE = 1``: records in AXI4 memory.

The replay engine keeps its records behind its AXI4 master
(``hw/rtl/replay_rec_store_axi.v``); here the memory is a cocotbext-axi
:class:`~cocotbext.axi.AxiRam` with a read and a write latency per burst and
random pauses on all five AXI channels, besides the source idle insertion and
sink backpressure of the stream tests. Every frame the engine emits is
compared byte for byte with :class:`hostdrv.switch.reference.SwitchModel` configured with
the same capacity and record size (the testbench of
``sim/replay_engine/test_replay_engine.py``, whose checks are reused), and
every test ends with the model's counters and replay registers.

Environment (set by ``tests/test_replay_ddr.py``):
    ``RPL_SEED``        seed of the workload generator (default 1)
    ``RPL_SCALE``       workload size multiplier (default 1)
    ``RPL_MEM_BYTES``   size of the AXI RAM model (C times the record stride)
    ``RPL_RD_LAT``      clocks from an AR to its first R beat (default 20)
    ``RPL_WR_LAT``      clocks before a write burst's first beat is stored (default 10)
    ``RPL_LARGE``       1: only the large-configuration test runs
    ``RPL_BEYOND``      PUSHes of 16 records for ``test_ddr_beyond_2p16`` (C = 2^17);
                        when set, only that test runs
"""

from __future__ import annotations

import itertools
import logging
import os
import random
from collections.abc import Iterator, Sequence

import cocotb
from cocotb.handle import HierarchyObject
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiBus, AxiRam

from hostdrv.wire.consts import MAX_STACK
from hostdrv.wire.protocol import Opcode
from sim.common.tb import STRESS, LeanStream, high
from sim.replay_engine.replay_engine_tb import (
    ACTORS,
    LEARNERS,
    TB,
    Member,
    random_workload,
    stack_coverage,
    stacked_workload,
)

MEM_BYTES = int(os.environ.get("RPL_MEM_BYTES", str(1 << 20)))
RD_LAT = int(os.environ.get("RPL_RD_LAT", "20"))
WR_LAT = int(os.environ.get("RPL_WR_LAT", "10"))
SCALE = float(os.environ.get("RPL_SCALE", "1"))
LARGE = os.environ.get("RPL_LARGE") == "1"
BEYOND = int(os.environ.get("RPL_BEYOND", "0"))


def axi_pauses(rng: random.Random, p: float) -> Iterator[int]:
    """A reproducible pause generator for an AXI channel (1 = not ready / not valid)."""
    bits = [1 if rng.random() < p else 0 for _ in range(89)]
    return itertools.cycle(bits)


class LatencyRam(AxiRam):
    """:class:`AxiRam` that answers each burst after a fixed latency.

    ``rd_lat`` clocks pass between taking an AR and reading its first beat,
    ``wr_lat`` between taking a burst's first W beat and storing it; the
    bursts themselves are served one after another, as the cocotbext-axi slave
    does (a run of back-to-back bursts at consecutive addresses waits once).
    The AR and AW channels take up to ``depth`` requests ahead; ``rd_lat`` and
    ``wr_lat`` may be changed between requests."""

    def __init__(self, dut: HierarchyObject, size: int, rd_lat: int, wr_lat: int,
                 depth: int = 8) -> None:
        super().__init__(AxiBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst, size=size)
        logging.getLogger(f"cocotb.{dut._name}.m_axi").setLevel(logging.WARNING)
        self.clk = dut.clk
        self.rd_lat = rd_lat
        self.wr_lat = wr_lat
        self.reads = 0
        self.writes = 0
        rd, wr = self.read_if, self.write_if
        assert rd is not None and wr is not None
        rd.ar_channel.queue_occupancy_limit = depth
        wr.aw_channel.queue_occupancy_limit = depth
        beat = rd.byte_lanes
        orig_read, orig_write = rd._read, wr._write
        prev = {"r": -1, "w": -1}  # address of the last beat read / written

        async def read(address: int, length: int) -> bytes:
            # a burst's first beat: its address does not follow the previous beat's
            if address != prev["r"] + beat:
                self.reads += 1
                if self.rd_lat:
                    await ClockCycles(self.clk, self.rd_lat)
            prev["r"] = address
            return await orig_read(address, length)

        async def write(address: int, data: bytes) -> None:
            if address != prev["w"] + beat and self.wr_lat:
                await ClockCycles(self.clk, self.wr_lat)
            prev["w"] = address
            self.writes += 1
            await orig_write(address, data)

        rd._read = read  # type: ignore[method-assign]
        wr._write = write  # type: ignore[method-assign]

    def set_pauses(self, rng: random.Random, p: float) -> None:
        """Random pauses (probability ``p`` per clock) on AW, W, B, AR and R."""
        rd, wr = self.read_if, self.write_if
        assert rd is not None and wr is not None
        for ch in (wr.aw_channel, wr.w_channel, wr.b_channel, rd.ar_channel, rd.r_channel):
            ch.set_pause_generator(axi_pauses(rng, p))


def record_stride(record_bytes: int) -> int:
    """Bytes between two record slots in the AXI memory: R rounded up to a power of two (the
    layout of replay_rec_store_axi)."""
    return 1 << (record_bytes - 1).bit_length()


async def writes_answered(dut: HierarchyObject, clocks: int = 200_000) -> None:
    """Wait until the record store has no write queued or waiting for its B response."""
    store = dut.egress_inst.g_rec_axi.store_inst
    for _ in range(clocks):
        if not high(store.wr_pending_reg):
            return
        await RisingEdge(dut.clk)
    raise AssertionError("the record store still has writes pending")


class DdrTB(TB):
    """The replay engine testbench with the AXI RAM model on ``m_axi``."""

    def __init__(self, dut: HierarchyObject, seed: int = 1, rd_lat: int = RD_LAT,
                 wr_lat: int = WR_LAT, lean: bool = False) -> None:
        super().__init__(dut, seed=seed, lean=lean)
        self.seed = seed
        if self.lean is not None:
            # the record store's m_axis_tvalid is X until the reset (Icarus): start after it
            self.lean.stop()
        self.ram = LatencyRam(dut, MEM_BYTES, rd_lat, wr_lat)
        self.slots: dict[int, bytes] = {}  # record slot -> the record last pushed there
        self._made: list[bytes] = []

    async def reset(self, cycles: int = 8, after: int = 4) -> None:
        """The stream testbench's reset; then (lean driver) a fresh driver on the reset DUT."""
        await super().reset(cycles, after)
        if self.lean is not None:
            self.lean = LeanStream(self.dut, self.clk, rand=random.Random(self.seed).random)

    def records(self, k: int) -> list[bytes]:
        out = super().records(k)
        self._made = out
        return out

    async def push(self, m: Member, k: int, prios: Sequence[int] | None = None) -> None:
        """PUSH as the stream tests do; remember which slot each accepted record went to."""
        wp = self.m.read("RPL_WPTR")
        await super().push(m, k, prios)
        if self.m.read("RPL_WPTR") == (wp + k) % self.capacity:
            for j, rec in enumerate(self._made):
                self.slots[(wp + j) % self.capacity] = rec

    async def check_memory(self) -> None:
        """Once every write is answered: record i at i * S in the AXI RAM, S = R rounded up to a
        power of two (the layout of replay_rec_store_axi)."""
        await writes_answered(self.dut)
        stride = record_stride(self.record_bytes)
        assert self.slots, "no record pushed"
        for slot, rec in self.slots.items():
            got = self.ram.read(slot * stride, self.record_bytes)
            assert got == rec, f"record slot {slot}: memory at {slot * stride:#x} differs"

    def stress_all(self, idle: bool, backpressure: bool, axi: float = 0.3) -> None:
        """Stream idle / backpressure as the stream tests, plus AXI channel pauses."""
        self.set_stress(idle, backpressure)
        if axi:
            self.ram.set_pauses(random.Random(self.rng.getrandbits(32)), axi)

    async def finish(self, memory: bool = True) -> None:
        """The stream testbench's checks; then (``memory``, for workloads whose every PUSH went
        through :meth:`push`) the records in the AXI RAM."""
        await super().finish()
        if memory:
            await self.check_memory()
        assert self.ram.reads > 0 or self.m.counters()["CNT_TX_SAMPLE_RESP"] == 0
        self.log.info("AXI RAM: %d record reads, %d beats written", self.ram.reads,
                      self.ram.writes)


def _seed(idle: bool, backpressure: bool, base: int) -> int:
    return int(os.environ.get("RPL_SEED", "1")) * 1000 + base + 2 * idle + backpressure


@cocotb.test(skip=LARGE or BEYOND > 0)
@cocotb.parametrize(idle=STRESS, backpressure=STRESS)
async def test_ddr_basic(dut: HierarchyObject, idle: bool, backpressure: bool) -> None:
    """PUSH, uniform and prioritized SAMPLE, UPDATE with the records in AXI memory."""
    tb = DdrTB(dut, seed=_seed(idle, backpressure, 0))
    await tb.reset()
    tb.stress_all(idle, backpressure)
    await tb.sample(LEARNERS[0], 4, True)  # EMPTY
    await tb.push(ACTORS[0], 3)
    await tb.push(ACTORS[1], 16)
    await tb.sample(LEARNERS[0], 8, False)
    await tb.sample(LEARNERS[1], 16, True)
    await tb.update(LEARNERS[0], [0, 5, 18, 1], [7, 1 << 31, 0xFFFFFFFF, 0])
    await tb.sample(LEARNERS[1], 4, True)
    await tb.push(ACTORS[0], 1, [0])
    await tb.sample(LEARNERS[0], 1, False)
    await tb.finish()


@cocotb.test(skip=LARGE or BEYOND > 0)
@cocotb.parametrize(idle=STRESS, backpressure=STRESS)
async def test_ddr_ordering(dut: HierarchyObject, idle: bool, backpressure: bool) -> None:
    """SAMPLE then PUSH over the sampled slots then SAMPLE: reads and writes stay in order."""
    tb = DdrTB(dut, seed=_seed(idle, backpressure, 10))
    await tb.reset()
    tb.stress_all(idle, backpressure)
    c = tb.capacity
    lrn = LEARNERS[0]
    while tb.records_pushed < c:
        await tb.push(ACTORS[0], 16)
    for _ in range(2):
        await tb.sample(lrn, 16, False)
        await tb.push(ACTORS[1], 16, [0xFFFF0000] * 16)
        await tb.sample(lrn, 8, True)
        await tb.push(ACTORS[0], 5)
        await tb.sample(lrn, 32, False)
        hot = tb.rng.randrange(c)
        await tb.update(lrn, [hot], [0xFFFFFFF0])
        await tb.sample(lrn, 4, True)
    await tb.finish()


@cocotb.test(skip=LARGE or BEYOND > 0)
@cocotb.parametrize(backpressure=STRESS)
async def test_ddr_hazards(dut: HierarchyObject, backpressure: bool) -> None:
    """Samples aimed at the records a PUSH touches, with the memory slow on one side.

    Read after write (writes take 200 clocks, reads none): PUSH four records with a
    priority far above the rest, then a prioritized SAMPLE that returns them (the
    reads must wait for the writes). Write after read (reads take 200 clocks,
    writes none): make the next four slots to be overwritten the hot ones, SAMPLE
    them, then PUSH over them at once (the writes must wait for the reads)."""
    tb = DdrTB(dut, seed=_seed(False, backpressure, 40))
    await tb.reset()
    tb.stress_all(False, backpressure, axi=0.1)
    c = tb.capacity
    lrn, act = LEARNERS[0], ACTORS[0]
    hot, cold = 1 << 30, 1
    while tb.records_pushed < c:
        await tb.push(act, 16, [cold] * 16)
    for _ in range(4):
        # read after write
        await tb.quiesce()
        tb.ram.rd_lat, tb.ram.wr_lat = 0, 200
        wp = tb.m.read("RPL_WPTR")
        await tb.push(act, 4, [hot] * 4)
        await tb.sample(lrn, 8, True)
        await tb.update(lrn, [(wp + j) % c for j in range(4)], [cold] * 4)
        # write after read
        await tb.quiesce()
        tb.ram.rd_lat, tb.ram.wr_lat = 200, 0
        wp = tb.m.read("RPL_WPTR")
        await tb.update(lrn, [(wp + j) % c for j in range(4)], [hot] * 4)
        await tb.sample(lrn, 8, True)
        await tb.push(act, 4, [cold] * 4)
    await tb.finish()


@cocotb.test(skip=LARGE or BEYOND > 0)
@cocotb.parametrize(idle=STRESS, backpressure=STRESS)
async def test_ddr_random_workload(dut: HierarchyObject, idle: bool, backpressure: bool) -> None:
    """Random PUSH / SAMPLE / UPDATE mix past ring wrap-around, all AXI channels paused."""
    tb = DdrTB(dut, seed=_seed(idle, backpressure, 20))
    await tb.reset()
    tb.stress_all(idle, backpressure)
    await random_workload(tb, int(30 * SCALE), max_batch=16)
    assert tb.records_pushed > tb.capacity, "the workload must wrap the ring"
    await tb.finish(memory=False)  # its malformed frames bypass DdrTB.push


@cocotb.test(skip=LARGE or BEYOND > 0)
@cocotb.parametrize(idle=STRESS, backpressure=STRESS)
async def test_ddr_stacked(dut: HierarchyObject, idle: bool, backpressure: bool) -> None:
    """Stacked samples with the records in AXI memory: the stacked workload of the block RAM
    tests (four actors interleaved, broken chains, k up to 8, B = 64 at k = 8; a broken
    position's zero record is never read), all AXI channels paused; every record in place."""
    tb = DdrTB(dut, seed=_seed(idle, backpressure, 40))
    await tb.reset()
    tb.stress_all(idle, backpressure)
    await stacked_workload(tb, int(10 * SCALE), max_batch=64)
    valid, broken = stack_coverage(tb)
    assert valid and broken, (valid, broken)
    await tb.finish()


@cocotb.test(skip=LARGE or BEYOND > 0)
async def test_ddr_throughput(dut: HierarchyObject) -> None:
    """With a memory that keeps up (no latency, no pauses) the replies leave back to back.

    A 64-sample uniform SAMPLE: between the first and the last beat of its
    replies the output carries a beat on at least 90 % of the clocks."""
    tb = DdrTB(dut, seed=5, rd_lat=0, wr_lat=0)
    await tb.reset()
    c = tb.capacity
    while tb.records_pushed < min(c, 64):
        await tb.push(ACTORS[0], 16)
    await tb.check_outputs()
    beats: list[int] = []

    async def watch() -> None:
        clock = 0
        while True:
            await RisingEdge(dut.clk)
            clock += 1
            if high(dut.m_axis_tvalid) and high(dut.m_axis_tready):
                beats.append(clock)

    task = cocotb.start_soon(watch())
    await tb.sample(LEARNERS[0], 64, False)
    await tb.check_outputs()
    task.cancel()
    span = beats[-1] - beats[0] + 1
    duty = len(beats) / span
    tb.log.info("64 samples: %d beats in %d clocks (%.2f beats per clock)", len(beats), span, duty)
    assert duty >= 0.9, f"output duty {duty:.2f} < 0.9 with a memory that keeps up"
    await tb.check_state()
    await tb.check_memory()


@cocotb.test(skip=LARGE or BEYOND > 0)
async def test_ddr_error_responses(dut: HierarchyObject) -> None:
    """A memory that answers SLVERR: RPL_AXI_ERR counts each failed write burst (BRESP) and
    each failed read beat (RRESP), bit 31 sticky; RPL_RESET clears it.

    The upper half of the record slots lies beyond the memory: PUSHes fill three quarters
    of them (a burst per record), then a uniform SAMPLE reads some of the failing ones (the
    replies still leave, with whatever the memory returned: only counted here)."""
    tb = DdrTB(dut, seed=9, rd_lat=0, wr_lat=0)
    await tb.reset()
    c, r = tb.capacity, tb.record_bytes
    size = record_stride(r)
    beats = -(-r // 64)  # 512-bit beats per record
    limit = (c // 2) * size
    rd, wr = tb.ram.read_if, tb.ram.write_if
    assert rd is not None and wr is not None
    orig_read, orig_write = rd._read, wr._write

    async def read(address: int, length: int) -> bytes:
        if address >= limit:
            raise ValueError("beyond the test memory")
        return await orig_read(address, length)

    async def write(address: int, data: bytes) -> None:
        if address >= limit:
            raise ValueError("beyond the test memory")
        await orig_write(address, data)

    rd._read = read  # type: ignore[method-assign]
    wr._write = write  # type: ignore[method-assign]
    logging.getLogger(f"cocotb.{dut._name}.m_axi").setLevel(logging.ERROR)
    assert await tb.read("RPL_AXI_ERR") == 0
    while tb.records_pushed < 3 * c // 4:
        await tb.push(ACTORS[0], 16)
    await tb.check_outputs()  # the PUSH_ACKs do not depend on the memory
    bad_writes = tb.records_pushed - c // 2
    assert await tb.read("RPL_AXI_ERR") == (1 << 31) | bad_writes
    await tb.sample(LEARNERS[0], 32, False)
    bad_reads = 0
    while tb.received < len(tb.expected):
        index = int.from_bytes(tb.expected[tb.received].frame[64:68], "little")
        assert index < tb.records_pushed
        bad_reads += beats * (index >= c // 2)
        await tb._recv(400_000)
        tb.received += 1
    assert bad_reads > 0
    assert await tb.read("RPL_AXI_ERR") == (1 << 31) | (bad_writes + bad_reads)
    await tb.write("RPL_RESET", 1)
    assert await tb.read("RPL_AXI_ERR") == 0


@cocotb.test(skip=not LARGE or BEYOND > 0)
async def test_ddr_large(dut: HierarchyObject) -> None:
    """A large configuration (C = 65536, R = 4032; R = 7104 or 8192: two bursts per record):
    few records written, samples (stacked too) and an UPDATE compared with the model, stream and
    AXI channels paused."""
    tb = DdrTB(dut, seed=_seed(False, False, 30))
    await tb.reset()
    tb.stress_all(True, True, axi=0.2)
    await tb.push(ACTORS[0], 3)
    await tb.sample(LEARNERS[0], 4, False)
    await tb.push(ACTORS[1], 2)
    await tb.sample(LEARNERS[1], 8, True)
    await tb.update(LEARNERS[0], [0, 4], [1 << 30, 0])
    await tb.sample(LEARNERS[0], 4, True)
    # stacks: chains of two actors, interleaved (records over 4 KB are two bursts each)
    for m in (ACTORS[0], ACTORS[1], ACTORS[0], ACTORS[0], ACTORS[1]):
        await tb.push(m, 1)
    await tb.sample(LEARNERS[0], 4, False, stack=4)
    await tb.sample(LEARNERS[1], 2, True, stack=MAX_STACK)
    await tb.finish()


@cocotb.test(skip=BEYOND == 0)
async def test_ddr_beyond_2p16(dut: HierarchyObject) -> None:
    """C = 2^17 records: ``RPL_BEYOND`` PUSHes of 16 records (past 2^16 when it is above 4096,
    round the ring above 8192) through the lean beat driver, then uniform and prioritized SAMPLEs and UPDATEs in the
    upper half of the ring, every frame compared with the model, the records' place in the
    AXI RAM checked.

    Nearly every priority is 2^32 - 1, so once more than 2^16 records are in, the tree
    total (the draw scale of a prioritized batch of one) needs its 49th bit: the fourth
    limb of ``replay_mul``'s operand b and the top bit of its result."""
    tb = DdrTB(dut, seed=_seed(False, False, 40), lean=True)
    await tb.reset()
    c, rng = tb.capacity, tb.rng
    assert c == 1 << 17, f"RPL_CAPACITY {c}: build with CAPACITY = 2^17"
    top = 0xFFFFFFFF
    tb.stress_all(False, False, axi=0.05)
    for n in range(BEYOND):
        prios = [top if rng.random() < 0.98 else rng.getrandbits(32) for _ in range(16)]
        await tb.push(ACTORS[n % 2], 16, prios)
        if n % 1024 == 1023:
            await tb.check_outputs()  # keep the expected queue short
            tb.log.info("%d records pushed", tb.records_pushed)
    await tb.check_outputs()
    size = tb.m.read("RPL_SIZE")
    total = tb.m.read("RPL_TOTAL_LO") | tb.m.read("RPL_TOTAL_HI") << 32
    if BEYOND > 4096:
        assert size > 1 << 16, f"only {size} records in"
        assert total >> 48, f"total {total:#x} does not reach bit 48"
    tb.log.info("size %d, total %#x", size, total)
    lean = tb.lean
    assert lean is not None
    lean.idle, lean.backpressure = 0.3, 0.3
    tb.ram.set_pauses(random.Random(rng.getrandbits(32)), 0.2)
    lrn = LEARNERS
    for batch, prio in ((1, True), (64, False), (1, True), (2, True), (64, True), (1, False),
                        (32, True), (1, True)):
        await tb.sample(lrn[rng.randrange(2)], batch, prio)
    # the upper half: a hot record, some zeroed, one out of range
    hot = [size - 1 - rng.randrange(min(size, 1 << 10)) for _ in range(4)]
    cold = [(1 << 16) + rng.randrange(max(1, size - (1 << 16))) for _ in range(8)]
    await tb.update(lrn[0], hot + cold + [size + 3], [top] * 4 + [0] * 8 + [5])
    for batch in (1, 16, 64):
        await tb.sample(lrn[1], batch, True)
    await tb.update(lrn[1], hot, [1 << 31] * 4)
    await tb.push(ACTORS[0], 16)
    for batch, prio in ((64, False), (1, True), (8, True)):
        await tb.sample(lrn[0], batch, prio)
    await tb.finish()
    upper = sum(1 for e in tb.expected if e.frame[43] == Opcode.SAMPLE_RESP
                and int.from_bytes(e.frame[64:68], "little") >= 1 << 16)
    tb.log.info("%d SAMPLE_RESPs of %d from the upper half", upper,
                tb.m.counters()["CNT_TX_SAMPLE_RESP"])
    if BEYOND > 4096:
        assert upper > 0, "no sample came from index 2^16 or above"
