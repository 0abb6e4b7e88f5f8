"""The reference switch's frame plumbing, shared by its blocks.

:class:`Egress` (a frame the switch emits), the addressing of the frame being
processed (:class:`Rx`), :class:`SwitchBlock` (the register and counter state
every block reads and the frame builder of ``docs/protocol.md`` section 7) and
the parameter checks of :class:`~hostdrv.switch.reference.SwitchModel`, which
the native engine's wrapper shares.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from hostdrv.wire.protocol import (
    BLOCK,
    ELEM_QUANTUM,
    MAX_JUMBO_ELEMS,
    MAX_RECORD_BYTES,
    PAYLOAD_OFFSET,
    VERSION,
)

__all__ = ["M32", "Egress", "Rx", "SwitchBlock", "check_params", "check_src_port"]

M32 = 0xFFFFFFFF
_TX = struct.Struct("!6s6sHBBHHHBBHIIHHHHBBBBHHIHII")  # Ethernet + IPv4 + UDP + header = 64 bytes
assert _TX.size == PAYLOAD_OFFSET
_ONE_HOT = frozenset(1 << i for i in range(8))


def _ip_checksum(total_len: int, src: int, dst: int) -> int:
    """RFC 791 checksum of the fixed IPv4 header the switch emits."""
    s = (0x4500 + total_len + 0x4000 + 0x4011
         + (src >> 16) + (src & 0xFFFF) + (dst >> 16) + (dst & 0xFFFF))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


@dataclass(frozen=True)
class Egress:
    """One frame the switch emits.

    Attributes
    ----------
    frame:
        The whole Ethernet/IPv4/UDP frame (no FCS).
    dst_ports:
        SUME egress port bitmap (8 bits, one-hot for unicast, multi-hot for
        multicast and flooding).
    """

    frame: bytes
    dst_ports: int


@dataclass(frozen=True, slots=True)
class Rx:
    """Addressing of the frame being processed, for unicast replies."""

    eth_src: bytes
    ip_src: int
    udp_src: int
    port: int


class SwitchBlock:
    """What every block of the reference switch shares: the rw registers by name
    (``_regs``), the counters (``_cnt``), counting and the frames the switch originates.
    :class:`~hostdrv.switch.reference.SwitchModel` owns the state."""

    _regs: dict[str, int]
    _cnt: dict[str, int]

    def _inc(self, name: str) -> None:
        self._cnt[name] = (self._cnt[name] + 1) & M32

    def _drop(self, reason: str) -> list[Egress]:
        self._inc("CNT_DROP_" + reason)
        return []

    def _frame(self, eth_dst: bytes, ip_dst: int, udp_dst: int, op: int, flags: int, worker: int,
               slot: int, seq: int, count: int, aux: int, payload: bytes, total: int = 0) -> bytes:
        """A frame the switch originates (section 7)."""
        regs = self._regs
        n = PAYLOAD_OFFSET + len(payload)
        ip_src = regs["SWITCH_IP"]
        mac = ((regs["SWITCH_MAC_HI"] << 32) | regs["SWITCH_MAC_LO"]).to_bytes(6, "big")
        hdr = _TX.pack(eth_dst, mac, 0x0800,
                       0x45, 0, n - 14, 0, 0x4000, 64, 17, _ip_checksum(n - 14, ip_src, ip_dst),
                       ip_src, ip_dst,
                       regs["UDP_PORT"], udp_dst, n - 34, 0,
                       VERSION, op, int(flags), regs["JOB_ID"], worker, slot, seq & M32, count,
                       aux & M32, total & M32)
        return hdr + payload


def check_src_port(src_port: int) -> None:
    """Raise ValueError unless ``src_port`` is a one-hot 8-bit SUME port bitmap."""
    if src_port not in _ONE_HOT:
        raise ValueError(f"src_port {src_port!r} must be a one-hot 8-bit port bitmap")


def _check_param(name: str, value: int, ok: bool, rule: str) -> None:
    if not ok:
        raise ValueError(f"{name}={value!r} is invalid: must be {rule}")


def check_params(capacity: int, record_bytes: int, max_slots: int, max_elems: int,
                 build_hash: int) -> None:
    """Raise ValueError when a switch parameter (see :class:`SwitchModel`) is out of range."""
    for name, value in (("capacity", capacity), ("record_bytes", record_bytes),
                        ("max_slots", max_slots), ("max_elems", max_elems),
                        ("build_hash", build_hash)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{name}={value!r} is invalid: must be an integer")
    _check_param("capacity", capacity, 1 <= capacity <= 1 << 31
                 and capacity & (capacity - 1) == 0, "a power of two in 1 .. 2**31")
    _check_param("record_bytes", record_bytes,
                 0 < record_bytes <= MAX_RECORD_BYTES and record_bytes % BLOCK == 0,
                 f"a positive multiple of 64, at most {MAX_RECORD_BYTES}")
    _check_param("max_slots", max_slots, 1 <= max_slots <= 64, "1 .. 64")
    _check_param("max_elems", max_elems,
                 ELEM_QUANTUM <= max_elems <= MAX_JUMBO_ELEMS and max_elems % ELEM_QUANTUM == 0,
                 f"a multiple of {ELEM_QUANTUM} in {ELEM_QUANTUM} .. {MAX_JUMBO_ELEMS}")
    _check_param("build_hash", build_hash, 0 <= build_hash <= M32, "a 32-bit value")
