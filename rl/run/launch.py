"""Launching N workers: :class:`DistConfig` and :func:`run_workers`.

:func:`run_workers` starts the strategy back ends (soft switch, parameter
server, gloo store, replay server), N worker processes (``forkserver`` or
``spawn``) or threads, shows a progress bar, writes ``episodes.csv``,
``iterations.csv`` and ``summary.json`` into the run directory and draws the
plots.
"""

from __future__ import annotations

import csv
import json
import queue
import signal
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hostdrv.wire.protocol import MAX_MEMBERS
from hostdrv.wire.regmap import REGISTERS
from rl.replay import ReplayBackend, ReplaySpec
from rl.run.runlog import EPISODE_FIELDS, ITER_FIELDS, ProgressBar, RunSummary
from rl.run.tblog import TensorBoardLog
from rl.run.worker import Reporter, WorkerContext, WorkerResult
from rl.sync import StopBoard, SyncBackend, SyncSpec, default_window

PRELOAD_MODULES = ("torch", "torch._dynamo", "gymnasium", "rl.parts", "rl.run")
"""Imported before a worker reports "start" (the forkserver's preload; under torchrun
the rank imports them itself): creating an optimizer imports ``torch._dynamo``, which
takes seconds, and should not count as training time."""


@dataclass
class DistConfig:
    """How the N workers are launched and how they synchronise.

    Attributes
    ----------
    workers : int
        N worker processes.
    sync : str
        Gradient sync: ``inswitch``, ``ps``, ``allreduce`` (gloo) or ``reference``.
    mode : str
        ``sync`` or ``async``.
    dtype : str
        Aggregation dtype, ``fp32`` or ``int32``.
    threshold : int
        Async H (0: N − 1).
    staleness : int
        Async staleness bound.
    pipeline : int or None
        Async rounds in flight per worker (None: the staleness bound).
    scale : float
        int32 quantisation scale.
    switch : str or None
        Switch URL; None starts a soft switch in the launcher.
    replay : str
        Replay strategy for DQN and DDPG: ``local``, ``innet`` or ``server``.
    launcher : str
        ``process`` (spawn) or ``thread`` (one process; tests and ``reference``)
        for :func:`run_workers`; ``torchrun`` when :func:`rl.run.torchrun.run_torchrun`
        runs this process as one rank.
    packet_elems, slots : switch packet size P, elements per packet (``None``: the
        largest the switch takes, ``AGG_MAX_ELEMS``; a soft switch that ``netrl``
        starts itself takes 64 KB jumbo datagrams) and slot count S (default the RTL's slot memory
        depth, ``AGG_MAX_SLOTS``).
    timeout : float
        Aggregator retransmission timeout (s).
    inswitch_api : str
        How ``inswitch`` workers reach the switch: ``aggregator`` (a
        :class:`hostdrv.Aggregator` each), ``netrl`` (``torch.distributed``'s
        ``netrl`` backend, :class:`rl.sync.NetrlSync`; sync mode, worker
        processes) or ``auto`` (``netrl`` under torchrun in sync mode, else
        ``aggregator``).
    """

    workers: int = 4
    sync: str = "inswitch"
    mode: str = "sync"
    dtype: str = "fp32"
    threshold: int = 0
    staleness: int = 1
    pipeline: int | None = None
    scale: float = 65536.0
    switch: str | None = None
    replay: str = "local"
    launcher: str = "process"
    packet_elems: int | None = None
    slots: int = REGISTERS["AGG_MAX_SLOTS"].reset
    timeout: float = 0.05
    inswitch_api: str = "auto"
    iterations: int | None = None
    tensorboard: bool = False

    def resolved_inswitch_api(self) -> str:
        """``inswitch_api`` with ``auto`` resolved: ``aggregator`` or ``netrl``."""
        api = self.inswitch_api
        if api == "auto":
            api = "netrl" if self.launcher == "torchrun" and self.mode == "sync" else "aggregator"
        if api not in ("aggregator", "netrl"):
            raise ValueError(f"inswitch_api {api!r} must be 'auto', 'aggregator' or 'netrl'")
        return api

    def sync_spec(self) -> SyncSpec:
        """The :class:`SyncSpec` this configuration describes."""
        pipeline = self.staleness if self.pipeline is None else self.pipeline
        api = self.resolved_inswitch_api()
        return SyncSpec(kind=self.sync, world=self.workers, mode=self.mode, dtype=self.dtype,
                        threshold=self.threshold, staleness=self.staleness, pipeline=pipeline,
                        scale=self.scale, url=self.switch, timeout=self.timeout,
                        backend="netrl" if self.sync == "inswitch" and api == "netrl" else None)


