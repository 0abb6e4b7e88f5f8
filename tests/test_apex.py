"""The actor/learner topology (rl.apex): its parameter board, its limits, and DQN / DDPG
runs with dedicated actors and learners through a soft switch's replay memory."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rl.apex import ApexConfig, BoardClient, ParamBoard, actor_epsilon, rate_limits, run_apex
from rl.dqn import Config as DQNConfig
from rl.replay import ReplaySpec
from rl.run import DistConfig


def test_board_carries_weights_returns_and_stop() -> None:
    released: list[int] = []
    board = ParamBoard(actors=2, window=3, release=lambda: released.append(1)).start()
    try:
        learner, a0, a1 = (BoardClient(board.address) for _ in range(3))
        assert a0.get() is None  # nothing published yet
        w = np.arange(10, dtype=np.float32)
        learner.put(1, w)
        got = a0.get()
        assert got is not None and np.array_equal(got, w)
        assert a0.get() is None  # not newer than what it has
        learner.put(2, w + 1)
        got = a0.get()
        assert got is not None and np.array_equal(got, w + 1) and a0.version == 2
        for r in (1.0, 2.0, 3.0, 4.0):  # a window of 3: the oldest return leaves
            a1.episode(r, 5)
        learner.get()
        assert learner.window == (9.0, 3) and learner.env_steps == 20
        a0.actor_done(1)
        assert not a0.stop and not released
        a1.actor_done(2)
        assert a1.stop and released == [1]
        learner.learner_done()
        assert released == [1]  # released once
        assert learner.env_steps == 23
        for c in (learner, a0, a1):
            c.close()
    finally:
        board.close()


def test_actor_epsilons_spread_like_apex() -> None:
    eps = [actor_epsilon(0.02, i, 4) for i in range(4)]
    assert eps[0] == pytest.approx(0.02) and eps[-1] == pytest.approx(0.02 ** 2)
    assert eps == sorted(eps, reverse=True)
    assert actor_epsilon(0.02, 0, 1) == pytest.approx(0.02)


def test_rate_limit_defaults_follow_the_algorithm() -> None:
    cfg = DQNConfig()
    apex = ApexConfig(actors=4, learners=2)
    min_size, spi, err = rate_limits("dqn", cfg, apex)
    assert min_size == cfg.learning_starts
    assert spi == cfg.batch_size / cfg.train_frequency
    # both sides can always move: a learner round and an actor push fit in the buffer
    assert err >= cfg.batch_size * apex.learners and err >= spi * apex.push_every
    assert rate_limits("dqn", cfg, ApexConfig(samples_per_insert=2.0, error_buffer=300.0,
                                              min_size=7)) == (7, 2.0, 300.0)


def test_bad_topologies_are_refused_before_anything_starts() -> None:
    cfg = DQNConfig(total_timesteps=100)
    dist = DistConfig(workers=1, sync="inswitch")
    with pytest.raises(ValueError, match="one learner"):
        run_apex("dqn", cfg, ApexConfig(learners=2), dist, ReplaySpec(kind="local"),
                 target_return=None, progress=False)
    with pytest.raises(ValueError, match="actor/learner topology runs"):
        run_apex("ppo", cfg, ApexConfig(), dist, ReplaySpec(kind="innet"),
                 target_return=None, progress=False)
    with pytest.raises(ValueError, match="at least one"):
        run_apex("dqn", cfg, ApexConfig(actors=0), dist, ReplaySpec(kind="innet"),
                 target_return=None, progress=False)
    # 2 learners aggregate on ids 0-1, replay ids 2..: 2 + 7 actors > 8
    with pytest.raises(ValueError, match="member ids"):
        run_apex("dqn", cfg, ApexConfig(actors=5, learners=2), dist, ReplaySpec(kind="innet"),
                 target_return=None, progress=False)


def _apex_run(tmp_path: Path, algo: str, cfg: object, apex: ApexConfig, sync: str = "inswitch",
              target: float | None = None, replay: str = "innet") -> tuple[object, dict]:
    summary = run_apex(algo, cfg, apex, DistConfig(workers=apex.learners, sync=sync),
                       ReplaySpec(kind=replay), target_return=target, run_dir=tmp_path,
                       progress=False, timeout=600)
    return summary, json.loads((tmp_path / "summary.json").read_text())["apex"]


def _check_limiter(apex_json: dict) -> None:
    """The switch held Reverb's bounds: every served sample and accepted record is in the
    accumulator, which ended inside [min_diff, max_diff]; the limiter did hold a side back
    (which one depends on who is faster: on this machine the learner, so the actors)."""
    rate = apex_json["rate"]
    assert rate["min_diff"] <= rate["diff"] <= rate["max_diff"], rate
    assert rate["inserts"] == pytest.approx(round(rate["inserts"]))  # whole records
    assert rate["push_not_yet"] + rate["sample_not_yet"] > 0


def test_dqn_actors_and_learner_kept_in_step_by_the_switch(tmp_path: Path) -> None:
    cfg = DQNConfig(total_timesteps=1600, learning_starts=200, log_every=10)
    summary, apex_json = _apex_run(tmp_path, "dqn", cfg, ApexConfig(actors=2, learners=1))
    assert summary.env_steps == 1600  # every actor spent its budget
    assert summary.iterations > 0
    _check_limiter(apex_json)
    # a learner update of 64 samples per 4 inserts; every record the actors pushed was
    # accepted (nothing lost to a refused PUSH); a PUSH whose PUSH_ACK came after the
    # client's timeout is sent again and may be stored twice (at least once, ReplayClient)
    rate = apex_json["rate"]
    assert rate["target_samples_per_insert"] == cfg.batch_size / cfg.train_frequency
    assert summary.env_steps <= rate["inserts"] == rate["size"]
    episodes = (tmp_path / "episodes.csv").read_text().splitlines()
    ranks = {line.split(",")[1] for line in episodes[1:]}
    assert ranks <= {"1", "2"} and ranks  # episodes come from the actors only


@pytest.mark.parametrize("replay", ["server", "local"])
def test_dqn_actors_and_learner_kept_in_step_by_a_host_replay(tmp_path: Path,
                                                             replay: str) -> None:
    """The same run with the replay memory in a TCP server (actors and learner wait on its
    not-yet answers) or in one local process (the limiter schedules acting and learning):
    the host memory's RateLimiter holds the ratio as the switch's does."""
    cfg = DQNConfig(total_timesteps=800, learning_starts=200, log_every=10)
    apex = ApexConfig(actors=2, learners=1)
    summary, apex_json = _apex_run(tmp_path, "dqn", cfg, apex, sync="ps",
                                   replay=replay)
    assert summary.env_steps == 800
    assert summary.iterations > 0
    _check_limiter(apex_json)
    rate = apex_json["rate"]
    min_size, spi, err = rate_limits("dqn", cfg, apex)
    assert (rate["target_samples_per_insert"], rate["error_buffer"]) == (spi, err)
    # samples per insert within the error buffer: |samples - inserts * SPI| = |diff|,
    # diff in [SPI * min_size - err, SPI * min_size + err]
    assert abs(rate["samples"] - rate["inserts"] * spi) <= spi * min_size + err
    assert summary.env_steps <= rate["inserts"] == rate["size"]
    episodes = (tmp_path / "episodes.csv").read_text().splitlines()
    assert {line.split(",")[1] for line in episodes[1:]} <= {"1", "2"}


def test_iterations_stop_learners_and_actors(tmp_path: Path) -> None:
    """``--iterations N`` bounds an Ape-X run as it bounds a workers run: both learners stop
    after their N-th logged iteration (the same round: they step together), and the actors
    stop with them, long before their env-step budget."""
    cfg = DQNConfig(total_timesteps=1_000_000, learning_starts=200, log_every=10)
    apex = ApexConfig(actors=2, learners=2)
    summary = run_apex("dqn", cfg, apex, DistConfig(workers=2, sync="inswitch", iterations=3),
                       ReplaySpec(kind="innet"), target_return=None, run_dir=tmp_path,
                       progress=False, timeout=600)
    learners = summary.results[:2]
    assert [r.iterations for r in learners] == [3, 3]
    assert learners[0].rounds == learners[1].rounds == 3 * cfg.log_every
    assert 0 < summary.env_steps < cfg.total_timesteps


@pytest.mark.slow
def test_apex_dqn_solves_cartpole_through_the_switch(tmp_path: Path) -> None:
    cfg = DQNConfig(total_timesteps=150_000)
    summary, apex_json = _apex_run(tmp_path, "dqn", cfg, ApexConfig(actors=4, learners=1),
                                   target=195.0)
    assert summary.solved, summary.last_mean_return
    _check_limiter(apex_json)


@pytest.mark.slow
def test_apex_two_learners_sum_gradients_in_the_switch(tmp_path: Path) -> None:
    from rl.ddpg import Config as DDPGConfig

    cfg = DDPGConfig(total_timesteps=1500, learning_starts=300, log_every=20)
    summary, apex_json = _apex_run(tmp_path, "ddpg", cfg, ApexConfig(actors=3, learners=2))
    assert summary.env_steps == 1500
    results = summary.results[:2]
    assert results[0].rounds == results[1].rounds > 0  # the learners stepped together
    assert results[0].params.keys() == results[1].params.keys()
    for k in results[0].params:  # the same sums applied: the same weights
        assert np.array_equal(results[0].params[k], results[1].params[k]), k
    _check_limiter(apex_json)


@pytest.mark.parametrize(("argv", "says"), [
    (["--algo", "ppo"], "runs dqn, ddpg"),
])
def test_cli_refuses_what_apex_cannot_run(argv: list[str], says: str, tmp_path: Path) -> None:
    from rl import cli

    with pytest.raises(SystemExit, match=says):
        cli.main(["train", "--topology", "apex", "--no-progress", "--runs-dir", str(tmp_path),
                  *argv])
    assert not any(tmp_path.iterdir())  # refused before a run folder was made
