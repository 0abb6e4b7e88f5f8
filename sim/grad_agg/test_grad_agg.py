"""cocotb tests of the gradient aggregation engine against the golden model.

The testbench configures the DUT over AXI4-Lite and :class:`SwitchModel`
with the same register writes, feeds both the same frames (and ingress
ports), and compares every output frame (bytes and TUSER: length,
destination port bitmap) and every counter. No expected value is written
by hand.

Tests:

* ``test_stream``: a protocol-following workload with noise (duplicates,
  stragglers, malformed frames, tensor length and step mismatches, rounds
  far ahead of AGG_EPOCH, parent RESULTs with and without ERROR) in four
  jobs (root and leaf, sync and async, fp32 and int32), the same jobs under
  each of the four combinations of source idle insertion and sink
  backpressure (``sim.common.tb.StreamTB.set_stress``), and an AGG_EPOCH
  write while each runs (sometimes one that puts the job's rounds beyond
  the far-ahead bound);
* ``test_workloads``: phases with different jobs (sync / async, root /
  leaf, fp32 / int32, round numbers wrapping at 2**32);
* ``test_malformed``: every malformation and unauthorized class, alone and
  in pairs (the check order decides the counter), DISABLED, counter clear;
* ``test_line_rate``: back-to-back packets for one slot at several packet
  sizes, length and step mismatches and error copies included: no input
  stall once a packet has at least 7 beats, results exact (the
  read-after-write forwarding paths of the accumulator and of the slot
  state, its step id included);
* ``test_reset_mid_frame``: reset while a frame streams in and a result
  streams out;
* ``test_registers``: register read-back against the model;
* ``test_mismatch_and_errors``: tensor length mismatches on OPEN, UP and
  DONE copies, ERROR RESULTs multicast, re-sent and relayed from a parent,
  the order of addition in RESULT aux (each kind must occur);
* ``test_epoch``: AGG_EPOCH reads back and disturbs no slot copy;
* ``test_steps_and_ahead``: step mismatches (sync mode, docs/protocol.md
  section 4 step 4) on OPEN, UP, DONE and error copies, behind a length
  mismatch, at a leaf (upward aux = the copy's step) and ignored in async
  mode; the far-ahead bound of AGG_EPOCH at its edges (2^25 - 1 ahead taken,
  2^25 and 2^31 - 1 dropped as AHEAD, 2^31 and one behind processed), after
  BAD_SLOT and before STALE, with AGG_EPOCH at the rounds' block or before it, and
  epoch writes between packets; under the four stress combinations;
* ``test_port_refusal``: MEMBER_PORT / AGG_UPLINK_PORT writes that are not
  0 or one-hot answer SLVERR and change nothing;
* ``test_short_frames``: every length 42..63 with every opcode class,
  counted exactly as the model counts it;
* ``test_register_edges``: aggregation register values the model refuses
  (ranges, AGG_THRESHOLD <= AGG_MEMBERS, AGG_EPOCH a multiple of 2^24, byte
  strobes) answer SLVERR and change nothing; reads of addresses with no
  register;
* ``test_counter_carry`` (Verilator): counters past 2**16 (the carry into
  their high half), with the lean driver;
* ``test_soak`` (``GRAD_AGG_SOAK=1``): >= 100k packets with the lean
  per-clock driver of ``sim.common.tb`` instead of the BFMs;
* ``test_bench`` (``GRAD_AGG_BENCH_JSON=<path>``): throughput and latency
  figures for ``scripts/bench_grad_agg.py``.
"""

from __future__ import annotations

import json
import os
import struct
from typing import Any

import cocotb
from cocotb.triggers import RisingEdge, with_timeout
from cocotbext.axi import AxiResp

from hostdrv.switch.reference import Egress
from hostdrv.wire import protocol as proto
from hostdrv.wire import regmap
from hostdrv.wire.consts import AGG_AHEAD_ROUNDS, EPOCH_ROUNDS
from sim.common.tb import STRESS, StallMonitor, cycle_pause, model_refuses
from sim.grad_agg.grad_agg_tb import (
    STEP_TAGS,
    TB,
    ahead_directed,
    lean_compare,
    lean_run,
    steps_directed,
)
from sim.grad_agg.workload import M32, MALFORMATIONS, Workload, be32, block_of, epoch_for

SEED = int(os.environ.get("GRAD_AGG_SEED", "20250"))


# ---------------------------------------------------------------------------
# tests with the BFMs