class Backends:
    """The shared pieces of a run: the sync strategy's back end and the replay's.

    What :func:`run_workers` starts in the launcher and, under torchrun, rank 0
    starts for every rank (:mod:`rl.run.torchrun`): the soft switch (or the
    job configuration of the switch at ``dist.switch``), the parameter server,
    the gloo TCPStore, the replay server or the in-network replay
    configuration. In-network replay takes the gradient sync's switch when no
    URL is given, with member ids N … 2N−1 next to the aggregation's 0 … N−1.

    Parameters
    ----------
    dist : DistConfig
        The strategies and their options.
    replay : ReplaySpec or None
        The replay strategy (DQN, DDPG); its address or URL is filled by :meth:`start`.
    host : str
        Address the servers and a soft switch started here listen on.
    advertise : str or None
        Address the workers reach them at (default ``host``).
    key_file : str or None
        Control key file of a soft switch started here: required when workers
        register from other hosts (a switch executes unsigned control requests
        from loopback only). Its URL then carries ``?key=key_file``.
    """

    def __init__(self, dist: DistConfig, replay: ReplaySpec | None = None, *,
                 host: str = "127.0.0.1", advertise: str | None = None,
                 key_file: str | None = None) -> None:
        self.dist = dist
        self.replay = replay
        # in-network replay on the gradient sync's soft switch: that switch holds its records
        shared = replay is not None and replay.kind == "innet" and replay.url is None
        extra = {"capacity": replay.capacity, "record_bytes": replay.record_bytes} \
            if shared and replay is not None else {}
        self.sync_backend = SyncBackend(dist.sync_spec(), packet_elems=dist.packet_elems,
                                        slots=dist.slots, host=host, advertise=advertise,
                                        key_file=key_file, **extra)
        self.replay_backend: ReplayBackend | None = None
        self.host, self.advertise, self.key_file = host, advertise, key_file

    @property
    def own_switches(self) -> list[str]:
        """URLs of the soft switches started here (as the workers reach them)."""
        urls = []
        if self.sync_backend.own_switch and self.sync_backend.spec.url is not None:
            urls.append(self.sync_backend.spec.url)
        if self.replay_backend is not None and self.replay_backend.switch is not None:
            assert self.replay_backend.spec.url is not None
            urls.append(self.replay_backend.spec.url)
        return urls

    def start(self) -> tuple[SyncSpec, ReplaySpec | None]:
        """Bring everything up; return the sync and replay specs the workers use."""
        n = self.dist.workers
        spec = self.sync_backend.start()
        replay = self.replay
        if replay is not None:
            if replay.kind == "innet":
                if replay.url is None:
                    replay.url = spec.url if spec.kind == "inswitch" else self.dist.switch
                if spec.kind == "inswitch" and replay.url == spec.url:
                    replay.member_offset = n
                    if 2 * n > MAX_MEMBERS:
                        raise ValueError(f"in-switch aggregation and in-network replay on one "
                                         f"switch need 2N <= {MAX_MEMBERS} member ids (N={n})")
            self.replay_backend = ReplayBackend(replay, host=self.host, advertise=self.advertise,
                                                key_file=self.key_file)
            replay = self.replay_backend.start()
        return spec, replay

    def stop(self) -> None:
        """Tear down what :meth:`start` brought up."""
        if self.replay_backend is not None:
            self.replay_backend.stop()
        self.sync_backend.stop()


def _process_context(fn: Callable[..., Any]) -> Any:
    """A clean-process multiprocessing context.

    ``forkserver`` with torch, gymnasium and the algorithm's module preloaded:
    like ``spawn``, children inherit nothing of the launcher's state (threads,
    sockets, the soft switch), but they fork from a server that imported torch
    once instead of importing it N times on 2 cores (seconds saved per run;
    ``torch._dynamo`` too, which creating an optimizer imports).
    ``spawn`` where forkserver does not exist.
    """
    import torch.multiprocessing as tmp

    if "forkserver" in tmp.get_all_start_methods():
        ctx = tmp.get_context("forkserver")
        ctx.set_forkserver_preload([*PRELOAD_MODULES, fn.__module__])
        return ctx
    return tmp.get_context("spawn")


