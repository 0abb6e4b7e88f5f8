"""The native engine's jobs (docs/protocol.md section 11) against the golden model.

Random interleaved traffic of several jobs, each with its own id, members, slot range and
replay table (GRADIENT rounds, PUSH / SAMPLE_REQ / UPDATE, a member of job A sending with
job B's id, the right id with the wrong member, ids no enabled job carries), and admin
register writes (carving the job table, refused carvings, ``JOB_ENABLE`` toggles and its
set / clear pair, ``JOB_OWNER`` claims, per-page
replay and aggregation registers) run through :class:`SwitchModel` and
:class:`NativeSwitchModel`: every emitted frame must agree byte for byte, every write's
outcome (the refusal's words too), every page's counters after every operation and every
register of every page at the end. Expected values are the model's, never typed here.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from engines import switch_class

from hostdrv.switch.reference import SwitchModel
from hostdrv.wire import consts as C
from hostdrv.wire import regmap
from hostdrv.wire.protocol import Flags, Frame, Message, Opcode, build_frame

PARAMS = {"capacity": 256, "record_bytes": 128, "max_slots": 16, "max_elems": 64,
          "build_hash": 0x5EED}
SWITCH_IP = regmap.REGISTERS["SWITCH_IP"].reset
UDP_PORT = regmap.REGISTERS["UDP_PORT"].reset
M32 = 0xFFFFFFFF
Op = tuple[Any, ...]  # ("frame", port, bytes) | ("write", reg, value, job) | ("read", reg, job)


@dataclass
class Job:
    """What the generator believes of one job (the switch decides; only agreement is tested)."""

    ident: int
    members: int
    elems: int = 16
    dtype: int = 0
    slots: int = 4  # frames name slots 0 .. slots - 1 (some beyond the job's share: BAD_SLOT)
    table: bool = True
    record: int = 128
    rounds: dict[int, int] = field(default_factory=dict)  # slot -> next round


class Traffic:
    """One vector of interleaved multi-job operations."""

    def __init__(self, seed: int, jobs: int) -> None:
        self.rng = random.Random(seed)
        self.np = np.random.default_rng(seed)
        self.njobs = jobs
        self.ops: list[Op] = []
        self.jobs: dict[int, Job] = {}
        self.pool: list[Op] = []  # GRADIENTs of rounds under way, delivered a few at a time
        self.sent: list[Op] = []  # frames the network may deliver again, late
        self.enabled = 1  # JOB_ENABLE as carved

    # -- addresses of job j's member i (ports are shared: a soft switch's virtual ports)
    @staticmethod
    def ip(j: int, i: int) -> int:
        return 0x0A000000 | (j + 1) << 8 | i

    @staticmethod
    def udp(j: int, i: int) -> int:
        return 40000 + 16 * j + i

    def write(self, name: str, value: int, job: int = 0) -> None:
        self.ops.append(("write", name, value, job))

    def read(self, reg: str | int, job: int = 0) -> None:
        self.ops.append(("read", reg, job))

    def frame(self, ident: int, who: tuple[int, int], op: int, *, worker: int | None = None,
              flags: int = 0, slot: int = 0, seq: int = 0, count: int = 0, aux: int = 0,
              payload: bytes = b"", total: int = 0) -> None:
        """A frame with job byte ``ident`` from member ``who`` = (job, entry)'s address."""
        j, i = who
        msg = Message(Opcode.GRADIENT, flags, ident, i if worker is None else worker, slot,
                      seq & M32, count, aux & M32, payload, C.VERSION, total & M32)
        msg.opcode = op  # type: ignore[assignment]
        fr = Frame(msg, eth_src=bytes([2, 0, 0, j, 1, i]), ip_src=self.ip(j, i),
                   ip_dst=SWITCH_IP, udp_src=self.udp(j, i), udp_dst=UDP_PORT)
        self.ops.append(("frame", 1 << i, build_frame(fr, validate=False)))

    # -- configuration ---------------------------------------------------------
    def members(self, j: int, job: Job) -> None:
        for i in range(4):
            role = C.ROLE_WORKER | C.ROLE_ACTOR | C.ROLE_LEARNER if i < 3 else C.ROLE_ACTOR
            for name, value in (("MEMBER_PORT", 1 << i), ("MEMBER_IP", self.ip(j, i)),
                                ("MEMBER_UDP", self.udp(j, i)), ("MEMBER_ROLE", role)):
                self.write(f"{name}_{i}", value, j)
        for name, value in (("JOB_ID", job.ident), ("AGG_MEMBERS", job.members),
                            ("AGG_ELEMS", job.elems), ("AGG_SLOTS", job.slots),
                            ("AGG_DTYPE", job.dtype)):
            self.write(name, value, j)

    def carve(self) -> None:
        """Job 0 shrinks, jobs 1 and 2 get their shares (2 without a table), refused
        carvings on the way; the last job stays disabled with its reset share."""
        w = self.write
        w("JOB_ENABLE", 0b11)  # job 1 overlaps job 0 (and carries its id): refused
        w("JOB_SLOT_COUNT", 4)
        w("JOB_RPL_CAP", 64)
        w("JOB_RPL_CAP", 48)  # not a power of two: refused
        w("JOB_RPL_CAP", 512)  # above RPL_CAPACITY: refused
        w("JOB_SLOT_BASE", 4, 1)  # 4 + 16 > AGG_MAX_SLOTS: refused
        w("JOB_SLOT_COUNT", 6, 1)
        w("JOB_SLOT_BASE", 11, 1)  # 11 + 6 > AGG_MAX_SLOTS: refused
        w("JOB_SLOT_BASE", 4, 1)
        w("JOB_RPL_CAP", 64, 1)
        w("JOB_RPL_BASE", 32, 1)  # not a multiple of 64: refused
        w("JOB_RPL_BASE", 64, 1)
        w("JOB_RPL_RECORD", 64, 1)
        w("JOB_RPL_RECORD", 96, 1)  # not a multiple of 64: refused
        w("JOB_SLOT_COUNT", 4, 2)
        w("JOB_SLOT_BASE", 10, 2)
        w("JOB_RPL_CAP", 0, 2)
        self.jobs = {0: Job(10, 3, elems=16, slots=5), 1: Job(11, 2, elems=32, dtype=1, slots=6,
                                                              record=64),
                     2: Job(12, 3, elems=16, slots=4, table=False)}
        for j, job in self.jobs.items():
            self.members(j, job)
        w("JOB_ENABLE", 0b111 | 1 << (self.njobs - 1))  # the last job overlaps: refused
        w("JOB_ENABLE", 0b111)
        self.enabled = 0b111
        w("JOB_ID", 10, 1)  # job 0's id: refused
        w("JOB_SLOT_BASE", 3, 1)  # overlaps job 0's slots: refused
        w("JOB_RPL_BASE", 0, 1)  # overlaps job 0's table: refused
        w("JOB_ID", 11, self.njobs - 1)  # a disabled job may carry an enabled job's id
        w("JOB_ENABLE", 0b111 | 1 << (self.njobs - 1))  # ... and is refused for it

    def carve_even(self) -> None:
        """Every job enabled with an equal share: job 0 shrinks first, the others are carved
        while disabled, then all enabled in one write."""
        n = self.njobs
        slots, records = PARAMS["max_slots"] // n, PARAMS["capacity"] // n
        self.write("JOB_SLOT_COUNT", slots)
        self.write("JOB_RPL_CAP", records)
        for j in range(n):
            for name, value in (("JOB_SLOT_COUNT", slots), ("JOB_SLOT_BASE", j * slots),
                                ("JOB_RPL_CAP", records), ("JOB_RPL_BASE", j * records),
                                ("JOB_RPL_RECORD", 64 << (j & 1))):
                self.write(name, value, j)
            self.jobs[j] = Job(20 + j, 2 + j % 2, elems=16 << (j % 2), dtype=j % 2,
                               slots=slots + 1, record=64 << (j & 1))
            self.members(j, self.jobs[j])
        self.enabled = (1 << n) - 1
        self.write("JOB_ENABLE", self.enabled)

    # -- traffic ---------------------------------------------------------------
    def elements(self, job: Job) -> bytes:
        if job.dtype:
            return self.np.integers(0, 1 << 32, job.elems, dtype=np.uint64).astype("<u4").tobytes()
        return self.np.standard_normal(job.elems).astype("<f4").tobytes()

    def round(self, j: int) -> None:
        """One aggregation round of job j on a random slot: its members' GRADIENTs join the
        pool of frames under way (delivered in any order, between other jobs' frames and the
        admin's writes), with losses and duplicates; sometimes a slot beyond its share."""
        rng, job = self.rng, self.jobs[j]
        s = rng.randrange(job.slots + 1)
        r = job.rounds.get(s, s)
        job.rounds[s] = r + job.slots + 1
        order = list(range(job.members))
        rng.shuffle(order)
        for i in order + [rng.randrange(job.members)] * (rng.random() < 0.3):
            if rng.random() < 0.1:
                continue
            self.frame(job.ident, (j, i), Opcode.GRADIENT, flags=job.dtype, slot=s, seq=r,
                       count=job.elems, aux=r, payload=self.elements(job), total=job.elems)
            self.pool.append(self.ops.pop())

    def deliver(self) -> None:
        """A few frames of the pool, and now and then one delivered before, again."""
        rng = self.rng
        for _ in range(min(len(self.pool), rng.randint(1, 3))):
            op = self.pool.pop(rng.randrange(len(self.pool)))
            self.ops.append(op)
            self.sent = [*self.sent[-200:], op]
        if self.sent and rng.random() < 0.1:
            self.ops.append(rng.choice(self.sent))

    def replay(self, j: int) -> None:
        rng, job = self.rng, self.jobs[j]
        i = rng.randrange(4)
        kind = rng.random()
        if kind < 0.45:
            k = rng.randint(1, 4)
            prios = [rng.choice([0, 1, rng.randrange(1 << 20)]) for _ in range(k)]
            block = struct.pack(f"<{k}I", *prios).ljust(C.BLOCK, b"\0")
            recs = self.np.integers(0, 256, k * job.record, dtype=np.uint8).tobytes()
            self.frame(job.ident, (j, i), Opcode.PUSH, seq=rng.randrange(1 << 32), count=k,
                       payload=block + recs)
        elif kind < 0.8:
            self.frame(job.ident, (j, i), Opcode.SAMPLE_REQ, seq=rng.randrange(1 << 32),
                       count=1 << rng.randint(0, 3), aux=rng.choice([0, 0, 2, 3]),
                       flags=int(Flags.PRIORITIZED) if rng.random() < 0.5 else 0)
        else:
            k = rng.randint(1, 4)
            pairs = [x for _ in range(k) for x in (rng.randrange(80), rng.randrange(1 << 16))]
            self.frame(job.ident, (j, i), Opcode.UPDATE, seq=rng.randrange(1 << 32), count=k,
                       payload=struct.pack(f"<{2 * k}I", *pairs))

    def stranger(self) -> None:
        """A member of job A with job B's id, the right id with the wrong member, an id no
        enabled job carries, a frame too short to name a job."""
        rng = self.rng
        a, b = rng.sample(sorted(self.jobs), 2)
        ja, jb = self.jobs[a], self.jobs[b]
        kind = rng.randrange(5)
        if kind == 0:  # A's member, B's id: B's member table judges it
            self.frame(jb.ident, (a, rng.randrange(ja.members)), Opcode.GRADIENT, flags=jb.dtype,
                       count=jb.elems, payload=self.elements(jb), total=jb.elems)
        elif kind == 1:
            self.frame(jb.ident, (a, rng.randrange(4)), Opcode.PUSH, count=1,
                       payload=bytes(C.BLOCK + jb.record))
        elif kind == 2:  # right id, a member id beyond the job's members, or a wrong address
            w = rng.choice([jb.members, 5, 7])
            self.frame(jb.ident, (b, rng.randrange(4)), Opcode.GRADIENT, worker=w,
                       flags=jb.dtype, count=jb.elems, payload=self.elements(jb), total=jb.elems)
        elif kind == 3:
            self.frame(rng.choice([0, 99, 13]), (b, 0), Opcode.SAMPLE_REQ, count=1)
        else:
            self.ops.append(("frame", 1, build_frame(Frame(Message(Opcode.PUSH, job=jb.ident)),
                                                     validate=False)[:45]))

    def admin(self) -> None:
        """A register write or read of some page: carving (taken or refused), enable
        toggles, replay and aggregation registers, counters cleared."""
        rng, n = self.rng, self.njobs
        j = rng.randrange(n)
        kind = rng.randrange(12)
        if kind == 0:  # a job leaves and comes back (its slots freed, its table emptied)
            k = rng.choice(sorted(self.jobs))
            if rng.random() < 0.5:
                self.write("JOB_ENABLE", self.enabled & ~(1 << k))
                self.write("JOB_ENABLE", self.enabled)
            else:  # the set / clear pair; a set of an enabled job is refused
                self.write("JOB_ENABLE_CLR", 1 << k)
                self.write("JOB_ENABLE_SET", self.enabled)
                self.write("JOB_ENABLE_SET", 1 << k)
                self.write("JOB_OWNER", rng.choice([0, 7, 9]), j)  # a claim: taken or refused
        elif kind == 1:
            self.write(rng.choice(["JOB_SLOT_BASE", "JOB_SLOT_COUNT"]), rng.randrange(17), j)
        elif kind == 2:
            self.write(rng.choice(["JOB_RPL_BASE", "JOB_RPL_CAP"]),
                       rng.choice([0, 16, 32, 64, 128, 192, 256, 100]), j)
        elif kind == 3:
            self.write("JOB_RPL_RECORD", rng.choice([64, 128, 192]), j)
        elif kind == 4:
            self.write("RPL_RESET", 1, j)
        elif kind == 5:
            self.write("RPL_SEED", rng.randrange(1 << 32), j)
        elif kind == 6:
            self.write(rng.choice(["RPL_SPI", "RPL_MIN_SIZE", "RPL_SPI_ERROR"]),
                       rng.choice([0, 1, 4, 0x8000, 0x10000, 0x20000]), j)
        elif kind == 7:
            self.write(rng.choice(["AGG_SLOTS", "AGG_STALENESS", "AGG_EPOCH"]),
                       rng.choice([0, 1, 3, 8]), j)
        elif kind == 8:
            self.write("JOB_LEASE", rng.randrange(1 << 32), j)
        elif kind == 9:
            self.write("CTRL", rng.choice([3, 3 | C.CTRL_CLEAR_COUNTERS, 1, 2]))
        elif kind == 10:  # reads by name and job, and by page address
            name = rng.choice(["RPL_SIZE", "RPL_WPTR", "RPL_TOTAL_LO", "RPL_RATE_DIFF_LO",
                               "CNT_TX_RESULT", "JOB_RPL_CAP"])
            self.read(name, j)
            self.read(j * regmap.JOB_PAGE + regmap.REGISTERS[name].addr)
        else:
            self.write("JOB_ID", rng.choice([10, 11, 12, 13, 14]), j)
            self.write("JOB_ID", self.jobs[j].ident if j in self.jobs else 13 + j, j)

    def events(self, count: int) -> None:
        rng = self.rng
        for _ in range(count):
            x = rng.random()
            j = rng.choice(sorted(self.jobs))
            self.deliver()
            if x < 0.2:
                self.round(j)
            elif x < 0.45:
                pass  # only the pool moves
            elif x < 0.75:
                self.replay(j)
            elif x < 0.88:
                self.stranger()
            else:
                self.admin()
        while self.pool:
            self.deliver()
        self.write("CTRL", 3)


