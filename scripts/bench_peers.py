#!/usr/bin/env python3
"""Measured against the real peers, in one run: replay against Reverb, all-reduce against gloo and a native parameter server.

The benchmark is a list of sections (:data:`SECTIONS`), each a function that
takes the parsed arguments and returns its tables and its ``key=value``
figures (:class:`SectionResult`); the run prints every table and ends with one
line holding every section's keys. A section is one import and one line there.

Replay against Reverb (:func:`replay_section`)
----------------------------------------------
Ours: a soft switch child process (native engine) reached through
:class:`hostdrv.ReplayClient`. Reverb: ``scripts/peers_reverb.py`` run by the
``.venv-peers`` interpreter (``make bench-peers``): a ``reverb.Server`` in its
own process, gRPC on localhost. Both sides get the same record size R, batch B,
capacity, actor processes (pushing one record per ``--actor-period-us``,
priority 1) and rate limiter (``MinSize(--min-size)``, or
``SampleToInsertRatio`` with ``--spi``: ``configure_rate_limiter`` on ours).
The memory is prefilled with ``--min-size`` records before timing.

Per repeat, in alternating order so that load hits both alike, each side runs
one block of ``--seconds`` per measurement while its actors push:

* latency: rounds of a uniform sample of B (timed), then a prioritized sample
  of B + the update of those B priorities (timed); the actors time each push;
* throughput: prioritized sample of B + update as fast as the learner can.

Reverb is run two ways: ``dataset`` (``reverb.TrajectoryDataset`` with
``max_in_flight_samples_per_worker`` and ``.batch(B).prefetch(K)``, the way its
users run it for speed: the sample is drawn ahead, so its priorities may lag by
the staleness reported) and ``call`` (a new ``Client.sample`` per batch).
Figures are the median over repeats of each block's median, with the spread
(min–max over repeats). Final keys, at R = 128 (the first size):
``replay_access_vs_reverb`` (push + uniform sample, ours / Reverb's best;
lower is better, PDP'22's aim 0.72), ``prioritized_vs_reverb`` (aim 0.71),
``replay_throughput_vs_reverb`` (prioritized samples/s, ours / Reverb's best;
higher is better, aim 1.0). Without ``.venv-peers`` the keys read ``absent``
and our figures are still printed.

All-reduce on one host (:func:`allreduce_section`, ``scripts/peers_allreduce.py``) and on a
network-bound rack (:func:`rack_section`, ``scripts/rack_allreduce.py``: host namespaces
with ``tc``-shaped links, 1 Gbit/s x 4 hosts with ``--quick``; root needed, else its keys
read ``skipped``): ``rack_allreduce_vs_ring`` and ``rack_allreduce_vs_ps`` (4 hosts, 4 MB,
1 Gbit/s, the netrl backend; the baseline's median / ours, higher is better, aims 1.4 and
3.0) and ``model_comm_error`` (the largest relative error of ``scripts/cluster_comm.py``'s
prediction over the rack's rows; aim 0.15).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from peers_reverb import CpuMeter, paced_pushes, timed_block  # noqa: E402 - stdlib only: runs in either venv

PEERS_PYTHON = ROOT / ".venv-peers" / "bin" / "python"
PEERS_INSTALL = "make bench-peers"
REPLAY_KEYS = ("replay_access_vs_reverb", "prioritized_vs_reverb", "replay_throughput_vs_reverb")
SEED = 1
ONE = 1 << 16  # priority 1.0 in Q16.16


@dataclass
class SectionResult:
    """What a section hands back: printed tables and its final ``key=value`` figures."""

    lines: list[str] = field(default_factory=list)
    keys: dict[str, str] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)


Section = Callable[[argparse.Namespace], SectionResult]


# -- ours: soft switch + ReplayClient ----------------------------------------------------------
def _client(url: str, worker: int) -> Any:
    from hostdrv import ReplayClient

    return ReplayClient(url, worker=worker, obs_shape=(1,), retries=10)


def _our_actor(url: str, worker: int, record_bytes: int, period: float, run: Any, quit_: Any,
               out: Any) -> None:
    try:
        c = _client(url, worker)
        rng = np.random.default_rng(worker)
        prio = np.array([ONE], np.uint32)
        paced_pushes(lambda: rng.integers(0, 256, (1, record_bytes), dtype=np.uint8),
                     lambda rec: c.push_records(rec, prio), worker, period, run, quit_, out)
    except Exception as e:  # noqa: BLE001 - reported by the learner
        out.put(("error", worker, f"{type(e).__name__}: {e}"))


class OurSide:
    """A soft switch (native engine) with its replay memory, actor processes and a learner."""

    name = "ours"

    def __init__(self, record_bytes: int, args: argparse.Namespace) -> None:
        import hostdrv

        self.args = args
        self.switch = hostdrv.SoftSwitchProcess(args=["--capacity", str(args.capacity),
                                                      "--record-bytes", str(record_bytes),
                                                      "--engine", "native"])
        url = self.switch.url
        ctl = hostdrv.SwitchControl(url)
        ctl.configure_replay(seed=SEED)
        ctl.configure_rate_limiter(args.min_size, args.spi, args.spi_error)
        self.learner = _client(url, 0)
        rng = np.random.default_rng(SEED)
        for a in range(0, args.min_size, 16):
            k = min(16, args.min_size - a)
            self.learner.push_records(rng.integers(0, 256, (k, record_bytes), dtype=np.uint8),
                                      np.full(k, ONE, np.uint32))
        ctx = multiprocessing.get_context("spawn")
        self.run, self.quit, self.out = ctx.Event(), ctx.Event(), ctx.Queue()
        self.actors = [ctx.Process(target=_our_actor, args=(url, 1 + i, record_bytes,
                                                            args.actor_period_us * 1e-6, self.run,
                                                            self.quit, self.out), daemon=True)
                       for i in range(args.actors)]
        for p in self.actors:
            p.start()
        for _ in self.actors:
            self._get()
        self.rng = np.random.default_rng(SEED + 1)
        self.config = {"engine": "native", "url": url, "record_bytes": record_bytes,
                       "limiter": limiter_name(args)}

    def _get(self) -> Any:
        kind, who, v = self.out.get(timeout=120)
        if kind == "error":
            raise RuntimeError(f"our actor {who}: {v}")
        return v

    def _prioritized_round(self) -> None:
        b = self.learner.sample(self.args.batch, prioritized=True)
        self.learner.update_priorities(b.indices, self.rng.uniform(0.5, 1.5, len(b.indices)))

    def block(self, op: str, seconds: float, reps: int = 1, sampler: str = "") -> dict[str, Any]:
        """One measurement block while the actors push (the same ops as peers_reverb.py)."""
        self.run.set()
        time.sleep(0.02)
        ans: dict[str, Any] = {"op": op}
        meter = CpuMeter({"learner": [os.getpid()], "server": [self.switch.proc.pid],
                          "actors": [p.pid for p in self.actors if p.pid is not None]})
        try:
            ans.update(timed_block(
                op, seconds, reps, self.args.batch,
                lambda: self.learner.sample(self.args.batch, prioritized=False),
                self._prioritized_round))
        finally:
            ans["cpu"] = meter.cores()
            self.run.clear()
        ans["push_us"] = [1e6 * x for _ in self.actors for x in self._get()]
        return ans

    def close(self) -> None:
        self.quit.set()
        for p in self.actors:
            p.join(timeout=10)
        self.learner.close()
        self.switch.stop()


# -- Reverb: scripts/peers_reverb.py in .venv-peers --------------------------------------------
class ReverbSide:
    """``scripts/peers_reverb.py`` as a child process, driven by JSON lines."""

    name = "reverb"

    def __init__(self, record_bytes: int, args: argparse.Namespace) -> None:
        self.log = tempfile.NamedTemporaryFile("w+", prefix="peers_reverb_", suffix=".log",
                                               delete=False)
        cmd = [str(args.peers_python), str(ROOT / "scripts" / "peers_reverb.py"),
               "--record-bytes", str(record_bytes), "--capacity", str(args.capacity),
               "--actors", str(args.actors), "--period-us", str(args.actor_period_us),
               "--batch", str(args.batch), "--prefill", str(args.min_size),
               "--min-size", str(args.min_size), "--spi", str(args.spi),
               "--spi-error", str(args.spi_error), "--in-flight", str(args.in_flight),
               "--workers", str(args.reverb_workers), "--prefetch", str(args.prefetch),
               "--seed", str(SEED)]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, text=True)
        self.config = self._read()["config"]

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                self.log.seek(0)
                raise RuntimeError("peers_reverb.py ended; its log ends with:\n"
                                   + self.log.read()[-3000:])
            if line.startswith("{"):
                return json.loads(line)

    def block(self, op: str, seconds: float, reps: int = 1, sampler: str = "dataset") -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": op, "seconds": seconds, "reps": reps,
                                          "sampler": sampler}) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        try:
            if self.proc.poll() is None and self.proc.stdin is not None:
                self.proc.stdin.write('{"op": "quit"}\n')
                self.proc.stdin.flush()
                self.proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
        self.log.close()
        os.unlink(self.log.name)


def limiter_name(args: argparse.Namespace) -> str:
    """Reverb's name of the limiter both sides run."""
    if args.spi > 0:
        return f"SampleToInsertRatio({args.spi}, {args.min_size}, {args.spi_error})"
    return f"MinSize({args.min_size})"