def _worker_main(fn: Callable[[Any, WorkerContext], WorkerResult], cfg: Any,
                 ctx: WorkerContext) -> None:
    """Entry point of a worker process or thread."""
    torch.set_num_threads(1)
    if threading.current_thread() is threading.main_thread():
        # a worker process: Ctrl-C is the launcher's to handle (it stops the workers)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    ctx.reporter.start()
    try:
        result = fn(cfg, ctx)
    except BaseException:  # noqa: BLE001 - forward every failure to the launcher
        ctx.reporter.error(traceback.format_exc())
        raise
    ctx.reporter.done(result)


def run_workers(fn: Callable[[Any, WorkerContext], WorkerResult], cfg: Any, dist: DistConfig,
                *, algo: str, env_id: str, total_steps: int, target_return: float | None,
                replay: ReplaySpec | None = None, run_dir: str | Path | None = None,
                progress: bool = True, record_digests: bool = False,
                timeout: float | None = None) -> RunSummary:
    """Train with N workers and collect their metrics.

    Parameters
    ----------
    fn : callable
        The algorithm's worker function ``fn(cfg, ctx) -> WorkerResult``
        (module level, so that ``spawn`` can pickle it).
    cfg : dataclass
        The algorithm's configuration (same for every worker).
    dist : DistConfig
        Launch and synchronisation options.
    algo, env_id : names for logs and plots.
    total_steps : int
        Env-step budget over all workers (for the progress bar).
    target_return : float or None
        Mean return over the last 20 episodes that stops training.
    replay : ReplaySpec or None
        Replay strategy (DQN, DDPG).
    run_dir : path or None
        Where CSV, JSON and PNG go; None writes nothing.
    progress : bool
        Show the progress bar.
    record_digests : bool
        Workers hash their parameters after every round (tests).
    timeout : float or None
        Give up (and stop the workers) after this many seconds.
    """
    n = dist.workers
    spec = dist.sync_spec()
    if spec.kind == "reference" and dist.launcher != "thread":
        raise ValueError("the reference strategy runs worker threads: use launcher='thread'")
    if (spec.kind == "allreduce" or spec.backend) and dist.launcher != "process":
        raise ValueError(f"torch.distributed ({spec.backend or 'gloo'}) needs one process "
                         "per worker: launcher='process'")
    out = Path(run_dir) if run_dir is not None else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)

    backends = Backends(dist, replay)
    started: list[Any] = []
    t_wall = time.time()
    try:
        spec, replay = backends.start()

        window = default_window(n)
        if dist.launcher == "process":
            mp = _process_context(fn)
            q: Any = mp.Queue()
            board = StopBoard(mp.Value("q", -1))
            for rank in range(n):
                ctx = WorkerContext(rank, n, spec, replay, Reporter(q, rank), target_return,
                                    window, record_digests, board, dist.iterations)
                p = mp.Process(target=_worker_main, args=(fn, cfg, ctx), name=f"netrl-w{rank}",
                               daemon=True)
                p.start()
                started.append(p)
        elif dist.launcher == "thread":
            q = queue.Queue()
            board = StopBoard()
            for rank in range(n):
                ctx = WorkerContext(rank, n, spec, replay, Reporter(q, rank), target_return,
                                    window, record_digests, board, dist.iterations)
                t = threading.Thread(target=_worker_main, args=(fn, cfg, ctx),
                                     name=f"netrl-w{rank}", daemon=True)
                t.start()
                started.append(t)
        else:
            raise ValueError(f"launcher {dist.launcher!r} must be 'process' or 'thread'")
        summary = _collect(q, started, n, algo=algo, env_id=env_id, dist=dist,
                           total_steps=total_steps, replay=replay, out=out, progress=progress,
                           timeout=timeout, t_wall=t_wall, switch_url=_switch_of(spec, replay))
    finally:
        # after a clean finish the workers are exiting; after an error or Ctrl-C, stop them now
        grace = 5.0 if sys.exc_info()[0] is None else 0.0
        for p in started:
            if hasattr(p, "terminate") and p.is_alive():
                p.join(timeout=grace)
                if p.is_alive():
                    p.terminate()
                    p.join(timeout=5)
        backends.stop()
    if out is not None:
        from rl.plots import plot_run

        plot_run(out, title=f"{algo} {env_id} {dist.sync}/{dist.mode} N={n}")
    return summary


