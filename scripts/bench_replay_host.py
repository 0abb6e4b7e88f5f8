#!/usr/bin/env python3
"""Replay latency the PDP'22 way: in-network replay vs a TCP replay server vs a local buffer.

One learner (this process) and 1, 2, 4 or 8 actor processes share one replay
memory while the actors push. Three places for that memory:

``innet``
    the switch's replay engine: a soft switch child process
    (``SoftSwitchProcess``, native engine by default) reached through
    :class:`hostdrv.ReplayClient` (``rl.replay.InNetReplay``);
``server``
    a TCP replay server child process (``rl.replay.ReplayServer``), the host
    baseline of the paper;
``local``
    the same calls on an in-process buffer (``rl.replay.LocalReplay``) in one
    thread: no communication and no concurrency, the floor (actors as Python
    threads would only measure the GIL's switch interval).

Per configuration (record size R, actors A, place) the actors push one
transition at a time at a fixed pace (``--actor-period-us``, the environment
step) and time each push; the learner, once ``--prefill`` records are in,
times at least ``--reps`` rounds, for at least ``--seconds``, of

* a uniform SAMPLE of ``--batch`` records (replay access),
* a prioritized SAMPLE of ``--batch`` records followed by the UPDATE of their
  priorities (prioritized sampling's communication: the learner's compute is
  not included),
* with ``--stack K`` (default 4, 0 to skip) a uniform stacked SAMPLE: ``--batch``
  samples of K records each (``innet``: SAMPLE_REQ ``aux`` = K, the sampled record and
  its predecessors in its actor's chain, issue 26; ``server`` and ``local`` have no
  chains: uniform samples of ``--batch`` × K records in all, the same bytes moved).

Reported per configuration: medians in microseconds of push (over every
actor's pushes), uniform sample, and prioritized sample + update. "Replay
access latency" is push + uniform sample. The final line is ``key=value``:
``replay_access_vs_server`` and ``prioritized_vs_server`` are in-network over
server latency ratios at 4 actors and 128-byte records (below 1: in-network is
faster; PDP'22 reports cuts of 11.7-28.1 % and 21.9-29.1 %, i.e. ratios of
0.72-0.88 and 0.71-0.78), plus the same two ratios against ``local``.

``--json`` writes every figure (``docs/data/replay_latency.json`` by
default), ``--plot`` a PNG (``docs/replay_latency.png``); docs/rl.md holds
the table. ``--quick`` runs R = 128 only with fewer repetitions.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rl.replay import (  # noqa: E402
    LocalReplay,
    RecordLayout,
    Replay,
    ReplayServer,
    ReplaySpec,
    ServerReplay,
    make_replay,
)

KINDS = ("innet", "server", "local")
ACTORS = (1, 2, 4, 8)
SIZES = (64, 128, 256, 512, 1024, 2048, 4032, 7104)
"""Record sizes R: up to an Atari frame record (7104 bytes, issue 26)."""
CAPACITY = 16384
SEED = 1
# member ids: the learner is 0, actors 1..7 (the switch's member table has 8 entries);
# an eighth actor shares id 7 with the seventh: member 7's UDP port is then set to 0 (any
# port of its address, docs/registers.md), and the switch answers a PUSH to its sender
LEARNER_ID = 0


def layout_for(record_bytes: int) -> RecordLayout:
    """A transition layout that fills a ``record_bytes`` record: float32 observations of
    the largest length that fits beside an int64 action, a float32 reward and a done byte."""
    k = (record_bytes - 13) // 8
    return RecordLayout(obs_shape=(k,), record_bytes=record_bytes)


def _transition(layout: RecordLayout, rng: np.random.Generator, k: int = 1) -> tuple[Any, ...]:
    obs = rng.normal(size=(k, *layout.obs_shape)).astype(np.float32)
    return (obs, rng.integers(0, 4, k), rng.normal(size=k).astype(np.float32), obs,
            np.zeros(k, bool))


def _open(kind: str, layout: RecordLayout, where: Any, member: int) -> Replay:
    if kind == "innet":
        return make_replay(ReplaySpec(kind="innet", url=where, capacity=CAPACITY), member - 0,
                           layout)
    return ServerReplay(layout, where)


def _actor(kind: str, where: Any, record_bytes: int, member: int, period: float,
           start: Any, stop: Any, out: Any) -> None:
    """An actor process: push one transition per ``period`` until ``stop``; report latencies."""
    try:
        _act(kind, where, record_bytes, member, period, start, stop, out)
    except Exception as e:  # noqa: BLE001 - the learner reports it
        out.put((member, None, f"{type(e).__name__}: {e}"))


def _act(kind: str, where: Any, record_bytes: int, member: int, period: float,
         start: Any, stop: Any, out: Any) -> None:
    layout = layout_for(record_bytes)
    replay = _open(kind, layout, where, member)
    rng = np.random.default_rng(member)
    lat: list[float] = []
    out.put((member, "ready", ""))
    start.wait()
    nxt = time.perf_counter()
    while not stop.is_set():
        t = _transition(layout, rng)
        t0 = time.perf_counter()
        replay.push(*t, priorities=np.ones(1))
        lat.append(time.perf_counter() - t0)
        nxt += period
        delay = nxt - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        else:
            nxt = time.perf_counter()
    replay.close()
    out.put((member, lat, ""))


def _serve(q: Any, record_bytes: int) -> None:
    server = ReplayServer(capacity=CAPACITY, record_bytes=record_bytes, seed=SEED).start()
    q.put(server.address)
    while True:
        time.sleep(3600)


def _check(msg: tuple[int, Any, str]) -> list[float]:
    """An actor's message: its latencies (or "ready"); its error raised here."""
    member, lat, err = msg
    if err:
        raise RuntimeError(f"actor {member} failed: {err}")
    return lat if isinstance(lat, list) else []


