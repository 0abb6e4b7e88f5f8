"""What a worker needs to join a gradient synchronisation: :class:`SyncSpec`.

Picklable; built in the launcher, turned into a :class:`rl.sync.GradSync` in each
worker by :func:`rl.sync.make_sync`.
"""

from __future__ import annotations

from dataclasses import dataclass

from rl.sync.rounds import ReferenceHub

SYNC_KINDS = ("inswitch", "ps", "allreduce", "reference")
"""Names accepted for :attr:`SyncSpec.kind`."""


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
    backend : str or None
        ``inswitch`` only: ``"netrl"`` runs each round as a ``torch.distributed``
        all-reduce on a process group of the ``netrl`` backend
        (:mod:`hostdrv.client.torch_backend`, the switch at ``url``; ``address`` is the
        TCPStore the group meets at; sync mode, one process per worker).
        ``None``: a :class:`hostdrv.Aggregator` of its own.
    timeout, retries : float, int
        ``inswitch``: the :class:`hostdrv.Aggregator`'s first retransmission
        timeout and retransmissions of a chunk before a call times out.
    attempts : int
        ``inswitch`` with the Aggregator: calls of one round before its
        timeout is raised. A round that timed out is retried with the same
        vector and step id, which resumes it (the chunks not yet answered, in
        the same rounds; ``docs/protocol.md`` section 4, "Epochs, failures and
        rejoin").
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
    backend: str | None = None
    attempts: int = 3

    def __post_init__(self) -> None:
        if self.kind not in SYNC_KINDS:
            raise ValueError(f"sync kind {self.kind!r} not in {SYNC_KINDS}")
        if self.mode not in ("sync", "async"):
            raise ValueError(f"mode {self.mode!r} must be 'sync' or 'async'")
        if self.dtype not in ("fp32", "int32"):
            raise ValueError(f"dtype {self.dtype!r} must be 'fp32' or 'int32'")
        if self.world < 1:
            raise ValueError(f"world {self.world} must be >= 1")
        if self.attempts < 1:
            raise ValueError(f"attempts {self.attempts} must be >= 1")
        if self.backend not in (None, "netrl") or (self.backend and self.kind != "inswitch"):
            raise ValueError(f"backend {self.backend!r}: only inswitch takes 'netrl'")
        if self.backend == "netrl" and self.mode != "sync":
            raise ValueError("the netrl backend sums sync rounds only (async in-switch "
                             "rounds need the Aggregator: backend=None)")
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