def vector(seed: int, jobs: int, events: int = 400) -> Traffic:
    t = Traffic(seed, jobs)
    t.carve()
    t.events(events)
    return t


def _outcome(call: Any) -> Any:
    try:
        return call()
    except ValueError as e:  # UnknownRegisterError is one
        return f"{type(e).__name__}: {e}"


def play(sw: Any, ops: list[Op], jobs: int) -> tuple[list[Any], dict[int, Any]]:
    """Every operation's outcome with every page's counters after it, then every register
    of every page."""
    trace: list[Any] = []
    for op in ops:
        if op[0] == "frame":
            out: Any = [(bytes(e.frame), e.dst_ports) for e in sw.process(op[2], op[1])]
        elif op[0] == "write":
            out = _outcome(lambda op=op: sw.write(op[1], op[2], job=op[3]))
        else:
            out = _outcome(lambda op=op: sw.read(op[1], job=op[2]))
        trace.append((out, [sw.counters(job=j) for j in range(jobs)]))
    regs = {j * regmap.JOB_PAGE + r.addr: sw.read(r.name, job=j)
            for j in range(jobs) for r in regmap.REGISTERS.values()
            if not r.server and (j == 0 or r.job)}
    return trace, regs


def first_difference(ops: list[Op], want: tuple[list[Any], dict[int, Any]],
                     got: tuple[list[Any], dict[int, Any]]) -> str:
    for k, (op, (a, ca), (b, cb)) in enumerate(zip(ops, want[0], got[0], strict=True)):
        what = f"op {k} {op[0]} {op[1] if op[0] != 'frame' else len(op[2])}"
        if a != b:
            if op[0] == "frame" and len(a) == len(b):
                for n, ((fa, pa), (fb, pb)) in enumerate(zip(a, b, strict=True)):
                    if (fa, pa) != (fb, pb):
                        at = next((i for i in range(min(len(fa), len(fb))) if fa[i] != fb[i]),
                                  None)
                        return f"{what}: frame {n} differs (ports {pa}/{pb}, byte {at})"
            return f"{what}: expected {a!r:.300}, got {b!r:.300}"
        for j, (x, y) in enumerate(zip(ca, cb, strict=True)):
            if x != y:
                diff = {n: (v, y[n]) for n, v in x.items() if y[n] != v}
                return f"{what}: page {j} counters (expected, got) {diff}"
    diff = {regmap.label(a): (v, got[1].get(a)) for a, v in want[1].items() if got[1].get(a) != v}
    return f"registers at the end (expected, got) {diff}" if diff else ""