@dataclass
class Figures:
    """Medians (µs) of one configuration."""

    push_us: float
    uniform_us: float
    prioritized_us: float
    pushes: int
    samples: int
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def access_us(self) -> float:
        """Replay access latency: one push and one uniform sample."""
        return self.push_us + self.uniform_us


def _stacked(replay: Replay, batch: int, stack: int) -> None:
    """One uniform stacked sample: ``batch`` samples of ``stack`` records through the switch's
    chains (innet), or ``batch * stack`` records (a host memory has no chains)."""
    client = getattr(replay, "_client", None)
    if client is not None:
        client.sample(batch, prioritized=False, stack=stack)
    else:  # requests of at most 64 records, as the switch's client splits them
        left = batch * stack
        while left:
            n = min(64, 1 << (left.bit_length() - 1))
            replay.sample(n, prioritized=False)
            left -= n


def _learner_rounds(replay: Replay, batch: int, reps: int, seconds: float,
                    stack: int = 0) -> tuple[list[float], list[float], list[float]]:
    """At least ``reps`` rounds and at least ``seconds`` of them."""
    uni: list[float] = []
    pri: list[float] = []
    stk: list[float] = []
    end = time.perf_counter() + seconds
    while len(uni) < reps or time.perf_counter() < end:
        t0 = time.perf_counter()
        replay.sample(batch, prioritized=False)
        t1 = time.perf_counter()
        b = replay.sample(batch, prioritized=True)
        replay.update_priorities(b.indices, np.abs(b.rewards) + 0.5)
        t2 = time.perf_counter()
        uni.append(t1 - t0)
        pri.append(t2 - t1)
        if stack:
            _stacked(replay, batch, stack)
            stk.append(time.perf_counter() - t2)
    return uni, pri, stk


def _prefill(replay: Replay, layout: RecordLayout, n: int) -> None:
    rng = np.random.default_rng(SEED)
    for a in range(0, n, 16):
        t = _transition(layout, rng, min(16, n - a))
        replay.push(*t, priorities=np.ones(len(t[2])))