def peers_present(args: argparse.Namespace) -> bool:
    """Whether the ``.venv-peers`` interpreter exists."""
    return Path(args.peers_python).is_file() and os.access(args.peers_python, os.X_OK)


# -- statistics and tables ---------------------------------------------------------------------
METRICS = (("push_us", "push (us)"), ("uniform_us", "uniform sample of B (us)"),
           ("access_us", "access: push + uniform (us)"),
           ("prioritized_us", "prioritized sample + update (us)"),
           ("samples_per_s", "prioritized samples/s"),
           ("cpu_learner", "  cores: learner (throughput)"),
           ("cpu_server", "  cores: server/switch (throughput)"),
           ("cpu_actors", "  cores: actors (throughput)"))


def _summary(blocks: list[float]) -> tuple[float, float, float]:
    return statistics.median(blocks), min(blocks), max(blocks)


def _fmt(s: tuple[float, float, float] | None) -> str:
    if s is None:
        return "-"
    m, lo, hi = s
    if m < 10:
        return f"{m:9.2f} [{lo:.2f}-{hi:.2f}]"
    return f"{m:9.1f} [{lo:.1f}-{hi:.1f}]"


def measure_size(record_bytes: int, args: argparse.Namespace,
                 with_reverb: bool) -> dict[str, dict[str, tuple[float, float, float]]]:
    """Every block at one record size, sides interleaved; per variant, metric -> summary."""
    sides: list[Any] = []
    per: dict[str, dict[str, list[float]]] = {}
    try:
        sides.append(OurSide(record_bytes, args))
        variants = [(sides[0], "", "ours")]
        if with_reverb:
            sides.append(ReverbSide(record_bytes, args))
            variants += [(sides[1], "dataset", "reverb dataset"), (sides[1], "call", "reverb call")]
        for side, sampler, _name in variants:  # warm-up: dataset graphs, caches, connections
            side.block("latency", 0.3, 1, sampler)
        for rep in range(args.reps):
            order = variants if rep % 2 == 0 else variants[::-1]
            for op in ("latency", "throughput"):
                for side, sampler, name in order:
                    r = side.block(op, args.seconds, 3, sampler)
                    d = per.setdefault(name, {})
                    if op == "latency":
                        push = statistics.median(r["push_us"])
                        uni = statistics.median(r["uniform_us"])
                        d.setdefault("push_us", []).append(push)
                        d.setdefault("uniform_us", []).append(uni)
                        d.setdefault("access_us", []).append(push + uni)
                        d.setdefault("prioritized_us", []).append(
                            statistics.median(r["prioritized_us"]))
                    else:
                        d.setdefault("samples_per_s", []).append(r["samples_per_s"])
                        for k, v in r["cpu"].items():
                            d.setdefault(f"cpu_{k}", []).append(v)
            print(f"  R={record_bytes} repeat {rep + 1}/{args.reps} done", flush=True)
        configs = {s.name: s.config for s in sides}
    finally:
        for s in sides:
            s.close()
    out = {name: {k: _summary(v) for k, v in d.items()} for name, d in per.items()}
    out["_config"] = configs  # type: ignore[assignment]
    return out


