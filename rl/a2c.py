"""A2C (synchronous advantage actor-critic) for discrete actions, over N workers.

The classic A2C loop, one worker's view: each worker steps ``num_envs``
seeded envs for ``num_steps`` steps, computes the actor-critic loss on that
short rollout and exchanges the gradient (one aggregation round per update)
through :class:`rl.sync.GradientExchange` instead of calling
``optimizer.step()``: the N workers' gradients are summed, averaged, and every
worker applies the same update, which is what A2C's synchronous batch over
many envs means.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from rl.parts import ActorCriticMLP, EnvPool, bootstrapped_rewards, gae, torch_generator
from rl.parts.nets import ActorCriticCNN, is_image
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
    """A2C hyper-parameters (per worker unless said otherwise)."""

    env_id: str = "CartPole-v1"
    seed: int = 1
    total_timesteps: int = 300_000
    """Env steps over all workers."""
    num_envs: int = 4
    """Env copies per worker."""
    num_steps: int = 16
    """Steps per env per update."""
    learning_rate: float = 1e-3
    gamma: float = 0.99
    gae_lambda: float = 0.95
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    norm_adv: bool = True
    hidden: int = 64
    """Hidden units (MLP layers; on frames, the Nature-CNN's fully connected layer)."""


def build_model(obs_shape: tuple[int, ...], n_actions: int, hidden: int,
                gen: torch.Generator) -> ActorCriticMLP | ActorCriticCNN:
    """The actor-critic for an observation shape: a CNN on frames, MLPs on vectors."""
    if is_image(obs_shape):
        return ActorCriticCNN(obs_shape, n_actions, hidden, gen)
    return ActorCriticMLP(int(np.prod(obs_shape)), n_actions, hidden, gen)


def train_worker(cfg: Config, ctx: WorkerContext) -> WorkerResult:
    """Run one A2C worker until the budget is spent or the workers agree it is solved."""
    gen = torch_generator(cfg.seed + 7919 * ctx.rank)
    envs = EnvPool(cfg.env_id, cfg.num_envs, cfg.seed + 1000 * ctx.rank)
    obs_shape = tuple(envs.observation_space.shape)
    model = build_model(obs_shape, int(envs.action_space.n), cfg.hidden,
                        torch_generator(cfg.seed))
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.learning_rate, eps=1e-5)
    exchange = GradientExchange(make_sync(ctx.sync, ctx.rank), list(model.parameters()),
                                optimizer, max_grad_norm=cfg.max_grad_norm,
                                target_return=ctx.target_return, window=ctx.window,
                                board=ctx.board, record_digests=ctx.record_digests)
    window = EpisodeWindow(ctx.window)
    timer = SplitTimer(lambda: exchange.log.comm_seconds,
                       comm_cpu=lambda: exchange.log.comm_cpu_seconds)
    result = WorkerResult(rank=ctx.rank)

    updates = max(1, cfg.total_timesteps // (cfg.num_envs * cfg.num_steps * ctx.world))
    obs_buf = torch.zeros((cfg.num_steps, cfg.num_envs, *obs_shape))
    act_buf = torch.zeros((cfg.num_steps, cfg.num_envs), dtype=torch.long)
    rew_buf = torch.zeros((cfg.num_steps, cfg.num_envs))
    done_buf = torch.zeros((cfg.num_steps, cfg.num_envs))

    step = 0
    next_obs = torch.from_numpy(envs.reset())
    next_done = torch.zeros(cfg.num_envs)
    for update in range(1, updates + 1):
        # -- rollout ---------------------------------------------------------------------
        for t in range(cfg.num_steps):
            step += cfg.num_envs
            obs_buf[t], done_buf[t] = next_obs, next_done
            with torch.no_grad():
                probs = torch.softmax(model.actor(next_obs), -1)
                action = torch.multinomial(probs, 1, generator=gen).squeeze(-1)
            act_buf[t] = action
            out = envs.step(action.numpy())
            rew_buf[t] = bootstrapped_rewards(out, model.value, cfg.gamma)
            next_obs = torch.from_numpy(out.next_obs)
            next_done = torch.from_numpy(out.terminated | out.truncated).float()
            for ret, length in out.episodes:
                window.add(ret)
                ctx.reporter.episode(step, ret, length)

        # -- advantages (GAE) and loss ---------------------------------------------------
        flat_obs = obs_buf.reshape(-1, *obs_shape)
        logits, values = model.logits_and_value(flat_obs)
        values = values.reshape(cfg.num_steps, cfg.num_envs)
        with torch.no_grad():
            next_value = model.value(next_obs)
            v = values.detach()
            advantages = gae(rew_buf, done_buf, v, next_value, next_done, cfg.gamma,
                             cfg.gae_lambda)
            returns = advantages + v
        adv = advantages.reshape(-1)
        if cfg.norm_adv:
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        dist = torch.distributions.Categorical(logits=logits)
        pg_loss = -(dist.log_prob(act_buf.reshape(-1)) * adv).mean()
        v_loss = 0.5 * ((values.reshape(-1) - returns.reshape(-1)) ** 2).mean()
        entropy = dist.entropy().mean()
        loss = pg_loss + cfg.vf_coef * v_loss - cfg.ent_coef * entropy
        optimizer.zero_grad()
        loss.backward()
        exchange.step(*window.stats)

        compute, comm = timer.lap()
        ctx.reporter.iteration(update, step, compute, comm,
                               compute_cpu_s=timer.compute_cpu, pg_loss=pg_loss.item(),
                               v_loss=v_loss.item(), entropy=entropy.item())
        result.iterations = update
        record_solved(result, exchange, timer, step * ctx.world)
        if exchange.stopped or ctx.iterations_done(update):
            break

    exchange.close()
    envs.close()
    return finish_result(result, exchange, timer, step, model)
