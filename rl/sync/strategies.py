"""One worker's end of each strategy behind :class:`GradSync`, and :func:`make_sync`."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
import torch

from rl.sync.ps import PS_DTYPES, PS_HELLO, PS_MSG
from rl.sync.quantize import flatten_grads, unflatten_into
from rl.sync.spec import SyncSpec
from rl.tcp import connect, recv_exact, recv_struct


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
    """Aggregation in the switch through :class:`hostdrv.Aggregator`.

    A round is one call (one step id, :attr:`hostdrv.Aggregator.step`). A call that
    times out is retried with the same vector, up to ``spec.attempts`` calls: the
    retry has the same step id and resumes the failed call (only the chunks not yet
    answered, in the same rounds; a peer that completed the round meanwhile answers
    them), so a slow peer never leaves the workers a round apart
    (``docs/protocol.md`` section 4, "Epochs, failures and rejoin"). Any other
    failure (a mismatch) is raised at once.
    """

    def __init__(self, spec: SyncSpec, rank: int) -> None:
        super().__init__(spec, rank)
        from hostdrv import Aggregator

        assert spec.url is not None, "inswitch needs a switch URL"
        self._agg = Aggregator(spec.url, worker=rank, timeout=spec.timeout,
                               retries=spec.retries, register=True)

    def _allreduce(self, vec: np.ndarray, version: int) -> np.ndarray:
        from hostdrv import AllreduceTimeoutError

        attempt = 1
        while True:
            try:
                return self._call(vec, version)
            except AllreduceTimeoutError:
                if attempt >= self.spec.attempts:
                    raise
                attempt += 1

    def _call(self, vec: np.ndarray, version: int) -> np.ndarray:
        if self.spec.mode == "async":
            # any size: a call is one iteration of R rounds per slot, and versions count
            # iterations (hostdrv.Aggregator.allreduce, docs/protocol.md section 4)
            out = self._agg.allreduce(vec, version=version)
            rounds = self._agg.last_rounds
            self.last_round = self._agg.last_iteration if len(rounds) else self.round
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
        self._sock = connect(spec.address)
        self._sock.sendall(PS_HELLO.pack(rank))

    def _allreduce(self, vec: np.ndarray, version: int) -> np.ndarray:
        code = 1 if vec.dtype == np.int32 else 0
        self._sock.sendall(PS_MSG.pack(self.round, version, vec.nbytes, code) + vec.tobytes())
        # Results arrive in round order; every round's sum goes to every worker.
        round_, _, nbytes, rcode = recv_struct(self._sock, PS_MSG)
        payload = recv_exact(self._sock, nbytes)
        if round_ != self.round:
            raise RuntimeError(f"ps: expected round {self.round}, got {round_}")
        self.last_round = self.round
        return np.frombuffer(payload, dtype=PS_DTYPES[rcode]).copy()

    def close(self) -> None:
        """Close the connection."""
        self._sock.close()


class GlooSync(GradSync):
    """``torch.distributed`` all-reduce with the gloo backend (one process per worker)."""

    backend = "gloo"
    """The ``torch.distributed`` backend of the default process group this makes."""

    def __init__(self, spec: SyncSpec, rank: int) -> None:
        super().__init__(spec, rank)
        import torch.distributed as dist

        assert spec.address is not None, f"{self.backend} needs the TCPStore address"
        store = dist.TCPStore(spec.address[0], spec.address[1], spec.world, is_master=False)
        dist.init_process_group(self.backend, store=store, rank=rank, world_size=spec.world)
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


class NetrlSync(GlooSync):
    """In-switch rounds as ``torch.distributed`` all-reduces on the ``netrl`` backend.

    :mod:`hostdrv.client.torch_backend` sums float32 (and, split into exact halves,
    int32) tensors in the switch; its rank 0 configures the job. The group reads
    the switch from ``NETRL_SWITCH`` (and P, S, the retransmission timeout from
    ``NETRL_ELEMS``, ``NETRL_SLOTS``, ``NETRL_RTO``), so this sets them in the
    worker process from ``spec.url`` and the job the launcher configured
    there (``AGG_ELEMS``, ``AGG_SLOTS``) before it creates the group.

    A round that fails raises (the backend does not retry a collective: its next
    one is the next step, :mod:`hostdrv.torch_backend`).
    """

    backend = "netrl"

    def __init__(self, spec: SyncSpec, rank: int) -> None:
        import os

        import hostdrv.client.torch_backend  # noqa: F401 - registers the netrl backend
        from hostdrv.client.control import SwitchControl

        assert spec.url is not None, "netrl needs the switch URL"
        with SwitchControl(spec.url) as ctl:
            packet_elems, slots = ctl.read("AGG_ELEMS"), ctl.read("AGG_SLOTS")
        os.environ.update(NETRL_SWITCH=spec.url, NETRL_ELEMS=str(packet_elems),
                          NETRL_SLOTS=str(slots), NETRL_RTO=str(spec.timeout))
        super().__init__(spec, rank)


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
    if spec.kind == "inswitch" and spec.backend == "netrl":
        return NetrlSync(spec, rank)
    cls = {"inswitch": InSwitchSync, "ps": PSSync, "allreduce": GlooSync,
           "reference": ReferenceSync}[spec.kind]
    return cls(spec, rank)
