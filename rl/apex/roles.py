"""The two roles: an actor acts and pushes (:func:`actor_main`), a learner samples,
learns and updates priorities (:func:`learner_main`); the algorithms' parts they share.

DQN on Atari frames with in-network replay (``ReplaySpec.frames``) pushes one frame record
per env step and learns from transitions rebuilt from stacked samples, as :mod:`rl.dqn`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from rl.apex.board import BoardClient
from rl.apex.config import ApexTask
from rl.parts import EnvPool, torch_generator
from rl.replay import FrameLayout, FrameWriter, InNetFrameReplay, InNetReplay, RecordLayout, Replay
from rl.replay import make_replay as _make_replay
from rl.run import SplitTimer, WorkerContext, WorkerResult, finish_result, record_solved
from rl.run.worker import Reporter
from rl.sync import GradientExchange, make_sync

__all__ = ["actor_epsilon", "actor_main", "learner_main"]


def _flat(modules: list[torch.nn.Module]) -> np.ndarray:
    return np.concatenate([p.detach().numpy().ravel() for m in modules for p in m.parameters()])


def _load(modules: list[torch.nn.Module], vec: np.ndarray) -> None:
    off = 0
    with torch.no_grad():
        for m in modules:
            for p in m.parameters():
                n = p.numel()
                p.copy_(torch.from_numpy(vec[off:off + n].reshape(p.shape)))
                off += n


def actor_epsilon(end_e: float, i: int, actors: int) -> float:
    """Ape-X's spread of exploration: actor ``i`` of ``actors`` ends at ``end_e ** (1 + i/(A-1))``."""
    return end_e ** (1.0 + (i / (actors - 1) if actors > 1 else 0.0))


class _Parts:
    """An algorithm's networks, layout and exploration, as actors and learners need them."""

    def __init__(self, algo: str, cfg: Any, env: EnvPool) -> None:
        self.algo = algo
        obs_shape = tuple(env.observation_space.shape)
        obs_dim = int(np.prod(obs_shape))
        init = torch_generator(cfg.seed)
        if algo == "dqn":
            from rl.dqn import build_q_network

            self.n_actions = int(env.action_space.n)
            self.q = build_q_network(obs_shape, self.n_actions, cfg.hidden, init)
            self.target = build_q_network(obs_shape, self.n_actions, cfg.hidden, init)
            self.target.load_state_dict(self.q.state_dict())
            self.policy: list[torch.nn.Module] = [self.q]
            self.layout = RecordLayout(obs_shape=obs_shape, action_shape=(),
                                       action_dtype="int64")
        else:
            from rl.ddpg import Actor, Critic

            act_shape = tuple(env.action_space.shape)
            act_dim = int(np.prod(act_shape))
            self.low, self.high = env.action_space.low, env.action_space.high
            self.actor = Actor(obs_dim, act_dim, cfg.hidden, self.low, self.high, init)
            self.critic = Critic(obs_dim, act_dim, cfg.hidden, init)
            self.actor_target = Actor(obs_dim, act_dim, cfg.hidden, self.low, self.high, init)
            self.critic_target = Critic(obs_dim, act_dim, cfg.hidden, init)
            self.actor_target.load_state_dict(self.actor.state_dict())
            self.critic_target.load_state_dict(self.critic.state_dict())
            self.policy = [self.actor]
            self.layout = RecordLayout(obs_shape=obs_shape, action_shape=act_shape,
                                       action_dtype="float32")


def _replay(task: ApexTask, ctx: WorkerContext, layout: RecordLayout) -> Any:
    spec = ctx.replay
    assert spec is not None
    if spec.frames:  # one Atari frame a record, observations rebuilt from stacks
        assert spec.url is not None
        return InNetFrameReplay(FrameLayout(frame_shape=layout.obs_shape[1:],
                                            history=spec.frames, record_bytes=spec.record_bytes),
                                spec.url, task.member, rate_timeout=task.apex.rate_timeout)
    layout = replace(layout, record_bytes=spec.record_bytes)
    if spec.kind == "innet":
        assert spec.url is not None
        return InNetReplay(layout, spec.url, task.member, rate_timeout=task.apex.rate_timeout)
    return _make_replay(replace(spec, rate_timeout=task.apex.rate_timeout), 0, layout)


