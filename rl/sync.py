"""Gradient synchronisation strategies behind one interface.

Every worker owns one :class:`GradSync`; ``allreduce(vec, version=v)`` returns the
element-wise sum of the workers' vectors for the next aggregation round. Four
strategies, picked by name (``SyncSpec.kind``):

``inswitch``
    :class:`hostdrv.Aggregator`: the switch (soft switch, RTL simulation or a
    NetFPGA board, by URL) sums the chunks packet by packet and multicasts the
    result; two network hops, no host in the reduction.
``ps``
    A parameter server over TCP (:class:`ParameterServer`): each worker sends
    its whole vector to a server process, which sums the N vectors and sends
    the sum back to every worker; the four-hop baseline iSwitch compares with.
``allreduce``
    ``torch.distributed`` with the gloo backend (ring all-reduce), one process
    per worker.
``reference``
    An in-process sum over worker *threads* (:class:`ReferenceHub`), the golden
    model the tests compare the other strategies against.

Round semantics (sync and async) follow ``docs/protocol.md`` section 4, and
:class:`RoundTable` is their software model, shared by ``ps`` and
``reference``:

* **sync**: a round completes when all N workers contributed.
* **async**: a round completes at H contributions (the threshold); a
  contribution whose ``round - version`` exceeds the staleness bound is
  dropped; contributions arriving after completion are ignored, and every
  worker still receives every round's result, so weights stay identical
  (in the switch, a straggler more than a round behind takes the newer
  round's result instead and carries on from there). gloo cannot complete a collective with fewer than N ranks, so ``allreduce``
  *emulates* async: stale contributions are replaced by zeros (their
  contributor flag too), but every round waits for all N ranks.

On top sits :class:`GradientExchange`, what an algorithm calls instead of
``optimizer.step()``: it flattens the gradients, appends the episode
statistics and a contributor flag, quantises to int32 when asked, runs the
round (blocking in sync mode, pipelined up to ``pipeline`` rounds in async
mode), averages by the number of contributors and steps the optimizer. The
statistics travel with the gradients, so every worker sees the same
"solved" decision at the same round and all of them stop together.
"""

from __future__ import annotations

import hashlib
import math
import queue
import socket
import struct
import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

SYNC_KINDS = ("inswitch", "ps", "allreduce", "reference")
"""Names accepted for :attr:`SyncSpec.kind`."""

STATS_SCALE = 16.0
"""int32 quantisation scale of the episode statistics carried with a gradient."""


# --------------------------------------------------------------------------------------------
# Specification (picklable; built in the launcher, turned into a GradSync in each worker)
# --------------------------------------------------------------------------------------------


@dataclass
class SyncSpec:
    """Everything a worker needs to join the gradient synchronisation.

    Attributes
    ----------
    kind : str
        ``inswitch``, ``ps``, ``allreduce`` or ``reference``.
    world : int
        Number of workers N.
    mode : str
        ``sync`` (all N each round) or ``async`` (threshold H, staleness bound).
    dtype : str
        ``fp32`` or ``int32`` (host quantisation with a shared scale).
    threshold : int
        H, contributions that complete an async round (N in sync mode).
    staleness : int
        Async staleness bound: contributions with ``round - version`` above it
        are dropped.
    pipeline : int
        Async rounds a worker may have in flight while it keeps computing
        (0 in sync mode; at most ``staleness`` so no round can starve).
    scale : float
        int32 quantisation scale of gradient elements.
    url : str or None
        Switch URL for ``inswitch``.
    address : tuple of (str, int) or None
        Server (``ps``) or TCPStore (``allreduce``) address.
    hub : ReferenceHub or None
        The shared in-process hub (``reference``, thread launcher only).
    """

    kind: str
    world: int
    mode: str = "sync"
    dtype: str = "fp32"
    threshold: int = 0
    staleness: int = 0
    pipeline: int = 0
    scale: float = 65536.0
    url: str | None = None
    address: tuple[str, int] | None = None
    hub: ReferenceHub | None = None
    timeout: float = 0.05
    retries: int = 200

    def __post_init__(self) -> None:
        if self.kind not in SYNC_KINDS:
            raise ValueError(f"sync kind {self.kind!r} not in {SYNC_KINDS}")
        if self.mode not in ("sync", "async"):
            raise ValueError(f"mode {self.mode!r} must be 'sync' or 'async'")
        if self.dtype not in ("fp32", "int32"):
            raise ValueError(f"dtype {self.dtype!r} must be 'fp32' or 'int32'")
        if self.world < 1:
            raise ValueError(f"world {self.world} must be >= 1")
        if self.mode == "sync":
            self.threshold, self.staleness, self.pipeline = self.world, 0, 0
        else:
            if self.threshold <= 0:
                self.threshold = max(1, self.world - 1)
            if not 1 <= self.threshold <= self.world:
                raise ValueError(f"threshold {self.threshold} must be in 1..{self.world}")
            if self.staleness < 0:
                raise ValueError(f"staleness {self.staleness} must be >= 0")
            if not 0 <= self.pipeline <= self.staleness:
                raise ValueError(
                    f"pipeline {self.pipeline} must be in 0..staleness ({self.staleness}); "
                    "a deeper pipeline lets every contribution of a round go stale")


