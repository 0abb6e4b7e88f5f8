"""The ``netrl`` torch.distributed backend: all-reduce through the switch.

``import hostdrv.torch_backend`` registers the backend; a script that trains
with gloo then only changes the backend name::

    import hostdrv.torch_backend  # noqa: F401  (registers "netrl")
    torch.distributed.init_process_group("netrl", init_method=..., rank=r, world_size=n)
    model = torch.nn.parallel.DistributedDataParallel(model)   # buckets summed in the switch

The backend torch's dispatcher gets for the CPU device (``pg._get_backend(cpu)``) is
a C++ ``c10d::Backend`` (``hostdrv/native/netrl_c10d.cpp``, built at first use by
:mod:`hostdrv.client.torch_c10d`): its ``allreduce``/``allreduce_coalesced`` call this
module's :class:`NetrlGroup`, every other collective runs on an internal gloo backend
made from the same store (keys prefixed ``gloo/``). With
``TORCH_DISTRIBUTED_DEBUG=DETAIL`` torch wraps it in its ``ProcessGroupWrapper``,
whose collective fingerprint checks (shape, dtype, op across ranks) then run.
What goes where (``docs/torch.md`` has the full story):

* ``all_reduce`` (and ``all_reduce_coalesced``) with ``SUM`` or ``AVG`` of float32
  or int32 CPU tensors is summed by the switch, in the group's own switch job (the
  world group and every ``new_group(backend="netrl")`` admit one,
  :mod:`hostdrv.client.torch_jobs`; a group granted no slots sums on the hosts, logged
  and counted as ``host_fallback``)
  (:class:`hostdrv.Aggregator`, one per rank, on a worker thread that runs the
  switch calls in issue order; ``async_op=True`` returns a work whose future
  completes when the sum arrives). DDP's gradient buckets are such calls.
* int32 is summed exactly on the fp32 switch: each element is split into a
  signed high and an unsigned low 16-bit half, both sent as fp32 (every
  partial sum of at most 256 halves, far more than the ranks the backend takes, is
  an integer below 2**24, so fp32 adds it exactly in any order); the halves'
  sums give the exact 64-bit total, wrapped to int32 for ``SUM`` (as
  two's-complement addition does) and divided by the world size, rounded
  toward zero, for ``AVG``. The switch's job stays fp32 throughout.
* A sum the switch cannot do (op ``MAX``/``MIN``/``PRODUCT``/..., a dtype other
  than float32/int32, a sparse tensor, tensors of mixed dtypes in one call)
  **falls back to gloo** and is counted in
  :meth:`NetrlGroup.stats`; the options' ``fallback`` policy can also warn once
  per reason or raise :class:`NetrlUnsupportedError`. ``AVG`` on the gloo path is
  gloo's ``SUM`` divided as above (gloo has no ``AVG``). A CUDA tensor raises.

Options: :class:`~hostdrv.client.torch_options.NetrlOptions` as ``pg_options``, the
``NETRL_*`` environment variables as defaults (``docs/torch.md``, "Options").

Fail fast: every rank of a switch group beats a heartbeat in the group's store
(``netrl/hb/<rank>``) and watches the others'; a rank whose heartbeat stops for
``dead_after`` seconds (5 by default) is declared dead and every survivor's
pending and next switch call fails with ``DistBackendError`` naming it.

Failures: a failed switch all-reduce raises ``DistBackendError`` and is not retried
(call ``k`` is step ``k − 1``: the next collective is the next step; ``docs/torch.md``).

More ranks than one switch aggregates (:data:`~hostdrv.wire.protocol.MAX_MEMBERS`):
the ranks sit on leaf switches of up to 7 under a root
(:mod:`hostdrv.client.torch_hierarchy`), soft switches rank 0 starts or the URLs of
``NetrlOptions.switch`` (root) and ``leaves``; above
:data:`~hostdrv.client.torch_hierarchy.MAX_RANKS` ranks :class:`ValueError` names the limit.
"""

from __future__ import annotations