def run_remote(kind: str, record_bytes: int, actors: int, args: argparse.Namespace,
               where: Any) -> Figures:
    """One configuration with actor processes and a remote memory at ``where``."""
    layout = layout_for(record_bytes)
    learner = _open(kind, layout, where, LEARNER_ID)
    _prefill(learner, layout, args.prefill)
    ctx = multiprocessing.get_context("spawn")
    start, stop, out = ctx.Event(), ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_actor, args=(kind, where, record_bytes, min(1 + i, 7),
                                              args.actor_period_us * 1e-6, start, stop, out),
                         daemon=True) for i in range(actors)]
    for p in procs:
        p.start()
    for _ in procs:  # every actor connected (and registered) before the clock starts
        _check(out.get(timeout=120))
    if kind == "innet" and actors > 7:
        # the seventh and eighth actors share member 7: accept its PUSHes from any UDP port
        import hostdrv

        hostdrv.SwitchControl(where).write("MEMBER_UDP_7", 0)
    start.set()
    time.sleep(0.05)
    uni, pri, stk = _learner_rounds(learner, args.batch, args.reps, args.seconds, args.stack)
    stop.set()
    lat: list[float] = []
    for _ in procs:
        lat += _check(out.get(timeout=60))
    for p in procs:
        p.join(timeout=10)
    learner.close()
    return Figures(push_us=1e6 * float(np.median(lat)), uniform_us=1e6 * float(np.median(uni)),
                   prioritized_us=1e6 * float(np.median(pri)), pushes=len(lat),
                   samples=len(uni), extra=_stack_figure(stk))


def _stack_figure(stk: list[float]) -> dict[str, float]:
    return {"stacked_us": 1e6 * float(np.median(stk))} if stk else {}


def run_local(record_bytes: int, actors: int, args: argparse.Namespace) -> Figures:
    """The same calls on an in-process buffer in one thread: no communication and no
    concurrency (Python threads would measure the GIL's switch interval), the floor any
    shared memory is set against. ``actors`` does not change the work."""
    layout = layout_for(record_bytes)
    store = LocalReplay(layout, CAPACITY, SEED)
    _prefill(store, layout, args.prefill)
    rng = np.random.default_rng(1)
    lat: list[float] = []
    uni: list[float] = []
    pri: list[float] = []
    stk: list[float] = []
    end = time.perf_counter() + args.seconds
    while len(uni) < args.reps or time.perf_counter() < end:
        t = _transition(layout, rng)
        t0 = time.perf_counter()
        store.push(*t, priorities=np.ones(1))
        lat.append(time.perf_counter() - t0)
        u, p, s = _learner_rounds(store, args.batch, 1, 0.0, args.stack)
        uni += u
        pri += p
        stk += s
    return Figures(push_us=1e6 * float(np.median(lat)), uniform_us=1e6 * float(np.median(uni)),
                   prioritized_us=1e6 * float(np.median(pri)), pushes=len(lat),
                   samples=len(uni), extra=_stack_figure(stk))


def bench_size(record_bytes: int, args: argparse.Namespace) -> dict[str, dict[int, Figures]]:
    """Every place and actor count at one record size (one switch and one server each)."""
    import hostdrv

    res: dict[str, dict[int, Figures]] = {k: {} for k in args.kinds}
    switch = server = None
    where: dict[str, Any] = {}
    ctx = multiprocessing.get_context("spawn")
    try:
        if "innet" in args.kinds:
            switch = hostdrv.SoftSwitchProcess(args=["--capacity", str(CAPACITY),
                                                     "--record-bytes", str(record_bytes),
                                                     "--engine", args.engine])
            where["innet"] = switch.url
        if "server" in args.kinds:
            q = ctx.Queue()
            server = ctx.Process(target=_serve, args=(q, record_bytes), daemon=True)
            server.start()
            where["server"] = tuple(q.get(timeout=60))
        for actors in args.actors:
            for kind in args.kinds:
                if kind == "innet":
                    hostdrv.SwitchControl(where["innet"]).configure_replay(seed=SEED)
                fig = (run_local(record_bytes, actors, args) if kind == "local"
                       else run_remote(kind, record_bytes, actors, args, where[kind]))
                res[kind][actors] = fig
                stacked = (f"  stacked k={args.stack} {fig.extra['stacked_us']:8.1f} us"
                           if "stacked_us" in fig.extra else "")
                print(f"R={record_bytes:5d} actors={actors} {kind:6s} push {fig.push_us:8.1f} us"
                      f"  uniform sample {fig.uniform_us:8.1f} us  prioritized sample+update "
                      f"{fig.prioritized_us:8.1f} us{stacked}  ({fig.pushes} pushes, "
                      f"{fig.samples} rounds)", flush=True)
    finally:
        if server is not None:
            server.terminate()
        if switch is not None:
            switch.stop()
    return res