def staleness(args: argparse.Namespace) -> int:
    """Samples Reverb's dataset may have drawn ahead of the batch the learner consumes: those
    in flight per worker, the prefetched batches and the batch being assembled."""
    return args.in_flight * args.reverb_workers + (args.prefetch + 1) * args.batch


def replay_section(args: argparse.Namespace) -> SectionResult:
    """Replay against Reverb: push / uniform / prioritized + update latency and throughput."""
    res = SectionResult()
    have = peers_present(args)
    if not have:
        res.lines.append(f"Reverb absent: no {args.peers_python}; install it with "
                         f"`{PEERS_INSTALL}` (Python 3.11 venv .venv-peers, constraints-peers.txt). "
                         "Our side only:")
    table: dict[int, dict[str, Any]] = {}
    for r in args.sizes:
        print(f"[replay] R={r} B={args.batch} actors={args.actors} limiter={limiter_name(args)}",
              flush=True)
        table[r] = measure_size(r, args, have)
    res.data["replay"] = table
    for r, t in table.items():
        names = [n for n in ("ours", "reverb dataset", "reverb call") if n in t]
        res.lines.append(f"\nR = {r} B, batch {args.batch}, {args.actors} actors, "
                         f"{args.reps} repeats x {args.seconds} s: median [min-max over repeats]")
        res.lines.append(f"{'':34s}" + "".join(f"{n:>26s}" for n in names)
                         + ("   ours/Reverb best" if len(names) > 1 else ""))
        for key, label in METRICS:
            row = f"{label:34s}" + "".join(f"{_fmt(t[n].get(key)):>26s}" for n in names)
            if len(names) > 1 and key in t["ours"] and not key.startswith("cpu_"):
                rv = [t[n][key][0] for n in names[1:] if key in t[n]]
                best = max(rv) if key == "samples_per_s" else min(rv)
                row += f"   {t['ours'][key][0] / best:8.3f}"
            res.lines.append(row)
    first = table[args.sizes[0]]
    if have:
        cfg = first["_config"]["reverb"]
        st = staleness(args)
        thr = first["reverb dataset"]["samples_per_s"][0]
        res.lines.append(
            f"\nReverb {cfg['dm_reverb']} (TF {cfg['tensorflow']}), server {cfg['address']} over "
            f"gRPC; tables 'uniform' (Uniform) and 'prioritized' (Prioritized, exponent 1), Fifo "
            f"remover, max_size {args.capacity}, {cfg['limiter']}; a push = append + an item in "
            f"each table + flush. dataset: TrajectoryDataset(max_in_flight_samples_per_worker="
            f"{args.in_flight}, num_workers_per_iterator={args.reverb_workers}).batch({args.batch})"
            f".prefetch({args.prefetch}); call: Client.sample(num_samples={args.batch}) per batch.")
        res.lines.append(
            f"Staleness its prefetch allows: up to {st} samples ({st / args.batch:.0f} batches) "
            f"drawn before the learner consumes them, so their priorities miss up to "
            f"{st / args.batch:.0f} updates (~{1e3 * st / thr:.1f} ms at the measured "
            f"{thr:.0f} samples/s); ours draws on request (staleness 0).")

        def ratio(key: str, higher: bool) -> str:
            rv = [first[n][key][0] for n in ("reverb dataset", "reverb call")]
            best = max(rv) if higher else min(rv)
            return f"{first['ours'][key][0] / best:.3f}"

        res.keys = {"replay_access_vs_reverb": ratio("access_us", False),
                    "prioritized_vs_reverb": ratio("prioritized_us", False),
                    "replay_throughput_vs_reverb": ratio("samples_per_s", True)}
    else:
        res.keys = {k: "absent" for k in REPLAY_KEYS}
    ours = first["ours"]
    res.keys.update(access_us_ours=f"{ours['access_us'][0]:.1f}",
                    prioritized_us_ours=f"{ours['prioritized_us'][0]:.1f}",
                    samples_per_s_ours=f"{ours['samples_per_s'][0]:.0f}")
    return res