# --------------------------------------------------------------------------------------------
# Round semantics in software (ps server, reference hub)
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# Parameter server over TCP
# --------------------------------------------------------------------------------------------

_PS_HELLO = struct.Struct("!I")  # worker id
_PS_MSG = struct.Struct("!IIIB")  # round, version, payload bytes, dtype code (0 fp32, 1 int32)
_DTYPES = {0: np.dtype("<f4"), 1: np.dtype("<i4")}


def _recv_exact(sock: socket.socket, n: int) -> bytearray:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            raise ConnectionError("peer closed the connection")
        got += k
    return buf


class ParameterServer:
    """A TCP parameter server: sums the N workers' vectors each round, sends the sum back.

    Each worker holds one connection; per round it sends its whole vector
    (round, version, length, dtype, payload) and the server, once the round
    completes (:class:`RoundTable` semantics), sends the sum to every worker:
    worker → server → worker, four hops per round counting both directions of
    both links, against the switch's two.

    Parameters
    ----------
    world, mode, threshold, staleness
        As for :class:`RoundTable`.
    host : str
        Address to listen on.
    port : int
        TCP port; 0 picks an ephemeral one (see :attr:`address`).
    """

    def __init__(self, world: int, mode: str = "sync", threshold: int = 0, staleness: int = 0,
                 host: str = "127.0.0.1", port: int = 0) -> None:
        self.table = RoundTable(world, mode, threshold, staleness)
        self._lock = threading.Lock()
        self._listener = socket.create_server((host, port))
        self.address: tuple[str, int] = self._listener.getsockname()[:2]
        self._conns: dict[int, socket.socket] = {}
        self._send_locks: dict[int, threading.Lock] = {}
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()

    def start(self) -> ParameterServer:
        """Start accepting workers in a background thread."""
        t = threading.Thread(target=self._accept_loop, name="ps-accept", daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def stop(self) -> None:
        """Close every connection and the listener."""
        self._stop.set()
        try:
            self._listener.close()
        except OSError:
            pass
        for conn in list(self._conns.values()):
            try:
                conn.shutdown(socket.SHUT_RDWR)
                conn.close()
            except OSError:
                pass

    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            (worker,) = _PS_HELLO.unpack(_recv_exact(conn, _PS_HELLO.size))
            with self._lock:
                self._conns[worker] = conn
                self._send_locks[worker] = threading.Lock()
            t = threading.Thread(target=self._serve, args=(worker, conn),
                                 name=f"ps-worker{worker}", daemon=True)
            t.start()
            self._threads.append(t)

    def _serve(self, worker: int, conn: socket.socket) -> None:
        try:
            while True:
                round_, version, nbytes, code = _PS_MSG.unpack(_recv_exact(conn, _PS_MSG.size))
                values = np.frombuffer(_recv_exact(conn, nbytes), dtype=_DTYPES[code])
                with self._lock:
                    result = self.table.contribute(worker, round_, version, values)
                    if result is not None:
                        del self.table.rounds[round_]
                        targets = list(self._conns.items())
                if result is not None:
                    msg = _PS_MSG.pack(round_, 0, result.nbytes, code) + result.tobytes()
                    for w, c in targets:
                        with self._send_locks[w]:
                            c.sendall(msg)
        except (ConnectionError, OSError):
            return


# --------------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------------


class GradSync(ABC):
    """One worker's end of a gradient synchronisation strategy.

    ``allreduce`` is called once per aggregation round, in round order, from a
    single thread. ``round`` counts the calls; ``last_round`` is the global
    round of the last result (the same as the call index, except for an
    async in-switch straggler that caught up by taking a newer round's result).
    """

    def __init__(self, spec: SyncSpec, rank: int) -> None:
        self.spec = spec
        self.rank = rank
        self.world = spec.world
        self.round = 0
        self.last_round = -1

    def allreduce(self, vec: np.ndarray, *, version: int | None = None) -> np.ndarray:
        """Sum ``vec`` (float32 or int32, 1-D) over the round's contributors.

        Parameters
        ----------
        vec : numpy.ndarray
            This worker's contribution.
        version : int, optional
            Async mode: the global round this worker's weights are current to
            (one past the last result it had applied when it computed
            ``vec``). Defaults to fresh (``last_round + 1``).

        Returns
        -------
        numpy.ndarray
            The sum, same dtype and length as ``vec``.
        """
        version = self.last_round + 1 if version is None else version
        out = self._allreduce(np.ascontiguousarray(vec), version)
        self.round += 1
        return out

    @abstractmethod
    def _allreduce(self, vec: np.ndarray, version: int) -> np.ndarray:
        """Run one round; set :attr:`last_round`."""

    def allreduce_grads(self, model: torch.nn.Module) -> None:
        """Replace each gradient of ``model`` by its mean over all workers (sync mode)."""
        params = [p for p in model.parameters() if p.grad is not None]
        total = self.allreduce(flatten_grads(params))
        unflatten_into([p.grad for p in params], total / np.float32(self.world))

    def close(self) -> None:  # noqa: B027 - most strategies hold nothing to release
        """Release sockets and process groups."""


class InSwitchSync(GradSync):
    """Aggregation in the switch through :class:`hostdrv.Aggregator`."""

    def __init__(self, spec: SyncSpec, rank: int) -> None:
        super().__init__(spec, rank)
        from hostdrv import Aggregator

        assert spec.url is not None, "inswitch needs a switch URL"
        self._agg = Aggregator(spec.url, worker=rank, timeout=spec.timeout,
                               retries=spec.retries, register=True)

    def _allreduce(self, vec: np.ndarray, version: int) -> np.ndarray:
        if self.spec.mode == "async":
            chunks = -(-vec.size // self._agg.elems)
            if chunks > self._agg.slots:
                raise ValueError(f"async in-switch needs one round per slot per call: "
                                 f"{vec.size} elements are {chunks} chunks > AGG_SLOTS "
                                 f"{self._agg.slots}")
            out = self._agg.allreduce(vec, version=version)
        else:
            out = self._agg.allreduce(vec)
        rounds = self._agg.last_rounds
        self.last_round = int(rounds[0]) if len(rounds) else self.round
        return np.asarray(out, dtype=vec.dtype)

    def close(self) -> None:
        """Close the connection."""
        self._agg.close()


class PSSync(GradSync):
    """A worker's connection to a :class:`ParameterServer`."""

    def __init__(self, spec: SyncSpec, rank: int) -> None:
        super().__init__(spec, rank)
        assert spec.address is not None, "ps needs the server address"
        self._sock = socket.create_connection(spec.address)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock.sendall(_PS_HELLO.pack(rank))

    def _allreduce(self, vec: np.ndarray, version: int) -> np.ndarray:
        code = 1 if vec.dtype == np.int32 else 0
        self._sock.sendall(_PS_MSG.pack(self.round, version, vec.nbytes, code) + vec.tobytes())
        # Results arrive in round order; every round's sum goes to every worker.
        round_, _, nbytes, rcode = _PS_MSG.unpack(_recv_exact(self._sock, _PS_MSG.size))
        payload = _recv_exact(self._sock, nbytes)
        if round_ != self.round:
            raise RuntimeError(f"ps: expected round {self.round}, got {round_}")
        self.last_round = self.round
        return np.frombuffer(payload, dtype=_DTYPES[rcode]).copy()

    def close(self) -> None:
        """Close the connection."""
        self._sock.close()


class GlooSync(GradSync):
    """``torch.distributed`` all-reduce with the gloo backend (one process per worker)."""

    def __init__(self, spec: SyncSpec, rank: int) -> None:
        super().__init__(spec, rank)
        import torch.distributed as dist

        assert spec.address is not None, "allreduce needs the TCPStore address"
        store = dist.TCPStore(spec.address[0], spec.address[1], spec.world, is_master=False)
        dist.init_process_group("gloo", store=store, rank=rank, world_size=spec.world)
        self._dist = dist

    def _allreduce(self, vec: np.ndarray, version: int) -> np.ndarray:
        if self.spec.mode == "async" and self.round - version > self.spec.staleness:
            vec = np.zeros_like(vec)  # emulated staleness drop: contribute nothing
        t = torch.from_numpy(vec.copy())
        self._dist.all_reduce(t)
        self.last_round = self.round
        return t.numpy()

    def close(self) -> None:
        """Destroy the gloo process group."""
        if self._dist.is_initialized():
            self._dist.destroy_process_group()


class ReferenceSync(GradSync):
    """A worker thread's end of the in-process :class:`ReferenceHub`."""

    def __init__(self, spec: SyncSpec, rank: int) -> None:
        super().__init__(spec, rank)
        assert spec.hub is not None, "reference needs the hub (thread launcher)"
        self._hub = spec.hub

    def _allreduce(self, vec: np.ndarray, version: int) -> np.ndarray:
        out = self._hub.allreduce(self.rank, self.round, version, vec)
        self.last_round = self.round
        return out


def make_sync(spec: SyncSpec, rank: int) -> GradSync:
    """Build worker ``rank``'s end of the strategy named by ``spec.kind``."""
    cls = {"inswitch": InSwitchSync, "ps": PSSync, "allreduce": GlooSync,
           "reference": ReferenceSync}[spec.kind]
    return cls(spec, rank)


# --------------------------------------------------------------------------------------------
# Launcher side: start the shared piece of a strategy
# --------------------------------------------------------------------------------------------


class SyncBackend:
    """Starts and stops what a strategy needs outside the workers.

    ``inswitch``: a soft switch when no URL is given, then the aggregation job
    is configured (members, slots, elements per packet, dtype, mode,
    threshold, staleness). ``ps``: a :class:`ParameterServer` thread.
    ``allreduce``: the TCPStore the gloo ranks rendezvous through.
    ``reference``: a :class:`ReferenceHub`.

    Parameters
    ----------
    spec : SyncSpec
        The strategy; its ``url``/``address``/``hub`` are filled by :meth:`start`.
    elems : int or None
        Elements per switch packet (P); ``None`` takes the switch's largest,
        ``AGG_MAX_ELEMS`` (a soft switch started here takes jumbo datagrams,
        :data:`hostdrv.protocol.MAX_JUMBO_ELEMS`, as it runs on loopback).
    slots : int
        Switch slots (S).
    capacity : int
        Replay records of a soft switch this backend starts (the RTL default,
        so that in-network replay on the same switch has room).
    """

    def __init__(self, spec: SyncSpec, *, elems: int | None = None, slots: int = 64,
                 capacity: int = 16384) -> None:
        self.spec = spec
        self.elems = elems
        self.slots = slots
        self.capacity = capacity
        self.switch: object | None = None
        self.server: ParameterServer | None = None
        self.store: object | None = None
        self.own_switch = False

    def start(self) -> SyncSpec:
        """Bring the shared piece up and return the spec the workers use."""
        s = self.spec
        if s.kind == "inswitch":
            import hostdrv
            from hostdrv.protocol import MAX_JUMBO_ELEMS

            if s.url is None:
                self.switch = hostdrv.SoftSwitch(capacity=self.capacity,
                                                 max_elems=MAX_JUMBO_ELEMS)
                self.switch.start()
                self.own_switch = True
                s.url = self.switch.url
            ctl = hostdrv.SwitchControl(s.url)
            if self.elems is None:
                self.elems = ctl.read("AGG_MAX_ELEMS")
            ctl.configure_aggregation(
                members=s.world, slots=self.slots, elems=self.elems, dtype=s.dtype,
                mode=s.mode, threshold=s.threshold if s.mode == "async" else None,
                staleness=s.staleness)
            ctl.close()
        elif s.kind == "ps":
            self.server = ParameterServer(s.world, s.mode, s.threshold, s.staleness).start()
            s.address = self.server.address
        elif s.kind == "allreduce":
            import torch.distributed as dist

            self.store = dist.TCPStore("127.0.0.1", 0, None, is_master=True,
                                       wait_for_workers=False)
            s.address = ("127.0.0.1", self.store.port)
        else:
            s.hub = ReferenceHub(s.world, s.mode, s.threshold, s.staleness)
        return s

    def stop(self) -> None:
        """Tear down what :meth:`start` brought up."""
        if self.server is not None:
            self.server.stop()
        if self.own_switch and self.switch is not None:
            self.switch.stop()
        self.store = None


# --------------------------------------------------------------------------------------------
# Quantisation and flattening
# --------------------------------------------------------------------------------------------


class Quantizer:
    """Host int32 quantisation with a shared per-element scale.

    ``encode`` is ``round(x * scale)`` (round half to even) clamped to
    ``±(2^31 - 1) // N`` so that the sum of N contributions cannot wrap;
    ``decode`` divides the integer sum by the scale in float64. The sum of
    integers is exact and order-independent, hence reproducible bit for bit.
    """

    def __init__(self, scales: np.ndarray, world: int) -> None:
        self.scales = scales.astype(np.float64)
        self.limit = float((2**31 - 1) // world)

    def encode(self, x: np.ndarray) -> np.ndarray:
        """Float vector to int32 (rounded, clamped)."""
        q = np.rint(x.astype(np.float64) * self.scales)
        return np.clip(q, -self.limit, self.limit).astype(np.int32)

    def decode(self, q: np.ndarray) -> np.ndarray:
        """Integer sum back to float32."""
        return (q.astype(np.float64) / self.scales).astype(np.float32)


def flatten_grads(params: Sequence[torch.nn.Parameter]) -> np.ndarray:
    """Concatenate the gradients of ``params`` into one float32 vector (zeros if unset)."""
    return torch.cat([
        (p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in params
    ]).detach().numpy().astype(np.float32, copy=True)


def unflatten_into(tensors: Sequence[torch.Tensor], flat: np.ndarray) -> None:
    """Copy consecutive pieces of ``flat`` into ``tensors`` (in order, by numel)."""
    src = torch.from_numpy(np.ascontiguousarray(flat, dtype=np.float32))
    offset = 0
    for t in tensors:
        n = t.numel()
        t.copy_(src[offset:offset + n].view_as(t))
        offset += n


def params_digest(params: Sequence[torch.Tensor]) -> str:
    """A short hash of the exact bytes of ``params`` (to compare workers)."""
    h = hashlib.blake2b(digest_size=8)
    for p in params:
        h.update(p.detach().numpy().tobytes())
    return h.hexdigest()


# --------------------------------------------------------------------------------------------
# What the algorithms call: exchange + optimizer step
# --------------------------------------------------------------------------------------------


class StopBoard:
    """Where workers post the first round nobody should send any more (the minimum wins).

    A worker posts when it stops: at the end of its budget, or ``pipeline + 1``
    rounds after the result that said "solved". Workers that see every result
    reach the same decision on their own; the board is for an async in-switch
    straggler that skipped that result while catching up.

    Parameters
    ----------
    shared : multiprocessing.Value or None
        A ``Value('q', -1)`` shared with worker processes; None for threads.
    """

    def __init__(self, shared: Any = None) -> None:
        self._shared = shared
        self._lock = threading.Lock() if shared is None else None
        self._value = -1

    def propose(self, round_: int) -> None:
        """Post ``round_`` unless a smaller round is already posted."""
        if self._shared is not None:
            with self._shared.get_lock():
                if self._shared.value < 0 or round_ < self._shared.value:
                    self._shared.value = round_
        else:
            assert self._lock is not None
            with self._lock:
                if self._value < 0 or round_ < self._value:
                    self._value = round_

    def get(self) -> int | None:
        """The posted round, or None."""
        v = self._shared.value if self._shared is not None else self._value
        return None if v < 0 else int(v)


class _Courier:
    """A daemon thread running one strategy's rounds in order (async mode).

    A daemon rather than a ``ThreadPoolExecutor`` so that a round abandoned at
    shutdown (its peers stopped) cannot keep the process alive.
    """

    def __init__(self, fn: Callable[..., Any], name: str) -> None:
        self._fn = fn
        self._jobs: queue.SimpleQueue[tuple[Future[Any], tuple[Any, ...],
                                            dict[str, Any]] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def submit(self, *args: Any, **kwargs: Any) -> Future[Any]:
        """Queue one round; its future resolves to the round's result."""
        fut: Future[Any] = Future()
        self._jobs.put((fut, args, kwargs))
        return fut

    def close(self) -> None:
        """Let the thread finish once the queued rounds ran."""
        self._jobs.put(None)

    def _loop(self) -> None:
        while (job := self._jobs.get()) is not None:
            fut, args, kwargs = job
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(self._fn(*args, **kwargs))
            except BaseException as e:  # noqa: BLE001 - handed to the waiting worker
                fut.set_exception(e)


@dataclass
class ExchangeLog:
    """Per-worker record of the rounds an exchange applied."""

    rounds: int = 0
    comm_seconds: float = 0.0
    contributors: list[int] = field(default_factory=list)
    staleness: list[int] = field(default_factory=list)
    digests: list[str] = field(default_factory=list)
    abandoned: int = 0


class GradientExchange:
    """Synchronise gradients and step the optimizer, in sync or async mode.

    Call :meth:`step` where a single-process loop would call
    ``optimizer.step()``, after ``loss.backward()``. The vector sent each round
    is ``[gradients..., window_return_sum, window_count, 1]``; the last element
    sums to the number of contributors, the gradient sum is divided by it.

    In **sync** mode ``step`` blocks for the round and applies its result.
    In **async** mode the round runs on a background thread; ``step`` returns
    as soon as at most ``pipeline`` rounds are in flight, applying every
    result that has arrived, in order. A gradient may so be computed on
    weights up to ``pipeline`` rounds old; ``version`` (sent with it) is one
    past the last applied round, and its staleness is ``round - version``.

    The episode statistics (sum and count over each worker's last ``window``
    episodes) come back summed over the contributors; when their mean reaches
    ``target_return`` in the result of round r, every worker (all see the
    same results) keeps sending up to round ``r + pipeline`` and then stops:
    :attr:`stopped` turns true and :meth:`step` returns False without sending.

    Parameters
    ----------
    sync : GradSync
        The strategy.
    params : sequence of torch.nn.Parameter
        Parameters whose gradients are exchanged (fixed order).
    optimizer : torch.optim.Optimizer or sequence of them
        Each steps once per applied round (DDPG: actor and critic).
    max_grad_norm : float or None
        Clip the *averaged* gradient to this norm before stepping.
    target_return : float or None
        Stop rule; ``None`` trains the whole budget.
    window : int
        Episodes per worker in the statistics window.
    board : StopBoard or None
        Shared stop board (see :class:`StopBoard`).
    record_digests : bool
        Keep a hash of the parameters after every applied round (tests).
    after_step : callable or None
        Called after every optimizer step (target-network updates), so that
        it runs once per applied round on every worker.
    grace : float
        Seconds to wait at shutdown for an async round whose peers may have
        stopped before giving it up.
    """

    def __init__(self, sync: GradSync, params: Sequence[torch.nn.Parameter],
                 optimizer: torch.optim.Optimizer | Sequence[torch.optim.Optimizer], *,
                 max_grad_norm: float | None = None, target_return: float | None = None,
                 window: int = 5, board: StopBoard | None = None,
                 record_digests: bool = False, after_step: Callable[[], None] | None = None,
                 grace: float = 5.0) -> None:
        self.sync = sync
        self.spec = sync.spec
        self.params = list(params)
        self.optimizers = ([optimizer] if isinstance(optimizer, torch.optim.Optimizer)
                           else list(optimizer))
        self.after_step = after_step
        self.max_grad_norm = max_grad_norm
        self.target_return = target_return
        self.window = window
        self.board = board if board is not None else StopBoard()
        self.record_digests = record_digests
        self.grace = grace
        self.n_grad = sum(p.numel() for p in self.params)
        scales = np.full(self.n_grad + 3, self.spec.scale)
        scales[self.n_grad:] = (STATS_SCALE, 1.0, 1.0)
        self.quantizer = Quantizer(scales, self.spec.world) if self.spec.dtype == "int32" else None
        self.applied_round = -1  # global round of the last applied result
        self.stop_round: int | None = None
        self.solved_round: int | None = None
        self.last_mean_return: float | None = None
        self.log = ExchangeLog()
        self._done = False
        self._inflight: deque[tuple[int, Future[Any]]] = deque()
        self._courier = (_Courier(self._round_trip, f"sync{sync.rank}")
                         if self.spec.mode == "async" else None)

    @property
    def stopped(self) -> bool:
        """True once this worker sent its last round and applied what came back."""
        return self._done

    @property
    def next_round(self) -> int:
        """Global round the next :meth:`step` would send."""
        return self.applied_round + 1 + len(self._inflight)

    def _limit(self) -> int | None:
        posted = self.board.get()
        if self.stop_round is None:
            return posted
        return self.stop_round if posted is None else min(posted, self.stop_round)

    def step(self, window_sum: float = 0.0, window_count: int = 0) -> bool:
        """Exchange the current gradients and apply aggregated results.

        Returns
        -------
        bool
            False once the workers agreed to stop (nothing was sent).
        """
        if self._done:
            return False
        limit = self._limit()
        if limit is not None and self.next_round >= limit:
            self._finish()
            return False
        vec = np.concatenate([flatten_grads(self.params),
                              np.array([window_sum, window_count, 1.0], dtype=np.float32)])
        if self.quantizer is not None:
            vec = self.quantizer.encode(vec)
        version = self.applied_round + 1
        if self._courier is None:
            t0 = time.perf_counter()
            result = self._round_trip(vec, version)
            self.log.comm_seconds += time.perf_counter() - t0
            self._apply(result, 0)
        else:
            self._inflight.append((len(self._inflight),
                                   self._courier.submit(vec, version)))
            # Apply what has arrived; block while more than `pipeline` rounds are out.
            while self._inflight and (len(self._inflight) > self.spec.pipeline
                                      or self._inflight[0][1].done()):
                self._apply_oldest()
        return True

    def _finish(self) -> None:
        """Post the stop round, apply what is still in flight (bounded wait), stop."""
        self.board.propose(self.next_round)
        while self._inflight:
            staleness, fut = self._inflight[0]
            t0 = time.perf_counter()
            try:
                result = fut.result(timeout=self.grace)
            except FutureTimeout:
                # Its peers stopped before completing it (async straggler): give it up.
                self.log.abandoned += len(self._inflight)
                self._inflight.clear()
                break
            finally:
                self.log.comm_seconds += time.perf_counter() - t0
            self._inflight.popleft()
            self._apply(result, staleness)
        self._done = True

    def close(self) -> None:
        """Finish (end of budget: post the stop round), stop the courier, close the strategy."""
        if not self._done:
            self._finish()
        if self._courier is not None:
            self._courier.close()
        if not self.log.abandoned:
            self.sync.close()

    def _apply_oldest(self) -> None:
        staleness, fut = self._inflight.popleft()
        t0 = time.perf_counter()
        result = fut.result()
        self.log.comm_seconds += time.perf_counter() - t0
        self._apply(result, staleness)

    def _round_trip(self, vec: np.ndarray, version: int) -> tuple[np.ndarray, int]:
        """One round: the sum and the global round it belongs to."""
        total = self.sync.allreduce(vec, version=version)
        return total, self.sync.last_round

    def _apply(self, result: tuple[np.ndarray, int], staleness: int) -> None:
        total, round_ = result
        vec = self.quantizer.decode(total) if self.quantizer is not None else total
        contributors = max(1, int(round(float(vec[-1]))))
        grads = vec[:self.n_grad] / np.float32(contributors)
        with torch.no_grad():
            unflatten_into([p.grad if p.grad is not None else _zero_grad(p)
                            for p in self.params], grads)
        if self.max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(self.params, self.max_grad_norm)
        for opt in self.optimizers:
            opt.step()
        if self.after_step is not None:
            self.after_step()
        round_ = max(round_, self.applied_round + 1)
        self.applied_round = round_
        self.log.rounds += 1
        self.log.contributors.append(contributors)
        self.log.staleness.append(staleness)
        if self.record_digests:
            self.log.digests.append(params_digest(self.params))
        self._check_stop(round_, float(vec[-3]), float(vec[-2]), contributors)

    def _check_stop(self, round_: int, ret_sum: float, count: float, contributors: int) -> None:
        if count > 0:
            self.last_mean_return = ret_sum / count
        if (self.target_return is None or self.stop_round is not None or count <= 0
                or count < contributors * self.window - 0.5):
            return
        if ret_sum / count >= self.target_return:
            self.solved_round = round_
            self.stop_round = round_ + self.spec.pipeline + 1
            self.board.propose(self.stop_round)


def _zero_grad(p: torch.nn.Parameter) -> torch.Tensor:
    p.grad = torch.zeros_like(p)
    return p.grad


def default_window(world: int, episodes: int = 20) -> int:
    """Episodes per worker so that N windows cover ``episodes`` episodes."""
    return max(1, math.ceil(episodes / world))
