"""Golden model: in-network experience replay (docs/protocol.md section 5).

The references here are written from the documented formulas: a local
xorshift32, a ring buffer in a Python list, and an O(C) prefix-sum search in
place of the sum tree descent.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
from engines import ENGINES, use_engine

from hostdrv.switch.reference import Egress, SwitchModel
from hostdrv.wire import consts as C
from hostdrv.wire import protocol as P
from hostdrv.wire.protocol import Flags, Frame, Message, Opcode


@pytest.fixture(autouse=True, params=ENGINES)
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs on the golden model and on the native engine."""
    return use_engine(__name__, request, monkeypatch)


JOB = 3
SEED_DEFAULT = 0x2545F491
ACTOR, LEARNER, BOTH = 0, 1, 2
PORTS = (1 << 1, 1 << 3, 1 << 5)


def ip(i: int) -> int:
    return 0x0A000200 + i


def udp(i: int) -> int:
    return 41000 + i


def mac(i: int) -> bytes:
    return bytes([2, 0, 0, 0, 2, i])


def make_switch(capacity: int = 16, record_bytes: int = 64) -> SwitchModel:
    sw = SwitchModel(capacity=capacity, record_bytes=record_bytes)
    sw.write("JOB_ID", JOB)
    for i, role in ((ACTOR, 0b010), (LEARNER, 0b100), (BOTH, 0b110)):
        sw.write(f"MEMBER_PORT_{i}", PORTS[i])
        sw.write(f"MEMBER_IP_{i}", ip(i))
        sw.write(f"MEMBER_UDP_{i}", udp(i))
        sw.write(f"MEMBER_ROLE_{i}", role)
    return sw


def xs32(x: int) -> int:
    """xorshift32 exactly as docs/protocol.md section 5 writes it."""
    x ^= (x << 13) & 0xFFFFFFFF
    x ^= x >> 17
    x ^= (x << 5) & 0xFFFFFFFF
    return x


def frame(msg: Message, who: int, *, validate: bool = True) -> bytes:
    return P.build_frame(Frame(msg, eth_src=mac(who), ip_src=ip(who), udp_src=udp(who)),
                         validate=validate)


def records(rng: np.random.Generator, k: int, r: int) -> list[bytes]:
    return [rng.integers(0, 256, r, dtype=np.uint8).tobytes() for _ in range(k)]


def push(sw: SwitchModel, recs: list[bytes], prios: list[int], seq: int = 0,
         who: int = ACTOR) -> list[Egress]:
    return sw.process(frame(P.push(recs, prios, job=JOB, worker=who, seq=seq), who), PORTS[who])


def sample(sw: SwitchModel, batch: int, prioritized: bool, seq: int = 0,
           who: int = LEARNER) -> list[Egress]:
    msg = P.sample_request(batch, job=JOB, worker=who, seq=seq, prioritized=prioritized)
    return sw.process(frame(msg, who), PORTS[who])


def update(sw: SwitchModel, idx: list[int], prios: list[int], who: int = LEARNER) -> list[Egress]:
    return sw.process(frame(P.update(idx, prios, job=JOB, worker=who), who), PORTS[who])


def parse_reply(eg: Egress, who: int) -> Message:
    assert eg.dst_ports == PORTS[who]
    fr = P.parse_frame(eg.frame, udp_port=udp(who))
    assert (fr.eth_dst, fr.ip_dst, fr.udp_dst) == (mac(who), ip(who), udp(who))
    assert fr.ip_src == 0x0A000001 and fr.udp_src == P.DEFAULT_UDP_PORT
    assert P.ip_checksum(eg.frame[14:34]) == 0
    m = fr.message
    assert m.flags == Flags.FROM_SWITCH and m.job == JOB and m.worker == who and m.slot == 0
    return m


class Ref:
    """Reference replay memory: a ring of (record, priority) and the PRNG state."""

    def __init__(self, capacity: int, seed: int = SEED_DEFAULT) -> None:
        self.cap = capacity
        self.recs: list[bytes | None] = [None] * capacity
        self.prio = [0] * capacity
        self.wp = 0
        self.size = 0
        self.x = seed

    def push(self, recs: list[bytes], prios: list[int]) -> int:
        first = self.wp
        for rec, pr in zip(recs, prios, strict=True):
            self.recs[self.wp] = rec
            self.prio[self.wp] = pr
            self.wp = (self.wp + 1) % self.cap
            self.size = min(self.size + 1, self.cap)
        return first

    def sample(self, batch: int, prioritized: bool) -> list[tuple[int, int, int]]:
        """[(index, priority, total)] per sample, by brute force."""
        total = sum(self.prio) if prioritized else self.size
        out = []
        seg = total // batch
        for i in range(batch):
            self.x = xs32(self.x)
            if prioritized:
                target = i * seg + (self.x * seg) // 2 ** 32
                prefix = np.cumsum(np.array(self.prio, dtype=object))
                index = next(j for j in range(self.cap) if prefix[j] > target)
            else:
                index = self.x * self.size // 2 ** 32
            out.append((index, self.prio[index], total))
        return out


