"""Stacked samples and large records (issue 26, docs/protocol.md section 5), on the golden
model and the native engine: a SAMPLE_REQ with ``aux`` = k answers k records per sample
following the sampling actor's record chain; an overwritten predecessor, an actor's first
record and ``RPL_RESET`` break a chain; k <= 1 is the one-record answer; k > MAX_STACK is a
BAD_COUNT drop; the rate limiter counts B samples; records up to 8192 bytes; prioritized
sampling exact at C = 2**20 (native against the model).

The records carry (actor, that actor's record number) so what a chain should be is known
without either engine; the engines are also compared with each other frame for frame.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
from engines import ENGINES, switch_class

from hostdrv.switch.reference import Egress, SwitchModel
from hostdrv.wire import consts as C
from hostdrv.wire import protocol as P
from hostdrv.wire.protocol import Frame, Message

JOB = 5
ACTORS = (0, 1, 2)
LEARNER = 3
PORTS = tuple(1 << i for i in range(4))


def _ip(i: int) -> int:
    return 0x0A000300 + i


def _frame(msg: Message, who: int) -> bytes:
    return P.build_frame(Frame(msg, eth_src=bytes([2, 0, 0, 0, 3, who]), ip_src=_ip(who),
                               udp_src=42000 + who), validate=False)


def _switch(engine: str, capacity: int = 64, record_bytes: int = 64) -> SwitchModel:
    sw = switch_class(engine)(capacity=capacity, record_bytes=record_bytes)
    sw.write("JOB_ID", JOB)
    for i in range(4):
        sw.write(f"MEMBER_PORT_{i}", PORTS[i])
        sw.write(f"MEMBER_IP_{i}", _ip(i))
        sw.write(f"MEMBER_ROLE_{i}", C.ROLE_LEARNER if i == LEARNER else C.ROLE_ACTOR)
    return sw


class Actors:
    """Pushes records that say who wrote them: bytes 0..3 the actor, 4..7 its record number
    (from 1 after a reset)."""

    def __init__(self, sw: SwitchModel, record_bytes: int = 64) -> None:
        self.sw, self.rb = sw, record_bytes
        self.n = dict.fromkeys(ACTORS, 0)

    def push(self, actor: int, count: int, prio: int = C.PRIORITY_ONE) -> list[Egress]:
        recs = []
        for _ in range(count):
            self.n[actor] += 1
            recs.append(struct.pack("<II", actor, self.n[actor]).ljust(self.rb, b"\x5a"))
        msg = P.push(recs, [prio] * count, job=JOB, worker=actor)
        return self.sw.process(_frame(msg, actor), PORTS[actor])

    def reset(self) -> None:
        self.sw.write("RPL_RESET", 1)
        self.n = dict.fromkeys(ACTORS, 0)


def _sample(sw: SwitchModel, batch: int, stack: int, prioritized: bool = False) -> list[Egress]:
    msg = P.sample_request(batch, job=JOB, worker=LEARNER, prioritized=prioritized)
    msg.aux = stack  # any value, also above MAX_STACK
    return sw.process(_frame(msg, LEARNER), PORTS[LEARNER])


def _stacks(out: list[Egress], batch: int, k: int) -> list[list[P.SampleDescriptor]]:
    """The answer as ``batch`` stacks of k descriptors, checking the header and the order."""
    assert len(out) == batch * k
    stacks = []
    for i in range(batch):
        stack = []
        for j in range(k):
            m = P.parse_frame(out[i * k + j].frame, udp_port=42000 + LEARNER).message
            assert (m.opcode, m.count, m.aux) == (P.Opcode.SAMPLE_RESP, 1, i)
            d = m.descriptor()
            assert (d.stack, d.pos) == (k, j)
            stack.append(d)
        assert len({(d.priority, d.total, d.batch, d.size) for d in stack}) == 1
        assert stack[-1].valid == 1
        stacks.append(stack)
    return stacks


def _who(d: P.SampleDescriptor) -> tuple[int, int]:
    return struct.unpack_from("<II", d.record)


@pytest.mark.parametrize("engine", ENGINES)
def test_stacks_follow_each_actors_chain(engine: str) -> None:
    """Three actors interleaving single-record and burst PUSHes into a ring that wraps: every
    stack is the sampled record's own actor's records, consecutive, oldest first; positions
    before the actor's first record or an overwritten one are invalid (index NO_INDEX, zero
    bytes), and only there."""
    sw = _switch(engine, capacity=64)
    a = Actors(sw)
    rng = np.random.default_rng(3)
    for _ in range(60):
        a.push(int(rng.choice(ACTORS)), int(rng.choice([1, 1, 2, 5])))
    k = 6
    broken = 0
    for stack in _stacks(_sample(sw, 64, k), 64, k):
        actor, n = _who(stack[-1])
        valid = [d for d in stack if d.valid]
        for d in stack[:k - len(valid)]:
            assert d.index == C.NO_INDEX and d.record == bytes(64)
        assert [_who(d) for d in valid] == [(actor, n - len(valid) + 1 + j)
                                           for j in range(len(valid))]
        if len(valid) < k:  # the chain broke: the actor's first record, or overwritten
            broken += 1
            first = n - len(valid) + 1
            assert first == 1 or a.n[actor] >= first  # its predecessor existed once ...
            if first > 1:  # ... and was overwritten: 64 or more records pushed since
                assert sum(a.n.values()) > 64
    assert broken  # the ring wrapped: some chains broke


@pytest.mark.parametrize("engine", ENGINES)
def test_overwrite_and_reset_break_a_chain(engine: str) -> None:
    sw = _switch(engine, capacity=8)
    a = Actors(sw)
    a.push(0, 2)  # indices 0, 1
    a.push(1, 7)  # indices 2..7, then 0: actor 0's first record overwritten
    sw.write("RPL_SEED", 1)
    for stack in _stacks(_sample(sw, 16, 3), 16, 3):
        if _who(stack[-1]) == (0, 2):
            assert [d.valid for d in stack] == [0, 0, 1]  # index 0 is actor 1's now
    a.reset()
    a.push(0, 1)
    a.push(0, 1)
    for stack in _stacks(_sample(sw, 8, 4), 8, 4):
        assert [d.valid for d in stack] in ([0, 0, 0, 1], [0, 0, 1, 1])
        assert all(d.index < 2 for d in stack if d.valid)


@pytest.mark.parametrize("engine", ENGINES)
def test_depth_one_is_the_plain_answer_and_above_max_is_dropped(engine: str) -> None:
    answers = []
    for k in (0, 1):
        sw = _switch(engine)
        Actors(sw).push(0, 9)
        answers.append([e.frame for e in _sample(sw, 8, k, prioritized=True)])
        desc = P.parse_frame(answers[-1][0], udp_port=42000 + LEARNER).message.payload[C.DESC_STACK:C.BLOCK]
        assert desc == bytes(C.BLOCK - C.DESC_STACK)
    assert answers[0] == answers[1]
    sw = _switch(engine)
    Actors(sw).push(0, 9)
    for k in (C.MAX_STACK + 1, 1 << 16, 0xFFFFFFFF):
        assert _sample(sw, 4, k) == []
    assert sw.read("CNT_DROP_BAD_COUNT") == 3
    assert len(_sample(sw, 4, C.MAX_STACK)) == 4 * C.MAX_STACK
    assert sw.read("CNT_TX_SAMPLE_RESP") == 4 * C.MAX_STACK  # frames sent


@pytest.mark.parametrize("engine", ENGINES)
def test_rate_limiter_counts_samples_not_records(engine: str) -> None:
    sw = _switch(engine)
    sw.write("RPL_SPI", C.SPI_ONE)
    sw.write("RPL_SPI_ERROR", 100 * C.SPI_ONE)
    Actors(sw).push(1, 16)
    before = sw.read("RPL_RATE_DIFF_LO")
    assert len(_sample(sw, 4, 8)) == 32
    assert (before - sw.read("RPL_RATE_DIFF_LO")) & 0xFFFFFFFF == 4 * C.SPI_ONE


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("record_bytes", [7104, C.MAX_RECORD_BYTES])
def test_large_records(engine: str, record_bytes: int) -> None:
    """R up to 8192: PUSHes of as many records as a 65535-byte frame holds, a SAMPLE_RESP of
    128 + R bytes per record, stacked."""
    sw = _switch(engine, capacity=16, record_bytes=record_bytes)
    a = Actors(sw, record_bytes)
    fit = (C.MAX_FRAME_LEN - 2 * C.BLOCK) // record_bytes
    ack = a.push(0, fit)
    assert P.parse_frame(ack[0].frame, udp_port=42000).message.count == fit
    a.push(1, 2)
    out = _sample(sw, 4, 4)
    assert all(len(e.frame) == 2 * C.BLOCK + record_bytes for e in out)
    for stack in _stacks(out, 4, 4):
        actor, n = _who(stack[-1])
        assert [_who(d) for d in stack if d.valid] == [
            (actor, m) for m in range(max(n - 3, 1), n + 1)]


def test_the_model_refuses_records_over_the_limit() -> None:
    with pytest.raises(ValueError, match="record_bytes"):
        SwitchModel(capacity=16, record_bytes=C.MAX_RECORD_BYTES + 64)


def test_prioritized_sampling_is_exact_at_two_to_the_twenty() -> None:
    """C = 2**20 (sum tree depth 20, totals past 2**32): the native engine draws, stacks and
    answers exactly what the model does (the same PUSH frames fill both rings)."""
    cap = 1 << 20
    model = _switch("model", capacity=cap)
    native = _switch("native", capacity=cap)
    rng = np.random.default_rng(20)
    rec = bytes(64)
    prio = [int(p) for p in rng.integers(1, 1 << 32, 16, dtype=np.uint64)]
    frames = {(w, big): _frame(P.push([rec] * 16, [C.PRIORITY_ONE << 10] * 16 if big else prio,
                                      job=JOB, worker=w), w)
              for w in ACTORS for big in (False, True)}
    for i in range(cap // 16):
        w = ACTORS[i % 3]
        f = frames[w, i % 1024 == 0]
        model.process(f, PORTS[w])
        native.process(f, PORTS[w])
    assert model.read("RPL_SIZE") == native.read("RPL_SIZE") == cap
    assert model.read("RPL_TOTAL_HI") == native.read("RPL_TOTAL_HI") > 0
    for seed, k in ((1, 0), (7, 4), (0xDEADBEEF, 8)):
        for sw in (model, native):
            sw.write("RPL_SEED", seed)
        a = [e.frame for e in _sample(model, 64, k, prioritized=True)]
        b = [e.frame for e in _sample(native, 64, k, prioritized=True)]
        assert a == b and len(a) == 64 * max(k, 1)
