"""The RL trainers under torchrun: one worker per rank (:func:`run_torchrun`).

::

    torchrun --nnodes=N --nproc-per-node=1 --rdzv-backend=c10d \\
             --rdzv-endpoint=HOST:PORT -m rl train --algo ppo --sync inswitch

Every rank is one worker. torchrun gives each its ``RANK``, ``WORLD_SIZE``,
``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT``, and a c10d TCPStore all of
them reach (``env://``, :func:`job_store`). Rank 0 starts what
:func:`rl.run.run_workers` starts in its launcher (:class:`rl.run.Backends`:
the soft switch or the job configuration of the switch given by
``--switch``/``NETRL_SWITCH``, the parameter server, the gloo TCPStore, the
replay server or the in-network replay configuration) in a child process,
bound to the address it reaches ``MASTER_ADDR`` from (:func:`advertised_address`;
``NETRL_ADVERTISE`` overrides it), and publishes their addresses in the store.
A soft switch rank 0 starts checks a fresh control key, which travels in the
store too, so that workers on other hosts may register (a switch executes
unsigned control requests from loopback only).

Each rank then runs the algorithm's worker function exactly as a local worker
process does; its reports (episodes, iterations, the final
:class:`~rl.run.WorkerResult`) go back to rank 0 through the store at the
end, and rank 0 writes the same ``episodes.csv``, ``iterations.csv``,
``summary.json`` and plots as the local launcher, plus ``ranks.json`` (host
and final parameter digest of every rank: equal digests, identical weights).
The stop board of async runs (:class:`StoreBoard`) lives in the store as well.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib
import json
import multiprocessing
import os
import pickle
import secrets
import socket
import struct
import tempfile
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from rl.replay import ReplaySpec
from rl.run.launch import (
    PRELOAD_MODULES,
    Backends,
    DistConfig,
    RunCollector,
    _worker_main,
)
from rl.run.runlog import ProgressBar, RunSummary
from rl.run.worker import Reporter, WorkerContext, WorkerResult
from rl.sync import StopBoard, SyncSpec, default_window

TORCHRUN_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
"""What torchrun (or any ``env://`` launcher) sets for every rank."""
ADVERTISE_ENV = "NETRL_ADVERTISE"
"""Environment variable: the address rank 0's servers bind and are advertised at."""
SWITCH_ENV = "NETRL_SWITCH"
"""Environment variable: the switch URL when ``--switch`` is not given (as for the
``netrl`` torch.distributed backend)."""
SETUP_TIMEOUT = 120.0
"""Seconds the other ranks wait for rank 0 to publish the shared pieces."""
GATHER_TIMEOUT = 600.0
"""Seconds rank 0 waits, after its own worker finished, for the other ranks' reports."""


@dataclass(frozen=True)
class RankInfo:
    """This process's place in the job, from torchrun's environment.

    Attributes
    ----------
    rank, world, local_rank : int
        ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``.
    master_addr : str
        ``MASTER_ADDR`` (the host of the c10d store).
    master_port : int
        ``MASTER_PORT``.
    """

    rank: int
    world: int
    local_rank: int
    master_addr: str
    master_port: int

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> RankInfo:
        """Read the torchrun variables from ``env`` (default ``os.environ``).

        Raises
        ------
        RuntimeError
            When one is missing (not started by torchrun).
        """
        env = os.environ if env is None else env
        missing = [k for k in TORCHRUN_ENV if k not in env]
        if missing:
            raise RuntimeError(f"not started by torchrun: {', '.join(missing)} not set "
                               "(run `torchrun ... -m rl train ...`)")
        return cls(rank=int(env["RANK"]), world=int(env["WORLD_SIZE"]),
                   local_rank=int(env["LOCAL_RANK"]), master_addr=env["MASTER_ADDR"],
                   master_port=int(env["MASTER_PORT"]))


def under_torchrun(env: Mapping[str, str] | None = None) -> bool:
    """Whether this process is a torchrun worker (``TORCHELASTIC_RUN_ID`` and the rank
    variables are set)."""
    env = os.environ if env is None else env
    return "TORCHELASTIC_RUN_ID" in env and all(k in env for k in TORCHRUN_ENV)


def advertised_address(master_addr: str, master_port: int,
                       env: Mapping[str, str] | None = None) -> str:
    """The IPv4 address this host reaches ``master_addr`` from.

    The address other hosts reach this one at, on the job's network (no packet
    is sent: a UDP socket is connected and asked for its local address).
    ``NETRL_ADVERTISE`` in ``env`` overrides it.
    """
    env = os.environ if env is None else env
    if env.get(ADVERTISE_ENV):
        return env[ADVERTISE_ENV]
    target = socket.gethostbyname(master_addr)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((target, master_port or 9))
        return str(s.getsockname()[0])


def interface_of(address: str) -> str | None:
    """Name of the network interface holding IPv4 ``address`` (None if none does)."""
    siocgifaddr = 0x8915
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            try:
                req = struct.pack("256s", name.encode()[:15])
                got = fcntl.ioctl(s.fileno(), siocgifaddr, req)
            except OSError:
                continue  # no IPv4 address
            if socket.inet_ntoa(got[20:24]) == address:
                return name
    return None


def job_store(timeout: float = 1800.0) -> Any:
    """The c10d store torchrun provides (``env://``), every key under ``netrl/``."""
    import torch.distributed as tdist

    store, _, _ = next(tdist.rendezvous("env://", timeout=timedelta(seconds=timeout)))
    return tdist.PrefixStore("netrl/", store)


def params_digest(params: Mapping[str, np.ndarray]) -> str:
    """A short hash of a :attr:`WorkerResult.params` dict (names and exact bytes)."""
    h = hashlib.blake2b(digest_size=8)
    for name, value in params.items():
        h.update(name.encode())
        h.update(np.ascontiguousarray(value).tobytes())
    return h.hexdigest()


class StoreBoard(StopBoard):
    """A :class:`~rl.sync.StopBoard` in the job's store, shared by ranks on every host.

    The posted round r is kept as the counter r + 1 (0: nothing posted), read
    with one ``add(key, 0)`` and lowered with ``compare_set``.

    Parameters
    ----------
    store : torch.distributed.Store
        The job's store.
    key : str
        Key of the board.
    """

    def __init__(self, store: Any, key: str) -> None:
        super().__init__()
        self._store = store
        self._key = key

    def propose(self, round_: int) -> None:
        """Post ``round_`` unless a smaller round is already posted."""
        want = str(round_ + 1)
        while True:
            cur = self._store.add(self._key, 0)
            if 0 < cur <= round_ + 1:
                return
            got = self._store.compare_set(self._key, str(cur), want)
            if got.decode() == want:
                return

    def get(self) -> int | None:
        """The posted round, or None."""
        v = int(self._store.add(self._key, 0))
        return None if v == 0 else v - 1


class _Reports:
    """A rank's report queue: kept for rank 0, shown live on rank 0's progress bar."""

    def __init__(self, bar: ProgressBar | None, world: int) -> None:
        self.messages: list[tuple[Any, ...]] = []
        self._bar = bar
        self._world = world

    def put(self, msg: tuple[Any, ...]) -> None:
        self.messages.append(msg)
        if self._bar is not None and msg[0] == "iteration":
            # rank 0 sees only its own steps live; the others' arrive at the end
            self._bar.update(msg[4] * self._world, f"rank 0 iteration {msg[3]}")


def _strip_key(url: str) -> str:
    return url.partition("?")[0]


def _with_key(url: str | None, own: set[str], key_file: str | None) -> str | None:
    """``url`` with this host's key file when it names a switch rank 0 started."""
    if url is None or key_file is None or _strip_key(url) not in own:
        return url
    return f"{_strip_key(url)}?key={key_file}"


def _write_key(key: str, directory: str) -> str:
    path = os.path.join(directory, "control.key")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(key + "\n")
    return path


def _serve_backends(conn: Any, dist: DistConfig, replay: ReplaySpec | None, host: str,
                    advertise: str, key_file: str | None) -> None:
    """Child process of rank 0: run the shared pieces until told to stop (or orphaned)."""
    backends = Backends(dist, replay, host=host, advertise=advertise, key_file=key_file)
    try:
        try:
            spec, rspec = backends.start()
        except BaseException:  # noqa: BLE001 - report every failure to rank 0
            conn.send(("error", traceback.format_exc()))
            return
        conn.send(("ok", spec, rspec, backends.own_switches))
        with contextlib.suppress(EOFError, OSError):
            conn.recv()  # "stop", or EOF when rank 0 is gone
    finally:
        backends.stop()


class _BackendHost:
    """Rank 0's child process holding the shared pieces (so that a parameter server's
    Python threads do not share rank 0's interpreter, as in the local launcher)."""

    def __init__(self, dist: DistConfig, replay: ReplaySpec | None, host: str,
                 advertise: str, key_file: str | None) -> None:
        methods = multiprocessing.get_all_start_methods()
        mp = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        self._conn, child = mp.Pipe()
        self.proc = mp.Process(target=_serve_backends, name="netrl-backends", daemon=True,
                               args=(child, dist, replay, host, advertise, key_file))
        self.proc.start()
        child.close()

    def start(self, timeout: float = SETUP_TIMEOUT
              ) -> tuple[SyncSpec, ReplaySpec | None, list[str]]:
        """Wait for the shared pieces; return the specs and the URLs of own switches."""
        if not self._conn.poll(timeout):
            raise RuntimeError(f"the shared pieces did not start within {timeout} s")
        try:
            msg = self._conn.recv()
        except EOFError:
            raise RuntimeError(f"the shared pieces' process died (exit code "
                               f"{self.proc.exitcode})") from None
        if msg[0] == "error":
            raise RuntimeError(f"starting the shared pieces failed:\n{msg[1]}")
        return msg[1], msg[2], msg[3]

    def stop(self) -> None:
        """Stop the shared pieces and the process."""
        with contextlib.suppress(OSError, BrokenPipeError):
            self._conn.send("stop")
        self.proc.join(timeout=10)
        if self.proc.is_alive():
            self.proc.terminate()
            self.proc.join(timeout=5)
        self._conn.close()


def _barrier(store: Any, key: str, world: int, timeout: float = SETUP_TIMEOUT) -> None:
    """Wait until all ``world`` ranks reached this point (a counter in the store)."""
    store.add(key, 1)
    deadline = time.time() + timeout
    while store.add(key, 0) < world:
        if time.time() > deadline:
            raise RuntimeError(f"only {store.add(key, 0)} of {world} ranks reached "
                               f"{key!r} within {timeout} s")
        time.sleep(0.01)


def _gather(store: Any, world: int, deadline: float) -> dict[int, dict[str, Any]]:
    """Rank 0: every rank's report; stops early at the first one that failed."""
    reports: dict[int, dict[str, Any]] = {}
    while len(reports) < world:
        for r in range(world):
            if r not in reports and store.check([f"report/{r}"]):
                reports[r] = pickle.loads(store.get(f"report/{r}"))
                if any(m[0] == "error" for m in reports[r]["messages"]):
                    return reports
        if len(reports) < world:
            if time.time() > deadline:
                missing = sorted(set(range(world)) - set(reports))
                raise RuntimeError(f"ranks {missing} sent no report in time")
            time.sleep(0.05)
    return reports


def run_torchrun(fn: Callable[[Any, WorkerContext], WorkerResult], cfg: Any, dist: DistConfig,
                 *, algo: str, env_id: str, total_steps: int, target_return: float | None,
                 replay: ReplaySpec | None = None, run_dir: str | Path | None = None,
                 progress: bool = True, record_digests: bool = False,
                 timeout: float | None = None, store: Any = None, tag: str = "run",
                 env: Mapping[str, str] | None = None) -> RunSummary | None:
    """Run this rank's worker; on rank 0 also the shared pieces and the run's files.

    Parameters
    ----------
    fn, cfg, algo, env_id, total_steps, target_return, replay, run_dir, progress, \
record_digests
        As for :func:`rl.run.run_workers`; ``run_dir`` is written by rank 0
        only, on rank 0's host.
    dist : DistConfig
        Strategies and options; ``workers`` is replaced by ``WORLD_SIZE``, and a
        missing ``switch`` by ``NETRL_SWITCH`` when set.
    timeout : float or None
        Rank 0 gives up waiting for the other ranks' reports after this many
        seconds past its own worker's end (default :data:`GATHER_TIMEOUT`).
    store : torch.distributed.Store or None
        The job's store (default :func:`job_store`).
    tag : str
        Key prefix of this run in the store (several runs in one job need distinct tags).
    env : mapping or None
        The environment (default ``os.environ``).

    Returns
    -------
    RunSummary or None
        The run's summary on rank 0, None on the other ranks.

    Raises
    ------
    RuntimeError
        When rank 0 cannot start the shared pieces or a rank fails (rank 0
        raises with every failed rank's traceback).
    """
    import torch.distributed as tdist

    env = os.environ if env is None else env
    info = RankInfo.from_env(env)
    n, rank = info.world, info.rank
    if dist.sync == "reference":
        raise ValueError("the reference strategy runs worker threads in one process; "
                         "torchrun runs one process per rank")
    dist = replace(dist, workers=n, launcher="torchrun",
                   switch=dist.switch or env.get(SWITCH_ENV) or None)
    store = job_store() if store is None else store
    store = tdist.PrefixStore(f"{tag}/", store)
    advertise = advertised_address(info.master_addr, info.master_port, env)
    if "GLOO_SOCKET_IFNAME" not in os.environ:
        # gloo (allreduce, and the netrl backend's own group) on the job's network
        ifname = interface_of(advertise)
        if ifname is not None:
            os.environ["GLOO_SOCKET_IFNAME"] = ifname
    out = Path(run_dir) if run_dir is not None and rank == 0 else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)

    for name in (*PRELOAD_MODULES, fn.__module__):  # as the local launcher's forkserver
        importlib.import_module(name)
    keydir = tempfile.TemporaryDirectory(prefix="netrl-key-")
    host: _BackendHost | None = None
    t_launch = time.time()
    try:
        if rank == 0:
            key = secrets.token_hex(32)
            key_file = _write_key(key, keydir.name)
            try:
                host = _BackendHost(dist, replay, advertise, advertise, key_file)
                spec, rspec, own = host.start()
                setup: dict[str, Any] = {"spec": spec, "replay": rspec, "key": key,
                                         "own": [_strip_key(u) for u in own]}
            except BaseException as e:
                setup = {"error": f"{type(e).__name__}: {e}"}
                store.set("setup", pickle.dumps(setup))
                raise
            store.set("setup", pickle.dumps(setup))
        else:
            store.wait(["setup"], timedelta(seconds=SETUP_TIMEOUT))
            setup = pickle.loads(store.get("setup"))
            if "error" in setup:
                raise RuntimeError(f"rank 0 could not start the shared pieces: {setup['error']}")
            key_file = _write_key(setup["key"], keydir.name)
        own_urls = set(setup["own"])
        spec = setup["spec"]
        spec.url = _with_key(spec.url, own_urls, key_file)
        rspec = setup["replay"]
        if rspec is not None:
            rspec.url = _with_key(rspec.url, own_urls, key_file)

        _barrier(store, "up", n)  # every rank imported and connected: start together
        bar = ProgressBar(total_steps, enabled=progress) if rank == 0 else None
        reports = _Reports(bar, n)
        ctx = WorkerContext(rank, n, spec, rspec, Reporter(reports, rank), target_return,
                            default_window(n), record_digests, StoreBoard(store, "board"),
                            dist.iterations)
        failed: BaseException | None = None
        try:
            _worker_main(fn, cfg, ctx)
        except BaseException as e:  # noqa: BLE001 - reported through the store, re-raised
            failed = e
        finally:
            if bar is not None:
                bar.close()
        store.set(f"report/{rank}", pickle.dumps(
            {"messages": reports.messages, "host": socket.gethostname(),
             "address": advertise}))
        if failed is not None:
            raise failed
        if rank != 0:
            return None

        deadline = time.time() + (GATHER_TIMEOUT if timeout is None else timeout)
        gathered = _gather(store, n, deadline)
        return _write_run(gathered, n, algo=algo, env_id=env_id, dist=dist, replay=rspec,
                          out=out, total_steps=total_steps, t_launch=t_launch)
    finally:
        if host is not None:
            host.stop()
        keydir.cleanup()


