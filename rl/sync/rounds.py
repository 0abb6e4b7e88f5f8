"""Round semantics in software (``docs/protocol.md`` section 4): the parameter
server's and the reference hub's :class:`RoundTable`, and the in-process
:class:`ReferenceHub` worker threads aggregate through.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np


@dataclass
class _Round:
    acc: np.ndarray | None = None
    bitmap: int = 0
    count: int = 0
    result: np.ndarray | None = None
    fetched: int = 0


class RoundTable:
    """The switch's aggregation semantics (``docs/protocol.md`` section 4) in software.

    Contributions are added in arrival order (numpy float32 or wrapping int32
    adds); a round completes at ``threshold`` contributions; in async mode a
    contribution with ``round - version > staleness`` is dropped as stale, and
    any contribution to a completed round or a duplicate is ignored.

    Parameters
    ----------
    world : int
        Number of workers N.
    mode : str
        ``sync`` or ``async``.
    threshold : int
        H (ignored in sync mode, where it is N).
    staleness : int
        Async staleness bound.
    """

    def __init__(self, world: int, mode: str = "sync", threshold: int = 0,
                 staleness: int = 0) -> None:
        self.world = world
        self.mode = mode
        self.threshold = world if mode == "sync" else threshold
        self.staleness = staleness
        self.rounds: dict[int, _Round] = {}
        self.dropped_stale = 0
        self.dropped_late = 0

    def contribute(self, worker: int, round_: int, version: int,
                   values: np.ndarray) -> np.ndarray | None:
        """Add one contribution; return the round's result if this completed it."""
        if self.mode == "async" and round_ - version > self.staleness:
            self.dropped_stale += 1
            self.rounds.setdefault(round_, _Round())
            return None
        rnd = self.rounds.setdefault(round_, _Round())
        if rnd.result is not None or rnd.bitmap >> worker & 1:
            self.dropped_late += 1
            return None
        if rnd.acc is None:
            rnd.acc = values.copy()
        else:
            rnd.acc += values  # float32 round-to-nearest-even, int32 wraps, like the switch
        rnd.bitmap |= 1 << worker
        rnd.count += 1
        if rnd.count >= self.threshold:
            rnd.result, rnd.acc = rnd.acc, None
            return rnd.result
        return None

    def fetched(self, round_: int) -> None:
        """Note that one worker took the result of ``round_``; forget it after N."""
        rnd = self.rounds[round_]
        rnd.fetched += 1
        if rnd.fetched >= self.world:
            del self.rounds[round_]


class ReferenceHub:
    """In-process aggregation shared by worker threads: the golden reference sum.

    Parameters
    ----------
    world, mode, threshold, staleness
        As for :class:`RoundTable`.
    """

    def __init__(self, world: int, mode: str = "sync", threshold: int = 0,
                 staleness: int = 0) -> None:
        self.table = RoundTable(world, mode, threshold, staleness)
        self._cond = threading.Condition()

    def allreduce(self, worker: int, round_: int, version: int, values: np.ndarray,
                  timeout: float = 120.0) -> np.ndarray:
        """Contribute ``values`` to ``round_`` and wait for the round's result."""
        with self._cond:
            if self.table.contribute(worker, round_, version, values) is not None:
                self._cond.notify_all()
            ok = self._cond.wait_for(lambda: self.table.rounds[round_].result is not None,
                                     timeout=timeout)
            if not ok:
                raise TimeoutError(f"reference round {round_} incomplete after {timeout} s")
            out = self.table.rounds[round_].result
            assert out is not None
            self.table.fetched(round_)
            return out.copy()