STREAM_JOBS: list[dict[str, Any]] = [
    {"leaf": False, "mode_async": False, "dtype_int": False},
    {"leaf": False, "mode_async": True, "dtype_int": True},
    {"leaf": True, "mode_async": False, "dtype_int": True},
    {"leaf": True, "mode_async": True, "dtype_int": False},
]
"""The jobs of ``test_stream``: the same under every stress combination."""


@cocotb.test()
@cocotb.parametrize(idle=STRESS, backpressure=STRESS)
async def test_stream(dut: Any, idle: bool, backpressure: bool) -> None:
    """A noisy workload (every role and mode) under idle insertion and backpressure.

    The jobs do not depend on the stress: each of the four combinations runs
    root and leaf, sync and async, fp32 and int32."""
    tb, rng = await TB.start(dut, SEED + 2 * int(idle) + int(backpressure))
    tb.set_stress(idle, backpressure)
    for job in STREAM_JOBS:
        cfg = await tb.configure_random(rng, members=3, **job)
        wl = Workload(rng, cfg, noise=0.3, mismatch=0.03)
        await tb.run(wl, 75)
        # a member restarting its rounds writes AGG_EPOCH while traffic flows; now and
        # then one that leaves the job's rounds beyond the far-ahead bound (AHEAD drops)
        # (AGG_EPOCH now bounds the rounds: the frames before the write reach the
        # engine first, as the model takes them)
        cfg.epoch = (epoch_for(rng, max(wl.cur)) if rng.random() < 0.75
                     else block_of(max(wl.cur)) - 2 * EPOCH_ROUNDS) & M32
        await tb.settle()
        await tb.write("AGG_EPOCH", cfg.epoch)
        await tb.run(wl, 75)
        await tb.check()
    tb.log.info("exercised: %s", dict(tb.tally))


@cocotb.test()
async def test_workloads(dut: Any) -> None:
    """Jobs one after the other: every role, mode and dtype; rounds wrapping at 2**32."""
    tb, rng = await TB.start(dut, SEED + 10)
    phases: list[tuple[dict[str, Any], int]] = [
        ({"leaf": False, "mode_async": False, "dtype_int": False}, 300),
        ({"leaf": False, "mode_async": True, "dtype_int": True}, 300),
        ({"leaf": True, "mode_async": False, "dtype_int": False}, 300),
        ({"leaf": True, "mode_async": True, "dtype_int": True}, 300),
        ({"leaf": False, "mode_async": False, "dtype_int": True, "members": 1}, 300),
        ({"leaf": True, "mode_async": True, "dtype_int": False, "members": 8}, 300),
        ({"leaf": False, "mode_async": True, "dtype_int": False, "slots": tb.max_slots,
          "packet_elems": 16}, 300),
        # all slots in use, the largest packets (the top of the slot memory)
        ({"leaf": False, "mode_async": False, "slots": tb.max_slots,
          "packet_elems": tb.max_elems}, 120),
    ]
    for k, (ph, n) in enumerate(phases):
        start = int(rng.choice([0, 5, 2**31 - 2, 2**32 - 3]))
        cfg = tb.random_config(rng, start=start, **ph)
        tb.log.info("phase %d: %s start round %d", k, ph, start)
        await tb.configure(cfg)
        await tb.run(Workload(rng, cfg, noise=0.3, start_round=start), n)
        await tb.check()


@cocotb.test()
async def test_malformed(dut: Any) -> None:
    """Every malformed and unauthorized class, alone and in pairs; DISABLED; counter clear."""
    tb, rng = await TB.start(dut, SEED + 20)
    cfg = tb.random_config(rng, leaf=True, mode_async=True, members=4, packet_elems=32)
    cfg.threshold = 3
    cfg.table[3].role = 0b110
    cfg.table[0].udp = 30000
    await tb.configure(cfg)
    wl = Workload(rng, cfg, noise=0.0)
    for kind in MALFORMATIONS:
        await tb.send(*wl.malformed((kind,)))
    for _ in range(200):
        await tb.send(*wl.malformed())
    # RESULTs that are not from the parent, and a RESULT on a root
    for variant in ("port", "ip", "round", ""):
        await tb.send(*wl.parent_result(variant))
    # valid traffic interleaved with noise, then engine off
    await tb.run(Workload(rng, cfg, noise=0.5), 120)
    await tb.check()
    await tb.write("CTRL", 0x2)
    await tb.run(wl, 6)
    await tb.check()
    await tb.write("CTRL", 0x3 | 1 << 31)
    await tb.check_counters()
    cfg.leaf = False
    await tb.configure(cfg)
    await tb.send(*wl.parent_result())
    await tb.run(Workload(rng, cfg, noise=0.4), 100)
    await tb.check()


