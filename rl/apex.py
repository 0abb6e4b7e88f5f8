"""Dedicated actors and learners around the switch's replay memory (Ape-X, PDP'22).

The actor-learner workers of :mod:`rl.dqn` and :mod:`rl.ddpg` each act, push,
sample and learn. This module runs the other topology the PDP'22 experiments
and Ape-X use:

* **actors** (``--actors A`` processes) only act and push: each steps its
  own seeded env with its own exploration (Ape-X: actor *i* of *A* decays
  epsilon to ``end_e ** (1 + i / (A - 1))`` for DQN, Gaussian noise scaled
  likewise for DDPG), pushes its transitions into the switch's replay memory
  and pulls the newest weights every ``pull_every`` steps;
* **learners** (``--learners L`` processes) only sample, learn and update
  priorities; with L > 1 their gradients are summed through the switch
  (:class:`rl.sync.GradientExchange`, any sync strategy) and every learner
  applies the same update;
* the replay memory's **rate limiter** (Reverb's, :class:`hostdrv.wire.ratelimit.RateLimiter`)
  keeps them in step (``docs/protocol.md`` section 5): sampling waits for
  ``min_size`` records, and samples per inserted record are held at
  ``samples_per_insert`` within ``error_buffer``: learners wait for actors and
  actors for learners, with "not yet" answers, never dropped requests. The
  memory is the switch's (``--replay innet``), a :class:`rl.replay.ReplayServer`
  in the launcher (``server``; the clients back off and ask again, as with the
  switch), or ``local``: one process holds the memory, one learner and the
  actors, and since it cannot wait for itself the limiter schedules it instead
  (:func:`local_main`: an actor acts and pushes while its push would be
  allowed, the learner learns while the actors' next push would be refused or
  they are done; neither allowed is a configuration error);
* a :class:`ParamBoard` in the launcher carries the newest weights from
  learner 0 to the actors and the actors' episode returns back to the
  learners' stop rule (the mean of the last ``window`` returns over every
  actor reaching the target).

``netrl train --algo dqn --topology apex --actors 4 --learners 1`` runs it
(:func:`run_apex`) with ``--replay innet`` (the default), ``server`` or ``local``
(one learner). The CSV files, the
summary and the plots are those of :func:`rl.run.run_workers`: actors
report episodes (ranks L … L+A−1), learners iterations (ranks 0 … L−1).
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hostdrv.wire.protocol import MAX_MEMBERS
from hostdrv.wire.ratelimit import RateLimiterConfig, RateLimiterState
from rl.parts import EnvPool, torch_generator
from rl.replay import (
    REPLAY_KINDS,
    InNetReplay,
    LocalReplay,
    RateLimited,
    RecordLayout,
    Replay,
    ReplaySpec,
)
from rl.replay import make_replay as _make_replay
from rl.run import DistConfig, SplitTimer, WorkerContext, WorkerResult, finish_result, record_solved
from rl.run.launch import Backends, _process_context, _worker_main
from rl.run.launch import _collect as collect
from rl.run.runlog import RunSummary
from rl.run.worker import Reporter
from rl.sync import GradientExchange, StopBoard, default_window, make_sync
from rl.tcp import TcpServer, connect, recv_exact, recv_struct

ALGOS = ("dqn", "ddpg")
"""Algorithms with an actor/learner topology."""


@dataclass
class ApexConfig:
    """The actor/learner topology's own options (the algorithm's come from its ``Config``).

    Attributes
    ----------
    actors, learners : int
        Processes of each kind.
    samples_per_insert : float or None
        Rate limiter target: records sampled per record inserted, over all
        learners (None: ``batch_size / train_frequency``, the ratio of the
        actor-learner workers: DQN 16, DDPG 64).
    error_buffer : float or None
        Allowed deviation in samples (None: two learner rounds and two
        actor pushes' worth, the least that lets both sides move).
    min_size : int or None
        Records before the first sample (None: the algorithm's ``learning_starts``).
    pull_every : int
        Actor env steps between weight pulls.
    publish_every : int
        Learner updates between weight publications (learner 0).
    push_every : int
        Actor env steps per PUSH (records per PUSH).
    rate_timeout : float
        Seconds a learner's SAMPLE or an actor's PUSH may wait on the rate
        limiter before the run fails with the client's error.
    """

    actors: int = 4
    learners: int = 1
    samples_per_insert: float | None = None
    error_buffer: float | None = None
    min_size: int | None = None
    pull_every: int = 50
    publish_every: int = 10
    push_every: int = 4
    rate_timeout: float = 60.0


@dataclass
class ApexTask:
    """What one actor or learner process is handed (pickled to it)."""

    algo: str
    cfg: Any
    apex: ApexConfig
    board: tuple[str, int]
    role: str
    index: int
    member: int


# -- the parameter board ------------------------------------------------------------------------

_REQ = struct.Struct("!BQd")  # op, integer argument, float argument
_OP_PUT, _OP_GET, _OP_EPISODE, _OP_ACTOR_DONE, _OP_LEARNER_DONE, _OP_RATE = 1, 2, 3, 4, 5, 6
_GET_HDR = struct.Struct("!QIBdIQ")  # version, bytes, stop, window sum, window count, env steps


class ParamBoard:
    """The launcher's meeting point of actors and learners (a TCP server thread).

    Learner 0 puts weights (a version and a float32 vector); actors get the
    newest when theirs is older, report every finished episode and their env
    steps, and say when their budget is spent; learners say when they stop.
    When either side is done the board calls ``release`` (the launcher turns
    the switch's sample-to-insert limit off there) so that the other side
    does not wait on the rate limiter for a partner that is gone. A local replay's process
    reports its limiter's :func:`rate_report` here (:attr:`rate`).

    Parameters
    ----------
    actors : int
        Actors that will report done.
    window : int
        Episode returns in the stop statistic.
    release : callable
        Called once when the actors or the learners are done.
    host : str
        Listen address.
    """

    def __init__(self, actors: int, window: int, release: Any, host: str = "127.0.0.1") -> None:
        self.actors = actors
        self.returns: deque[float] = deque(maxlen=window)
        self.release = release
        self.version = 0
        self.weights = b""
        self.env_steps = 0
        self.actors_done = 0
        self.learners_done = False
        self.rate: dict[str, float] = {}
        self._released = False
        self._lock = threading.Lock()
        self._server = TcpServer(self._serve, host, 0, name="apex-board")
        self.address: tuple[str, int] = self._server.address

    @property
    def stop(self) -> bool:
        """Every actor spent its budget, or the learners stopped."""
        return self.learners_done or self.actors_done >= self.actors

    def start(self) -> ParamBoard:
        """Serve in a background thread."""
        self._server.start()
        return self

    def close(self) -> None:
        """Stop serving."""
        self._server.stop()

    def _serve(self, conn: socket.socket) -> None:
        while True:
            op, arg, val = recv_struct(conn, _REQ)
            payload = b""
            with self._lock:
                if op == _OP_PUT:
                    data = recv_exact(conn, int(val))
                    self.version, self.weights = arg, data
                elif op == _OP_GET:
                    payload = self.weights if self.version > arg else b""
                elif op == _OP_EPISODE:
                    self.returns.append(val)
                    self.env_steps += arg
                elif op == _OP_ACTOR_DONE:
                    self.actors_done += 1
                    self.env_steps += arg
                elif op == _OP_LEARNER_DONE:
                    self.learners_done = True
                elif op == _OP_RATE:
                    self.rate = json.loads(recv_exact(conn, int(val)).decode())
                else:
                    raise ConnectionError(f"unknown board op {op}")
                head = _GET_HDR.pack(self.version, len(payload), int(self.stop),
                                     float(sum(self.returns)), len(self.returns),
                                     self.env_steps)
                fire = self.stop and not self._released
                self._released |= fire
            if fire:
                self.release()
            conn.sendall(head + payload)


class BoardClient:
    """An actor's or learner's connection to the :class:`ParamBoard`."""

    def __init__(self, address: tuple[str, int]) -> None:
        self._sock = connect(address)
        self.version = 0
        self.stop = False
        self.window: tuple[float, int] = (0.0, 0)
        self.env_steps = 0

    def _call(self, op: int, arg: int = 0, val: float = 0.0, data: bytes = b"") -> bytes:
        self._sock.sendall(_REQ.pack(op, arg, val) + data)
        version, n, stop, wsum, wcount, steps = recv_struct(self._sock, _GET_HDR)
        self.stop, self.window, self.env_steps = bool(stop), (wsum, wcount), steps
        body = recv_exact(self._sock, n) if n else b""
        if body:
            self.version = version
        return body

    def put(self, version: int, vec: np.ndarray) -> None:
        """Publish weights ``vec`` (float32) as ``version``."""
        data = np.ascontiguousarray(vec, dtype=np.float32).tobytes()
        self._call(_OP_PUT, version, float(len(data)), data)

    def get(self) -> np.ndarray | None:
        """The newest weights if newer than the last ones fetched, else None."""
        body = self._call(_OP_GET, self.version)
        return np.frombuffer(body, dtype=np.float32) if body else None

    def poll(self) -> None:
        """Refresh :attr:`stop`, :attr:`window` and :attr:`env_steps` (no weights)."""
        self._call(_OP_GET, 1 << 62)

    def episode(self, ret: float, steps: int) -> None:
        """Report a finished episode and the env steps since the last report."""
        self._call(_OP_EPISODE, steps, ret)

    def actor_done(self, steps: int) -> None:
        """This actor spent its budget (with its last unreported env steps)."""
        self._call(_OP_ACTOR_DONE, steps)

    def learner_done(self) -> None:
        """The learners stopped."""
        self._call(_OP_LEARNER_DONE)

    def rate(self, report: Mapping[str, float]) -> None:
        """Hand the launcher a local replay's :func:`rate_report`."""
        data = json.dumps(dict(report)).encode()
        self._call(_OP_RATE, 0, float(len(data)), data)

    def close(self) -> None:
        """Close the connection."""
        self._sock.close()


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


# -- the algorithms' parts ----------------------------------------------------------------------

class _Parts:
    """An algorithm's networks, layout and exploration, as actors and learners need them."""

    def __init__(self, algo: str, cfg: Any, env: EnvPool) -> None:
        self.algo = algo
        obs_shape = tuple(env.observation_space.shape)
        obs_dim = int(np.prod(obs_shape))
        init = torch_generator(cfg.seed)
        if algo == "dqn":
            from rl.dqn import QNetwork

            self.n_actions = int(env.action_space.n)
            self.q = QNetwork(obs_dim, self.n_actions, cfg.hidden, init)
            self.target = QNetwork(obs_dim, self.n_actions, cfg.hidden, init)
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


def _replay(task: ApexTask, ctx: WorkerContext, layout: RecordLayout) -> Replay:
    spec = ctx.replay
    assert spec is not None
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
        self.result = WorkerResult(rank=rank)
        self.budget = max(1, cfg.total_timesteps // apex.actors)
        self.end_e = actor_epsilon(getattr(cfg, "end_e", 0.02), i, apex.actors)
        self.noise = getattr(cfg, "exploration_noise", 0.1)
        self.pending: list[tuple[Any, ...]] = []
        self.obs = self.env.reset()
        self.unreported = 0
        self.step = 0

    @property
    def wants_push(self) -> bool:
        """``push_every`` transitions are waiting to be pushed."""
        return len(self.pending) >= self.task.apex.push_every

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
        return not exchange.stopped

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


def local_main(task: ApexTask, ctx: WorkerContext) -> WorkerResult:
    """One process with a :class:`~rl.replay.LocalReplay`, the learner and every actor.

    The process cannot wait on its own limiter, so the limiter schedules it: the actors
    take turns (one env step each); an actor whose push the limiter would refuse hands
    the turn to the learner, which learns until the push would pass; when the actors are
    done the learner runs alone (limit lifted) until it stops, and when it stops first
    the actors end. When the limiter refuses both the actor's push and the learner's
    sample, the configuration is wrong: :class:`RuntimeError`. The limiter's
    :func:`rate_report` goes to the board when the first side is done.
    """
    apex = task.apex
    board = BoardClient(task.board)
    learner = _Learner(replace(task, role="learner", index=0), ctx,
                       lambda layout: _replay(task, ctx, layout), board)
    replay = learner.replay
    assert isinstance(replay, LocalReplay)
    actors = []
    for i in range(apex.actors):
        rep = Reporter(ctx.reporter.q, 1 + i)
        rep.start()
        actors.append(_Actor(replace(task, role="actor", index=i), lambda _: replay, board,
                             rep, 1 + i))
    running = list(actors)
    learning, k = True, 0
    b = task.cfg.batch_size
    while learning and running:
        actor = running[k % len(running)]
        if not actor.wants_push:
            if actor.act():
                k += 1
            else:
                running.remove(actor)
                actor.finish()
            continue
        try:
            actor.push()  # refused at once (RateLimited) when the learner is behind
            k += 1
            continue
        except RateLimited:
            pass
        if replay.can_sample(b):
            learning = learner.step()
        else:
            st = replay.store
            raise RuntimeError(f"the local replay's rate limiter refuses both a push of "
                               f"{len(actor.pending)} records and a sample of {b} (size "
                               f"{st.size}, {st.limiter.state()}): raise error_buffer")
    # the first side is done: report the limiter, then lift it for the other side
    st = replay.store
    c = st.counts
    board.rate(rate_report(st.limiter.state(), {
        "samples": c.samples, "push_not_yet": c.push_not_yet,
        "sample_not_yet": c.sample_not_yet, "size": st.size}))
    st.limiter.configure(RateLimiterConfig())
    for actor in running:  # the learner stopped first
        actor.finish()
    while learning:  # the actors are done
        learning = learner.step()
    for actor in actors:
        actor.reporter.done(actor.result)
    result = learner.finish()
    board.close()
    return result


def apex_main(task: ApexTask, ctx: WorkerContext) -> WorkerResult:
    """Entry point of every actor and learner process (and of a local replay's one)."""
    if task.role == "local":
        return local_main(task, ctx)
    return learner_main(task, ctx) if task.role == "learner" else actor_main(task, ctx)


# -- the launcher -------------------------------------------------------------------------------

def rate_limits(algo: str, cfg: Any, apex: ApexConfig) -> tuple[int, float, float]:
    """``(min_size, samples_per_insert, error_buffer)`` of a run (the defaults filled in)."""
    spi = apex.samples_per_insert
    if spi is None:
        spi = cfg.batch_size / max(1, cfg.train_frequency)
    err = apex.error_buffer
    if err is None:
        err = 2.0 * (cfg.batch_size * apex.learners + spi * apex.push_every * apex.actors)
    min_size = apex.min_size if apex.min_size is not None else cfg.learning_starts
    return max(1, int(min_size)), float(spi), float(err)


RATE_COUNTERS = {"samples": "CNT_TX_SAMPLE_RESP", "push_not_yet": "CNT_TX_PUSH_NOT_YET",
                 "sample_not_yet": "CNT_TX_SAMPLE_NOT_YET", "size": "RPL_SIZE"}
"""The switch's registers :func:`run_apex` reads for :func:`rate_report`'s ``counts``, beside
:meth:`hostdrv.SwitchControl.rate_limiter`, when the first side finishes (before the limit is
lifted); a host replay memory counts the same (:class:`rl.replay.RateCounts`)."""


def rate_report(state: RateLimiterState, counts: Mapping[str, float]) -> dict[str, float]:
    """What the rate limiter did: samples served, records inserted (from the accumulator
    ``diff = inserts * SPI - samples``), the achieved samples per insert, the refused requests
    and Reverb's bounds around ``SPI * min_size`` that ``diff`` must stay within.

    Parameters
    ----------
    state : RateLimiterState
        The limiter (:meth:`hostdrv.SwitchControl.rate_limiter`, or a host memory's).
    counts : mapping
        ``samples``, ``push_not_yet``, ``sample_not_yet`` and ``size`` (:data:`RATE_COUNTERS`)
        at the same moment.
    """
    diff, spi = state.diff, state.samples_per_insert
    samples = counts["samples"]
    inserts = (diff + samples) / spi if spi else float("nan")
    return {"samples": samples, "inserts": inserts, "diff": diff,
            "samples_per_insert": samples / inserts if inserts else float("nan"),
            "target_samples_per_insert": spi, "error_buffer": state.error_buffer,
            "min_diff": state.min_diff, "max_diff": state.max_diff,
            "push_not_yet": counts["push_not_yet"], "sample_not_yet": counts["sample_not_yet"],
            "size": counts["size"]}


def _switch_rate(url: str) -> dict[str, float]:
    """:func:`rate_report` of the switch at ``url``, then its limit lifted."""
    import hostdrv

    c = hostdrv.SwitchControl(url)
    # the other side still runs: a batch served between the reads of diff and of the
    # counters made inserts = (diff + samples) / SPI count it twice (1604 for 1600);
    # read until diff and the counters are from the same moment
    for _ in range(100):
        state = c.rate_limiter()
        counts = {k: c.read(name) for k, name in RATE_COUNTERS.items()}
        if c.rate_limiter().diff_fixed == state.diff_fixed:
            break
    c.configure_rate_limiter(min_size=1, samples_per_insert=0.0, error_buffer=0.0)
    c.close()
    return rate_report(state, counts)


def run_apex(algo: str, cfg: Any, apex: ApexConfig, dist: DistConfig, replay: ReplaySpec, *,
             target_return: float | None, run_dir: str | Path | None = None,
             progress: bool = True, timeout: float | None = None) -> RunSummary:
    """Train ``algo`` with ``apex.actors`` actors and ``apex.learners`` learners.

    Parameters
    ----------
    algo : str
        ``dqn`` or ``ddpg``.
    cfg : dataclass
        The algorithm's ``Config`` (``rl.dqn.Config`` / ``rl.ddpg.Config``).
    apex : ApexConfig
        Actors, learners, rate limits, weight traffic.
    dist : DistConfig
        The learners' gradient sync (``workers`` is set to ``apex.learners``).
    replay : ReplaySpec
        The replay memory whose rate limiter keeps the two sides in step: ``innet`` (the
        switch's), ``server`` (a :class:`rl.replay.ReplayServer` here) or ``local`` (one
        process, one learner: :func:`local_main`). Its ``rate_limiter`` is set here.
    target_return, run_dir, progress, timeout :
        As for :func:`rl.run.run_workers`.

    Raises
    ------
    ValueError
        Unknown algorithm or replay kind, fewer than one actor or learner, more than one
        learner with a local replay, or more member ids than the switch has.
    """
    if algo not in ALGOS:
        raise ValueError(f"bad algo={algo!r}: the actor/learner topology runs {ALGOS}")
    if replay.kind not in REPLAY_KINDS:
        raise ValueError(f"bad replay={replay.kind!r}: the actor/learner topology runs with "
                         f"{REPLAY_KINDS}")
    if apex.actors < 1 or apex.learners < 1:
        raise ValueError(f"bad topology: {apex.actors} actors, {apex.learners} learners "
                         "(at least one of each)")
    local = replay.kind == "local"
    if local and apex.learners != 1:
        raise ValueError(f"bad topology: {apex.learners} learners with a local replay, which "
                         "lives in one process with one learner (use server or innet)")
    dist = replace(dist, workers=apex.learners)
    replay.rate_limiter = RateLimiterConfig.from_ratio(*rate_limits(algo, cfg, apex))
    backends = Backends(dist, replay)
    n = apex.actors + apex.learners
    out = Path(run_dir) if run_dir is not None else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    started: list[Any] = []
    board: ParamBoard | None = None
    t_wall = time.time()
    try:
        spec, rspec = backends.start()
        assert rspec is not None
        base = rspec.member_offset
        if rspec.kind == "innet" and base + n > MAX_MEMBERS:
            raise ValueError(f"bad topology: {apex.learners} learners and {apex.actors} actors "
                             f"need member ids {base} .. {base + n - 1}, the switch has "
                             f"{MAX_MEMBERS} (0 .. {MAX_MEMBERS - 1})"
                             + (f"; ids 0 .. {base - 1} aggregate the learners' gradients"
                                if base else ""))
        rates: list[dict[str, float]] = []

        def release() -> None:
            """One side is done: record the limiter's state, then let the other side run free."""
            if rspec.kind == "innet":
                assert rspec.url is not None
                rates.append(_switch_rate(rspec.url))
            elif rspec.kind == "server":
                server = backends.replay_backend.server if backends.replay_backend else None
                assert server is not None
                state, c, size = server.rate_limiter()
                server.configure_rate_limiter(RateLimiterConfig())
                rates.append(rate_report(state, {
                    "samples": c.samples, "push_not_yet": c.push_not_yet,
                    "sample_not_yet": c.sample_not_yet, "size": size}))
            # local: the one process reports (ParamBoard.rate) and lifts its own limit

        board = ParamBoard(apex.actors, default_window(apex.learners) * 4, release).start()
        mp = _process_context(apex_main)
        q: Any = mp.Queue()
        stop = StopBoard(mp.Value("q", -1))
        roles = [("local", 0)] if local else \
            [("learner", j) for j in range(apex.learners)] + \
            [("actor", i) for i in range(apex.actors)]
        for rank, (role, idx) in enumerate(roles):
            task = ApexTask(algo, cfg, apex, board.address, role, idx, base + rank)
            # learners come first, so a learner's rank is its index among the learners
            wctx = WorkerContext(rank, apex.learners, spec, rspec, Reporter(q, rank),
                                 target_return, default_window(n), False, stop)
            p = mp.Process(target=_worker_main, args=(apex_main, task, wctx),
                           name=f"netrl-{role}{idx}", daemon=True)
            p.start()
            started.append(p)
        summary = collect(q, started, n, algo=algo, env_id=cfg.env_id, dist=dist,
                           total_steps=cfg.total_timesteps, replay=rspec, out=out,
                           progress=progress, timeout=timeout, t_wall=t_wall,
                           switch_url=rspec.url)
        learners = summary.results[:apex.learners]
        iters = max(1, learners[0].iterations)
        summary.mean_compute_s = float(np.mean([r.compute_seconds / iters for r in learners]))
        summary.mean_comm_s = float(np.mean([r.comm_seconds / iters for r in learners]))
        rate = board.rate if local else (rates[0] if rates else {})
        if out is not None:
            (out / "summary.json").write_text(json.dumps(
                {**summary.to_json(), "apex": {**asdict(apex), "rate": rate}}, indent=2))
    finally:
        grace = 5.0
        for p in started:
            if p.is_alive():
                p.join(timeout=grace)
                if p.is_alive():
                    p.terminate()
                    p.join(timeout=5)
        if board is not None:
            board.close()
        backends.stop()
    if out is not None:
        from rl.plots import plot_run

        plot_run(out, title=f"{algo} {cfg.env_id} apex {apex.actors}A/{apex.learners}L "
                 f"{dist.sync}")
    return summary


__all__ = ["ALGOS", "ApexConfig", "ApexTask", "BoardClient", "ParamBoard", "RATE_COUNTERS",
           "actor_epsilon", "actor_main", "apex_main", "learner_main", "local_main", "rate_limits",
           "rate_report", "run_apex"]
