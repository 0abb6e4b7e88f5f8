"""DQN with prioritized experience replay, N actor-learner workers.

CleanRL's ``dqn.py`` loop, one worker's view. Every worker is an *actor*:
it steps its own seeded env epsilon-greedily and pushes its transitions into
the replay memory (``innet``: the switch, shared by all workers; ``server``:
a TCP replay server, shared; ``local``: its own in-process buffer). Every
``train_frequency`` steps it is a *learner*: it samples a prioritized batch
(``p = (|delta| + eps) ** alpha``, importance weights ``(N * P) ** -beta``),
computes the weighted Huber TD loss, exchanges the gradient through
:class:`rl.sync.GradientExchange` (the N workers' gradients summed) and sends
the new priorities back. The target network is refreshed every
``target_network_frequency`` applied rounds on every worker alike.

On Atari frames with in-network or local replay (``ReplaySpec.frames``, issue 26) the actor
pushes one frame record per env step (:class:`rl.replay.FrameWriter`: an episode's first frame
with priority 0, then each new frame with the action and reward that led to it) and the
learner samples stacks of five records that :class:`rl.replay.InNetFrameReplay` (or
:class:`rl.replay.LocalFrameReplay`, the same rule on the worker's own store) turns into
transitions, Dopamine-style (zero frames before an episode's first).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from rl.parts import EnvPool, torch_generator, uniform_layer
from rl.parts.nets import CNNQNetwork, is_image
from rl.replay import (
    FrameLayout,
    FrameWriter,
    InNetFrameReplay,
    LocalFrameReplay,
    RecordLayout,
    ReplayBatch,
    make_replay,
)
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
    """DQN hyper-parameters (per worker unless said otherwise)."""

    env_id: str = "CartPole-v1"
    seed: int = 1
    total_timesteps: int = 200_000
    """Env steps over all workers."""
    learning_rate: float = 1e-3
    gamma: float = 0.99
    batch_size: int = 64
    """Samples per worker per update (a power of two, at most 64)."""
    train_frequency: int = 4
    """Env steps between updates (and between pushes)."""
    learning_starts: int = 500
    """Env steps per worker before the first update."""
    target_network_frequency: int = 100
    """Applied rounds between target-network copies."""
    start_e: float = 1.0
    end_e: float = 0.02
    exploration_steps: int = 10_000
    """Env steps (all workers) over which epsilon decays."""
    prioritized: bool = True
    alpha: float = 0.6
    beta: float = 0.4
    """Initial importance exponent, annealed to 1 over the budget."""
    prio_eps: float = 1e-3
    double_q: bool = True
    hidden: int = 128
    """Hidden units (MLP layers; on frames, the Nature-CNN's fully connected layer)."""
    max_grad_norm: float = 10.0
    log_every: int = 25
    """Updates per logged iteration."""


class QNetwork(nn.Module):
    """MLP Q-function."""

    def __init__(self, obs_dim: int, n_actions: int, hidden: int, gen: torch.Generator) -> None:
        super().__init__()
        self.net = nn.Sequential(
            uniform_layer(nn.Linear(obs_dim, hidden), gen), nn.ReLU(),
            uniform_layer(nn.Linear(hidden, hidden), gen), nn.ReLU(),
            uniform_layer(nn.Linear(hidden, n_actions), gen))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Q-values of every action for observation ``x``."""
        return self.net(x)


def build_q_network(obs_shape: tuple[int, ...], n_actions: int, hidden: int,
                    gen: torch.Generator) -> nn.Module:
    """DQN's Q-function for an observation shape: the Nature CNN on frames, an MLP on vectors."""
    if is_image(obs_shape):
        return CNNQNetwork(obs_shape, n_actions, hidden, gen)
    return QNetwork(int(np.prod(obs_shape)), n_actions, hidden, gen)


def linear_schedule(start: float, end: float, duration: int, t: int) -> float:
    """Linear interpolation from ``start`` to ``end`` over ``duration`` steps."""
    return max(end, start + (end - start) * t / max(1, duration))


def td_backward(q_net: nn.Module, target: nn.Module, optimizer: torch.optim.Optimizer,
                batch: ReplayBatch, cfg: Config) -> tuple[torch.Tensor, torch.Tensor]:
    """The importance-weighted Huber TD loss of ``batch`` (double DQN when
    ``cfg.double_q``), backpropagated into ``q_net``'s zeroed gradients.

    Returns
    -------
    (loss, td)
        The loss and the TD errors (detached), from which the new priorities come.
    """
    b = cfg.batch_size
    b_obs = torch.from_numpy(batch.obs.reshape(b, -1).astype(np.float32))
    b_next = torch.from_numpy(batch.next_obs.reshape(b, -1).astype(np.float32))
    b_act = torch.from_numpy(batch.actions.astype(np.int64))
    with torch.no_grad():
        if cfg.double_q:
            next_a = q_net(b_next).argmax(-1, keepdim=True)
            next_q = target(b_next).gather(1, next_a).squeeze(1)
        else:
            next_q = target(b_next).max(-1).values
        td_target = (torch.from_numpy(batch.rewards)
                     + cfg.gamma * next_q * (1.0 - torch.from_numpy(batch.dones)))
    q = q_net(b_obs).gather(1, b_act.view(-1, 1)).squeeze(1)
    td = td_target - q
    weights = torch.from_numpy(batch.weights)
    loss = (weights * F.smooth_l1_loss(q, td_target, reduction="none")).mean()
    optimizer.zero_grad()
    loss.backward()
    return loss, td.detach()


def train_worker(cfg: Config, ctx: WorkerContext) -> WorkerResult:
    """Run one DQN actor-learner until the budget is spent or the workers agree it is solved."""
    assert ctx.replay is not None, "DQN needs a replay strategy"
    rng = np.random.default_rng(cfg.seed + 7919 * ctx.rank)  # exploration
    envs = EnvPool(cfg.env_id, 1, cfg.seed + 1000 * ctx.rank)
    obs_shape = tuple(envs.observation_space.shape)
    n_actions = int(envs.action_space.n)
    q_net = build_q_network(obs_shape, n_actions, cfg.hidden, torch_generator(cfg.seed))
    target = build_q_network(obs_shape, n_actions, cfg.hidden, torch_generator(cfg.seed))
    target.load_state_dict(q_net.state_dict())
    optimizer = torch.optim.Adam(q_net.parameters(), lr=cfg.learning_rate)

    def refresh_target() -> None:
        """Copy the online network every ``target_network_frequency`` rounds."""
        if exchange.log.rounds % cfg.target_network_frequency == 0:
            target.load_state_dict(q_net.state_dict())

    exchange = GradientExchange(make_sync(ctx.sync, ctx.rank), list(q_net.parameters()),
                                optimizer, max_grad_norm=cfg.max_grad_norm,
                                target_return=ctx.target_return, window=ctx.window,
                                board=ctx.board, record_digests=ctx.record_digests,
                                after_step=refresh_target)
    frames: FrameWriter | None = None
    replay: Any
    if ctx.replay.frames:  # one frame a record, observations rebuilt from stacks
        assert is_image(obs_shape)
        layout = FrameLayout(frame_shape=obs_shape[1:], history=ctx.replay.frames,
                             record_bytes=ctx.replay.record_bytes)
        if ctx.replay.kind == "local":
            replay = LocalFrameReplay(layout, ctx.replay.capacity, ctx.replay.seed + ctx.rank)
        else:
            assert ctx.replay.url is not None
            replay = InNetFrameReplay(layout, ctx.replay.url,
                                      ctx.rank + ctx.replay.member_offset,
                                      rate_timeout=ctx.replay.rate_timeout)
        frames = FrameWriter(replay.layout)
    else:
        replay = make_replay(ctx.replay, ctx.rank, RecordLayout(
            obs_shape=obs_shape, obs_dtype="uint8" if is_image(obs_shape) else "float32",
            action_shape=(), action_dtype="int64",
            record_bytes=ctx.replay.record_bytes))
    window = EpisodeWindow(ctx.window)
    timer = SplitTimer(lambda: exchange.log.comm_seconds + replay.comm_seconds,
                       comm_cpu=lambda: exchange.log.comm_cpu_seconds)
    grad_comm = 0.0  # the gradient exchange's part of comm_s (the rest is replay access)
    result = WorkerResult(rank=ctx.rank)

    steps_per_worker = max(cfg.learning_starts + cfg.train_frequency,
                           cfg.total_timesteps // ctx.world)
    pending: list[tuple[np.ndarray, int, float, np.ndarray, bool]] = []
    obs = envs.reset()
    if frames is not None:
        frames.first(obs[0, -1])
    updates = 0
    loss = torch.zeros(())
    for step in range(1, steps_per_worker + 1):
        # -- act -------------------------------------------------------------------------
        epsilon = linear_schedule(cfg.start_e, cfg.end_e, cfg.exploration_steps,
                                  step * ctx.world)
        if rng.random() < epsilon:
            action = int(rng.integers(n_actions))
        else:
            with torch.no_grad():
                action = int(q_net(torch.from_numpy(obs)).argmax(-1)[0])
        out = envs.step(np.array([action]))
        if frames is not None:
            frames.step(out.final_obs[0, -1], action, float(out.rewards[0]),
                        bool(out.terminated[0]), replay.max_priority)
            if out.terminated[0] or out.truncated[0]:
                frames.first(out.next_obs[0, -1])
        else:
            pending.append((obs[0], action, float(out.rewards[0]), out.final_obs[0],
                            bool(out.terminated[0])))
        obs = out.next_obs
        for ret, length in out.episodes:
            window.add(ret)
            ctx.reporter.episode(step, ret, length)
        if step % cfg.train_frequency:
            continue

        # -- push what this actor collected ----------------------------------------------
        if frames is not None:
            replay.push_frames(*frames.take())
        else:
            o, a, r, o2, d = (np.array(x) for x in zip(*pending, strict=True))
            replay.push(o, a, r, o2, d)
            pending.clear()
        if step < cfg.learning_starts:
            continue

        # -- learn: prioritized sample, TD loss, gradient exchange, new priorities -------
        beta = cfg.beta + (1.0 - cfg.beta) * min(1.0, step / steps_per_worker)
        batch = replay.sample(cfg.batch_size, prioritized=cfg.prioritized, beta=beta)
        loss, td = td_backward(q_net, target, optimizer, batch, cfg)
        if not exchange.step(*window.stats):
            break
        if cfg.prioritized:
            replay.update_priorities(
                batch.indices, (td.abs().numpy() + cfg.prio_eps) ** cfg.alpha)
        updates += 1

        if updates % cfg.log_every == 0:
            compute, comm = timer.lap()
            grad_comm_s = exchange.log.comm_seconds - grad_comm
            grad_comm = exchange.log.comm_seconds
            result.iterations += 1
            ctx.reporter.iteration(result.iterations, step, compute, comm,
                                   compute_cpu_s=timer.compute_cpu, loss=loss.item(),
                                   grad_comm_s=grad_comm_s, epsilon=epsilon,
                                   rounds=exchange.log.rounds)
        record_solved(result, exchange, timer, step * ctx.world)
        if exchange.stopped or ctx.iterations_done(result.iterations):
            break

    exchange.close()
    replay.close()
    envs.close()
    return finish_result(result, exchange, timer, step, q_net, final_lap=True)