def _both(jobs: int, **kw: int) -> tuple[Any, Any]:
    p = {**PARAMS, **kw}
    return SwitchModel(**p, jobs=jobs), switch_class("native")(**p, jobs=jobs)


@pytest.mark.parametrize(("seed", "jobs"), [(1, 3), (2, 4), (3, 4), (4, 8), (5, 8)])
def test_interleaved_jobs_agree(seed: int, jobs: int) -> None:
    t = vector(seed, jobs)
    model, native = _both(jobs)
    want, got = play(model, t.ops, jobs), play(native, t.ops, jobs)
    assert first_difference(t.ops, want, got) == ""


@pytest.mark.parametrize("jobs", [2, 8])
def test_every_job_enabled_agrees(jobs: int) -> None:
    """All JOBS jobs enabled at once, equal shares of the slots and the records."""
    t = Traffic(40 + jobs, jobs)
    t.carve_even()
    t.events(300)
    model, native = _both(jobs)
    want = play(model, t.ops, jobs)
    assert first_difference(t.ops, want, play(native, t.ops, jobs)) == ""
    top = [{k: max(pages[j][k] for _, pages in want[0]) for k in regmap.COUNTERS}
           for j in range(jobs)]
    assert all(c["CNT_TX_RESULT"] for c in top)  # every job aggregated
    assert sum(bool(c["CNT_TX_PUSH_ACK"]) for c in top) >= jobs // 2


