"""The ``netrl`` torch.distributed backend: all-reduce through the switch.

``import hostdrv.torch_backend`` registers the backend; a script that trains
with gloo then only changes the backend name::

    import hostdrv.torch_backend  # noqa: F401  (registers "netrl")
    torch.distributed.init_process_group("netrl", init_method=..., rank=r, world_size=n)
    model = torch.nn.parallel.DistributedDataParallel(model)   # buckets summed in the switch

What goes where (``docs/torch.md`` has the full story):

* ``all_reduce`` (and ``allreduce_coalesced``) with ``SUM`` or ``AVG`` of
  float32 or int32 CPU tensors on the default group is summed by the switch
  (:class:`hostdrv.Aggregator`, one per rank, on a worker thread that runs
  the switch calls in issue order; ``async_op=True`` returns a
  :class:`NetrlWork` whose future completes when the sum arrives). DDP's
  gradient buckets are such calls.
* int32 is summed exactly on the fp32 switch: each element is split into a
  signed high and an unsigned low 16-bit half, both sent as fp32 (every
  partial sum of at most :data:`~hostdrv.wire.protocol.MAX_MEMBERS` halves is an
  integer below 2**24, so fp32 adds it exactly in any order); the halves'
  sums give the exact 64-bit total, wrapped to int32 for ``SUM`` (as
  two's-complement addition does) and divided by the world size, rounded
  toward zero, for ``AVG``. The switch's job stays fp32 throughout.
* Every other collective (broadcast, all_gather, all_gather_into_tensor,
  barrier, reduce, reduce_scatter, gather, scatter, all_to_all, send/recv,
  ...) runs on an internal gloo backend made from the
  same store (keys prefixed ``gloo/``), registered as this group's CPU backend.
* A sum the switch cannot do (op ``MAX``/``MIN``/``PRODUCT``/..., a dtype
  other than float32/int32, a non-CPU or sparse tensor, tensors of mixed
  dtypes in one call, any group other than the default one) **falls back to
  gloo** and is counted in :meth:`NetrlProcessGroup.stats`; with
  ``NETRL_STRICT=1`` it raises :class:`NetrlUnsupportedError` instead. ``AVG``
  on the gloo path is gloo's ``SUM`` divided as above (gloo has no ``AVG``).

Environment (read when a group is created):

``NETRL_SWITCH``
    Switch URL (``soft://``, ``sim://``, ``udp://``, ``eth://``), set on every
    rank or on none. Unset: rank 0 starts an embedded soft switch on loopback
    (jumbo packets, :data:`~hostdrv.wire.protocol.MAX_JUMBO_ELEMS` elements) and
    shares its URL through the store, so every rank must run on rank 0's
    machine; with several hosts set ``NETRL_SWITCH``.
``NETRL_STRICT``
    ``1``: raise instead of falling back to gloo.
``NETRL_ELEMS``, ``NETRL_SLOTS``
    Elements per packet (P) and slots (S) rank 0 configures; default the
    switch's largest (``AGG_MAX_ELEMS``, ``AGG_MAX_SLOTS``).
``NETRL_RTO``
    First retransmission timeout in seconds (0.05); it doubles up to 1 s, and
    a switch all-reduce gives up after the group's ``timeout``.
``NETRL_MEMBER_PORT``
    One-hot switch port this rank's member entry names (default ``1 << rank``,
    the soft switch's one virtual port per member).
``NETRL_WINDOW``
    Chunks in flight per rank (default :func:`default_window`: all the slots,
    unless every rank's window together would overflow a 4 MiB socket buffer).

Failures: a switch all-reduce that fails (a rank died or stopped calling, a length
mismatch, ...) raises ``DistBackendError`` on that rank and is not retried: the
backend numbers its switch calls in issue order (the same on every rank) and sends
call ``k`` as step id ``k − 1`` (:meth:`hostdrv.Aggregator.allreduce`'s ``step``),
so the next collective is the next step. A rank whose call timed out then starts it
in a new epoch; a peer that did complete the failed call (it came late, after this
rank gave up) follows that epoch after its own timeout, and the switch never sums
chunks of two steps (``docs/protocol.md`` section 4, "Epochs, failures and rejoin").

Limits: one switch aggregates at most :data:`~hostdrv.wire.protocol.MAX_MEMBERS`
ranks; a larger world raises :class:`ValueError` naming the limit
(hierarchical leaf/root aggregation is not done by this backend).
"""

