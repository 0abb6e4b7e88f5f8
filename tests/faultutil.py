"""A worker process for the failure tests: all-reduce a sequence of calls, die, rejoin.

Run as ``python -m tests.faultutil URL WORKER OUT [options]``. The worker
all-reduces calls ``--start`` … ``--stop − 1``; call ``c`` reduces
``make_input(seed, worker, c)`` (int32 or fp32) as step id ``c`` (the
:class:`~hostdrv.Aggregator` starts at ``step=--start``). A call that fails
(:class:`~hostdrv.client.errors.AllreduceError` or a timeout) is retried with the
same input and step id (the default: a failed call does not advance
``Aggregator.step``), as a training loop that repeats its step would, up to
``--attempts`` times. With ``--die-at K`` the worker sends only the first
chunk of call ``K`` and exits at once (``os._exit``), like a process killed
in the middle of an all-reduce. Everything the worker saw is pickled to
``OUT`` as it goes (one record per call), so the test reads it even from a
worker that died.
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.netutil import make_input, ordered_sum  # noqa: E402


def run(url: str, worker: int, out: Path, *, start: int, stop: int, size: int, dtype: str,
        seed: int, die_at: int | None, attempts: int, timeout: float, retries: int,
        pace: float, stop_file: Path | None = None) -> None:
    """Body of one worker (see the module docstring)."""
    from hostdrv import Aggregator, AllreduceTimeoutError
    from hostdrv.client.errors import AllreduceError

    agg = Aggregator(url, worker=worker, timeout=timeout, retries=retries,
                     max_backoff=max(timeout, 0.1), step=start)
    records: list[dict[str, Any]] = []
    jitter = np.random.default_rng([seed, worker, os.getpid()])

    def dump() -> None:
        tmp = out.with_suffix(".tmp")
        tmp.write_bytes(pickle.dumps(records))
        tmp.replace(out)

    def stop_at() -> int | None:
        # the test writes the file whole (a rename); an empty read is a file not yet there
        try:
            text = stop_file.read_text() if stop_file is not None else ""
        except FileNotFoundError:
            return None
        return int(text) if text.strip() else None

    for call in range(start, stop):
        limit = stop_at()
        # async: a member that caught up (jumped iterations) made fewer calls for the same
        # iteration, so the members stop by iteration: none is left alone in one the others
        # never reach
        position = agg.last_iteration + 1 if agg.async_mode and records else call
        if limit is not None and position >= limit:
            break
        x = make_input(seed, worker, call, size, dtype)
        if call == die_at:
            agg.send_chunks(np.resize(x, agg.packet_elems), round_=agg.rounds[0], total=x.size,
                            aux=None if agg.async_mode else agg.step)
            dump()
            os._exit(9)
        failures: list[str] = []
        for _ in range(attempts):
            t0 = time.monotonic()
            try:
                y = agg.allreduce(x)
            except (AllreduceTimeoutError, AllreduceError) as e:
                failures.append(f"{type(e).__name__}: {e}")
                continue
            records.append({"call": call, "input": x, "result": y, "rounds": agg.last_rounds.copy(),
                            "aux": agg.last_aux.copy(), "stale": agg.stale_chunks,
                            "failures": failures, "seconds": time.monotonic() - t0,
                            "epochs": agg.epochs, "epoch": agg.epoch, "time": time.time(),
                            "iteration": agg.last_iteration})
            break
        else:
            records.append({"call": call, "failures": failures, "result": None})
            dump()
            raise SystemExit(f"worker {worker}: call {call} failed {attempts} times: {failures}")
        dump()
        time.sleep(pace * jitter.uniform(0.0, 2.0))  # async: whoever is quicker is summed
    agg.close()


def expected_sum(seed: int, call: int, members: list[int], size: int, dtype: str) -> np.ndarray:
    """The exact sum of call ``call`` over ``members`` (int32 wraps; fp32 in the given order)."""
    return ordered_sum([make_input(seed, w, call, size, dtype) for w in members])


def main(argv: list[str] | None = None) -> int:
    """Command line of a worker process."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url")
    ap.add_argument("worker", type=int)
    ap.add_argument("out", type=Path)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--stop", type=int, required=True)
    ap.add_argument("--size", type=int, default=40)
    ap.add_argument("--dtype", default="int32")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--die-at", type=int, default=None)
    ap.add_argument("--attempts", type=int, default=6)
    ap.add_argument("--timeout", type=float, default=0.02)
    ap.add_argument("--retries", type=int, default=6)
    ap.add_argument("--pace", type=float, default=0.0,
                    help="mean seconds between calls (uniformly jittered)")
    ap.add_argument("--stop-file", type=Path, default=None, help="stop before the call number (async: the iteration) this file holds, once it exists")
    a = ap.parse_args(argv)
    run(a.url, a.worker, a.out, start=a.start, stop=a.stop, size=a.size, dtype=a.dtype,
        seed=a.seed, die_at=a.die_at, attempts=a.attempts, timeout=a.timeout,
        retries=a.retries, pace=a.pace, stop_file=a.stop_file)
    return 0


if __name__ == "__main__":
    sys.exit(main())

