"""DDPG for continuous actions, N actor-learner workers.

CleanRL's ``ddpg_continuous_action.py`` loop, one worker's view. Each worker
acts in its own seeded env with Gaussian exploration noise, pushes its
transitions into the replay memory (``local``, ``innet`` or ``server``, see
:mod:`rl.replay`; uniform sampling by default) and, every step after
``learning_starts``, samples a batch and computes both losses on it: the
actor's ``-Q(s, mu(s))`` (its gradient lands on the actor; the critic's
gradient from it is discarded) and the critic's TD error against the target
networks. Both gradients travel in one aggregation round through
:class:`rl.sync.GradientExchange`; the two optimizers and the soft target
updates run once per applied round on every worker alike.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from rl.parts import EnvPool, torch_generator, uniform_layer
from rl.replay import RecordLayout, ReplayBatch, make_replay
from rl.run import (
    EpisodeWindow,
    SplitTimer,
    WorkerContext,
    WorkerResult,
    finish_result,
    record_solved,
)
from rl.sync import GradientExchange, make_sync


@dataclass
class Config:
    """DDPG hyper-parameters (per worker unless said otherwise)."""

    env_id: str = "Pendulum-v1"
    seed: int = 1
    total_timesteps: int = 60_000
    """Env steps over all workers."""
    actor_lr: float = 1e-3
    critic_lr: float = 2e-3
    gamma: float = 0.98
    tau: float = 0.01
    batch_size: int = 64
    """Samples per worker per update (a power of two, at most 64)."""
    learning_starts: int = 500
    """Env steps per worker before the first update."""
    train_frequency: int = 1
    """Env steps between updates."""
    exploration_noise: float = 0.1
    """Gaussian noise std, as a fraction of the action range."""
    prioritized: bool = False
    hidden: int = 64
    log_every: int = 100
    """Updates per logged iteration."""


class Actor(nn.Module):
    """Deterministic policy: tanh output scaled to the action range."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: int, low: np.ndarray,
                 high: np.ndarray, gen: torch.Generator) -> None:
        super().__init__()
        self.net = nn.Sequential(
            uniform_layer(nn.Linear(obs_dim, hidden), gen), nn.ReLU(),
            uniform_layer(nn.Linear(hidden, hidden), gen), nn.ReLU(),
            uniform_layer(nn.Linear(hidden, act_dim), gen, bound=3e-3), nn.Tanh())
        self.register_buffer("scale", torch.tensor((high - low) / 2.0, dtype=torch.float32))
        self.register_buffer("bias", torch.tensor((high + low) / 2.0, dtype=torch.float32))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Action for observation ``x``."""
        return self.net(x) * self.scale + self.bias


class Critic(nn.Module):
    """Q(s, a) MLP."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: int, gen: torch.Generator) -> None:
        super().__init__()
        self.net = nn.Sequential(
            uniform_layer(nn.Linear(obs_dim + act_dim, hidden), gen), nn.ReLU(),
            uniform_layer(nn.Linear(hidden, hidden), gen), nn.ReLU(),
            uniform_layer(nn.Linear(hidden, 1), gen, bound=3e-3))

    def forward(self, x: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        """Q(x, a)."""
        return self.net(torch.cat([x, a], -1)).squeeze(-1)


def soft_update(target: nn.Module, source: nn.Module, tau: float) -> None:
    """``target = tau * source + (1 - tau) * target``, parameter by parameter."""
    with torch.no_grad():
        for t, s in zip(target.parameters(), source.parameters(), strict=True):
            t.mul_(1.0 - tau).add_(s, alpha=tau)


def ddpg_backward(actor: Actor, critic: Critic, actor_target: Actor, critic_target: Critic,
                  actor_opt: torch.optim.Optimizer, critic_opt: torch.optim.Optimizer,
                  batch: ReplayBatch, cfg: Config) -> tuple[torch.Tensor, torch.Tensor]:
    """The actor's and the critic's losses of ``batch``, each backpropagated into its own
    network's zeroed gradients (the actor's pass leaves nothing in the critic's).

    Returns
    -------
    (actor_loss, critic_loss)
    """
    b = cfg.batch_size
    b_obs = torch.from_numpy(batch.obs.reshape(b, -1).astype(np.float32))
    b_next = torch.from_numpy(batch.next_obs.reshape(b, -1).astype(np.float32))
    b_act = torch.from_numpy(batch.actions.reshape(b, -1).astype(np.float32))
    with torch.no_grad():
        q_next = critic_target(b_next, actor_target(b_next))
        td_target = (torch.from_numpy(batch.rewards)
                     + cfg.gamma * q_next * (1.0 - torch.from_numpy(batch.dones)))
    actor_opt.zero_grad()
    critic_opt.zero_grad()
    actor_loss = -critic(b_obs, actor(b_obs)).mean()
    actor_loss.backward()
    critic_opt.zero_grad()  # keep only the actor's part of that backward pass
    critic_loss = F.mse_loss(critic(b_obs, b_act), td_target)
    critic_loss.backward()
    return actor_loss, critic_loss


def train_worker(cfg: Config, ctx: WorkerContext) -> WorkerResult:
    """Run one DDPG actor-learner until the budget is spent or the workers agree it is solved."""
    assert ctx.replay is not None, "DDPG needs a replay strategy"
    rng = np.random.default_rng(cfg.seed + 7919 * ctx.rank)  # exploration noise
    envs = EnvPool(cfg.env_id, 1, cfg.seed + 1000 * ctx.rank)
    obs_shape = tuple(envs.observation_space.shape)
    act_shape = tuple(envs.action_space.shape)
    obs_dim, act_dim = int(np.prod(obs_shape)), int(np.prod(act_shape))
    low, high = envs.action_space.low, envs.action_space.high
    init = torch_generator(cfg.seed)
    actor = Actor(obs_dim, act_dim, cfg.hidden, low, high, init)
    critic = Critic(obs_dim, act_dim, cfg.hidden, init)
    actor_target = Actor(obs_dim, act_dim, cfg.hidden, low, high, init)
    critic_target = Critic(obs_dim, act_dim, cfg.hidden, init)
    actor_target.load_state_dict(actor.state_dict())
    critic_target.load_state_dict(critic.state_dict())
    actor_opt = torch.optim.Adam(actor.parameters(), lr=cfg.actor_lr)
    critic_opt = torch.optim.Adam(critic.parameters(), lr=cfg.critic_lr)

    def update_targets() -> None:
        """Soft target updates, once per applied round."""
        soft_update(actor_target, actor, cfg.tau)
        soft_update(critic_target, critic, cfg.tau)

    exchange = GradientExchange(
        make_sync(ctx.sync, ctx.rank), [*actor.parameters(), *critic.parameters()],
        [actor_opt, critic_opt], target_return=ctx.target_return, window=ctx.window,
        board=ctx.board, record_digests=ctx.record_digests, after_step=update_targets)
    replay = make_replay(ctx.replay, ctx.rank, RecordLayout(
        obs_shape=obs_shape, action_shape=act_shape, action_dtype="float32",
        record_bytes=ctx.replay.record_bytes))
    window = EpisodeWindow(ctx.window)
    timer = SplitTimer(lambda: exchange.log.comm_seconds + replay.comm_seconds,
                       comm_cpu=lambda: exchange.log.comm_cpu_seconds)
    grad_comm = 0.0  # the gradient exchange's part of comm_s (the rest is replay access)
    result = WorkerResult(rank=ctx.rank)

    steps_per_worker = max(cfg.learning_starts + 1, cfg.total_timesteps // ctx.world)
    noise_std = cfg.exploration_noise * (high - low) / 2.0
    obs = envs.reset()
    updates = 0
    for step in range(1, steps_per_worker + 1):
        # -- act -------------------------------------------------------------------------
        if step < cfg.learning_starts:
            action = rng.uniform(low, high).astype(np.float32)
        else:
            with torch.no_grad():
                action = actor(torch.from_numpy(obs))[0].numpy()
            action = np.clip(action + rng.normal(0.0, noise_std), low, high).astype(np.float32)
        out = envs.step(action[None])
        replay.push(obs, action[None], out.rewards, out.final_obs, out.terminated)
        obs = out.next_obs
        for ret, length in out.episodes:
            window.add(ret)
            ctx.reporter.episode(step, ret, length)
        if step < cfg.learning_starts or step % cfg.train_frequency:
            continue

        # -- learn: one batch, actor and critic gradients in one round -------------------
        batch = replay.sample(cfg.batch_size, prioritized=cfg.prioritized)
        actor_loss, critic_loss = ddpg_backward(actor, critic, actor_target, critic_target,
                                                actor_opt, critic_opt, batch, cfg)
        if not exchange.step(*window.stats):
            break
        updates += 1

        if updates % cfg.log_every == 0:
            compute, comm = timer.lap()
            grad_comm_s = exchange.log.comm_seconds - grad_comm
            grad_comm = exchange.log.comm_seconds
            result.iterations += 1
            ctx.reporter.iteration(result.iterations, step, compute, comm,
                                   compute_cpu_s=timer.compute_cpu,
                                   actor_loss=actor_loss.item(), critic_loss=critic_loss.item(),
                                   grad_comm_s=grad_comm_s,
                                   rounds=exchange.log.rounds)
        record_solved(result, exchange, timer, step * ctx.world)
        if exchange.stopped or ctx.iterations_done(result.iterations):
            break

    exchange.close()
    replay.close()
    envs.close()
    return finish_result(result, exchange, timer, step, actor, critic, final_lap=True)
