"""Golden model: classification, the checks of section 6 and their drop reasons.

Expected values come from the inputs and docs/protocol.md, never from the model; every
test runs on the golden model and on the native engine (helpers: ``tests/modelutil.py``).
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
from engines import ENGINES, use_engine
from modelutil import (
    JOB,
    UDP,
    frame_from,
    grad,
    make_switch,
    nonzero,
    parse,
    ref_fp32,
    send,
    w_ip,
    w_mac,
    w_udp,
)

from hostdrv.switch.reference import Egress, SwitchModel
from hostdrv.wire import protocol as P
from hostdrv.wire import regmap
from hostdrv.wire.protocol import Flags, Message, Opcode


@pytest.fixture(autouse=True, params=ENGINES)
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs on the golden model and on the native engine."""
    return use_engine("modelutil", request, monkeypatch)  # make_switch lives there


# ---------------------------------------------------------------------------
# classification


@pytest.mark.parametrize("src", [1 << i for i in range(8)])
def test_passthrough(src: int) -> None:
    sw = make_switch()
    arp = bytes(6) + w_mac(1) + b"\x08\x06" + bytes(46)
    other_udp = bytearray(grad(np.zeros(32, np.float32), 0))
    other_udp[36:38] = (UDP + 1).to_bytes(2, "big")
    options = bytearray(grad(np.zeros(32, np.float32), 0))
    options[14] = 0x46
    tcp = bytearray(grad(np.zeros(32, np.float32), 0))
    tcp[23] = 6
    short = bytes(grad(np.zeros(32, np.float32), 0)[:41])
    frames = [arp, bytes(other_udp), bytes(options), bytes(tcp), short]
    for f in frames:
        out = sw.process(f, src)
        assert out == [Egress(f, 0x55 & ~src)]
    c = sw.counters()
    assert c["CNT_PASS"] == len(frames)
    assert sum(c.values()) == len(frames)


def test_udp_port_register_reclassifies() -> None:
    sw = make_switch(n=1, p=16)
    f = grad(np.ones(16, np.float32), 0, udp_dst=9999)
    assert send(sw, f, 0)[0].dst_ports == 0x55 & ~1
    sw.write("UDP_PORT", 9999)
    out = send(sw, f, 0)
    assert len(out) == 1 and parse(out[0]).message.opcode == Opcode.RESULT
    assert struct.unpack_from("!H", out[0].frame, 36)[0] == 9999  # multicast to UDP_PORT


def test_src_port_must_be_one_hot() -> None:
    sw = make_switch()
    for bad in (0, 3, 0x100, -1):
        with pytest.raises(ValueError, match="src_port"):
            sw.process(grad(np.zeros(32, np.float32), 0), bad)

# ---------------------------------------------------------------------------
# checks and drop reasons

P16 = 16


def base_msg(**changes: object) -> Message:
    msg = P.gradient(np.arange(P16, dtype=np.float32), job=JOB, worker=1, slot=1, round_=0)
    return P.with_fields(msg, **changes)


def fix_lengths(f: bytearray) -> bytes:
    f[16:18] = (len(f) - 14).to_bytes(2, "big")
    f[38:40] = (len(f) - 34).to_bytes(2, "big")
    return bytes(f)


