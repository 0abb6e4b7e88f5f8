#!/usr/bin/env python3
"""The Reverb side of ``scripts/bench_peers.py``: runs in ``.venv-peers`` (``make bench-peers``).

A ``reverb.Server`` in a process of its own (gRPC on localhost, as deployed) holds
two tables over the same items: ``uniform`` (``Uniform`` sampler) and
``prioritized`` (``Prioritized`` sampler, priority exponent 1: the priorities
sent are already ``p^alpha``, as ours), both ``Fifo`` removers, ``max_size`` C
and the rate limiter given (``MinSize(min_size)``, or
``SampleToInsertRatio(spi, min_size, error)`` when ``--spi`` is set). Actor
processes push one record of R bytes at a time at a fixed pace (one
``TrajectoryWriter.append`` + an item in each table + ``flush``, so the push is
timed until the server holds it, as our PUSH until its PUSH_ACK). This
process is the learner.

It reads JSON commands on stdin, one a line, and answers each with one JSON
line on stdout:

``{"op": "latency", "sampler": "dataset"|"call", "seconds": s, "reps": n}``
    actors push while the learner times rounds of a uniform sample of B and
    of a prioritized sample of B + ``mutate_priorities`` of those B; answers
    the lists ``push_us``, ``uniform_us``, ``prioritized_us``.
``{"op": "throughput", "sampler": ..., "seconds": s}``
    actors push while the learner runs prioritized sample + update as fast as
    it can; answers ``samples_per_s``.
``{"op": "quit"}``

Every answer also holds ``cpu``: the cores (CPU seconds / wall seconds) the learner
(this process, all threads), the server and the actors used during the block.

``sampler`` ``dataset`` is how Reverb's users run it for speed:
``reverb.TrajectoryDataset.from_table_signature`` with
``max_in_flight_samples_per_worker`` and ``num_workers_per_iterator``,
``.batch(B).prefetch(K)``, one iterator kept across rounds; ``call`` is a new
``Client.sample(table, num_samples=B)`` per batch. The first line printed is
``{"ready": true, "config": {...}}`` once the memory holds ``--prefill``
records and every actor is connected.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

UNIFORM, PRIORITIZED = "uniform", "prioritized"
_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (all its threads), from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


class CpuMeter:
    """CPU used by named groups of processes over a block, in cores (CPU s / wall s)."""

    def __init__(self, groups: dict[str, list[int]]) -> None:
        self.groups = groups
        self.t0 = time.perf_counter()
        self.c0 = {k: sum(map(cpu_seconds, v)) for k, v in groups.items()}

    def cores(self) -> dict[str, float]:
        dt = time.perf_counter() - self.t0
        return {k: (sum(map(cpu_seconds, v)) - self.c0[k]) / dt for k, v in self.groups.items()}


def _tables(args: argparse.Namespace) -> list[Any]:
    import reverb
    import tensorflow as tf

    def limiter() -> Any:
        if args.spi > 0:
            return reverb.rate_limiters.SampleToInsertRatio(
                samples_per_insert=args.spi, min_size_to_sample=args.min_size,
                error_buffer=args.spi_error)
        return reverb.rate_limiters.MinSize(args.min_size)

    sig = {"rec": tf.TensorSpec([args.record_bytes], tf.uint8)}
    return [reverb.Table(name=UNIFORM, sampler=reverb.selectors.Uniform(),
                         remover=reverb.selectors.Fifo(), max_size=args.capacity,
                         rate_limiter=limiter(), signature=sig),
            reverb.Table(name=PRIORITIZED,
                         sampler=reverb.selectors.Prioritized(priority_exponent=1.0),
                         remover=reverb.selectors.Fifo(), max_size=args.capacity,
                         rate_limiter=limiter(), signature=sig)]


def _serve(args: argparse.Namespace, q: Any) -> None:
    import reverb

    server = reverb.Server(tables=_tables(args))
    q.put(server.port)
    server.wait()


class Pusher:
    """One record per :meth:`push`: append, an item in both tables, flush."""

    def __init__(self, address: str, record_bytes: int, seed: int) -> None:
        import numpy as np
        import reverb

        self.client = reverb.Client(address)
        self.writer = self.client.trajectory_writer(num_keep_alive_refs=1)
        self.rng = np.random.default_rng(seed)
        self.record_bytes = record_bytes

    def record(self) -> Any:
        """A record of random bytes."""
        return self.rng.integers(0, 256, self.record_bytes, dtype="uint8")

    def push(self, rec: Any) -> None:
        w = self.writer
        w.append({"rec": rec})
        step = {"rec": w.history["rec"][-1]}
        w.create_item(UNIFORM, 1.0, step)
        w.create_item(PRIORITIZED, 1.0, step)
        w.flush()


def paced_pushes(make: Callable[[], Any], push: Callable[[Any], Any], who: int, period: float,
                 run: Any, quit_: Any, out: Any) -> None:
    """An actor's loop (both sides): while ``run`` is set, push one record per ``period``
    (``make`` untimed, ``push`` timed); at the end of each run put its push latencies."""
    out.put(("ready", who, ""))
    while not quit_.is_set():
        if not run.wait(0.05):
            continue
        lat: list[float] = []
        nxt = time.perf_counter()
        while run.is_set():
            rec = make()
            t0 = time.perf_counter()
            push(rec)
            lat.append(time.perf_counter() - t0)
            nxt += period
            d = nxt - time.perf_counter()
            if d > 0:
                time.sleep(d)
            else:
                nxt = time.perf_counter()
        out.put(("lat", who, lat))


def timed_block(op: str, seconds: float, reps: int, batch: int, uniform: Callable[[], Any],
                prioritized: Callable[[], Any]) -> dict[str, Any]:
    """A learner's block (both sides). ``latency``: at least ``reps`` rounds and ``seconds``
    of a uniform sample (timed), then a prioritized sample + update (timed), in µs;
    ``throughput``: prioritized rounds for ``seconds``, in samples/s."""
    if op == "latency":
        uni: list[float] = []
        pri: list[float] = []
        end = time.perf_counter() + seconds
        while len(uni) < reps or time.perf_counter() < end:
            t0 = time.perf_counter()
            uniform()
            t1 = time.perf_counter()
            prioritized()
            t2 = time.perf_counter()
            uni.append(1e6 * (t1 - t0))
            pri.append(1e6 * (t2 - t1))
        return {"uniform_us": uni, "prioritized_us": pri}
    if op == "throughput":
        n = 0
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            prioritized()
            n += batch
        return {"samples_per_s": n / (time.perf_counter() - t0)}
    raise ValueError(f"bad op={op!r}: latency, throughput or quit")


def _actor(address: str, record_bytes: int, seed: int, period: float, run: Any, quit_: Any,
           out: Any) -> None:
    try:
        p = Pusher(address, record_bytes, seed)
        paced_pushes(p.record, p.push, seed, period, run, quit_, out)
    except Exception as e:  # noqa: BLE001 - reported by the learner
        out.put(("error", seed, f"{type(e).__name__}: {e}"))


class Learner:
    """Samples and priority updates, by dataset (kept across rounds) or per call."""

    def __init__(self, address: str, args: argparse.Namespace) -> None:
        import numpy as np
        import reverb

        self.address = address
        self.args = args
        self.client = reverb.Client(address)
        self.rng = np.random.default_rng(args.seed)
        self._iters: dict[str, Any] = {}

    def _iter(self, table: str) -> Any:
        if table not in self._iters:
            import reverb

            a = self.args
            ds = reverb.TrajectoryDataset.from_table_signature(
                server_address=self.address, table=table,
                max_in_flight_samples_per_worker=a.in_flight,
                num_workers_per_iterator=a.workers)
            ds = ds.batch(a.batch, drop_remainder=True).prefetch(a.prefetch)
            self._iters[table] = iter(ds)
        return self._iters[table]

    def sample(self, table: str, sampler: str) -> list[int]:
        """One batch of B; return the keys (records are materialized, as a learner uses them)."""
        if sampler == "dataset":
            s = next(self._iter(table))
            s.data["rec"].numpy()
            return [int(k) for k in s.info.key.numpy()]
        keys = []
        for sample in self.client.sample(table, num_samples=self.args.batch):
            keys.append(int(sample[0].info.key))
        return keys

    def update(self, keys: list[int]) -> None:
        prios = self.rng.uniform(0.5, 1.5, len(keys))
        self.client.mutate_priorities(PRIORITIZED, updates=dict(zip(keys, prios.tolist(), strict=True)))


def _prefill(address: str, args: argparse.Namespace) -> None:
    p = Pusher(address, args.record_bytes, args.seed)
    for _ in range(args.prefill):
        p.push(p.record())
    p.writer.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--record-bytes", type=int, default=128)
    ap.add_argument("--capacity", type=int, default=16384)
    ap.add_argument("--actors", type=int, default=4)
    ap.add_argument("--period-us", type=float, default=1000.0, help="each actor's push pace")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--prefill", type=int, default=1024)
    ap.add_argument("--min-size", type=int, default=1024, help="MinSize / min_size_to_sample")
    ap.add_argument("--spi", type=float, default=0.0, help="SampleToInsertRatio (0: MinSize only)")
    ap.add_argument("--spi-error", type=float, default=0.0)
    ap.add_argument("--in-flight", type=int, default=64, help="max_in_flight_samples_per_worker")
    ap.add_argument("--workers", type=int, default=1, help="num_workers_per_iterator")
    ap.add_argument("--prefetch", type=int, default=4, help="batches prefetched")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)

    import importlib.metadata

    import tensorflow as tf

    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    server = ctx.Process(target=_serve, args=(args, q), daemon=True)
    server.start()
    address = f"localhost:{q.get(timeout=300)}"
    _prefill(address, args)
    run, quit_, out = ctx.Event(), ctx.Event(), ctx.Queue()
    actors = [ctx.Process(target=_actor, args=(address, args.record_bytes, 100 + i,
                                               args.period_us * 1e-6, run, quit_, out),
                          daemon=True) for i in range(args.actors)]
    for a in actors:
        a.start()
    for _ in actors:
        kind, who, err = out.get(timeout=300)
        if kind == "error":
            raise RuntimeError(f"actor {who}: {err}")
    learner = Learner(address, args)
    cfg = {**vars(args), "dm_reverb": importlib.metadata.version("dm-reverb"),
           "tensorflow": tf.__version__, "address": address,
           "limiter": (f"SampleToInsertRatio({args.spi}, {args.min_size}, {args.spi_error})"
                       if args.spi > 0 else f"MinSize({args.min_size})")}
    print(json.dumps({"ready": True, "config": cfg}), flush=True)

    def collect() -> list[float]:
        lat: list[float] = []
        for _ in actors:
            kind, who, v = out.get(timeout=120)
            if kind == "error":
                raise RuntimeError(f"actor {who}: {v}")
            lat += v
        return lat

    for line in sys.stdin:
        cmd = json.loads(line)
        op = cmd["op"]
        if op == "quit":
            break
        sampler = cmd.get("sampler", "dataset")
        seconds = float(cmd.get("seconds", 1.0))
        run.set()
        time.sleep(0.02)
        ans: dict[str, Any] = {"op": op, "sampler": sampler}
        meter = CpuMeter({"learner": [os.getpid()], "server": [server.pid],
                          "actors": [a.pid for a in actors]})
        try:
            ans.update(timed_block(
                op, seconds, int(cmd.get("reps", 1)), args.batch,
                lambda s=sampler: learner.sample(UNIFORM, s),
                lambda s=sampler: learner.update(learner.sample(PRIORITIZED, s))))
        finally:
            ans["cpu"] = meter.cores()
            run.clear()
        ans["push_us"] = [1e6 * x for x in collect()]
        print(json.dumps(ans), flush=True)
    quit_.set()
    for a in actors:
        a.join(timeout=10)
    server.terminate()
    return 0


if __name__ == "__main__":
    sys.exit(main())
