"""The replay engine testbench: :class:`TB` (the stream testbench with the golden model),
the members and their frames, the traffic drivers (random workload, malformed and
unauthorized frames) and the monitors used by ``sim/replay_engine/test_replay_engine.py``
and ``sim/replay_engine/test_replay_ddr.py``.
"""

from __future__ import annotations

import itertools
import os
import random
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import cocotb
from cocotb.handle import HierarchyObject
from cocotb.triggers import ClockCycles, FallingEdge, RisingEdge

from hostdrv.switch.reference import Egress, SwitchModel
from hostdrv.wire.consts import DESC_STACK, DESC_VALID, MAX_STACK, OFF_OPCODE, PAYLOAD_OFFSET
from hostdrv.wire.protocol import (
    Frame,
    Message,
    Opcode,
    build_frame,
    push,
    sample_request,
    update,
)
from sim.common.tb import StreamTB, high

CLK_NS = 4
SEED = int(os.environ.get("RPL_SEED", "1"))
"""Default seed of a testbench's workload generator (``RPL_SEED``)."""

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
        # the job table's carves (test_table_carve): a scheduled write (an Immediate one
        # here did not hold on Icarus)
        dut.table_carve.value = 0
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

    async def carve(self) -> None:
        """Empty the table as the switch's job table does (a ``table_carve`` pulse, protocol
        section 11) in the DUT and in the model (its own carve of job 0's table), once the
        traffic before it is done."""
        if self.expected or self.received:
            await self.quiesce()
        await FallingEdge(self.dut.clk)
        self.dut.table_carve.value = 1
        await FallingEdge(self.dut.clk)
        self.dut.table_carve.value = 0
        self.m._pages[0].carve(True)  # test introspection: the model's own carve ...
        self.m._bind(0)  # ... and the page served again (as a register write ends)

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

    async def sample(self, m: Member, batch: int, prioritized: bool, stack: int = 0) -> None:
        msg = sample_request(batch, job=JOB, worker=m.wid, seq=self.next_seq(),
                             prioritized=prioritized, stack=stack)
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
        tree = self.dut.smp_inst.tree_inst
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



STACK_ACTORS = (0b010, 0b110, 0b110, 0b010)
"""MEMBER_ROLE of members 0..3 in the stacked workload: four actors (1 and 2 learners too)."""


async def stacked_workload(tb: TB, ops: int, max_batch: int) -> None:
    """Stacked samples (protocol section 5): four actors' PUSHes interleaved in the ring (a stack
    follows its actor's chain, not the ring), the ring wrapped so overwrites break chains, k from
    0 to MAX_STACK (and aux above it: BAD_COUNT), UPDATEs, one RPL_RESET (chains restart), then
    batches of ``max_batch`` at k = MAX_STACK. Expects a reset testbench; writes MEMBER_ROLE_*."""
    for wid, role in enumerate(STACK_ACTORS):
        await tb.write(f"MEMBER_ROLE_{wid}", role)
    actors = MEMBERS[:4]
    learners = (MEMBERS[1], MEMBERS[2])
    rng = tb.rng
    batches = [b for b in (1, 2, 4, 8, 16, 32, 64) if b <= max_batch]
    await tb.sample(learners[0], 4, True, stack=4)  # EMPTY
    for n in range(ops):
        size = tb.m.read("RPL_SIZE")
        r = rng.random()
        if n == ops // 2:
            await tb.write("RPL_RESET", 1)
        elif size == 0 or r < 0.5:
            k = rng.choice((1, 1, 1, 2, 3, 5, 8))
            await tb.push(rng.choice(actors), k)
        elif r < 0.85:
            await tb.sample(rng.choice(learners), rng.choice(batches), rng.random() < 0.6,
                            stack=rng.choice((0, 1, 2, 3, 4, 4, 5, MAX_STACK)))
        elif r < 0.93:
            idx = [rng.randrange(size) for _ in range(rng.randint(1, 6))]
            await tb.update(rng.choice(learners), idx, [rng.randint(0, 1 << 20) for _ in idx])
        else:
            msg = sample_request(2, job=JOB, worker=1, seq=tb.next_seq())
            msg.aux = rng.choice((MAX_STACK + 1, 255, 0xFFFFFFFF))
            await tb.send(frame_of(msg, MEMBERS[1], validate=False), MEMBERS[1].port)
    # past the ring's wrap whatever the size (overwrites break chains), interleaved
    while tb.records_pushed <= tb.capacity + 8:
        for m in actors:
            await tb.push(m, 2)
    await tb.sample(learners[1], max_batch, False, stack=MAX_STACK)
    await tb.sample(learners[0], max_batch, True, stack=MAX_STACK)


def stack_coverage(tb: TB) -> tuple[int, int]:
    """(stack positions answered with a chain record, positions where the chain broke) among the
    model's SAMPLE_RESP frames so far (descriptor words ``valid`` and ``stack``)."""
    valid = broken = 0
    for e in tb.expected:
        f = e.frame
        if len(f) > PAYLOAD_OFFSET + DESC_VALID and f[OFF_OPCODE] == Opcode.SAMPLE_RESP:
            stack, = struct.unpack_from("<I", f, PAYLOAD_OFFSET + DESC_STACK)
            ok, = struct.unpack_from("<I", f, PAYLOAD_OFFSET + DESC_VALID)
            if stack:
                valid += ok
                broken += 1 - ok
    return valid, broken


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




# ---------------------------------------------------------------------------
# malformed and unauthorized frames