def check_samples(outs: list[Egress], ref: Ref, batch: int, prioritized: bool, seq: int,
                  rb: int) -> None:
    want = ref.sample(batch, prioritized)
    assert len(outs) == batch
    for i, (eg, (index, prio, total)) in enumerate(zip(outs, want, strict=True)):
        m = parse_reply(eg, LEARNER)
        assert (m.opcode, m.seq, m.count, m.aux) == (Opcode.SAMPLE_RESP, seq, 1, i)
        d = m.descriptor()
        assert (d.index, d.priority, d.total, d.batch, d.size) == \
            (index, prio, total, batch, ref.size)
        assert d.record == ref.recs[index] and len(d.record) == rb
        assert m.payload[24:64] == bytes(40)
        if prioritized:
            assert prio > 0


def test_push_ack_and_ring_wraparound() -> None:
    rng = np.random.default_rng(10)
    cap, rb = 8, 128
    sw = make_switch(cap, rb)
    ref = Ref(cap)
    for n, k in enumerate((5, 5, 5, 1, 16)):
        recs = records(rng, k, rb)
        prios = [int(v) for v in rng.integers(1, 2 ** 32, k)]
        (ack,) = push(sw, recs, prios, seq=100 + n)
        first = ref.push(recs, prios)
        m = parse_reply(ack, ACTOR)
        assert (m.opcode, m.seq, m.count, m.aux, m.payload) == (Opcode.PUSH_ACK, 100 + n, k, first, b"")
        assert len(ack.frame) == 64
        assert (sw.read("RPL_WPTR"), sw.read("RPL_SIZE")) == (ref.wp, ref.size)
        total = sum(ref.prio)
        assert (sw.read("RPL_TOTAL_HI") << 32) | sw.read("RPL_TOTAL_LO") == total
    assert sum(ref.prio) >= 2 ** 32  # the high word was exercised
    # every record is where the ring put it: sample enough to see them all
    check_samples(sample(sw, 64, False, seq=7), ref, 64, False, 7, rb)
    c = sw.counters()
    assert (c["CNT_RX_PUSH"], c["CNT_TX_PUSH_ACK"], c["CNT_RX_SAMPLE"], c["CNT_TX_SAMPLE_RESP"]) == \
        (5, 5, 1, 64)


@pytest.mark.parametrize("batch", [1, 2, 8, 64])
def test_uniform_sampling(batch: int) -> None:
    rng = np.random.default_rng(batch)
    sw = make_switch(64, 64)
    ref = Ref(64)
    for _ in range(3):
        k = int(rng.integers(1, 17))
        recs = records(rng, k, 64)
        prios = [int(v) for v in rng.integers(0, 1000, k)]
        push(sw, recs, prios)
        ref.push(recs, prios)
        check_samples(sample(sw, batch, False, seq=batch), ref, batch, False, batch, 64)


@pytest.mark.parametrize(("cap", "batch"), [(1, 1), (2, 4), (64, 1), (64, 16), (64, 64),
                                            (256, 32)])
def test_prioritized_sampling_brute_force(cap: int, batch: int) -> None:
    rng = np.random.default_rng(cap * 100 + batch)
    sw = make_switch(cap, 64)
    ref = Ref(cap)
    for rnd in range(4):
        k = int(rng.integers(1, 17))
        recs = records(rng, k, 64)
        # zeros, tiny and huge priorities: empty leaves, seg = 0 and 64-bit totals
        scale = [2, 2 ** 10, 2 ** 32][rnd % 3]
        prios = [int(v) for v in rng.integers(0, scale, k)]
        prios[-1] = max(prios[-1], 1)  # survives the ring: the total is never 0
        push(sw, recs, prios)
        ref.push(recs, prios)
        check_samples(sample(sw, batch, True, seq=rnd), ref, batch, True, rnd, 64)


def test_uniform_and_prioritized_share_the_generator() -> None:
    rng = np.random.default_rng(5)
    sw = make_switch(32, 64)
    ref = Ref(32)
    recs = records(rng, 16, 64)
    prios = [int(v) for v in rng.integers(1, 100, 16)]
    push(sw, recs, prios)
    ref.push(recs, prios)
    for prioritized, batch in ((True, 4), (False, 8), (True, 2), (False, 1)):
        check_samples(sample(sw, batch, prioritized), ref, batch, prioritized, 0, 64)


