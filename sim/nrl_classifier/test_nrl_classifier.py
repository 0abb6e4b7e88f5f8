"""cocotb testbench for ``hw/rtl/nrl_classifier.v`` against the model's classification.

Every frame the source sends must come out, whole and in order, on exactly one
of the three outputs:

* ``m_axis_l2`` when :meth:`hostdrv.switch.reference.SwitchModel.process` passes it
  (``CNT_PASS``): an ordinary frame, flooded to ``NRL_MAC_PORTS`` minus the
  source port (the model's egress ports land in TUSER[31:24]); ``stat_pass``
  pulses once per such frame;
* ``m_axis_rpl`` for a protocol frame whose opcode (byte ``OFF_OPCODE``) is a
  replay opcode (PUSH .. UPDATE), the frame being long enough to carry it;
* ``m_axis_agg`` for every other protocol frame (GRADIENT, RESULT, unknown
  opcodes, frames cut before the opcode): the aggregation engine owns their
  §6 checks.

The frame mix: ordinary random frames, valid protocol frames of every opcode
(and unknown ones), frames one field away from a protocol frame (EtherType,
IPv4 version/IHL, IPv4 protocol, UDP port) and short frames cut anywhere in
bytes 1..70. Random idle cycles on the input and random backpressure on each
output; TUSER passes unchanged except the L2 destination ports.

Environment: ``NRL_CLS_FRAMES`` (default 600), ``NRL_CLS_SEED``.
"""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Iterator

import cocotb
from cocotb.clock import Clock
from cocotb.handle import HierarchyObject
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from hostdrv.switch.reference import SwitchModel
from hostdrv.wire import consts as C

CLK_PERIOD_NS = 4
UDP_PORT = 0x4E52
REPLAY_OPS = range(C.OP_PUSH, C.OP_UPDATE + 1)


def _pause(rng: random.Random, p: float) -> Iterator[int]:
    while True:
        yield int(rng.random() < p)


def _protocol_frame(rng: random.Random, n: int, opcode: int, udp_port: int) -> bytes:
    """An Ethernet/IPv4/UDP frame of n bytes to udp_port with the given opcode (random elsewhere)."""
    f = bytearray(rng.getrandbits(8) for _ in range(max(n, C.PAYLOAD_OFFSET)))
    f[C.ETH_LEN - 2:C.ETH_LEN] = C.ETHERTYPE_IPV4.to_bytes(2, "big")
    f[C.IP_OFFSET] = C.IPV4_VER_IHL
    f[C.IP_OFFSET + 9] = C.IP_PROTO_UDP
    f[C.UDP_OFFSET + 2:C.UDP_OFFSET + 4] = udp_port.to_bytes(2, "big")
    f[C.OFF_VERSION] = C.VERSION
    f[C.OFF_OPCODE] = opcode
    return bytes(f[:n])


def frames(rng: random.Random, count: int) -> Iterator[tuple[bytes, int]]:
    """(frame, one-hot source port) pairs of the mix described above."""
    for _ in range(count):
        src = 1 << rng.randrange(8)
        kind = rng.random()
        op = rng.choice([*range(1, 8), *range(1, 8), 0, 8, 0x41, 0xFF])
        if kind < 0.2:  # ordinary frame
            n = rng.randrange(60, 300)
            f = bytes(rng.getrandbits(8) for _ in range(n))
        elif kind < 0.55:  # protocol frame
            f = _protocol_frame(rng, rng.randrange(C.PAYLOAD_OFFSET, 400), op, UDP_PORT)
        elif kind < 0.75:  # one field off
            f = bytearray(_protocol_frame(rng, rng.randrange(C.PAYLOAD_OFFSET, 200), op, UDP_PORT))
            field = rng.choice((C.ETH_LEN - 2, C.ETH_LEN - 1, C.IP_OFFSET, C.IP_OFFSET + 9,
                                C.UDP_OFFSET + 2, C.UDP_OFFSET + 3))
            f[field] ^= 1 << rng.randrange(8)
            f = bytes(f)
        else:  # cut short: around the UDP port and the opcode, or anywhere
            n = rng.choice((rng.randrange(1, 71), rng.randrange(C.HEADER_OFFSET - 6, C.OFF_OPCODE + 3)))
            f = _protocol_frame(rng, n, op, UDP_PORT)
        yield f, src