def plot(table: dict[int, dict[str, dict[int, Figures]]], path: Path) -> None:
    """Access and prioritized latency against record size (4 actors) and against actors
    (128-byte records)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    sizes = sorted(table)
    for kind in KINDS:
        if all(4 in table[r].get(kind, {}) for r in sizes):
            axes[0].plot(sizes, [table[r][kind][4].access_us for r in sizes], "o-",
                         label=f"{kind} access")
            axes[0].plot(sizes, [table[r][kind][4].prioritized_us for r in sizes], "s--",
                         label=f"{kind} prioritized")
        if 128 in table and kind in table[128]:
            acts = sorted(table[128][kind])
            axes[1].plot(acts, [table[128][kind][a].access_us for a in acts], "o-",
                         label=f"{kind} access")
            axes[1].plot(acts, [table[128][kind][a].prioritized_us for a in acts], "s--",
                         label=f"{kind} prioritized")
    axes[0].set(xscale="log", yscale="log", xlabel="record bytes (4 actors)",
                ylabel="median latency (us)")
    axes[1].set(yscale="log", xlabel="actors (128-byte records)", ylabel="median latency (us)")
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Replay access (push + uniform sample) and prioritized sample + update")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="record sizes R")
    ap.add_argument("--actors", default=",".join(map(str, ACTORS)), help="actor counts")
    ap.add_argument("--kinds", default=",".join(KINDS), help="places of the memory")
    ap.add_argument("--reps", type=int, default=200, help="learner rounds per configuration")
    ap.add_argument("--seconds", type=float, default=1.0,
                    help="the learner's rounds last at least this long")
    ap.add_argument("--batch", type=int, default=32, help="sample batch")
    ap.add_argument("--stack", type=int, default=4,
                    help="records per stacked sample (innet: SAMPLE_REQ aux; 0: skip)")
    ap.add_argument("--prefill", type=int, default=1024, help="records pushed before timing")
    ap.add_argument("--actor-period-us", type=float, default=1000.0,
                    help="each actor pushes one transition per period")
    ap.add_argument("--engine", choices=("native", "model"), default="native",
                    help="soft switch engine")
    ap.add_argument("--quick", action="store_true", help="R=128 only, 60 rounds")
    ap.add_argument("--json", default=str(ROOT / "docs" / "data" / "replay_latency.json"),
                    help="write every figure here ('' to skip)")
    ap.add_argument("--plot", default=str(ROOT / "docs" / "replay_latency.png"),
                    help="write the plot here ('' to skip)")
    args = ap.parse_args(argv)
    if args.quick:
        args.sizes, args.reps = "128", 60
    sizes = [int(s) for s in args.sizes.split(",")]
    args.actors = [int(a) for a in args.actors.split(",")]
    args.kinds = args.kinds.split(",")
    if os.environ.get("NRL_NATIVE_CLIENT") is None and args.engine == "model":
        os.environ["NRL_NATIVE_CLIENT"] = "0"
    print(f"engine={args.engine} batch={args.batch} reps={args.reps} "
          f"actor period {args.actor_period_us:.0f} us, {os.cpu_count()} CPUs", flush=True)
    table = {r: bench_size(r, args) for r in sizes}
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({
            "engine": args.engine, "batch": args.batch, "reps": args.reps,
            "actor_period_us": args.actor_period_us, "cpus": os.cpu_count(),
            "stack": args.stack,
            "figures": {str(r): {k: {str(a): {**vars(f), "access_us": f.access_us}
                                     for a, f in v.items()} for k, v in t.items()}
                        for r, t in table.items()}}, indent=1) + "\n")
    if args.plot:
        plot(table, Path(args.plot))
    figures: dict[str, float] = {}
    ref = table.get(128, table[sizes[0]])
    a = 4 if 4 in args.actors else args.actors[0]
    for base in ("server", "local"):
        if "innet" in ref and base in ref:
            figures[f"replay_access_vs_{base}"] = ref["innet"][a].access_us / ref[base][a].access_us
            figures[f"prioritized_vs_{base}"] = (ref["innet"][a].prioritized_us
                                                 / ref[base][a].prioritized_us)
    for kind in ref:
        figures[f"access_us_{kind}"] = ref[kind][a].access_us
        figures[f"prioritized_us_{kind}"] = ref[kind][a].prioritized_us
    order = ["replay_access_vs_server", "prioritized_vs_server"]
    keys = order + [k for k in figures if k not in order]
    print(" ".join(f"{k}={figures[k]:.3f}" for k in keys if k in figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