from __future__ import annotations

import datetime
import os
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hostdrv.errors import NetrlError
from hostdrv.extras import EXTRAS, MissingExtraError

try:
    import torch
except ModuleNotFoundError as e:  # the core install: name the extra that brings torch
    raise MissingExtraError("torch", "torch", EXTRAS["torch"]) from e
import torch.distributed as dist
from torch._C._distributed_c10d import (
    AllreduceCoalescedOptions,
    AllreduceOptions,
    PrefixStore,
    ProcessGroup,
    ProcessGroupGloo,
    ReduceOp,
    Store,
)
from torch.futures import Future

from hostdrv.wire.net import SOCKET_BUFFER
from hostdrv.wire.protocol import HEADER_LEN, MAX_JUMBO_ELEMS, MAX_MEMBERS

BACKEND_NAME = "netrl"
"""The name ``init_process_group`` takes."""

STORE_URL_KEY = "netrl/url"
"""Store key (under the group's prefix) where rank 0 publishes the switch URL once the
job is configured."""
STORE_JOB_KEY = "netrl/job"
"""Store key of the switch's ``JOB_ID``."""
STORE_ERROR_KEY = "netrl/error"
"""Store key where rank 0 publishes why it could not set the switch up."""
STORE_CLOSED_KEY = "netrl/closed"
"""Store counter of ranks that shut their group down (rank 0 stops an embedded switch
once every rank did, or after :data:`SHUTDOWN_GRACE` seconds)."""
SHUTDOWN_GRACE = 2.0
"""Seconds rank 0 waits for the other ranks to shut down before stopping its switch."""

_SWITCH_DTYPES = (torch.float32, torch.int32)
_MAX_BACKOFF = 1.0
_HALF = 1 << 16


class NetrlUnsupportedError(NetrlError, TypeError):
    """``NETRL_STRICT=1``: an all-reduce the switch cannot sum (op, dtype, device, group)."""


def _env_int(env: Mapping[str, str], name: str) -> int | None:
    raw = env.get(name, "").strip()
    if not raw:
        return None
    try:
        return int(raw, 0)
    except ValueError:
        raise ValueError(f"bad {name}={raw!r}: must be an integer") from None


@dataclass(frozen=True)
class NetrlConfig:
    """What a ``netrl`` group reads from the environment (module docstring).

    Attributes
    ----------
    switch:
        ``NETRL_SWITCH``, or ``None`` for an embedded soft switch on rank 0.
    strict:
        ``NETRL_STRICT=1``: raise :class:`NetrlUnsupportedError` instead of falling back.
    elems, slots:
        ``NETRL_ELEMS``/``NETRL_SLOTS``: P and S rank 0 configures (``None``: the
        switch's largest).
    rto:
        ``NETRL_RTO``: first retransmission timeout (seconds).
    member_port:
        ``NETRL_MEMBER_PORT``: one-hot port of this rank's member entry (``None``:
        ``1 << rank``).
    window:
        ``NETRL_WINDOW``: chunks in flight per rank (``None``: :func:`default_window`).
    """

    switch: str | None = None
    strict: bool = False
    elems: int | None = None
    slots: int | None = None
    rto: float = 0.05
    member_port: int | None = None
    window: int | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> NetrlConfig:
        """Read the ``NETRL_*`` variables (``env`` defaults to :data:`os.environ`).

        Raises
        ------
        ValueError
            A variable that does not parse (named, with its value).
        """
        env = os.environ if env is None else env
        strict = env.get("NETRL_STRICT", "").strip().lower()
        if strict not in ("", "0", "1", "false", "true", "no", "yes"):
            raise ValueError(f"bad NETRL_STRICT={strict!r}: must be 0 or 1")
        rto_raw = env.get("NETRL_RTO", "").strip()
        try:
            rto = float(rto_raw) if rto_raw else 0.05
        except ValueError:
            raise ValueError(f"bad NETRL_RTO={rto_raw!r}: must be seconds") from None
        if not rto > 0:
            raise ValueError(f"bad NETRL_RTO={rto_raw!r}: must be positive")
        return cls(switch=env.get("NETRL_SWITCH", "").strip() or None,
                   strict=strict in ("1", "true", "yes"),
                   elems=_env_int(env, "NETRL_ELEMS"), slots=_env_int(env, "NETRL_SLOTS"),
                   rto=rto, member_port=_env_int(env, "NETRL_MEMBER_PORT"),
                   window=_env_int(env, "NETRL_WINDOW"))