def _switch_of(spec: SyncSpec, replay: ReplaySpec | None) -> str | None:
    """The URL of the run's switch (aggregation, else in-network replay), or None."""
    if spec.kind == "inswitch" and spec.url is not None:
        return spec.url
    if replay is not None and replay.kind == "innet":
        return replay.url
    return None


class RunCollector:
    """What the launcher makes of the workers' reports: progress bar, CSV rows, summary.

    Feed it every message a :class:`Reporter` sends, in arrival order
    (:meth:`handle`); :func:`run_workers` does so live from the workers'
    queue, rank 0 under torchrun from the messages every rank gathered.

    Parameters
    ----------
    n : int
        Workers.
    total_steps : int
        Env-step budget (for the progress bar).
    out : Path or None
        Run directory for ``episodes.csv`` and ``iterations.csv`` (None: no files).
    progress : bool
        Show the progress bar.
    t_wall : float
        Launch time (``time.time()``); the CSV time axis starts when every worker is up.
    tensorboard : bool
        Also write TensorBoard event files into ``out``.
    switch_url : str or None
        The run's switch, whose counters the event files get once per iteration
        (only while the run is live: None when the reports are replayed afterwards).
    """

    def __init__(self, n: int, *, total_steps: int, out: Path | None, progress: bool,
                 t_wall: float, tensorboard: bool = False,
                 switch_url: str | None = None) -> None:
        self.n = n
        self.out = out
        self.bar = ProgressBar(total_steps, enabled=progress)
        self.steps = [0] * n
        self.recent: deque[float] = deque(maxlen=20)
        self.results: dict[int, WorkerResult] = {}
        self.errors: list[str] = []
        self.split: deque[tuple[float, float]] = deque(maxlen=4 * n)
        self.t_launch = self.t_wall = t_wall
        self.up: dict[int, float] = {}
        self._files: list[Any] = []
        self._ep_csv: Any = None
        self._it_csv: Any = None
        if out is not None:
            ep_file = open(out / "episodes.csv", "w", newline="")  # noqa: SIM115
            it_file = open(out / "iterations.csv", "w", newline="")  # noqa: SIM115
            self._files = [ep_file, it_file]
            self._ep_csv, self._it_csv = csv.writer(ep_file), csv.writer(it_file)
            self._ep_csv.writerow(EPISODE_FIELDS)
            self._it_csv.writerow(ITER_FIELDS)
        self.tb: TensorBoardLog | None = None
        if out is not None and tensorboard:
            self.tb = TensorBoardLog(out, switch_url)

    @property
    def finished(self) -> bool:
        """Every worker handed in its result, or one failed."""
        return len(self.results) >= self.n or bool(self.errors)

    def handle(self, msg: tuple[Any, ...]) -> None:
        """Process one report: ``(kind, rank, time, ...)`` as :class:`Reporter` sends it."""
        kind, rank, t = msg[0], msg[1], msg[2]
        steps = self.steps
        if kind == "start":
            # time axis of the CSV files: from the moment every worker is up
            self.up[rank] = t
            if len(self.up) == self.n:
                self.t_wall = max(self.up.values())
        elif kind == "episode":
            _, _, _, step, ret, length = msg
            steps[rank] = max(steps[rank], step)
            self.recent.append(ret)
            if self._ep_csv is not None:
                self._ep_csv.writerow([f"{t - self.t_wall:.3f}", rank, step, sum(steps),
                                       f"{ret:.3f}", length])
            if self.tb is not None:
                self.tb.episode(sum(steps), ret, length)
        elif kind == "iteration":
            _, _, _, it, step, compute, comm, metrics = msg
            steps[rank] = max(steps[rank], step)
            self.split.append((compute, comm))
            if self._it_csv is not None:
                self._it_csv.writerow([f"{t - self.t_wall:.3f}", rank, it, step, sum(steps),
                                       f"{compute:.6f}", f"{comm:.6f}", json.dumps(metrics)])
            if self.tb is not None:
                self.tb.iteration(rank, it, sum(steps), compute, comm, metrics, t - self.t_wall)
            mean_ret = f"{np.mean(self.recent):7.1f}" if self.recent else "    n/a"
            c = np.mean([s[0] for s in self.split])
            m = np.mean([s[1] for s in self.split])
            self.bar.update(sum(steps), f"return(20) {mean_ret}  iter {1e3 * (c + m):6.1f} ms "
                            f"(compute {1e3 * c:5.1f} / comm {1e3 * m:5.1f})")
        elif kind == "done":
            self.results[rank] = msg[3]
        elif kind == "error":
            self.errors.append(f"worker {rank}:\n{msg[3]}")

    def close(self) -> None:
        """Last progress line; close the CSV files."""
        recent = self.recent
        self.bar.update(sum(self.steps),
                        f"return(20) {np.mean(recent) if recent else float('nan'):7.1f}",
                        force=True)
        self.bar.close()
        for f in self._files:
            f.close()
        self._files = []
        if self.tb is not None:
            self.tb.close()
            self.tb = None

    def summary(self, *, algo: str, env_id: str, dist: DistConfig,
                replay: ReplaySpec | None) -> RunSummary:
        """The :class:`RunSummary` of a finished run (also written as ``summary.json``)."""
        n, out, recent = self.n, self.out, self.recent
        ordered = [self.results[r] for r in range(n)]
        r0 = ordered[0]
        iters = max(1, r0.iterations)
        summary = RunSummary(
            algo=algo, env_id=env_id, sync=dist.sync, mode=dist.mode, dtype=dist.dtype,
            workers=n, replay=None if replay is None else replay.kind, solved=r0.solved,
            solve_seconds=r0.solve_seconds, solve_steps=r0.solve_steps,
            wall_seconds=time.time() - self.t_launch, train_seconds=r0.train_seconds,
            env_steps=sum(r.env_steps for r in ordered), iterations=r0.iterations,
            mean_compute_s=float(np.mean([r.compute_seconds / iters for r in ordered])),
            mean_comm_s=float(np.mean([r.comm_seconds / iters for r in ordered])),
            last_mean_return=float(np.mean(recent)) if recent else None,
            run_dir=None if out is None else str(out), results=ordered)
        if out is not None:
            with open(out / "summary.json", "w") as f:
                json.dump(summary.to_json(), f, indent=2)
        return summary


