"""Replay clients against the rate limiter of a soft switch (docs/protocol.md section 5).

Both soft switch engines, both client loops (the native ``replay_sample`` and the Python
one): a blocked PUSH or SAMPLE_REQ waits and is resent until the limiter lets it through,
or raises :class:`RateLimitTimeoutError` after ``rate_timeout``; nothing is lost. The long
run pushes and samples from several actor and learner threads and checks Reverb's
guarantee from the switch's own counters and ``RPL_RATE_DIFF``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

from hostdrv import (
    ROLE_ACTOR,
    ROLE_LEARNER,
    RateLimitTimeoutError,
    ReplayClient,
    SoftSwitch,
    SwitchControl,
)
from hostdrv.wire import consts as C

ONE = C.SPI_ONE


@pytest.fixture(params=["native", "model"])
def switch(request: pytest.FixtureRequest) -> Iterator[SoftSwitch]:
    sw = SoftSwitch(capacity=1024, record_bytes=64, engine=request.param).start()
    try:
        with SwitchControl(sw.url) as ctl:
            ctl.configure_replay(seed=7)
        yield sw
    finally:
        sw.close()


@pytest.fixture(params=["native", "python"])
def client_loop(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The native sample loop (nrl_client.cpp) or the Python one."""
    monkeypatch.setenv("NRL_NATIVE_CLIENT", "1" if request.param == "native" else "0")
    return request.param


def _client(sw: SoftSwitch, worker: int, **kw: object) -> ReplayClient:
    return ReplayClient(sw.url, worker=worker, obs_shape=(4,), action_shape=(),  # type: ignore[arg-type]
                        timeout=1.0, **kw)


def _records(n: int, tag: int) -> np.ndarray:
    """n distinct 64-byte records: bytes 0..3 the record's number, byte 4 the tag."""
    r = np.zeros((n, 64), dtype=np.uint8)
    r[:, :4] = np.arange(n, dtype="<u4").view(np.uint8).reshape(n, 4)
    r[:, 4] = tag
    return r


def _counters(ctl: SwitchControl) -> dict[str, int]:
    return {n: ctl.read(n) for n in ("CNT_RX_PUSH", "CNT_TX_PUSH_ACK", "CNT_TX_PUSH_NOT_YET",
                                     "CNT_RX_SAMPLE", "CNT_TX_SAMPLE_RESP",
                                     "CNT_TX_SAMPLE_NOT_YET", "RPL_SIZE")}


def test_sample_waits_for_min_size(switch: SoftSwitch, client_loop: str) -> None:
    ctl = SwitchControl(switch.url)
    ctl.configure_rate_limiter(min_size=40)
    learner, actor = _client(switch, 1), _client(switch, 2)
    got: list[object] = []
    t = threading.Thread(target=lambda: got.append(learner.sample(8, prioritized=False)))
    t.start()
    time.sleep(0.2)
    assert t.is_alive()  # refused: below RPL_MIN_SIZE
    actor.push_records(_records(39, 1), np.full(39, ONE, dtype=np.uint32))
    time.sleep(0.1)
    assert t.is_alive()
    actor.push_records(_records(1, 2), np.full(1, ONE, dtype=np.uint32))
    t.join(10)
    assert not t.is_alive() and len(got[0].indices) == 8  # type: ignore[attr-defined]
    c = _counters(ctl)
    assert c["CNT_TX_SAMPLE_NOT_YET"] >= 2 and c["CNT_TX_SAMPLE_RESP"] == 8
    assert c["CNT_RX_SAMPLE"] == c["CNT_TX_SAMPLE_NOT_YET"] + 1
    for x in (learner, actor, ctl):
        x.close()


