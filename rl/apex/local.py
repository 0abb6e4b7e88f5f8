"""Local replay mode: one process holds the memory, the learner and every actor, and the
replay's rate limiter schedules them (:func:`local_main`)."""

from __future__ import annotations

from dataclasses import replace

from hostdrv.wire.ratelimit import RateLimiterConfig
from rl.apex.board import BoardClient
from rl.apex.config import ApexTask, rate_report
from rl.apex.roles import _Actor, _Learner, _replay
from rl.replay import LocalReplay, RateLimited
from rl.run import WorkerContext, WorkerResult
from rl.run.worker import Reporter

__all__ = ["local_main"]


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
