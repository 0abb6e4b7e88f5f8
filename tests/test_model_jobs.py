"""Several jobs and replay tables on one switch (docs/protocol.md section 11), on every engine.

The yardstick is isolation: a job's frames on a shared switch get, byte for byte, the answers
the same frames get from a switch that serves that job alone (its own slots, members and a
table of the job's size), and move only that job's counters; frames that name a job but come
from another job's member are judged by the named job's table and counted in its page.
Expected frames come from the lone switch (the same engine), never typed by hand.
"""

from __future__ import annotations

import numpy as np
import pytest
from engines import ENGINES, use_engine

from hostdrv.switch.reference import Egress, SwitchModel
from hostdrv.wire import protocol as P
from hostdrv.wire import regmap
from hostdrv.wire.protocol import Frame, Message


@pytest.fixture(autouse=True, params=ENGINES)
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    return use_engine(__name__, request, monkeypatch)


# job k's members are hosts 10.0.k.i, ports 8*k+i (soft switch: one virtual port per member)
IDS = (7, 9, 200)  # JOB_ID of jobs 0, 1, 2


def ip(k: int, i: int) -> int:
    return 0x0A000000 | k << 8 | i


def port(k: int, i: int) -> int:
    return 1 << (2 * k + i) % 8


def reply(eg: Egress) -> Message:
    """The message of a frame the switch sent (to whatever UDP port)."""
    return P.parse_frame(eg.frame, udp_port=int.from_bytes(eg.frame[36:38], "big")).message


def frame(msg: Message, k: int, i: int) -> bytes:
    kw = {"eth_src": bytes([2, 0, 0, 0, k, i]), "ip_src": ip(k, i), "udp_src": 40000 + i}
    return P.build_frame(Frame(msg, **kw))  # type: ignore[arg-type]


def members(sw: SwitchModel, job: int, k: int, n: int, role: int) -> None:
    """Job ``job``'s member table: n hosts of tenant ``k`` (``k`` == ``job`` unless spoofing)."""
    for i in range(n):
        sw.write("MEMBER_PORT_" + str(i), port(k, i), job=job)
        sw.write("MEMBER_IP_" + str(i), ip(k, i), job=job)
        sw.write("MEMBER_UDP_" + str(i), 40000 + i, job=job)
        sw.write("MEMBER_ROLE_" + str(i), role, job=job)


def agg_config(sw: SwitchModel, job: int, n: int, p: int, slots: int, tenant: int = -1) -> None:
    """Job ``job`` aggregates for tenant ``tenant`` (default: the job itself)."""
    sw.write("JOB_ID", IDS[job if tenant < 0 else tenant], job=job)
    members(sw, job, job if tenant < 0 else tenant, n, 1)
    sw.write("AGG_MEMBERS", n, job=job)
    sw.write("AGG_ELEMS", p, job=job)
    sw.write("AGG_SLOTS", slots, job=job)


def shared() -> SwitchModel:
    """Three jobs: 0 and 1 aggregate (slots 0..3 and 4..11), 2 replays (records 512..1023)."""
    sw = SwitchModel(jobs=4, capacity=1024, max_slots=16)
    sw.write("JOB_SLOT_COUNT", 4)
    sw.write("JOB_RPL_CAP", 256)
    for reg, value in (("JOB_SLOT_COUNT", 8), ("JOB_SLOT_BASE", 4), ("JOB_RPL_CAP", 0)):
        sw.write(reg, value, job=1)
    for reg, value in (("JOB_SLOT_COUNT", 0), ("JOB_RPL_CAP", 512), ("JOB_RPL_BASE", 512),
                       ("JOB_RPL_RECORD", 64)):
        sw.write(reg, value, job=2)
    for j in range(3):
        sw.write("JOB_ID", IDS[j], job=j)
    sw.write("JOB_ENABLE", 0b111)
    agg_config(sw, 0, 3, 32, 4)
    agg_config(sw, 1, 2, 16, 8)
    sw.write("JOB_ID", IDS[2], job=2)
    members(sw, 2, 2, 2, 0b110)
    return sw


def alone(job: int) -> SwitchModel:
    """The switch job ``job`` of :func:`shared` would have to itself."""
    if job == 2:
        sw = SwitchModel(capacity=512, record_bytes=64)
        sw.write("JOB_ID", IDS[2])
        members(sw, 0, 2, 2, 0b110)
        return sw
    sw = SwitchModel(max_slots=(4, 8)[job])
    agg_config(sw, 0, *((3, 32, 4), (2, 16, 8))[job], tenant=job)
    return sw