def bad(reason: str) -> list[tuple[str, bytes, int]]:
    """(case name, frame, ingress port) failing only ``reason``."""
    ok = frame_from(base_msg(), 1)
    short = fix_lengths(bytearray(ok[:63]))
    ip_len = bytearray(ok)
    ip_len[17] ^= 1
    udp_len = bytearray(ok)
    udp_len[39] ^= 2
    oversize = bytearray(ok + bytes(65536 - len(ok)))
    oversize[16:18] = ((len(oversize) - 14) & 0xFFFF).to_bytes(2, "big")
    oversize[38:40] = ((len(oversize) - 34) & 0xFFFF).to_bytes(2, "big")
    oversize = bytes(oversize)
    cases = {
        "BAD_LENGTH": [
            ("short", short, 2), ("ip_len", bytes(ip_len), 2), ("udp_len", bytes(udp_len), 2),
            ("payload_short", frame_from(base_msg(payload=bytes(4 * P16 - 4)), 1, validate=False), 2),
            ("payload_long", frame_from(base_msg(payload=bytes(4 * P16 + 64)), 1, validate=False), 2),
            # longer than TUSER's 16-bit length: only a soft switch datagram can be
            ("oversize", oversize, 2),
        ],
        "BAD_HEADER": [
            ("version", frame_from(base_msg(version=2), 1, validate=False), 2),
            ("opcode0", frame_from(base_msg(opcode=0), 1, validate=False), 2),
            ("opcode8", frame_from(base_msg(opcode=8), 1, validate=False), 2),
            ("push_ack", frame_from(base_msg(opcode=Opcode.PUSH_ACK), 1, validate=False), 2),
            ("sample_resp", frame_from(base_msg(opcode=Opcode.SAMPLE_RESP), 1, validate=False), 2),
            ("flags", frame_from(base_msg(flags=P.FLAGS_MASK + 1), 1, validate=False), 2),
            ("flags_high", frame_from(base_msg(flags=0x80), 1, validate=False), 2),
        ],
        "BAD_JOB": [("job", frame_from(base_msg(job=JOB + 1), 1), 2)],
        "UNKNOWN_WORKER": [
            ("worker8", frame_from(base_msg(worker=8), 1, validate=False), 2),
            ("worker_ge_n", frame_from(base_msg(worker=4), 1), 2),
            ("worker_300", frame_from(base_msg(worker=300), 1, validate=False), 2),
            ("role", frame_from(base_msg(worker=3), 3), 8),  # role cleared below
        ],
        "SPOOFED": [
            ("port", ok, 4), ("ip", frame_from(base_msg(), 1, ip_src=w_ip(2)), 2),
            ("udp", frame_from(base_msg(), 1, udp_src=w_udp(2)), 2),
        ],
        "BAD_COUNT": [
            ("count", frame_from(P.gradient(np.arange(32, dtype=np.float32), job=JOB,
                                            worker=1, slot=1, round_=0), 1), 2),
            ("count0", frame_from(base_msg(count=0, payload=b""), 1, validate=False), 2),
            ("total0", frame_from(base_msg(total=0), 1, validate=False), 2),
        ],
        "BAD_DTYPE": [("int32", frame_from(base_msg(flags=int(Flags.INT32)), 1), 2)],
        "BAD_SLOT": [("slot", frame_from(base_msg(slot=2), 1), 2)],
        # AGG_EPOCH 0: rounds 2**25 .. 2**31 - 1 are too far ahead
        "AHEAD": [("ahead", frame_from(base_msg(seq=1 << 25, aux=1 << 25), 1), 2),
                  ("far_ahead", frame_from(base_msg(seq=(1 << 31) - 1), 1), 2)],
    }
    return cases[reason]


REASONS = ["BAD_LENGTH", "BAD_HEADER", "BAD_JOB", "UNKNOWN_WORKER", "SPOOFED", "BAD_COUNT",
           "BAD_DTYPE", "BAD_SLOT", "AHEAD"]


def drop_switch() -> SwitchModel:
    sw = make_switch(n=4, p=P16, slots=2)
    sw.write("MEMBER_ROLE_3", 0b110)
    return sw


