"""Learning curves (slow): every algorithm solves its env with 4 workers through the soft switch.

CartPole-v1 (DQN, A2C, PPO): mean return >= 195 over the last 20 episodes;
Pendulum-v1 (DDPG): >= -400. Gradients are summed in the switch
(``inswitch``); DQN's actors and learners share the switch's replay memory.
Each run starts its own soft switch on an ephemeral port and stops at the
round where the workers agree the target is reached, so a run takes from
seconds (PPO, A2C) to a minute or two (DQN, DDPG) on 2 CPU cores.
"""

from __future__ import annotations

import pytest

from rl import a2c, ddpg, dqn, ppo
from rl.replay import ReplaySpec
from rl.run import DistConfig, run_workers

CASES = [
    # (module, mode, replay, target)
    (ppo, "sync", None, 195.0),
    (ppo, "async", None, 195.0),
    (a2c, "sync", None, 195.0),
    (dqn, "sync", "innet", 195.0),
    (ddpg, "sync", "local", -400.0),
]


@pytest.mark.slow
@pytest.mark.parametrize(("module", "mode", "replay", "target"), CASES,
                         ids=[f"{m.__name__.split('.')[-1]}-{mode}" for m, mode, _, _ in CASES])
def test_solves_with_four_workers_through_the_switch(module: object, mode: str,
                                                     replay: str | None, target: float) -> None:
    cfg = module.Config(seed=1)
    summary = run_workers(
        module.train_worker, cfg, DistConfig(workers=4, sync="inswitch", mode=mode),
        algo=module.__name__, env_id=cfg.env_id, total_steps=cfg.total_timesteps,
        target_return=target, replay=None if replay is None else ReplaySpec(kind=replay, seed=1),
        progress=False, timeout=1200)
    assert summary.solved, (f"{module.__name__} ({mode}) not solved in {summary.env_steps} "
                            f"steps; last mean return {summary.last_mean_return}")
    assert summary.solve_steps is not None and summary.solve_steps <= cfg.total_timesteps
    # the launcher's own view: the last 20 episodes it was sent
    assert summary.last_mean_return is not None
    assert summary.last_mean_return >= target - (60.0 if target > 0 else 150.0)


@pytest.mark.slow
def test_demo_solves_both_stages(tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:
    """``make demo``: PPO, then DQN with the in-network replay, both solved; files where it says."""
    from pathlib import Path

    from rl import demo

    assert demo.main(["--runs-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for algo in ("ppo", "dqn"):
        runs = list(Path(str(tmp_path)).glob(f"demo-{algo}-*"))
        assert len(runs) == 1, runs
        for f in ("episodes.csv", "iterations.csv", "return.png", "time_split.png"):
            assert (runs[0] / f).stat().st_size > 0
            assert str(runs[0] / f) in out
    assert "CNT_TX_SAMPLE_RESP" in out and "CNT_TX_RESULT" in out
