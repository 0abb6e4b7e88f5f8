"""cocotb testbench for ``hw/rtl/replay_engine.v``, checked against ``hostdrv.switch.reference``.

Every frame sent to the engine is also given to :class:`hostdrv.switch.reference.SwitchModel`;
the engine must emit exactly the frames the model emits (bytes and egress
port), in order, and end every test with an empty sink, the model's counters
and the model's ``RPL_SIZE`` / ``RPL_WPTR`` / ``RPL_TOTAL``. Expected values
come only from the model.

The stream tests run under the four combinations of source idle insertion
and sink backpressure (``sim.common.tb.StreamTB.set_stress``), the workload
the same under each. A monitor on the sum tree's result and update ports
checks the throughput claims (one sample index and one priority update per
clock once the pipeline is full).

Environment (set by ``tests/test_replay_engine.py``):
    ``RPL_SEED``        seed of the workload generator (default 1)
    ``RPL_SCALE``       workload size multiplier (default 1)
    ``RPL_SOAK_OPS``    requests in the soak test (default 2000)
"""

from __future__ import annotations

import itertools
import math
import os
import random
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import cocotb
from cocotb.handle import HierarchyObject
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiResp

from hostdrv.switch.reference import Egress, SwitchModel
from hostdrv.wire import regmap
from hostdrv.wire.protocol import (
    Frame,
    Message,
    Opcode,
    build_frame,
    push,
    sample_request,
    update,
)
from sim.common.tb import STRESS, StreamTB, high, model_refuses

CLK_NS = 4
SEED = int(os.environ.get("RPL_SEED", "1"))
SCALE = float(os.environ.get("RPL_SCALE", "1"))
SOAK_OPS = int(os.environ.get("RPL_SOAK_OPS", "2000"))

# counters the replay engine owns; every other counter must stay 0 in the model
REPLAY_COUNTERS = (
    "CNT_RX_PUSH", "CNT_RX_SAMPLE", "CNT_RX_UPDATE", "CNT_TX_PUSH_ACK", "CNT_TX_SAMPLE_RESP",
    "CNT_DROP_BAD_LENGTH", "CNT_DROP_BAD_HEADER", "CNT_DROP_BAD_JOB", "CNT_DROP_DISABLED",
    "CNT_DROP_UNKNOWN_WORKER", "CNT_DROP_SPOOFED", "CNT_DROP_BAD_COUNT", "CNT_DROP_EMPTY",
    "CNT_DROP_BAD_INDEX", "CNT_TX_PUSH_NOT_YET", "CNT_TX_SAMPLE_NOT_YET",
)
STATE_REGS = ("RPL_SIZE", "RPL_WPTR", "RPL_TOTAL_LO", "RPL_TOTAL_HI", "RPL_SEED", "RPL_MIN_SIZE",
              "RPL_SPI", "RPL_SPI_ERROR", "RPL_RATE_DIFF_LO", "RPL_RATE_DIFF_HI")
JOB = 7


@dataclass(frozen=True)
class Member:
    """One member table entry and the addresses its frames carry."""

    wid: int
    port: int
    ip: int
    udp: int  # MEMBER_UDP (0 = any)
    role: int
    src_udp: int  # UDP source port its frames use

    @property
    def mac(self) -> bytes:
        return bytes([0x02, 0x00, 0x00, 0x00, 0x10, self.wid])


MEMBERS = (
    Member(0, 0x01, 0x0A000002, 40000, 0b010, 40000),  # actor
    Member(1, 0x04, 0x0A000003, 0, 0b100, 41234),  # learner, any UDP source port
    Member(2, 0x10, 0x0A000004, 40002, 0b110, 40002),  # actor and learner
    Member(3, 0x40, 0x0A000005, 40003, 0b001, 40003),  # aggregation worker only
)
ACTORS = (MEMBERS[0], MEMBERS[2])
LEARNERS = (MEMBERS[1], MEMBERS[2])


def frame_of(msg: Message, m: Member, *, validate: bool = True) -> bytes:
    """Wrap a message in the Ethernet/IPv4/UDP frame member ``m`` sends."""
    return build_frame(Frame(msg, eth_src=m.mac, ip_src=m.ip, udp_src=m.src_udp), validate=validate)


def fix_lengths(frame: bytearray) -> bytes:
    """Make the IPv4 total and UDP lengths match the frame's length."""
    n = len(frame)
    struct.pack_into("!H", frame, 16, n - 14)
    struct.pack_into("!H", frame, 38, n - 34)
    return bytes(frame)


def pause_pattern(rng: random.Random) -> Iterator[int]:
    """A pause generator (1 = pause this clock), random but reproducible."""
    bits = [1 if rng.random() < 0.4 else 0 for _ in range(97)]
    return itertools.cycle(bits)


