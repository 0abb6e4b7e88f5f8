"""The worker side of a ``netrl`` group (:class:`~hostdrv.client.torch_backend.NetrlGroup`):
the thread that runs its switch calls in issue order, and the heartbeat that fails them
fast when a rank dies.

:class:`SwitchWorker` is the mixin :class:`~hostdrv.client.torch_backend.NetrlGroup` is
built on: ``_submit`` queues a switch call and returns its c10d work, ``_serve`` (the
worker thread) runs the calls, ``_heartbeat`` (a thread of its own) beats
``netrl/hb/<rank>`` in the group's store and watches the other ranks', and
``_declare_dead`` fails the running, every queued and every later call naming the rank
that died or left. Every name stays importable from :mod:`hostdrv.client.torch_backend`.
"""

from __future__ import annotations

import atexit
import queue
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import Store
from torch.futures import Future

from hostdrv.client import torch_c10d

STORE_HEARTBEAT_KEY = "netrl/hb/"
"""Store counter prefix (``netrl/hb/<rank>``) each rank increments every heartbeat."""
STORE_LEFT_KEY = "netrl/left/"
"""Store key prefix (``netrl/left/<rank>``) a rank sets when it shuts its group down."""

_Outcome = list[torch.Tensor] | BaseException
"""What a switch call ends with: the reduced tensors, or the error."""


def _unwrap(source: Future[_Outcome]) -> list[torch.Tensor]:
    outcome = source.value()
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome


def _work(source: Future[_Outcome]) -> dist.Work:
    """The c10d work of a switch call (the extension's ``NetrlWork``): its future fails
    with a C++ error when ``source`` completes with an exception
    (``Future.set_exception`` would complete it *successfully* with a Python exception
    as its value, which DDP's reducer cannot use), and its ``wait()`` raises
    ``DistBackendError`` then (torch's future-wrapping work would return)."""
    return torch_c10d.load().make_work(source.then(_unwrap))


HEARTBEAT_JOIN = 30.0
"""Seconds shutdown and interpreter exit wait for a heartbeat thread to leave its store
call (milliseconds normally; seconds on a loaded machine: a thread still in the call at
finalization would abort the process)."""

_live: weakref.WeakSet[SwitchWorker] = weakref.WeakSet()
"""Groups whose heartbeat thread runs (stopped at interpreter exit)."""


@atexit.register
def _stop_heartbeats() -> None:
    """Stop every heartbeat thread before the interpreter finalizes: a daemon thread
    that comes back from a store call (C++, GIL released) during finalization is ended
    by the interpreter with a forced unwind, and the C++ frames turn that into
    ``std::terminate`` (an abort at exit when a script never destroys its group)."""
    groups = list(_live)
    for g in groups:
        g._stop.set()
    for g in groups:
        if g._watch is not None:
            g._watch.join(HEARTBEAT_JOIN)



