"""netfpga-rl host driver: the wire format, the switch implementations and their clients.

The package is three rooms along the wire: :mod:`hostdrv.wire` (protocol,
register map, records: what both ends agree on), :mod:`hostdrv.switch` (the
reference switch, the native engine, the soft and sim switches) and
:mod:`hostdrv.client` (transports, :class:`SwitchControl`, :class:`Aggregator`,
:class:`ReplayClient`, the board, the torch backend). The public names below are
imported on first use (PEP 562), so ``import hostdrv`` or ``import
hostdrv.wire.regmap`` loads neither the switch nor the compiled extension.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hostdrv.client.aggregator import Aggregator
    from hostdrv.client.control import (
        ROLE_ACTOR,
        ROLE_LEARNER,
        ROLE_WORKER,
        IdentityError,
        SwitchControl,
        SwitchIdentity,
    )
    from hostdrv.client.errors import (
        AllreduceDesyncError,
        AllreduceError,
        AllreduceTimeoutError,
        RateLimitTimeoutError,
        ReplayEmptyError,
        ReplayTimeoutError,
        StepMismatchError,
        TensorMismatchError,
    )
    from hostdrv.client.replay import ReplayClient
    from hostdrv.client.torch_options import NetrlOptions
    from hostdrv.client.transport import (
        BACKENDS,
        Backend,
        DatagramTransport,
        RegisterAccessError,
        RegisterTransport,
        SwitchTimeoutError,
        TransportError,
        open_datagram,
        open_registers,
    )
    from hostdrv.errors import NetrlError, RegisterError
    from hostdrv.switch.reference import Egress, SwitchModel
    from hostdrv.switch.soft import SoftSwitch, SoftSwitchProcess
    from hostdrv.wire.protocol import (
        Flags,
        Frame,
        Message,
        Opcode,
        ProtocolError,
        build_frame,
        decode_message,
        encode_message,
        parse_frame,
        result_aux,
        result_order,
    )
    from hostdrv.wire.records import (
        SampleBatch,
        StackedSample,
        Transitions,
        from_fixed,
        records_from_bytes,
        to_fixed,
    )

_WHERE: dict[str, str] = {
    "Aggregator": "hostdrv.client.aggregator",
    **dict.fromkeys(("ROLE_ACTOR", "ROLE_LEARNER", "ROLE_WORKER", "IdentityError",
                     "SwitchControl", "SwitchIdentity"), "hostdrv.client.control"),
    "ReplayClient": "hostdrv.client.replay",
    # the torch backend's options (no torch import: built and checked anywhere)
    "NetrlOptions": "hostdrv.client.torch_options",
    # TransportError is defined in hostdrv.wire.net; transport re-exports it
    **dict.fromkeys(("BACKENDS", "Backend", "DatagramTransport", "RegisterAccessError",
                     "RegisterTransport", "SwitchTimeoutError", "TransportError",
                     "open_datagram", "open_registers"), "hostdrv.client.transport"),
    **dict.fromkeys(("AllreduceDesyncError", "AllreduceError", "AllreduceTimeoutError",
                     "RateLimitTimeoutError", "ReplayEmptyError", "ReplayTimeoutError",
                     "StepMismatchError", "TensorMismatchError"), "hostdrv.client.errors"),
    # every error derives from NetrlError; RegisterAccessError is RegisterError's other name
    **dict.fromkeys(("NetrlError", "RegisterError"), "hostdrv.errors"),
    **dict.fromkeys(("Egress", "SwitchModel"), "hostdrv.switch.reference"),
    **dict.fromkeys(("SoftSwitch", "SoftSwitchProcess"), "hostdrv.switch.soft"),
    **dict.fromkeys(("Flags", "Frame", "Message", "Opcode", "ProtocolError", "build_frame",
                     "decode_message", "encode_message", "parse_frame", "result_aux",
                     "result_order"), "hostdrv.wire.protocol"),
    **dict.fromkeys(("SampleBatch", "StackedSample", "Transitions", "from_fixed",
                     "records_from_bytes", "to_fixed"), "hostdrv.wire.records"),
}
"""Each public name → the module that defines it."""


def __getattr__(name: str) -> object:
    # PEP 562: a public name is imported on first use and then kept in the package,
    # so the next access does not come here. The soft switch in particular is not
    # imported by the package, so ``python -m hostdrv.switch.soft`` runs it once.
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'hostdrv' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "BACKENDS",
    "ROLE_ACTOR",
    "ROLE_LEARNER",
    "ROLE_WORKER",
    "Aggregator",
    "AllreduceDesyncError",
    "AllreduceError",
    "AllreduceTimeoutError",
    "Backend",
    "DatagramTransport",
    "Egress",
    "Flags",
    "Frame",
    "IdentityError",
    "Message",
    "NetrlError",
    "NetrlOptions",
    "Opcode",
    "ProtocolError",
    "RegisterAccessError",
    "RegisterError",
    "RegisterTransport",
    "ReplayClient",
    "RateLimitTimeoutError",
    "ReplayEmptyError",
    "ReplayTimeoutError",
    "SampleBatch",
    "SoftSwitch",
    "SoftSwitchProcess",
    "StackedSample",
    "StepMismatchError",
    "SwitchControl",
    "SwitchIdentity",
    "SwitchModel",
    "SwitchTimeoutError",
    "TensorMismatchError",
    "Transitions",
    "TransportError",
    "build_frame",
    "decode_message",
    "encode_message",
    "from_fixed",
    "open_datagram",
    "open_registers",
    "parse_frame",
    "records_from_bytes",
    "result_aux",
    "result_order",
    "to_fixed",
]