@cocotb.test()
async def test_line_rate(dut: Any) -> None:
    """Back-to-back packets for one slot: one beat per clock from 7 beats up, exact sums."""
    tb, rng = await TB.start(dut, SEED + 30)
    hdr_beats = 64 // tb.bytes
    for p in (16, 32, 48, 96, 112):
        if p > tb.max_elems:
            continue
        for dtype_int in (False, True):
            cfg = await tb.configure_random(rng, leaf=False, mode_async=False, dtype_int=dtype_int,
                                            packet_elems=p, slots=2, members=3)
            await tb.settle()
            wl = Workload(rng, cfg, noise=0.0)
            frames = []
            for r in range(4):
                for w in range(cfg.members):
                    frames.append(wl.gradient(w, 0, r))
                frames.append(wl.gradient(0, 0, r))  # duplicate after DONE: resend
            # every packet triggers an output of its own size: resends back to back
            frames += [wl.gradient(int(w) % cfg.members, 0, 3) for w in range(12)]
            # another tensor length right behind an open round's contributions (the
            # copy's total, aux, error and culprit forwarded to the next packet):
            # an ERROR RESULT, then its resends and MISMATCH resends
            for r in (4, 5):
                frames += [wl.gradient(0, 0, r), wl.gradient(1, 0, r),
                           wl.gradient(2, 0, r, total=wl.bad_total(0, r)),
                           wl.gradient(0, 0, r), wl.gradient(2, 0, r),
                           wl.gradient(1, 0, r, total=wl.bad_total(0, r))]
            # rounds reopened over error copies, completed back to back
            frames += [wl.gradient(w, 0, r) for r in (6, 7) for w in range(cfg.members)]
            # another step id right behind an open round's contributions (the copy's
            # step forwarded to the next packet): an ERROR RESULT (aux = total), its
            # resends; a DONE copy answers another step with ERROR forced on, then
            # its own step with its real result
            for r in (8, 9):
                frames += [wl.gradient(0, 0, r), wl.gradient(1, 0, r),
                           wl.gradient(2, 0, r, step=wl.bad_step(0, r)),
                           wl.gradient(0, 0, r), wl.gradient(2, 0, r, step=wl.bad_step(0, r))]
            for r in (10, 11):
                frames += [wl.gradient(w, 0, r) for w in range(cfg.members)]
                frames += [wl.gradient(1, 0, r, step=wl.bad_step(0, r)), wl.gradient(2, 0, r),
                           wl.gradient(0, 0, r, step=wl.bad_step(0, r))]
            mon = StallMonitor(dut)
            for fr in frames:
                await tb.send(*fr)
            await tb.check()
            await mon.stop()
            stalls = mon.stalls
            plen = hdr_beats + p * 4 // tb.bytes
            tb.log.info("P=%d dtype_int=%s beats/packet=%d: %d beats, %d stall clocks",
                        p, dtype_int, plen, mon.beats, stalls)
            if plen >= 7:
                assert stalls == 0, f"input stalled {stalls} clocks at {plen} beats per packet"
            else:
                assert stalls <= len(frames) * (7 - plen)


