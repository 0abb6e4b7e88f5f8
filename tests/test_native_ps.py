"""The native parameter server (``hostdrv.peers.ps``, ``hostdrv/native/nrl_ps.cpp``).

Sums are compared bit for bit with :func:`hostdrv.peers.ps.reference_sum` (numpy, in the
documented worker id order), with the workers started in reverse order so that arrival
order is not id order, and with inputs for which another order gives other bits.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from netutil import in_threads, wait_for

from hostdrv.errors import NetrlError
from hostdrv.peers.ps import (
    NativeParameterServer,
    PsCallError,
    PsClient,
    PsMismatchError,
    PsStatus,
    PsTimeoutError,
    reference_sum,
)


def _inputs(world: int, elems: int, seed: int) -> list[np.ndarray]:
    """Values of mixed magnitude (order of addition matters), some specials among them."""
    rng = np.random.default_rng(seed)
    xs = []
    for w in range(world):
        x = (rng.standard_normal(elems) * 10.0 ** rng.integers(-20, 20, elems)).astype(np.float32)
        if elems > 8:
            x[:4] = np.array([np.inf if w == 0 else 1.0, -0.0, np.float32(1e-45) * (w + 1),
                              np.float32(3.4e38)], dtype=np.float32)
        xs.append(x)
    return xs


def _call_all(clients: list[PsClient], xs: list[Any],
              delay: Callable[[int], float] = lambda w: 0.0) -> list[Any]:
    """Every worker's allreduce in its own thread; the result or the exception, by worker."""

    def call(w: int) -> Any:
        time.sleep(delay(w))
        return clients[w].allreduce(xs[w])

    return in_threads([lambda w=w: call(w) for w in range(len(clients))])


@pytest.fixture(params=[2, 4], ids=lambda n: f"world{n}")
def job(request: pytest.FixtureRequest) -> Iterator[tuple[NativeParameterServer, list[PsClient]]]:
    world = request.param
    with NativeParameterServer(world) as srv:
        clients = [PsClient(srv.address, w, world, timeout=20) for w in range(world)]
        yield srv, clients
        for c in clients:
            c.close()


@pytest.mark.parametrize("elems", [1, 1000, 65537, 1_000_003])
def test_sum_is_bit_exact_in_worker_order(job: tuple[NativeParameterServer, list[PsClient]],
                                          elems: int) -> None:
    srv, clients = job
    world = len(clients)
    xs = _inputs(world, elems, seed=elems)
    expected = reference_sum(xs)
    # the last worker first: arrival order is not the order of addition
    got = _call_all(clients, xs, delay=lambda w: 0.02 * (world - 1 - w))
    for r in got:
        assert isinstance(r, np.ndarray) and r.dtype == np.float32
        assert r.tobytes() == expected.tobytes()
    if elems >= 1000 and world > 2:  # the inputs tell the orders apart (two commute exactly)
        assert reference_sum(xs[::-1]).tobytes() != expected.tobytes()
    # a second call, another tensor, on the same connections
    xs2 = [np.ascontiguousarray(x[::-1]) * np.float32(0.5) for x in xs]
    for r in _call_all(clients, xs2):
        assert r.tobytes() == reference_sum(xs2).tobytes()
    # the server closes a call just after its last bytes went out: the clients may be first
    assert wait_for(lambda: srv.stats()["rounds"] == 2)
    assert srv.stats()["failed_rounds"] == 0


def test_int32_wraps_and_shapes_are_kept(job: tuple[NativeParameterServer, list[PsClient]]) -> None:
    _srv, clients = job
    rng = np.random.default_rng(7)
    xs = [rng.integers(-2**31, 2**31, (3, 333), dtype=np.int64).astype(np.int32)
          for _ in clients]
    for r in _call_all(clients, xs):
        assert r.shape == (3, 333) and r.dtype == np.int32
        assert r.tobytes() == reference_sum(xs).tobytes()
    # float64 travels as float32 and comes back float64
    xs64 = [np.full(5, 0.1 * (w + 1)) for w in range(len(clients))]
    for r in _call_all(clients, xs64):
        assert r.dtype == np.float64
        assert np.array_equal(r, reference_sum([x.astype(np.float32) for x in xs64]))


def test_a_bad_length_fails_the_call_for_every_worker(
        job: tuple[NativeParameterServer, list[PsClient]]) -> None:
    srv, clients = job
    world = len(clients)
    xs = [np.ones(100 + (w == 1), dtype=np.float32) for w in range(world)]
    got = _call_all(clients, xs)
    for w, r in enumerate(got):
        assert isinstance(r, PsMismatchError), r
        assert f"worker {w}: the tensors" in str(r)
        assert isinstance(r, ValueError) and isinstance(r, NetrlError)
        assert r.status == PsStatus.LENGTH_MISMATCH
        assert r.lengths == [101 if k == 1 else 100 for k in range(world)]
        assert "worker 1: 101" in str(r) and "differ in length" in str(r)
    # the connections stay usable: the next call sums
    xs = _inputs(world, 777, seed=3)
    for r in _call_all(clients, xs):
        assert r.tobytes() == reference_sum(xs).tobytes()
    assert wait_for(lambda: srv.stats()["failed_rounds"] == 1)


