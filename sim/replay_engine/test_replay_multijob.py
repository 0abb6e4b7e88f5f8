"""cocotb tests of the replay engine built with several jobs (``JOBS`` > 1, docs/protocol.md
section 11) against the golden model built with as many (``SwitchModel(jobs=J)``).
``tests/test_replay_engine.py`` builds the engine with ``JOBS`` = 4, C = 64 and R = 128 and
runs this module (``RPL_JOBS`` names J).

The testbench plays the switch's job table (``nrl_axil_split``, tested on its own), as
``sim/grad_agg/test_grad_agg_multijob.py`` does: the job registers (``JOB_ID``,
``JOB_ENABLE``, ``JOB_RPL_*``) are written into the model, which judges them, and its pages
drive the engine's ``job_*`` inputs; a job whose table the model carves anew (a ``JOB_RPL_*``
write of the job, a ``JOB_ENABLE`` write changing its bit) has its bit of ``table_carve``
pulsed in the clock its new row appears, as the split pulses it. Every other register is
written through the engine's AXI4-Lite port at the job's page (``regmap.job_address``) and
into the model at the same job.

Tests:

* ``test_jobs``: ``RPL_CARVINGS`` carvings of the record memory, each of 3 or 4 jobs with
  distinct ids (a job other than job 0 sometimes with id 0), tables of distinct capacities
  (powers of two at aligned, disjoint bases; one job without a table in every third carving),
  records of 64 and 128 bytes, members, generator seeds and rate limiters of their own (one
  job's limiter refuses while the others sample); interleaved PUSH, uniform, prioritized and
  stacked SAMPLE_REQ and UPDATE (indices past the size), NOT_YET answers; cross-job spoofing
  (a member of one job sending with another's id), ids no enabled job has, a PUSH with the
  other record size, unknown workers, wrong ports, frames too short to name a job, bad
  counts. Then, while the other jobs' frames stream (none naming the job written), one
  job's table carved anew (its capacity, base or record size), emptied (RPL_RESET) and
  reseeded (RPL_SEED), and a job disabled; on a quiet engine the same to jobs at random, the
  job re-enabled and another's id changed, a carved job's requests sent right after its
  carve (while its table empties); the other jobs keep their records. Every output frame
  byte for byte and in order, and after each phase every job's counters and status
  registers read at its page, against the model (``RPL_CARVINGS`` = 6, ``RPL_JOB_OPS`` =
  160: about 3500 requests and 8600 replies, 20 s on Verilator).

With ``RPL_DDR`` = 1 (an engine built with ``REC_STORE`` = 1) the records live in a
cocotbext-axi RAM behind the engine's AXI4 master (``LatencyRam`` of
``sim/replay_engine/test_replay_ddr.py``: latencies and random pauses on every channel): each
job's records are written and read at its own size (up to two 4 KB bursts), and after each
phase every record a table holds is also checked in place (table record i at (``JOB_RPL_BASE``
+ i) times the build's power-of-two stride).
"""

from __future__ import annotations

import os
import random
import struct
from dataclasses import dataclass

import cocotb
from cocotb.handle import HierarchyObject
from cocotb.triggers import ClockCycles, FallingEdge

from hostdrv.switch.reference import SwitchModel
from hostdrv.switch.reference.jobs import TABLE_SHAPE
from hostdrv.wire import regmap
from hostdrv.wire.consts import (
    MAX_FRAME_LEN,
    MAX_PUSH_RECORDS,
    MAX_STACK,
    OFF_JOB,
    PAYLOAD_OFFSET,
    ROLE_ACTOR,
    ROLE_LEARNER,
    ROLE_WORKER,
    SPI_ONE,
)
from hostdrv.wire.protocol import HEADER, Message, push, sample_request, update
from sim.common.tb import AxiResp, StreamTB
from sim.replay_engine.replay_engine_tb import (
    REPLAY_COUNTERS,
    SEED,
    STATE_REGS,
    TB,
    Member,
    frame_of,
    stack_coverage,
)
from sim.replay_engine.test_replay_ddr import (
    RD_LAT,
    WR_LAT,
    LatencyRam,
    record_stride,
    writes_answered,
)

