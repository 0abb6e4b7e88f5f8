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

The package: :mod:`.config` (options, rate limits), :mod:`.board` (the parameter
board), :mod:`.roles` (actor and learner), :mod:`.local` (local replay mode) and
:mod:`.launch` (:func:`run_apex`).
"""

from __future__ import annotations

from rl.apex.board import BoardClient, ParamBoard
from rl.apex.config import ALGOS, RATE_COUNTERS, ApexConfig, ApexTask, rate_limits, rate_report
from rl.apex.launch import apex_main, run_apex
from rl.apex.local import local_main
from rl.apex.roles import actor_epsilon, actor_main, learner_main

__all__ = ["ALGOS", "ApexConfig", "ApexTask", "BoardClient", "ParamBoard", "RATE_COUNTERS",
           "actor_epsilon", "actor_main", "apex_main", "learner_main", "local_main", "rate_limits",
           "rate_report", "run_apex"]