def allreduce_section(args: argparse.Namespace) -> SectionResult:
    """All-reduce on this host: in-switch vs a native parameter server vs gloo's ring
    (``scripts/peers_allreduce.py``; one host, CPU-bound: the rack figures are apart)."""
    import peers_allreduce

    out = peers_allreduce.run(args.quick)
    res = SectionResult()
    res.lines.append(peers_allreduce.format_table(out))
    res.data = out
    res.keys = {k: ("n/a" if out[k] is None else f"{out[k]:.3f}")
                for k in ("host_allreduce_vs_ring", "host_allreduce_vs_ps")}
    return res


RACK_KEYS = ("rack_allreduce_vs_ring", "rack_allreduce_vs_ps", "model_comm_error")


def rack_section(args: argparse.Namespace) -> SectionResult:
    """All-reduce on a network-bound rack of network namespaces (``scripts/rack_allreduce.py``:
    netrl backend, bare Aggregator, gloo ring, native PS on its own host; root needed), and
    the cluster model's prediction of every row (``scripts/cluster_comm.py``)."""
    import rack_allreduce

    res = SectionResult()
    why = rack_allreduce.can_build_rack()
    if why:
        res.lines.append(f"rack: skipped: {why}")
        res.keys = {k: "skipped" for k in RACK_KEYS}
        return res
    out = rack_allreduce.run(args.quick, log=lambda m: print(m, flush=True))
    res.data = out
    res.keys = {k: ("n/a" if out[k] is None else f"{out[k]:.3f}")
                for k in ("rack_allreduce_vs_ring", "rack_allreduce_vs_ps")}
    try:
        import cluster_model

        predicted, err = cluster_model.comm_rows_error(out)
    except FileNotFoundError as e:  # no calibration file: the rows stand, the model does not
        res.lines.append(rack_allreduce.format_table(out))
        res.lines.append(f"model: {e}")
        res.keys["model_comm_error"] = "absent"
        return res
    out["model"] = {"max_error": err["max"], "errors": err["rows"]}
    res.lines.append(rack_allreduce.format_table(out, predicted))
    res.lines.append(cluster_model.format_comm_errors(err))
    res.keys["model_comm_error"] = f"{err['max']:.3f}"
    return res