def test_vectors_reach_the_job_paths() -> None:
    """The traffic makes every page count what section 11 moves there: cross-job spoofing,
    unknown ids, replay without a table, BAD_SLOT beyond a share, refused carvings."""
    t = vector(2, 4)
    model = SwitchModel(**PARAMS, jobs=4)
    trace, _ = play(model, t.ops, 4)
    top = [dict.fromkeys(regmap.COUNTERS, 0) for _ in range(4)]
    for _, pages in trace:
        for j, c in enumerate(pages):
            for k, v in c.items():
                top[j][k] = max(top[j][k], v)
    for j in (0, 1, 2):
        for k in ("CNT_RX_GRADIENT", "CNT_TX_RESULT", "CNT_DROP_SPOOFED", "CNT_DROP_BAD_SLOT"):
            assert top[j][k], (j, k)
    assert top[0]["CNT_DROP_BAD_JOB"] and top[1]["CNT_TX_SAMPLE_RESP"]
    assert top[2]["CNT_DROP_DISABLED"] and not top[2]["CNT_TX_PUSH_ACK"]
    outcomes = [out for op, (out, _) in zip(t.ops, trace, strict=True) if op[0] == "write"]
    assert sum(not o for o in outcomes) > 50
    refused = " ".join(o for o in outcomes if o)
    for rule in ("cannot be enabled", "is enabled and", "AGG_MAX_SLOTS", "power of two",
                 "must be a multiple of JOB_RPL_CAP", "JOB_ID"):
        assert rule in refused, rule


