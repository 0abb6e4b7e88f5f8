"""cocotb testbench for ``hw/rtl/nrl_hdr_check.v`` against the model's checks 1 and 2.

One header enters every clock, back to back (the module has no handshake);
its three flags come out ``IN_REG + 2`` clocks later and must equal what
:meth:`hostdrv.switch.reference.SwitchModel.process` says of the same bytes:

* ``rx``: the frame moves a ``CNT_RX_*`` counter;
* ``bad_length``: the frame with its version byte broken is dropped as
  ``BAD_LENGTH``, not ``BAD_HEADER`` (so only check 1 can say so), or, with
  ``CHECK_BEATS``, ``frame_beats`` is not the number of beats n bytes fill;
* ``bad_header``: the 64 header bytes the module sees, as a 64-byte frame
  with consistent IPv4 and UDP lengths (check 1 passes), are dropped as
  ``BAD_HEADER``.

Frames come from :func:`hostdrv.wire.protocol.build_frame` with random fields and
payload lengths (up to the 16-bit TUSER limit), then at most a few faults:
cut below 64 bytes, IPv4 or UDP length off, wrong beat count, version,
an opcode of the engine's stream that is not the engine's (the classifier
sends opcodes 3..7 to the replay engine, every other one to the aggregation
engine), reserved flag bits, a nonzero word at offset 60. Bytes past the end
of a cut frame keep the uncut frame's values (stale bytes of the header
view).

Environment (from the pytest driver): ``NRL_HDR_REPLAY``, ``NRL_HDR_CHECK_BEATS``,
``NRL_HDR_IN_REG``, ``NRL_HDR_WIDTH`` (the module's parameters);
``NRL_HDR_FRAMES`` (default 1500), ``NRL_HDR_SEED``.
"""

from __future__ import annotations

import os
import random
import struct
from collections import Counter
from dataclasses import dataclass

import cocotb
from cocotb.clock import Clock
from cocotb.handle import HierarchyObject
from cocotb.triggers import FallingEdge

from hostdrv.switch.reference import SwitchModel
from hostdrv.wire import consts as C
from hostdrv.wire.protocol import Frame, Message, build_frame

CLK_PERIOD_NS = 4
SRC_PORT = 1
HDR_BYTES = C.PAYLOAD_OFFSET
BEATS_MASK = (1 << 12) - 1  # frame_beats is 12 bits wide
REPLAY_STREAM = range(C.OP_PUSH, C.OP_UPDATE + 1)  # the classifier's replay opcodes
OFF_IP_LEN = C.IP_OFFSET + 2
OFF_UDP_LEN = C.UDP_OFFSET + 4
RX_COUNTERS = ("CNT_RX_GRADIENT", "CNT_RX_RESULT", "CNT_RX_PUSH", "CNT_RX_SAMPLE", "CNT_RX_UPDATE")

FAULTS = ("short", "ip_len", "udp_len", "beats", "version", "opcode", "flags", "total")


@dataclass
class Case:
    """One header: the frame, the module's inputs and its expected flags."""

    frame: bytes
    hdr: bytes
    n: int
    beats: int
    faults: tuple[str, ...]
    rx: bool = False
    bad_length: bool = False
    bad_header: bool = False


def _stream_ops(replay: bool) -> tuple[list[int], list[int]]:
    """(the engine's opcodes, the other opcodes of its stream), by what the model receives."""
    stream = [op for op in range(256) if (op in REPLAY_STREAM) == replay]
    model = SwitchModel()
    mine = []
    for op in stream:
        f = build_frame(Frame(Message(op)), validate=False)
        before = model.counters()
        model.process(f, SRC_PORT)
        if any(model.counters()[c] != before[c] for c in RX_COUNTERS):
            mine.append(op)
    return mine, [op for op in stream if op not in mine]