def traffic(rng: np.random.Generator) -> list[tuple[int, int, bytes]]:
    """Interleaved frames of the three jobs: (job, member, frame)."""
    out: list[tuple[int, int, bytes]] = []
    for rnd in range(3):
        for job, n, p, slots in ((0, 3, 32, 4), (1, 2, 16, 8)):
            for slot in range(slots):
                for i in range(n):
                    v = rng.standard_normal(p).astype(np.float32)
                    msg = P.gradient(v, job=IDS[job], worker=i, slot=slot, round_=rnd)
                    out.append((job, i, frame(msg, job, i)))
        recs = [rng.integers(0, 256, 64, dtype=np.uint8).tobytes() for _ in range(5)]
        prios = [int(x) for x in rng.integers(1, 1 << 20, 5)]
        out.append((2, 0, frame(P.push(recs, prios, job=IDS[2], worker=1, seq=rnd), 2, 1)))
        out.append((2, 0, frame(P.sample_request(4, job=IDS[2], worker=0, seq=rnd,
                                                 prioritized=bool(rnd & 1)), 2, 0)))
        out.append((2, 0, frame(P.update([0, 1], [5, 6], job=IDS[2], worker=0), 2, 0)))
    order = rng.permutation(len(out))
    return [out[i] for i in order]


def test_each_job_gets_what_it_would_get_alone() -> None:
    rng = np.random.default_rng(24)
    sw = shared()
    lone = [alone(j) for j in range(3)]
    got: list[list[Egress]] = [[], [], []]
    want: list[list[Egress]] = [[], [], []]
    for job, i, f in traffic(rng):
        got[job] += sw.process(f, port(job, i))
        want[job] += lone[job].process(f, port(job, i))
    for job in range(3):
        assert got[job] == want[job], job
        assert sw.counters(job) == lone[job].counters(), job
    assert sum(sw.counters(3).values()) == 0
    assert got[0] and got[1] and got[2]  # every job was answered
    for reg in ("RPL_SIZE", "RPL_WPTR", "RPL_TOTAL_LO", "RPL_TOTAL_HI"):
        assert sw.read(reg, job=2) == lone[2].read(reg)


def test_cross_job_spoofing_is_judged_and_counted_by_the_named_job() -> None:
    sw = shared()
    v = np.ones(16, np.float32)
    before = [sw.counters(j) for j in range(3)]
    # a member of job 0 (10.0.0.1) sends with job 1's id: job 1's member 1 is 10.0.1.1
    spoof = frame(P.gradient(v, job=IDS[1], worker=1, slot=0, round_=0), 0, 1)
    assert sw.process(spoof, port(0, 1)) == []
    # right job id, a member id job 1 does not have
    stranger = frame(P.gradient(v, job=IDS[1], worker=2, slot=0, round_=0), 1, 2)
    assert sw.process(stranger, port(1, 0)) == []
    # job 1's member sends to a slot of job 0's range that is beyond its own count
    far = frame(P.gradient(v, job=IDS[1], worker=0, slot=8, round_=0), 1, 0)
    assert sw.process(far, port(1, 0)) == []
    after = [sw.counters(j) for j in range(3)]
    moved = {k: after[1][k] - before[1][k] for k in after[1] if after[1][k] != before[1][k]}
    assert moved == {"CNT_RX_GRADIENT": 3, "CNT_DROP_SPOOFED": 1,
                     "CNT_DROP_UNKNOWN_WORKER": 1, "CNT_DROP_BAD_SLOT": 1}
    assert after[0] == before[0] and after[2] == before[2]
    # job 1's slot 0 saw nothing: its first real round is complete at its own two members
    outs = [sw.process(frame(P.gradient(v, job=IDS[1], worker=i, slot=0, round_=0), 1, i),
                       port(1, i)) for i in range(2)]
    assert outs[0] == [] and len(outs[1]) == 1
    assert reply(outs[1][0]).job == IDS[1]


def test_unclaimed_frames_count_in_page_0() -> None:
    sw = shared()
    v = np.ones(16, np.float32)
    sw.process(frame(P.gradient(v, job=42, worker=0, slot=0, round_=0), 1, 0), port(1, 0))
    assert sw.counters(0)["CNT_DROP_BAD_JOB"] == 1 and sw.counters(0)["CNT_RX_GRADIENT"] == 1
    assert sum(sw.counters(1).values()) == 0
    sw.write("JOB_ENABLE", 0b101)  # job 1 off: its id is nobody's now
    sw.process(frame(P.gradient(v, job=IDS[1], worker=0, slot=0, round_=0), 1, 0), port(1, 0))
    assert sw.counters(0)["CNT_DROP_BAD_JOB"] == 2 and sum(sw.counters(1).values()) == 0


def test_one_jobs_configuration_frees_only_its_own_slots() -> None:
    sw = shared()
    lone = alone(0)
    v = [np.full(32, i + 1, np.float32) for i in range(3)]
    f = [frame(P.gradient(v[i], job=IDS[0], worker=i, slot=1, round_=0), 0, i) for i in range(3)]
    for i in range(2):
        assert sw.process(f[i], port(0, i)) == lone.process(f[i], port(0, i)) == []
    # job 1 reconfigures (and a new job 3 is carved and enabled) while job 0's round is open
    sw.write("AGG_ELEMS", 32, job=1)
    sw.write("JOB_SLOT_COUNT", 4, job=3)
    sw.write("JOB_SLOT_BASE", 12, job=3)
    sw.write("JOB_RPL_CAP", 0, job=3)
    sw.write("JOB_ID", 3, job=3)
    sw.write("JOB_ENABLE", 0b1111)
    assert [e.frame for e in sw.process(f[2], port(0, 2))] == \
        [e.frame for e in lone.process(f[2], port(0, 2))]
    # job 0's own reconfiguration frees its copies: the same round starts over
    sw.write("AGG_ELEMS", 32)
    assert sw.process(f[0], port(0, 0)) == []