class SwitchWorker:
    """The worker thread and the heartbeat of a switch group (a mixin: the group sets the
    attributes below before it starts the threads)."""

    options: Any
    url: str | None
    _rank: int
    _size: int
    _store: Store
    _queue: queue.SimpleQueue[tuple[Callable[[], list[torch.Tensor]], Future[_Outcome]] | None]
    _submit_lock: threading.Lock
    _running: Future[_Outcome] | None
    _dead: str | None
    _closed: bool
    _stop: threading.Event
    _watch: threading.Thread | None

    def _on_beat(self, now: float) -> None:
        """Called on the heartbeat thread every beat (the group renews its job's lease)."""

    # -- fail fast: heartbeats in the store ---------------------------------------------
    def _heartbeat(self) -> None:
        """Beat ``netrl/hb/<rank>`` every ``heartbeat`` s and watch the other ranks':
        one whose counter has not moved for ``dead_after`` s is declared dead."""
        opt, store = self.options, self._store
        period, dead_after = float(opt.heartbeat or 0.5), float(opt.dead_after or 5.0)
        others = [r for r in range(self._size) if r != self._rank]
        seen = {r: -1 for r in others}
        moved = dict.fromkeys(others, time.monotonic())
        store_ok = last = time.monotonic()
        while not self._stop.wait(period):
            now = time.monotonic()
            # A tick that came late (this thread starved, or the store's host slow to answer)
            # means the machine is overloaded, not that the peers died: time this rank could
            # not watch does not count against them (a dead peer costs no CPU, so it is still
            # declared dead on time on a machine that is otherwise keeping up).
            late = now - last - 2 * period
            last = now
            if late > 0:
                for r in others:
                    moved[r] += late
            self._on_beat(now)
            try:
                store.add(f"{STORE_HEARTBEAT_KEY}{self._rank}", 1)
                for r in others:
                    if self._stop.is_set():  # shutting down: no store call more than needed
                        return
                    beat = store.add(f"{STORE_HEARTBEAT_KEY}{r}", 0)
                    if beat != seen[r]:
                        seen[r], moved[r] = beat, now
                store_ok = now
            except Exception as e:  # noqa: BLE001 - the store's host may be the dead one
                if now - store_ok > dead_after:
                    self._declare_dead(f"the store is unreachable for {now - store_ok:.1f} s "
                                       f"({type(e).__name__}: {e}); the rank hosting it "
                                       "(rank 0, or torchrun's agent) died")
                    return
                continue
            gone = sorted(r for r in others if now - moved[r] > dead_after)
            if gone:
                left = [r for r in gone if store.check([f"{STORE_LEFT_KEY}{r}"])]
                died = [r for r in gone if r not in left]
                parts = []
                if died:
                    parts.append(f"rank{'s' if len(died) > 1 else ''} "
                                 f"{', '.join(map(str, died))} died (no heartbeat for "
                                 f"{dead_after:g} s)")
                if left:
                    parts.append(f"rank{'s' if len(left) > 1 else ''} "
                                 f"{', '.join(map(str, left))} left the group "
                                 "(shut it down)")
                self._declare_dead("; ".join(parts))
                return

    def _declare_dead(self, why: str) -> None:
        """Fail the running and every queued switch call, and every later one."""
        msg = (f"netrl: {why}; rank {self._rank} of {self._size} fails its pending and "
               f"every later all_reduce through {self.url} (their contributions will "
               "never arrive). Rebuild the group (torchrun's elastic restart does)")
        with self._submit_lock:
            if self._dead is not None or self._closed:
                return
            self._dead = msg
            running, self._running = self._running, None
            pending = []
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    pending.append(item[1])
            if running is not None and not running.done():
                running.set_result(dist.DistBackendError(msg))
            for fut in pending:
                fut.set_result(dist.DistBackendError(msg))

    # -- the switch worker ----------------------------------------------------------
    def _serve(self) -> None:
        """Run the queued switch calls in issue order (the same order on every rank)."""
        while True:
            item = self._queue.get()
            if item is None:
                return
            fn, fut = item
            with self._submit_lock:
                if fut.done():  # failed by _declare_dead while queued
                    continue
                self._running = fut
            outcome: _Outcome
            try:
                outcome = fn()
            except BaseException as e:  # noqa: BLE001 - handed to the waiter
                outcome = e
            with self._submit_lock:
                if self._running is fut:
                    self._running = None
                if not fut.done():
                    fut.set_result(outcome)
            del item, fn, fut, outcome  # do not keep the last call's tensors alive

    def _submit(self, fn: Callable[[], list[torch.Tensor]]) -> dist.Work:
        fut: Future[_Outcome] = Future()
        with self._submit_lock:
            if self._closed:
                fut.set_result(dist.DistBackendError("netrl: the process group is shut down"))
            elif self._dead is not None:
                fut.set_result(dist.DistBackendError(self._dead))
            else:
                self._queue.put((fn, fut))
        return _work(fut)