JOBS = int(os.environ.get("RPL_JOBS", "1"))
DDR = os.environ.get("RPL_DDR") == "1"
"""The engine keeps its records in AXI memory (``REC_STORE`` = 1): a RAM model answers."""
CARVINGS = int(os.environ.get("RPL_CARVINGS", "6"))
"""Carvings :func:`test_jobs` plays (each: traffic, a table re-carved, a job leaving)."""
OPS = int(os.environ.get("RPL_JOB_OPS", "160"))
"""Requests of the first traffic phase of a carving (the later phases send fewer)."""
WRITE_CLOCKS = 8
"""Clocks a job table write takes at least in the switch (AXI handshake, five judging clocks):
the testbench's pulses come no closer together than the split's."""
STRESSES = ((False, False), (True, True), (False, True), (True, False))
"""(idle, backpressure) of carving c: ``STRESSES[c % 4]``."""
MEMBER_FIELDS = ("PORT", "IP", "UDP", "ROLE")


@dataclass(frozen=True)
class JobMember(Member):
    """A member of one job's table: its addresses are no other job's member's."""

    job: int = 0

    @property
    def mac(self) -> bytes:
        return bytes([0x02, 0x00, 0x00, 0x20 + self.job, 0x10, self.wid])


@dataclass(frozen=True)
class Share:
    """A job's id and table: ``cap`` records of ``record`` bytes from record ``base``."""

    ident: int
    base: int
    cap: int
    record: int


def describe(frame: bytes, port: int) -> str:
    """An input frame in a line: its length, port and header fields."""
    if len(frame) < PAYLOAD_OFFSET:
        named = f", job byte {frame[OFF_JOB]}" if len(frame) > OFF_JOB else ""
        return f"{len(frame)}-byte frame from port {port:#x}{named}"
    _, op, flags, job, worker, _, seq, count, aux, _ = HEADER.unpack_from(frame, 42)
    return (f"{len(frame)}-byte frame from port {port:#x}: opcode {op} flags {flags:#x} job "
            f"{job} worker {worker} seq {seq} count {count} aux {aux}")