def expected(model: SwitchModel, frame: bytes, src: int) -> tuple[str, int]:
    """(output, TUSER[31:24]) the classifier must give the frame."""
    before = model.counters()["CNT_PASS"]
    out = model.process(frame, src)
    if model.counters()["CNT_PASS"] != before:
        assert len(out) == 1 and out[0].frame == frame
        return "l2", out[0].dst_ports
    if len(frame) > C.OFF_OPCODE and frame[C.OFF_OPCODE] in REPLAY_OPS:
        return "rpl", 0
    return "agg", 0


@cocotb.test()
async def test_classify_against_model(dut: HierarchyObject) -> None:
    """Random and malformed frames: output, order, data and TUSER as the model classifies them."""
    rng = random.Random(int(os.environ.get("NRL_CLS_SEED", str(cocotb.RANDOM_SEED))))
    count = int(os.environ.get("NRL_CLS_FRAMES", "600"))

    dut.rst.setimmediatevalue(1)
    dut.udp_port.value = UDP_PORT
    cocotb.start_soon(Clock(dut.clk, CLK_PERIOD_NS, unit="ns").start())
    source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
    sinks = {name: AxiStreamSink(AxiStreamBus.from_prefix(dut, f"m_axis_{name}"), dut.clk, dut.rst)
             for name in ("l2", "agg", "rpl")}
    for bfm in ("s_axis", "m_axis_l2", "m_axis_agg", "m_axis_rpl"):
        logging.getLogger(f"cocotb.{dut._name}.{bfm}").setLevel(logging.WARNING)
    source.set_pause_generator(_pause(rng, 0.2))
    for i, sink in enumerate(sinks.values()):
        sink.set_pause_generator(_pause(rng, (0.1, 0.3, 0.5)[i]))

    passes = 0

    async def count_pass() -> None:
        nonlocal passes
        while True:
            await RisingEdge(dut.clk)
            passes += int(dut.stat_pass.value)

    await ClockCycles(dut.clk, 4)
    dut.rst.value = 0
    await ClockCycles(dut.clk, 4)
    cocotb.start_soon(count_pass())

    model = SwitchModel()
    model.write("UDP_PORT", UDP_PORT)
    want: dict[str, list[tuple[bytes, int]]] = {name: [] for name in sinks}
    for frame, src in frames(rng, count):
        out, ports = expected(model, frame, src)
        tuser = len(frame) | (src << 16)
        want[out].append((frame, tuser | (ports << 24) if out == "l2" else tuser))
        await source.send(AxiStreamFrame(frame, tuser=tuser))

    for name, sink in sinks.items():
        for i, (frame, tuser) in enumerate(want[name]):
            got = await sink.recv()
            data = bytes(got.tdata)
            assert data == frame, f"{name} frame {i}: {data[:48].hex()} != {frame[:48].hex()}"
            users = got.tuser if isinstance(got.tuser, list) else [got.tuser]
            assert all(int(u) == tuser for u in users), \
                f"{name} frame {i}: TUSER {[hex(int(u)) for u in users]} != {tuser:#x}"
    await ClockCycles(dut.clk, 50)
    for name, sink in sinks.items():
        assert sink.empty(), f"{name}: frames beyond the expected ones"
    assert passes == len(want["l2"]) == model.counters()["CNT_PASS"], \
        f"stat_pass {passes}, L2 frames {len(want['l2'])}, model CNT_PASS {model.counters()['CNT_PASS']}"
    dut._log.info("frames: l2 %d agg %d rpl %d",
                  len(want["l2"]), len(want["agg"]), len(want["rpl"]))
