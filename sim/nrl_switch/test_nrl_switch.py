"""cocotb testbench for ``hw/rtl/nrl_switch.v``: the whole switch against the reference model.

One scenario of mixed traffic (``sim/common/switch_scenario.py``, shared
with ``tests/test_rtlsim.py``) goes through the switch: ordinary L2 frames
(non-IP, IPv4 TCP, UDP to another port, IPv4 with options, runts), L2
unicast between hosts and to the members (``l2_unicast_frames``: the
learning switch forwards to learned ports, MACs the protocol frames taught
included, floods unknown destinations, filters a destination on the
sender's own port, follows a host that moves), gradient
rounds from three workers (chunks of a tensor of ``TENSOR`` elements:
completed rounds, an interleaved second slot, duplicates that trigger a
resend, a round of fp32 special values, a round that fails on a tensor
length mismatch with its ERROR RESULT multicast and re-sent), replay
PUSHes, uniform and prioritized SAMPLE_REQs, an UPDATE with an
out-of-range index, malformed protocol frames that each engine must drop
(wrong job, too short, unknown worker, missing role) and a frame of every
length 1..63. The classes are interleaved at random (seeded) while
each keeps its own order. The configuration writes AGG_EPOCH.

Expected output comes from :class:`hostdrv.switch.reference.SwitchModel` fed the same
frames with the same ingress ports and configured through the same register
writes. Frames leave the switch through a round-robin merge, so the order
*between* the classes (L2 flood, aggregation engine, replay engine) may
differ from the model's; *within* each class the frames and destination
bitmaps must match the model in order. After the traffic every counter is
read over AXI4-Lite and compared with the model (the shared drop counters
are the sum of both engines' counts; CNT_DROP_MISMATCH comes from the
aggregation engine through the register split) and the sink must be empty.
``run_registers`` checks AGG_EPOCH through the split and the refusal of
MEMBER_PORT / AGG_UPLINK_PORT values that are not 0 or one-hot (SLVERR from
both engines' register files, value kept in both).

The scenario runs under all four combinations of source idle cycles and sink
backpressure (``sim.common.tb.StreamTB.set_stress``), with a fresh model and a
reset DUT each time.

Environment:
    ``NRL_TRAFFIC``  classes of input traffic, comma separated (default
                     ``l2,agg,rpl``); fewer classes help bring-up
                     without an engine (``l2`` alone needs neither)
    ``NRL_SEED``     interleaving seed (default 1)
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass

import cocotb
import numpy as np
from cocotb.handle import HierarchyObject
from cocotb.triggers import ClockCycles, RisingEdge, SimTimeoutError
from cocotbext.axi import AxiResp

from hostdrv.switch.reference import MAC_PORTS, SwitchModel
from hostdrv.wire import protocol as proto
from hostdrv.wire import regmap
from sim.common.switch_scenario import (
    EPOCH,
    JOB,
    MEMBERS,
    PORT_DMA0,
    PORT_MAC,
    SWITCH_MAC,
    agg_frames,
    config_writes,
    gradient_frame,
    interleave,
    l2_frames,
    member_frame,
    mismatch_frames,
    rpl_frames,
    short_frames,
)
from sim.common.tb import STRESS, StreamTB, model_refuses

CLK_PERIOD_NS = 5
"""200 MHz, the SUME datapath clock."""

L2, AGG, RPL = "l2", "agg", "rpl"
CLASSES = (L2, AGG, RPL)

HOSTS = [(bytes([2, 0, 0, 0, 0x20, i]), port) for i, port in enumerate((*PORT_MAC, PORT_DMA0, 0x08))]
"""Hosts behind the switch for L2 unicast: (MAC, one-hot port), on MAC and DMA ports."""


def l2_unicast_frames(rng: random.Random, count: int = 48, *,
                      filtered: bool = True) -> list[tuple[bytes, int]]:
    """Ordinary unicast frames between ``HOSTS`` and to the members (whose MACs the
    protocol frames teach the switch): learned destinations go to their port only,
    never-seen ones are flooded; with ``filtered``, frames to the sender's own MAC
    (learned on its own port: filtered) and a host that moves to another port."""
    hosts = [list(h) for h in HOSTS]
    members = [bytes([2, 0, 0, 0, 1, m]) for m in range(len(MEMBERS))]
    out = []
    for k in range(count):
        h = rng.choice(hosts)
        if filtered and k == count // 2:
            h[1] = PORT_MAC[(PORT_MAC.index(h[1]) + 1) % 4] if h[1] in PORT_MAC else PORT_MAC[0]
        r = rng.random()
        if r < 0.3:
            dst = rng.choice(members)
        elif r < 0.4:
            dst = bytes([2, 0, 0, 0, 0x30, k])  # nobody: flooded
        elif r < 0.5 and filtered:
            dst = h[0]
        else:
            dst = rng.choice([g for g in hosts if g is not h])[0]
        n = rng.randrange(60, 200)
        out.append((dst + h[0] + b"\x88\xb5" + bytes(rng.getrandbits(8) for _ in range(n - 14)),
                    h[1]))
    return out



@dataclass(frozen=True)
class Out:
    """One frame leaving the switch and its destination port bitmap."""

    frame: bytes
    dst: int

    def __str__(self) -> str:
        return f"dst={self.dst:#04x} len={len(self.frame)} {self.frame[:64].hex()}"


def input_class(frame: bytes, udp_port: int = proto.DEFAULT_UDP_PORT) -> str:
    """Which path of the switch a frame takes (docs/protocol.md section 1)."""
    if not proto.is_protocol_frame(frame, udp_port):
        return L2
    return RPL if len(frame) > 43 and 3 <= frame[43] <= 7 else AGG


def output_class(frame: bytes) -> str:
    """Which path of the switch emitted a frame: engines send from SWITCH_MAC."""
    if frame[6:12] == SWITCH_MAC and len(frame) > 43:
        return RPL if 3 <= frame[43] <= 7 else AGG
    return L2


# ---------------------------------------------------------------------------
# testbench


class TB(StreamTB):
    """The common stream testbench (sim.common.tb) around nrl_switch at the SUME clock."""

    IDLE_PATTERN = BACKPRESSURE_PATTERN = (1, 1, 1, 0)

    def __init__(self, dut: HierarchyObject) -> None:
        super().__init__(dut, CLK_PERIOD_NS)

    async def write(self, reg: str, value: int) -> None:
        await self.write_reg(reg, value)

    async def send(self, frame: bytes, src_port: int) -> None:
        # SUME TUSER: [15:0] length, [23:16] source port, [31:24] destination ports
        await self.send_frame(frame, src_port)

    async def recv(self) -> Out:
        data, tuser = await self.recv_frame(20000)
        assert tuser & 0xFFFF == len(data), \
            f"TUSER length {tuser & 0xFFFF} != frame length {len(data)}: {data[:64].hex()}"
        return Out(data, (tuser >> 24) & 0xFF)


async def exchange(tb: TB, model: SwitchModel,
                   frames: list[tuple[bytes, int]]) -> dict[str, list[Out]]:
    """Send ``frames``; per class, the switch's output must be the model's, in order.

    Then nothing more may come out, and every counter must equal the model's.
    Returns the expected output per class."""
    dut = tb.dut
    expected: dict[str, list[Out]] = {c: [] for c in CLASSES}
    for frame, port in frames:
        cls = input_class(frame)
        for e in model.process(frame, port):
            expected[cls].append(Out(e.frame, e.dst_ports))
    n_expected = sum(len(v) for v in expected.values())
    tb.log.info("%d frames in, %d expected out (%s)", len(frames), n_expected,
                ", ".join(f"{c}={len(expected[c])}" for c in CLASSES))
    # an L2 frame leaves once, or never when filtered (destination on its own port)
    assert len(expected[L2]) <= sum(1 for f, _ in frames if input_class(f) == L2)

    for frame, port in frames:
        await tb.send(frame, port)

    got: dict[str, list[Out]] = {c: [] for c in CLASSES}
    try:
        for _ in range(n_expected):
            o = await tb.recv()
            got[output_class(o.frame)].append(o)
    except SimTimeoutError:
        counts = {name: await tb.read(name) for name in regmap.COUNTERS}
        raise AssertionError(
            "timeout waiting for output; got " + ", ".join(
                f"{c}={len(got[c])}/{len(expected[c])}" for c in CLASSES)
            + "; counters " + str({k: v for k, v in counts.items() if v})
            + "; model " + str({k: v for k, v in model.counters().items() if v})) from None

    await ClockCycles(dut.clk, 200)
    assert not tb.recv_pending(), "extra output frames"

    for c in CLASSES:
        for i, (g, e) in enumerate(zip(got[c], expected[c], strict=False)):
            assert g == e, f"{c} frame {i}:\n  got      {g}\n  expected {e}"
        assert len(got[c]) == len(expected[c]), \
            f"{c}: {len(got[c])} frames out, model expects {len(expected[c])}"
    for o in got[L2]:  # flooded to MAC ports, or forwarded to one learned port (DMA too)
        assert o.dst and (o.dst & ~MAC_PORTS == 0 or o.dst & (o.dst - 1) == 0)

    want = model.counters()
    have = {name: await tb.read(name) for name in regmap.COUNTERS}
    assert have == want, "counter mismatch: " + ", ".join(
        f"{k} {have[k]} != {want[k]}" for k in want if have[k] != want[k])
    return expected


async def new_model(tb: TB) -> SwitchModel:
    """A model with the DUT's build parameters."""
    return SwitchModel(capacity=await tb.read("RPL_CAPACITY"),
                       record_bytes=await tb.read("RPL_RECORD_BYTES"),
                       max_slots=await tb.read("AGG_MAX_SLOTS"),
                       max_elems=await tb.read("AGG_MAX_ELEMS"),
                       build_hash=await tb.read("BUILD_HASH"))


