"""The one RateLimiter (hostdrv.wire.ratelimit) against the switch's: the host replay memories
of rl.replay take the same decisions as the reference model (and the native engine) for the
same traffic, with the same accumulator. Expected values come from the switch, never typed in.
"""

from __future__ import annotations

import numpy as np
import pytest
from engines import ENGINES, use_engine
from test_model_replay import ACTOR, LEARNER, make_switch, push, records, sample, udp

from hostdrv.switch.reference import SwitchModel
from hostdrv.wire import consts as C
from hostdrv.wire import protocol as P
from hostdrv.wire.protocol import Flags
from hostdrv.wire.ratelimit import RateLimiter, RateLimiterConfig
from rl.replay import LocalReplay, PrioritizedStore, RateLimited, RecordLayout

ONE = C.SPI_ONE
CAP, RB = 16, 64
LAYOUT = RecordLayout(obs_shape=(4,), record_bytes=RB)


@pytest.fixture(autouse=True, params=ENGINES)
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The switch is the reference model, then the native engine."""
    use_engine("test_model_replay", request, monkeypatch)
    return use_engine(__name__, request, monkeypatch)


def _diff(sw: SwitchModel) -> int:
    v = (sw.read("RPL_RATE_DIFF_HI") << 32) | sw.read("RPL_RATE_DIFF_LO")
    return v - (1 << 64) if v >> 63 else v


def _switch_push(sw: SwitchModel, k: int, rng: np.random.Generator) -> int:
    """0 when the switch stored the k records, else its NOT_YET reason."""
    (eg,) = push(sw, records(rng, k, RB), [ONE] * k)
    msg = P.parse_frame(eg.frame, udp_port=udp(ACTOR)).message
    return msg.slot if msg.flags & Flags.NOT_YET else 0


def _switch_sample(sw: SwitchModel, b: int) -> int:
    out = sample(sw, b, prioritized=False)
    msg = P.parse_frame(out[0].frame, udp_port=udp(LEARNER)).message
    if msg.flags & Flags.NOT_YET:
        assert len(out) == 1
        return msg.slot
    assert len(out) == b
    return 0


def _store_push(store: PrioritizedStore, k: int) -> int:
    try:
        store.push(np.zeros(k, LAYOUT.dtype), np.full(k, ONE, np.uint32))
    except RateLimited as e:
        return e.reason
    return 0


def _store_sample(store: PrioritizedStore, b: int) -> int:
    try:
        store.sample(b, prioritized=False)
    except RateLimited as e:
        return e.reason
    return 0


CONFIGS = [
    (1, 0, 0),  # the reset values: only MinSize(1)
    (6, 0, 0),  # MinSize
    (5, 2 * ONE, 8 * ONE),
    (3, ONE // 2 + 123, 5 * ONE + 77),  # a ratio and a buffer that are not whole samples
    (10, 3 * ONE, 40 * ONE),
    (2, 7 * ONE, 7 * ONE),  # the smallest buffer Reverb allows for SPI 7
]


@pytest.mark.parametrize(("min_size", "spi", "err"), CONFIGS)
def test_host_limiter_decides_as_the_switch(min_size: int, spi: int, err: int) -> None:
    rng = np.random.default_rng(min_size * 7 + spi)
    sw = make_switch(capacity=CAP, record_bytes=RB)
    sw.write("RPL_MIN_SIZE", min_size)
    sw.write("RPL_SPI_ERROR", err)
    sw.write("RPL_SPI", spi)
    config = RateLimiterConfig(min_size, spi, err)
    store = PrioritizedStore(CAP, LAYOUT, limiter=config)
    local = LocalReplay(LAYOUT, CAP, 1, limiter=config)
    refused = {0: 0, C.NOT_YET_MIN_SIZE: 0, C.NOT_YET_RATE: 0}
    for step in range(300):
        if rng.random() < 0.5:
            k = int(rng.integers(1, 9))
            predicted = store.limiter.can_insert(k, store.size)
            assert local.can_push(k) == predicted  # the same memory state so far
            got = _switch_push(sw, k, rng)
            assert _store_push(store, k) == got, step
            assert predicted == (got == 0)
            if got == 0:
                local.push(np.zeros((k, 4)), np.zeros(k, np.int64), np.zeros(k),
                           np.zeros((k, 4)), np.zeros(k, bool), np.ones(k))
        else:
            b = 1 << int(rng.integers(0, 4))
            if sw.read("RPL_SIZE") == 0:
                continue  # an empty memory is the table's answer, not the limiter's
            predicted = store.limiter.can_sample(b, store.size)
            assert local.can_sample(b) == predicted
            got = _switch_sample(sw, b)
            assert _store_sample(store, b) == got, step
            assert predicted == (got == 0)
            if got == 0:
                local.sample(b, prioritized=False)
            refused[got] += 1
        assert store.limiter.diff == _diff(sw) == local.store.limiter.diff, step
        assert store.limiter.word == (sw.read("RPL_RATE_DIFF_HI") << 32
                                      | sw.read("RPL_RATE_DIFF_LO"))
        assert store.size == sw.read("RPL_SIZE")
        state = store.limiter.state()
        if spi:
            assert state.diff_fixed == store.limiter.diff
            assert min(0, config.min_diff) <= state.diff_fixed <= max(0, config.max_diff), step
    if spi:  # the traffic did reach the limiter
        assert refused[C.NOT_YET_RATE] + store.counts.push_not_yet > 0


def test_register_writes_reach_the_limiter_as_they_reach_the_switch() -> None:
    """RPL_MIN_SIZE and RPL_SPI_ERROR keep the accumulator, RPL_SPI and RPL_RESET clear it."""
    rng = np.random.default_rng(3)
    sw = make_switch(capacity=CAP, record_bytes=RB)
    lim = RateLimiter()
    store = PrioritizedStore(CAP, LAYOUT)
    store.limiter = lim
    for name, value, write in (("RPL_SPI_ERROR", 9 * ONE, lim.set_error),
                               ("RPL_SPI", 2 * ONE, lim.set_spi),
                               ("RPL_MIN_SIZE", 4, lim.set_min_size)):
        sw.write(name, value)
        write(value)
    for _ in range(3):
        assert _switch_push(sw, 2, rng) == _store_push(store, 2) == 0
    assert lim.diff == _diff(sw) != 0
    for name, value, write in (("RPL_MIN_SIZE", 2, lim.set_min_size),
                               ("RPL_SPI_ERROR", 12 * ONE, lim.set_error)):
        sw.write(name, value)
        write(value)
        assert lim.diff == _diff(sw) != 0, name
    assert _switch_sample(sw, 4) == _store_sample(store, 4) == 0
    assert lim.diff == _diff(sw)
    sw.write("RPL_SPI", 3 * ONE)
    lim.set_spi(3 * ONE)
    assert lim.diff == _diff(sw) == 0
    assert _switch_push(sw, 2, rng) == _store_push(store, 2) == 0
    sw.write("RPL_RESET", 1)
    lim.reset()
    assert lim.diff == _diff(sw) == 0
    assert lim.config == RateLimiterConfig(sw.read("RPL_MIN_SIZE"), sw.read("RPL_SPI"),
                                           sw.read("RPL_SPI_ERROR"))


def test_local_replay_refuses_at_once() -> None:
    """One process cannot wait for itself: a refused push or sample raises RateLimited
    and changes nothing."""
    local = LocalReplay(LAYOUT, CAP, 1, RateLimiterConfig.from_ratio(4, 2.0, 2.0))
    z = (np.zeros((4, 4)), np.zeros(4, np.int64), np.zeros(4), np.zeros((4, 4)),
         np.zeros(4, bool))
    local.push(*(a[:2] for a in z))
    with pytest.raises(RateLimited, match="fewer records than min_size"):
        local.sample(1)
    local.push(*(a[:2] for a in z))  # size 4 = min_size: always accepted
    before = (local.store.size, local.store.limiter.diff)
    with pytest.raises(RateLimited, match="ratio"):
        local.push(*z)
    assert (local.store.size, local.store.limiter.diff) == before
    assert local.store.counts.push_not_yet == 1


def test_config_from_ratio_checks_like_reverb() -> None:
    c = RateLimiterConfig.from_ratio(10, 2.5, 6.0)
    assert (c.min_size, c.spi, c.error) == (10, round(2.5 * ONE), 6 * ONE)
    assert (c.min_diff, c.max_diff) == (c.spi * 10 - c.error, c.spi * 10 + c.error)
    with pytest.raises(ValueError, match="at least max"):
        RateLimiterConfig.from_ratio(1, 4.0, 3.0)
    with pytest.raises(ValueError, match="32-bit"):
        RateLimiterConfig.from_ratio(1 << 32)
    with pytest.raises(ValueError, match="32-bit"):
        RateLimiterConfig(spi=-1)