@pytest.mark.parametrize("reason", REASONS)
def test_drop_reason(reason: str) -> None:
    for name, f, port in bad(reason):
        sw = drop_switch()
        assert sw.process(f, port) == [], name
        rx = {"CNT_RX_GRADIENT": 1} if len(f) >= 44 and f[43] == Opcode.GRADIENT else {}
        assert nonzero(sw, dict.fromkeys(regmap.COUNTERS, 0)) == \
            {**rx, f"CNT_DROP_{reason}": 1}, name
        # nothing of the dropped packet stayed: a full round completes with the right sum
        xs = [np.full(P16, 0.5 + i, np.float32) for i in range(4)]
        for i in range(3):
            assert send(sw, frame_from(base_msg(worker=i, payload=xs[i].tobytes()), i), i) == []
        sw.write("MEMBER_ROLE_3", 1)  # member table writes leave the slots alone
        out = send(sw, frame_from(base_msg(worker=3, payload=xs[3].tobytes()), 3), 3)
        assert np.array_equal(parse(out[0]).message.elements(), ref_fp32(xs)), name


def test_disabled() -> None:
    sw = drop_switch()
    sw.write("CTRL", 0b10)
    before = sw.counters()
    assert sw.process(frame_from(base_msg(), 1), 2) == []
    assert nonzero(sw, before) == {"CNT_RX_GRADIENT": 1, "CNT_DROP_DISABLED": 1}
    assert sw.read("CTRL") == 0b10


def test_member_udp_zero_accepts_any_port() -> None:
    sw = drop_switch()
    sw.write("MEMBER_UDP_1", 0)
    assert sw.process(frame_from(base_msg(), 1, udp_src=1234), 2) == []
    assert sum(v for k, v in sw.counters().items() if k.startswith("CNT_DROP")) == 0


def test_check_order() -> None:
    """A frame failing two checks is counted under the earlier one (section 6)."""
    order = ["BAD_LENGTH", "BAD_HEADER", "BAD_JOB", "DISABLED", "UNKNOWN_WORKER", "SPOOFED",
             "BAD_COUNT", "BAD_LENGTH", "BAD_DTYPE", "BAD_SLOT", "AHEAD"]

    def msg_and_frame(fails: set[int]) -> tuple[bytes, int, bool]:
        ch: dict[str, object] = {}
        over: dict[str, object] = {}
        port, disabled = 2, False
        if 1 in fails:
            ch["version"] = 2
        if 2 in fails:
            ch["job"] = JOB + 1
        if 3 in fails:
            disabled = True
        if 4 in fails:
            ch["worker"] = 5
        if 5 in fails:
            over["ip_src"] = 99
        if 6 in fails:
            ch["count"] = 32  # the payload stays 16 elements: count is checked first
        if 7 in fails:
            ch["payload"] = bytes(4 * P16 + 4)
        if 8 in fails:
            ch["flags"] = int(Flags.INT32)
        if 9 in fails:
            ch["slot"] = 5
        if 10 in fails:
            ch["seq"] = 1 << 25
        f = bytearray(frame_from(base_msg(**ch), 1, validate=False, **over))
        if 0 in fails:
            f[17] ^= 1
        return bytes(f), port, disabled

    for i in range(len(order)):
        for j in range(i + 1, len(order)):
            f, port, disabled = msg_and_frame({i, j})
            sw = drop_switch()
            if disabled:
                sw.write("CTRL", 0b10)
            assert sw.process(f, port) == []
            drops = {k: v for k, v in sw.counters().items() if k.startswith("CNT_DROP") and v}
            assert drops == {f"CNT_DROP_{order[i]}": 1}, (order[i], order[j])


def test_rx_counted_before_checks() -> None:
    sw = drop_switch()
    f = frame_from(base_msg(), 1)
    sw.process(f[:44], 2)  # opcode byte present, too short
    sw.process(f[:43], 2)  # no opcode byte: no RX count
    c = sw.counters()
    assert c["CNT_RX_GRADIENT"] == 1 and c["CNT_DROP_BAD_LENGTH"] == 2
    res = frame_from(P.result(np.zeros(P16, np.float32), job=JOB, slot=0, round_=0,
                              contributors=1), 1)
    sw.process(res, 2)
    c = sw.counters()
    assert c["CNT_RX_RESULT"] == 1 and c["CNT_DROP_SPOOFED"] == 1