class JobsTB(TB):
    """The replay testbench with the job table of a ``JOBS``-job switch in the model."""

    def __init__(self, dut: HierarchyObject, seed: int) -> None:
        super().__init__(dut, seed=seed)
        self.jobs = JOBS
        self.ram: LatencyRam | None = None
        if DDR:
            cap, rb = int(dut.CAPACITY.value), int(dut.RECORD_BYTES.value)
            self.ram = LatencyRam(dut, cap * record_stride(rb), RD_LAT, WR_LAT)
        self.members: dict[int, tuple[JobMember, ...]] = {}
        self.dirty = False  # frames sent since the last quiesce
        self.in_flight: set[int] = set()  # the job bytes of those frames
        self.causes: list[str] = []  # per expected frame: the input that caused it

    # -- set up --------------------------------------------------------------
    async def reset(self, cycles: int = 8, after: int = 4) -> None:
        """Reset with the model's job table on the inputs (job 0 owning everything); no
        job owns aggregation slots (their ranges would keep jobs from being enabled)."""
        dut = self.dut
        self.model = SwitchModel(capacity=int(dut.CAPACITY.value),
                                 record_bytes=int(dut.RECORD_BYTES.value), jobs=self.jobs)
        for j in range(self.jobs):
            self.model.write("JOB_SLOT_COUNT", 0, job=j)
        self._drive_table()
        await StreamTB.reset(self, cycles, after)
        self.capacity = await self.read("RPL_CAPACITY")
        self.record_bytes = await self.read("RPL_RECORD_BYTES")
        assert self.capacity == self.m.read("RPL_CAPACITY"), self.capacity
        assert self.record_bytes == self.m.read("RPL_RECORD_BYTES"), self.record_bytes
        # the sum tree clears itself after reset: C/2 clocks
        await ClockCycles(dut.clk, self.capacity // 2 + 8)

    @property
    def record_sizes(self) -> list[int]:
        return list(range(64, self.record_bytes + 1, 64))

    def regs(self, job: int) -> dict[str, int]:
        return self.m._pages[job].regs  # test introspection: the model's job table

    def ident(self, job: int) -> int:
        return self.regs(job)["JOB_ID"]

    def cap(self, job: int) -> int:
        return self.regs(job)["JOB_RPL_CAP"]

    def record(self, job: int) -> int:
        return self.regs(job)["JOB_RPL_RECORD"]

    def most(self, job: int) -> int:
        """Records a PUSH of job ``job`` carries at most: 16, fewer where they would not fit a
        frame of 65535 bytes (records over 3.5 KB)."""
        return max(1, min(MAX_PUSH_RECORDS, (MAX_FRAME_LEN - PAYLOAD_OFFSET) // self.record(job)))

    def enabled_ids(self) -> set[int]:
        on = self.m.read("JOB_ENABLE")
        return {self.ident(j) for j in range(self.jobs) if on >> j & 1}

    def _drive_table(self) -> None:
        """The engine's job_* inputs from the model's pages (as nrl_axil_split drives them)."""
        regs = [self.regs(j) for j in range(self.jobs)]
        dut = self.dut
        dut.job_id.value = sum(r["JOB_ID"] << 8 * j for j, r in enumerate(regs))
        dut.job_enable.value = regs[0]["JOB_ENABLE"]
        dut.job_rpl_base.value = sum(r["JOB_RPL_BASE"] << 32 * j for j, r in enumerate(regs))
        dut.job_rpl_cap.value = sum(r["JOB_RPL_CAP"] << 32 * j for j, r in enumerate(regs))
        dut.job_rpl_record.value = sum(r["JOB_RPL_RECORD"] << 14 * j for j, r in enumerate(regs))

    async def write_job(self, name: str, value: int, job: int, *, hot: bool = False) -> bool:
        """Write ``name`` of job ``job`` once the frames before it are done (``hot``: while
        they stream, none of them naming a job the write changes): a job-table register into
        the model and onto the inputs (with the carve pulse of the tables the model carved),
        any other through the engine's page ``job`` and into the model (the response the
        model's verdict). False when the model refused it."""
        if hot:
            changed = self.m.read("JOB_ENABLE") ^ value if name == "JOB_ENABLE" else 1 << job
            busy = {self.ident(j) for j in range(self.jobs) if changed >> j & 1} & self.in_flight
            assert not busy, f"{name} of job {job} written while frames of id {busy} stream"
        elif self.dirty:
            await self.quiesce()
        if not name.startswith("JOB_"):
            try:
                self.m.write(name, value, job=job)
                ok = True
            except ValueError:
                ok = False
            resp = await self.write_resp(regmap.job_address(name, job), value)
            assert (resp == AxiResp.OKAY) == ok, f"write {name} of job {job} = {value:#x}: {resp!r}"
            return ok
        before = self.m.read("JOB_ENABLE")
        try:
            self.m.write(name, value, job=job)
        except ValueError:
            return False
        carve = (before ^ self.m.read("JOB_ENABLE") if name == "JOB_ENABLE"
                 else 1 << job if name in TABLE_SHAPE else 0)
        await FallingEdge(self.dut.clk)
        self._drive_table()
        self.dut.table_carve.value = carve
        await FallingEdge(self.dut.clk)
        self.dut.table_carve.value = 0
        await ClockCycles(self.dut.clk, WRITE_CLOCKS)
        return True

    async def read_job(self, name: str, job: int) -> int:
        assert self.axil is not None
        return int(await self.axil.read_dword(regmap.job_address(name, job)))

    async def carve_jobs(self, shares: dict[int, Share]) -> None:
        """Every job disabled, then each job of ``shares`` given its id and table, and the
        jobs of ``shares`` enabled (the others keep their old rows, disabled)."""
        assert await self.write_job("JOB_ENABLE", 0, 0)
        for j, s in shares.items():
            for name, value in (("JOB_RPL_CAP", 0), ("JOB_RPL_BASE", s.base),
                                ("JOB_RPL_CAP", s.cap), ("JOB_RPL_RECORD", s.record),
                                ("JOB_ID", s.ident)):
                assert await self.write_job(name, value, j), f"job {j}: {name} = {value}"
        assert await self.write_job("JOB_ENABLE", sum(1 << j for j in shares), 0)
        self.log.info("carved %s", shares)

    async def configure(self, job: int, members: tuple[JobMember, ...], limited: bool) -> None:
        """Job ``job``'s member table (``members``, every other entry empty), a seed of its
        own and its rate limiter: ``limited`` a min size and a samples-per-insert ratio with
        a small error buffer, otherwise none."""
        self.members[job] = members
        by_wid = {m.wid: m for m in members}
        for wid in range(8):
            m = by_wid.get(wid)
            values = (m.port, m.ip, m.udp, m.role) if m else (0, 0, 0, 0)
            for field, value in zip(MEMBER_FIELDS, values, strict=True):
                assert await self.write_job(f"MEMBER_{field}_{wid}", value, job)
        rng, cap = self.rng, self.cap(job)
        if limited:
            limiter = (rng.randint(2, max(2, cap // 2)), rng.choice((SPI_ONE // 2, SPI_ONE,
                                                                      2 * SPI_ONE)),
                       rng.choice((4, 8)) * SPI_ONE)
        else:
            limiter = (rng.choice((0, 1)), 0, 0)
        for name, value in zip(("RPL_MIN_SIZE", "RPL_SPI", "RPL_SPI_ERROR"), limiter,
                               strict=True):
            assert await self.write_job(name, value, job)
        seed = rng.choice((0, rng.getrandbits(32)))
        assert await self.write_job("RPL_SEED", seed, job)

    # -- traffic -------------------------------------------------------------
    async def send(self, frame: bytes, port: int) -> None:
        """Send one frame (the model's outputs expected, their cause noted)."""
        self.dirty = True
        if len(frame) > OFF_JOB:
            self.in_flight.add(frame[OFF_JOB])
        n = len(self.expected)
        await super().send(frame, port)
        self.causes.extend([describe(frame, port)] * (len(self.expected) - n))

    async def send_msg(self, msg: Message, m: JobMember, *, validate: bool = True,
                       port: int | None = None) -> None:
        await self.send(frame_of(msg, m, validate=validate), m.port if port is None else port)

    def job_records(self, job: int, k: int, rb: int) -> list[bytes]:
        out = []
        for _ in range(k):
            self.records_pushed += 1
            head = struct.pack("<IIB", self.records_pushed, self.rng.getrandbits(32), job)
            out.append(head + self.rng.randbytes(rb - len(head)))
        return out

    def prios(self, k: int) -> list[int]:
        rng = self.rng
        return [rng.choice((0, 1, rng.randint(1, 1 << 20), rng.getrandbits(32)))
                for _ in range(k)]

    def push_of(self, m: JobMember, k: int, *, ident: int | None = None,
                rb: int | None = None) -> Message:
        """A PUSH of ``k`` records of ``rb`` bytes (the job's size) naming ``ident`` (the
        member's job's id)."""
        return push(self.job_records(m.job, k, self.record(m.job) if rb is None else rb),
                    self.prios(k), job=self.ident(m.job) if ident is None else ident,
                    worker=m.wid, seq=self.next_seq())

    def sample_of(self, m: JobMember, batch: int, prioritized: bool, stack: int = 0, *,
                  ident: int | None = None) -> Message:
        return sample_request(batch, job=self.ident(m.job) if ident is None else ident,
                              worker=m.wid, seq=self.next_seq(), prioritized=prioritized,
                              stack=stack)

    # -- checks --------------------------------------------------------------
    async def quiesce(self) -> None:
        """Every frame sent answered and compared (the input of a wrong one named)."""
        try:
            await super().quiesce()
        except AssertionError as e:
            cause = self.causes[self.received] if self.received < len(self.causes) else "?"
            raise AssertionError(f"{e}\ncaused by {cause}") from e
        self.dirty = False
        self.in_flight.clear()

    async def check_jobs(self) -> None:
        """Every job's counters and status registers, read at its page, equal the model's."""
        await self.quiesce()
        for j in range(self.jobs):
            cnt = self.m.counters(j)
            other = {n: v for n, v in cnt.items() if v and n not in REPLAY_COUNTERS}
            assert not other, f"job {j}: the model counted {other} in a replay-only test"
            got = {n: await self.read_job(n, j) for n in REPLAY_COUNTERS}
            diff = {n: (got[n], cnt[n]) for n in REPLAY_COUNTERS if got[n] != cnt[n]}
            assert not diff, f"job {j}: counters (dut, model) differ: {diff}"
            state = {n: (await self.read_job(n, j), self.m.read(n, job=j)) for n in STATE_REGS}
            diff = {n: (f"{g:#x}", f"{w:#x}") for n, (g, w) in state.items() if g != w}
            assert not diff, f"job {j}: registers (dut, model) differ: {diff}"
            self.log.info("job %d: size %d of %d, counters %s", j, state["RPL_SIZE"][1],
                          self.cap(j), {k[4:]: v for k, v in cnt.items() if v})
        if self.ram is not None:
            await self.check_memory()

    async def check_memory(self) -> None:
        """Once every write is answered: each enabled job's records in the AXI RAM, table
        record i at (``JOB_RPL_BASE`` + i) times the stride (R rounded up to a power of two),
        ``JOB_RPL_RECORD`` bytes of it, as the model's table holds them."""
        assert self.ram is not None
        await writes_answered(self.dut)
        stride = record_stride(self.record_bytes)
        for j in range(self.jobs):
            table = self.m._pages[j].table  # test introspection: the job's table
            if table is None or not self.m.read("JOB_ENABLE") >> j & 1:
                continue
            base = self.regs(j)["JOB_RPL_BASE"]
            for i in range(table.size):
                want = bytes(table.records[i * table.rb:(i + 1) * table.rb])
                got = self.ram.read((base + i) * stride, table.rb)
                assert got == want, f"job {j} record {i}: memory at {(base + i) * stride:#x} differs"

    async def check_members(self) -> None:
        """Every job's member table reads back at its page as the model holds it."""
        for j in range(self.jobs):
            for wid in range(8):
                for field in MEMBER_FIELDS:
                    name = f"MEMBER_{field}_{wid}"
                    got, want = await self.read_job(name, j), self.m.read(name, job=j)
                    assert got == want, f"job {j} {name}: dut {got:#x}, model {want:#x}"


def plan_shares(rng: random.Random, active: list[int], capacity: int, sizes: list[int],
                no_table: bool) -> dict[int, Share]:
    """Distinct ids and tables for ``active``: distinct power-of-two capacities placed from
    the largest down (so every base is a multiple of its capacity) from one end of the record
    memory or the other, both record sizes, and with ``no_table`` one job's capacity 0."""
    ids = rng.sample(range(256), len(active))
    if 0 not in ids and rng.random() < 0.5:  # id 0 (a frame's bytes past its end), not job 0's
        ids[rng.randrange(len(ids))] = 0
    caps = sorted(rng.sample([1 << i for i in range(2, capacity.bit_length() - 1)],
                             len(active)), reverse=True)
    order = rng.sample(active, len(active))
    mirror = rng.random() < 0.5
    records = [rng.choice(sizes) for _ in active]
    if len(sizes) > 1 and len(set(records)) == 1:
        records[0] = next(s for s in sizes if s != records[0])
    empty = rng.choice(order) if no_table else -1
    shares, base = {}, 0
    for k, (j, cap) in enumerate(zip(order, caps, strict=True)):
        if j == empty:
            shares[j] = Share(ids[k], rng.randrange(0, capacity, 4), 0, records[k])
            continue
        shares[j] = Share(ids[k], capacity - base - cap if mirror else base, cap, records[k])
        base += cap
    return dict(sorted(shares.items()))


def make_members(rng: random.Random, job: int, carving: int) -> tuple[JobMember, ...]:
    """3 to 5 members of job ``job``: an actor, a learner, and actors, learners, both or
    aggregation workers; ports at random, IPs of the job and carving alone."""
    n = rng.randint(3, 5)
    wids = sorted(rng.sample(range(8), n))
    roles = [ROLE_ACTOR, ROLE_LEARNER] + [
        rng.choice((ROLE_ACTOR, ROLE_LEARNER, ROLE_ACTOR | ROLE_LEARNER, ROLE_WORKER))
        for _ in range(n - 2)]
    rng.shuffle(roles)
    out = []
    for wid, role in zip(wids, roles, strict=True):
        src = 40000 + 100 * job + wid
        ip = 0x0A000000 | (carving + 1) << 16 | (job + 1) << 8 | (wid + 2)
        out.append(JobMember(wid, 1 << rng.randrange(8), ip, rng.choice((0, src)), role, src,
                             job))
    return tuple(out)


def with_role(members: tuple[JobMember, ...], role: int) -> list[JobMember]:
    return [m for m in members if m.role & role]


async def adversarial(tb: JobsTB, job: int, exclude: int | None) -> None:
    """One frame the checks refuse (or another job judges), from a member of ``job``; none
    naming job ``exclude``'s id."""
    rng = tb.rng
    me = tb.members[job]
    m = rng.choice(me)
    others = [k for k in tb.members if k not in (job, exclude)]
    kind = rng.randrange(7)
    if kind == 0 and others:
        # cross-job spoofing: another job's id on a frame of the right shape for it; its
        # member table judges the sender (the same member id there, or none)
        k = rng.choice(others)
        theirs = {t.wid for t in tb.members[k]}
        common = [x for x in me if x.wid in theirs]
        if common and rng.random() < 0.7:
            m = rng.choice(common)
        if rng.random() < 0.5:
            msg = tb.sample_of(m, rng.choice((1, 4)), rng.random() < 0.5, ident=tb.ident(k))
        else:
            msg = tb.push_of(m, rng.randint(1, 4), ident=tb.ident(k), rb=tb.record(k))
        await tb.send_msg(msg, m)
    elif kind <= 1:
        # an id no enabled job has (a disabled job's, a retired one, any other): BAD_JOB
        taken = tb.enabled_ids() | ({tb.ident(exclude)} if exclude is not None else set())
        ident = rng.choice([i for i in range(256) if i not in taken])
        await tb.send_msg(tb.sample_of(m, 2, True, ident=ident), m)
    elif kind == 2:
        # a PUSH of the other record size (another job's): BAD_LENGTH
        actor = rng.choice(with_role(me, ROLE_ACTOR))
        rb = rng.choice([s for s in tb.record_sizes if s != tb.record(job)] or [64 + tb.record(job)])
        await tb.send_msg(tb.push_of(actor, rng.randint(1, 3), rb=rb), actor)
    elif kind == 3:
        # no such member, or a member without the role: UNKNOWN_WORKER
        if not m.role & ROLE_LEARNER:
            await tb.send_msg(tb.sample_of(m, 2, False), m)
        elif not m.role & ROLE_ACTOR:
            await tb.send_msg(tb.push_of(m, 2), m)
        else:
            msg = tb.sample_of(m, 2, True)
            msg.worker = rng.choice([w for w in range(8) if w not in {x.wid for x in me}]
                                    + [8, 0x1234])
            await tb.send_msg(msg, m, validate=False)
    elif kind == 4:
        # too short: BAD_LENGTH, in job 0's page when too short to name a job
        frame = frame_of(tb.sample_of(m, 1, True), m)[:rng.randint(42, 49)]
        await tb.send(frame, m.port)
    elif kind == 5:
        # a stack deeper than MAX_STACK or a batch not a power of two: BAD_COUNT
        msg = tb.sample_of(m, 2, True)
        if rng.random() < 0.5:
            msg.aux = MAX_STACK + 1
        else:
            msg.count = 3
        await tb.send_msg(msg, m, validate=False)
    else:
        # a member's frame from another port: SPOOFED (or accepted: the same port)
        learner = rng.choice(with_role(me, ROLE_LEARNER))
        await tb.send_msg(tb.sample_of(learner, 1, False), learner, port=1 << rng.randrange(8))


async def traffic(tb: JobsTB, n: int, exclude: int | None = None) -> None:
    """``n`` requests, each from a job of this carving at random (a disabled one's too; not
    job ``exclude``, nor naming its id): PUSHes of 1 .. 16 records, uniform, prioritized and
    stacked samples, UPDATEs with some indices past the size, and adversarial frames."""
    rng = tb.rng
    jobs = [j for j in sorted(tb.members) if j != exclude]
    for _ in range(n):
        j = rng.choice(jobs)
        me = tb.members[j]
        r = rng.random()
        if r < 0.36:
            actor = rng.choice(with_role(me, ROLE_ACTOR))
            await tb.send_msg(tb.push_of(actor, rng.randint(1, tb.most(j))), actor)
        elif r < 0.68:
            learner = rng.choice(with_role(me, ROLE_LEARNER))
            stack = rng.choice((0, 0, 0, 1, 2, 3, 4, MAX_STACK))
            batch = rng.choice([b for b in (1, 2, 4, 8, 16) if b * max(stack, 1) <= 32])
            await tb.send_msg(tb.sample_of(learner, batch, rng.random() < 0.6, stack), learner)
        elif r < 0.84:
            learner = rng.choice(with_role(me, ROLE_LEARNER))
            size, cap = tb.m.read("RPL_SIZE", job=j), tb.cap(j)
            k = 128 if rng.random() < 0.05 else rng.randint(1, 12)
            idx = [rng.randrange(size) if size and rng.random() < 0.85 else
                   rng.choice((size, size + rng.randrange(8), cap, 1 << 31, 0xFFFFFFFF))
                   for _ in range(k)]
            msg = update(idx, tb.prios(k), job=tb.ident(j), worker=learner.wid,
                         seq=tb.next_seq())
            await tb.send_msg(msg, learner)
        else:
            await adversarial(tb, j, exclude)


async def burst(tb: JobsTB, job: int) -> None:
    """Job ``job``'s requests back to back: a PUSH, a prioritized SAMPLE_REQ, an UPDATE, a
    uniform stacked SAMPLE_REQ (sent right after its table was carved: while it empties)."""
    rng, me = tb.rng, tb.members[job]
    actor = rng.choice(with_role(me, ROLE_ACTOR))
    learner = rng.choice(with_role(me, ROLE_LEARNER))
    await tb.send_msg(tb.push_of(actor, rng.randint(1, tb.most(job))), actor)
    await tb.send_msg(tb.sample_of(learner, 4, True), learner)
    idx = [rng.randrange(max(1, tb.cap(job))) for _ in range(4)]
    await tb.send_msg(update(idx, tb.prios(4), job=tb.ident(job), worker=learner.wid,
                             seq=tb.next_seq()), learner)
    await tb.send_msg(tb.sample_of(learner, 2, False, 4), learner)


async def reshape(tb: JobsTB, job: int, hot: bool = False) -> None:
    """Carve job ``job``'s table anew while it is enabled (``hot``: while the frames sent
    stream, none of them job ``job``'s): half its capacity (and perhaps moved into the upper
    half of its old range) or the other record size."""
    rng, cap, base = tb.rng, tb.cap(job), tb.regs(job)["JOB_RPL_BASE"]
    if cap >= 8 and rng.random() < 0.6:
        assert await tb.write_job("JOB_RPL_CAP", cap // 2, job, hot=hot)
        if rng.random() < 0.5:
            assert await tb.write_job("JOB_RPL_BASE", base + cap // 2, job, hot=hot)
    else:
        rb = rng.choice([s for s in tb.record_sizes if s != tb.record(job)] or [tb.record(job)])
        assert await tb.write_job("JOB_RPL_RECORD", rb, job, hot=hot)
    tb.log.info("job %d re-carved: base %d cap %d record %d", job,
                tb.regs(job)["JOB_RPL_BASE"], tb.cap(job), tb.record(job))


@cocotb.test()
async def test_jobs(dut: HierarchyObject) -> None:
    """Several jobs' tables on one engine, isolated and exact (see the module docstring)."""
    tb = JobsTB(dut, seed=SEED * 1000 + 600)
    await tb.reset()
    assert tb.jobs > 1, "test_jobs needs an engine built with JOBS > 1 (RPL_JOBS)"
    rng = tb.rng
    if tb.ram is not None:
        tb.ram.set_pauses(random.Random(rng.getrandbits(32)), 0.2)
    for c in range(CARVINGS):
        tb.set_stress(*STRESSES[c % len(STRESSES)])
        active = sorted(rng.sample(range(tb.jobs), tb.jobs - c % 2 if tb.jobs > 3 else tb.jobs))
        shares = plan_shares(rng, active, tb.capacity, tb.record_sizes, no_table=c % 3 == 1)
        await tb.carve_jobs(shares)
        tb.members = {}
        limited = rng.choice([j for j in active if shares[j].cap])
        for j in active:
            await tb.configure(j, make_members(rng, j, c), limited=j == limited)
        await tb.check_members()
        # every table empty: NOT_YET (EMPTY), DISABLED for the job without one
        for j in active:
            learner = rng.choice(with_role(tb.members[j], ROLE_LEARNER))
            await tb.send_msg(tb.sample_of(learner, 2, True), learner)
        await traffic(tb, OPS)
        await tb.check_jobs()
        # while the other jobs' frames stream: a table carved anew, emptied (RPL_RESET) and
        # reseeded, the others keep theirs
        x = rng.choice(active)
        await traffic(tb, OPS // 4, exclude=x)
        await reshape(tb, x, hot=True)
        await traffic(tb, OPS // 4, exclude=x)
        assert await tb.write_job("RPL_RESET", 1, x, hot=True)
        await traffic(tb, OPS // 8, exclude=x)
        assert await tb.write_job("RPL_SEED", rng.getrandbits(32), x, hot=True)
        await traffic(tb, OPS // 4)
        await tb.check_jobs()
        # the same on a quiet engine, each to a job at random
        y = rng.choice(active)
        await reshape(tb, y)
        await burst(tb, y)
        assert await tb.write_job("RPL_RESET", 1, rng.choice(active))
        assert await tb.write_job("RPL_SEED", rng.getrandbits(32), rng.choice(active))
        await traffic(tb, OPS // 2)
        await tb.check_jobs()
        # a job leaves while the others stream (its frames then name no job: BAD_JOB) and
        # comes back on a quiet engine (its table emptied)
        mask = tb.m.read("JOB_ENABLE")
        gone = rng.choice(active)
        await traffic(tb, OPS // 4, exclude=gone)
        assert await tb.write_job("JOB_ENABLE", mask & ~(1 << gone), 0, hot=True)
        await traffic(tb, OPS // 2)
        await tb.check_jobs()
        assert await tb.write_job("JOB_ENABLE", mask, 0)
        await burst(tb, gone)
        # another job's id changes (its old id names no job; its table stays)
        renamed = rng.choice([j for j in active if j != gone] or active)
        taken = {tb.ident(j) for j in range(tb.jobs)}
        assert await tb.write_job("JOB_ID", rng.choice([i for i in range(256) if i not in taken]),
                                  renamed)
        await traffic(tb, OPS // 2)
        await tb.check_jobs()
        tb.log.info("carving %d done: %d frames checked", c, tb.received)
    # the cases the test is for happened (the model's counts; the engine's equal them)
    total = {n: sum(tb.m.counters(j)[n] for j in range(tb.jobs)) for n in REPLAY_COUNTERS}
    for name in ("CNT_DROP_BAD_JOB", "CNT_DROP_BAD_LENGTH", "CNT_DROP_UNKNOWN_WORKER",
                 "CNT_DROP_SPOOFED", "CNT_DROP_BAD_COUNT", "CNT_DROP_BAD_INDEX",
                 "CNT_DROP_EMPTY", "CNT_TX_PUSH_NOT_YET", "CNT_TX_SAMPLE_NOT_YET"):
        assert total[name] > 0, f"no {name[4:]} case"
    if CARVINGS > 1:
        assert total["CNT_DROP_DISABLED"] > 0, "no DISABLED case"
    valid, _ = stack_coverage(tb)
    assert valid > 0, "no stacked sample found a chain"
    if tb.ram is not None:
        assert tb.ram.reads > 0 and tb.ram.writes > 0, "the AXI RAM was not used"
        tb.log.info("AXI RAM: %d record reads, %d beats written", tb.ram.reads, tb.ram.writes)
    tb.log.info("%d frames checked; totals %s", tb.received,
                {k[4:]: v for k, v in total.items() if v})