def _write_run(gathered: dict[int, dict[str, Any]], n: int, *, algo: str, env_id: str,
               dist: DistConfig, replay: ReplaySpec | None, out: Path | None,
               total_steps: int, t_launch: float) -> RunSummary:
    """Rank 0: every rank's reports into the CSV files, ``summary.json``, ``ranks.json``
    and the plots, as the local launcher writes them."""
    merged = sorted(((m[2], r, i, m) for r, rep in gathered.items()
                     for i, m in enumerate(rep["messages"])), key=lambda x: x[:3])
    col = RunCollector(n, total_steps=total_steps, out=out, progress=False, t_wall=t_launch,
                       tensorboard=dist.tensorboard)
    try:
        for *_, msg in merged:
            col.handle(msg)
    finally:
        col.close()
    if col.errors or len(col.results) < n:
        missing = sorted(set(range(n)) - set(col.results))
        raise RuntimeError("training failed: " + "\n".join(
            col.errors or [f"ranks {missing} finished without a result"]))
    summary = col.summary(algo=algo, env_id=env_id, dist=dist, replay=replay)
    if out is not None:
        ranks = [{"rank": r, "host": gathered[r]["host"], "address": gathered[r]["address"],
                  "env_steps": res.env_steps, "iterations": res.iterations,
                  "rounds": res.rounds, "params_digest": params_digest(res.params)}
                 for r, res in enumerate(summary.results)]
        (out / "ranks.json").write_text(json.dumps(ranks, indent=2))
        from rl.plots import plot_run

        plot_run(out, title=f"{algo} {env_id} {dist.sync}/{dist.mode} N={n} (torchrun)")
    return summary