import datetime
import json
import queue
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
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
    AllreduceOptions,
    PrefixStore,
    ProcessGroupGloo,
    ReduceOp,
    Store,
)
from torch.futures import Future

from hostdrv.client import torch_c10d, torch_jobs
from hostdrv.client.torch_hierarchy import Plan
from hostdrv.client.torch_hierarchy import configure as configure_hierarchy
from hostdrv.client.torch_lanes import div_toward_zero, join_int32, split_int32, wrap_int32
from hostdrv.client.torch_options import MAX_BACKOFF, NetrlOptions, default_window, retries_for
from hostdrv.client.torch_worker import (  # noqa: F401 - importable from here as before
    HEARTBEAT_JOIN,
    STORE_HEARTBEAT_KEY,
    STORE_LEFT_KEY,
    SwitchWorker,
    _live,
    _Outcome,
    _stop_heartbeats,
    _unwrap,
    _work,
)
from hostdrv.wire.protocol import MAX_JUMBO_ELEMS, MAX_MEMBERS

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
_CPU = torch.device("cpu")


class NetrlUnsupportedError(NetrlError, TypeError):
    """Fallback policy ``error`` (``strict``): an all-reduce the switch cannot sum."""


def _op_name(op: Any) -> str:
    for name in ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM"):
        if op == getattr(ReduceOp, name, None):
            return name
    return str(op)


def _avg_in_place(tensors: Sequence[torch.Tensor], n: int) -> None:
    """Divide summed tensors by ``n``: true division for floating point, rounding
    toward zero for integers."""
    with torch.no_grad():
        for t in tensors:
            if t.is_floating_point() or t.is_complex():
                t.div_(n)
            else:
                t.copy_(torch.div(t, n, rounding_mode="trunc"))


