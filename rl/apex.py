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
* the switch's **rate limiter** keeps them in step (``docs/protocol.md``
  section 5): sampling waits for ``min_size`` records, and samples per
  inserted record are held at ``samples_per_insert`` within
  ``error_buffer``: learners wait for actors and actors for learners, with
  "not yet" answers from the switch, never dropped requests;
* a :class:`ParamBoard` in the launcher carries the newest weights from
  learner 0 to the actors and the actors' episode returns back to the
  learners' stop rule (the mean of the last ``window`` returns over every
  actor reaching the target).

``netrl train --algo dqn --topology apex --actors 4 --learners 1`` runs it
(:func:`run_apex`); the replay strategy must be ``innet``. The CSV files, the
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
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hostdrv.wire.protocol import MAX_MEMBERS
from rl.parts import EnvPool, torch_generator
from rl.replay import InNetReplay, RecordLayout, ReplaySpec
from rl.run import DistConfig, SplitTimer, WorkerContext, WorkerResult, finish_result, record_solved
from rl.run.launch import Backends, _process_context, _worker_main
from rl.run.launch import _collect as collect
from rl.run.runlog import RunSummary
from rl.run.worker import Reporter
from rl.sync import GradientExchange, StopBoard, default_window, make_sync
from rl.tcp import recv_exact

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
_OP_PUT, _OP_GET, _OP_EPISODE, _OP_ACTOR_DONE, _OP_LEARNER_DONE = 1, 2, 3, 4, 5
_GET_HDR = struct.Struct("!QIBdIQ")  # version, bytes, stop, window sum, window count, env steps