class _Actor:
    """An actor's state: :meth:`act` one env step, :meth:`push` what it gathered."""

    def __init__(self, task: ApexTask, replay: Callable[[RecordLayout], Replay],
                 board: BoardClient, reporter: Reporter, rank: int) -> None:
        cfg, apex, i = task.cfg, task.apex, task.index
        self.task, self.board, self.reporter = task, board, reporter
        self.rng = np.random.default_rng(cfg.seed + 7919 * (i + 1))
        self.env = EnvPool(cfg.env_id, 1, cfg.seed + 1000 * (i + 1))
        self.parts = _Parts(task.algo, cfg, self.env)
        self.replay = replay(self.parts.layout)
        self.frames = (FrameWriter(self.replay.layout)
                       if isinstance(self.replay, InNetFrameReplay) else None)
        self.result = WorkerResult(rank=rank)
        self.budget = max(1, cfg.total_timesteps // apex.actors)
        self.end_e = actor_epsilon(getattr(cfg, "end_e", 0.02), i, apex.actors)
        self.noise = getattr(cfg, "exploration_noise", 0.1)
        self.pending: list[tuple[Any, ...]] = []
        self.obs = self.env.reset()
        if self.frames is not None:
            self.frames.first(self.obs[0, -1])
        self.unreported = 0
        self.step = 0

    @property
    def wants_push(self) -> bool:
        """``push_every`` transitions are waiting to be pushed."""
        waiting = len(self.frames) if self.frames is not None else len(self.pending)
        return waiting >= self.task.apex.push_every

    def act(self) -> bool:
        """One env step (pulling weights every ``pull_every``); False when the budget is
        spent or the board says stop (nothing done then)."""
        task, cfg, apex, parts = self.task, self.task.cfg, self.task.apex, self.parts
        step = self.step + 1
        if step > self.budget:
            return False
        self.step = step
        if step % apex.pull_every == 1 or apex.pull_every == 1:
            vec = self.board.get()
            if vec is not None:
                _load(parts.policy, vec)
            if self.board.stop:
                return False
        obs, rng = self.obs, self.rng
        with torch.no_grad():
            if task.algo == "dqn":
                from rl.dqn import linear_schedule

                eps = linear_schedule(cfg.start_e, self.end_e,
                                      cfg.exploration_steps // apex.actors, step)
                action: Any = (int(rng.integers(parts.n_actions)) if rng.random() < eps
                               else int(parts.q(torch.from_numpy(obs)).argmax(-1)[0]))
                act_arr = np.array([action])
            else:
                scale = self.noise * (1.0 + task.index) * (parts.high - parts.low) / 2.0
                if step <= cfg.learning_starts // apex.actors or self.board.version == 0:
                    a = rng.uniform(parts.low, parts.high)
                else:
                    a = parts.actor(torch.from_numpy(obs))[0].numpy() + rng.normal(0.0, scale)
                action = np.clip(a, parts.low, parts.high).astype(np.float32)
                act_arr = action[None]
        out = self.env.step(act_arr)
        if self.frames is not None:
            self.frames.step(out.final_obs[0, -1], int(act_arr[0]), float(out.rewards[0]),
                             bool(out.terminated[0]), self.replay.max_priority)
            if out.terminated[0] or out.truncated[0]:
                self.frames.first(out.next_obs[0, -1])
        else:
            self.pending.append((obs[0], act_arr[0], float(out.rewards[0]), out.final_obs[0],
                                 bool(out.terminated[0])))
        self.obs = out.next_obs
        self.unreported += 1
        for ret, length in out.episodes:
            self.board.episode(ret, self.unreported)
            self.unreported = 0
            self.reporter.episode(step, ret, length)
        return True

    def push(self) -> None:
        """Push the waiting transitions (an innet or server replay waits while the learners
        are behind; a local one must be asked first: :meth:`LocalReplay.can_push`)."""
        if self.frames is not None:
            self.replay.push_frames(*self.frames.take())
            return
        o, a_, r, o2, d = (np.array(x) for x in zip(*self.pending, strict=True))
        self.replay.push(o, a_, r, o2, d)
        self.pending.clear()

    def finish(self) -> WorkerResult:
        """Tell the board this actor is done; close its env."""
        self.board.actor_done(self.unreported)
        self.result.env_steps = self.step
        self.env.close()
        return self.result


def actor_main(task: ApexTask, ctx: WorkerContext) -> WorkerResult:
    """An actor: act with the newest weights, push, report episodes; nothing else."""
    board = BoardClient(task.board)
    actor = _Actor(task, lambda layout: _replay(task, ctx, layout), board, ctx.reporter,
                   ctx.rank)
    replay = actor.replay
    while actor.act():
        if actor.wants_push:
            actor.push()  # waits while the learners are behind
    result = actor.finish()
    replay.close()
    board.close()
    return result


class _Learner:
    """A learner's state: :meth:`step` is one sample, learn, update round."""

    def __init__(self, task: ApexTask, ctx: WorkerContext,
                 replay: Callable[[RecordLayout], Replay], board: BoardClient) -> None:
        cfg, j = task.cfg, task.index
        self.task, self.ctx, self.board = task, ctx, board
        env = EnvPool(cfg.env_id, 1, cfg.seed)
        self.parts = parts = _Parts(task.algo, cfg, env)
        env.close()
        self.replay = replay(parts.layout)
        if task.algo == "dqn":
            params = list(parts.q.parameters())
            self.opts: Any = torch.optim.Adam(parts.q.parameters(), lr=cfg.learning_rate)

            def after() -> None:
                if self.exchange.log.rounds % cfg.target_network_frequency == 0:
                    parts.target.load_state_dict(parts.q.state_dict())
        else:
            from rl.ddpg import soft_update

            params = [*parts.actor.parameters(), *parts.critic.parameters()]
            self.opts = [torch.optim.Adam(parts.actor.parameters(), lr=cfg.actor_lr),
                         torch.optim.Adam(parts.critic.parameters(), lr=cfg.critic_lr)]

            def after() -> None:
                soft_update(parts.actor_target, parts.actor, cfg.tau)
                soft_update(parts.critic_target, parts.critic, cfg.tau)

        self.exchange = GradientExchange(make_sync(ctx.sync, j), params, self.opts,
                                         max_grad_norm=getattr(cfg, "max_grad_norm", None),
                                         target_return=ctx.target_return, window=ctx.window,
                                         board=ctx.board, after_step=after)
        self.timer = SplitTimer(lambda: self.exchange.log.comm_seconds
                                + self.replay.comm_seconds)
        self.result = WorkerResult(rank=ctx.rank)
        self.prioritized = bool(getattr(cfg, "prioritized", False))
        self.updates = 0
        self.beta0 = float(getattr(cfg, "beta", 0.4))
        if j == 0:
            board.put(1, _flat(parts.policy))

    def step(self) -> bool:
        """One round: publish or poll, sample (an innet or server replay waits on the
        limiter; a local one must be asked first), learn, update priorities; False when the
        learners stop."""
        task, cfg, apex, j = self.task, self.task.cfg, self.task.apex, self.task.index
        parts, board, exchange, replay = self.parts, self.board, self.exchange, self.replay
        if self.updates % apex.publish_every == 0:
            if j == 0:
                board.put(self.updates + 1, _flat(parts.policy))
                if board.stop:
                    # the actors are done: every learner stops after the next round
                    exchange.board.propose(exchange.next_round + 1)
            else:
                board.poll()
        # importance exponent annealed to 1 over the actors' budget (as rl.dqn does)
        beta = self.beta0 + (1.0 - self.beta0) * min(
            1.0, board.env_steps / max(1, cfg.total_timesteps))
        batch = replay.sample(cfg.batch_size, prioritized=self.prioritized, beta=beta)
        td = None
        if task.algo == "dqn":
            from rl.dqn import td_backward

            loss, td = td_backward(parts.q, parts.target, self.opts, batch, cfg)
        else:
            from rl.ddpg import ddpg_backward

            _, loss = ddpg_backward(parts.actor, parts.critic, parts.actor_target,
                                    parts.critic_target, self.opts[0], self.opts[1], batch, cfg)
        stats = board.window if j == 0 else (0.0, 0)
        if not exchange.step(*stats):
            return False
        if self.prioritized and td is not None:
            replay.update_priorities(batch.indices,
                                     (td.abs().numpy() + cfg.prio_eps) ** cfg.alpha)
        self.updates += 1
        if self.updates % cfg.log_every == 0:
            compute, comm = self.timer.lap()
            self.result.iterations += 1
            # env steps are the actors' (their episode reports): 0 here, the total in metrics
            self.ctx.reporter.iteration(self.result.iterations, 0, compute, comm,
                                        loss=float(loss.item()), rounds=exchange.log.rounds,
                                        actor_steps=board.env_steps)
        record_solved(self.result, exchange, self.timer, board.env_steps)
        # the learners step in lockstep (one exchange round each), so every learner reaches
        # --iterations after the same round and none waits on a learner that stopped
        return not (exchange.stopped or self.ctx.iterations_done(self.result.iterations))

    def finish(self) -> WorkerResult:
        """Close the exchange and tell the board the learners stopped."""
        self.exchange.close()
        self.board.learner_done()
        return finish_result(self.result, self.exchange, self.timer, 0, *self.parts.policy,
                             final_lap=True)


def learner_main(task: ApexTask, ctx: WorkerContext) -> WorkerResult:
    """A learner: sample, learn (gradients summed over the learners), update priorities."""
    board = BoardClient(task.board)
    learner = _Learner(task, ctx, lambda layout: _replay(task, ctx, layout), board)
    replay = learner.replay
    while learner.step():
        pass
    result = learner.finish()
    replay.close()
    board.close()
    return result