@cocotb.test()
@cocotb.parametrize(idle=STRESS, backpressure=STRESS)
async def run_mixed_traffic(dut: HierarchyObject, idle: bool, backpressure: bool) -> None:
    """Mixed L2, aggregation and replay traffic against SwitchModel."""
    tb = TB(dut)
    await tb.reset()
    tb.set_stress(idle, backpressure)

    traffic = os.environ.get("NRL_TRAFFIC", "l2,agg,rpl").split(",")
    seed = int(os.environ.get("NRL_SEED", "1"))
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)

    if traffic == ["l2"]:
        model = SwitchModel()
        writes: list[tuple[str, int]] = []
        frames = l2_frames(rng) + l2_unicast_frames(rng)
    else:
        assert await tb.read("MAGIC") == regmap.REGISTERS["MAGIC"].reset
        model = await new_model(tb)
        writes = config_writes()
        frames = interleave(
            rng, l2_frames(rng) + l2_frames(rng) + l2_unicast_frames(rng)
            if L2 in traffic else [],
            agg_frames(nrng) if AGG in traffic else [],
            rpl_frames(nrng, model.read("RPL_RECORD_BYTES")) if RPL in traffic else [],
            short_frames(rng) if set(traffic) >= set(CLASSES) else [])

    for reg, value in writes:
        model.write(reg, value)
        await tb.write(reg, value)

    expected = await exchange(tb, model, frames)
    if L2 in traffic:
        # the learning switch was exercised: unicast to learned ports (members' MACs,
        # taught by protocol frames, among them when the engines run) and filtering
        unicast = [o for o in expected[L2] if o.dst & (o.dst - 1) == 0]
        members = [o for o in unicast if o.frame[:5] == bytes([2, 0, 0, 0, 1])]
        filtered = sum(1 for f, _ in frames if input_class(f) == L2) - len(expected[L2])
        tb.log.info("L2: %d forwarded to a learned port (%d to members), %d filtered",
                    len(unicast), len(members), filtered)
        assert unicast and filtered and (members or traffic == ["l2"])
    if AGG in traffic:
        # the failed round: two MISMATCH drops, an ERROR RESULT multicast and re-sent
        assert model.read("CNT_DROP_MISMATCH") == 2
        errors = [o for o in expected[AGG] if o.frame[44] & proto.Flags.ERROR]
        assert len(errors) == 3 and not errors[0].frame[44] & proto.Flags.RESEND

    if traffic != ["l2"]:
        for reg in ("JOB_ID", "UDP_PORT", "MEMBER_IP_4", "AGG_ELEMS", "AGG_EPOCH", "RPL_SEED",
                    "RPL_SIZE", "RPL_WPTR", "RPL_TOTAL_LO", "RPL_TOTAL_HI"):
            assert await tb.read(reg) == model.read(reg), reg