class ParamBoard:
    """The launcher's meeting point of actors and learners (a TCP server thread).

    Learner 0 puts weights (a version and a float32 vector); actors get the
    newest when theirs is older, report every finished episode and their env
    steps, and say when their budget is spent; learners say when they stop.
    When either side is done the board calls ``release`` (the launcher turns
    the switch's sample-to-insert limit off there) so that the other side
    does not wait on the rate limiter for a partner that is gone.

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
        self._released = False
        self._lock = threading.Lock()
        self._listener = socket.create_server((host, 0))
        self.address: tuple[str, int] = self._listener.getsockname()[:2]
        self._conns: list[socket.socket] = []

    @property
    def stop(self) -> bool:
        """Every actor spent its budget, or the learners stopped."""
        return self.learners_done or self.actors_done >= self.actors

    def start(self) -> ParamBoard:
        """Serve in a background thread."""
        threading.Thread(target=self._accept, name="apex-board", daemon=True).start()
        return self

    def close(self) -> None:
        """Stop serving."""
        self._listener.close()
        for c in self._conns:
            try:
                c.close()
            except OSError:
                pass

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            while True:
                op, arg, val = _REQ.unpack(recv_exact(conn, _REQ.size))
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
        except (ConnectionError, OSError):
            return


class BoardClient:
    """An actor's or learner's connection to the :class:`ParamBoard`."""

    def __init__(self, address: tuple[str, int]) -> None:
        self._sock = socket.create_connection(address)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.version = 0
        self.stop = False
        self.window: tuple[float, int] = (0.0, 0)
        self.env_steps = 0

    def _call(self, op: int, arg: int = 0, val: float = 0.0, data: bytes = b"") -> bytes:
        self._sock.sendall(_REQ.pack(op, arg, val) + data)
        version, n, stop, wsum, wcount, steps = _GET_HDR.unpack(
            recv_exact(self._sock, _GET_HDR.size))
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


def _replay(task: ApexTask, ctx: WorkerContext, layout: RecordLayout) -> InNetReplay:
    spec = ctx.replay
    assert spec is not None and spec.url is not None
    return InNetReplay(replace(layout, record_bytes=spec.record_bytes), spec.url, task.member,
                       rate_timeout=task.apex.rate_timeout)


def actor_main(task: ApexTask, ctx: WorkerContext) -> WorkerResult:
    """An actor: act with the newest weights, push, report episodes; nothing else."""
    cfg, apex, i = task.cfg, task.apex, task.index
    rng = np.random.default_rng(cfg.seed + 7919 * (i + 1))
    env = EnvPool(cfg.env_id, 1, cfg.seed + 1000 * (i + 1))
    parts = _Parts(task.algo, cfg, env)
    replay = _replay(task, ctx, parts.layout)
    board = BoardClient(task.board)
    result = WorkerResult(rank=ctx.rank)
    budget = max(1, cfg.total_timesteps // apex.actors)
    end_e = actor_epsilon(getattr(cfg, "end_e", 0.02), i, apex.actors)
    noise = getattr(cfg, "exploration_noise", 0.1)
    pending: list[tuple[Any, ...]] = []
    obs = env.reset()
    unreported = 0
    step = 0
    for step in range(1, budget + 1):
        if step % apex.pull_every == 1 or apex.pull_every == 1:
            vec = board.get()
            if vec is not None:
                _load(parts.policy, vec)
            if board.stop:
                break
        with torch.no_grad():
            if task.algo == "dqn":
                from rl.dqn import linear_schedule

                eps = linear_schedule(cfg.start_e, end_e, cfg.exploration_steps // apex.actors,
                                      step)
                action: Any = (int(rng.integers(parts.n_actions)) if rng.random() < eps
                               else int(parts.q(torch.from_numpy(obs)).argmax(-1)[0]))
                act_arr = np.array([action])
            else:
                scale = noise * (1.0 + i) * (parts.high - parts.low) / 2.0
                if step <= cfg.learning_starts // apex.actors or board.version == 0:
                    a = rng.uniform(parts.low, parts.high)
                else:
                    a = parts.actor(torch.from_numpy(obs))[0].numpy() + rng.normal(0.0, scale)
                action = np.clip(a, parts.low, parts.high).astype(np.float32)
                act_arr = action[None]
        out = env.step(act_arr)
        pending.append((obs[0], act_arr[0], float(out.rewards[0]), out.final_obs[0],
                        bool(out.terminated[0])))
        obs = out.next_obs
        unreported += 1
        for ret, length in out.episodes:
            board.episode(ret, unreported)
            unreported = 0
            ctx.reporter.episode(step, ret, length)
        if len(pending) >= apex.push_every:
            o, a_, r, o2, d = (np.array(x) for x in zip(*pending, strict=True))
            replay.push(o, a_, r, o2, d)  # waits while the learners are behind
            pending.clear()
    board.actor_done(unreported)
    result.env_steps = step
    replay.close()
    board.close()
    env.close()
    return result


def learner_main(task: ApexTask, ctx: WorkerContext) -> WorkerResult:
    """A learner: sample, learn (gradients summed over the learners), update priorities."""
    cfg, apex, j = task.cfg, task.apex, task.index
    env = EnvPool(cfg.env_id, 1, cfg.seed)
    parts = _Parts(task.algo, cfg, env)
    env.close()
    replay = _replay(task, ctx, parts.layout)
    board = BoardClient(task.board)
    if task.algo == "dqn":
        params = list(parts.q.parameters())
        opts: Any = torch.optim.Adam(parts.q.parameters(), lr=cfg.learning_rate)

        def after() -> None:
            if exchange.log.rounds % cfg.target_network_frequency == 0:
                parts.target.load_state_dict(parts.q.state_dict())
    else:
        from rl.ddpg import soft_update

        params = [*parts.actor.parameters(), *parts.critic.parameters()]
        opts = [torch.optim.Adam(parts.actor.parameters(), lr=cfg.actor_lr),
                torch.optim.Adam(parts.critic.parameters(), lr=cfg.critic_lr)]

        def after() -> None:
            soft_update(parts.actor_target, parts.actor, cfg.tau)
            soft_update(parts.critic_target, parts.critic, cfg.tau)

    exchange = GradientExchange(make_sync(ctx.sync, j), params, opts,
                                max_grad_norm=getattr(cfg, "max_grad_norm", None),
                                target_return=ctx.target_return, window=ctx.window,
                                board=ctx.board, after_step=after)
    timer = SplitTimer(lambda: exchange.log.comm_seconds + replay.comm_seconds)
    result = WorkerResult(rank=ctx.rank)
    prioritized = bool(getattr(cfg, "prioritized", False))
    b = cfg.batch_size
    if j == 0:
        board.put(1, _flat(parts.policy))
    updates = 0
    loss_v = 0.0
    beta0 = float(getattr(cfg, "beta", 0.4))
    while True:
        if updates % apex.publish_every == 0:
            if j == 0:
                board.put(updates + 1, _flat(parts.policy))
                if board.stop:
                    # the actors are done: every learner stops after the next round
                    exchange.board.propose(exchange.next_round + 1)
            else:
                board.poll()
        # importance exponent annealed to 1 over the actors' budget (as rl.dqn does)
        beta = beta0 + (1.0 - beta0) * min(1.0, board.env_steps / max(1, cfg.total_timesteps))
        batch = replay.sample(b, prioritized=prioritized, beta=beta)  # waits on the limiter
        td = None
        if task.algo == "dqn":
            from rl.dqn import td_backward

            loss, td = td_backward(parts.q, parts.target, opts, batch, cfg)
        else:
            from rl.ddpg import ddpg_backward

            _, loss = ddpg_backward(parts.actor, parts.critic, parts.actor_target,
                                    parts.critic_target, opts[0], opts[1], batch, cfg)
        stats = board.window if j == 0 else (0.0, 0)
        if not exchange.step(*stats):
            break
        if prioritized and td is not None:
            replay.update_priorities(batch.indices,
                                     (td.abs().numpy() + cfg.prio_eps) ** cfg.alpha)
        updates += 1
        loss_v = float(loss.item())
        if updates % cfg.log_every == 0:
            compute, comm = timer.lap()
            result.iterations += 1
            # env steps are the actors' (their episode reports): 0 here, the total in metrics
            ctx.reporter.iteration(result.iterations, 0, compute, comm,
                                   loss=loss_v, rounds=exchange.log.rounds,
                                   actor_steps=board.env_steps)
        record_solved(result, exchange, timer, board.env_steps)
        if exchange.stopped:
            break
    exchange.close()
    board.learner_done()
    replay.close()
    board.close()
    return finish_result(result, exchange, timer, 0, *parts.policy, final_lap=True)


def apex_main(task: ApexTask, ctx: WorkerContext) -> WorkerResult:
    """Entry point of every actor and learner process."""
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


RATE_COUNTERS = ("CNT_TX_SAMPLE_RESP", "CNT_TX_PUSH_ACK", "CNT_TX_PUSH_NOT_YET",
                 "CNT_TX_SAMPLE_NOT_YET", "RPL_SIZE")
"""What :func:`run_apex` reads, beside :meth:`hostdrv.SwitchControl.rate_limiter`, when the
first side finishes (before the limit is lifted)."""


def rate_report(snap: dict[str, float]) -> dict[str, float]:
    """What the rate limiter did, from a snapshot of :meth:`SwitchControl.rate_limiter` and
    :data:`RATE_COUNTERS`: samples served, records inserted (from the accumulator
    ``diff = inserts * SPI - samples``), the achieved samples per insert, the NOT_YET answers
    and Reverb's bounds around ``SPI * min_size`` that ``diff`` must stay within."""
    if not snap:
        return {}
    diff, spi, err = snap["diff"], snap["samples_per_insert"], snap["error_buffer"]
    samples = snap["CNT_TX_SAMPLE_RESP"]
    inserts = (diff + samples) / spi if spi else float("nan")
    offset = spi * snap["min_size"]
    return {"samples": samples, "inserts": inserts, "diff": diff,
            "samples_per_insert": samples / inserts if inserts else float("nan"),
            "target_samples_per_insert": spi, "error_buffer": err, "min_diff": offset - err,
            "max_diff": offset + err, "push_not_yet": snap["CNT_TX_PUSH_NOT_YET"],
            "sample_not_yet": snap["CNT_TX_SAMPLE_NOT_YET"], "size": snap["RPL_SIZE"]}


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
        Must be ``innet``: the switch's rate limiter keeps the two sides in step.
    target_return, run_dir, progress, timeout :
        As for :func:`rl.run.run_workers`.

    Raises
    ------
    ValueError
        Unknown algorithm, a replay other than ``innet``, fewer than one
        actor or learner, or more member ids than the switch has.
    """
    import hostdrv

    if algo not in ALGOS:
        raise ValueError(f"bad algo={algo!r}: the actor/learner topology runs {ALGOS}")
    if replay.kind != "innet":
        raise ValueError(f"bad replay={replay.kind!r}: the actor/learner topology needs the "
                         "switch's replay memory (innet): its rate limiter keeps actors and "
                         "learners in step")
    if apex.actors < 1 or apex.learners < 1:
        raise ValueError(f"bad topology: {apex.actors} actors, {apex.learners} learners "
                         "(at least one of each)")
    dist = replace(dist, workers=apex.learners)
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
        assert rspec is not None and rspec.url is not None
        base = rspec.member_offset
        if base + n > MAX_MEMBERS:
            raise ValueError(f"bad topology: {apex.learners} learners and {apex.actors} actors "
                             f"need member ids {base} .. {base + n - 1}, the switch has "
                             f"{MAX_MEMBERS} (0 .. {MAX_MEMBERS - 1})"
                             + (f"; ids 0 .. {base - 1} aggregate the learners' gradients"
                                if base else ""))
        min_size, spi, err = rate_limits(algo, cfg, apex)
        ctl = hostdrv.SwitchControl(rspec.url)
        ctl.configure_rate_limiter(min_size=min_size, samples_per_insert=spi,
                                   error_buffer=err)
        url = rspec.url
        snapshot: dict[str, float] = {}

        def release() -> None:
            """One side is done: record the limiter's state, then let the other side run free."""
            c = hostdrv.SwitchControl(url)
            # the other side still runs: a batch served between the reads of diff and of the
            # counters made inserts = (diff + samples) / SPI count it twice (1604 for 1600);
            # read until diff and the counters are from the same moment
            for _ in range(100):
                snapshot.update(c.rate_limiter())
                for name in RATE_COUNTERS:
                    snapshot[name] = c.read(name)
                if c.rate_limiter()["diff"] == snapshot["diff"]:
                    break
            c.configure_rate_limiter(min_size=1, samples_per_insert=0.0, error_buffer=0.0)
            c.close()

        board = ParamBoard(apex.actors, default_window(apex.learners) * 4, release).start()
        mp = _process_context(apex_main)
        q: Any = mp.Queue()
        stop = StopBoard(mp.Value("q", -1))
        roles = [("learner", j) for j in range(apex.learners)] + \
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
                           progress=progress, timeout=timeout, t_wall=t_wall, switch_url=url)
        ctl.close()
        learners = summary.results[:apex.learners]
        iters = max(1, learners[0].iterations)
        summary.mean_compute_s = float(np.mean([r.compute_seconds / iters for r in learners]))
        summary.mean_comm_s = float(np.mean([r.comm_seconds / iters for r in learners]))
        rate = rate_report(snapshot)
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
           "actor_epsilon", "actor_main", "apex_main", "learner_main", "rate_limits", "rate_report", "run_apex"]
