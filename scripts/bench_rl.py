"""RL benchmarks: time to solve and the compute/communication split per algorithm and strategy.

Measures, at N = 4 worker processes on this machine:

* for each algorithm (DQN, A2C, PPO, DDPG) and gradient-sync strategy
  (``inswitch`` through a soft switch, ``ps`` parameter server over TCP,
  ``allreduce`` gloo), same seed, sync mode: seconds of training until the
  mean return over the last 20 episodes reaches the target (CartPole 195,
  Pendulum -400), and the mean per-iteration compute and communication time
  (an *iteration* is a PPO rollout plus its update epochs, one A2C update,
  25 DQN updates or 100 DDPG updates). DQN and DDPG use the ``local`` replay
  here so that only the gradient sync differs;
* the aggregation round trip of a 9216-element fp32 vector (about the size
  of the CartPole networks) for each strategy, with no computation between
  rounds;
* the replay round trip, push of 32 records plus a prioritized sample of 32,
  for ``innet`` (soft switch in a child process), ``server`` (TCP replay
  server in a child process) and ``local``.

Prints a table as it goes, then ONE last line of ``key=value`` figures:
``<algo>_<sync>_solve_s``, ``<algo>_<sync>_compute_ms``,
``<algo>_<sync>_comm_ms``, ``agg_rtt_ms_<sync>``, ``replay_rtt_ms_<kind>``
(``nan`` when a run did not solve within its budget).

Usage: ``python scripts/bench_rl.py [--quick | --smoke] [--algos ppo,a2c] [--syncs inswitch,ps]
[--packet-elems 352] [--engine model]``. ``--quick`` runs PPO and A2C only and fewer
replay/aggregation repetitions; ``--smoke`` (CI) PPO through the soft switch only, for
4096 environment steps (or one iteration). ``--packet-elems`` (old name ``--elems``) is the switch
packet size P, elements per packet, of the
``inswitch`` runs (default: the soft switch's largest, the 64 KB jumbo chunk;
352 is the hardware's); ``--engine model`` serves the soft switch with the
Python golden model and keeps the clients' per-packet loop in Python (the
figures before the native data plane).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import multiprocessing
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from rl import cli  # noqa: E402
from rl.replay import (  # noqa: E402
    LocalReplay,
    RecordLayout,
    Replay,
    ReplayServer,
    ReplaySpec,
    ServerReplay,
    make_replay,
)
from rl.run import DistConfig, WorkerContext, WorkerResult, run_workers  # noqa: E402
from rl.sync import make_sync  # noqa: E402

ALGOS = ("ppo", "a2c", "dqn", "ddpg")
SYNCS = ("inswitch", "ps", "allreduce")
BENCH_TARGETS = {"CartPole-v1": 195.0, "Pendulum-v1": -400.0}
"""The bars this benchmark times (CartPole 195, as its published figures were measured;
``netrl train`` now defaults to CartPole-v1's spec threshold, 475: ``rl.targets.default_target``)."""


def bench_training(algos: list[str], syncs: list[str], workers: int, seed: int,
                   runs_dir: Path | None, packet_elems: int | None = None,
                   total_steps: int | None = None) -> dict[str, float]:
    """Train every algorithm with every strategy; time to solve and the iteration split
    (``total_steps``: the budget of environment steps instead of each algorithm's own)."""
    out: dict[str, float] = {}
    for algo in algos:
        mod = cli.algo_module(algo)
        for sync in syncs:
            cfg = mod.Config(seed=seed)
            if total_steps:
                cfg = dataclasses.replace(cfg, total_timesteps=total_steps)
            target = BENCH_TARGETS[cfg.env_id]
            replay = ReplaySpec(kind="local", seed=seed) if algo in ("dqn", "ddpg") else None
            s = run_workers(mod.train_worker, cfg,
                            DistConfig(workers=workers, sync=sync, packet_elems=packet_elems),
                            algo=algo, env_id=cfg.env_id, total_steps=cfg.total_timesteps,
                            target_return=target, replay=replay, progress=False,
                            run_dir=None if runs_dir is None else runs_dir / f"{algo}-{sync}",
                            timeout=1800)
            solve = s.solve_seconds if s.solved and s.solve_seconds is not None else math.nan
            out[f"{algo}_{sync}_solve_s"] = solve
            out[f"{algo}_{sync}_compute_ms"] = 1e3 * s.mean_compute_s
            out[f"{algo}_{sync}_comm_ms"] = 1e3 * s.mean_comm_s
            print(f"{algo:5s} {sync:9s} solve {solve:7.1f} s ({s.solve_steps} steps)  "
                  f"iteration {1e3 * s.mean_compute_s:7.1f} ms compute + "
                  f"{1e3 * s.mean_comm_s:7.1f} ms comm", flush=True)
    return out


def _agg_worker(args: tuple[int, int], ctx: WorkerContext) -> WorkerResult:
    """Aggregation round trips of a fixed vector, no computation in between."""
    n_elems, reps = args
    sync = make_sync(ctx.sync, ctx.rank)
    vec = np.ones(n_elems, np.float32)
    for _ in range(10):
        sync.allreduce(vec)
    t0 = time.perf_counter()
    for _ in range(reps):
        sync.allreduce(vec)
    result = WorkerResult(rank=ctx.rank, comm_seconds=(time.perf_counter() - t0) / reps)
    sync.close()
    return result


def bench_aggregation(syncs: list[str], workers: int, n_elems: int, reps: int,
                      packet_elems: int | None = None) -> dict[str, float]:
    """Mean aggregation round trip (ms) per strategy of a vector of ``n_elems`` fp32
    (``packet_elems``: the switch's P)."""
    out = {}
    for sync in syncs:
        s = run_workers(_agg_worker, (n_elems, reps),
                        DistConfig(workers=workers, sync=sync, packet_elems=packet_elems),
                        algo="allreduce", env_id="-", total_steps=1, target_return=None,
                        progress=False, timeout=600)
        out[f"agg_rtt_ms_{sync}"] = 1e3 * float(np.mean([r.comm_seconds for r in s.results]))
        print(f"aggregation {sync:9s} {n_elems} fp32 x {workers} workers: "
              f"{out[f'agg_rtt_ms_{sync}']:.2f} ms per round", flush=True)
    return out


def _serve_replay(q: Any, capacity: int, seed: int) -> None:
    server = ReplayServer(capacity=capacity, seed=seed).start()
    q.put(server.address)
    while True:
        time.sleep(3600)


def _replay_rtt(replay: Replay, reps: int, rng: np.random.Generator) -> float:
    obs = rng.normal(size=(32, 4)).astype(np.float32)
    act = rng.integers(0, 2, 32)
    rew = rng.normal(size=32).astype(np.float32)
    done = np.zeros(32, bool)
    for _ in range(32):  # prefill 1024 records
        replay.push(obs, act, rew, obs, done)
    t0 = time.perf_counter()
    for _ in range(reps):
        replay.push(obs, act, rew, obs, done)
        replay.sample(32, prioritized=True)
    return 1e3 * (time.perf_counter() - t0) / reps


def bench_replay(reps: int, seed: int = 1) -> dict[str, float]:
    """Push 32 + prioritized sample 32, per strategy (servers in child processes)."""
    import hostdrv

    capacity = 16384
    layout = RecordLayout(obs_shape=(4,))
    out = {}
    switch = hostdrv.SoftSwitchProcess(args=["--capacity", str(capacity)])
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    server = ctx.Process(target=_serve_replay, args=(q, capacity, seed), daemon=True)
    server.start()
    try:
        hostdrv.SwitchControl(switch.url).configure_replay(seed=seed)
        replays: dict[str, Replay] = {
            "innet": make_replay(ReplaySpec(kind="innet", url=switch.url), 0, layout),
            "server": ServerReplay(layout, q.get(timeout=60)),
            "local": LocalReplay(layout, capacity, seed),
        }
        for kind, replay in replays.items():
            out[f"replay_rtt_ms_{kind}"] = _replay_rtt(replay, reps, np.random.default_rng(seed))
            replay.close()
            print(f"replay {kind:6s} push 32 + prioritized sample 32: "
                  f"{out[f'replay_rtt_ms_{kind}']:.3f} ms", flush=True)
    finally:
        server.terminate()
        switch.stop()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="PPO and A2C only, fewer repetitions")
    parser.add_argument("--smoke", action="store_true",
                        help="the smallest run, for CI: PPO through the soft switch only, 2 workers, "
                             "5 repetitions, 4096 environment steps (or one iteration, if more)")
    parser.add_argument("--algos", default=None, help="comma-separated algorithms")
    parser.add_argument("--syncs", default=",".join(SYNCS), help="comma-separated strategies")
    parser.add_argument("--workers", type=int, default=4, help="worker processes")
    parser.add_argument("--seed", type=int, default=1, help="seed")
    parser.add_argument("--runs-dir", default=None,
                        help="also write each run's CSV and plots under this folder")
    parser.add_argument("--packet-elems", "--elems", type=int, default=None,
                        help="switch packet size P (elements per packet) of the inswitch "
                             "runs (default: jumbo; --elems is the old name)")
    parser.add_argument("--engine", choices=("native", "model"), default="native",
                        help="soft switch engine and client loop (model: pure Python)")
    args = parser.parse_args(argv)
    if args.engine == "model":  # read by the soft switch and the clients, children included
        os.environ["NRL_SOFTSWITCH_ENGINE"] = "model"
        os.environ["NRL_NATIVE_CLIENT"] = "0"
    print(f"engine={args.engine} packet_elems={args.packet_elems or 'jumbo'}", flush=True)
    if args.smoke:
        args.algos, args.syncs, args.workers = "ppo", "inswitch", 2
    algos = (args.algos.split(",") if args.algos
             else ["ppo", "a2c"] if args.quick else list(ALGOS))
    syncs = args.syncs.split(",")
    reps = 5 if args.smoke else 50 if args.quick else 300
    figures: dict[str, float] = {}
    figures |= bench_aggregation(syncs, args.workers, 9216, reps, args.packet_elems)
    figures |= bench_replay(reps, args.seed)
    figures |= bench_training(algos, syncs, args.workers, args.seed,
                              None if args.runs_dir is None else Path(args.runs_dir),
                              args.packet_elems, 4096 if args.smoke else None)
    print(" ".join(f"{k}={v:.3f}" if v == v else f"{k}=nan" for k, v in figures.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