@cocotb.test(skip=os.environ.get("NRL_TRAFFIC", "l2,agg,rpl") == "l2")
async def run_registers(dut: HierarchyObject) -> None:
    """AGG_EPOCH through the register split; MEMBER_PORT / AGG_UPLINK_PORT refusal (SLVERR).

    A refused member table write must leave both engines' copies as they
    were: the workers' round and the actor's and learner's requests that
    follow are accepted exactly as the model accepts them."""
    tb = TB(dut)
    await tb.reset()
    model = await new_model(tb)
    for reg, value in config_writes():
        model.write(reg, value)
        await tb.write(reg, value)
    # the epoch mailbox lives in the aggregation engine's register file
    assert await tb.read("AGG_EPOCH") == model.read("AGG_EPOCH") == EPOCH
    for v in (0xFF000000, 0x12000000, EPOCH + (1 << 24)):
        model.write("AGG_EPOCH", v)
        await tb.write("AGG_EPOCH", v)
        assert await tb.read("AGG_EPOCH") == v
    # refused writes: SLVERR, the register keeps its value
    for name, bad in (("MEMBER_PORT_0", 0x05), ("MEMBER_PORT_1", 0x100),
                      ("MEMBER_PORT_3", 0xFF), ("MEMBER_PORT_4", 0x80000002),
                      ("AGG_UPLINK_PORT", 0x11), ("AGG_UPLINK_PORT", 0x300)):
        old = await tb.read(name)
        assert old == model.read(name)
        model_refuses(model, name, bad)
        resp = await tb.write_resp(regmap.REGISTERS[name].addr, bad)
        assert resp == AxiResp.SLVERR, f"{name} = {bad:#x} answered {resp!r}"
        assert await tb.read(name) == old, name
    # a legal uplink write answers OKAY
    model.write("AGG_UPLINK_PORT", 0x40)
    await tb.write("AGG_UPLINK_PORT", 0x40)
    assert await tb.read("AGG_UPLINK_PORT") == 0x40
    nrng = np.random.default_rng(3)
    frames = [gradient_frame(nrng, w, 0, 0) for w in range(3)]
    frames += mismatch_frames(nrng, 1, 0)
    frames += rpl_frames(nrng, model.read("RPL_RECORD_BYTES"))[:4]
    await exchange(tb, model, frames)
    assert model.read("CNT_DROP_MISMATCH") == 2 and model.read("CNT_TX_PUSH_ACK") == 2


