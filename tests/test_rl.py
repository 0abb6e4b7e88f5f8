"""Fast tests of the RL stack: gradient sync strategies, replay strategies, training loops.

Worker *threads* (``launcher="thread"``) keep these fast; the soft switch runs
in-process on an ephemeral port. The learning curves are in
``test_rl_learning.py`` (slow).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import hostdrv
from rl import a2c, cli, ddpg, dqn, ppo
from rl.replay import (
    LocalReplay,
    RecordLayout,
    ReplayBackend,
    ReplayServer,
    ReplaySpec,
    ServerReplay,
    XorShift32,
    importance_weights,
    make_replay,
    to_q16,
)
from rl.run import DistConfig, RunSummary, run_workers
from rl.sync import (
    GradientExchange,
    Quantizer,
    RoundTable,
    StopBoard,
    SyncBackend,
    SyncSpec,
    make_sync,
)


@pytest.fixture
def switch() -> Iterator[hostdrv.SoftSwitch]:
    sw = hostdrv.SoftSwitch(capacity=1024).start()
    yield sw
    sw.close()


def tiny_ppo(seed: int = 3) -> ppo.Config:
    return ppo.Config(seed=seed, num_envs=2, num_steps=32, num_minibatches=2, update_epochs=2,
                      total_timesteps=3 * 2 * 32 * 4, hidden=32)


def train(module: object, cfg: object, dist: DistConfig, *, target: float | None = None,
          replay: ReplaySpec | None = None) -> RunSummary:
    return run_workers(module.train_worker, cfg, dist, algo=module.__name__, env_id=cfg.env_id,
                       total_steps=cfg.total_timesteps, target_return=target, replay=replay,
                       progress=False, record_digests=True, timeout=120)


def assert_same_params(a: RunSummary, b: RunSummary) -> None:
    for ra, rb in zip(a.results, b.results, strict=True):
        assert ra.params.keys() == rb.params.keys()
        for k in ra.params:
            assert ra.params[k].tobytes() == rb.params[k].tobytes(), (ra.rank, k)
        assert ra.digests == rb.digests


def assert_workers_identical(s: RunSummary) -> None:
    first = s.results[0]
    assert first.rounds > 0 and len(first.digests) == first.rounds
    for r in s.results[1:]:
        assert r.digests == first.digests, f"worker {r.rank} diverged"


# -- units ---------------------------------------------------------------------------------


def test_quantizer_is_exact_and_saturates() -> None:
    q = Quantizer(np.array([4.0, 4.0, 1.0]), world=4)
    enc = q.encode(np.array([0.25, -1e12, 3.6], np.float32))
    assert enc.tolist() == [1, -((2**31 - 1) // 4), 4]
    assert q.decode(enc * 4).tolist()[0] == 1.0


def test_round_table_sync_and_async() -> None:
    t = RoundTable(3, "sync")
    assert t.contribute(0, 0, 0, np.ones(2, np.float32)) is None
    assert t.contribute(0, 0, 0, np.ones(2, np.float32)) is None  # duplicate ignored
    assert t.contribute(1, 0, 0, np.ones(2, np.float32)) is None
    assert t.contribute(2, 0, 0, np.ones(2, np.float32)).tolist() == [3.0, 3.0]
    a = RoundTable(3, "async", threshold=2, staleness=1)
    assert a.contribute(0, 5, 3, np.ones(1, np.float32)) is None  # staleness 2 > 1: dropped
    assert a.dropped_stale == 1
    assert a.contribute(1, 5, 4, np.ones(1, np.float32)) is None
    assert a.contribute(2, 5, 5, 2 * np.ones(1, np.float32)).tolist() == [3.0]
    assert a.contribute(0, 5, 5, np.ones(1, np.float32)) is None  # late
    assert a.dropped_late == 1


def test_xorshift32_matches_the_protocol() -> None:
    g = XorShift32(0)
    x = 0x2545F491
    for _ in range(3):
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
        assert g.draw() == x


# -- int32: bit-identical with the in-process reference sum --------------------------------


@pytest.mark.parametrize("kind", ["inswitch", "ps"])
def test_int32_training_bit_identical_to_reference(kind: str,
                                                   switch: hostdrv.SoftSwitch) -> None:
    cfg = tiny_ppo()
    common = dict(workers=4, mode="sync", dtype="int32", scale=2.0**20, launcher="thread")
    got = train(ppo, cfg, DistConfig(sync=kind, switch=switch.url, **common))
    ref = train(ppo, cfg, DistConfig(sync="reference", **common))
    assert got.results[0].rounds == 3 * 2 * 2
    assert_same_params(got, ref)
    assert_workers_identical(got)


# -- fp32: all workers identical after every round -----------------------------------------


@pytest.mark.parametrize("kind", ["inswitch", "ps", "reference"])
def test_fp32_workers_identical_after_every_round(kind: str,
                                                   switch: hostdrv.SoftSwitch) -> None:
    s = train(a2c, a2c.Config(seed=5, num_envs=2, num_steps=8, total_timesteps=20 * 16 * 4,
                              hidden=32),
              DistConfig(workers=4, sync=kind, switch=switch.url, launcher="thread"))
    assert s.results[0].rounds == 20
    assert_workers_identical(s)


def test_fp32_gloo_processes_identical_after_every_round() -> None:
    s = train(a2c, a2c.Config(seed=5, num_envs=2, num_steps=8, total_timesteps=10 * 16 * 2,
                              hidden=32),
              DistConfig(workers=2, sync="allreduce", launcher="process"))
    assert_workers_identical(s)


# -- async: threshold and staleness bound ---------------------------------------------------


def _async_round(kind: str, url: str | None, staleness: int, stale_version: int
                 ) -> list[np.ndarray]:
    """3 workers, H=2. Round 0 all fresh; in round 1 worker 2 goes first with ``stale_version``."""
    spec = SyncSpec(kind=kind, world=3, mode="async", threshold=2, staleness=staleness,
                    pipeline=0, url=url)
    backend = SyncBackend(spec, packet_elems=16, slots=4)
    spec = backend.start()
    syncs = [make_sync(spec, r) for r in range(3)]
    out: list[np.ndarray] = [np.zeros(0)] * 3
    try:
        def contribute(rank: int, version: int | None, delay: float) -> None:
            time.sleep(delay)
            out[rank] = syncs[rank].allreduce(np.full(20, 2.0**rank, np.float32),
                                              version=version)

        # round 0: everyone fresh, H=2 of 3 (the third is late and gets the result too)
        ts = [threading.Thread(target=contribute, args=(r, 0, 0.05 * r)) for r in range(3)]
        [t.start() for t in ts]
        [t.join(30) for t in ts]
        # round 1: worker 2 first, claiming weights of round `stale_version`
        ts = [threading.Thread(target=contribute, args=(2, stale_version, 0.0)),
              threading.Thread(target=contribute, args=(0, 1, 0.3)),
              threading.Thread(target=contribute, args=(1, 1, 0.6))]
        [t.start() for t in ts]
        [t.join(30) for t in ts]
    finally:
        for s in syncs:
            s.close()
        backend.stop()
    return out


@pytest.mark.parametrize("kind", ["inswitch", "ps", "reference"])
def test_async_drops_contributions_beyond_the_staleness_bound(
        kind: str, switch: hostdrv.SoftSwitch) -> None:
    # staleness 1 - 0 = 1 > bound 0: worker 2 dropped, the round is workers 0 and 1
    out = _async_round(kind, switch.url, staleness=0, stale_version=0)
    for r in range(3):
        assert out[r].tolist() == [1.0 + 2.0] * 20, (kind, r)
    # staleness 1 <= bound 1: worker 2 counts, the round is workers 2 and 0; 1 is late
    out = _async_round(kind, switch.url, staleness=1, stale_version=0)
    for r in range(3):
        assert out[r].tolist() == [4.0 + 1.0] * 20, (kind, r)


@pytest.mark.parametrize("kind", ["inswitch", "ps"])
def test_async_training_respects_threshold_and_pipeline(kind: str,
                                                        switch: hostdrv.SoftSwitch) -> None:
    s = train(ppo, tiny_ppo(), DistConfig(workers=4, sync=kind, mode="async", threshold=3,
                                          staleness=1, pipeline=1, switch=switch.url,
                                          launcher="thread"))
    for r in s.results:
        assert r.rounds > 0
        assert set(r.contributors) == {3}
        assert max(r.staleness) <= 1


def test_pipeline_deeper_than_staleness_is_refused() -> None:
    with pytest.raises(ValueError, match="pipeline"):
        SyncSpec(kind="ps", world=4, mode="async", staleness=1, pipeline=2)


# -- stop rule: every worker stops at the same round ----------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_workers_stop_together_when_solved(mode: str, switch: hostdrv.SoftSwitch) -> None:
    cfg = tiny_ppo()
    cfg.total_timesteps *= 20
    s = train(ppo, cfg, DistConfig(workers=4, sync="inswitch", mode=mode, switch=switch.url,
                                   launcher="thread"), target=15.0)
    assert all(r.solved for r in s.results)
    stops = {r.stopped_at for r in s.results}
    assert len(stops) == 1 and None not in stops, stops
    if mode == "sync":  # async: a starved worker may abandon rounds its peers never completed
        assert len({r.rounds for r in s.results}) == 1
        assert_workers_identical(s)


def test_exchange_stops_at_a_posted_round() -> None:
    import torch

    spec = SyncBackend(SyncSpec(kind="reference", world=1)).start()
    p = torch.nn.Parameter(torch.zeros(3))
    board = StopBoard()
    ex = GradientExchange(make_sync(spec, 0), [p], torch.optim.SGD([p], lr=1.0), board=board)
    p.grad = torch.ones(3)
    assert ex.step()
    board.propose(2)
    assert ex.step()
    assert not ex.step() and ex.stopped
    assert p.detach().tolist() == [-2.0] * 3


def test_a_round_without_its_contributor_count_is_skipped() -> None:
    """Async in-switch: a chunk whose round is gone comes back as zeros with no contributor;
    when it is the one holding the contributor count, the round cannot be averaged and is
    skipped (the parameters do not move), while a round with its count is applied."""
    import torch

    spec = SyncBackend(SyncSpec(kind="reference", world=1)).start()
    p = torch.nn.Parameter(torch.zeros(3))
    ex = GradientExchange(make_sync(spec, 0), [p], torch.optim.SGD([p], lr=1.0))
    p.grad = torch.ones(3)
    given_up = np.zeros(3 + 3, np.float32)  # gradients, return sum, count, contributors
    given_up[:3] = 5.0  # chunks that did arrive: not averageable without the count
    ex._apply((given_up, 0), 0)
    assert p.detach().tolist() == [0.0] * 3 and ex.log.contributors == [0]
    ex._apply((np.array([2, 2, 2, 0, 0, 2], np.float32), 1), 0)  # two contributors
    assert p.detach().tolist() == [-1.0] * 3 and ex.log.contributors == [0, 2]
    assert ex.applied_round == 1


# -- replay: the three strategies return the same records ----------------------------------


def _exercise(replay: object, rng: np.random.Generator) -> list[tuple]:
    got = []
    obs = rng.normal(size=(40, 4)).astype(np.float32)
    replay.push(obs, rng.integers(0, 2, 40), rng.normal(size=40), obs + 1, rng.random(40) < 0.1,
                priorities=rng.uniform(0.1, 3.0, 40))
    for b, prio in ((32, True), (16, False), (64, True)):
        s = replay.sample(b, prioritized=prio, beta=0.5)
        got.append((s.indices.tolist(), s.obs.tobytes(), s.actions.tolist(),
                    s.rewards.tobytes(), s.next_obs.tobytes(), s.dones.tolist(),
                    s.priorities.tolist(), s.weights.round(5).tolist()))
        replay.update_priorities(s.indices, rng.uniform(0.5, 2.0, b))
    replay.push(obs[:5], np.zeros(5, np.int64), np.ones(5), obs[:5], np.zeros(5, bool))
    s = replay.sample(32, prioritized=True)
    got.append((s.indices.tolist(), s.obs.tobytes(), s.priorities.tolist()))
    return got


def test_replay_strategies_return_the_same_records(switch: hostdrv.SoftSwitch) -> None:
    layout = RecordLayout(obs_shape=(4,), action_dtype="int64")
    seed = 12345
    spec = ReplayBackend(ReplaySpec(kind="innet", seed=seed, url=switch.url)).start()
    innet = make_replay(spec, 0, layout)
    server = ReplayServer(capacity=spec.capacity, seed=seed).start()
    remote = ServerReplay(layout, server.address)
    local = LocalReplay(layout, spec.capacity, seed)
    try:
        results = [_exercise(r, np.random.default_rng(7)) for r in (local, remote, innet)]
    finally:
        remote.close()
        innet.close()
        server.stop()
    assert results[0] == results[1]
    assert results[0] == results[2]


def test_prioritized_sampling_follows_priorities() -> None:
    layout = RecordLayout(obs_shape=(1,))
    r = LocalReplay(layout, 64, seed=1)
    r.push(np.zeros((4, 1)), np.zeros(4, np.int64), np.arange(4), np.zeros((4, 1)),
           np.zeros(4, bool), priorities=np.array([1.0, 0.0001, 0.0001, 3.0]))
    counts = np.bincount(np.concatenate([r.sample(64).indices for _ in range(20)]), minlength=4)
    assert counts[3] > 2.5 * counts[0] and counts[1] + counts[2] < 10
    w = importance_weights(to_q16([1.0, 3.0]), int(to_q16([1.0, 3.0, 0.0001, 0.0001]).sum()),
                           4, 1.0)
    assert w.tolist() == [1.0, pytest.approx(1 / 3, rel=1e-4)]


# -- every algorithm runs through every replay / sync path ---------------------------------


@pytest.mark.parametrize(("kind", "replay"), [("inswitch", "innet"), ("ps", "server")])
def test_dqn_actors_and_learners_share_the_replay(kind: str, replay: str,
                                                  switch: hostdrv.SoftSwitch) -> None:
    cfg = dqn.Config(seed=2, total_timesteps=2 * 240, learning_starts=160, train_frequency=8,
                     batch_size=16, hidden=32, log_every=2)
    s = train(dqn, cfg, DistConfig(workers=2, sync=kind, switch=switch.url, launcher="thread"),
              replay=ReplaySpec(kind=replay, seed=3, url=switch.url))
    assert s.results[0].rounds == (240 - 160) // 8 + 1
    assert_workers_identical(s)


def test_ddpg_runs_with_local_replay(switch: hostdrv.SoftSwitch) -> None:
    cfg = ddpg.Config(seed=2, total_timesteps=2 * 120, learning_starts=100, batch_size=16,
                      hidden=32, log_every=5)
    s = train(ddpg, cfg, DistConfig(workers=2, sync="inswitch", switch=switch.url,
                                    launcher="thread"), replay=ReplaySpec(kind="local"))
    assert s.results[0].rounds == 21
    assert_workers_identical(s)


def test_cli_train_writes_csv_and_plots(tmp_path: Path) -> None:
    rc = cli.main(["train", "--algo", "a2c", "--sync", "reference", "--workers", "2",
                   "--total-steps", "1024", "--num-steps", "8", "--target", "nan",
                   "--runs-dir", str(tmp_path), "--name", "run", "--no-progress"])
    assert rc == 0
    for f in ("episodes.csv", "iterations.csv", "summary.json", "config.json", "return.png",
              "time_split.png"):
        assert (tmp_path / "run" / f).stat().st_size > 0, f


def test_cli_packet_elems_and_its_old_name() -> None:
    for flag in ("--packet-elems", "--elems"):
        args = cli.build_parser().parse_args(["train", "--algo", "ppo", flag, "352"])
        assert args.packet_elems == 352
    assert cli.build_parser().parse_args(["train", "--algo", "ppo"]).packet_elems is None


def test_cli_help_lists_the_hyper_parameters(capsys: pytest.CaptureFixture[str]) -> None:
    for algo in cli.ALGOS:
        with pytest.raises(SystemExit):
            cli.main(["train", "--algo", algo, "--help"])
        assert "--learning-rate" in capsys.readouterr().out or algo == "ddpg"
