"""netfpga-rl host driver: protocol, reference switch model, soft switch and clients."""

from typing import TYPE_CHECKING

from hostdrv.aggregator import Aggregator
from hostdrv.control import (
    ROLE_ACTOR,
    ROLE_LEARNER,
    ROLE_WORKER,
    IdentityError,
    RegisterError,
    SwitchControl,
    SwitchIdentity,
)
from hostdrv.errors import (
    AllreduceDesyncError,
    AllreduceError,
    AllreduceTimeoutError,
    RateLimitTimeoutError,
    ReplayEmptyError,
    ReplayTimeoutError,
    StepMismatchError,
    TensorMismatchError,
)
from hostdrv.model import Egress, SwitchModel
from hostdrv.protocol import (
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
from hostdrv.records import SampleBatch, Transitions, from_fixed, records_from_bytes, to_fixed
from hostdrv.replay_client import ReplayClient
from hostdrv.transport import (
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

if TYPE_CHECKING:
    from hostdrv.backends.soft_server import SoftSwitch, SoftSwitchProcess


def __getattr__(name: str) -> object:
    # The soft switch is imported on first use so that ``python -m
    # hostdrv.backends.soft_server`` does not find it already imported by the package.
    if name in ("SoftSwitch", "SoftSwitchProcess"):
        from hostdrv.backends import soft_server

        return getattr(soft_server, name)
    raise AttributeError(f"module 'hostdrv' has no attribute {name!r}")


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
    "SwitchControl",
    "SwitchIdentity",
    "SwitchModel",
    "SwitchTimeoutError",
    "StepMismatchError",
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