def test_one_job_fixed_table_agrees() -> None:
    """JOBS = 1: the job table reads its reset values and refuses every write; JOB_ID and
    JOB_LEASE stay writable; the traffic of a one-job switch is unchanged."""
    t = Traffic(7, 1)
    t.jobs = {0: Job(0, 3)}
    for name, value in (("JOB_ENABLE", 1), ("JOB_SLOT_BASE", 0), ("JOB_SLOT_COUNT", 4),
                        ("JOB_RPL_BASE", 0), ("JOB_RPL_CAP", 64), ("JOB_RPL_RECORD", 128),
                        ("JOB_LEASE", 12345), ("JOB_ID", 5), ("JOB_ID", 0), ("JOB_OWNER", 3),
                        ("JOB_ENABLE_SET", 1), ("JOB_ENABLE_CLR", 1)):
        t.write(name, value)
    t.members(0, t.jobs[0])
    for _ in range(60):
        t.round(0)
        t.replay(0)
    model, native = _both(1)
    assert first_difference(t.ops, play(model, t.ops, 1), play(native, t.ops, 1)) == ""


CASES: list[tuple[str | int, int]] = [
    ("AGG_SLOTS", 3), ("AGG_SLOTS", 4), ("CTRL", 1), ("JOBS", 0), ("JOB_ENABLE", 2),
    (0x1048, 0), (0x1048, 1), (0x3048, 0), (0x4048, 0), (0x1010, 0), (0x102C, 0),
    ("NO_SUCH", 0), (0x1FFC, 0), ("AGG_SLOTS", -1),
]


@pytest.mark.parametrize(("reg", "job"), CASES)
def test_page_addressing_agrees(reg: str | int, job: int) -> None:
    """Names with job=, page addresses, pages at or above JOBS and global registers outside
    page 0: the same values and the same errors."""
    model, native = _both(4)
    assert _outcome(lambda: native.read(reg, job=job)) == _outcome(lambda: model.read(reg, job=job))
    for value in (2, 0):
        assert (_outcome(lambda v=value: native.write(reg, v, job=job))
                == _outcome(lambda v=value: model.write(reg, v, job=job)))
    assert [_outcome(lambda j=j: native.counters(job=j)) for j in range(-1, 6)] == [
        _outcome(lambda j=j: model.counters(job=j)) for j in range(-1, 6)]