def retries_for(timeout: float, rto: float, max_backoff: float = _MAX_BACKOFF) -> int:
    """Retransmissions after which an :class:`~hostdrv.Aggregator` gives up no sooner
    than ``timeout`` seconds (its timer starts at ``rto`` and doubles up to
    ``max_backoff``)."""
    waited, k = rto, 0
    while waited < timeout:
        k += 1
        waited += min(rto * (1 << min(k, 30)), max(max_backoff, rto))
    return k


_Outcome = list[torch.Tensor] | BaseException
"""What a switch call ends with: the reduced tensors, or the error."""


def _unwrap(source: Future[_Outcome]) -> list[torch.Tensor]:
    outcome = source.value()
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome


def default_window(elems: int, slots: int, members: int,
                   buffer: int = SOCKET_BUFFER) -> int:
    """Chunks each rank keeps in flight unless ``NETRL_WINDOW`` says: at most ``slots``,
    and few enough that every member's window together fits in ``buffer`` bytes (the
    soft switch's socket buffer, :data:`hostdrv.wire.net.SOCKET_BUFFER`): a burst above
    it is dropped by the kernel and costs a retransmission timeout."""
    per_chunk = members * (HEADER_LEN + 4 * elems)
    return max(1, min(slots, buffer // per_chunk))


class NetrlWork(dist.Work):
    """The :class:`torch.distributed.Work` of a switch all-reduce.

    Completes when the sum arrived; :meth:`wait` re-raises the error of a
    failed call (a switch timeout when a rank died, a length mismatch, ...).

    Parameters
    ----------
    source:
        Completes (``set_result``) with the reduced tensors or with the exception
        object. The future handed to torch (:meth:`get_future`, which DDP's C++
        reducer waits on) is ``source.then(...)``, which fails with a C++
        ``RuntimeError`` for an exception: ``Future.set_exception`` would instead
        complete it *successfully* with a Python exception as its value, which
        the reducer cannot use.
    """

    def __init__(self, source: Future[_Outcome]) -> None:
        super().__init__()
        self._source = source
        self.future: Future[list[torch.Tensor]] = source.then(_unwrap)
        done = self._done = threading.Event()
        # the callback holds the event, not self: no reference cycle through the C++
        # future while the call runs
        self.future.add_done_callback(lambda _f: done.set())

    def wait(self, timeout: datetime.timedelta = datetime.timedelta(0)) -> bool:
        """Block until the sum arrived (or ``timeout``, when nonzero, passed).

        Raises
        ------
        torch.distributed.DistBackendError
            The all-reduce failed (``__cause__``: the hostdrv error), or ``timeout``
            passed first.
        """
        seconds = timeout.total_seconds()
        if seconds > 0 and not self._done.wait(seconds):
            raise dist.DistBackendError(f"netrl all_reduce still running after {seconds} s")
        self._done.wait()
        outcome = self._source.value()
        if isinstance(outcome, BaseException):
            raise outcome
        return True

    def get_future(self) -> Future[list[torch.Tensor]]:
        """The future of the reduced tensors (what DDP's reducer waits on)."""
        return self.future

    def is_completed(self) -> bool:
        """Whether the all-reduce finished (successfully or not)."""
        return self._done.is_set()

    def is_success(self) -> bool:
        """Whether the all-reduce finished without an error."""
        return self._done.is_set() and not isinstance(self._source.value(), BaseException)

    def exception(self) -> BaseException | None:
        """The error of a failed all-reduce (``None`` while running or on success)."""
        if not self._done.is_set():
            return None
        outcome = self._source.value()
        return outcome if isinstance(outcome, BaseException) else None

    def result(self) -> list[torch.Tensor]:
        """The reduced tensors (raises the error of a failed all-reduce)."""
        self.wait()
        return _unwrap(self._source)


def _op_name(op: Any) -> str:
    for name in ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM"):
        if op == getattr(ReduceOp, name, None):
            return name
    return str(op)


def _split_int32(x: np.ndarray) -> np.ndarray:
    """fp32 lanes ``[hi..., lo...]`` of int32 ``x``: ``x = hi * 2**16 + lo`` with
    ``hi`` in [-2**15, 2**15) and ``lo`` in [0, 2**16), both exact in fp32."""
    flat = x.reshape(-1)
    out = np.empty(2 * flat.size, dtype=np.float32)
    out[:flat.size] = flat >> 16
    out[flat.size:] = flat & (_HALF - 1)
    return out


def _join_int32(lanes: np.ndarray) -> np.ndarray:
    """The exact int64 totals from the summed lanes of :func:`_split_int32`."""
    e = lanes.size // 2
    hi = lanes[:e].astype(np.int64)
    lo = lanes[e:].astype(np.int64)
    return hi * _HALF + lo


def _wrap_int32(total: np.ndarray) -> np.ndarray:
    """``total`` modulo 2**32 as int32 (two's-complement wrap-around)."""
    return ((total + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)


def _div_toward_zero(total: np.ndarray, n: int) -> np.ndarray:
    """``total / n`` rounded toward zero (C, and NCCL's integer ``AVG``)."""
    q = np.abs(total) // n
    return np.where(total < 0, -q, q)


def _avg_in_place(tensors: Sequence[torch.Tensor], n: int) -> None:
    """Divide summed tensors by ``n``: true division for floating point, rounding
    toward zero for integers."""
    with torch.no_grad():
        for t in tensors:
            if t.is_floating_point() or t.is_complex():
                t.div_(n)
            else:
                t.copy_(torch.div(t, n, rounding_mode="trunc"))


class NetrlProcessGroup(ProcessGroup):
    """A process group whose all-reduce sums run in the switch (module docstring).

    Made by the backend creator :func:`create_process_group`, i.e. by
    ``init_process_group("netrl", ...)``; not meant to be built by hand.

    Parameters
    ----------
    store:
        The group's store (already prefixed by torch).
    rank, size:
        This rank and the group size.
    timeout:
        The group's timeout: gloo's, the switch setup wait and how long a switch
        all-reduce retransmits before it fails.
    config:
        Environment settings (default :meth:`NetrlConfig.from_env`).
    use_switch:
        Whether this group talks to the switch (the default group does; other
        groups run everything on gloo).

    Raises
    ------
    ValueError
        ``size`` above :data:`~hostdrv.wire.protocol.MAX_MEMBERS` with ``use_switch``,
        or a bad ``NETRL_*`` setting.
    RuntimeError
        Rank 0 could not start or configure the switch (every rank raises it).
    """

    def __init__(self, store: Store, rank: int, size: int, timeout: datetime.timedelta,
                 config: NetrlConfig | None = None, *, use_switch: bool = True) -> None:
        config = NetrlConfig.from_env() if config is None else config
        if use_switch and size > MAX_MEMBERS:
            raise ValueError(
                f"netrl: world_size={size} is above the {MAX_MEMBERS} members one switch "
                f"aggregates (hostdrv.wire.protocol.MAX_MEMBERS = {MAX_MEMBERS}); hierarchical "
                "(leaf/root) aggregation is not done by the torch backend: use at most "
                f"{MAX_MEMBERS} ranks per process group, or the gloo backend")
        super().__init__(rank, size)
        self._rank, self._size = rank, size
        self.config = config
        self.timeout = timeout
        self._store = store
        self._counts: Counter[str] = Counter()
        self._counts_lock = threading.Lock()
        self._gloo = ProcessGroupGloo(PrefixStore("gloo/", store), rank, size, timeout)
        self._register_backend(torch.device("cpu"), ProcessGroup.BackendType.GLOO, self._gloo)
        self._switch: Any = None  # the embedded SoftSwitch (rank 0 only)
        self._agg: Any = None
        self.url: str | None = None
        """The switch URL this rank talks to (``None``: gloo only)."""
        self._queue: queue.SimpleQueue[tuple[Callable[[], list[torch.Tensor]],
                                             Future[_Outcome]] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._submit_lock = threading.Lock()
        if use_switch:
            self._connect()
            self._thread = threading.Thread(target=self._serve, name=f"netrl-r{rank}",
                                            daemon=True)
            self._thread.start()

    # -- setup ----------------------------------------------------------------------
    def _connect(self) -> None:
        """Rank 0 starts/configures the switch and publishes it; every rank joins."""
        from hostdrv.client.aggregator import Aggregator

        cfg, store, rank = self.config, self._store, self._rank
        if rank == 0:
            try:
                url = cfg.switch or self._start_embedded()
                job = self._configure(url)
            except Exception as e:
                store.set(STORE_ERROR_KEY, f"{type(e).__name__}: {e}")
                self._stop_embedded()
                raise
            store.set(STORE_JOB_KEY, str(job))
            store.set(STORE_URL_KEY, url)
        else:
            deadline = time.monotonic() + self.timeout.total_seconds()
            while not store.check([STORE_URL_KEY]):
                if store.check([STORE_ERROR_KEY]):
                    raise RuntimeError(f"netrl: rank 0 could not set the switch up: "
                                       f"{store.get(STORE_ERROR_KEY).decode()}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"netrl: rank {rank} got no switch from rank 0 within "
                                       f"the group timeout {self.timeout}")
                time.sleep(0.02)
            url = cfg.switch or store.get(STORE_URL_KEY).decode()
            job = int(store.get(STORE_JOB_KEY).decode())
        secs = self.timeout.total_seconds()
        self._agg = Aggregator(url, worker=rank, job=job, timeout=cfg.rto,
                               retries=retries_for(secs, cfg.rto), max_backoff=_MAX_BACKOFF,
                               port=cfg.member_port, window=cfg.window)
        if cfg.window is None:
            self._agg.window = default_window(self._agg.elems, self._agg.slots, self._size)
        self.url = url

    def _start_embedded(self) -> str:
        from hostdrv.switch.launch import start_soft_switch

        self._switch = start_soft_switch("127.0.0.1", 0, max_elems=MAX_JUMBO_ELEMS)
        return str(self._switch.url)

    def _stop_embedded(self) -> None:
        if self._switch is not None:
            self._switch.close()
            self._switch = None

    def _configure(self, url: str) -> int:
        """Configure the aggregation job for this group; returns the switch's ``JOB_ID``."""
        from hostdrv.client.control import SwitchControl

        with SwitchControl(url) as ctl:
            elems = self.config.elems or ctl.read("AGG_MAX_ELEMS")
            slots = self.config.slots or ctl.read("AGG_MAX_SLOTS")
            ctl.configure_aggregation(members=self._size, slots=slots, elems=elems,
                                      dtype="fp32", mode="sync")
            return ctl.read("JOB_ID")

    # -- the switch worker ----------------------------------------------------------
    def _serve(self) -> None:
        """Run the queued switch calls in issue order (the same order on every rank)."""
        while True:
            item = self._queue.get()
            if item is None:
                return
            fn, fut = item
            outcome: _Outcome
            try:
                outcome = fn()
            except BaseException as e:  # noqa: BLE001 - handed to the waiter
                outcome = e
            fut.set_result(outcome)
            del item, fn, fut, outcome  # do not keep the last call's tensors alive

    def _submit(self, fn: Callable[[], list[torch.Tensor]]) -> NetrlWork:
        fut: Future[_Outcome] = Future()
        with self._submit_lock:
            if self._closed:
                fut.set_result(dist.DistBackendError("netrl: the process group is shut down"))
            else:
                self._queue.put((fn, fut))
        return NetrlWork(fut)

    def _count(self, key: str, n: int = 1) -> None:
        with self._counts_lock:
            self._counts[key] += n

    def _sum(self, tensors: list[torch.Tensor], avg: bool, call: int) -> list[torch.Tensor]:
        """Sum ``tensors`` (one dtype, float32 or int32) through the switch, in place.

        ``call`` (from 1) numbers the switch calls in issue order; the call is step
        ``call − 1``, so a failed call is not retried: the next one is the next step."""
        agg = self._agg
        arrays = [t.detach().numpy() for t in tensors]
        sizes = [a.size for a in arrays]
        is_int = tensors[0].dtype == torch.int32
        if is_int:
            flat = _split_int32(np.concatenate([a.reshape(-1) for a in arrays]))
        elif len(arrays) == 1:
            flat = arrays[0]
        else:
            flat = np.concatenate([a.reshape(-1) for a in arrays])
        try:
            out = np.asarray(agg.allreduce(flat, step=call - 1)).reshape(-1)
        except Exception as e:
            raise dist.DistBackendError(
                f"netrl: all_reduce #{call} ({sum(sizes)} {tensors[0].dtype} elements) through "
                f"{self.url} failed on rank {self._rank} of {self._size}: "
                f"{type(e).__name__}: {e}. A rank that died or stopped calling all_reduce "
                "in the same order makes every other rank time out like this "
                f"(group timeout {self.timeout})") from e
        if is_int:
            total = _join_int32(out)
            out = _div_toward_zero(total, self._size).astype(np.int32) if avg \
                else _wrap_int32(total)
        elif avg:
            out = out / np.float32(self._size)
        off = 0
        with torch.no_grad():
            for t, a, e in zip(tensors, arrays, sizes, strict=True):
                t.copy_(torch.from_numpy(out[off:off + e].reshape(a.shape)))
                off += e
        self._count("switch_calls")
        self._count("switch_elements", sum(sizes))
        return tensors

    # -- all-reduce -------------------------------------------------------------------
    def _why_not_switch(self, tensors: Sequence[torch.Tensor], op: Any) -> str | None:
        """Why the switch cannot sum this call (``None`` when it can)."""
        if self._agg is None:
            return "group=not-default"
        name = _op_name(op)
        if name not in ("SUM", "AVG"):
            return f"op={name}"
        if not tensors:
            return "no-tensors"
        dtype = tensors[0].dtype
        for t in tensors:
            if t.device.type != "cpu":
                return f"device={t.device.type}"
            if t.layout != torch.strided:
                return f"layout={t.layout}"
            if t.dtype not in _SWITCH_DTYPES:
                return f"dtype={str(t.dtype).removeprefix('torch.')}"
            if t.dtype != dtype:
                return "mixed-dtypes"
        return None

    def _allreduce(self, tensors: list[torch.Tensor], op: Any,
                   gloo_call: Callable[[Any], dist.Work], gloo_opts: Any) -> dist.Work:
        why = self._why_not_switch(tensors, op)
        avg = _op_name(op) == "AVG"
        if why is None:
            work_tensors = [t if t.is_contiguous() else t.contiguous() for t in tensors]
            with self._counts_lock:
                self._counts["calls"] += 1
                call = self._counts["calls"]

            def run() -> list[torch.Tensor]:
                self._sum(work_tensors, avg, call)
                with torch.no_grad():
                    for t, w in zip(tensors, work_tensors, strict=True):
                        if t is not w:
                            t.copy_(w)
                return list(tensors)

            return self._submit(run)
        if self.config.strict:
            raise NetrlUnsupportedError(
                f"netrl: the switch cannot sum this all_reduce ({why}); it sums SUM/AVG of "
                "float32 or int32 CPU tensors on the default group. Unset NETRL_STRICT to "
                "run it on gloo")
        self._count(f"fallback:{why}")
        if not avg:
            return gloo_call(gloo_opts)
        gloo_opts.reduceOp = ReduceOp.SUM
        work = gloo_call(gloo_opts)
        size = self._size

        def divide(f: Future[list[torch.Tensor]]) -> _Outcome:
            try:
                f.wait()
            except Exception as e:  # noqa: BLE001 - handed to the waiter
                return e
            _avg_in_place(tensors, size)
            return list(tensors)

        return NetrlWork(work.get_future().then(divide))

    def allreduce(self, tensors: list[torch.Tensor],
                  opts: AllreduceOptions | None = None) -> dist.Work:
        """``all_reduce``: switch for SUM/AVG of float32/int32 CPU tensors, else gloo."""
        opts = AllreduceOptions() if opts is None else opts
        return self._allreduce(tensors, opts.reduceOp,
                               lambda o: self._gloo.allreduce(tensors, o), opts)

    def allreduce_coalesced(self, tensors: list[torch.Tensor],
                            opts: AllreduceCoalescedOptions | None = None) -> dist.Work:
        """``all_reduce_coalesced``: the tensors in one switch call (same rule as
        :meth:`allreduce`)."""
        opts = AllreduceCoalescedOptions() if opts is None else opts
        return self._allreduce(tensors, opts.reduceOp,
                               lambda o: self._gloo.allreduce_coalesced(tensors, o), opts)

    # -- introspection and teardown ---------------------------------------------------
    def getBackendName(self) -> str:  # noqa: N802 - the C++ virtual's name
        """``"netrl"``."""
        return BACKEND_NAME

    def stats(self) -> dict[str, int]:
        """Counters: ``calls``/``switch_calls`` (all-reduces through the switch),
        ``switch_elements`` (elements summed there) and one ``fallback:<why>`` per
        reason an all-reduce went to gloo (``op=MAX``, ``dtype=float64``, ...)."""
        with self._counts_lock:
            return dict(self._counts)

    @property
    def aggregator(self) -> Any:
        """This rank's :class:`hostdrv.Aggregator` (``None`` on a gloo-only group)."""
        return self._agg

    def shutdown(self) -> None:
        """Stop the switch worker and close the aggregator; rank 0 stops its embedded
        switch once every rank shut down (or after :data:`SHUTDOWN_GRACE` s).

        Calls queued but not started fail (``DistBackendError``); one still
        retransmitting gets :data:`SHUTDOWN_GRACE` s to finish, then is left to
        its daemon thread."""
        with self._submit_lock:
            if self._closed:
                return
            self._closed = True
            while True:  # fail the calls that have not started
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    item[1].set_result(dist.DistBackendError(
                        "netrl: the process group was shut down before this all_reduce ran"))
            self._queue.put(None)
        if self._thread is not None:
            # a call still retransmitting (its peers gone) is left to the daemon thread
            self._thread.join(SHUTDOWN_GRACE)
        if self._agg is not None and (self._thread is None or not self._thread.is_alive()):
            self._agg.close()
        if self._switch is not None or self._agg is not None:
            try:
                done = self._store.add(STORE_CLOSED_KEY, 1)
                deadline = time.monotonic() + SHUTDOWN_GRACE
                while self._switch is not None and done < self._size \
                        and time.monotonic() < deadline:
                    time.sleep(0.02)
                    done = self._store.add(STORE_CLOSED_KEY, 0)
            except Exception:  # noqa: BLE001 - the store may be gone with another rank
                pass
        self._stop_embedded()
        try:
            self._gloo.shutdown()
        except Exception:  # noqa: BLE001 - gloo may already be torn down
            pass

    def abort(self) -> None:
        """Like :meth:`shutdown` (nothing in flight can be cancelled on the switch)."""
        self.shutdown()


def create_process_group(opts: Any, backend_options: Any = None) -> NetrlProcessGroup:
    """The backend creator torch calls (``Backend.register_backend(..., extended_api=True)``).

    ``opts`` is torch's ``_DistributedBackendOptions`` (store, group rank and
    size, timeout, ``global_ranks_in_group``: empty for the default group, the
    one that talks to the switch); ``backend_options`` (``pg_options``) is
    unused.
    """
    del backend_options
    default_group = not list(opts.global_ranks_in_group)
    return NetrlProcessGroup(opts.store, opts.group_rank, opts.group_size, opts.timeout,
                             use_switch=default_group)


def _register() -> None:
    if BACKEND_NAME.upper() not in dist.Backend._plugins:  # a re-import registers once
        dist.Backend.register_backend(BACKEND_NAME, create_process_group, extended_api=True,
                                      devices=["cpu"])


_register()

__all__ = [
    "BACKEND_NAME",
    "NetrlConfig",
    "NetrlProcessGroup",
    "NetrlUnsupportedError",
    "NetrlWork",
    "create_process_group",
    "default_window",
    "retries_for",
]
