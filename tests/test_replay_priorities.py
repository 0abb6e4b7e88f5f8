"""Replay priorities: bad ones are refused before anything is sent, good ones are clamped (§3).

* ``ReplayClient.push``, ``push_records``, ``update_priorities`` and
  ``update_fixed`` raise ``ValueError`` naming the position and the value of
  the first NaN, negative, infinite (or, for Q16.16 integers, out of u32)
  priority; the client sends nothing (its transport is watched) and the
  switch's ``CNT_RX_PUSH``, ``CNT_RX_UPDATE``, ``RPL_SIZE`` and
  ``RPL_TOTAL`` do not move.
* Finite priorities go through ``soft://`` as ``round(p · 65536)`` clamped to
  ``[1, 2^32 − 1]`` (``docs/protocol.md`` section 3): every leaf read back by
  uniform sampling, and ``RPL_TOTAL``, equal the values computed here with
  exact rational arithmetic from what was sent.
* The three strategies of ``rl.replay`` refuse the same priorities without
  storing anything or moving their largest priority.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
import test_replay_client as base

from hostdrv import ReplayClient, SoftSwitch, SwitchControl
from rl.replay import (
    RecordLayout,
    Replay,
    ReplayBackend,
    ReplayServer,
    ReplaySpec,
    ServerReplay,
    make_replay,
)

#: the soft switch of tests/test_replay_client.py (C = 64, R = 192, seeded)
switch = base.switch

M32 = 2**32 - 1
BAD_FLOATS = [math.nan, -math.nan, -1.0, -1e-300, math.inf, -math.inf]
#: values a Q16.16 (u32) priority or index cannot hold
BAD_FIXED = [math.nan, math.inf, -1, -1.0, 2**32, 2.0**40, 0.5]


def q16(p: float) -> int:
    """Protocol.md section 3 for a live record, exactly: round(p · 65536) into [1, 2^32 − 1]."""
    return min(max(round(Fraction(p) * 65536), 1), M32)


def _bad_message(name: str, pos: int | None, value: Any) -> str:
    """The start of the error the clients raise for ``value`` at ``pos`` of argument ``name``."""
    shown = float(value) if isinstance(value, float) else int(value)
    where = name if pos is None else f"{name}[{pos}]"
    return "^" + re.escape(f"bad {where}={shown!r}: ")


def _state(ctl: SwitchControl) -> dict[str, int]:
    return {"CNT_RX_PUSH": ctl.read("CNT_RX_PUSH"), "CNT_RX_UPDATE": ctl.read("CNT_RX_UPDATE"),
            "RPL_SIZE": ctl.read("RPL_SIZE"), "RPL_TOTAL": ctl.replay_total()}


class _SendLog:
    """Wraps a transport's ``send`` and counts the messages."""

    def __init__(self, rc: ReplayClient, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sent = 0
        send = rc.transport.send

        def counting_send(data: bytes | bytearray | memoryview) -> None:
            self.sent += 1
            send(data)

        monkeypatch.setattr(rc.transport, "send", counting_send)


def _read_leaves(rc: ReplayClient, n: int) -> dict[int, int]:
    """Q16.16 priority of each of the ``n`` valid leaves, from uniform samples' descriptors."""
    seen: dict[int, int] = {}
    for _ in range(200):
        b = rc.sample(64, prioritized=False)
        for i, p in zip(b.indices.tolist(), (b.priorities * 65536).tolist(), strict=True):
            assert p == int(p)
            seen[i] = int(p)
        if len(seen) == n:
            return seen
    raise AssertionError(f"uniform sampling reached only {sorted(seen)} of {n} records")


# ---------------------------------------------------------------------------
# the client refuses, sends nothing, the switch does not move


@pytest.mark.parametrize("bad", BAD_FLOATS, ids=repr)
def test_client_refuses_bad_float_priorities_before_sending(
        bad: float, switch: SoftSwitch, monkeypatch: pytest.MonkeyPatch) -> None:
    rc = base._client(switch)
    n = 6
    good = np.linspace(0.5, 2.0, n)
    rc.push(*base._transitions(n), priority=good)
    max_before = rc.max_priority
    with SwitchControl(switch.url) as ctl:
        before = _state(ctl)
        log = _SendLog(rc, monkeypatch)
        for pos in (0, 3, n - 1):
            prios = good.copy()
            prios[pos] = bad
            with pytest.raises(ValueError, match=_bad_message("priority", pos, bad)):
                rc.push(*base._transitions(n, seed=1), priority=prios)
            with pytest.raises(ValueError, match=_bad_message("priorities", pos, bad)):
                rc.update_priorities(np.arange(n), prios)
        with pytest.raises(ValueError, match=_bad_message("priority", None, bad)):
            rc.push(*base._transitions(n, seed=1), priority=bad)
        # more than one UPDATE's worth of pairs, the bad one in the last message
        many = np.full(300, 1.0)
        many[-1] = bad
        with pytest.raises(ValueError, match=_bad_message("priorities", 299, bad)):
            rc.update_priorities(np.arange(300) % n, many)
        assert log.sent == 0
        assert rc.max_priority == max_before
        assert _state(ctl) == before
        # the same client still works, and what it sends now is all that arrives
        rc.push(*base._transitions(2, seed=2), priority=[1.0, 2.0])
        after = _state(ctl)
    assert after == {"CNT_RX_PUSH": before["CNT_RX_PUSH"] + 1,
                     "CNT_RX_UPDATE": before["CNT_RX_UPDATE"],
                     "RPL_SIZE": before["RPL_SIZE"] + 2,
                     "RPL_TOTAL": before["RPL_TOTAL"] + q16(1.0) + q16(2.0)}
    rc.close()


@pytest.mark.parametrize("bad", BAD_FIXED, ids=repr)
def test_client_refuses_bad_fixed_priorities_before_sending(
        bad: float, switch: SoftSwitch, monkeypatch: pytest.MonkeyPatch) -> None:
    rc = base._client(switch)
    n = 20  # two PUSH messages (16 + 4 records)
    rc.push(*base._transitions(4))
    records = rc.pack(*base._transitions(n, seed=3)).view(np.uint8).reshape(n, rc.record_bytes)
    with SwitchControl(switch.url) as ctl:
        before = _state(ctl)
        log = _SendLog(rc, monkeypatch)
        for pos in (0, n - 1):
            fixed: list[Any] = [65536] * n
            fixed[pos] = bad
            with pytest.raises(ValueError, match=_bad_message("priorities", pos, bad)):
                rc.push_records(records, fixed)
            with pytest.raises(ValueError, match=_bad_message("priorities", pos, bad)):
                rc.update_fixed(np.arange(n) % 4, fixed)
            indices: list[Any] = list(range(n))
            indices[pos] = bad
            with pytest.raises(ValueError, match=_bad_message("indices", pos, bad)):
                rc.update_fixed(indices, [65536] * n)
        assert log.sent == 0
        assert _state(ctl) == before
    rc.close()


def test_client_refuses_mismatched_update_lengths(switch: SoftSwitch,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    rc = base._client(switch)
    log = _SendLog(rc, monkeypatch)
    with pytest.raises(ValueError, match="length=2: need one per index"):
        rc.update_fixed([0, 1, 2], [1, 2])
    with pytest.raises(ValueError, match="length=2: need one per index"):
        rc.update_priorities([0, 1, 2], [1.0, 2.0])
    assert log.sent == 0
    rc.close()


# ---------------------------------------------------------------------------
# finite priorities on the wire: exactly the clamped values are stored

EDGE_PRIORITIES = [0.0, -0.0, 1e-300, 2.0**-17, 2.0**-17 * 1.0001, 0.75 / 65536, 1.0, 3.25,
                   65535.5, 65535.99999, 65536.0, 1e12, 1e300]


def test_push_stores_the_clamped_q16_values(switch: SoftSwitch) -> None:
    rc = base._client(switch)
    n = len(EDGE_PRIORITIES)
    want = [q16(p) for p in EDGE_PRIORITIES]
    assert min(want) == 1 and max(want) == M32  # the edges are exercised
    idx = rc.push(*base._transitions(n), priority=EDGE_PRIORITIES)
    np.testing.assert_array_equal(idx, np.arange(n))
    assert _read_leaves(rc, n) == dict(enumerate(want))
    with SwitchControl(switch.url) as ctl:
        assert ctl.read("RPL_SIZE") == n
        assert ctl.replay_total() == sum(want)
    # the same values through an UPDATE, in reverse order
    rc.update_priorities(np.arange(n), EDGE_PRIORITIES[::-1])
    assert _read_leaves(rc, n) == dict(enumerate(want[::-1]))
    with SwitchControl(switch.url) as ctl:
        assert ctl.replay_total() == sum(want)
    assert rc.max_priority == max(EDGE_PRIORITIES)
    rc.close()


def test_fixed_priorities_are_stored_as_given(switch: SoftSwitch) -> None:
    rc = base._client(switch)
    fixed = [0, 1, 65536, M32, 0, 12345]  # 0 allowed: a leaf never sampled by priority
    n = len(fixed)
    records = rc.pack(*base._transitions(n)).view(np.uint8).reshape(n, rc.record_bytes)
    rc.push_records(records, fixed)
    assert _read_leaves(rc, n) == dict(enumerate(fixed))
    rc.update_fixed(np.arange(n), np.asarray(fixed[::-1], dtype=np.float64))
    assert _read_leaves(rc, n) == dict(enumerate(fixed[::-1]))
    with SwitchControl(switch.url) as ctl:
        assert ctl.replay_total() == sum(fixed)
    rc.close()


# ---------------------------------------------------------------------------
# rl.replay: local, server and in-network strategies

LAYOUT = RecordLayout(obs_shape=(4,), record_bytes=192)


@pytest.fixture(params=["local", "server", "innet"])
def strategy(request: pytest.FixtureRequest,
             switch: SoftSwitch) -> Iterator[tuple[Replay, Any]]:
    """A replay handle and a function giving (records stored, priority total) behind it."""
    kind = request.param
    spec = ReplaySpec(kind=kind, capacity=64, record_bytes=LAYOUT.record_bytes,
                      url=switch.url if kind == "innet" else None)
    backend = ReplayBackend(spec)
    spec = backend.start()
    replay = make_replay(spec, 0, LAYOUT)
    ctl = SwitchControl(switch.url)

    def stored() -> tuple[int, int]:
        if kind == "local":
            return replay.store.size, replay.store.total  # type: ignore[attr-defined]
        if kind == "server":
            assert isinstance(replay, ServerReplay) and backend.server is not None
            store = backend.server.store
            assert store is not None
            return store.size, store.total
        return ctl.read("RPL_SIZE"), ctl.replay_total()

    try:
        yield replay, stored
    finally:
        replay.close()
        ctl.close()
        backend.stop()


def _rows(k: int) -> tuple[np.ndarray, ...]:
    obs = np.arange(4 * k, dtype=np.float32).reshape(k, 4)
    return obs, np.zeros(k, np.int64), np.ones(k, np.float32), obs + 1, np.zeros(k, bool)


@pytest.mark.parametrize("bad", BAD_FLOATS, ids=repr)
def test_replay_strategies_refuse_bad_priorities(bad: float,
                                                 strategy: tuple[Replay, Any]) -> None:
    replay, stored = strategy
    good = [0.5, 2.0, 1.0]
    replay.push(*_rows(3), priorities=good)
    before, max_before = stored(), replay.max_priority
    assert before == (3, sum(q16(p) for p in good))
    with pytest.raises(ValueError, match=_bad_message("priorities", 1, bad)):
        replay.push(*_rows(3), priorities=[1.0, bad, 1.0])
    with pytest.raises(ValueError, match=_bad_message("priorities", 2, bad)):
        replay.update_priorities(np.arange(3), [1.0, 1.0, bad])
    assert replay.max_priority == max_before
    # a sample is answered after anything sent before it: nothing was
    replay.sample(4, prioritized=False)
    assert stored() == before
    replay.update_priorities(np.arange(3), [0.0, 1e300, 1.0])
    replay.sample(4, prioritized=False)
    assert stored() == (3, q16(0.0) + q16(1e300) + q16(1.0))


def test_server_store_gets_the_clamped_values() -> None:
    server = ReplayServer(capacity=64, record_bytes=LAYOUT.record_bytes).start()
    replay = ServerReplay(LAYOUT, server.address)
    try:
        n = len(EDGE_PRIORITIES)
        replay.push(*_rows(n), priorities=EDGE_PRIORITIES)
        assert server.store is not None
        leaves = server.store.tree[64:64 + n].tolist()
        assert leaves == [q16(p) for p in EDGE_PRIORITIES]
    finally:
        replay.close()
        server.stop()
