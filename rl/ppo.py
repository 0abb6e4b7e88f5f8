"""PPO (clipped surrogate, GAE), data-parallel over N workers.

Discrete actions take a categorical policy (:class:`Agent`), continuous ones
(MuJoCo's ``HalfCheetah-v5``) a diagonal Gaussian with a state-independent
log standard deviation (:class:`GaussianAgent`, CleanRL's
``ppo_continuous_action.py``).

CleanRL's ``ppo.py`` layout, one worker's view: each worker collects its own
rollout from ``num_envs`` seeded copies of the env, computes the PPO loss on
its minibatches and, instead of ``optimizer.step()``, calls
:meth:`rl.sync.GradientExchange.step`, which sums the gradients of the N
workers (through the switch, a parameter server or gloo), averages them and
steps the optimizer. All workers start from the same weights (same init
seed) and apply the same averaged gradients, so they stay identical.
"""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from rl.parts import ActorCriticMLP, EnvPool, bootstrapped_rewards, gae, init_layer, torch_generator
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
    """PPO hyper-parameters (per worker unless said otherwise)."""

    env_id: str = "CartPole-v1"
    seed: int = 1
    total_timesteps: int = 200_000
    """Env steps over all workers."""
    num_envs: int = 2
    """Env copies per worker."""
    num_steps: int = 128
    """Steps per env per rollout."""
    learning_rate: float = 1e-3
    anneal_lr: bool = True
    gamma: float = 0.99
    gae_lambda: float = 0.95
    num_minibatches: int = 2
    update_epochs: int = 4
    norm_adv: bool = True
    clip_coef: float = 0.2
    clip_vloss: bool = True
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    hidden: int = 64


