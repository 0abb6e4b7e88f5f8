"""Golden model and native engine: the learning switch of ordinary traffic.

The rules of docs/architecture.md (L2 switching), one by one: flooding of
broadcast, multicast, unknown and short frames; forwarding to a learned port;
filtering of a destination learned on the source port; learning from protocol
frames; moves; multicast sources; round-robin replacement of a full table;
aging in received frames (1 to 2 periods, a write restarts the period, 0 is
off); CNT_PASS. Expected values come from those rules, never from the model.
"""

from __future__ import annotations

import pytest
from engines import ENGINES, use_engine

from hostdrv.switch.reference import MAC_PORTS, Egress, SwitchModel
from hostdrv.wire import consts as C
from hostdrv.wire import protocol as P
from hostdrv.wire import regmap


@pytest.fixture(autouse=True, params=ENGINES)
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs on the golden model and on the native engine."""
    return use_engine(__name__, request, monkeypatch)


A, B, D = 0x01, 0x04, 0x10  # three MAC ports
DMA0 = 0x02


def mac(i: int) -> bytes:
    return bytes([0x02, 0, 0, 0, 0x33, i])


def eth(dst: bytes, src: bytes, n: int = 60) -> bytes:
    return (dst + src + b"\x88\xb5" + bytes(max(n - 14, 0)))[:n]


def flood(src: int) -> int:
    return MAC_PORTS & ~src


def to(sw: SwitchModel, dst: bytes, src: bytes, port: int, n: int = 60) -> int | None:
    """Egress bitmap of one ordinary frame, None when filtered (nothing sent)."""
    f = eth(dst, src, n)
    out = sw.process(f, port)
    assert len(out) <= 1
    if not out:
        return None
    assert out == [Egress(f, out[0].dst_ports)]
    return out[0].dst_ports


def protocol_frame(src_mac: bytes) -> bytes:
    """A GRADIENT from an unknown worker (dropped by the engine, but it teaches the table)."""
    msg = P.Message(P.Opcode.GRADIENT, 0, 0, 7, 0, 0, 16, 0, bytes(64), P.VERSION, 16)
    return P.build_frame(P.Frame(msg, eth_src=src_mac, ip_src=0x0A000099, ip_dst=0x0A000001,
                                 udp_src=40000, udp_dst=P.DEFAULT_UDP_PORT), validate=False)


def test_flood_learn_forward_filter() -> None:
    sw = SwitchModel()
    assert to(sw, mac(2), mac(1), A) == flood(A)          # unknown destination
    assert to(sw, mac(1), mac(2), B) == A                 # 1 was learned on A
    assert to(sw, mac(2), mac(1), A) == B                 # 2 was learned on B
    assert to(sw, mac(1), mac(3), A) is None              # 1 is on A, the sender's port
    assert to(sw, b"\xff" * 6, mac(1), A) == flood(A)     # broadcast
    assert to(sw, bytes([0x01, 0, 0x5E, 0, 0, 1]), mac(1), A) == flood(A)  # multicast
    assert sw.counters()["CNT_PASS"] == 6
    assert sum(sw.counters().values()) == 6


def test_short_frames_flood_and_teach_nothing() -> None:
    sw = SwitchModel()
    to(sw, mac(9), mac(1), A)
    assert to(sw, mac(1), mac(2), B, n=C.ETH_LEN - 1) == flood(B)  # too short to look up
    assert to(sw, mac(2), mac(3), D) == flood(D)                    # 2 was not learned
    assert to(sw, mac(1), mac(2), B, n=C.ETH_LEN) == A              # 14 bytes: a header


def test_dma_port_and_move() -> None:
    sw = SwitchModel()
    to(sw, mac(9), mac(1), DMA0)
    assert to(sw, mac(1), mac(2), A) == DMA0   # a learned DMA port is a port
    to(sw, mac(9), mac(1), D)                  # 1 moved to D
    assert to(sw, mac(1), mac(2), A) == D


def test_multicast_source_teaches_nothing() -> None:
    """Multicast sources take no entry: L2_ENTRIES unicast MACs still all fit after them."""
    sw = SwitchModel()
    for i in range(C.L2_ENTRIES):
        to(sw, mac(99), bytes([0x03, 0, 0, 0, 0, i]), B)
    for i in range(C.L2_ENTRIES):
        to(sw, mac(99), mac(i), A)
    for i in range(C.L2_ENTRIES):
        assert to(sw, mac(i), mac(98), B) == A


def test_protocol_frames_teach() -> None:
    sw = SwitchModel()
    before = sw.counters()
    assert sw.process(protocol_frame(mac(5)), D) == []
    assert sw.counters()["CNT_PASS"] == before["CNT_PASS"]
    assert to(sw, mac(5), mac(1), A) == D


def test_full_table_replaces_round_robin() -> None:
    sw = SwitchModel()
    sw.write("L2_AGE_FRAMES", 0)
    n = C.L2_ENTRIES
    for i in range(n):
        to(sw, b"\xff" * 6, mac(i), A)
    assert to(sw, mac(0), mac(99), B) == A         # all n known (99 takes entry 0: mac(0) out)
    assert to(sw, mac(0), mac(98), B) == flood(B)  # mac(0) is gone; 98 replaced mac(1)
    assert to(sw, mac(1), mac(99), B) == flood(B)
    for i in range(2, n):
        assert to(sw, mac(i), mac(99), B) == A
    to(sw, b"\xff" * 6, mac(5), D)                 # a known MAC moves: no replacement
    assert to(sw, mac(2), mac(99), B) == A


def test_aging_one_to_two_periods() -> None:
    sw = SwitchModel()
    sw.write("L2_AGE_FRAMES", 4)
    to(sw, mac(9), mac(1), A)          # frame 1 of period 1: 1 learned, active
    for _ in range(3):                 # frames 2..4: the 4th ends period 1 (1 was active)
        to(sw, b"\xff" * 6, mac(2), B)
    assert to(sw, mac(1), mac(3), B) == A     # frame 1 of period 2: 1 still there
    for _ in range(2):                        # frames 2, 3
        to(sw, b"\xff" * 6, mac(2), B)
    assert to(sw, mac(1), mac(3), B) == A     # frame 4 ends period 2: 1 was idle, removed
    assert to(sw, mac(1), mac(3), B) == flood(B)


def test_aging_write_restarts_and_zero_is_off() -> None:
    sw = SwitchModel()
    sw.write("L2_AGE_FRAMES", 3)
    to(sw, mac(9), mac(1), A)
    to(sw, mac(9), mac(2), B)
    sw.write("L2_AGE_FRAMES", 3)   # the period restarts: 3 more frames to its end
    to(sw, mac(9), mac(2), B)
    to(sw, mac(9), mac(2), B)
    assert to(sw, mac(1), mac(2), B) == A  # the 3rd frame ends period 1; 1 was active
    sw.write("L2_AGE_FRAMES", 0)
    for _ in range(50):
        to(sw, mac(9), mac(2), B)
    assert to(sw, mac(1), mac(2), B) == A
    assert sw.read("L2_AGE_FRAMES") == 0


def test_age_register_reset_and_refresh() -> None:
    sw = SwitchModel()
    assert sw.read("L2_AGE_FRAMES") == regmap.REGISTERS["L2_AGE_FRAMES"].reset
    sw.write("L2_AGE_FRAMES", 2)
    to(sw, mac(9), mac(1), A)
    for _ in range(10):            # 1 keeps talking: never aged
        to(sw, mac(9), mac(1), A)
        to(sw, mac(9), mac(2), B)
    assert to(sw, mac(1), mac(2), B) == A