def push_msg(tb: TB, k: int = 2, worker: int = 0) -> Message:
    """A PUSH of ``k`` fresh records (priorities 1..k) with the testbench's next sequence number."""
    return push(tb.records(k), list(range(1, k + 1)), job=JOB, worker=worker, seq=tb.next_seq())


def raw_frame(msg: Message, m: Member) -> bytearray:
    """``msg`` from member ``m`` as a mutable frame, not validated (to be malformed)."""
    return bytearray(frame_of(msg, m, validate=False))


def bad_frames(tb: TB) -> list[tuple[str, bytes, int]]:
    """(expected reason, frame, ingress port) for every malformed class."""
    a, lrn = MEMBERS[0], MEMBERS[1]
    smp = sample_request(4, job=JOB, worker=1, seq=tb.next_seq())
    upd = update([0, 1], [5, 6], job=JOB, worker=1, seq=tb.next_seq())
    out: list[tuple[str, bytes, int]] = []
    good = raw_frame(push_msg(tb), a)
    out.append(("BAD_LENGTH", bytes(good[:50]), a.port))  # shorter than 64 (RX counted)
    out.append(("BAD_LENGTH", bytes(good[:43]), a.port))  # too short to count in RX
    f = raw_frame(push_msg(tb), a)
    struct.pack_into("!H", f, 16, len(f) - 13)
    out.append(("BAD_LENGTH", bytes(f), a.port))  # IPv4 total length
    f = raw_frame(smp, lrn)
    struct.pack_into("!H", f, 38, 29)
    out.append(("BAD_LENGTH", bytes(f), lrn.port))  # UDP length
    f = raw_frame(push_msg(tb, 3), a)
    out.append(("BAD_LENGTH", fix_lengths(f[:-tb.record_bytes]), a.port))  # payload vs count
    out.append(("BAD_LENGTH", fix_lengths(raw_frame(smp, lrn) + bytes(32)), lrn.port))
    out.append(("BAD_LENGTH", fix_lengths(raw_frame(upd, lrn) + bytes(8)), lrn.port))
    for off, val in ((42, 2), (44, 0x60), (44, 0x40), (44, 0x80), (44, 0xF2), (60, 1),
                     (63, 0x80)):
        f = raw_frame(smp, lrn)
        f[off] = val
        out.append(("BAD_HEADER", bytes(f), lrn.port))  # version, flags 7:6, word 60
    for msg, m in ((push_msg(tb), a), (upd, lrn)):
        f = raw_frame(msg, m)
        f[62] = 0x01
        out.append(("BAD_HEADER", bytes(f), m.port))  # word 60 on PUSH and UPDATE
    ack = Message(Opcode.PUSH_ACK, 0, JOB, 0, 0, 1, 2, 0)
    out.append(("BAD_HEADER", bytes(raw_frame(ack, a)), a.port))
    resp = Message(Opcode.SAMPLE_RESP, 0, JOB, 1, 0, 1, 1, 0, bytes(64 + tb.record_bytes))
    out.append(("BAD_HEADER", bytes(raw_frame(resp, lrn)), lrn.port))
    f = raw_frame(smp, lrn)
    f[45] = JOB + 1
    out.append(("BAD_JOB", bytes(f), lrn.port))
    f = raw_frame(push_msg(tb), a)
    f[45] = 0
    out.append(("BAD_JOB", bytes(f), a.port))
    for cnt in (0, 17):
        msg = push_msg(tb, 1)
        msg.count = cnt
        out.append(("BAD_COUNT", bytes(raw_frame(msg, a)), a.port))
    for cnt in (0, 3, 128, 65535):
        msg = sample_request(1, job=JOB, worker=1)
        msg.count = cnt
        out.append(("BAD_COUNT", bytes(raw_frame(msg, lrn)), lrn.port))
    msg = update([0], [1], job=JOB, worker=1)
    msg.count = 0
    out.append(("BAD_COUNT", fix_lengths(raw_frame(msg, lrn)[:64]), lrn.port))
    msg = update(list(range(128)), [1] * 128, job=JOB, worker=1)
    msg.count = 129
    msg.payload += bytes(8)
    out.append(("BAD_COUNT", bytes(raw_frame(msg, lrn)), lrn.port))
    return out


def unauthorized_frames(tb: TB) -> list[tuple[str, bytes, int]]:
    """(expected reason, frame, ingress port) for senders the member table refuses."""
    a, lrn, both, agg = MEMBERS
    out: list[tuple[str, bytes, int]] = []
    out.append(("UNKNOWN_WORKER", frame_of(sample_request(2, job=JOB, worker=0), a), a.port))
    out.append(("UNKNOWN_WORKER", frame_of(push_msg(tb, 1, worker=1), lrn), lrn.port))
    out.append(("UNKNOWN_WORKER", frame_of(push_msg(tb, 1, worker=3), agg), agg.port))
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
    f = bytearray(frame_of(push_msg(tb, 2, worker=0), a))
    struct.pack_into("!I", f, 26, 0x0A000099)
    out.append(("SPOOFED", bytes(f), a.port))
    f = bytearray(frame_of(update([0], [1], job=JOB, worker=1), lrn))
    out.append(("SPOOFED", bytes(f), 0x40))
    return out


MALFORMED_REASONS = ("BAD_LENGTH", "BAD_HEADER", "BAD_JOB", "BAD_COUNT")


async def send_malformed(tb: TB, which: int) -> None:
    """Send malformed or unauthorized case number ``which`` (modulo the number of cases)."""
    cases = bad_frames(tb) + unauthorized_frames(tb)
    reason, frame, port = cases[which % len(cases)]
    await tb.send(frame, port)



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
        tree = dut.smp_inst.tree_inst
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
