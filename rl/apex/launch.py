"""The launcher: :func:`run_apex` starts the board, the replay memory and every actor and
learner process (:func:`apex_main`), and reports the rate limiter."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np

from hostdrv.wire.protocol import MAX_MEMBERS
from hostdrv.wire.ratelimit import RateLimiterConfig
from rl.apex.board import ParamBoard
from rl.apex.config import ALGOS, RATE_COUNTERS, ApexConfig, ApexTask, rate_limits, rate_report
from rl.apex.local import local_main
from rl.apex.roles import actor_main, learner_main
from rl.replay import REPLAY_KINDS, ReplaySpec
from rl.run import DistConfig, WorkerContext, WorkerResult
from rl.run.launch import Backends, _process_context, _worker_main
from rl.run.launch import _collect as collect
from rl.run.runlog import RunSummary
from rl.run.worker import Reporter
from rl.sync import StopBoard, default_window

__all__ = ["apex_main", "run_apex"]


def apex_main(task: ApexTask, ctx: WorkerContext) -> WorkerResult:
    """Entry point of every actor and learner process (and of a local replay's one)."""
    if task.role == "local":
        return local_main(task, ctx)
    return learner_main(task, ctx) if task.role == "learner" else actor_main(task, ctx)



# -- the launcher -------------------------------------------------------------------------------

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
            # --iterations bounds the learners (their logged iterations); the actors stop
            # when the learners do (the board's learners_done)
            wctx = WorkerContext(rank, apex.learners, spec, rspec, Reporter(q, rank),
                                 target_return, default_window(n), False, stop,
                                 max_iterations=dist.iterations)
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
