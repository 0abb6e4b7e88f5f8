"""Reference switch: the golden model of the netfpga-rl switch.

:class:`SwitchModel` implements ``docs/protocol.md`` (sections 4 to 7) exactly:
one call to :meth:`SwitchModel.process` takes one frame as it appears on the
SUME AXI4-Stream (no FCS) and returns the frames the switch emits, in
emission order. The RTL testbenches compare the hardware against it bit for
bit, and the soft switch runs it behind a UDP socket, so it is both exact and
reasonably fast.

The package is cut by block, as the RTL is:

* :mod:`.top` — :class:`SwitchModel`: the register file, the classifier and the
  checks of section 6 (``nrl_switch``, ``nrl_classifier``, the register files);
* :mod:`.agg` — the aggregation engine (``grad_agg_ingress`` / ``grad_agg_egress``)
  and :func:`fp32_add`;
* :mod:`.replay` — the replay engine (``replay_executor``, ``replay_responder``);
* :mod:`.l2` — the learning switch's MAC table :class:`L2Table` (``nrl_l2_learn``);
* :mod:`.frames` — :class:`Egress`, the frames the switch originates and the
  parameter checks.
"""

from __future__ import annotations

from hostdrv.switch.reference.agg import fp32_add
from hostdrv.switch.reference.frames import Egress, check_params, check_src_port
from hostdrv.switch.reference.l2 import MAC_PORTS, L2Table
from hostdrv.switch.reference.top import SwitchModel
from hostdrv.wire.fp32 import CANONICAL_NAN
from hostdrv.wire.sampler import DEFAULT_SEED, xorshift32

__all__ = [
    "CANONICAL_NAN",
    "DEFAULT_SEED",
    "MAC_PORTS",
    "Egress",
    "L2Table",
    "SwitchModel",
    "check_params",
    "check_src_port",
    "fp32_add",
    "xorshift32",
]

