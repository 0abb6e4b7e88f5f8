"""Gradient synchronisation strategies behind one interface.

Every worker owns one :class:`GradSync`; ``allreduce(vec, version=v)`` returns the
element-wise sum of the workers' vectors for the next aggregation round. Four
strategies, picked by name (``SyncSpec.kind``):

``inswitch``
    :class:`hostdrv.Aggregator`: the switch (soft switch, RTL simulation or a
    NetFPGA board, by URL) sums the chunks packet by packet and multicasts the
    result; two network hops, no host in the reduction. Under torchrun the
    rounds go through ``torch.distributed``'s ``netrl`` backend
    (:class:`NetrlSync`, :mod:`hostdrv.client.torch_backend`) in sync mode.
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
  (in the switch, a straggler whose round is gone takes the newer result of the
  same chunk, or is answered with it when its contribution is too stale, and
  carries on from there; a chunk whose result is gone for good comes back as
  zeros with no contributor, ``docs/protocol.md`` section 4). gloo cannot complete a collective with fewer than N ranks, so ``allreduce``
  *emulates* async: stale contributions are replaced by zeros (their
  contributor flag too), but every round waits for all N ranks.
* **a failed round** (``inswitch``): a round that times out is retried with
  the same vector and step id (``SyncSpec.attempts`` calls), which resumes it
  in the switch; a mismatch, or the last timeout, is raised. Under the
  ``netrl`` backend a failed round raises at once (the backend's next
  collective is the next step).

On top sits :class:`GradientExchange`, what an algorithm calls instead of
``optimizer.step()``: it flattens the gradients, appends the episode
statistics and a contributor flag, quantises to int32 when asked, runs the
round (blocking in sync mode, pipelined up to ``pipeline`` rounds in async
mode), averages by the number of contributors and steps the optimizer. The
statistics travel with the gradients, so every worker sees the same
"solved" decision at the same round and all of them stop together.

Modules: :mod:`rl.sync.spec` (:class:`SyncSpec`), :mod:`rl.sync.rounds`
(:class:`RoundTable`, :class:`ReferenceHub`), :mod:`rl.sync.ps` (the parameter
server and its wire format), :mod:`rl.sync.strategies` (:class:`GradSync` and
one class per strategy, :func:`make_sync`), :mod:`rl.sync.backend`
(:class:`SyncBackend`, the launcher side), :mod:`rl.sync.quantize`
(:class:`Quantizer`, flattening, digests) and :mod:`rl.sync.exchange`
(:class:`GradientExchange`, :class:`StopBoard`). Every public name is
importable from ``rl.sync`` itself.
"""

from rl.sync.backend import SyncBackend
from rl.sync.exchange import (
    STATS_SCALE,
    ExchangeLog,
    GradientExchange,
    StopBoard,
    default_window,
)
from rl.sync.ps import ParameterServer
from rl.sync.quantize import Quantizer, flatten_grads, params_digest, unflatten_into
from rl.sync.rounds import ReferenceHub, RoundTable
from rl.sync.spec import SYNC_KINDS, SyncSpec
from rl.sync.strategies import (
    GlooSync,
    GradSync,
    InSwitchSync,
    NetrlSync,
    PSSync,
    ReferenceSync,
    make_sync,
)

__all__ = [
    "STATS_SCALE",
    "SYNC_KINDS",
    "ExchangeLog",
    "GlooSync",
    "GradSync",
    "GradientExchange",
    "InSwitchSync",
    "NetrlSync",
    "PSSync",
    "ParameterServer",
    "Quantizer",
    "ReferenceHub",
    "ReferenceSync",
    "RoundTable",
    "StopBoard",
    "SyncBackend",
    "SyncSpec",
    "default_window",
    "flatten_grads",
    "make_sync",
    "params_digest",
    "unflatten_into",
]