# The sections, in order.
SECTIONS: list[tuple[str, Section]] = [("replay", replay_section),
                                       ("allreduce", allreduce_section),
                                       ("rack", rack_section)]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats and shorter blocks")
    ap.add_argument("--sections", default=",".join(n for n, _ in SECTIONS),
                    help="sections to run")
    ap.add_argument("--reps", type=int, default=None, help="repeats (default 7, --quick 5)")
    ap.add_argument("--seconds", type=float, default=None,
                    help="seconds per block (default 2, --quick 0.75)")
    g = ap.add_argument_group("replay")
    g.add_argument("--sizes", default="128,4032",
                   help="record sizes R (the first sets the keys; ours holds up to 8192: 7104 is an "
                        "Atari frame record)")
    g.add_argument("--actors", type=int, default=4, help="actor processes pushing")
    g.add_argument("--actor-period-us", type=float, default=1000.0, help="each actor's push pace")
    g.add_argument("--batch", type=int, default=32)
    g.add_argument("--capacity", type=int, default=16384)
    g.add_argument("--min-size", type=int, default=1024,
                   help="MinSize (prefilled before timing)")
    g.add_argument("--spi", type=float, default=0.0,
                   help="SampleToInsertRatio samples per insert (0: MinSize only)")
    g.add_argument("--spi-error", type=float, default=0.0)
    g.add_argument("--in-flight", type=int, default=64,
                   help="Reverb max_in_flight_samples_per_worker")
    g.add_argument("--reverb-workers", type=int, default=1,
                   help="Reverb num_workers_per_iterator")
    g.add_argument("--prefetch", type=int, default=4, help="Reverb dataset batches prefetched")
    g.add_argument("--peers-python", default=str(PEERS_PYTHON),
                   help="the .venv-peers interpreter (absent: peer figures are skipped)")
    g.add_argument("--json", default="", help="write every figure here")
    args = ap.parse_args(argv)
    if args.reps is None:
        args.reps = 5 if args.quick else 7
    if args.seconds is None:
        args.seconds = 0.75 if args.quick else 2.0
    args.sizes = [int(s) for s in args.sizes.split(",")]
    args.sections = args.sections.split(",")
    bad = sorted(set(args.sections) - {n for n, _ in SECTIONS})
    if bad:
        ap.error(f"unknown sections {bad}: choose from {[n for n, _ in SECTIONS]}")
    if not 1 <= args.actors <= 7:
        ap.error(f"bad --actors={args.actors}: 1 to 7 (member ids 1..7; the learner is 0)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print(f"bench_peers: {os.cpu_count()} CPUs, sections {args.sections}, reps {args.reps}, "
          f"{args.seconds} s blocks", flush=True)
    keys: dict[str, str] = {}
    data: dict[str, Any] = {}
    for name, section in SECTIONS:
        if name not in args.sections:
            continue
        t0 = time.perf_counter()
        res = section(args)
        print(f"\n== {name} ({time.perf_counter() - t0:.0f} s) ==")
        print("\n".join(res.lines), flush=True)
        keys.update(res.keys)
        data[name] = res.data
    if args.json:
        Path(args.json).write_text(json.dumps({"keys": keys, "data": data}, indent=1,
                                              default=str) + "\n")
    print(" ".join(f"{k}={v}" for k, v in keys.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
