"""The papers' workloads: DQN and A2C on an Atari game, PPO and DDPG on a MuJoCo task.

iSwitch (ISCA'19) measures four workloads, named by their gradient size: DQN on
Atari (about 6 MB), A2C on Atari (3 MB), PPO on MuJoCo (40 KB) and DDPG on MuJoCo
(158 KB). ``netrl train --workload paper --algo X`` runs algorithm X on its
workload here: :data:`PAPER` holds, per algorithm, the environment and the
hyper-parameters that give networks of those sizes (the rest are CleanRL's
settings for the task, with replay warm-up short enough for bounded runs):

=====  ===============  ====================================================  ==========
algo   env              network                                               gradient
=====  ===============  ====================================================  ==========
dqn    ALE/Pong-v5      Nature CNN, 512-unit layer, 6 Q-values                ~6.7 MB
a2c    ALE/Pong-v5      Nature CNN, 224-unit layer, policy + value heads      ~3.1 MB
ppo    HalfCheetah-v5   tanh MLPs 64-64 (Gaussian mean, value), log std       ~44 KB
ddpg   HalfCheetah-v5   ReLU MLPs 128-128 (actor, critic)                     ~157 KB
=====  ===============  ====================================================  ==========

(:func:`paper_networks` builds them; ``tests/test_workloads.py`` checks the sizes
from the models.) Two CPUs cannot train these to the end: bound a run with
``--iterations N`` and read its per-iteration compute and communication times
(``iterations.csv``, ``scripts/bench_workloads.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # torch and gymnasium load when a network or an env is built
    from torch import nn

WORKLOADS = ("demo", "paper")
"""``--workload`` choices: ``demo`` (CartPole / Pendulum, the default) or ``paper``."""


@dataclass(frozen=True)
class Workload:
    """One paper workload: an algorithm on an environment with given hyper-parameters.

    Attributes
    ----------
    algo : str
        ``dqn``, ``a2c``, ``ppo`` or ``ddpg``.
    env_id : str
        Gymnasium id.
    config : dict
        ``Config`` fields of the algorithm that differ from its defaults.
    replay_capacity : int or None
        Records of a local or server replay memory (None: the switch's default);
        Atari records are 56 KB each.
    paper_grad_bytes : int
        The gradient size the iSwitch paper states for this workload.
    """

    algo: str
    env_id: str
    config: dict[str, Any] = field(default_factory=dict)
    replay_capacity: int | None = None
    paper_grad_bytes: int = 0


PAPER: dict[str, Workload] = {
    "dqn": Workload("dqn", "ALE/Pong-v5", {
        "hidden": 512, "batch_size": 32, "learning_rate": 1e-4, "train_frequency": 4,
        "learning_starts": 1000, "target_network_frequency": 1000, "exploration_steps": 1_000_000,
        "end_e": 0.01, "total_timesteps": 10_000_000, "log_every": 1},
        replay_capacity=4096, paper_grad_bytes=6_000_000),
    "a2c": Workload("a2c", "ALE/Pong-v5", {
        "hidden": 224, "num_envs": 4, "num_steps": 5, "learning_rate": 7e-4,
        "total_timesteps": 10_000_000}, paper_grad_bytes=3_000_000),
    "ppo": Workload("ppo", "HalfCheetah-v5", {
        "hidden": 64, "num_envs": 1, "num_steps": 1024, "num_minibatches": 16,
        "update_epochs": 4, "learning_rate": 3e-4, "ent_coef": 0.0,
        "total_timesteps": 1_000_000}, paper_grad_bytes=40_000),
    "ddpg": Workload("ddpg", "HalfCheetah-v5", {
        "hidden": 128, "actor_lr": 3e-4, "critic_lr": 3e-4, "gamma": 0.99, "tau": 0.005,
        "learning_starts": 1000, "total_timesteps": 1_000_000, "log_every": 1},
        paper_grad_bytes=158_000),
}
"""The paper workload of each algorithm."""


def apply_workload(cfg: Any, workload: Workload) -> Any:
    """Set ``workload.env_id`` and ``workload.config`` on an algorithm ``Config``; return it."""
    cfg.env_id = workload.env_id
    for name, value in workload.config.items():
        if not hasattr(cfg, name):
            raise AttributeError(f"{type(cfg).__module__}.Config has no field {name!r}")
        setattr(cfg, name, value)
    return cfg


def replay_record_bytes(obs_shape: tuple[int, ...], action_shape: tuple[int, ...],
                        discrete: bool) -> int:
    """Bytes of one replay record (rounded up to 64) for these spaces, as
    :mod:`rl.dqn` and :mod:`rl.ddpg` lay them out (frames as uint8, vectors float32)."""
    obs = int(np.prod(obs_shape)) * (1 if len(obs_shape) == 3 else 4)
    action = 8 if discrete else 4 * int(np.prod(action_shape))
    need = 2 * obs + action + 4 + 1
    return -(-need // 64) * 64


def env_spaces(env_id: str) -> tuple[Any, Any]:
    """(observation space, action space) of an env (made, read and closed)."""
    from rl.common.envs import make_env

    env = make_env(env_id)
    try:
        return env.observation_space, env.action_space
    finally:
        env.close()


def paper_networks(algo: str, seed: int = 1) -> list[nn.Module]:
    """The networks whose gradient one exchange of ``algo``'s paper workload carries,
    built as its worker builds them (DDPG: actor and critic)."""
    from rl import a2c, ddpg, dqn, ppo
    from rl.common.envs import torch_generator

    wl = PAPER[algo]
    obs_space, act_space = env_spaces(wl.env_id)
    obs_shape = tuple(obs_space.shape)
    hidden = int(wl.config["hidden"])
    gen = torch_generator(seed)
    if algo == "dqn":
        return [dqn.build_q_network(obs_shape, int(act_space.n), hidden, gen)]
    if algo == "a2c":
        return [a2c.build_model(obs_shape, int(act_space.n), hidden, gen)]
    obs_dim = int(np.prod(obs_shape))
    if algo == "ppo":
        return [ppo.build_agent(obs_dim, act_space, hidden, gen)]
    act_dim = int(np.prod(act_space.shape))
    return [ddpg.Actor(obs_dim, act_dim, hidden, act_space.low, act_space.high, gen),
            ddpg.Critic(obs_dim, act_dim, hidden, gen)]


def gradient_size(algo: str) -> tuple[int, int]:
    """(parameters, fp32 gradient bytes) of ``algo``'s paper workload, from its networks."""
    from rl.common.nets import param_count

    params = param_count(*paper_networks(algo))
    return params, 4 * params


def describe_sizes() -> dict[str, dict[str, int]]:
    """Parameters and gradient bytes of every paper workload (for docs and the bench)."""
    out = {}
    for algo in PAPER:
        params, nbytes = gradient_size(algo)
        out[algo] = {"params": params, "grad_bytes": nbytes}
    return out