def test_seed_register() -> None:
    rng = np.random.default_rng(6)
    recs = records(rng, 16, 64)
    prios = list(range(1, 17))
    sw = make_switch(16, 64)
    push(sw, recs, prios)
    assert sw.read("RPL_SEED") == SEED_DEFAULT
    for seed in (12345, 0, 12345):
        sw.write("RPL_SEED", seed)
        ref = Ref(16, seed or SEED_DEFAULT)
        ref.push(recs, prios)
        check_samples(sample(sw, 32, True), ref, 32, True, 0, 64)
        assert sw.read("RPL_SEED") == seed


def test_update_and_bad_index() -> None:
    rng = np.random.default_rng(7)
    sw = make_switch(16, 64)
    ref = Ref(16)
    recs = records(rng, 10, 64)
    prios = [1000] * 10
    push(sw, recs, prios)
    ref.push(recs, prios)
    idx = [3, 10, 0, 15, 3, 9, 11]
    new = [7, 1, 0, 5, 2 ** 32 - 1, 123, 9]
    before = sw.counters()
    assert update(sw, idx, new) == []
    bad = 0
    for i, p in zip(idx, new, strict=True):  # in order; index >= size skipped
        if i < ref.size:
            ref.prio[i] = p
        else:
            bad += 1
    after = sw.counters()
    assert after["CNT_DROP_BAD_INDEX"] - before["CNT_DROP_BAD_INDEX"] == bad == 3
    assert after["CNT_RX_UPDATE"] == 1
    assert (sw.read("RPL_TOTAL_HI") << 32) | sw.read("RPL_TOTAL_LO") == sum(ref.prio)
    check_samples(sample(sw, 64, True), ref, 64, True, 0, 64)
    # the learner with both roles may push and update too
    (ack,) = push(sw, records(rng, 1, 64), [5], who=BOTH)
    assert parse_reply(ack, BOTH).aux == 10
    assert update(sw, [10], [6], who=BOTH) == []


def not_yet(out: list[Egress], who: int, op: Opcode, reason: int, size: int, seq: int = 0) -> None:
    """``out`` is the one NOT_YET answer (section 5): no payload, count 0, slot = reason."""
    (eg,) = out
    assert eg.dst_ports == PORTS[who]
    m = P.parse_frame(eg.frame, udp_port=udp(who)).message
    assert m.opcode == op and m.flags == Flags.FROM_SWITCH | Flags.NOT_YET
    assert (m.worker, m.seq, m.count, m.slot, m.aux, len(m.payload)) == (who, seq, 0, reason, size, 0)


def test_empty() -> None:
    rng = np.random.default_rng(8)
    sw = make_switch(16, 64)
    sw.write("RPL_MIN_SIZE", 0)  # EMPTY is answered whatever the minimum size
    for prioritized in (False, True):
        not_yet(sample(sw, 4, prioritized, seq=5), LEARNER, Opcode.SAMPLE_RESP, C.NOT_YET_EMPTY, 0, 5)
    assert sw.read("CNT_DROP_EMPTY") == 2
    recs = records(rng, 4, 64)
    push(sw, recs, [0, 0, 0, 0])
    not_yet(sample(sw, 4, True), LEARNER, Opcode.SAMPLE_RESP, C.NOT_YET_EMPTY, 4)  # zero total
    assert sw.read("CNT_DROP_EMPTY") == 3
    assert (sw.read("CNT_TX_SAMPLE_NOT_YET"), sw.read("CNT_TX_SAMPLE_RESP")) == (3, 0)
    ref = Ref(16)  # the refused requests drew nothing
    ref.push(recs, [0, 0, 0, 0])
    check_samples(sample(sw, 4, False), ref, 4, False, 0, 64)


def test_rpl_reset() -> None:
    rng = np.random.default_rng(9)
    sw = make_switch(16, 64)
    push(sw, records(rng, 7, 64), [9] * 7)
    sw.write("RPL_RESET", 1)
    assert [sw.read(r) for r in ("RPL_SIZE", "RPL_WPTR", "RPL_TOTAL_LO", "RPL_TOTAL_HI",
                                 "RPL_RESET")] == [0, 0, 0, 0, 0]
    not_yet(sample(sw, 1, False), LEARNER, Opcode.SAMPLE_RESP, C.NOT_YET_EMPTY, 0)
    recs = records(rng, 2, 64)
    (ack,) = push(sw, recs, [4, 4])
    assert parse_reply(ack, ACTOR).aux == 0
    assert (sw.read("RPL_TOTAL_LO"), sw.read("RPL_SIZE")) == (8, 2)