class Agent(ActorCriticMLP):
    """The actor-critic MLPs with what PPO asks of them: sampling and re-evaluating actions."""

    def evaluate(self, x: torch.Tensor, action: torch.Tensor
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Log-probability of ``action``, entropy, value."""
        dist = torch.distributions.Categorical(logits=self.actor(x))
        return dist.log_prob(action), dist.entropy(), self.value(x)

    def act(self, x: torch.Tensor, gen: torch.Generator
            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Sample an action with ``gen``; return action, log-probability, value."""
        logits = self.actor(x)
        action = torch.multinomial(torch.softmax(logits, -1), 1, generator=gen).squeeze(-1)
        logp = torch.distributions.Categorical(logits=logits).log_prob(action)
        return action, logp, self.value(x)


class GaussianAgent(nn.Module):
    """Continuous actions: tanh MLPs for the action mean and the value, a learned log std.

    Same construction order as :class:`rl.parts.ActorCriticMLP` (critic, then actor,
    from ``gen``), the same :meth:`evaluate` and :meth:`act` as :class:`Agent`; log
    probabilities and entropies are summed over the action's dimensions. Actions are
    not squashed: the caller clips them to the action space.
    """

    def __init__(self, obs_dim: int, act_dim: int, hidden: int, gen: torch.Generator) -> None:
        super().__init__()
        self.critic = nn.Sequential(
            init_layer(nn.Linear(obs_dim, hidden), gen), nn.Tanh(),
            init_layer(nn.Linear(hidden, hidden), gen), nn.Tanh(),
            init_layer(nn.Linear(hidden, 1), gen, std=1.0))
        self.actor_mean = nn.Sequential(
            init_layer(nn.Linear(obs_dim, hidden), gen), nn.Tanh(),
            init_layer(nn.Linear(hidden, hidden), gen), nn.Tanh(),
            init_layer(nn.Linear(hidden, act_dim), gen, std=0.01))
        self.actor_logstd = nn.Parameter(torch.zeros(1, act_dim))

    def value(self, x: torch.Tensor) -> torch.Tensor:
        """State value V(x)."""
        return self.critic(x).squeeze(-1)

    def _dist(self, x: torch.Tensor) -> torch.distributions.Normal:
        mean = self.actor_mean(x)
        return torch.distributions.Normal(mean, self.actor_logstd.expand_as(mean).exp())

    def evaluate(self, x: torch.Tensor, action: torch.Tensor
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Log-probability of ``action``, entropy, value."""
        dist = self._dist(x)
        return dist.log_prob(action).sum(-1), dist.entropy().sum(-1), self.value(x)

    def act(self, x: torch.Tensor, gen: torch.Generator
            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Sample an action with ``gen``; return action, log-probability, value."""
        dist = self._dist(x)
        noise = torch.randn(dist.mean.shape, generator=gen)
        action = dist.mean + dist.stddev * noise
        return action, dist.log_prob(action).sum(-1), self.value(x)


def build_agent(obs_dim: int, action_space: gym.Space, hidden: int,
                gen: torch.Generator) -> Agent | GaussianAgent:
    """PPO's agent for an action space: categorical for ``Discrete``, Gaussian for ``Box``."""
    if isinstance(action_space, gym.spaces.Discrete):
        return Agent(obs_dim, int(action_space.n), hidden, gen)
    return GaussianAgent(obs_dim, int(np.prod(action_space.shape)), hidden, gen)


def train_worker(cfg: Config, ctx: WorkerContext) -> WorkerResult:
    """Run one PPO worker until the budget is spent or the workers agree it is solved."""
    gen = torch_generator(cfg.seed + 7919 * ctx.rank)  # actions, minibatch order
    envs = EnvPool(cfg.env_id, cfg.num_envs, cfg.seed + 1000 * ctx.rank)
    obs_dim = int(np.prod(envs.observation_space.shape))
    space = envs.action_space
    agent = build_agent(obs_dim, space, cfg.hidden, torch_generator(cfg.seed))
    continuous = isinstance(agent, GaussianAgent)
    act_shape = tuple(space.shape) if continuous else ()
    optimizer = torch.optim.Adam(agent.parameters(), lr=cfg.learning_rate, eps=1e-5)
    exchange = GradientExchange(make_sync(ctx.sync, ctx.rank), list(agent.parameters()),
                                optimizer, max_grad_norm=cfg.max_grad_norm,
                                target_return=ctx.target_return, window=ctx.window,
                                board=ctx.board, record_digests=ctx.record_digests)
    window = EpisodeWindow(ctx.window)
    timer = SplitTimer(lambda: exchange.log.comm_seconds,
                       comm_cpu=lambda: exchange.log.comm_cpu_seconds)
    result = WorkerResult(rank=ctx.rank)

    batch_size = cfg.num_envs * cfg.num_steps
    minibatch_size = batch_size // cfg.num_minibatches
    iterations = max(1, cfg.total_timesteps // (batch_size * ctx.world))
    obs_buf = torch.zeros((cfg.num_steps, cfg.num_envs, obs_dim))
    act_buf = torch.zeros((cfg.num_steps, cfg.num_envs, *act_shape),
                          dtype=torch.float32 if continuous else torch.long)
    logp_buf = torch.zeros((cfg.num_steps, cfg.num_envs))
    rew_buf = torch.zeros((cfg.num_steps, cfg.num_envs))
    done_buf = torch.zeros((cfg.num_steps, cfg.num_envs))
    val_buf = torch.zeros((cfg.num_steps, cfg.num_envs))

    step = 0
    next_obs = torch.from_numpy(envs.reset())
    next_done = torch.zeros(cfg.num_envs)
    for iteration in range(1, iterations + 1):
        if cfg.anneal_lr:
            optimizer.param_groups[0]["lr"] = cfg.learning_rate * (
                1.0 - (iteration - 1.0) / iterations)

        # -- rollout ---------------------------------------------------------------------
        for t in range(cfg.num_steps):
            step += cfg.num_envs
            obs_buf[t], done_buf[t] = next_obs, next_done
            with torch.no_grad():
                action, logp, value = agent.act(next_obs, gen)
            act_buf[t], logp_buf[t], val_buf[t] = action, logp, value
            env_action = action.numpy()
            if continuous:
                env_action = np.clip(env_action, space.low, space.high)
            out = envs.step(env_action)
            rew_buf[t] = bootstrapped_rewards(out, agent.value, cfg.gamma)
            next_obs = torch.from_numpy(out.next_obs)
            next_done = torch.from_numpy(out.terminated | out.truncated).float()
            for ret, length in out.episodes:
                window.add(ret)
                ctx.reporter.episode(step, ret, length)

        # -- GAE -------------------------------------------------------------------------
        with torch.no_grad():
            next_value = agent.value(next_obs)
            advantages = gae(rew_buf, done_buf, val_buf, next_value, next_done, cfg.gamma,
                             cfg.gae_lambda)
            returns = advantages + val_buf

        b_obs = obs_buf.reshape(-1, obs_dim)
        b_act, b_logp = act_buf.reshape(-1, *act_shape), logp_buf.reshape(-1)
        b_adv, b_ret, b_val = advantages.reshape(-1), returns.reshape(-1), val_buf.reshape(-1)

        # -- PPO update, gradients exchanged every minibatch ------------------------------
        clipfracs, pg_loss, v_loss = [], torch.zeros(()), torch.zeros(())
        for _ in range(cfg.update_epochs):
            order = torch.randperm(batch_size, generator=gen)
            for start in range(0, batch_size, minibatch_size):
                mb = order[start:start + minibatch_size]
                new_logp, entropy, new_value = agent.evaluate(b_obs[mb], b_act[mb])
                logratio = new_logp - b_logp[mb]
                ratio = logratio.exp()
                with torch.no_grad():
                    clipfracs.append(((ratio - 1.0).abs() > cfg.clip_coef).float().mean().item())
                mb_adv = b_adv[mb]
                if cfg.norm_adv:
                    mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                pg_loss = torch.max(-mb_adv * ratio, -mb_adv * torch.clamp(
                    ratio, 1 - cfg.clip_coef, 1 + cfg.clip_coef)).mean()
                if cfg.clip_vloss:
                    v_unclipped = (new_value - b_ret[mb]) ** 2
                    v_clipped = b_val[mb] + torch.clamp(new_value - b_val[mb], -cfg.clip_coef,
                                                        cfg.clip_coef)
                    v_loss = 0.5 * torch.max(v_unclipped, (v_clipped - b_ret[mb]) ** 2).mean()
                else:
                    v_loss = 0.5 * ((new_value - b_ret[mb]) ** 2).mean()
                loss = pg_loss - cfg.ent_coef * entropy.mean() + cfg.vf_coef * v_loss
                optimizer.zero_grad()
                loss.backward()
                exchange.step(*window.stats)

        compute, comm = timer.lap()
        ctx.reporter.iteration(iteration, step, compute, comm,
                               compute_cpu_s=timer.compute_cpu, pg_loss=pg_loss.item(),
                               v_loss=v_loss.item(), clipfrac=float(np.mean(clipfracs)),
                               rounds=exchange.log.rounds)
        result.iterations = iteration
        record_solved(result, exchange, timer, step * ctx.world)
        if exchange.stopped or ctx.iterations_done(iteration):
            break

    exchange.close()
    envs.close()
    return finish_result(result, exchange, timer, step, agent)