def test_a_bad_dtype_fails_the_call(job: tuple[NativeParameterServer, list[PsClient]]) -> None:
    _srv, clients = job
    xs = [np.ones(10, dtype=np.int32 if w == 0 else np.float32) for w in range(len(clients))]
    for r in _call_all(clients, xs):
        assert isinstance(r, PsMismatchError) and r.status == PsStatus.DTYPE_MISMATCH
        assert r.dtypes[0] == np.dtype("<i4") and r.dtypes[1] == np.dtype("<f4")
    with pytest.raises(TypeError, match="bad dtype=complex64"):
        clients[0].allreduce(np.ones(3, dtype=np.complex64))


def test_too_large_is_refused_then_the_next_call_works() -> None:
    with NativeParameterServer(2, max_elems=4096) as srv:
        clients = [PsClient(srv.address, w, 2, timeout=20) for w in range(2)]
        got = _call_all(clients, [np.ones(5000, np.float32), np.ones(5000, np.float32)])
        for r in got:
            assert isinstance(r, PsCallError) and r.status == PsStatus.TOO_LARGE, r
            assert "max_elems" in str(r)
        xs = _inputs(2, 4096, seed=1)
        for r in _call_all(clients, xs):
            assert r.tobytes() == reference_sum(xs).tobytes()


def test_bad_and_duplicate_workers_are_refused() -> None:
    with NativeParameterServer(2) as srv:
        with pytest.raises(PsCallError, match="BAD_HELLO.*world=2"):
            PsClient(srv.address, 2, 2)
        with pytest.raises(PsCallError, match="BAD_HELLO"):
            PsClient(srv.address, 0, 3)
        with PsClient(srv.address, 0, 2):
            with pytest.raises(PsCallError, match="DUPLICATE_WORKER"):
                PsClient(srv.address, 0, 2)
        # the id is free again once its connection closed
        assert wait_for(lambda: srv.stats()["workers"] == 0)
        PsClient(srv.address, 0, 2).close()


def test_a_worker_that_does_not_call_is_a_timeout() -> None:
    with NativeParameterServer(2) as srv:
        a = PsClient(srv.address, 0, 2, timeout=0.3)
        b = PsClient(srv.address, 1, 2, timeout=5)
        with pytest.raises(PsTimeoutError, match="no progress for 0.3 s"):
            a.allreduce(np.ones(10, np.float32))
        # a closed its connection: b's call fails rather than hangs
        with pytest.raises(PsCallError, match="worker 0 closed its connection|closed the"):
            b.allreduce(np.ones(10, np.float32))
        b.close()


def test_a_worker_leaving_mid_call_fails_it_and_the_job_goes_on() -> None:
    """Worker 0 (a raw socket) pushes a header, or part of its tensor, and closes: worker 1's
    call fails (WORKER_LEFT while nothing of the sum went out; a closed connection once the
    sum had begun streaming); a new worker 0 (and 1) join and the next call sums."""
    import socket

    from hostdrv.peers.ps import MAGIC, OP_HELLO, OP_PUSH, OP_WELCOME, PS_VERSION, REPLY, REQUEST

    with NativeParameterServer(2) as srv:
        for sent, expect in ((0, "worker 0 closed its connection"), (400, "closed the connection")):
            raw = socket.create_connection(srv.address)
            raw.sendall(REQUEST.pack(MAGIC, PS_VERSION, OP_HELLO, 0, 0, 0, 2))
            assert REPLY.unpack(raw.recv(REPLY.size))[2] == OP_WELCOME
            b = PsClient(srv.address, 1, 2, timeout=10)
            raw.sendall(REQUEST.pack(MAGIC, PS_VERSION, OP_PUSH, 0, 0, 1, 1000) + bytes(sent))
            closer = threading.Timer(0.3, raw.close)
            closer.start()
            with pytest.raises(PsCallError, match=expect) as err:
                b.allreduce(np.ones(1000, np.float32))
            closer.join()
            b.close()
            if sent == 0:
                assert err.value.status == PsStatus.WORKER_LEFT
        assert wait_for(lambda: srv.stats()["workers"] == 0)  # the closes are seen: ids free
        a, b = PsClient(srv.address, 0, 2, timeout=10), PsClient(srv.address, 1, 2, timeout=10)
        xs = _inputs(2, 1000, seed=5)
        for r in _call_all([a, b], xs):
            assert r.tobytes() == reference_sum(xs).tobytes()
        assert wait_for(lambda: srv.stats()["failed_rounds"] == 2)