JOB_TABLE = [r.name for r in regmap.REGISTERS.values() if r.access == "rw" and r.admin] + ["JOB_LEASE"]
"""The job table's writable registers (JOB_ID, JOB_ENABLE, the share; docs/protocol.md section 11)
and the lease mailbox: written over the bus, each answer the model's."""


async def read_resp(tb: TB, addr: int) -> tuple[int, AxiResp]:
    """A raw AXI4-Lite read of byte address ``addr``: (data, response)."""
    assert tb.axil is not None
    r = await tb.axil.read(addr, 4)
    return int.from_bytes(r.data, "little"), AxiResp(r.resp)


def model_read(model: SwitchModel, addr: int) -> int | None:
    """What the model reads at ``addr``; ``None`` when it has no register there."""
    try:
        return model.read(addr)
    except ValueError:
        return None


async def check_map(tb: TB, model: SwitchModel) -> None:
    """Every register of page 0 the RTL decodes (the server's own excepted) reads the model's value."""
    for r in regmap.REGISTERS.values():
        if not r.server:
            data, resp = await read_resp(tb, r.addr)
            assert (data, resp) == (model.read(r.name), AxiResp.OKAY), f"{r.name}: {data:#x} {resp!r}"


@cocotb.test()
async def run_job_registers(dut: HierarchyObject) -> None:
    """The job table of a one-job switch against the model (docs/protocol.md section 11).

    After reset every register reads the model's value (JOBS, JOB_ENABLE and the share
    JOB_SLOT_* / JOB_RPL_* with the build's parameters among them). Writes to the job
    table answer as the model takes or refuses them (the fixed share of a JOBS = 1
    switch: SLVERR, nothing changed; JOB_LEASE and JOB_ID stored). Every address in a
    page other than 0 (job pages of JOBS and beyond, up to the top of the address bus)
    is no register, as in the model: a read answers SLVERR, a write SLVERR and changes
    nothing (not the engines' registers, not the split's UDP_PORT shadow). Traffic
    afterwards still matches the model."""
    tb = TB(dut)
    await tb.reset()
    model = await new_model(tb)
    assert await tb.read("JOBS") == model.read("JOBS")
    await check_map(tb, model)
    for reg, value in config_writes():
        model.write(reg, value)
        await tb.write(reg, value)
    for name in JOB_TABLE:
        r = regmap.REGISTERS[name]
        old = model.read(name)
        mask = (1 << r.width) - 1
        wide = [1 << r.width] if r.width < 32 else []
        for value in [old, old ^ 1, (old + 0x10) & mask, 0, mask, *wide]:
            try:
                model.write(name, value)
                want = AxiResp.OKAY
            except ValueError:
                want = AxiResp.SLVERR
            resp = await tb.write_resp(r.addr, value)
            assert resp == want, f"{name} = {value:#x} answered {resp!r}, the model {want!r}"
            assert await tb.read(name) == model.read(name), name
    # byte strobes on the lease: one byte lands
    model.write("JOB_LEASE", (model.read("JOB_LEASE") & ~0xFF00) | 0x5A00)
    assert await tb.write_resp(regmap.JOB_LEASE + 1, bytes([0x5A])) == AxiResp.OKAY
    assert await tb.read("JOB_LEASE") == model.read("JOB_LEASE")
    for reg, value in config_writes():  # JOB_ID back to the frames' job
        model.write(reg, value)
        await tb.write(reg, value)
    # pages: job pages 1 .. top of the bus; every offset of the map, global or job
    pages = 1 << (len(dut.s_axil_araddr) - 12)
    udp_shadow = int(dut.axil_split_inst.udp_port.value)
    for page in (1, 2, pages - 1):
        for r in regmap.REGISTERS.values():
            if r.server:
                continue
            addr = page * regmap.JOB_PAGE + r.addr
            want = AxiResp.SLVERR if model_read(model, addr) is None else AxiResp.OKAY
            data, resp = await read_resp(tb, addr)
            assert resp == want, f"read {addr:#06x}: {resp!r}, the model {want!r}"
            if resp == AxiResp.SLVERR:
                assert data == 0, f"read {addr:#06x}: {data:#x}"
                bad = (r.reset ^ 0x5) & ((1 << r.width) - 1)
                assert await tb.write_resp(addr, bad) == AxiResp.SLVERR, f"write {addr:#06x}"
    assert int(dut.axil_split_inst.udp_port.value) == udp_shadow
    await check_map(tb, model)
    nrng = np.random.default_rng(5)
    frames = [gradient_frame(nrng, w, 0, 0) for w in range(3)]
    frames += rpl_frames(nrng, model.read("RPL_RECORD_BYTES"))[:4]
    await exchange(tb, model, frames)


