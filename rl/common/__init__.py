"""What the algorithms really share: envs and seeding, logging, worker launching, timing.

* :class:`EnvPool`: n seeded copies of a gymnasium env, stepped together with
  same-step autoreset (the true final observation is kept for bootstrapping)
  (:mod:`rl.common.envs`).
* :class:`DistConfig`: how the N workers are launched and synchronised
  (:mod:`rl.common.launch`).
* :func:`run_workers`: starts the strategy back ends (soft switch, parameter
  server, gloo store, replay server), N worker processes (``spawn``) or
  threads, shows a progress bar, writes ``episodes.csv``,
  ``iterations.csv`` and ``summary.json`` into the run directory and draws
  the plots (:mod:`rl.common.launch`, :mod:`rl.common.runlog`);
  :class:`Backends` (the shared pieces it starts) and :class:`RunCollector`
  (what it makes of the workers' reports) serve :mod:`rl.common.torchrun`
  too, which runs one worker per torchrun rank (``torchrun ... -m rl train``).
* :class:`WorkerContext` / :class:`Reporter`: a worker's rank, its sync and
  replay specs, and the channel its metrics go back to the launcher on
  (:mod:`rl.common.worker`).
* :class:`SplitTimer`: splits an iteration's wall time into computation
  and communication (time blocked in gradient exchange or replay calls);
  :func:`record_solved` and :func:`finish_result` are the bookkeeping every
  algorithm does with it at the end of an iteration and of the run
  (:mod:`rl.common.worker`).

* :class:`ActorCriticMLP`, :func:`bootstrapped_rewards`, :func:`gae`: the
  actor-critic networks and the rollout arithmetic of A2C and PPO
  (:mod:`rl.common.actor_critic`).
* :mod:`rl.common.nets`: the Nature-CNN networks of the Atari workloads
  (DQN's Q-network, A2C's actor-critic); :func:`make_env` preprocesses Atari
  frames (:mod:`rl.common.envs`).
* :mod:`rl.common.tblog`: the TensorBoard event files of a run, written by
  :class:`RunCollector` beside the CSV files.

Every public name is importable from ``rl.common`` itself.
"""

from rl.common.actor_critic import ActorCriticMLP, bootstrapped_rewards, gae
from rl.common.envs import (
    EnvPool,
    PoolStep,
    init_layer,
    make_env,
    torch_generator,
    uniform_layer,
)
from rl.common.launch import Backends, DistConfig, RunCollector, config_dict, run_workers
from rl.common.runlog import EPISODE_FIELDS, ITER_FIELDS, ProgressBar, RunSummary
from rl.common.worker import (
    EpisodeWindow,
    Reporter,
    SplitTimer,
    WorkerContext,
    WorkerResult,
    finish_result,
    record_solved,
    state_numpy,
)

__all__ = [
    "EPISODE_FIELDS",
    "ITER_FIELDS",
    "ActorCriticMLP",
    "Backends",
    "DistConfig",
    "EnvPool",
    "EpisodeWindow",
    "PoolStep",
    "ProgressBar",
    "Reporter",
    "RunCollector",
    "RunSummary",
    "SplitTimer",
    "WorkerContext",
    "WorkerResult",
    "bootstrapped_rewards",
    "config_dict",
    "finish_result",
    "gae",
    "init_layer",
    "make_env",
    "record_solved",
    "run_workers",
    "state_numpy",
    "torch_generator",
    "uniform_layer",
]
