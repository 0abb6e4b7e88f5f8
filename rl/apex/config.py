"""The actor/learner topology's options (:class:`ApexConfig`), what each process is
handed (:class:`ApexTask`) and the rate limits of a run and their report."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hostdrv.wire.ratelimit import RateLimiterState

__all__ = ["ALGOS", "RATE_COUNTERS", "ApexConfig", "ApexTask", "rate_limits", "rate_report"]


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