def test_refused_push_is_resent_whole(switch: SoftSwitch, client_loop: str) -> None:
    """SPI 2, error 32: 48 records need their samples before the last batches pass."""
    ctl = SwitchControl(switch.url)
    ctl.configure_rate_limiter(min_size=8, samples_per_insert=2.0, error_buffer=32.0)
    actor, learner = _client(switch, 1), _client(switch, 2)
    done: list[np.ndarray] = []
    t = threading.Thread(target=lambda: done.append(
        actor.push_records(_records(48, 3), np.full(48, ONE, dtype=np.uint32))))
    t.start()
    time.sleep(0.3)
    assert t.is_alive()  # the third batch of 16 waits for samples
    assert ctl.read("CNT_TX_PUSH_NOT_YET") > 0
    # exactly the samples the three PUSHes allow: diff may fall to min_diff = S*M - E, so
    # (48*S - min_diff) / 16 batches; each batch the learner asks for is served once the
    # actor's next PUSH passes, and the last PUSH passes before the last batch is served.
    # (Sampling "while the actor is alive" raced: a batch asked for just after the last
    # PUSH_ACK, before the thread ended, waited for a PUSH that never came.)
    lim = ctl.rate_limiter()
    min_diff = lim.min_diff
    batches = int(48 * lim.samples_per_insert - min_diff) // 16
    for _ in range(batches):
        assert len(learner.sample(16, prioritized=False).indices) == 16
    t.join(10)
    assert not t.is_alive()
    np.testing.assert_array_equal(done[0], np.arange(48))
    c = _counters(ctl)
    assert (c["RPL_SIZE"], c["CNT_TX_PUSH_ACK"]) == (48, 3)  # each batch stored once
    assert c["CNT_RX_PUSH"] == 3 + c["CNT_TX_PUSH_NOT_YET"]
    assert c["CNT_TX_SAMPLE_RESP"] == 16 * batches
    lim = ctl.rate_limiter()
    assert lim.diff == 48 * 2.0 - c["CNT_TX_SAMPLE_RESP"]
    assert lim.diff == min_diff  # the limiter's floor, reached exactly
    for x in (learner, actor, ctl):
        x.close()


def test_rate_timeout_names_the_limiter(switch: SoftSwitch, client_loop: str) -> None:
    ctl = SwitchControl(switch.url)
    ctl.configure_rate_limiter(min_size=100)
    rc = _client(switch, 1, rate_timeout=0.2)
    rc.push_records(_records(5, 4), np.full(5, ONE, dtype=np.uint32))
    with pytest.raises(RateLimitTimeoutError,
                       match=r"NOT_YET \(MIN_SIZE\).*size=5, RPL_MIN_SIZE=100") as e:
        rc.sample(4)
    assert e.value.reason == "MIN_SIZE" and e.value.waited >= 0.2
    # SPI 2, error 32: max_diff 34 samples; one PUSH of 16 (diff 32) passes, the next waits
    ctl.configure_rate_limiter(min_size=1, samples_per_insert=2.0, error_buffer=32.0)
    with pytest.raises(RateLimitTimeoutError, match=r"NOT_YET \(RATE\).*RPL_SPI=2 ") as e:
        rc.push_records(_records(32, 5), np.full(32, ONE, dtype=np.uint32))
    assert e.value.limiter["RPL_SPI"] == 2 * ONE and e.value.limiter["diff"] == 32 * ONE
    assert ctl.read("RPL_SIZE") == 21  # the first batch of 16 passed, nothing of the second
    with pytest.raises(ValueError, match="error_buffer"):
        ctl.configure_rate_limiter(1, 4.0, 2.0)
    rc.close()
    ctl.close()


