"""Atari frames stored once and stacked at sampling (rl.replay.frames, issue 26): the record
layout, Dopamine-style zero padding before an episode's first frame, samples that are no
transition dropped and replaced, and the whole path through a soft switch with two actors
whose records interleave."""

from __future__ import annotations

import numpy as np

from hostdrv import SoftSwitch, SwitchControl
from hostdrv.wire.records import StackedSample
from rl.replay.frames import (
    FrameLayout,
    FrameWriter,
    InNetFrameReplay,
    frame_record_bytes,
    stack_frames,
)

SMALL = FrameLayout(frame_shape=(8, 8))


def _frame(actor: int, t: int, shape: tuple[int, ...] = (8, 8)) -> np.ndarray:
    """A frame that says when (t + 1, never 0) and who (pixel [0, 1])."""
    f = np.full(shape, t + 1, np.uint8)
    f[0, 1] = actor
    return f


def test_the_atari_record_is_7104_bytes() -> None:
    assert frame_record_bytes((84, 84)) == 7104
    lay = FrameLayout()
    assert lay.dtype.itemsize == 7104 and lay.stack == 5
    assert lay.dtype.fields["reward"][1] == 7056


def _episode(w: FrameWriter, actor: int, t0: int, n: int, terminal: bool) -> None:
    shape = w.layout.frame_shape
    w.first(_frame(actor, t0, shape))
    for t in range(1, n + 1):
        w.step(_frame(actor, t0 + t, shape), action=t % 3, reward=float(t), terminal=terminal and t == n,
               priority=1.0)


def test_zero_padding_before_the_first_frame() -> None:
    """One actor, an episode of 2 steps after one of 3: stacks of 5 ending in the new episode
    zero every frame before its first; a first record and a broken chain are no transition."""
    w = FrameWriter(SMALL)
    _episode(w, 0, 0, 3, True)  # records 0 (first) .. 3 (terminal)
    _episode(w, 0, 10, 2, False)  # records 4 (first) .. 6
    recs, prios = w.take()
    assert list(prios[[0, 4]]) == [0, 0] and (prios[[1, 2, 3, 5, 6]] > 0).all()
    R = recs.shape[1]

    def stacked(ends: list[int], valid_from: list[int]) -> StackedSample:
        b = len(ends)
        out = np.zeros((b, 5, R), np.uint8)
        valid = np.zeros((b, 5), bool)
        for i, (x, v0) in enumerate(zip(ends, valid_from, strict=True)):
            for j in range(5):
                at = x - 4 + j
                if at >= v0:
                    out[i, j], valid[i, j] = recs[at], True
        return StackedSample(out, valid, np.where(valid, 0, -1), np.array(ends), np.ones(b,
                             np.uint32), np.ones(b, np.uint64), 7, np.ones(b, np.float32))

    fb = stack_frames(stacked([6, 5, 4, 3, 2], [0, 0, 0, 0, 0]), SMALL)
    assert list(fb.usable) == [True, True, False, True, True]  # 4 is a first
    b = fb.batch
    # x = 6: s = [0, 0, o_4, o_5] (o_2, o_3 are the previous episode's), s' = [0, o_4, o_5, o_6]
    assert [int(f[0, 0]) for f in b.obs[0]] == [0, 0, 11, 12]
    assert [int(f[0, 0]) for f in b.next_obs[0]] == [0, 11, 12, 13]
    assert (b.actions[0], b.rewards[0], b.dones[0]) == (2, 2.0, 0.0)
    # x = 3 (terminal): s = [0, o_0, o_1, o_2], s' = [o_0 .. o_3], done
    assert [int(f[0, 0]) for f in b.obs[2]] == [0, 1, 2, 3] and b.dones[2] == 1.0
    # a broken chain: x = 6 whose predecessor 5 is gone is no transition
    fb = stack_frames(stacked([6, 3], [6, 2]), SMALL)
    assert list(fb.usable) == [False, True]
    assert [int(f[0, 0]) for f in fb.batch.obs[0]] == [0, 0, 0, 3]  # records 0, 1 gone: zeros


def test_frames_through_the_soft_switch() -> None:
    """Two actors push their episodes' frame records, interleaved, into one switch; the
    learner's transitions are each one actor's consecutive frames."""
    lay = FrameLayout(frame_shape=(84, 84))
    with SoftSwitch(capacity=1 << 12, record_bytes=lay.dtype.itemsize, engine="native") as sw:
        sw.start()
        with SwitchControl(sw.url) as ctl:
            ctl.configure_replay(seed=5)
        actors = [InNetFrameReplay(lay, sw.url, w) for w in (1, 2)]
        writers = [FrameWriter(lay) for _ in actors]
        for k in range(6):
            for a, (rep, w) in enumerate(zip(actors, writers, strict=True)):
                _episode(w, a + 1, 20 * k, 3 + k % 3, terminal=k % 2 == 0)
                rep.push_frames(*w.take())
        b = actors[0].sample(32, prioritized=True)
        assert b.obs.shape == (32, 4, 84, 84) and b.next_obs.shape == (32, 4, 84, 84)
        for i in range(32):
            s, s2 = b.obs[i, :, 0, 0].astype(int), b.next_obs[i, :, 0, 0].astype(int)
            assert (s[1:] == s2[:-1]).all()
            live = s2[s2 > 0]
            assert (np.diff(live) == 1).all()  # consecutive frames of one actor's episode
            who = b.next_obs[i, :, 0, 1][s2 > 0]
            assert len(set(who.tolist())) == 1
            assert b.rewards[i] == (live[-1] - 1) % 20
        u = actors[1].sample(64, prioritized=False)  # uniform: firsts drawn, dropped, replaced
        assert len(u.indices) == 64
        assert actors[1].dropped > 0
        for rep in actors:
            rep.close()


def test_local_frames_match_the_switch_at_the_same_seed() -> None:
    """One actor's frame records in a worker's own store and in a soft switch, the same
    seed: the same transitions (the switch's sampler and chain rule on the host)."""
    from rl.replay.frames import LocalFrameReplay

    lay = FrameLayout(frame_shape=(84, 84))
    local = LocalFrameReplay(lay, 1 << 6, seed=77)
    with SoftSwitch(capacity=1 << 6, record_bytes=lay.dtype.itemsize, engine="native") as sw:
        sw.start()
        with SwitchControl(sw.url) as ctl:
            ctl.configure_replay(seed=77)
        innet = InNetFrameReplay(lay, sw.url, 1)
        w = FrameWriter(lay)
        for k in range(12):  # 12 episodes of 4 to 8 records: the 64-record ring wraps
            _episode(w, 1, 10 * k, 3 + k % 5, terminal=k % 3 == 0)
            recs, prios = w.take()
            a, b = local.push_frames(recs, prios), innet.push_frames(recs, prios)
            assert (a == b).all()
        for prioritized in (True, False):
            x = local.sample(32, prioritized=prioritized)
            y = innet.sample(32, prioritized=prioritized)
            assert (x.indices == y.indices).all() and (x.obs == y.obs).all()
            assert (x.next_obs == y.next_obs).all() and (x.weights == y.weights).all()
            local.update_priorities(x.indices, np.linspace(0.1, 3, 32))
            innet.update_priorities(y.indices, np.linspace(0.1, 3, 32))
        assert local.dropped == innet.dropped
        innet.close()
