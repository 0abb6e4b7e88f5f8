"""Replay client through the soft switch: records, sampling statistics, priorities."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from netutil import chi2_critical

from hostdrv import (
    ReplayClient,
    ReplayEmptyError,
    ReplayTimeoutError,
    SoftSwitch,
    SwitchControl,
    from_fixed,
    records_from_bytes,
    to_fixed,
)

OBS = (3, 5)


@pytest.fixture()
def switch() -> Iterator[SoftSwitch]:
    sw = SoftSwitch(capacity=64, record_bytes=192).start()
    try:
        with SwitchControl(sw.url) as ctl:
            ctl.configure_replay(seed=12345)
        yield sw
    finally:
        sw.close()


def _transitions(n: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    obs = rng.standard_normal((n, *OBS)).astype(np.float32)
    nxt = rng.standard_normal((n, *OBS)).astype(np.float32)
    act = rng.integers(-5, 5, size=(n, 2))
    rew = rng.standard_normal(n).astype(np.float32)
    done = rng.integers(0, 2, size=n).astype(np.uint8)
    return obs, act, rew, nxt, done


def _client(sw: SoftSwitch, **kw: object) -> ReplayClient:
    return ReplayClient(sw.url, worker=6, obs_shape=OBS, action_shape=(2,), **kw)  # type: ignore[arg-type]


def test_records_round_trip_byte_exact(switch: SoftSwitch) -> None:
    rc = _client(switch)
    obs, act, rew, nxt, done = _transitions(50)
    idx = rc.push(obs, act, rew, nxt, done, priority=np.linspace(0.5, 3, 50))
    np.testing.assert_array_equal(idx, np.arange(50))
    pushed = rc.pack(obs, act, rew, nxt, done).view(np.uint8).reshape(50, 192)
    seen = set()
    for _ in range(20):
        b = rc.sample(64, prioritized=False)
        np.testing.assert_array_equal(b.records, pushed[b.indices])
        np.testing.assert_array_equal(b.obs, obs[b.indices])
        np.testing.assert_array_equal(b.actions, act[b.indices])
        np.testing.assert_array_equal(b.rewards, rew[b.indices])
        np.testing.assert_array_equal(b.dones, done[b.indices])
        seen.update(b.indices.tolist())
        if len(seen) == 50:
            break
    assert seen == set(range(50))
    t = records_from_bytes(pushed.tobytes(), rc.record_dtype)
    np.testing.assert_array_equal(t.next_obs, nxt)
    # a single transition, pushed with the default (max) priority
    one = rc.push(obs[0], act[0], rew[0], nxt[0], done[0])
    assert one.tolist() == [50]
    rc.close()


def test_prioritized_frequencies_match_priorities(switch: SoftSwitch) -> None:
    rc = _client(switch)
    k = 16
    prios = np.arange(1, k + 1, dtype=np.float64) / 4
    rc.push(*_transitions(k), priority=prios)
    draws = 40
    counts = np.zeros(k)
    totals = set()
    for _ in range(draws):
        b = rc.sample(64, prioritized=True, beta=0.5)
        counts += np.bincount(b.indices, minlength=k)
        totals.update(b.totals.tolist())
        np.testing.assert_array_equal(b.priorities, prios[b.indices])
        w = (b.size * b.priorities / b.totals) ** -0.5
        np.testing.assert_allclose(b.weights, w / w.max(), rtol=1e-6)
    assert totals == {int(to_fixed(prios).sum())}
    expected = 64 * draws * prios / prios.sum()
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < chi2_critical(k - 1, 0.001), (chi2, counts, expected)
    # uniform sampling ignores priorities
    counts[:] = 0
    for _ in range(draws):
        b = rc.sample(64, prioritized=False)
        counts += np.bincount(b.indices, minlength=k)
        assert (b.weights == 1).all() and (b.totals == k).all()
    expected = np.full(k, 64 * draws / k)
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < chi2_critical(k - 1, 0.001), (chi2, counts)
    rc.close()


def test_update_priorities_and_large_batches(switch: SoftSwitch) -> None:
    rc = _client(switch)
    rc.push(*_transitions(40))
    rc.update_priorities(np.arange(40), np.full(40, 1e-9))  # clamped to 1/65536
    rc.update_priorities([7], [1000.0])
    b = rc.sample(100, prioritized=True)
    assert len(b.indices) == 100
    assert (b.indices == 7).mean() > 0.9
    assert rc.max_priority == 1000.0
    with SwitchControl(switch.url) as ctl:
        assert ctl.replay_total() == 39 + 1000 * 65536
        assert ctl.counters()["CNT_RX_SAMPLE"] == 3  # 64 + 32 + 4
    rc.update_priorities([63], [1.0])  # index >= size: skipped and counted
    with SwitchControl(switch.url) as ctl:
        for _ in range(100):
            if ctl.read("CNT_DROP_BAD_INDEX") == 1:
                break
        assert ctl.read("CNT_DROP_BAD_INDEX") == 1
    rc.close()


def test_fixed_point_helpers() -> None:
    assert to_fixed([0.0, 1.0, 0.5, 1e12, 1.5 / 65536]).tolist() == [1, 65536, 32768,
                                                                       2**32 - 1, 2]
    np.testing.assert_array_equal(from_fixed(to_fixed([0.25, 3.0])), [0.25, 3.0])


def test_errors(switch: SoftSwitch) -> None:
    with pytest.raises(ValueError, match="RPL_RECORD_BYTES is 192"):
        ReplayClient(switch.url, worker=1, obs_shape=(100,))
    rc = _client(switch, timeout=0.01, retries=2, rate_timeout=0.05)
    with pytest.raises(ReplayEmptyError, match="NOT_YET .EMPTY.*empty"):
        rc.sample(8)
    with pytest.raises(ValueError, match="obs shape"):
        rc.push(np.zeros((2, 4)), [[0, 0]] * 2, [0, 0], np.zeros((2, *OBS)), [0, 0])
    rc.close()
    unregistered = _client(switch, register=False, timeout=0.01, retries=2)
    with pytest.raises(ReplayTimeoutError, match="PUSH"):
        unregistered.push(*_transitions(3))
    unregistered.close()