def test_long_run_keeps_the_ratio() -> None:
    """Four actors and three learners (threads, their own clients) push and sample through a
    native soft switch under SPI 2.5 with an error buffer of 96 samples: a few thousand
    requests, none lost, RPL_RATE_DIFF within Reverb's bounds while the traffic runs, and at
    the end samples / inserts within (SPI - offset / inserts) +- error / inserts."""
    spi, err, min_size = 2.5, 96.0, 64
    n_actors, pushes = 4, 250
    with SoftSwitch(capacity=16384, record_bytes=64, engine="native").start() as sw:
        ctl = SwitchControl(sw.url)
        ctl.configure_replay(seed=99)
        ctl.configure_rate_limiter(min_size, spi, err)
        inserted = [0] * n_actors
        sampled = [0] * 3
        stop = threading.Event()
        errors: list[BaseException] = []
        bounds: list[float] = []

        def actor(k: int) -> None:
            rng = np.random.default_rng(k)
            rc = _client(sw, k, roles=ROLE_ACTOR, rate_timeout=30.0)
            try:
                for _ in range(pushes):
                    n = int(rng.integers(1, 17))
                    idx = rc.push_records(_records(n, k), np.full(n, ONE, dtype=np.uint32))
                    assert (idx >= 0).all()
                    inserted[k] += n
            except BaseException as e:  # noqa: BLE001 - reported by the main thread
                errors.append(e)
            finally:
                rc.close()

        def learner(k: int) -> None:
            rng = np.random.default_rng(100 + k)
            rc = _client(sw, 4 + k, roles=ROLE_LEARNER, rate_timeout=0.5)
            try:
                while not stop.is_set():
                    b = 1 << int(rng.integers(0, 6))
                    try:
                        s = rc.sample(b, prioritized=bool(rng.integers(0, 2)))
                    except RateLimitTimeoutError:
                        continue  # the actors are done (or slow): ask again until stopped
                    assert len(s.indices) == b
                    sampled[k] += b
            except BaseException as e:  # noqa: BLE001
                errors.append(e)
            finally:
                rc.close()

        actors = [threading.Thread(target=actor, args=(k,)) for k in range(n_actors)]
        learners = [threading.Thread(target=learner, args=(k,)) for k in range(3)]
        for t in actors + learners:
            t.start()
        deadline = time.monotonic() + 300
        while any(t.is_alive() for t in actors) and time.monotonic() < deadline:
            bounds.append(ctl.rate_limiter().diff)  # while the traffic runs
            time.sleep(0.05)
        stop.set()
        for t in learners:
            t.join(60)
        assert not errors, errors
        c = _counters(ctl)
        lim = ctl.rate_limiter()
        ctl.close()
    ins, smp = sum(inserted), sum(sampled)
    ops = c["CNT_RX_PUSH"] + c["CNT_RX_SAMPLE"]
    print(f"long run: {ins} records in {n_actors * pushes} PUSHes, {smp} samples, "
          f"{ops} requests ({c['CNT_TX_PUSH_NOT_YET']} PUSH and {c['CNT_TX_SAMPLE_NOT_YET']} "
          f"SAMPLE_REQ NOT_YET), samples/inserts {smp / ins:.4f} (SPI {spi}), diff {lim.diff}")
    # nothing lost: every record stored once, every sample counted, every request answered
    assert c["RPL_SIZE"] == ins and c["CNT_TX_PUSH_ACK"] == n_actors * pushes
    assert c["CNT_RX_PUSH"] == c["CNT_TX_PUSH_ACK"] + c["CNT_TX_PUSH_NOT_YET"]
    assert c["CNT_TX_SAMPLE_RESP"] == smp
    assert ops > 2000 and c["CNT_TX_PUSH_NOT_YET"] > 0 and c["CNT_TX_SAMPLE_NOT_YET"] > 0
    # the accumulator follows the served requests, within Reverb's bounds all along
    assert lim.diff == ins * spi - smp
    offset = spi * min_size
    for d in [*bounds, lim.diff]:
        assert min(0.0, offset - err) <= d <= max(0.0, offset + err)
    # Reverb's guarantee once past the minimum size: diff within offset +- error, that is
    # samples / inserts within (SPI - offset / inserts) +- error / inserts
    assert offset - err <= lim.diff <= offset + err
    assert abs(smp / ins - (spi - offset / ins)) <= err / ins