def test_update_then_sample_ordering() -> None:
    rng = np.random.default_rng(11)
    sw = make_switch(8, 64)
    ref = Ref(8)
    recs = records(rng, 8, 64)
    push(sw, recs, [1] * 8)
    ref.push(recs, [1] * 8)
    update(sw, list(range(8)), [0] * 7 + [50])
    ref.prio = [0] * 7 + [50]
    outs = sample(sw, 8, True)
    assert {struct.unpack_from("<I", eg.frame, 64)[0] for eg in outs} == {7}
    check_samples(outs, ref, 8, True, 0, 64)


def _drop(sw: SwitchModel, f: bytes, port: int, reason: str) -> None:
    before = sw.counters()
    assert sw.process(f, port) == []
    after = sw.counters()
    drops = {k: after[k] - before[k] for k in after
             if k.startswith("CNT_DROP") and after[k] != before[k]}
    assert drops == {f"CNT_DROP_{reason}": 1}
    assert (sw.read("RPL_SIZE"), sw.read("RPL_WPTR"), sw.read("RPL_TOTAL_LO")) == (0, 0, 0)


def test_replay_drops() -> None:
    rng = np.random.default_rng(12)
    sw = make_switch(16, 64)
    good_push = P.push(records(rng, 2, 64), [1, 2], job=JOB, worker=ACTOR)
    # wrong record size for this switch: BAD_LENGTH (checked after count)
    _drop(sw, frame(P.push(records(rng, 2, 128), [1, 2], job=JOB, worker=ACTOR), ACTOR),
          PORTS[ACTOR], "BAD_LENGTH")
    _drop(sw, frame(P.with_fields(good_push, count=0), ACTOR, validate=False), PORTS[ACTOR],
          "BAD_COUNT")
    seventeen = P.with_fields(good_push, count=17,
                              payload=bytes(64) + b"".join(records(rng, 17, 64)))
    _drop(sw, frame(seventeen, ACTOR, validate=False), PORTS[ACTOR], "BAD_COUNT")
    _drop(sw, frame(P.with_fields(good_push, worker=LEARNER), LEARNER), PORTS[LEARNER],
          "UNKNOWN_WORKER")
    _drop(sw, frame(P.with_fields(good_push, worker=9), ACTOR, validate=False), PORTS[ACTOR],
          "UNKNOWN_WORKER")
    _drop(sw, frame(good_push, ACTOR), PORTS[LEARNER], "SPOOFED")
    req = P.sample_request(4, job=JOB, worker=LEARNER)
    _drop(sw, frame(P.with_fields(req, count=3), LEARNER, validate=False), PORTS[LEARNER],
          "BAD_COUNT")
    _drop(sw, frame(P.with_fields(req, count=128), LEARNER, validate=False), PORTS[LEARNER],
          "BAD_COUNT")
    _drop(sw, frame(P.with_fields(req, payload=bytes(8)), LEARNER, validate=False),
          PORTS[LEARNER], "BAD_LENGTH")
    _drop(sw, frame(P.with_fields(req, worker=ACTOR), ACTOR), PORTS[ACTOR], "UNKNOWN_WORKER")
    upd = P.update([0], [1], job=JOB, worker=LEARNER)
    _drop(sw, frame(P.with_fields(upd, count=0, payload=b""), LEARNER, validate=False),
          PORTS[LEARNER], "BAD_COUNT")
    _drop(sw, frame(P.with_fields(upd, count=2), LEARNER, validate=False), PORTS[LEARNER],
          "BAD_LENGTH")
    sw.write("CTRL", 1)
    _drop(sw, frame(good_push, ACTOR), PORTS[ACTOR], "DISABLED")
    _drop(sw, frame(req, LEARNER), PORTS[LEARNER], "DISABLED")
    sw.write("CTRL", 3)
    # a stack depth (aux) above MAX_STACK: BAD_COUNT
    _drop(sw, frame(P.with_fields(req, aux=C.MAX_STACK + 1), LEARNER, validate=False),
          PORTS[LEARNER], "BAD_COUNT")
    # flags other than PRIORITIZED and slot are ignored on replay requests; aux 1 is k = 1
    odd = P.with_fields(req, flags=int(Flags.INT32 | Flags.RESEND), slot=9, aux=1)
    push(sw, records(rng, 1, 64), [1])
    assert len(sw.process(frame(odd, LEARNER), PORTS[LEARNER])) == 4


def test_large_capacity_is_fast() -> None:
    """O(log C) tree: 2**16 records, full batches, well under a second."""
    rng = np.random.default_rng(13)
    cap = 1 << 16
    sw = make_switch(cap, 64)
    recs = records(rng, 16, 64)
    for n in range(64):
        push(sw, recs, [n + 1] * 16)
    for _ in range(8):
        outs = sample(sw, 64, True)
        assert len(outs) == 64
        for eg in outs:
            index, prio = struct.unpack_from("<II", eg.frame, 64)
            assert index < 1024 and prio == index // 16 + 1