def _beats(n: int, width: int) -> int:
    return -(-n // (width // 8)) & BEATS_MASK


def make_case(rng: random.Random, replay: bool, check_beats: bool, width: int,
              mine: list[int], others: list[int]) -> Case:
    """A random frame of the engine's stream with a random set of faults."""
    k = rng.choice((0, 0, 0, 1, 1, 1, 2, 3))
    pool = [f for f in FAULTS if (f != "beats" or check_beats) and (f != "total" or replay)]
    faults = tuple(rng.sample(pool, k))
    op = rng.choice(others) if "opcode" in faults else rng.choice(mine)
    flags = rng.randrange(C.FLAGS_MASK + 1)
    if "flags" in faults:
        flags |= rng.randrange(1, 256 >> C.FLAGS_MASK.bit_length()) << C.FLAGS_MASK.bit_length()
    version = C.VERSION
    if "version" in faults:
        version = rng.choice([v for v in range(256) if v != C.VERSION])
    if "total" in faults:
        total = rng.randrange(1, 1 << 32)
    elif replay:
        total = 0
    else:
        total = rng.choice((0, rng.randrange(1 << 32)))
    size = rng.random()
    if size < 0.05:
        plen = rng.randrange(C.MAX_FRAME_LEN - HDR_BYTES - 2000, C.MAX_FRAME_LEN - HDR_BYTES + 1)
    elif size < 0.3:
        plen = rng.randrange(0, 3 * width // 8)
    else:
        plen = rng.randrange(0, C.MAX_ETH_FRAME - HDR_BYTES + 1)
    msg = Message(op, flags, rng.randrange(256), rng.randrange(1 << 16), rng.randrange(1 << 16),
                  rng.randrange(1 << 32), rng.randrange(1 << 16), rng.randrange(1 << 32),
                  rng.randbytes(plen), version=version, total=total)
    full = bytearray(build_frame(Frame(msg, udp_src=rng.randrange(1 << 16)), validate=False))
    n = len(full)
    if "short" in faults:
        n = rng.randrange(C.HEADER_OFFSET, HDR_BYTES)
        struct.pack_into("!H", full, OFF_IP_LEN, n - C.IP_OFFSET)
        struct.pack_into("!H", full, OFF_UDP_LEN, n - C.UDP_OFFSET)
    for fault, off in (("ip_len", OFF_IP_LEN), ("udp_len", OFF_UDP_LEN)):
        if fault in faults:
            (v,) = struct.unpack_from("!H", full, off)
            struct.pack_into("!H", full, off, (v + rng.choice((1, -1, rng.randrange(1 << 16)))) & 0xFFFF)
    beats = _beats(n, width)
    if "beats" in faults:
        beats = rng.choice([b for b in (beats - 1, beats + 1, rng.randrange(1 << 12))
                            if b & BEATS_MASK != beats]) & BEATS_MASK
    return Case(bytes(full[:n]), bytes(full[:HDR_BYTES]), n, beats, faults)


def _moved(model: SwitchModel, frame: bytes) -> set[str]:
    """The counters ``frame`` moves in the model."""
    before = model.counters()
    model.process(frame, SRC_PORT)
    return {k for k, v in model.counters().items() if v != before[k]}


def expect(model: SwitchModel, case: Case, check_beats: bool, width: int) -> None:
    """Fill in the flags the model gives ``case``."""
    case.rx = bool(_moved(model, case.frame) & set(RX_COUNTERS))

    probe = bytearray(case.frame)
    if len(probe) > C.OFF_VERSION:
        probe[C.OFF_VERSION] = (C.VERSION + 1) & 0xFF
    moved = _moved(model, bytes(probe))
    assert moved & {"CNT_DROP_BAD_LENGTH", "CNT_DROP_BAD_HEADER"}, moved
    case.bad_length = "CNT_DROP_BAD_LENGTH" in moved
    if check_beats:
        case.bad_length |= case.beats != _beats(case.n, width)

    probe = bytearray(case.hdr)
    struct.pack_into("!H", probe, OFF_IP_LEN, HDR_BYTES - C.IP_OFFSET)
    struct.pack_into("!H", probe, OFF_UDP_LEN, HDR_BYTES - C.UDP_OFFSET)
    case.bad_header = "CNT_DROP_BAD_HEADER" in _moved(model, bytes(probe))


@cocotb.test()
async def test_checks_against_model(dut: HierarchyObject) -> None:
    """Back-to-back random and malformed headers: rx, bad_length, bad_header as the model says."""
    replay = os.environ["NRL_HDR_REPLAY"] == "1"
    check_beats = os.environ["NRL_HDR_CHECK_BEATS"] == "1"
    latency = int(os.environ["NRL_HDR_IN_REG"]) + 2
    width = int(os.environ["NRL_HDR_WIDTH"])
    rng = random.Random(int(os.environ.get("NRL_HDR_SEED", str(cocotb.RANDOM_SEED))))
    count = int(os.environ.get("NRL_HDR_FRAMES", "1500"))

    mine, others = _stream_ops(replay)
    model = SwitchModel()
    cases = []
    for _ in range(count):
        case = make_case(rng, replay, check_beats, width, mine, others)
        expect(model, case, check_beats, width)
        cases.append(case)

    cocotb.start_soon(Clock(dut.clk, CLK_PERIOD_NS, unit="ns").start())
    errors = 0
    for t in range(count + latency):
        await FallingEdge(dut.clk)
        if t >= latency:
            case = cases[t - latency]
            got = (bool(dut.rx.value), bool(dut.bad_length.value), bool(dut.bad_header.value))
            want = (case.rx, case.bad_length, case.bad_header)
            if got != want:
                errors += 1
                dut._log.error("header %d (n=%d beats=%d faults=%s): (rx, bad_length, bad_header) "
                               "%s != model %s; bytes 0..63 %s", t - latency, case.n, case.beats,
                               case.faults, got, want, case.hdr.hex())
        if t < count:
            case = cases[t]
            dut.hdr.value = int.from_bytes(case.hdr, "little")
            dut.frame_len.value = case.n
            dut.frame_beats.value = case.beats
    assert errors == 0, f"{errors} of {count} headers differ from the model"

    # the mix reached every fault, each flag both ways, and clean frames the engine accepts
    seen = Counter(f for c in cases for f in c.faults)
    pool = [f for f in FAULTS if (f != "beats" or check_beats) and (f != "total" or replay)]
    assert all(seen[f] for f in pool), f"faults not generated: {seen}"
    for flag in ("rx", "bad_length", "bad_header"):
        values = {getattr(c, flag) for c in cases}
        assert values == {False, True}, f"{flag} never {not values.pop()}"
    clean = sum(1 for c in cases if c.rx and not c.bad_length and not c.bad_header)
    assert clean, "no frame passed both checks"
    dut._log.info("headers %d: clean %d, faults %s", count, clean, dict(seen))