class NetrlGroup(SwitchWorker):
    """The Python side of a ``netrl`` group: the switch all-reduces (module docstring).

    The C++ backend torch dispatches to calls :meth:`allreduce`; every other
    collective goes to :attr:`gloo`. Made by the backend creator
    :func:`create_backend` (``init_process_group("netrl", ...)``); reach it with
    :func:`netrl_group`.

    Parameters
    ----------
    store:
        The group's store (already prefixed by torch).
    rank, size:
        This rank and the group size.
    timeout:
        The group's timeout: gloo's, the switch setup wait and (unless
        ``options.timeout``) how long a switch all-reduce retransmits before it fails.
    options:
        :class:`NetrlOptions` (``None`` fields from the environment).
    use_switch:
        Whether this group talks to the switch (a group without a switch job runs
        everything on gloo).

    Raises
    ------
    ValueError
        ``size`` above :data:`~hostdrv.client.torch_hierarchy.MAX_RANKS` with
        ``use_switch``, or a bad option.
    RuntimeError
        Rank 0 could not start or configure the switch (every rank raises it).
    """

    def __init__(self, store: Store, rank: int, size: int, timeout: datetime.timedelta,
                 options: NetrlOptions | None = None, *, use_switch: bool = True,
                 world: bool = True, name: str = "the world group") -> None:
        self.options = (options or NetrlOptions()).resolve()
        self.world = world
        """Whether this is the world (default) group (a subgroup finds its switch here)."""
        self.name = name
        """The group in log lines and errors."""
        self.job: torch_jobs.GroupJob | None = None
        """The group's switch job (page, ``JOB_ID``, slots), or why it has none and which
        host path it takes (:class:`~hostdrv.client.torch_jobs.GroupJob`; ``None``: a
        leaf/root hierarchy, or gloo only)."""
        self._lease: torch_jobs.JobLease | None = None  # rank 0: the job it admitted
        self._ps_server: Any = None  # rank 0 of a group on the host fallback
        self._plan: Plan | None = None
        if use_switch and world and size > MAX_MEMBERS:
            leaves = len(self.options.leaves) if self.options.leaves else None
            self._plan = Plan.for_size(size, leaves)
        self._rank, self._size = rank, size
        self.timeout = timeout
        self._store = store
        self._counts: Counter[str] = Counter()
        self._counts_lock = threading.Lock()
        self.gloo = ProcessGroupGloo(PrefixStore("gloo/", store), rank, size, timeout)
        """The internal gloo backend (every collective the switch does not run)."""
        self._switches: list[Any] = []  # the embedded SoftSwitches (rank 0 only)
        self._agg: Any = None
        self.url: str | None = None
        """The switch URL this rank talks to (``None``: gloo only)."""
        self._queue: queue.SimpleQueue[tuple[Callable[[], list[torch.Tensor]],
                                             Future[_Outcome]] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._submit_lock = threading.Lock()  # also guards _running and _dead
        self._running: Future[_Outcome] | None = None
        self._dead: str | None = None
        self._stop = threading.Event()
        self._watch: threading.Thread | None = None
        if use_switch:
            try:
                self._connect()
            except BaseException:
                self._release_job()
                raise
            self._thread = threading.Thread(target=self._serve, name=f"netrl-r{rank}",
                                            daemon=True)
            self._thread.start()
            self._watch = threading.Thread(target=self._heartbeat, name=f"netrl-hb-r{rank}",
                                           daemon=True)
            self._watch.start()
            _live.add(self)

    def rank(self) -> int:
        """This rank in the group."""
        return self._rank

    def size(self) -> int:
        """The group size."""
        return self._size

    # -- setup ----------------------------------------------------------------------
    def _connect(self) -> None:
        """Rank 0 sets the switch job up and publishes it; every rank joins."""
        if self._plan is None:  # one switch: the group's own job
            torch_jobs.connect(self, STORE_JOB_KEY)
        else:
            self._connect_hierarchy()

    def _rank0_publish(self, setup: Callable[[], str]) -> None:
        """Rank 0: run ``setup`` (returns what goes under :data:`STORE_JOB_KEY`) and publish
        it, or publish why it failed (the other ranks raise it) and raise."""
        store = self._store
        try:
            topology = setup()
        except Exception as e:
            store.set(STORE_ERROR_KEY, f"{type(e).__name__}: {e}")
            self._stop_embedded()
            raise
        store.set(STORE_JOB_KEY, topology)
        store.set(STORE_URL_KEY, self.url or "")

    def _await_rank0(self) -> str:
        """Ranks above 0: what rank 0 published under :data:`STORE_JOB_KEY`."""
        store, rank = self._store, self._rank
        deadline = time.monotonic() + self.timeout.total_seconds()
        while not store.check([STORE_URL_KEY]):
            if store.check([STORE_ERROR_KEY]):
                raise RuntimeError(f"netrl: rank 0 could not set the switch up: "
                                   f"{store.get(STORE_ERROR_KEY).decode()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"netrl: rank {rank} got no switch from rank 0 within "
                                   f"the group timeout {self.timeout}")
            time.sleep(0.02)
        return str(store.get(STORE_JOB_KEY).decode())

    def _make_aggregator(self, url: str, member: int, members: int, job: int,
                         page: int | None) -> None:
        from hostdrv.client.aggregator import Aggregator

        opt = self.options
        secs = opt.timeout or self.timeout.total_seconds()
        rto = float(opt.rto or 0.05)
        self._agg = Aggregator(url, worker=member, job=int(job), timeout=rto,
                               retries=retries_for(secs, rto), max_backoff=MAX_BACKOFF,
                               port=opt.member_port, window=opt.window, page=page)
        if opt.window is None:
            self._agg.window = default_window(self._agg.packet_elems, self._agg.slots, members)
        self.url = url

    def _connect_hierarchy(self) -> None:
        """Above one switch's members: the leaf/root hierarchy (job 0 of each switch)."""
        opt, plan = self.options, self._plan
        assert plan is not None

        def setup() -> str:
            url = opt.switch or self._start_embedded()
            if opt.switch and not opt.leaves:
                raise ValueError(
                    f"netrl: {self._size} ranks need leaf switches under the root "
                    f"{opt.switch}: give their URLs (NetrlOptions.leaves, "
                    "NETRL_LEAVES), or set neither for embedded soft switches")
            leaves = list(opt.leaves or [self._start_embedded() for _ in range(plan.leaves)])
            jobs = configure_hierarchy(url, leaves, plan, slots=opt.slots,
                                       packet_elems=opt.packet_elems)
            self.url = url
            return json.dumps(list(zip(leaves, jobs, strict=True)))

        if self._rank == 0:
            self._rank0_publish(setup)
        topology = json.loads(self._store.get(STORE_JOB_KEY).decode() if self._rank == 0
                              else self._await_rank0())
        leaf, member = plan.leaf_of(self._rank)
        url, job = topology[leaf]
        self._make_aggregator(url, member, plan.members(leaf), job, None)

    def _start_embedded(self) -> str:
        from hostdrv.switch.launch import start_soft_switch

        switch = start_soft_switch("127.0.0.1", 0, max_elems=MAX_JUMBO_ELEMS)
        self._switches.append(switch)
        return str(switch.url)

    def _stop_embedded(self) -> None:
        while self._switches:
            self._switches.pop().close()

    def _configure(self, url: str) -> int:
        """Configure the aggregation job for this group; returns the switch's ``JOB_ID``."""
        from hostdrv.client.control import SwitchControl

        with SwitchControl(url) as ctl:
            packet_elems = self.options.packet_elems or ctl.read("AGG_MAX_ELEMS")
            slots = self.options.slots or ctl.read("AGG_MAX_SLOTS")
            ctl.configure_aggregation(members=self._size, slots=slots, packet_elems=packet_elems,
                                      dtype="fp32", mode="sync")
            return ctl.read("JOB_ID")


    def _count(self, key: str, n: int = 1) -> int:
        with self._counts_lock:
            self._counts[key] += n
            return self._counts[key]

    def _sum(self, tensors: list[torch.Tensor], avg: bool, call: int) -> list[torch.Tensor]:
        """Sum ``tensors`` (one dtype, float32 or int32) through the switch, in place.

        ``call`` (from 1) numbers the switch calls in issue order; the call is step
        ``call − 1``, so a failed call is not retried: the next one is the next step."""
        agg = self._agg
        arrays = [t.detach().numpy() for t in tensors]
        sizes = [a.size for a in arrays]
        is_int = tensors[0].dtype == torch.int32
        if is_int:
            flat = split_int32(np.concatenate([a.reshape(-1) for a in arrays]))
        elif len(arrays) == 1:
            flat = arrays[0]
        else:
            flat = np.concatenate([a.reshape(-1) for a in arrays])
        # one float32 tensor (a DDP bucket): the sum is written into it, nothing allocated
        into = flat if not is_int and len(arrays) == 1 else None
        try:
            out = np.asarray(agg.allreduce(flat, step=call - 1, out=into)).reshape(-1)
        except Exception as e:
            raise dist.DistBackendError(
                f"netrl: all_reduce #{call} ({sum(sizes)} {tensors[0].dtype} elements) through "
                f"{self.url} failed on rank {self._rank} of {self._size}: "
                f"{type(e).__name__}: {e}. A rank that died or stopped calling all_reduce "
                "in the same order makes every other rank time out like this "
                f"(group timeout {self.timeout})") from e
        if is_int:
            total = join_int32(out)
            out = div_toward_zero(total, self._size).astype(np.int32) if avg \
                else wrap_int32(total)
        elif avg:
            out = np.divide(out, np.float32(self._size), out=out if into is not None else None)
        off = 0
        with torch.no_grad():
            for t, a, e in zip(tensors, arrays, sizes, strict=True):
                if into is None:
                    t.copy_(torch.from_numpy(out[off:off + e].reshape(a.shape)))
                off += e
        on_host = self.job is not None and self.job.why is not None
        self._count("host_fallback" if on_host else "switch_calls")
        self._count("host_elements" if on_host else "switch_elements", sum(sizes))
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

    def allreduce(self, tensors: list[torch.Tensor], opts: Any = None,
                  coalesced: bool = False) -> dist.Work:
        """``all_reduce`` (``coalesced``: ``all_reduce_coalesced``, the tensors in one
        switch call): the switch for SUM/AVG of float32/int32 CPU tensors, else gloo
        under the fallback policy. ``opts``: torch's ``AllreduceOptions`` or
        ``AllreduceCoalescedOptions`` (``None``: SUM)."""
        if opts is None:
            opts = AllreduceOptions()
        op = opts.reduceOp
        avg = _op_name(op) == "AVG"
        if self.job is not None and self.job.why is not None and self._agg is None:
            self._count("host_fallback")  # the group's host path is gloo (logged at setup)
            return self._gloo_allreduce(tensors, opts, coalesced, avg)
        why = self._why_not_switch(tensors, op)
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
        self._fall_back(why)
        return self._gloo_allreduce(tensors, opts, coalesced, avg)

    def _gloo_allreduce(self, tensors: list[torch.Tensor], opts: Any, coalesced: bool,
                        avg: bool) -> dist.Work:
        """The all-reduce on gloo (``AVG``: gloo's ``SUM``, then divided)."""
        gloo_call = self.gloo.allreduce_coalesced if coalesced else self.gloo.allreduce
        if not avg:
            return gloo_call(tensors, opts)
        opts.reduceOp = ReduceOp.SUM
        work = gloo_call(tensors, opts)
        size = self._size

        def divide(f: Future[list[torch.Tensor]]) -> list[torch.Tensor]:
            f.value()  # re-raises gloo's error
            _avg_in_place(tensors, size)
            return list(tensors)

        return torch_c10d.load().make_work(work.get_future().then(divide))

    def _fall_back(self, why: str) -> None:
        """Apply the fallback policy to a sum the switch cannot do."""
        policy = self.options.fallback
        if policy == "error":
            raise NetrlUnsupportedError(
                f"netrl: the switch cannot sum this all_reduce ({why}); it sums SUM/AVG of "
                "float32 or int32 CPU tensors on a group with a switch job. Set "
                "fallback='gloo' (or unset NETRL_STRICT/NETRL_FALLBACK) to run it on gloo")
        # once per reason and group: the first fallback of its count
        if self._count(f"fallback:{why}") == 1 and policy == "warn":
            warnings.warn(f"netrl: an all_reduce runs on gloo, not the switch ({why}); counted "
                          f"in stats() as fallback:{why}", RuntimeWarning, stacklevel=2)

    # -- introspection and teardown ---------------------------------------------------
    def stats(self) -> dict[str, int]:
        """Counters: ``calls``/``switch_calls`` (all-reduces through the switch),
        ``switch_elements`` (elements summed there), one ``fallback:<why>`` per
        reason an all-reduce went to gloo (``op=MAX``, ``dtype=float64``, ...), and on a
        group that got no switch job (:attr:`job` says why) ``host_fallback`` (its
        all-reduces summed on the hosts) and ``host_elements``."""
        with self._counts_lock:
            return dict(self._counts)

    @property
    def aggregator(self) -> Any:
        """This rank's :class:`hostdrv.Aggregator` (``None`` on a gloo-only group)."""
        return self._agg

    @property
    def dead(self) -> str | None:
        """Why the group's switch calls fail (a rank died or left), or ``None``."""
        return self._dead

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
                if item is not None and not item[1].done():
                    item[1].set_result(dist.DistBackendError(
                        "netrl: the process group was shut down before this all_reduce ran"))
            self._queue.put(None)
        self._stop.set()
        if self._agg is not None:
            try:
                self._store.set(f"{STORE_LEFT_KEY}{self._rank}", "1")
            except Exception:  # noqa: BLE001 - the store may be gone with another rank
                pass
        if self._thread is not None:
            # a call still retransmitting (its peers gone) is left to the daemon thread
            self._thread.join(SHUTDOWN_GRACE)
        if self._watch is not None and self._watch is not threading.current_thread():
            self._watch.join(HEARTBEAT_JOIN)
        if self._agg is not None and (self._thread is None or not self._thread.is_alive()):
            self._agg.close()
        if self._switches or self._agg is not None:
            try:
                done = self._store.add(STORE_CLOSED_KEY, 1)
                deadline = time.monotonic() + SHUTDOWN_GRACE
                holds = self._switches or self._lease is not None or self._ps_server is not None
                while holds and done < self._size and time.monotonic() < deadline:
                    time.sleep(0.02)
                    done = self._store.add(STORE_CLOSED_KEY, 0)
            except Exception:  # noqa: BLE001 - the store may be gone with another rank
                pass
        self._release_job()
        try:
            self.gloo.shutdown()
        except Exception:  # noqa: BLE001 - gloo may already be torn down
            pass

    def _release_job(self) -> None:
        """Rank 0: release the group's job, stop its parameter server and its switches."""
        lease, self._lease = self._lease, None
        if lease is not None:
            lease.release(torch_jobs.root_store(self._store), SHUTDOWN_GRACE)
        server, self._ps_server = self._ps_server, None
        if server is not None:
            server.close()
        self._stop_embedded()

    def _on_beat(self, now: float) -> None:
        """Each heartbeat: rank 0 renews its job's lease when due."""
        if self._lease is not None:
            self._lease.tick(now)

    def abort(self) -> None:
        """Like :meth:`shutdown` (nothing in flight can be cancelled on the switch)."""
        self.shutdown()


def create_backend(opts: Any, backend_options: Any = None) -> Any:
    """The backend creator torch calls (``Backend.register_backend(..., extended_api=True)``).

    ``opts`` is torch's ``_DistributedBackendOptions`` (store, group rank and size,
    timeout, ``global_ranks_in_group``: empty for the default group, the one that owns
    the switch job); ``backend_options`` is ``pg_options``: a :class:`NetrlOptions` or
    ``None``. Returns the C++ ``c10d::Backend`` (``NetrlBackend``) torch registers for
    the CPU device.

    Raises
    ------
    TypeError
        ``pg_options`` of another type.
    """
    if backend_options is not None and not isinstance(backend_options, NetrlOptions):
        raise TypeError(f"netrl: pg_options must be a hostdrv.torch_backend.NetrlOptions, "
                        f"not {type(backend_options).__name__}")
    native = torch_c10d.load()
    members = list(opts.global_ranks_in_group)
    name = "the world group" if not members else \
        f"group {getattr(opts, 'group_id', '?')} (world ranks {members})"
    group = NetrlGroup(opts.store, opts.group_rank, opts.group_size, opts.timeout,
                       backend_options, world=not members, name=name)
    return native.NetrlBackend(opts.group_rank, opts.group_size, group, group.gloo)


def netrl_group(group: Any = None) -> NetrlGroup:
    """The :class:`NetrlGroup` behind a ``netrl`` process group (default: the default
    group), for :meth:`~NetrlGroup.stats`, ``url``, ``aggregator``.

    Raises
    ------
    ValueError
        ``group`` is not a ``netrl`` group.
    """
    pg = dist.group.WORLD if group is None else group
    backend = pg._get_backend(_CPU)
    backend = getattr(backend, "wrapped_pg", backend)  # TORCH_DISTRIBUTED_DEBUG=DETAIL
    handler = getattr(backend, "handler", None)
    if not isinstance(handler, NetrlGroup):
        raise ValueError(f"netrl_group: {pg!r} is not a netrl group (its CPU backend is "
                         f"{type(backend).__name__})")
    return handler


def _register() -> None:
    if BACKEND_NAME.upper() not in dist.Backend._plugins:  # a re-import registers once
        dist.Backend.register_backend(BACKEND_NAME, create_backend, extended_api=True,
                                      devices=["cpu"])


_register()

__all__ = [
    "BACKEND_NAME",
    "NetrlGroup",
    "NetrlOptions",
    "NetrlUnsupportedError",
    "create_backend",
    "default_window",
    "netrl_group",
    "retries_for",
]
