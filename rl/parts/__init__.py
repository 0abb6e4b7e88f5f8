"""The pieces algorithms are built from: environments, networks, actor-critic arithmetic.

* :class:`EnvPool`: n seeded copies of a gymnasium env, stepped together with
  same-step autoreset (the true final observation is kept for bootstrapping);
  :func:`make_env` (an id to an env, Atari frames preprocessed as DQN's Nature
  paper does), :func:`torch_generator`, :func:`init_layer`,
  :func:`uniform_layer` (:mod:`rl.parts.envs`).
* :class:`ActorCriticMLP`, :func:`bootstrapped_rewards`, :func:`gae`: the
  actor-critic networks and the rollout arithmetic of A2C and PPO
  (:mod:`rl.parts.actor_critic`).
* :mod:`rl.parts.nets`: the Nature-CNN networks of the Atari workloads
  (DQN's Q-network, A2C's actor-critic) and :func:`~rl.parts.nets.param_count`.

How a run is launched, timed and logged is :mod:`rl.run`. Every public name
above is importable from ``rl.parts`` itself.
"""

from rl.parts.actor_critic import ActorCriticMLP, bootstrapped_rewards, gae
from rl.parts.envs import (
    EnvPool,
    PoolStep,
    init_layer,
    make_env,
    torch_generator,
    uniform_layer,
)

__all__ = [
    "ActorCriticMLP",
    "EnvPool",
    "PoolStep",
    "bootstrapped_rewards",
    "gae",
    "init_layer",
    "make_env",
    "torch_generator",
    "uniform_layer",
]