class TB(StreamTB):
    """The common stream testbench (sim.common.tb) with the reference model of one test.

    ``lean=True`` drives the streams with the lean driver, its sink not ready
    with probability ``stall`` per clock."""

    def __init__(self, dut: HierarchyObject, seed: int = SEED, lean: bool = False,
                 stall: float = 0.0) -> None:
        super().__init__(dut, CLK_NS, lean=lean)
        self.log = dut._log
        self.rng = random.Random(seed)
        if self.lean is not None:
            self.lean.rand = random.Random(seed).random
            self.lean.backpressure = stall
        self.model: SwitchModel | None = None
        self.capacity = 0
        self.record_bytes = 0
        self.expected: list[Egress] = []
        self.received = 0
        self.seq = 0
        self.records_pushed = 0

    def stress_pattern(self, kind: str) -> Iterator[int]:
        """Random but reproducible pauses (40 % of the clocks) from the test's seed."""
        return pause_pattern(self.rng)

    # -- set up --------------------------------------------------------------
    async def reset(self, cycles: int = 8, after: int = 4) -> None:
        """Reset, learn C and R from the registers, build the model, configure."""
        await super().reset(cycles, after)
        self.capacity = await self.read("RPL_CAPACITY")
        self.record_bytes = await self.read("RPL_RECORD_BYTES")
        # the sum tree clears itself after reset: C/2 clocks
        await ClockCycles(self.dut.clk, self.capacity // 2 + 8)
        self.model = SwitchModel(capacity=self.capacity, record_bytes=self.record_bytes)
        await self.write("JOB_ID", JOB)
        for m in MEMBERS:
            await self.write(f"MEMBER_PORT_{m.wid}", m.port)
            await self.write(f"MEMBER_IP_{m.wid}", m.ip)
            await self.write(f"MEMBER_UDP_{m.wid}", m.udp)
            await self.write(f"MEMBER_ROLE_{m.wid}", m.role)

    @property
    def m(self) -> SwitchModel:
        assert self.model is not None
        return self.model

    async def write(self, name: str, value: int) -> None:
        """Write a register in the model and in the DUT (answering OKAY), once the traffic
        before it is done."""
        if self.expected or self.received:
            await self.quiesce()
        self.m.write(name, value)
        await self.write_reg(name, value)

    async def quiesce(self) -> None:
        """Wait until every frame sent so far has been processed and answered."""
        await self.send_done()
        # then until the engine has executed everything queued (UPDATEs answer nothing)
        busy_probe, window = self._busy_probe()
        quiet = 0
        for _ in range(1_000_000):
            await RisingEdge(self.dut.clk)
            quiet = 0 if busy_probe() else quiet + 1
            if quiet >= window:
                break
        await self.check_outputs()

    def _busy_probe(self) -> tuple[Callable[[], bool], int]:
        """A test of "the engine is working" and the quiet clocks that mean done.

        The engine's ingress metadata, executor state and request queue when
        the design has them (32 quiet clocks), else the ports only (input not
        ready or output valid) with a window that covers the longest silent
        request: a 128-pair UPDATE through the sum tree."""
        dut = self.dut
        try:
            meta, state, rq = dut.ingress_inst.meta_valid, dut.state_reg, dut.rq_valid
        except AttributeError:
            meta = None
        if meta is not None:
            return (lambda: high(meta) or not high(dut.s_axis_tready)
                    or state.value.to_unsigned() != 0 or high(rq)), 32
        window = 256 + 4 * max(1, self.capacity).bit_length()
        return (lambda: not high(dut.s_axis_tready) or high(dut.m_axis_tvalid)), window

    # -- traffic -------------------------------------------------------------
    async def send(self, frame: bytes, port: int) -> None:
        """Send one frame; the model's outputs join the expected queue."""
        self.expected.extend(self.m.process(frame, port))
        await self.send_frame(frame, port)
        if self.lean is not None:
            while len(self.lean.pending) > 4:
                await ClockCycles(self.dut.clk, 8)

    def next_seq(self) -> int:
        self.seq = (self.seq + 1) & 0xFFFFFFFF
        return self.seq

    def records(self, k: int) -> list[bytes]:
        out = []
        for _ in range(k):
            self.records_pushed += 1
            head = struct.pack("<II", self.records_pushed, self.rng.getrandbits(32))
            out.append(head + self.rng.randbytes(self.record_bytes - 8))
        return out

    async def push(self, m: Member, k: int, prios: Sequence[int] | None = None) -> None:
        if prios is None:
            prios = [self.rng.randint(1, 1 << 20) for _ in range(k)]
        msg = push(self.records(k), list(prios), job=JOB, worker=m.wid, seq=self.next_seq())
        await self.send(frame_of(msg, m), m.port)

    async def sample(self, m: Member, batch: int, prioritized: bool) -> None:
        msg = sample_request(batch, job=JOB, worker=m.wid, seq=self.next_seq(),
                             prioritized=prioritized)
        await self.send(frame_of(msg, m), m.port)

    async def update(self, m: Member, idx: Sequence[int], prios: Sequence[int]) -> None:
        msg = update(list(idx), list(prios), job=JOB, worker=m.wid, seq=self.next_seq())
        await self.send(frame_of(msg, m), m.port)

    # -- checks --------------------------------------------------------------
    async def check_outputs(self, timeout_clocks: int = 400_000) -> None:
        """Receive every expected frame, compare it, then require an empty sink."""
        while self.received < len(self.expected):
            want = self.expected[self.received]
            data, tuser = await self._recv(timeout_clocks)
            if data != want.frame:
                diff = next((i for i in range(min(len(data), len(want.frame)))
                             if data[i] != want.frame[i]), -1)
                raise AssertionError(
                    f"frame {self.received}: got {len(data)} bytes, want {len(want.frame)}; "
                    f"first difference at byte {diff}\n got  {data[:160].hex()}\n want "
                    f"{want.frame[:160].hex()}")
            assert tuser & 0xFFFF == len(want.frame), f"frame {self.received}: TUSER length {tuser:#x}"
            assert (tuser >> 24) & 0xFF == want.dst_ports, (
                f"frame {self.received}: dst ports {(tuser >> 24) & 0xFF:#x} want {want.dst_ports:#x}")
            self.received += 1
        await ClockCycles(self.dut.clk, 300)
        extra = self.recv_pending()
        assert extra == 0, f"{extra} unexpected frames after the expected ones"

    async def _recv(self, timeout_clocks: int) -> tuple[bytes, int]:
        for _ in range(timeout_clocks // 16):
            got = self.recv_nowait()
            if got is not None:
                return got
            await ClockCycles(self.dut.clk, 16)
        raise AssertionError(f"timeout waiting for frame {self.received} of {len(self.expected)}")

    async def check_state(self) -> None:
        """Counters and replay state registers equal the model's."""
        cnt = self.m.counters()
        for name, value in cnt.items():
            if name not in REPLAY_COUNTERS:
                assert value == 0, f"model counted {name}={value} in a replay-only test"
        for name in REPLAY_COUNTERS:
            got = await self.read(name)
            assert got == cnt[name], f"{name}: RTL {got} model {cnt[name]}"
        for name in STATE_REGS:
            got = await self.read(name)
            assert got == self.m.read(name), f"{name}: RTL {got:#x} model {self.m.read(name):#x}"

    async def finish(self) -> None:
        await self.check_outputs()
        await self.check_state()
        cnt = {k[4:]: v for k, v in self.m.counters().items() if v}
        self.log.info("checked %d frames; counters %s", self.received, cnt)


class PipeMonitor:
    """Longest runs of consecutive sum tree results and leaf updates (throughput)."""

    def __init__(self, dut: HierarchyObject) -> None:
        self.dut = dut
        self.max_result_run = 0
        self.max_update_run = 0
        self.results = 0
        self.updates = 0
        self.first_result_clock: int | None = None
        self.clock = 0
        self.in_last_clocks: list[int] = []
        self.out_first_clocks: list[int] = []
        cocotb.start_soon(self._run())

    async def _run(self) -> None:
        tree = self.dut.tree_inst
        rrun = urun = 0
        out_busy = False
        while True:
            await RisingEdge(self.dut.clk)
            self.clock += 1
            if high(tree.r_valid):
                rrun += 1
                self.results += 1
                self.max_result_run = max(self.max_result_run, rrun)
            else:
                rrun = 0
            if high(tree.upd_valid):
                urun += 1
                self.updates += 1
                self.max_update_run = max(self.max_update_run, urun)
            else:
                urun = 0
            if high(self.dut.s_axis_tvalid) and high(self.dut.s_axis_tready) \
                    and high(self.dut.s_axis_tlast):
                self.in_last_clocks.append(self.clock)
            if high(self.dut.m_axis_tvalid) and high(self.dut.m_axis_tready):
                if not out_busy:
                    self.out_first_clocks.append(self.clock)
                out_busy = not high(self.dut.m_axis_tlast)


# ---------------------------------------------------------------------------
# tests


@cocotb.test()
async def test_registers(dut: HierarchyObject) -> None:
    """Identity, control, replay and member registers read back like the model."""
    tb = TB(dut)
    await tb.reset()
    for name in ("MAGIC", "VERSION", "BUILD_HASH", "CTRL", "JOB_ID", "UDP_PORT", "SWITCH_IP",
                 "SWITCH_MAC_HI", "SWITCH_MAC_LO", "MCAST_IP", "RPL_CAPACITY",
                 "RPL_RECORD_BYTES", "RPL_SEED", "RPL_SIZE", "RPL_WPTR", "RPL_TOTAL_LO",
                 "RPL_TOTAL_HI", "RPL_RESET", "RPL_MIN_SIZE", "RPL_SPI", "RPL_SPI_ERROR",
                 "RPL_RATE_DIFF_LO", "RPL_RATE_DIFF_HI"):
        got = await tb.read(name)
        assert got == tb.m.read(name), f"{name}: RTL {got:#x} model {tb.m.read(name):#x}"
    for i in range(8):
        for f in ("PORT", "IP", "UDP", "ROLE"):
            name = f"MEMBER_{f}_{i}"
            got = await tb.read(name)
            assert got == tb.m.read(name), f"{name}: RTL {got:#x} model {tb.m.read(name):#x}"
    # values are kept at their declared width; CTRL bit 31 reads 0
    regs = regmap.REGISTERS
    for name in ("JOB_ID", "UDP_PORT", "SWITCH_MAC_HI", "MEMBER_PORT_5", "MEMBER_UDP_6",
                 "MEMBER_ROLE_7", "SWITCH_IP", "MCAST_IP", "RPL_SEED", "RPL_MIN_SIZE",
                 "RPL_SPI_ERROR", "RPL_SPI"):
        value = tb.rng.getrandbits(regs[name].width)
        if name.startswith("MEMBER_PORT"):
            value = 1 << tb.rng.randrange(8)  # 0 or one-hot
        await tb.write(name, value)
        got = await tb.read(name)
        assert got == tb.m.read(name) == value, f"{name}: RTL {got:#x} model {tb.m.read(name):#x}"
    # MEMBER_PORT refuses anything but 0 or one port bit: SLVERR, value kept
    for i in range(8):
        name = f"MEMBER_PORT_{i}"
        addr = regs[name].addr
        old = await tb.read(name)
        for bad in (0x03, 0x81, 0xFF, 0x100, 0x80000010, tb.rng.getrandbits(32) | 0x300):
            model_refuses(tb.m, name, bad)
            resp = await tb.write_resp(addr, bad.to_bytes(4, "little"))
            assert resp == AxiResp.SLVERR, f"{name} = {bad:#x} answered {resp!r}"
            assert await tb.read(name) == tb.m.read(name) == old, name
        resp = await tb.write_resp(addr + 1, b"\x02")  # byte 1 alone: 0x200 | old
        assert resp == AxiResp.SLVERR
        assert await tb.read(name) == old, name
    # a value wider than its register (or CTRL's undefined bits, RPL_RESET above 1):
    # SLVERR, value kept, as the model refuses it
    for name, bad in (("JOB_ID", 0x100), ("UDP_PORT", 0x10000), ("SWITCH_MAC_HI", 0x12345),
                      ("MEMBER_UDP_6", 0x10000), ("MEMBER_ROLE_7", 8), ("CTRL", 0x80000004),
                      ("RPL_RESET", 2), ("RPL_RESET", 0x80000001)):
        old = await tb.read(name)
        model_refuses(tb.m, name, bad)
        resp = await tb.write_resp(regs[name].addr, bad.to_bytes(4, "little"))
        assert resp == AxiResp.SLVERR, f"{name} = {bad:#x} answered {resp!r}"
        assert await tb.read(name) == tb.m.read(name) == old, name
    # addresses with no register (the model refuses them): the engine answers OKAY with 0
    assert tb.axil is not None
    for addr in (0x0FC, 0x180, 0x1C0, 0x2FC, 0x4F0, 0x800, 0xFFC):
        if addr in regmap.BY_ADDR:
            continue
        try:
            tb.m.read(addr)
        except ValueError:
            pass
        else:
            raise AssertionError(f"the model has a register at {addr:#x}")
        got = await tb.axil.read_dword(addr)
        assert got == 0, f"{addr:#x} read {got:#x}"
    await tb.write("CTRL", 0x80000001)
    assert await tb.read("CTRL") == tb.m.read("CTRL") == 1
    await tb.write("CTRL", 3)
    await tb.check_state()


@cocotb.test()
@cocotb.parametrize(idle=STRESS, backpressure=STRESS)
async def test_basic(dut: HierarchyObject, idle: bool, backpressure: bool) -> None:
    """PUSH, uniform and prioritized SAMPLE, UPDATE: bytes, order, counters, total."""
    tb = TB(dut)
    await tb.reset()
    tb.set_stress(idle, backpressure)
    await tb.sample(LEARNERS[0], 4, True)  # EMPTY
    await tb.push(ACTORS[0], 3)
    await tb.push(ACTORS[1], 16)
    await tb.sample(LEARNERS[0], 8, False)
    await tb.sample(LEARNERS[1], 16, True)
    await tb.update(LEARNERS[0], [0, 5, 18, 40, 1], [7, 1 << 31, 0xFFFFFFFF, 3, 0])
    await tb.sample(LEARNERS[1], 4, True)
    await tb.push(ACTORS[0], 1, [0])
    await tb.sample(LEARNERS[0], 1, False)
    await tb.finish()


@cocotb.test()
@cocotb.parametrize(idle=STRESS, backpressure=STRESS)
async def test_random_workload(dut: HierarchyObject, idle: bool, backpressure: bool) -> None:
    """Random mix of PUSH / SAMPLE / UPDATE (and some bad frames) past ring wrap-around."""
    tb = TB(dut, seed=SEED * 1000 + 2 * idle + backpressure)
    await tb.reset()
    tb.set_stress(idle, backpressure)
    await random_workload(tb, int(40 * SCALE), max_batch=16)
    assert tb.records_pushed > tb.capacity, "the workload must wrap the ring"
    await tb.finish()


async def random_workload(tb: TB, ops: int, max_batch: int) -> None:
    """Send ``ops`` random requests (PUSH-heavy until the ring has wrapped)."""
    rng = tb.rng
    batches = [b for b in (1, 2, 4, 8, 16, 32, 64) if b <= max_batch]
    for n in range(ops):
        size = tb.m.read("RPL_SIZE")
        r = rng.random()
        if size == 0 or r < 0.35 or tb.records_pushed <= tb.capacity and r < 0.6:
            k = rng.randint(1, 16)
            prios = [rng.choice((0, 1, rng.getrandbits(32), rng.randint(1, 1 << 24)))
                     for _ in range(k)]
            await tb.push(rng.choice(ACTORS), k, prios)
        elif r < 0.7:
            await tb.sample(rng.choice(LEARNERS), rng.choice(batches), rng.random() < 0.6)
        elif r < 0.95:
            k = rng.randint(1, 128 if n % 3 == 0 else 12)
            idx = [rng.randrange(size) if rng.random() < 0.9 else rng.randrange(size, 1 << 32)
                   for _ in range(k)]
            prios = [rng.choice((0, rng.getrandbits(32), rng.randint(1, 1 << 24)))
                     for _ in range(k)]
            await tb.update(rng.choice(LEARNERS), idx, prios)
        else:
            await send_malformed(tb, rng.randrange(1 << 16))


@cocotb.test()
@cocotb.parametrize(idle=STRESS, backpressure=STRESS)
async def test_rate_limit(dut: HierarchyObject, idle: bool, backpressure: bool) -> None:
    """The rate limiter (protocol section 5): RPL_MIN_SIZE, then samples-per-insert ratios
    with error buffers, extreme register values; every NOT_YET answer, the counters and
    RPL_RATE_DIFF against the model, while the traffic streams (no quiescing between
    requests)."""
    tb = TB(dut, seed=SEED * 1000 + 40 + 2 * idle + backpressure)
    await tb.reset()
    tb.set_stress(idle, backpressure)
    rng, one = tb.rng, 1 << 16
    await tb.sample(LEARNERS[0], 2, False)  # EMPTY
    await tb.write("RPL_MIN_SIZE", 12)
    for _ in range(int(6 * SCALE)):
        await tb.push(rng.choice(ACTORS), rng.randint(1, 5))
        await tb.sample(rng.choice(LEARNERS), rng.choice((1, 4, 16)), rng.random() < 0.5)
    settings = [(rng.randint(0, 30), rng.choice((one, one // 2, 3 * one + rng.randrange(one))),
                 rng.choice((16 * one, 40 * one + 7, 64 * one))) for _ in range(3)]
    settings += [(0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF), (3, 0xFFFFFFFF, 0xFFFFFFFF),
                 (4, 2 * one, 24 * one)]
    for min_size, spi, err in settings:
        await tb.write("RPL_MIN_SIZE", min_size)
        await tb.write("RPL_SPI_ERROR", err)
        await tb.write("RPL_SPI", spi)
        for _ in range(int(12 * SCALE)):
            if rng.random() < 0.5:
                await tb.push(rng.choice(ACTORS), rng.randint(1, 16))
            else:
                await tb.sample(rng.choice(LEARNERS), rng.choice((1, 2, 8, 32, 64)),
                                rng.random() < 0.6)
        await tb.check_outputs()
        await tb.check_state()
    await tb.write("RPL_RESET", 1)
    await tb.sample(LEARNERS[1], 1, True)
    cnt = tb.m.counters()
    assert cnt["CNT_TX_PUSH_NOT_YET"] > 0 and cnt["CNT_TX_SAMPLE_NOT_YET"] > 0
    await tb.finish()


# ---------------------------------------------------------------------------
# malformed and unauthorized frames


def _push_msg(tb: TB, k: int = 2, worker: int = 0) -> Message:
    return push(tb.records(k), list(range(1, k + 1)), job=JOB, worker=worker, seq=tb.next_seq())


def _raw(msg: Message, m: Member) -> bytearray:
    return bytearray(frame_of(msg, m, validate=False))


def _bad_frames(tb: TB) -> list[tuple[str, bytes, int]]:
    """(expected reason, frame, ingress port) for every malformed class."""
    a, lrn = MEMBERS[0], MEMBERS[1]
    smp = sample_request(4, job=JOB, worker=1, seq=tb.next_seq())
    upd = update([0, 1], [5, 6], job=JOB, worker=1, seq=tb.next_seq())
    out: list[tuple[str, bytes, int]] = []
    good = _raw(_push_msg(tb), a)
    out.append(("BAD_LENGTH", bytes(good[:50]), a.port))  # shorter than 64 (RX counted)
    out.append(("BAD_LENGTH", bytes(good[:43]), a.port))  # too short to count in RX
    f = _raw(_push_msg(tb), a)
    struct.pack_into("!H", f, 16, len(f) - 13)
    out.append(("BAD_LENGTH", bytes(f), a.port))  # IPv4 total length
    f = _raw(smp, lrn)
    struct.pack_into("!H", f, 38, 29)
    out.append(("BAD_LENGTH", bytes(f), lrn.port))  # UDP length
    f = _raw(_push_msg(tb, 3), a)
    out.append(("BAD_LENGTH", fix_lengths(f[:-tb.record_bytes]), a.port))  # payload vs count
    out.append(("BAD_LENGTH", fix_lengths(_raw(smp, lrn) + bytes(32)), lrn.port))
    out.append(("BAD_LENGTH", fix_lengths(_raw(upd, lrn) + bytes(8)), lrn.port))
    for off, val in ((42, 2), (44, 0x60), (44, 0x40), (44, 0x80), (44, 0xF2), (60, 1),
                     (63, 0x80)):
        f = _raw(smp, lrn)
        f[off] = val
        out.append(("BAD_HEADER", bytes(f), lrn.port))  # version, flags 7:6, word 60
    for msg, m in ((_push_msg(tb), a), (upd, lrn)):
        f = _raw(msg, m)
        f[62] = 0x01
        out.append(("BAD_HEADER", bytes(f), m.port))  # word 60 on PUSH and UPDATE
    ack = Message(Opcode.PUSH_ACK, 0, JOB, 0, 0, 1, 2, 0)
    out.append(("BAD_HEADER", bytes(_raw(ack, a)), a.port))
    resp = Message(Opcode.SAMPLE_RESP, 0, JOB, 1, 0, 1, 1, 0, bytes(64 + tb.record_bytes))
    out.append(("BAD_HEADER", bytes(_raw(resp, lrn)), lrn.port))
    f = _raw(smp, lrn)
    f[45] = JOB + 1
    out.append(("BAD_JOB", bytes(f), lrn.port))
    f = _raw(_push_msg(tb), a)
    f[45] = 0
    out.append(("BAD_JOB", bytes(f), a.port))
    for cnt in (0, 17):
        msg = _push_msg(tb, 1)
        msg.count = cnt
        out.append(("BAD_COUNT", bytes(_raw(msg, a)), a.port))
    for cnt in (0, 3, 128, 65535):
        msg = sample_request(1, job=JOB, worker=1)
        msg.count = cnt
        out.append(("BAD_COUNT", bytes(_raw(msg, lrn)), lrn.port))
    msg = update([0], [1], job=JOB, worker=1)
    msg.count = 0
    out.append(("BAD_COUNT", fix_lengths(_raw(msg, lrn)[:64]), lrn.port))
    msg = update(list(range(128)), [1] * 128, job=JOB, worker=1)
    msg.count = 129
    msg.payload += bytes(8)
    out.append(("BAD_COUNT", bytes(_raw(msg, lrn)), lrn.port))
    return out


def _unauthorized(tb: TB) -> list[tuple[str, bytes, int]]:
    """(expected reason, frame, ingress port) for senders the member table refuses."""
    a, lrn, both, agg = MEMBERS
    out: list[tuple[str, bytes, int]] = []
    out.append(("UNKNOWN_WORKER", frame_of(sample_request(2, job=JOB, worker=0), a), a.port))
    out.append(("UNKNOWN_WORKER", frame_of(_push_msg(tb, 1, worker=1), lrn), lrn.port))
    out.append(("UNKNOWN_WORKER", frame_of(_push_msg(tb, 1, worker=3), agg), agg.port))
    out.append(("UNKNOWN_WORKER", frame_of(update([0], [1], job=JOB, worker=3), agg), agg.port))
    out.append(("UNKNOWN_WORKER", frame_of(sample_request(2, job=JOB, worker=5), lrn), lrn.port))
    for w in (8, 9, 0x102, 0xFFFF):
        msg = sample_request(2, job=JOB, worker=1)
        msg.worker = w
        out.append(("UNKNOWN_WORKER", frame_of(msg, lrn, validate=False), lrn.port))
    smp = sample_request(2, job=JOB, worker=2)
    out.append(("SPOOFED", frame_of(smp, both), 0x01))  # wrong ingress port
    f = bytearray(frame_of(smp, both))
    struct.pack_into("!I", f, 26, both.ip ^ 0x100)
    out.append(("SPOOFED", bytes(f), both.port))  # wrong IPv4 source
    f = bytearray(frame_of(smp, both))
    struct.pack_into("!H", f, 34, both.udp + 1)
    out.append(("SPOOFED", bytes(f), both.port))  # wrong UDP source
    f = bytearray(frame_of(_push_msg(tb, 2, worker=0), a))
    struct.pack_into("!I", f, 26, 0x0A000099)
    out.append(("SPOOFED", bytes(f), a.port))
    f = bytearray(frame_of(update([0], [1], job=JOB, worker=1), lrn))
    out.append(("SPOOFED", bytes(f), 0x40))
    return out


MALFORMED_REASONS = ("BAD_LENGTH", "BAD_HEADER", "BAD_JOB", "BAD_COUNT")
async def send_malformed(tb: TB, which: int) -> None:
    """Send malformed or unauthorized case number ``which`` (modulo the number of cases)."""
    cases = _bad_frames(tb) + _unauthorized(tb)
    reason, frame, port = cases[which % len(cases)]
    await tb.send(frame, port)


@cocotb.test()
@cocotb.parametrize(idle=STRESS, backpressure=STRESS)
async def test_malformed(dut: HierarchyObject, idle: bool, backpressure: bool) -> None:
    """Every malformed class is dropped with its reason and changes nothing."""
    tb = TB(dut)
    await tb.reset()
    tb.set_stress(idle, backpressure)
    await tb.push(ACTORS[0], 8)
    await tb.sample(LEARNERS[0], 4, True)
    for reason, frame, port in _bad_frames(tb):
        before = tb.m.counters()[f"CNT_DROP_{reason}"]
        await tb.send(frame, port)
        assert tb.m.counters()[f"CNT_DROP_{reason}"] == before + 1, f"model: not {reason}"
        # valid traffic in between shows the state did not change
        if tb.rng.random() < 0.3:
            await tb.sample(LEARNERS[1], 2, True)
    # flags bits 4 (ERROR), 5 (NOT_YET) and bits 0, 2, 3 are ignored on replay requests: accepted
    a, lrn = MEMBERS[0], MEMBERS[1]
    drops = {k: v for k, v in tb.m.counters().items() if k.startswith("CNT_DROP_")}
    for fl in (0x10, 0x1D, 0x30):
        msg = _push_msg(tb, 2)
        msg.flags = fl
        await tb.send(frame_of(msg, a, validate=False), a.port)
        smp = sample_request(2, job=JOB, worker=lrn.wid, seq=tb.next_seq(), prioritized=fl == 0x10)
        smp.flags |= fl
        await tb.send(frame_of(smp, lrn, validate=False), lrn.port)
        upd = update([0], [3], job=JOB, worker=lrn.wid, seq=tb.next_seq())
        upd.flags = fl
        await tb.send(frame_of(upd, lrn, validate=False), lrn.port)
    assert drops == {k: v for k, v in tb.m.counters().items() if k.startswith("CNT_DROP_")}
    # DISABLED: replay engine off in CTRL
    await tb.write("CTRL", 0x1)
    await tb.push(ACTORS[0], 2)
    await tb.sample(LEARNERS[0], 2, True)
    await tb.update(LEARNERS[0], [0], [1])
    await tb.write("CTRL", 0x3)
    # EMPTY: prioritized sample with a zero total, then with no records
    await tb.update(LEARNERS[0], list(range(8)), [0] * 8)
    await tb.sample(LEARNERS[0], 2, True)
    await tb.sample(LEARNERS[0], 2, False)
    await tb.write("RPL_RESET", 1)
    await tb.sample(LEARNERS[0], 2, False)
    await tb.sample(LEARNERS[1], 2, True)
    # BAD_INDEX: pairs past size are skipped one by one
    await tb.push(ACTORS[1], 5)
    await tb.update(LEARNERS[1], [4, 5, 6, 1 << 31, 2], [9, 9, 9, 9, 9])
    await tb.sample(LEARNERS[1], 8, True)
    cnt = tb.m.counters()
    for reason in MALFORMED_REASONS + ("DISABLED", "EMPTY", "BAD_INDEX"):
        assert cnt[f"CNT_DROP_{reason}"] > 0, f"no {reason} case"
    await tb.finish()


@cocotb.test()
@cocotb.parametrize(idle=STRESS, backpressure=STRESS)
async def test_unauthorized(dut: HierarchyObject, idle: bool, backpressure: bool) -> None:
    """Unknown workers, missing role bits and spoofed senders are dropped."""
    tb = TB(dut)
    await tb.reset()
    tb.set_stress(idle, backpressure)
    await tb.push(ACTORS[1], 4)
    for _, frame, port in _unauthorized(tb):
        await tb.send(frame, port)
    # member 1 has MEMBER_UDP = 0: any UDP source port is accepted
    msg = sample_request(2, job=JOB, worker=1, seq=tb.next_seq())
    f = bytearray(frame_of(msg, MEMBERS[1]))
    struct.pack_into("!H", f, 34, 5555)
    await tb.send(bytes(f), MEMBERS[1].port)
    await tb.sample(LEARNERS[1], 2, False)
    await tb.finish()


# ---------------------------------------------------------------------------
# ordering, statistics, reset, throughput


@cocotb.test()
@cocotb.parametrize(idle=STRESS, backpressure=STRESS)
async def test_ordering(dut: HierarchyObject, idle: bool, backpressure: bool) -> None:
    """Back-to-back requests take effect in arrival order (tree and record hazards)."""
    tb = TB(dut)
    await tb.reset()
    tb.set_stress(idle, backpressure)
    c = tb.capacity
    lrn = LEARNERS[0]
    # fill the ring so every PUSH overwrites records that earlier samples return
    while tb.records_pushed < c:
        await tb.push(ACTORS[0], 16)
    # half the rounds of a run with one stress axis: the four runs together
    # send as many as the two of that did
    for _ in range(max(2, round(1.5 * SCALE))):
        # UPDATE then SAMPLE: the sample must see the new priorities
        hot = tb.rng.randrange(c)
        await tb.update(lrn, [hot, hot, (hot + 1) % c], [1, 0xFFFFFFF0, 5])
        await tb.sample(lrn, 8, True)
        # SAMPLE then UPDATE then SAMPLE
        await tb.sample(lrn, 4, True)
        await tb.update(lrn, [hot], [1])
        await tb.sample(lrn, 4, True)
        # SAMPLE then PUSH over the sampled records, then SAMPLE again
        await tb.sample(lrn, 16, False)
        await tb.push(ACTORS[1], 16, [0xFFFF0000] * 16)
        await tb.sample(lrn, 8, True)
        # same leaf updated back to back (forwarding through the pipeline)
        await tb.update(lrn, [3] * 20 + [4] * 3, list(range(1, 24)))
        await tb.sample(lrn, 2, True)
    await tb.finish()


@cocotb.test()
@cocotb.parametrize(idle=STRESS, backpressure=STRESS)
async def test_update_burst(dut: HierarchyObject, idle: bool, backpressure: bool) -> None:
    """Back-to-back 128-pair UPDATEs (payload FIFO full), then samples see all of them."""
    tb = TB(dut)
    await tb.reset()
    tb.set_stress(idle, backpressure)
    await update_burst(tb)


@cocotb.test()
async def test_update_burst_lean(dut: HierarchyObject) -> None:
    """The same with the lean driver: whole beats, no gap between frames or beats."""
    tb = TB(dut, lean=True)
    await tb.reset()
    await update_burst(tb)


async def update_burst(tb: TB) -> None:
    """Fill the ring, six 128-pair UPDATEs back to back, a prioritized SAMPLE; check."""
    while tb.records_pushed < tb.capacity:
        await tb.push(ACTORS[0], 16)
    size = tb.m.read("RPL_SIZE")
    for _ in range(int(6 * SCALE)):
        await tb.update(LEARNERS[0], [tb.rng.randrange(size) for _ in range(128)],
                        [tb.rng.randint(1, 1 << 24) for _ in range(128)])
    await tb.sample(LEARNERS[1], 16, True)
    await tb.finish()


def chi2_sf(x: float, k: int) -> float:
    """Survival function of the chi-square distribution (regularized upper gamma)."""
    a, z = k / 2.0, x / 2.0
    # series for the regularized lower incomplete gamma P(a, z)
    term = total = 1.0 / a
    n = 1
    while term > total * 1e-15:
        term *= z / (a + n)
        total += term
        n += 1
    p = total * math.exp(-z + a * math.log(z) - math.lgamma(a))
    return max(0.0, 1.0 - p)


@cocotb.test()
async def test_chi_square(dut: HierarchyObject) -> None:
    """Prioritized sample frequencies follow the priorities (chi-square, p > 0.001)."""
    tb = TB(dut)
    await tb.reset()
    n_rec = 16
    prios = [(i + 1) * 4096 for i in range(n_rec)]
    await tb.push(ACTORS[0], n_rec, prios)
    batches = int(8 * SCALE)
    for _ in range(batches):
        await tb.sample(LEARNERS[1], 64, True)
    await tb.check_outputs()
    counts = [0] * n_rec
    for e in tb.expected[1:]:
        idx = struct.unpack_from("<I", e.frame, 64)[0]
        counts[idx] += 1
    n = sum(counts)
    total = sum(prios)
    stat = sum((counts[i] - n * p / total) ** 2 / (n * p / total) for i, p in enumerate(prios))
    p_value = chi2_sf(stat, n_rec - 1)
    tb.log.info("chi-square %.2f over %d samples, p = %.3f", stat, n, p_value)
    assert p_value > 0.001, f"frequencies do not follow priorities: chi2={stat:.1f} p={p_value}"
    await tb.check_state()


@cocotb.test()
async def test_reset_and_seed(dut: HierarchyObject) -> None:
    """RPL_RESET empties the memory; RPL_SEED (0 too) restarts the generator."""
    tb = TB(dut)
    await tb.reset()
    await tb.push(ACTORS[0], 12)
    await tb.write("RPL_SEED", 0x12345678)
    await tb.sample(LEARNERS[0], 8, False)
    await tb.check_outputs()
    await tb.write("RPL_RESET", 1)
    await tb.check_state()
    await tb.sample(LEARNERS[0], 4, True)  # EMPTY
    await tb.push(ACTORS[1], 5)
    await tb.write("RPL_SEED", 0)
    await tb.sample(LEARNERS[0], 8, True)
    await tb.write("CTRL", 0x80000003)  # clear the counters
    await tb.sample(LEARNERS[1], 4, False)
    await tb.finish()


@cocotb.test()
async def test_throughput(dut: HierarchyObject) -> None:
    """One sample index and one leaf update per clock once the pipeline is full."""
    tb = TB(dut)
    await tb.reset()
    mon = PipeMonitor(dut)
    c = tb.capacity
    while tb.records_pushed < c:
        await tb.push(ACTORS[0], 16)
    await tb.check_outputs()
    await tb.update(LEARNERS[0], list(range(128)) if c >= 128 else [i % c for i in range(128)],
                    [tb.rng.randint(1, 1 << 30) for _ in range(128)])
    await tb.sample(LEARNERS[0], 64, True)
    await tb.check_outputs()
    assert mon.max_update_run >= 128, f"updates: longest run {mon.max_update_run} < 128"
    assert mon.max_result_run >= 64, f"samples: longest run {mon.max_result_run} < 64"
    latency = mon.out_first_clocks[-64] - mon.in_last_clocks[-1]
    tb.log.info("sample latency %d clocks (last request beat to first response beat)", latency)
    await tb.check_state()


# ---------------------------------------------------------------------------
# soak with the lean beat driver of sim.common.tb (no BFMs)


@cocotb.test(skip=os.environ.get("RPL_SOAK") != "1")
async def test_soak(dut: HierarchyObject) -> None:
    """Long random workload through a lean driver, every reply compared with the model."""
    tb = TB(dut, seed=SEED + 77, lean=True, stall=0.2)
    await tb.reset()
    await random_workload(tb, SOAK_OPS, max_batch=64)
    await tb.finish()


# ---------------------------------------------------------------------------
# benchmark (scripts/bench_replay.py)


@cocotb.test(skip=os.environ.get("RPL_BENCH_OUT") is None)
async def test_bench(dut: HierarchyObject) -> None:
    """Throughput and latency figures; results as JSON in ``RPL_BENCH_OUT``."""
    import json

    tb = TB(dut, seed=SEED, lean=True)
    await tb.reset()
    mon = BenchMonitor(dut)
    lrn = LEARNERS[0]
    for _ in range(64):  # 1024 records
        await tb.push(ACTORS[0], 16)
    await tb.quiesce()
    out: dict[str, float] = {}

    # latency: one request on an idle engine, last request beat -> first reply beat
    for name, prio in (("prioritized", True), ("uniform", False)):
        mon.reset()
        await tb.sample(lrn, 1, prio)
        await tb.quiesce()
        out[f"sample_latency_{name}"] = mon.out_first[0] - mon.in_last[0]

    # sample indices: one batch of 64; then 16 batches back to back (output bound)
    mon.reset()
    await tb.sample(lrn, 64, True)
    await tb.quiesce()
    out["samples_per_clock"] = 64 / (mon.result_clocks[-1] - mon.result_clocks[0] + 1)
    mon.reset()
    for _ in range(16):
        await tb.sample(lrn, 64, True)
    await tb.quiesce()
    span = mon.out_beat_clocks[-1] - mon.out_beat_clocks[0] + 1
    out["resp_beats_per_clock"] = len(mon.out_beat_clocks) / span
    out["resp_samples_per_clock"] = 16 * 64 / span

    # updates: one UPDATE of 128 pairs, then 16 back to back
    mon.reset()
    size = tb.m.read("RPL_SIZE")
    await tb.update(lrn, [tb.rng.randrange(size) for _ in range(128)],
                    [tb.rng.randint(1, 1 << 24) for _ in range(128)])
    await tb.quiesce()
    out["updates_per_clock"] = 128 / (mon.update_clocks[-1] - mon.update_clocks[0] + 1)
    mon.reset()
    for _ in range(16):
        await tb.update(lrn, [tb.rng.randrange(size) for _ in range(128)],
                        [tb.rng.randint(1, 1 << 24) for _ in range(128)])
    await tb.quiesce()
    assert len(mon.update_pairs) == 16 * 128
    out["updates_per_clock_sustained"] = len(mon.update_clocks) / (
        mon.update_clocks[-1] - mon.update_clocks[0] + 1)
    await tb.check_state()
    with open(os.environ["RPL_BENCH_OUT"], "w") as f:
        json.dump(out, f)


class BenchMonitor:
    """Clock numbers of tree results, leaf updates, request last beats, reply beats."""

    def __init__(self, dut: HierarchyObject) -> None:
        self.dut = dut
        self.clock = 0
        self.reset()
        cocotb.start_soon(self._run())

    def reset(self) -> None:
        self.result_clocks: list[int] = []
        self.update_clocks: list[int] = []
        self.update_pairs: list[tuple[int, int]] = []
        self.in_last: list[int] = []
        self.out_first: list[int] = []
        self.out_beat_clocks: list[int] = []
        self._out_busy = False

    async def _run(self) -> None:
        dut = self.dut
        tree = dut.tree_inst
        while True:
            await RisingEdge(dut.clk)
            self.clock += 1
            if high(tree.r_valid):
                self.result_clocks.append(self.clock)
            if high(tree.upd_valid):
                self.update_clocks.append(self.clock)
                self.update_pairs.append((tree.upd_index.value.to_unsigned(),
                                          tree.upd_prio.value.to_unsigned()))
            if high(dut.s_axis_tvalid) and high(dut.s_axis_tready) and high(dut.s_axis_tlast):
                self.in_last.append(self.clock)
            if high(dut.m_axis_tvalid) and high(dut.m_axis_tready):
                self.out_beat_clocks.append(self.clock)
                if not self._out_busy:
                    self.out_first.append(self.clock)
                self._out_busy = not high(dut.m_axis_tlast)