@cocotb.test()
async def run_l2_line_rate(dut: HierarchyObject) -> None:
    """Back-to-back L2 frames of every length class pass with no stall and no bubble."""
    tb = TB(dut)
    await tb.reset()
    model = SwitchModel()
    rng = random.Random(2)
    frames = [f for _ in range(3) for f in l2_frames(rng)]
    frames += l2_unicast_frames(rng, filtered=False)  # looked up and learned at line rate
    beats = sum(-(-len(f) // (len(dut.s_axis_tkeep) or 1)) for f, _ in frames)
    stalls = 0
    out_beats = 0
    first_out = last_out = 0
    cycle = 0

    async def monitor() -> None:
        nonlocal stalls, out_beats, first_out, last_out, cycle
        while True:
            await RisingEdge(dut.clk)
            cycle += 1
            if dut.s_axis_tvalid.value and not dut.s_axis_tready.value:
                stalls += 1
            if dut.m_axis_tvalid.value and dut.m_axis_tready.value:
                out_beats += 1
                first_out = first_out or cycle
                last_out = cycle

    mon = cocotb.start_soon(monitor())
    for frame, port in frames:
        await tb.send(frame, port)
    got = [await tb.recv() for _ in frames]
    mon.cancel()
    want = [Out(e.frame, e.dst_ports) for f, p in frames for e in model.process(f, p)]
    assert got == want
    assert stalls == 0, f"input stalled {stalls} clocks"
    assert out_beats == beats
    assert last_out - first_out + 1 == beats, \
        f"{beats} beats left in {last_out - first_out + 1} clocks (bubbles)"


@cocotb.test()
async def run_udp_port_and_clear(dut: HierarchyObject) -> None:
    """A new UDP_PORT moves the protocol/L2 boundary; CTRL bit 31 clears CNT_PASS."""
    tb = TB(dut)
    await tb.reset()
    model = SwitchModel()
    port = 20051
    model.write("UDP_PORT", port)
    await tb.write("UDP_PORT", port)
    engines = os.environ.get("NRL_TRAFFIC", "l2,agg,rpl") != "l2"
    assert await tb.read("UDP_PORT") == port or not engines

    # a frame to the old port is ordinary traffic now
    frame, src = member_frame(0, proto.sample_request(1, job=JOB, worker=0))
    assert input_class(frame, port) == L2
    out = model.process(frame, src)
    await tb.send(frame, src)
    o = await tb.recv()
    assert [Out(e.frame, e.dst_ports) for e in out] == [o]
    assert await tb.read("CNT_PASS") == model.read("CNT_PASS") == 1

    if engines:
        # ... and one to the new port goes to an engine (dropped: member 0 is no learner)
        frame, src = member_frame(0, proto.sample_request(1, job=JOB, worker=0))
        frame = frame[:36] + port.to_bytes(2, "big") + frame[38:]
        assert input_class(frame, port) == RPL and model.process(frame, src) == []
        await tb.send(frame, src)
        await ClockCycles(dut.clk, 50)
        want = model.counters()
        have = {name: await tb.read(name) for name in regmap.COUNTERS}
        assert have == want, "counter mismatch: " + ", ".join(
            f"{k} {have[k]} != {want[k]}" for k in want if have[k] != want[k])

    model.write("CTRL", (1 << 31) | 3)
    await tb.write("CTRL", (1 << 31) | 3)
    assert await tb.read("CNT_PASS") == model.read("CNT_PASS") == 0
    await ClockCycles(dut.clk, 20)
    assert not tb.recv_pending()