@cocotb.test()
async def test_reset_mid_frame(dut: Any) -> None:
    """Reset while a frame streams in and a result streams out; then a clean run."""
    tb, rng = await TB.start(dut, SEED + 40)
    assert tb.source is not None and tb.sink is not None
    for cut in (3, 9):
        cfg = await tb.configure_random(rng, leaf=False, mode_async=False, members=2,
                                        packet_elems=min(tb.max_elems, 128))
        wl = Workload(rng, cfg, noise=0.0)
        tb.set_stress(False, cycle_pause([0, 1]))
        # the second contribution completes round 0: its result is on its way out
        # while the next frame is cut by the reset
        for fr in (wl.gradient(0, 0, 0), wl.gradient(1, 0, 0), wl.gradient(0, 0, 1)):
            await tb.send_frame(*fr)
        n_beats = 2 * (len(wl.gradient(0, 0, 0)[0]) // tb.bytes) + cut
        seen = 0
        for _ in range(20 * n_beats):
            await RisingEdge(dut.clk)
            if int(dut.s_axis_tvalid.value) and int(dut.s_axis_tready.value):
                seen += 1
                if seen == n_beats:
                    break
        assert seen == n_beats, f"only {seen} of {n_beats} input beats"
        dut.rst.value = 1
        await tb.cycles(3)
        dut.rst.value = 0
        tb.source.clear()
        await tb.cycles(5)
        tb.sink.clear()
        tb.set_stress(False, False)
        await tb.new_model()
        # registers are back to their reset values: configure again, run clean
        await tb.configure(cfg)

        await tb.run(Workload(rng, cfg, noise=0.3), 60)
        await tb.check()


def engine_registers() -> list[str]:
    """The registers grad_agg holds: not the replay engine's, not the server's, not the
    L2 table's or the job table's (held by the switch top, nrl_axil_split; JOB_ID is
    grad_agg's)."""
    return [n for n, r in regmap.REGISTERS.items()
            if not n.startswith(("RPL_", "L2_", "JOB_ENABLE", "JOB_SLOT_", "JOB_RPL_",
                                 "JOB_LEASE", "JOB_OWNER"))
            and n != "JOBS" and not r.server]


@cocotb.test()
async def test_registers(dut: Any) -> None:
    """Every register reads back what the model holds, after random legal writes."""
    tb, rng = await TB.start(dut, SEED + 50)
    names = engine_registers()
    for n in names:
        assert await tb.read(n) == tb.model.read(n), n
    await tb.configure_random(rng)
    for n in names:
        assert await tb.read(n) == tb.model.read(n), n
    await tb.check()


@cocotb.test()
async def test_mismatch_and_errors(dut: Any) -> None:
    """Tensor length mismatches on open, up and done rounds; ERROR RESULTs sent, re-sent, relayed.

    Every kind must occur (counted from the model's verdicts and output
    frames), so the frame-by-frame comparison covers each of them."""
    tb, rng = await TB.start(dut, SEED + 80)
    phases = [{"leaf": False, "mode_async": False}, {"leaf": True, "mode_async": False},
              {"leaf": False, "mode_async": True}, {"leaf": True, "mode_async": True}]
    for ph in phases:
        start = int(rng.choice([0, 2**32 - 5]))
        cfg = await tb.configure_random(rng, members=int(rng.choice([2, 3, 4])),
                                        slots=int(rng.integers(1, 4)), start=start, **ph)
        wl = Workload(rng, cfg, noise=0.3, mismatch=0.08, start_round=start)
        wl.parent_error = 0.3
        await tb.run(wl, 250)
        await tb.check()
        if cfg.leaf:
            # a leaf waiting for its parent (UP) gets another length: error copy
            s, r = 0, wl.cur[0] + 8
            for w in wl.contrib:
                await tb.send(*wl.gradient(w, s, r, lag=0))
            await tb.send(*wl.gradient(wl.contrib[0], s, r, lag=0, total=wl.bad_total(s, r)))
            await tb.check()
    tb.log.info("exercised: %s", dict(tb.tally))
    for tag in ("mismatch_error", "mismatch_up", "mismatch_resend", "error_resend",
                "error_relay", "order", "total_hi", "up", "result"):
        assert tb.tally[tag] > 0, f"the traffic never exercised {tag}: {dict(tb.tally)}"
    assert tb.model.read("CNT_DROP_MISMATCH") > 0


@cocotb.test()
async def test_epoch(dut: Any) -> None:
    """AGG_EPOCH reads back what was written and leaves every slot copy as it was."""
    tb, rng = await TB.start(dut, SEED + 90)
    assert await tb.read("AGG_EPOCH") == tb.model.read("AGG_EPOCH") == 0
    for leaf in (False, True):
        cfg = await tb.configure_random(rng, leaf=leaf, mode_async=False, members=3,
                                        slots=min(4, tb.max_slots))
        wl = Workload(rng, cfg, noise=0.0)
        # two of three contributions in every slot; slot 0 complete (DONE or UP)
        for s in range(cfg.slots):
            for w in (0, 1):
                await tb.send(*wl.gradient(w, s, 0))
        await tb.send(*wl.gradient(2, 0, 0))
        await tb.settle()
        for v in (0x01000000, 0xFF000000, int(rng.integers(0, 256)) << 24, 0x7F000000):
            await tb.write("AGG_EPOCH", v)
            assert await tb.read("AGG_EPOCH") == tb.model.read("AGG_EPOCH") == v
        # byte writes merge into it (bits 31:24; a byte in 23:0 is refused, test_register_edges)
        assert await tb.write_resp(regmap.AGG_EPOCH + 3, b"\x5a") == AxiResp.OKAY
        tb.model.write("AGG_EPOCH", 0x5A000000)
        assert await tb.read("AGG_EPOCH") == tb.model.read("AGG_EPOCH")
        # the rounds complete with three contributions (an invalidated copy would
        # restart at one), and slot 0 answers a duplicate from its DONE or UP copy
        outs = []
        for s in range(1, cfg.slots):
            outs += await tb.send(*wl.gradient(2, s, 0))
        outs += await tb.send(*wl.gradient(0, 0, 0))
        await tb.check()
        assert len(outs) == cfg.slots
        for e in outs:
            if e.frame[43] == proto.Opcode.RESULT:
                assert be32(e.frame, 56) & 0xF == 3


STEP_JOBS: list[dict[str, Any]] = [
    {"leaf": False, "mode_async": False, "dtype_int": False},
    {"leaf": True, "mode_async": False, "dtype_int": True},
    {"leaf": False, "mode_async": True, "dtype_int": True},
    {"leaf": True, "mode_async": True, "dtype_int": False},
]
"""The jobs of ``test_steps_and_ahead`` (the same under every stress combination)."""


@cocotb.test()
@cocotb.parametrize(idle=STRESS, backpressure=STRESS)
async def test_steps_and_ahead(dut: Any, idle: bool, backpressure: bool) -> None:
    """Step mismatches in every copy state and the far-ahead bound, then noisy traffic with both.

    Each job: the directed step cases, the far-ahead edges (an AGG_EPOCH
    at the rounds' block, or a block before it: the bound is (seq - AGG_EPOCH)
    mod 2**32), then a workload with step and
    length mismatches and far-ahead noise. Every output frame and counter
    against the model; every kind of STEP_TAGS must occur."""
    tb, rng = await TB.start(dut, SEED + 140 + 2 * int(idle) + int(backpressure))
    tb.set_stress(idle, backpressure)
    for k, job in enumerate(STEP_JOBS):
        start = int(rng.choice([0, 2**31 - 3, 2**32 - 3]))
        cfg = tb.random_config(rng, members=int(rng.choice([2, 3])),
                               slots=int(rng.integers(3, 6)), start=start, **job)
        # async: rounds complete with every member, as in sync
        cfg.threshold = cfg.members
        for m in cfg.table[:cfg.members]:
            m.role |= 1
        if k % 2:  # a block before the rounds' own (a write that is no multiple of 2**24 is
            # refused, docs/registers.md): the bound counts from the register, not the block
            cfg.epoch = (start - int(rng.integers(0, AGG_AHEAD_ROUNDS // 2))) & M32 \
                & ~(EPOCH_ROUNDS - 1)
        await tb.configure(cfg)
        wl = Workload(rng, cfg, noise=0.0, start_round=start)
        await steps_directed(tb, wl, start)
        await ahead_directed(tb, wl, rng)
        await tb.check()
        wl = Workload(rng, cfg, noise=0.25, mismatch=0.1, start_round=(start + 16) & M32)
        await tb.run(wl, 60)
        await tb.check()
    tb.log.info("exercised: %s", dict(tb.tally))
    for tag in STEP_TAGS:
        assert tb.tally[tag] > 0, f"the traffic never exercised {tag}: {dict(tb.tally)}"


@cocotb.test()
async def test_port_refusal(dut: Any) -> None:
    """MEMBER_PORT and AGG_UPLINK_PORT refuse values that are not 0 or one-hot: SLVERR, value kept."""
    tb, rng = await TB.start(dut, SEED + 100)
    cfg = await tb.configure_random(rng, leaf=True, mode_async=False, members=3, slots=2)
    wl = Workload(rng, cfg, noise=0.0)
    for s in range(cfg.slots):
        await tb.send(*wl.gradient(0, s, 0))
    await tb.settle()
    names = [f"MEMBER_PORT_{i}" for i in range(8)] + ["AGG_UPLINK_PORT"]
    bad_values = [0x03, 0x81, 0xFF, 0x100, 0x101, 0x8000, 0x80000000, 0x10001]
    refused = 0
    for name in names:
        addr = regmap.REGISTERS[name].addr
        old = await tb.read(name)
        assert old == tb.model.read(name), name
        for bad in bad_values + [int(x) for x in rng.integers(0, 1 << 32, 3)]:
            if bad in (0, *(1 << i for i in range(8))):
                continue
            model_refuses(tb.model, name, bad)
            resp = await tb.write_resp(addr, bad.to_bytes(4, "little"))
            assert resp == AxiResp.SLVERR, f"{name} = {bad:#x} answered {resp!r}"
            assert await tb.read(name) == old, f"{name} changed by a refused write of {bad:#x}"
            refused += 1
        # byte strobes: the byte lands on the old value; lane 0 with two bits, or
        # any nonzero byte in lanes 1-3, makes a value the register cannot hold
        for lane, byte in ((0, 0x11), (0, 0xC0), (1, 0x01), (2, 0x80), (3, 0x04)):
            merged = (old & ~(0xFF << 8 * lane)) | byte << 8 * lane
            model_refuses(tb.model, name, merged)
            assert await tb.write_resp(addr + lane, bytes([byte])) == AxiResp.SLVERR
            assert await tb.read(name) == old
            refused += 1
    assert refused >= 9 * 13
    # nothing was invalidated and no member moved: the open rounds complete
    for s in range(cfg.slots):
        for w in (1, 2):
            await tb.send(*wl.gradient(w, s, 0))
    await tb.check()
    # legal values are taken (OKAY): 0 and every one-hot byte, also by byte strobe
    for name in ("MEMBER_PORT_7", "AGG_UPLINK_PORT"):
        addr = regmap.REGISTERS[name].addr
        for v in (0, *(1 << i for i in range(8))):
            await tb.write(name, v)
            assert await tb.read(name) == tb.model.read(name) == v
        assert await tb.write_resp(addr, b"\x20") == AxiResp.OKAY
        tb.model.write(name, 0x20)
        assert await tb.read(name) == tb.model.read(name) == 0x20
    await tb.configure(cfg)
    await tb.run(Workload(rng, cfg, noise=0.2), 60)
    await tb.check()


@cocotb.test()
async def test_short_frames(dut: Any) -> None:
    """Every frame length 42..63 and opcode: counted exactly like the model (RX, BAD_LENGTH)."""
    tb, rng = await TB.start(dut, SEED + 110)
    cfg = await tb.configure_random(rng, leaf=True, mode_async=False, members=2, slots=2)
    wl = Workload(rng, cfg, noise=0.0)
    n_short = 0
    for n in range(42, 64):
        for op in (proto.Opcode.GRADIENT, proto.Opcode.RESULT, 0, 9):
            if op == proto.Opcode.RESULT:
                fr, port = wl.frame(op=op, worker=0, slot=0, seq=0, aux=1,
                                    flags=int(proto.Flags.FROM_SWITCH) | int(cfg.dtype_int))
            else:
                fr, port = wl.gradient(int(rng.integers(0, 2)), 0, 0)
            f = bytearray(fr[:n])
            f[43:44] = bytes([op])[:len(f) - 43]
            if rng.random() < 0.5:  # lengths consistent with the frame: only n < 64 fails
                struct.pack_into("!H", f, 16, n - 14)
                struct.pack_into("!H", f, 38, n - 34)
            await tb.send(bytes(f), port)
            n_short += 1
        if n % 5 == 0:
            await tb.send(*wl.gradient(n // 5 % 2, 1, n // 10))
    await tb.check()
    cnt = tb.model.counters()
    assert cnt["CNT_DROP_BAD_LENGTH"] == n_short
    assert cnt["CNT_RX_GRADIENT"] > 0 and cnt["CNT_RX_RESULT"] > 0


@cocotb.test()
async def test_register_edges(dut: Any) -> None:
    """Register values the model refuses answer SLVERR and change nothing; reads of
    addresses with no register.

    Every value the model refuses (wider than the register, AGG_MEMBERS below
    AGG_THRESHOLD or above 8, AGG_THRESHOLD 0 or above AGG_MEMBERS, AGG_SLOTS /
    AGG_ELEMS out of range, AGG_EPOCH not a multiple of 2^24), written whole or
    by byte strobes, answers SLVERR; the register keeps its value and no slot
    copy is invalidated (the open rounds then complete as the model's). Legal
    edge values answer OKAY. Reads of addresses the register map does not
    define complete and change nothing."""
    tb, rng = await TB.start(dut, SEED + 120)
    cfg = await tb.configure_random(rng, leaf=False, mode_async=True, members=4, slots=2,
                                    packet_elems=16)
    await tb.write("AGG_THRESHOLD", 3)
    cfg.threshold = 3
    wl = Workload(rng, cfg, noise=0.0)
    for s in range(cfg.slots):  # one contribution each: every copy OPEN
        await tb.send(*wl.gradient(0, s, 0))
    await tb.settle()
    bad = {"AGG_MEMBERS": [9, 15, 16, 0x100, 2, 0],
           "AGG_THRESHOLD": [0, 5, 8, 9, 0x13, 0x100],
           "AGG_SLOTS": [0, tb.max_slots + 1, 0x7F, 0x80],
           "AGG_ELEMS": [0, 8, 24, tb.max_elems + 16, 0x3FF0, 0x10000],
           "AGG_DTYPE": [2, 0x101], "AGG_MODE": [3], "AGG_ROLE": [0x80000000],
           "AGG_LEAF_ID": [8, 0xF], "AGG_PARENT_UDP": [0x10000, 0x12345678],
           "AGG_EPOCH": [1, 0x00800000, 0x12345678, 0xFFFFFFFF, 0x00FFFFFF],
           # the control block and the member table (nrl_common_regs): widths
           "JOB_ID": [0x100], "UDP_PORT": [0x10000], "SWITCH_MAC_HI": [0x10000],
           "CTRL": [0x4, 0x80000007], "MEMBER_UDP_3": [0x10000], "MEMBER_ROLE_3": [8]}
    refused = 0
    for name, values in bad.items():
        addr = regmap.REGISTERS[name].addr
        old = await tb.read(name)
        assert old == tb.model.read(name), name
        for v in values:
            model_refuses(tb.model, name, v)
            resp = await tb.write_resp(addr, v)
            assert resp == AxiResp.SLVERR, f"{name} = {v:#x} answered {resp!r}"
            assert await tb.read(name) == old, f"{name} changed by a refused write of {v:#x}"
            refused += 1
    # byte strobes: the byte lands on the old value and the merged value is judged
    for name, lane, byte in (("AGG_EPOCH", 0, 0x01), ("AGG_EPOCH", 2, 0x80),
                             ("AGG_THRESHOLD", 0, 0x00), ("AGG_THRESHOLD", 1, 0x01),
                             ("AGG_MEMBERS", 0, 0x09), ("AGG_SLOTS", 3, 0x01)):
        old = await tb.read(name)
        merged = (old & ~(0xFF << 8 * lane)) | byte << 8 * lane
        model_refuses(tb.model, name, merged)
        addr = regmap.REGISTERS[name].addr
        assert await tb.write_resp(addr + lane, bytes([byte])) == AxiResp.SLVERR, name
        assert await tb.read(name) == old, name
        refused += 1
    # nothing was invalidated: the open rounds complete at the threshold
    for s in range(cfg.slots):
        for w in (1, 2):
            await tb.send(*wl.gradient(w, s, 0))
    await tb.check()
    # legal edges are taken: H = N, H = 1, N = H, AGG_EPOCH's top byte alone
    for name, value in (("AGG_THRESHOLD", 4), ("AGG_THRESHOLD", 1), ("AGG_MEMBERS", 1),
                        ("AGG_MEMBERS", 8), ("AGG_THRESHOLD", 8), ("AGG_MEMBERS", 8),
                        ("AGG_EPOCH", 0xFF000000), ("AGG_SLOTS", tb.max_slots),
                        ("AGG_ELEMS", tb.max_elems)):
        await tb.write(name, value)
        assert await tb.read(name) == tb.model.read(name) == value, name
    assert await tb.write_resp(regmap.REGISTERS["AGG_EPOCH"].addr + 3, b"\x01") == AxiResp.OKAY
    tb.model.write("AGG_EPOCH", 0x01000000)
    assert await tb.read("AGG_EPOCH") == tb.model.read("AGG_EPOCH")
    tb.log.info("%d refused writes", refused)
    cfg = await tb.configure_random(rng, leaf=False, mode_async=False, members=2, slots=2,
                                    packet_elems=16)
    for addr in (0x080, 0x0FC, 0x180, 0x1C0, 0x280, 0x2C0, 0x300, 0x380, 0x4F0, 0xFFC):
        if addr in regmap.BY_ADDR:
            continue
        try:
            tb.model.read(addr)
        except ValueError:
            pass
        else:
            raise AssertionError(f"the model has a register at {addr:#x}")
        assert tb.axil is not None
        await with_timeout(tb.axil.read_dword(addr), 10, "us")
    for n in engine_registers():
        assert await tb.read(n) == tb.model.read(n), n
    await tb.run(Workload(rng, cfg, noise=0.2), 30)
    await tb.check()


@cocotb.test(skip=cocotb.SIM_NAME.lower().startswith("icarus"))
async def test_counter_carry(dut: Any) -> None:
    """Counters carry from their low 16 bits into the high half (2**16 + 5 drops each).

    44-byte frames are counted in CNT_RX_GRADIENT and dropped as BAD_LENGTH;
    the lean driver streams them at line rate. Verilator only: on Icarus
    the ~130k clocks take minutes."""
    tb, rng = await TB.start(dut, SEED + 130, streams=False)
    cfg = await tb.configure_random(rng, members=2)
    wl = Workload(rng, cfg, noise=0.0)
    frame, port = wl.gradient(0, 0, 0)
    short = (frame[:44], port)
    frames = [short] * ((1 << 16) + 5)
    assert not any(tb.model.process(*fr) for fr in frames)
    res = await lean_run(tb, frames, 0)
    assert res.outputs == []
    await tb.check_counters()
    assert tb.model.read("CNT_DROP_BAD_LENGTH") > 0xFFFF


@cocotb.test(skip=os.environ.get("GRAD_AGG_SOAK") != "1")
async def test_soak(dut: Any) -> None:
    """>= 100k packets over many jobs, with idle insertion and backpressure."""
    tb, rng = await TB.start(dut, SEED + 60, streams=False)
    assert tb.lean is not None
    tb.lean.rand = rng.random
    total = int(os.environ.get("GRAD_AGG_SOAK_PACKETS", "100000"))
    chunk = 4000
    sent = 0
    job = 0
    while sent < total:
        start = int(rng.choice([0, 2**32 - 20]))
        cfg = await tb.configure_random(
            rng, packet_elems=int(rng.choice([16, 16, 32, 48, 64, 96, 160, 352])),
            slots=int(rng.choice([1, 2, 4, 8, 12, tb.max_slots])), start=start)
        wl = Workload(rng, cfg, noise=float(rng.choice([0.05, 0.2, 0.4])),
                      start_round=start, mismatch=float(rng.choice([0.0, 0.02])))
        frames = []
        want: list[Egress] = []
        for _ in range(min(chunk, total - sent)):
            fr = wl.next()
            outs = tb.model.process(*fr)
            wl.observe(outs)
            want += outs
            frames.append(fr)
        idle, bp = (float(rng.choice([0.0, 0.0, 0.1, 0.3])), float(rng.choice([0.0, 0.0, 0.2, 0.5])))
        tb.set_stress(idle, bp)
        res = await lean_run(tb, frames, len(want))
        lean_compare(tb, res.outputs, want)
        assert res.gaps == 0, f"{res.gaps} clocks of gap inside output packets"
        await tb.check_counters()
        sent += len(frames)
        job += 1
        tb.log.info("soak job %d: %d packets, %d outputs, %d clocks (idle %.1f, bp %.1f), total %d",
                    job, len(frames), len(want), res.clocks, idle, bp, sent)


@cocotb.test(skip="GRAD_AGG_BENCH_JSON" not in os.environ)
async def test_bench(dut: Any) -> None:
    """Saturation throughput and completion latency for the bench script."""
    tb, rng = await TB.start(dut, SEED + 70, streams=False)
    hdr_beats = 64 // tb.bytes
    results: dict[str, Any] = {"data_width": tb.width, "per_elems": {}}
    sizes = [p for p in (16, 32, 48, 64, 96, 128, 256, 352) if p <= tb.max_elems]
    default_p = min(256, tb.max_elems)
    for p in sizes:
        cfg = await tb.configure_random(rng, leaf=False, mode_async=False, dtype_int=False,
                                        packet_elems=p, slots=16, members=4)
        wl = Workload(rng, cfg, noise=0.0)
        rounds = max(4, 2000 // (hdr_beats + p * 4 // tb.bytes) // cfg.members)
        frames = [wl.gradient(w, 0, r) for r in range(rounds) for w in range(cfg.members)]
        want = [e for fr in frames for e in tb.model.process(*fr)]
        res = await lean_run(tb, frames, len(want), record=True)
        lean_compare(tb, res.outputs, want)
        assert res.gaps == 0, f"{res.gaps} clocks of gap inside output packets"
        span = res.in_clocks[-1] - res.in_clocks[0] + 1
        bpc = len(res.in_clocks) / span
        # last beat of every completing packet (every members-th) to its result's first beat
        per_pkt = hdr_beats + p * 4 // tb.bytes
        last_beats = [res.in_clocks[(k + 1) * per_pkt - 1]
                      for k in range(len(frames)) if (k + 1) % cfg.members == 0]
        lat = [o - i for i, o in zip(last_beats, res.out_first_clocks, strict=True)]
        results["per_elems"][p] = {"beats_per_packet": per_pkt, "beats_per_clock": bpc,
                                   "latency_min": min(lat), "latency_max": max(lat),
                                   "packets": len(frames)}
        tb.log.info("P=%d: %d beats/packet, %.3f beats/clock, latency %d..%d", p, per_pkt, bpc,
                    min(lat), max(lat))
    results["beats_per_clock"] = results["per_elems"][default_p]["beats_per_clock"]
    results["latency_clocks"] = results["per_elems"][default_p]["latency_max"]
    results["default_elems"] = default_p
    with open(os.environ["GRAD_AGG_BENCH_JSON"], "w") as f:
        json.dump(results, f, indent=1)
