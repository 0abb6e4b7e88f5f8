"""Replay rate limiter (docs/protocol.md section 5, "Rate limiting"), on every engine.

Reverb's ``MinSize`` and ``SampleToInsertRatio``: the registers ``RPL_MIN_SIZE``,
``RPL_SPI`` and ``RPL_SPI_ERROR`` decide which PUSH and SAMPLE_REQ are served; a
refused one gets one NOT_YET answer. The tests check what a user sees: the frames,
the counters, ``RPL_SIZE`` and ``RPL_RATE_DIFF``.
"""

from __future__ import annotations

import numpy as np
import pytest
from engines import ENGINES, use_engine
from test_model_replay import (
    ACTOR,
    LEARNER,
    make_switch,
    not_yet,
    parse_reply,
    push,
    records,
    sample,
)

from hostdrv.switch.reference import SwitchModel
from hostdrv.wire import consts as C
from hostdrv.wire import protocol as P
from hostdrv.wire import regmap
from hostdrv.wire.protocol import Flags, Opcode

ONE = C.SPI_ONE


@pytest.fixture(autouse=True, params=ENGINES)
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs on the golden model and on the native engine (the switch
    factory of test_model_replay is pointed at it too)."""
    use_engine("test_model_replay", request, monkeypatch)
    return use_engine(__name__, request, monkeypatch)


def diff(sw: SwitchModel) -> int:
    """``RPL_RATE_DIFF`` as a signed integer."""
    v = (sw.read("RPL_RATE_DIFF_HI") << 32) | sw.read("RPL_RATE_DIFF_LO")
    return v - (1 << 64) if v >> 63 else v


def limiter(sw: SwitchModel, min_size: int, spi: int, error: int) -> None:
    sw.write("RPL_MIN_SIZE", min_size)
    sw.write("RPL_SPI", spi)
    sw.write("RPL_SPI_ERROR", error)


def test_reset_values() -> None:
    sw = make_switch()
    for name in ("RPL_MIN_SIZE", "RPL_SPI", "RPL_SPI_ERROR", "RPL_RATE_DIFF_LO",
                 "RPL_RATE_DIFF_HI"):
        assert sw.read(name) == regmap.REGISTERS[name].reset, name
    assert sw.read("RPL_MIN_SIZE") == 1 and sw.read("RPL_SPI") == 0


def test_min_size() -> None:
    rng = np.random.default_rng(1)
    sw = make_switch(16, 64)
    sw.write("RPL_MIN_SIZE", 5)
    for k in range(4):
        (ack,) = push(sw, records(rng, 1, 64), [1], seq=k)
        assert parse_reply(ack, ACTOR).count == 1
        for prioritized in (False, True):
            not_yet(sample(sw, 2, prioritized, seq=9), LEARNER, Opcode.SAMPLE_RESP,
                    C.NOT_YET_MIN_SIZE, k + 1, 9)
    push(sw, records(rng, 1, 64), [1])
    assert len(sample(sw, 2, False)) == 2
    c = sw.counters()
    assert (c["CNT_TX_SAMPLE_NOT_YET"], c["CNT_TX_SAMPLE_RESP"], c["CNT_TX_PUSH_NOT_YET"],
            c["CNT_DROP_EMPTY"], c["CNT_RX_SAMPLE"]) == (8, 2, 0, 0, 9)
    # ratio limiting off: the accumulator only counts the samples served
    assert diff(sw) == -2 * ONE


def test_ratio_walk() -> None:
    """SPI 1.0, MIN_SIZE 1, error 1.0: min_diff 0, max_diff 2.0 (section 5)."""
    rng = np.random.default_rng(2)
    sw = make_switch(16, 64)
    limiter(sw, 1, ONE, ONE)
    assert len(push(sw, records(rng, 1, 64), [1])) == 1  # size 1 <= MIN_SIZE: free
    assert diff(sw) == ONE
    assert parse_reply(push(sw, records(rng, 1, 64), [1])[0], ACTOR).count == 1  # diff 2 <= 2
    assert diff(sw) == 2 * ONE
    not_yet(push(sw, records(rng, 1, 64), [1], seq=4), ACTOR, Opcode.PUSH_ACK, C.NOT_YET_RATE, 2, 4)
    assert (sw.read("RPL_SIZE"), sw.read("RPL_WPTR"), diff(sw)) == (2, 2, 2 * ONE)
    not_yet(sample(sw, 4, False), LEARNER, Opcode.SAMPLE_RESP, C.NOT_YET_RATE, 2)  # 2 - 4 < 0
    assert len(sample(sw, 2, False)) == 2  # 2 - 2 >= 0
    assert diff(sw) == 0
    not_yet(sample(sw, 1, True), LEARNER, Opcode.SAMPLE_RESP, C.NOT_YET_RATE, 2)
    assert len(push(sw, records(rng, 2, 64), [1, 1])) == 1
    c = sw.counters()
    assert (c["CNT_TX_PUSH_ACK"], c["CNT_TX_PUSH_NOT_YET"], c["CNT_TX_SAMPLE_RESP"],
            c["CNT_TX_SAMPLE_NOT_YET"]) == (3, 1, 2, 2)
    assert diff(sw) == 2 * ONE


def test_refused_requests_change_nothing() -> None:
    """A refused PUSH writes nothing and a refused SAMPLE_REQ draws nothing: a twin switch
    that never saw them answers every later request identically."""
    rng = np.random.default_rng(3)
    a, b = make_switch(16, 64), make_switch(16, 64)
    recs = records(rng, 4, 64)
    for sw in (a, b):
        limiter(sw, 4, ONE, ONE)  # min_diff 3.0, max_diff 5.0
        push(sw, recs, [1, 2, 3, 4])  # size 4 <= MIN_SIZE: free, diff 4.0
    not_yet(sample(a, 2, False), LEARNER, Opcode.SAMPLE_RESP, C.NOT_YET_RATE, 4)  # 4 - 2 < 3
    not_yet(sample(a, 2, True), LEARNER, Opcode.SAMPLE_RESP, C.NOT_YET_RATE, 4)
    not_yet(push(a, records(rng, 2, 64), [9, 9]), ACTOR, Opcode.PUSH_ACK, C.NOT_YET_RATE, 4)
    for sw in (a, b):
        assert diff(sw) == 4 * ONE
    for k, prioritized in enumerate((True, False)):
        out = sample(a, 1, prioritized, seq=7)
        assert len(out) == 1 and out == sample(b, 1, prioritized, seq=7)
        rec = records(rng, 1, 64)
        out = push(a, rec, [5 + k], seq=8)
        assert parse_reply(out[0], ACTOR).count == 1 and out == push(b, rec, [5 + k], seq=8)
    regs = ("RPL_SIZE", "RPL_WPTR", "RPL_TOTAL_LO", "RPL_RATE_DIFF_LO", "RPL_RATE_DIFF_HI")
    assert [a.read(r) for r in regs] == [b.read(r) for r in regs]
    assert a.counters()["CNT_TX_SAMPLE_NOT_YET"] == 2 and a.counters()["CNT_TX_PUSH_NOT_YET"] == 1
    assert b.counters()["CNT_TX_SAMPLE_NOT_YET"] == 0


def test_diff_clears_and_wraps_signed() -> None:
    rng = np.random.default_rng(4)
    sw = make_switch(16, 64)
    push(sw, records(rng, 4, 64), [1] * 4)
    sample(sw, 8, False)
    assert diff(sw) == -8 * ONE
    assert sw.read("RPL_RATE_DIFF_HI") == 0xFFFFFFFF
    sw.write("RPL_SPI_ERROR", 10 * ONE)  # no clear
    assert diff(sw) == -8 * ONE
    sw.write("RPL_SPI", 3 * ONE)  # clears
    assert diff(sw) == 0
    push(sw, records(rng, 2, 64), [1] * 2)
    assert diff(sw) == 6 * ONE
    sw.write("RPL_RESET", 1)
    assert diff(sw) == 0 and sw.read("RPL_SPI") == 3 * ONE


@pytest.mark.parametrize("seed", range(6))
def test_random_ratio_guarantee(seed: int) -> None:
    """A random mix of PUSH and SAMPLE_REQ under random limiter settings: every answer agrees
    with the registers read just before it, the accumulator follows the served requests, and
    samples / inserts stays within SPI +- error / inserts (Reverb's guarantee)."""
    rng = np.random.default_rng(100 + seed)
    sw = make_switch(64, 64)
    min_size = int(rng.integers(0, 20))
    spi = int(rng.integers(ONE // 4, 8 * ONE))
    error = int(rng.integers(16 * max(spi, ONE), 64 * max(spi, ONE)))
    limiter(sw, min_size, spi, error)
    inserted = sampled = served = 0
    lo, hi = min(0, spi * min_size - error), max(0, spi * min_size + error)
    for k in range(600):
        size, d = sw.read("RPL_SIZE"), diff(sw)
        assert d == inserted * spi - sampled * ONE
        assert lo <= d <= hi  # so samples / inserts stays within SPI +- (error + offset) / inserts
        if rng.random() < 0.5:
            n = int(rng.integers(1, 17))
            (eg,) = push(sw, records(rng, n, 64), [1] * n, seq=k)
            m = P.parse_frame(eg.frame, udp_port=41000).message
            ok = size + n <= min_size or d + n * spi <= spi * min_size + error
            assert bool(m.flags & Flags.NOT_YET) != ok
            if ok:
                inserted += n
                assert m.count == n
            else:
                assert (m.count, m.slot, m.aux, sw.read("RPL_SIZE")) == (0, C.NOT_YET_RATE, size, size)
        else:
            b = 1 << int(rng.integers(0, 7))
            out = sample(sw, b, bool(rng.integers(0, 2)), seq=k)
            ok = size >= max(min_size, 1) and d - b * ONE >= spi * min_size - error
            assert len(out) == (b if ok else 1)
            if ok:
                sampled += b
                served += 1
            else:
                m = P.parse_frame(out[0].frame, udp_port=41001).message
                assert m.flags & Flags.NOT_YET and (m.count, m.aux) == (0, size)
    c = sw.counters()
    assert c["CNT_RX_PUSH"] == c["CNT_TX_PUSH_ACK"] + c["CNT_TX_PUSH_NOT_YET"]
    assert c["CNT_RX_SAMPLE"] == served + c["CNT_TX_SAMPLE_NOT_YET"]
    assert c["CNT_TX_SAMPLE_RESP"] == sampled
    assert c["CNT_TX_PUSH_NOT_YET"] + c["CNT_TX_SAMPLE_NOT_YET"] > 0 and sampled > 0
