"""What ``netrl train --workload NAME`` runs: the demo tasks and the papers' workloads.

A :class:`Workload` (one entry of :data:`WORKLOADS`) holds a :class:`Task` per
algorithm (environment and hyper-parameters) and answers what the command line
asks of it: the environment of an algorithm, its ``Config``, the replay kind
that goes with a sync strategy, the record size and capacity of a host replay
memory, and whether the switch's replay records can hold its transitions. A new
workload is one more entry of :data:`WORKLOADS`.

``demo`` (the default) trains each algorithm's default networks on CartPole
(DDPG on Pendulum). ``paper`` runs the iSwitch paper's workloads: DQN and A2C on
an Atari game, PPO and DDPG on a MuJoCo task.

iSwitch (ISCA'19) measures four workloads, named by their gradient size: DQN on
Atari (about 6 MB), A2C on Atari (3 MB), PPO on MuJoCo (40 KB) and DDPG on MuJoCo
(158 KB). ``netrl train --workload paper --algo X`` runs algorithm X on its
workload here: :data:`PAPER` (the tasks of ``WORKLOADS["paper"]``) holds, per algorithm, the environment and the
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

In-network replay (``--replay innet``, and ``--topology apex``) takes the paper workloads
too (issue 26): DQN on Atari stores one 84×84 frame per 7104-byte record and the learner
rebuilds observations from stacked samples (:mod:`rl.replay.frames`); DDPG's HalfCheetah
transitions fit a 192-byte record. A soft switch ``netrl`` starts is sized for them
(:meth:`Workload.replay_spec`); a switch given with ``--switch`` whose records are too
small is refused before anything starts (:func:`rl.replay.innet_refusal`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # torch and gymnasium load when a network or an env is built
    from torch import nn

    from rl.replay import ReplaySpec

REPLAY_ALGOS = ("dqn", "ddpg")
"""The algorithms that learn from a replay memory."""
REPLAY_FOR_SYNC = {"inswitch": "innet", "ps": "server", "allreduce": "local",
                   "reference": "local"}
"""``--replay auto``: the replay that goes with each sync strategy (when the switch can hold
the workload's records)."""


@dataclass(frozen=True)
class Task:
    """One algorithm on one environment with given hyper-parameters.

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
    innet_capacity : int or None
        Records of the in-network replay of a soft switch ``netrl`` starts (None: the
        switch's default, ``RPL_CAPACITY``); Atari frame records are 7104 bytes each.
    paper_grad_bytes : int
        The gradient size the iSwitch paper states for this task (0: not a paper task).
    """

    algo: str
    env_id: str
    config: dict[str, Any] = field(default_factory=dict)
    replay_capacity: int | None = None
    paper_grad_bytes: int = 0
    innet_capacity: int | None = None

    def apply(self, cfg: Any) -> Any:
        """Set :attr:`env_id` and :attr:`config` on an algorithm ``Config``; return it."""
        cfg.env_id = self.env_id
        for name, value in self.config.items():
            if not hasattr(cfg, name):
                raise AttributeError(f"{type(cfg).__module__}.Config has no field {name!r}")
            setattr(cfg, name, value)
        return cfg


@dataclass(frozen=True)
class Workload:
    """What ``netrl train --workload NAME`` runs: a :class:`Task` per algorithm and where
    its transitions can be kept. The command line asks this object, so a new workload is
    one more entry of :data:`WORKLOADS`.

    Attributes
    ----------
    name : str
        The ``--workload`` value.
    summary : str
        One line for ``--help``.
    tasks : dict
        Algorithm → :class:`Task`.
    """

    name: str
    summary: str
    tasks: Mapping[str, Task]

    def task(self, algo: str) -> Task:
        """The task of ``algo``; ``ValueError`` naming the algorithms when there is none."""
        try:
            return self.tasks[algo]
        except KeyError:
            raise ValueError(f"workload {self.name!r} has no task for algo={algo!r} "
                             f"(it has {', '.join(self.tasks)})") from None

    def env_id(self, algo: str) -> str:
        """The environment ``algo`` runs on in this workload."""
        return self.task(algo).env_id

    def configure(self, cfg: Any, algo: str) -> Any:
        """Apply ``algo``'s task (environment and hyper-parameters) to its ``Config``."""
        return self.task(algo).apply(cfg)

    def replay_kind(self, sync: str, requested: str = "auto") -> str:
        """The replay memory of a run with sync strategy ``sync``: ``requested`` unless it
        is ``auto``, then the one that goes with ``sync`` (:data:`REPLAY_FOR_SYNC`; every
        workload's records fit the switch, Atari's as frame records)."""
        if requested != "auto":
            return requested
        return REPLAY_FOR_SYNC[sync]

    def replay_spec(self, algo: str, sync: str, requested: str = "auto", *,
                    env_id: str | None = None, seed: int = 1,
                    url: str | None = None) -> ReplaySpec | None:
        """The replay of ``algo`` (None for an algorithm without one): its kind
        (:meth:`replay_kind`), records sized for ``env_id``'s spaces (default: the task's)
        and the task's capacity. ``innet`` and ``local``: DQN on frames stores frame records
        (``frames`` = 4, 7104 bytes on Atari, ``innet_capacity`` of them), anything else
        transitions; ``record_bytes`` is what they need (a soft switch started for the run is built so; a switch at
        ``url`` must hold at least that, :func:`rl.replay.innet_refusal`)."""
        from rl.replay import ReplaySpec

        if algo not in REPLAY_ALGOS:
            return None
        kind = self.replay_kind(sync, requested)
        spec = ReplaySpec(kind=kind, seed=seed, url=url if kind == "innet" else None)
        obs_space, act_space = env_spaces(env_id or self.env_id(algo))
        obs_shape = tuple(obs_space.shape)
        need = replay_record_bytes(obs_shape, tuple(act_space.shape or ()),
                                   act_space.shape == ())
        task = self.task(algo) if algo in self.tasks else None
        if algo == "dqn" and len(obs_shape) == 3 and kind in ("innet", "local"):
            # frames (C, H, W): one frame a record, stacked at sampling (the server has no
            # record chains: it keeps whole transitions)
            from rl.replay.frames import frame_record_bytes

            spec.frames = obs_shape[0]
            need = frame_record_bytes(obs_shape[1:])
        spec.record_bytes = max(spec.record_bytes, need)
        if spec.frames or kind == "innet":
            capacity = task.innet_capacity if task is not None else None
        else:
            capacity = task.replay_capacity if task is not None else None
        if capacity is not None:
            spec.capacity = int(capacity)
        return spec


DEMO_TASKS: dict[str, Task] = {
    "dqn": Task("dqn", "CartPole-v1"),
    "a2c": Task("a2c", "CartPole-v1"),
    "ppo": Task("ppo", "CartPole-v1"),
    "ddpg": Task("ddpg", "Pendulum-v1"),
}
"""The demo task of each algorithm: its default hyper-parameters on CartPole (Pendulum for
DDPG, which needs continuous actions)."""

PAPER: dict[str, Task] = {
    "dqn": Task("dqn", "ALE/Pong-v5", {
        "hidden": 512, "batch_size": 32, "learning_rate": 1e-4, "train_frequency": 4,
        "learning_starts": 1000, "target_network_frequency": 1000, "exploration_steps": 1_000_000,
        "end_e": 0.01, "total_timesteps": 10_000_000, "log_every": 1},
        replay_capacity=4096, paper_grad_bytes=6_000_000, innet_capacity=1 << 17),
    "a2c": Task("a2c", "ALE/Pong-v5", {
        "hidden": 224, "num_envs": 4, "num_steps": 5, "learning_rate": 7e-4,
        "total_timesteps": 10_000_000}, paper_grad_bytes=3_000_000),
    "ppo": Task("ppo", "HalfCheetah-v5", {
        "hidden": 64, "num_envs": 1, "num_steps": 1024, "num_minibatches": 16,
        "update_epochs": 4, "learning_rate": 3e-4, "ent_coef": 0.0,
        "total_timesteps": 1_000_000}, paper_grad_bytes=40_000),
    "ddpg": Task("ddpg", "HalfCheetah-v5", {
        "hidden": 128, "actor_lr": 3e-4, "critic_lr": 3e-4, "gamma": 0.99, "tau": 0.005,
        "learning_starts": 1000, "total_timesteps": 1_000_000, "log_every": 1},
        paper_grad_bytes=158_000),
}
"""The paper task of each algorithm (the four workloads iSwitch measures)."""

WORKLOADS: dict[str, Workload] = {
    "demo": Workload("demo", "CartPole/Pendulum networks", DEMO_TASKS),
    "paper": Workload(
        "paper", "the iSwitch paper's workloads (DQN, A2C on Atari Pong with the Nature CNN; "
                 "PPO, DDPG on MuJoCo HalfCheetah), see rl/workloads.py", PAPER),
}
"""``--workload`` choices: ``demo`` (the default) and ``paper``."""


def workload(name: str) -> Workload:
    """The workload called ``name``; ``ValueError`` naming the choices when there is none."""
    try:
        return WORKLOADS[name]
    except KeyError:
        raise ValueError(f"unknown workload {name!r} (choose from {', '.join(WORKLOADS)})") \
            from None


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
    from rl.parts.envs import make_env

    env = make_env(env_id)
    try:
        return env.observation_space, env.action_space
    finally:
        env.close()


def paper_networks(algo: str, seed: int = 1) -> list[nn.Module]:
    """The networks whose gradient one exchange of ``algo``'s paper workload carries,
    built as its worker builds them (DDPG: actor and critic)."""
    from rl import a2c, ddpg, dqn, ppo
    from rl.parts.envs import torch_generator

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
    from rl.parts.nets import param_count

    params = param_count(*paper_networks(algo))
    return params, 4 * params


def describe_sizes() -> dict[str, dict[str, int]]:
    """Parameters and gradient bytes of every paper workload (for docs and the bench)."""
    out = {}
    for algo in PAPER:
        params, nbytes = gradient_size(algo)
        out[algo] = {"params": params, "grad_bytes": nbytes}
    return out