def test_one_tables_rate_limiter_never_blocks_another() -> None:
    sw = shared()
    sw.write("JOB_RPL_BASE", 256, job=1)  # job 1 gets records 256..511 (job 0 has 0..255)
    sw.write("JOB_RPL_CAP", 256, job=1)
    members(sw, 1, 1, 2, 0b111)
    sw.write("RPL_MIN_SIZE", 100, job=2)
    rec = bytes(range(64))
    assert reply(sw.process(frame(P.push([rec], [1], job=IDS[2], worker=1), 2, 1),
                            port(2, 1))[0]).count == 1
    refused = sw.process(frame(P.sample_request(1, job=IDS[2], worker=0), 2, 0), port(2, 0))
    assert reply(refused[0]).flags & P.Flags.NOT_YET
    push1 = frame(P.push([bytes(128)], [1], job=IDS[1], worker=0), 1, 0)
    assert len(sw.process(push1, port(1, 0))) == 1
    served = sw.process(frame(P.sample_request(1, job=IDS[1], worker=1), 1, 1), port(1, 1))
    m = reply(served[0])
    assert not m.flags & P.Flags.NOT_YET and m.job == IDS[1]
    assert sw.read("RPL_SIZE", job=1) == 1 and sw.read("RPL_SIZE", job=2) == 1
    assert sw.read("RPL_SIZE") == 0


def _refused(sw: SwitchModel, reg: str, value: int, job: int = 0) -> str:
    before = sw.read(reg, job=job)
    with pytest.raises(ValueError) as e:
        sw.write(reg, value, job=job)
    assert sw.read(reg, job=job) == before
    return str(e.value)


def test_shares_never_overlap() -> None:
    sw = shared()
    assert "overlap job 1" in _refused(sw, "JOB_SLOT_COUNT", 5)
    assert "overlap job 0" in _refused(sw, "JOB_SLOT_BASE", 3, job=1)
    assert "is job 1's" in _refused(sw, "JOB_ID", IDS[1])
    assert "overlap job 2" in _refused(sw, "JOB_RPL_CAP", 1024)
    assert "power of two" in _refused(sw, "JOB_RPL_CAP", 384)
    assert "multiple of JOB_RPL_CAP" in _refused(sw, "JOB_RPL_BASE", 128, job=2)
    assert "more than AGG_MAX_SLOTS" in _refused(sw, "JOB_SLOT_BASE", 12, job=3)
    # job 3 still has the reset share (everything): enabling it collides
    assert "job 3 cannot be enabled" in _refused(sw, "JOB_ENABLE", 0b1111)
    assert "only bits 0 .. 3" in _refused(sw, "JOB_ENABLE", 0b10000)
    # a disabled job is carved freely, then enabled
    sw.write("JOB_SLOT_COUNT", 4, job=3)
    sw.write("JOB_SLOT_BASE", 12, job=3)
    sw.write("JOB_RPL_CAP", 128, job=3)
    sw.write("JOB_RPL_BASE", 256, job=3)
    sw.write("JOB_ID", 1, job=3)
    sw.write("JOB_ENABLE", 0b1111)
    assert sw.read("JOB_ENABLE", job=0) == 0b1111


def test_a_one_job_switch_has_a_fixed_share() -> None:
    sw = SwitchModel()
    for reg in ("JOB_ENABLE", "JOB_SLOT_BASE", "JOB_SLOT_COUNT", "JOB_RPL_BASE", "JOB_RPL_CAP",
                "JOB_RPL_RECORD"):
        assert "fixed share" in _refused(sw, reg, sw.read(reg))
    sw.write("JOB_LEASE", 1234)
    assert sw.read("JOB_LEASE") == 1234
    with pytest.raises(ValueError):
        sw.read("AGG_SLOTS", job=1)


def test_pages_are_addresses() -> None:
    sw = SwitchModel(jobs=2)
    sw.write(regmap.job_address("AGG_SLOTS", 1), 3)
    assert sw.read("AGG_SLOTS", job=1) == 3 and sw.read("AGG_SLOTS") == 16
    assert sw.read(regmap.JOB_PAGE + regmap.REGISTERS["AGG_SLOTS"].addr) == 3
    assert regmap.label(regmap.job_address("AGG_SLOTS", 1)) == "AGG_SLOTS@1"
    with pytest.raises(ValueError):
        sw.read(regmap.JOB_PAGE + regmap.REGISTERS["CTRL"].addr)  # global: page 0 only
    with pytest.raises(ValueError):
        sw.read(regmap.job_address("AGG_SLOTS", 1) + regmap.JOB_PAGE)  # job 2 of 2
    sw.write("CTRL", 0x80000003)
    assert sw.read("CTRL", job=0) == 3
    with pytest.raises(ValueError):
        sw.write("CTRL", 3, job=1)