def _collect(q: Any, started: list[Any], n: int, *, algo: str, env_id: str, dist: DistConfig,
             total_steps: int, replay: ReplaySpec | None, out: Path | None, progress: bool,
             timeout: float | None, t_wall: float, switch_url: str | None) -> RunSummary:
    """Drain the workers' queue into a :class:`RunCollector`; stop the workers on an error."""
    col = RunCollector(n, total_steps=total_steps, out=out, progress=progress, t_wall=t_wall,
                       tensorboard=dist.tensorboard, switch_url=switch_url)
    deadline = None if timeout is None else time.time() + timeout
    silent = 0
    try:
        while not col.finished:
            try:
                msg = q.get(timeout=0.5)
            except queue.Empty:
                # a worker that died without a word (killed, crashed in C) ends the run
                results = col.results
                crashed = {rank: p.exitcode for rank, p in enumerate(started)
                           if rank not in results and not p.is_alive()
                           and getattr(p, "exitcode", None) not in (0, None)}
                if crashed:
                    col.errors.append(f"workers exited without a result: {crashed}")
                elif all(not p.is_alive() for p in started) and len(results) < n:
                    silent += 1
                    if silent > 4:  # 2 s with every worker gone and nothing queued
                        col.errors.append(f"workers {sorted(set(range(n)) - set(results))} "
                                          "exited without a result")
                if deadline is not None and time.time() > deadline:
                    col.errors.append(f"timed out after {timeout} s")
                continue
            col.handle(msg)
    finally:
        col.close()
    if col.errors:
        for p in started:
            if hasattr(p, "terminate") and p.is_alive():
                p.terminate()
        raise RuntimeError("training failed: " + "\n".join(col.errors))
    return col.summary(algo=algo, env_id=env_id, dist=dist, replay=replay)


def config_dict(cfg: Any) -> dict[str, Any]:
    """A dataclass configuration as a plain dict (for JSON)."""
    return asdict(cfg) if is_dataclass(cfg) else dict(vars(cfg))
