"""The native parameter server: :class:`NativeParameterServer` and :class:`PsClient`.

The same semantics as the Python reference :class:`rl.sync.ps.ParameterServer` (N workers
each push a tensor, the server sums them and returns the sum to every worker), written
with the care of the soft switch so that a comparison measures the topology, not the
language: the server is one C++ thread (``hostdrv/native/nrl_ps.cpp``, ``poll()`` over the N
TCP connections, the GIL released) that adds worker k's elements as soon as the sum of
workers 0 … k−1 covers them and streams the finished prefix of the sum back while the
pushes are still arriving; the client's send/receive loop is C++ as well.

**Order of addition** (reproducible whatever the arrival order): worker id order,
``((x0 + x1) + x2) + … + x(N−1)``, element-wise, IEEE 754 binary32 with round to nearest
even (numpy's ``float32`` adds, no FMA, no reassociation); int32 in two's complement,
wrapping. :func:`reference_sum` computes exactly this with numpy.

**Transport**: TCP, one connection per worker (``TCP_NODELAY``, the kernel's receive-buffer
autotuning, up to ``net.ipv4.tcp_rmem``'s maximum). A deployed parameter server runs on
TCP; TCP's flow and congestion control absorb the N:1 incast on the server's link that a
UDP server would have to pace and retransmit itself, and on loopback and veth it moves
64 KB segments per system call. The wire format is in ``hostdrv/native/nrl_ps.h``.

Errors: every member of a call whose tensors differ in length or dtype gets
:class:`PsMismatchError` naming every worker's length; a worker whose connection closes
during a call fails that call for the others (:class:`PsCallError`: ``WORKER_LEFT``, or,
for a worker whose sum had begun streaming back, the server closes its connection, which
cannot carry an error any more). The connections of a failed call stay usable otherwise.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Sequence
from enum import IntEnum
from types import TracebackType

import numpy as np

from hostdrv.errors import NetrlError

try:
    import hostdrv._native as _native
except ImportError as e:  # pragma: no cover - a wheel without the extension
    _native = None
    _native_error = f"hostdrv._native is not built ({e}); run `pip install -e .`"
else:
    _native_error = ""

MAGIC = b"NRPS"
PS_VERSION = 1
REQUEST = struct.Struct("!4sBBBBIQ")
"""Request header: magic, version, op, dtype, 0, id (worker / call sequence), count."""
REPLY = struct.Struct("!4sBBBBIQI")
"""Reply header: magic, version, op, dtype, status, id, count, detail."""
OP_HELLO, OP_PUSH, OP_WELCOME, OP_SUM, OP_ERROR = 1, 2, 3, 4, 5
DTYPES = {np.dtype("<f4"): 0, np.dtype("<i4"): 1}
"""Payload dtype → code (as :data:`rl.sync.ps.PS_DTYPES`): 0 fp32, 1 int32."""
DEFAULT_MAX_ELEMS = 1 << 26
"""Largest tensor a server accepts unless told (64 Mi elements, 256 MB)."""


class PsStatus(IntEnum):
    """Why the server refused a HELLO or a call (the reply's status byte, ``nrl_ps.h``)."""

    OK = 0
    LENGTH_MISMATCH = 1
    DTYPE_MISMATCH = 2
    TOO_LARGE = 3
    WORKER_LEFT = 4
    BAD_HELLO = 5
    DUPLICATE_WORKER = 6
    BAD_DTYPE = 7


class PsError(NetrlError, RuntimeError):
    """The native parameter server refused or could not complete a call."""


class PsCallError(PsError):
    """A call failed for a reason the server gave (``status``) or the connection broke.

    Attributes
    ----------
    status:
        :class:`PsStatus` (``None`` when the connection broke without one).
    """

    def __init__(self, msg: str, status: PsStatus | None = None) -> None:
        super().__init__(msg)
        self.status = status


class PsMismatchError(PsCallError, ValueError):
    """The workers of a call pushed tensors of different lengths or dtypes; every worker of
    the call gets it.

    Attributes
    ----------
    lengths:
        Elements each worker pushed (``None``: that worker was not in the call).
    dtypes:
        Each worker's dtype (``None`` likewise).
    """

    def __init__(self, msg: str, status: PsStatus, lengths: list[int | None],
                 dtypes: list[np.dtype | None]) -> None:
        super().__init__(msg, status)
        self.lengths = lengths
        self.dtypes = dtypes


class PsTimeoutError(PsError, TimeoutError):
    """No progress for ``timeout`` seconds (a worker did not call, or the server is gone).
    The connection is closed: the stream's position is unknown."""


def _require_native() -> object:
    if _native is None or not hasattr(_native, "PsServer"):
        raise PsError(_native_error or "hostdrv._native has no parameter server: rebuild it "
                      "(pip install -e . or python setup.py build_ext --inplace)")
    return _native


def reference_sum(tensors: Sequence[np.ndarray]) -> np.ndarray:
    """The documented sum, by numpy: ``((x0 + x1) + x2) + …`` in worker id order, in the
    tensors' dtype (float32 round to nearest even; int32 wrapping)."""
    if not tensors:
        raise ValueError("bad tensors=[]: the sum needs at least one worker's tensor")
    acc = np.array(tensors[0], copy=True)
    with np.errstate(over="ignore"):
        for x in tensors[1:]:
            acc += x
    return acc


class NativeParameterServer:
    """The native parameter server on a TCP port, served by a background thread.

    Parameters
    ----------
    world:
        N, the workers (ids 0 … N−1), 1 … 64.
    host, port:
        Where to listen; port 0 picks a free one (:attr:`address`).
    max_elems:
        The largest tensor (elements) a call may push; a larger one fails the call for
        every worker (``TOO_LARGE``).
    """

    def __init__(self, world: int, host: str = "127.0.0.1", port: int = 0, *,
                 max_elems: int = DEFAULT_MAX_ELEMS) -> None:
        native = _require_native()
        if isinstance(world, bool) or not isinstance(world, int) or not 1 <= world <= 64:
            raise ValueError(f"bad world={world!r}: 1 … 64 workers")
        if not isinstance(max_elems, int) or max_elems < 0:
            raise ValueError(f"bad max_elems={max_elems!r}: an element count >= 0")
        self.world = world
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((host, port))
        self._sock.listen(max(64, world))
        self._sock.setblocking(False)
        self.address: tuple[str, int] = self._sock.getsockname()[:2]
        self._server = native.PsServer(self._sock.fileno(), world, max_elems)  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    def start(self) -> NativeParameterServer:
        """Serve in a background thread (the C++ loop, the GIL released)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._server.serve, args=(20,),
                                            name="native-ps", daemon=True)
            self._thread.start()
        return self

    def stats(self) -> dict[str, int]:
        """Calls completed (``rounds``), failed ones, bytes in and out, connections."""
        return dict(self._server.stats())

    def close(self) -> None:
        """Stop serving and close every connection and the listener."""
        if self._server is None:
            return
        self._server.stop()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._server = None  # its destructor closes the workers' connections
        self._sock.close()

    def __enter__(self) -> NativeParameterServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        part = sock.recv(n - len(data))
        if not part:
            raise PsCallError("the parameter server closed the connection")
        data += part
    return data


class PsClient:
    """One worker's connection to a :class:`NativeParameterServer`.

    Parameters
    ----------
    address:
        The server's (host, port).
    worker:
        This worker's id, 0 … ``world`` − 1, unique among the connected workers.
    world:
        N, as the server was started with (checked by the server).
    timeout:
        Seconds a call may make no progress before :class:`PsTimeoutError`.

    Raises
    ------
    PsCallError
        The server refused the worker (``BAD_HELLO``: id or world wrong;
        ``DUPLICATE_WORKER``: the id is connected already).
    """

    def __init__(self, address: tuple[str, int], worker: int, world: int, *,
                 timeout: float = 60.0) -> None:
        self._native = _require_native()
        self.worker = worker
        self.world = world
        self.timeout = timeout
        self._seq = 0
        self._sock: socket.socket | None = socket.create_connection(address, timeout=timeout)
        try:
            self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._sock.sendall(REQUEST.pack(MAGIC, PS_VERSION, OP_HELLO, 0, 0, worker, world))
            magic, _v, op, _dt, status, _id, count, _detail = REPLY.unpack(
                _recv_exact(self._sock, REPLY.size))
            if magic != MAGIC or op not in (OP_WELCOME, OP_ERROR):
                raise PsCallError(f"{address} is no native parameter server (reply {magic!r})")
            if op == OP_ERROR:
                why = PsStatus(status)
                text = (f"the server serves world={count}: ids 0 … {count - 1}"
                        if why == PsStatus.BAD_HELLO else "that worker id is connected already")
                raise PsCallError(f"parameter server refused worker={worker} world={world}: "
                                  f"{why.name}: {text}", why)
        except BaseException:
            self.close()
            raise

    def allreduce(self, x: np.ndarray) -> np.ndarray:
        """Sum ``x`` over every worker (the documented order, :func:`reference_sum`).

        Parameters
        ----------
        x:
            numpy array of float32 or int32 (float64 is summed as float32), any shape;
            every worker passes the same length and dtype in the same call.

        Returns
        -------
        The sum, same shape and dtype as ``x``.

        Raises
        ------
        PsMismatchError
            A worker of this call pushed another length or dtype (every worker gets it).
        PsCallError
            The call failed on the server (a worker left, the tensor is too large) or the
            connection closed.
        PsTimeoutError
            No progress for ``timeout`` seconds; the client is closed.
        TypeError
            Another dtype.
        """
        if self._sock is None:
            raise PsError("the client is closed")
        arr = np.asarray(x)
        if arr.dtype == np.float64:
            wire = np.ascontiguousarray(arr, dtype="<f4")
        elif arr.dtype.newbyteorder("<") in DTYPES and arr.dtype.kind in "fi":
            wire = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<"))
        else:
            raise TypeError(f"bad dtype={arr.dtype}: allreduce takes float32, float64 or int32")
        flat = wire.reshape(-1)
        out = np.empty_like(flat)
        self._seq = (self._seq + 1) & 0xFFFFFFFF
        code, status, detail, count, err, sent, received, words = self._native.ps_call(  # type: ignore[attr-defined]
            self._sock.fileno(), self._seq, DTYPES[flat.dtype], flat, out, self.timeout)
        if code == 0:
            return out.reshape(arr.shape).astype(arr.dtype, copy=False)
        if code == 1:
            self._raise(PsStatus(status), detail, list(words), flat.size)
        self.close()
        if code == 2:
            raise PsTimeoutError(
                f"worker {self.worker}: no progress for {self.timeout} s in call {self._seq} "
                f"({sent} of {4 * flat.size} bytes sent, {received} received): a worker did "
                "not call, or the server is gone")
        if code == 3:
            raise PsCallError(f"worker {self.worker}: the parameter server closed the "
                              f"connection in call {self._seq} (a worker left during the call, "
                              "or the server stopped)")
        if code == 5:
            raise PsCallError(f"worker {self.worker}: a reply of call {self._seq} is not the "
                              "parameter server protocol")
        raise PsCallError(f"worker {self.worker}: call {self._seq} failed: "
                          f"{OSError(err, '').strerror} (errno {err})")

    def _raise(self, status: PsStatus, detail: int, words: list[int], elems: int) -> None:
        if status in (PsStatus.LENGTH_MISMATCH, PsStatus.DTYPE_MISMATCH):
            codes = {v: k for k, v in DTYPES.items()}
            lengths = [None if w == 2**64 - 1 else w & (2**56 - 1) for w in words]
            dtypes = [None if w == 2**64 - 1 else codes.get(w >> 56) for w in words]
            each = ", ".join(f"worker {i}: " + ("not in the call" if n is None else
                                                 f"{n} × {dtypes[i]}")
                             for i, n in enumerate(lengths))
            what = "length" if status == PsStatus.LENGTH_MISMATCH else "dtype"
            raise PsMismatchError(f"worker {self.worker}: the tensors of call {self._seq} "
                                  f"differ in {what} ({each}); nothing was summed",
                                  status, lengths, dtypes)
        if status == PsStatus.TOO_LARGE:
            raise PsCallError(f"worker {self.worker}: call {self._seq}: a tensor is larger "
                              f"than the server's max_elems (about {detail * 1024}); this one "
                              f"has {elems}", status)
        if status == PsStatus.WORKER_LEFT:
            raise PsCallError(f"worker {self.worker}: call {self._seq} failed: worker {detail} "
                              "closed its connection during the call", status)
        raise PsCallError(f"worker {self.worker}: call {self._seq} failed: {status.name}",
                          status)

    def close(self) -> None:
        """Close the connection (the server frees this worker id)."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self) -> PsClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


__all__ = ["DEFAULT_MAX_ELEMS", "NativeParameterServer", "PsCallError", "PsClient", "PsError",
           "PsMismatchError", "PsStatus", "PsTimeoutError", "reference_sum"]
