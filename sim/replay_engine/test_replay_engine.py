"""cocotb testbench for ``hw/rtl/replay_engine.v``, checked against ``hostdrv.switch.reference``.

Every frame sent to the engine is also given to :class:`hostdrv.switch.reference.SwitchModel`;
the engine must emit exactly the frames the model emits (bytes and egress
port), in order, and end every test with an empty sink, the model's counters
and the model's ``RPL_SIZE`` / ``RPL_WPTR`` / ``RPL_TOTAL``. Expected values
come only from the model.

The stream tests run under the four combinations of source idle insertion
and sink backpressure (``sim.common.tb.StreamTB.set_stress``), the workload
the same under each. A monitor on the sum tree's result and update ports
checks the throughput claims (one sample index and one priority update per
clock once the pipeline is full).

Environment (set by ``tests/test_replay_engine.py``):
    ``RPL_SEED``        seed of the workload generator (default 1)
    ``RPL_SCALE``       workload size multiplier (default 1)
    ``RPL_SOAK_OPS``    requests in the soak test (default 2000)
"""

from __future__ import annotations

import math
import os
import struct

import cocotb
from cocotb.handle import HierarchyObject
from cocotbext.axi import AxiResp

from hostdrv.wire import regmap
from hostdrv.wire.consts import MAX_STACK
from hostdrv.wire.protocol import sample_request, update
from sim.common.tb import STRESS, model_refuses
from sim.replay_engine.replay_engine_tb import (
    ACTORS,
    JOB,
    LEARNERS,
    MALFORMED_REASONS,
    MEMBERS,
    SEED,
    TB,
    BenchMonitor,
    PipeMonitor,
    bad_frames,
    frame_of,
    push_msg,
    random_workload,
    stack_coverage,
    stacked_workload,
    unauthorized_frames,
)

SCALE = float(os.environ.get("RPL_SCALE", "1"))
SOAK_OPS = int(os.environ.get("RPL_SOAK_OPS", "2000"))


# ---------------------------------------------------------------------------
# tests


@cocotb.test()
async def test_registers(dut: HierarchyObject) -> None:
    """Identity, control, replay and member registers read back like the model."""
    tb = TB(dut)
    await tb.reset()
    for name in ("MAGIC", "VERSION", "BUILD_HASH", "CTRL", "JOB_ID", "UDP_PORT", "SWITCH_IP",
                 "SWITCH_MAC_HI", "SWITCH_MAC_LO", "MCAST_IP", "RPL_CAPACITY",
                 "RPL_RECORD_BYTES", "RPL_SEED", "RPL_SIZE", "RPL_WPTR", "RPL_TOTAL_LO",
                 "RPL_TOTAL_HI", "RPL_RESET", "RPL_MIN_SIZE", "RPL_SPI", "RPL_SPI_ERROR",
                 "RPL_RATE_DIFF_LO", "RPL_RATE_DIFF_HI"):
        got = await tb.read(name)
        assert got == tb.m.read(name), f"{name}: RTL {got:#x} model {tb.m.read(name):#x}"
    for i in range(8):
        for f in ("PORT", "IP", "UDP", "ROLE"):
            name = f"MEMBER_{f}_{i}"
            got = await tb.read(name)
            assert got == tb.m.read(name), f"{name}: RTL {got:#x} model {tb.m.read(name):#x}"
    # values are kept at their declared width; CTRL bit 31 reads 0
    regs = regmap.REGISTERS
    for name in ("JOB_ID", "UDP_PORT", "SWITCH_MAC_HI", "MEMBER_PORT_5", "MEMBER_UDP_6",
                 "MEMBER_ROLE_7", "SWITCH_IP", "MCAST_IP", "RPL_SEED", "RPL_MIN_SIZE",
                 "RPL_SPI_ERROR", "RPL_SPI"):
        value = tb.rng.getrandbits(regs[name].width)
        if name.startswith("MEMBER_PORT"):
            value = 1 << tb.rng.randrange(8)  # 0 or one-hot
        await tb.write(name, value)
        got = await tb.read(name)
        assert got == tb.m.read(name) == value, f"{name}: RTL {got:#x} model {tb.m.read(name):#x}"
    # MEMBER_PORT refuses anything but 0 or one port bit: SLVERR, value kept
    for i in range(8):
        name = f"MEMBER_PORT_{i}"
        addr = regs[name].addr
        old = await tb.read(name)
        for bad in (0x03, 0x81, 0xFF, 0x100, 0x80000010, tb.rng.getrandbits(32) | 0x300):
            model_refuses(tb.m, name, bad)
            resp = await tb.write_resp(addr, bad.to_bytes(4, "little"))
            assert resp == AxiResp.SLVERR, f"{name} = {bad:#x} answered {resp!r}"
            assert await tb.read(name) == tb.m.read(name) == old, name
        resp = await tb.write_resp(addr + 1, b"\x02")  # byte 1 alone: 0x200 | old
        assert resp == AxiResp.SLVERR
        assert await tb.read(name) == old, name
    # a value wider than its register (or CTRL's undefined bits, RPL_RESET above 1):
    # SLVERR, value kept, as the model refuses it
    for name, bad in (("JOB_ID", 0x100), ("UDP_PORT", 0x10000), ("SWITCH_MAC_HI", 0x12345),
                      ("MEMBER_UDP_6", 0x10000), ("MEMBER_ROLE_7", 8), ("CTRL", 0x80000004),
                      ("RPL_RESET", 2), ("RPL_RESET", 0x80000001)):
        old = await tb.read(name)
        model_refuses(tb.m, name, bad)
        resp = await tb.write_resp(regs[name].addr, bad.to_bytes(4, "little"))
        assert resp == AxiResp.SLVERR, f"{name} = {bad:#x} answered {resp!r}"
        assert await tb.read(name) == tb.m.read(name) == old, name
    # addresses with no register (the model refuses them): the engine answers OKAY with 0
    assert tb.axil is not None
    for addr in (0x0FC, 0x180, 0x1C0, 0x2FC, 0x4F0, 0x800, 0xFFC):
        if addr in regmap.BY_ADDR:
            continue
        try:
            tb.m.read(addr)
        except ValueError:
            pass
        else:
            raise AssertionError(f"the model has a register at {addr:#x}")
        got = await tb.axil.read_dword(addr)
        assert got == 0, f"{addr:#x} read {got:#x}"
    await tb.write("CTRL", 0x80000001)
    assert await tb.read("CTRL") == tb.m.read("CTRL") == 1
    await tb.write("CTRL", 3)
    await tb.check_state()


@cocotb.test()
@cocotb.parametrize(idle=STRESS, backpressure=STRESS)
async def test_basic(dut: HierarchyObject, idle: bool, backpressure: bool) -> None:
    """PUSH, uniform and prioritized SAMPLE, UPDATE: bytes, order, counters, total."""
    tb = TB(dut)
    await tb.reset()
    tb.set_stress(idle, backpressure)
    await tb.sample(LEARNERS[0], 4, True)  # EMPTY
    await tb.push(ACTORS[0], 3)
    await tb.push(ACTORS[1], 16)
    await tb.sample(LEARNERS[0], 8, False)
    await tb.sample(LEARNERS[1], 16, True)
    await tb.update(LEARNERS[0], [0, 5, 18, 40, 1], [7, 1 << 31, 0xFFFFFFFF, 3, 0])
    await tb.sample(LEARNERS[1], 4, True)
    await tb.push(ACTORS[0], 1, [0])
    await tb.sample(LEARNERS[0], 1, False)
    await tb.finish()


@cocotb.test()
@cocotb.parametrize(idle=STRESS, backpressure=STRESS)
async def test_random_workload(dut: HierarchyObject, idle: bool, backpressure: bool) -> None:
    """Random mix of PUSH / SAMPLE / UPDATE (and some bad frames) past ring wrap-around."""
    tb = TB(dut, seed=SEED * 1000 + 2 * idle + backpressure)
    await tb.reset()
    tb.set_stress(idle, backpressure)
    await random_workload(tb, int(40 * SCALE), max_batch=16)
    assert tb.records_pushed > tb.capacity, "the workload must wrap the ring"
    await tb.finish()


@cocotb.test()
@cocotb.parametrize(idle=STRESS, backpressure=STRESS)
async def test_stacked(dut: HierarchyObject, idle: bool, backpressure: bool) -> None:
    """Stacked samples: four actors interleaved, chains broken by overwrites and restarted by
    RPL_RESET, k = 0 .. 8 and BAD_COUNT above, B = 64 at k = 8 (512 frames): every frame and
    counter from the model (``stacked_workload``)."""
    tb = TB(dut, seed=SEED * 3000 + 2 * idle + backpressure)
    await tb.reset()
    tb.set_stress(idle, backpressure)
    await stacked_workload(tb, int(12 * SCALE), max_batch=64)
    valid, broken = stack_coverage(tb)
    assert tb.records_pushed > tb.capacity, "the workload must wrap the ring"
    assert valid and broken, (valid, broken)
    assert tb.m.counters()["CNT_DROP_BAD_COUNT"] > 0 or SCALE < 2
    await tb.finish()


@cocotb.test()
@cocotb.parametrize(idle=STRESS, backpressure=STRESS)
async def test_rate_limit(dut: HierarchyObject, idle: bool, backpressure: bool) -> None:
    """The rate limiter (protocol section 5): RPL_MIN_SIZE, then samples-per-insert ratios
    with error buffers, extreme register values; every NOT_YET answer, the counters and
    RPL_RATE_DIFF against the model, while the traffic streams (no quiescing between
    requests)."""
    tb = TB(dut, seed=SEED * 1000 + 40 + 2 * idle + backpressure)
    await tb.reset()
    tb.set_stress(idle, backpressure)
    rng, one = tb.rng, 1 << 16
    await tb.sample(LEARNERS[0], 2, False)  # EMPTY
    await tb.write("RPL_MIN_SIZE", 12)
    for _ in range(int(6 * SCALE)):
        await tb.push(rng.choice(ACTORS), rng.randint(1, 5))
        await tb.sample(rng.choice(LEARNERS), rng.choice((1, 4, 16)), rng.random() < 0.5)
    settings = [(rng.randint(0, 30), rng.choice((one, one // 2, 3 * one + rng.randrange(one))),
                 rng.choice((16 * one, 40 * one + 7, 64 * one))) for _ in range(3)]
    settings += [(0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF), (3, 0xFFFFFFFF, 0xFFFFFFFF),
                 (4, 2 * one, 24 * one)]
    for min_size, spi, err in settings:
        await tb.write("RPL_MIN_SIZE", min_size)
        await tb.write("RPL_SPI_ERROR", err)
        await tb.write("RPL_SPI", spi)
        for _ in range(int(12 * SCALE)):
            if rng.random() < 0.5:
                await tb.push(rng.choice(ACTORS), rng.randint(1, 16))
            else:
                await tb.sample(rng.choice(LEARNERS), rng.choice((1, 2, 8, 32, 64)),
                                rng.random() < 0.6)
        await tb.check_outputs()
        await tb.check_state()
    await tb.write("RPL_RESET", 1)
    await tb.sample(LEARNERS[1], 1, True)
    cnt = tb.m.counters()
    assert cnt["CNT_TX_PUSH_NOT_YET"] > 0 and cnt["CNT_TX_SAMPLE_NOT_YET"] > 0
    await tb.finish()



@cocotb.test()
@cocotb.parametrize(idle=STRESS, backpressure=STRESS)
async def test_malformed(dut: HierarchyObject, idle: bool, backpressure: bool) -> None:
    """Every malformed class is dropped with its reason and changes nothing."""
    tb = TB(dut)
    await tb.reset()
    tb.set_stress(idle, backpressure)
    await tb.push(ACTORS[0], 8)
    await tb.sample(LEARNERS[0], 4, True)
    for reason, frame, port in bad_frames(tb):
        before = tb.m.counters()[f"CNT_DROP_{reason}"]
        await tb.send(frame, port)
        assert tb.m.counters()[f"CNT_DROP_{reason}"] == before + 1, f"model: not {reason}"
        # valid traffic in between shows the state did not change
        if tb.rng.random() < 0.3:
            await tb.sample(LEARNERS[1], 2, True)
    # flags bits 4 (ERROR), 5 (NOT_YET) and bits 0, 2, 3 are ignored on replay requests: accepted
    a, lrn = MEMBERS[0], MEMBERS[1]
    drops = {k: v for k, v in tb.m.counters().items() if k.startswith("CNT_DROP_")}
    for fl in (0x10, 0x1D, 0x30):
        msg = push_msg(tb, 2)
        msg.flags = fl
        await tb.send(frame_of(msg, a, validate=False), a.port)
        smp = sample_request(2, job=JOB, worker=lrn.wid, seq=tb.next_seq(), prioritized=fl == 0x10)
        smp.flags |= fl
        await tb.send(frame_of(smp, lrn, validate=False), lrn.port)
        upd = update([0], [3], job=JOB, worker=lrn.wid, seq=tb.next_seq())
        upd.flags = fl
        await tb.send(frame_of(upd, lrn, validate=False), lrn.port)
    assert drops == {k: v for k, v in tb.m.counters().items() if k.startswith("CNT_DROP_")}
    # DISABLED: replay engine off in CTRL
    await tb.write("CTRL", 0x1)
    await tb.push(ACTORS[0], 2)
    await tb.sample(LEARNERS[0], 2, True)
    await tb.update(LEARNERS[0], [0], [1])
    await tb.write("CTRL", 0x3)
    # EMPTY: prioritized sample with a zero total, then with no records
    await tb.update(LEARNERS[0], list(range(8)), [0] * 8)
    await tb.sample(LEARNERS[0], 2, True)
    await tb.sample(LEARNERS[0], 2, False)
    await tb.write("RPL_RESET", 1)
    await tb.sample(LEARNERS[0], 2, False)
    await tb.sample(LEARNERS[1], 2, True)
    # BAD_INDEX: pairs past size are skipped one by one
    await tb.push(ACTORS[1], 5)
    await tb.update(LEARNERS[1], [4, 5, 6, 1 << 31, 2], [9, 9, 9, 9, 9])
    await tb.sample(LEARNERS[1], 8, True)
    cnt = tb.m.counters()
    for reason in MALFORMED_REASONS + ("DISABLED", "EMPTY", "BAD_INDEX"):
        assert cnt[f"CNT_DROP_{reason}"] > 0, f"no {reason} case"
    await tb.finish()


@cocotb.test()
@cocotb.parametrize(idle=STRESS, backpressure=STRESS)
async def test_unauthorized(dut: HierarchyObject, idle: bool, backpressure: bool) -> None:
    """Unknown workers, missing role bits and spoofed senders are dropped."""
    tb = TB(dut)
    await tb.reset()
    tb.set_stress(idle, backpressure)
    await tb.push(ACTORS[1], 4)
    for _, frame, port in unauthorized_frames(tb):
        await tb.send(frame, port)
    # member 1 has MEMBER_UDP = 0: any UDP source port is accepted
    msg = sample_request(2, job=JOB, worker=1, seq=tb.next_seq())
    f = bytearray(frame_of(msg, MEMBERS[1]))
    struct.pack_into("!H", f, 34, 5555)
    await tb.send(bytes(f), MEMBERS[1].port)
    await tb.sample(LEARNERS[1], 2, False)
    await tb.finish()


# ---------------------------------------------------------------------------
# ordering, statistics, reset, throughput


@cocotb.test()
@cocotb.parametrize(idle=STRESS, backpressure=STRESS)
async def test_ordering(dut: HierarchyObject, idle: bool, backpressure: bool) -> None:
    """Back-to-back requests take effect in arrival order (tree and record hazards)."""
    tb = TB(dut)
    await tb.reset()
    tb.set_stress(idle, backpressure)
    c = tb.capacity
    lrn = LEARNERS[0]
    # fill the ring so every PUSH overwrites records that earlier samples return
    while tb.records_pushed < c:
        await tb.push(ACTORS[0], 16)
    # half the rounds of a run with one stress axis: the four runs together
    # send as many as the two of that did
    for _ in range(max(2, round(1.5 * SCALE))):
        # UPDATE then SAMPLE: the sample must see the new priorities
        hot = tb.rng.randrange(c)
        await tb.update(lrn, [hot, hot, (hot + 1) % c], [1, 0xFFFFFFF0, 5])
        await tb.sample(lrn, 8, True)
        # SAMPLE then UPDATE then SAMPLE
        await tb.sample(lrn, 4, True)
        await tb.update(lrn, [hot], [1])
        await tb.sample(lrn, 4, True)
        # SAMPLE then PUSH over the sampled records, then SAMPLE again
        await tb.sample(lrn, 16, False)
        await tb.push(ACTORS[1], 16, [0xFFFF0000] * 16)
        await tb.sample(lrn, 8, True)
        # same leaf updated back to back (forwarding through the pipeline)
        await tb.update(lrn, [3] * 20 + [4] * 3, list(range(1, 24)))
        await tb.sample(lrn, 2, True)
    await tb.finish()


@cocotb.test()
@cocotb.parametrize(idle=STRESS, backpressure=STRESS)
async def test_update_burst(dut: HierarchyObject, idle: bool, backpressure: bool) -> None:
    """Back-to-back 128-pair UPDATEs (payload FIFO full), then samples see all of them."""
    tb = TB(dut)
    await tb.reset()
    tb.set_stress(idle, backpressure)
    await update_burst(tb)


@cocotb.test()
async def test_update_burst_lean(dut: HierarchyObject) -> None:
    """The same with the lean driver: whole beats, no gap between frames or beats."""
    tb = TB(dut, lean=True)
    await tb.reset()
    await update_burst(tb)


async def update_burst(tb: TB) -> None:
    """Fill the ring, six 128-pair UPDATEs back to back, a prioritized SAMPLE; check."""
    while tb.records_pushed < tb.capacity:
        await tb.push(ACTORS[0], 16)
    size = tb.m.read("RPL_SIZE")
    for _ in range(int(6 * SCALE)):
        await tb.update(LEARNERS[0], [tb.rng.randrange(size) for _ in range(128)],
                        [tb.rng.randint(1, 1 << 24) for _ in range(128)])
    await tb.sample(LEARNERS[1], 16, True)
    await tb.finish()


def chi2_sf(x: float, k: int) -> float:
    """Survival function of the chi-square distribution (regularized upper gamma)."""
    a, z = k / 2.0, x / 2.0
    # series for the regularized lower incomplete gamma P(a, z)
    term = total = 1.0 / a
    n = 1
    while term > total * 1e-15:
        term *= z / (a + n)
        total += term
        n += 1
    p = total * math.exp(-z + a * math.log(z) - math.lgamma(a))
    return max(0.0, 1.0 - p)


@cocotb.test()
async def test_chi_square(dut: HierarchyObject) -> None:
    """Prioritized sample frequencies follow the priorities (chi-square, p > 0.001)."""
    tb = TB(dut)
    await tb.reset()
    n_rec = 16
    prios = [(i + 1) * 4096 for i in range(n_rec)]
    await tb.push(ACTORS[0], n_rec, prios)
    batches = int(8 * SCALE)
    for _ in range(batches):
        await tb.sample(LEARNERS[1], 64, True)
    await tb.check_outputs()
    counts = [0] * n_rec
    for e in tb.expected[1:]:
        idx = struct.unpack_from("<I", e.frame, 64)[0]
        counts[idx] += 1
    n = sum(counts)
    total = sum(prios)
    stat = sum((counts[i] - n * p / total) ** 2 / (n * p / total) for i, p in enumerate(prios))
    p_value = chi2_sf(stat, n_rec - 1)
    tb.log.info("chi-square %.2f over %d samples, p = %.3f", stat, n, p_value)
    assert p_value > 0.001, f"frequencies do not follow priorities: chi2={stat:.1f} p={p_value}"
    await tb.check_state()


@cocotb.test()
async def test_reset_and_seed(dut: HierarchyObject) -> None:
    """RPL_RESET empties the memory; RPL_SEED (0 too) restarts the generator."""
    tb = TB(dut)
    await tb.reset()
    await tb.push(ACTORS[0], 12)
    await tb.write("RPL_SEED", 0x12345678)
    await tb.sample(LEARNERS[0], 8, False)
    await tb.check_outputs()
    await tb.write("RPL_RESET", 1)
    await tb.check_state()
    await tb.sample(LEARNERS[0], 4, True)  # EMPTY
    await tb.push(ACTORS[1], 5)
    await tb.write("RPL_SEED", 0)
    await tb.sample(LEARNERS[0], 8, True)
    await tb.write("CTRL", 0x80000003)  # clear the counters
    await tb.sample(LEARNERS[1], 4, False)
    await tb.finish()


@cocotb.test()
async def test_table_carve(dut: HierarchyObject) -> None:
    """The job table empties the table (``table_carve``, protocol section 11: the job's table
    carved anew) as RPL_RESET does: size, write pointer, priorities and the rate limiter's
    RPL_RATE_DIFF; between requests of a running workload with a ratio limit, against the
    model's own carve."""
    tb = TB(dut, seed=SEED * 1000 + 77)
    await tb.reset()
    rng, one = tb.rng, 1 << 16
    await tb.write("RPL_MIN_SIZE", 3)
    await tb.write("RPL_SPI_ERROR", 8 * one)
    await tb.write("RPL_SPI", 2 * one)
    for _ in range(3):
        for _ in range(int(8 * SCALE)):
            r = rng.random()
            if r < 0.45:
                await tb.push(rng.choice(ACTORS), rng.randint(1, 8))
            elif r < 0.85:
                await tb.sample(rng.choice(LEARNERS), rng.choice((1, 4, 16)), rng.random() < 0.6)
            elif tb.m.read("RPL_SIZE"):
                n, size = rng.randint(1, 6), tb.m.read("RPL_SIZE")
                await tb.update(rng.choice(LEARNERS), [rng.randrange(size) for _ in range(n)],
                                [rng.randint(1, 1 << 20) for _ in range(n)])
        await tb.check_outputs()
        assert tb.m.read("RPL_SIZE") > 0
        await tb.carve()
        await tb.check_state()
        assert tb.m.read("RPL_SIZE") == 0
        await tb.sample(LEARNERS[0], 2, True)  # EMPTY (or NOT_YET) until records come again
    await tb.finish()


@cocotb.test()
async def test_throughput(dut: HierarchyObject) -> None:
    """One sample index and one leaf update per clock once the pipeline is full."""
    tb = TB(dut)
    await tb.reset()
    mon = PipeMonitor(dut)
    c = tb.capacity
    while tb.records_pushed < c:
        await tb.push(ACTORS[0], 16)
    await tb.check_outputs()
    await tb.update(LEARNERS[0], list(range(128)) if c >= 128 else [i % c for i in range(128)],
                    [tb.rng.randint(1, 1 << 30) for _ in range(128)])
    await tb.sample(LEARNERS[0], 64, True)
    await tb.check_outputs()
    assert mon.max_update_run >= 128, f"updates: longest run {mon.max_update_run} < 128"
    assert mon.max_result_run >= 64, f"samples: longest run {mon.max_result_run} < 64"
    latency = mon.out_first_clocks[-64] - mon.in_last_clocks[-1]
    tb.log.info("sample latency %d clocks (last request beat to first response beat)", latency)
    # a stacked batch (B = 64, k = MAX_STACK: 512 frames) leaves back to back once the first
    # frame is out, when a frame is at least 5 beats (replay_stack walks a k-deep chain in at most
    # 4k + 1 clocks; every record size on the 256-bit SUME bus)
    await tb.sample(LEARNERS[0], 64, True, stack=MAX_STACK)
    await tb.check_outputs()
    beats = (128 + tb.record_bytes) * 8 // len(dut.s_axis_tdata)
    starts = mon.out_first_clocks[-64 * MAX_STACK:]
    gaps = sorted({b - a for a, b in zip(starts[1:], starts[2:], strict=False)})
    tb.log.info("stacked batch: %d-beat frames, gaps between frame starts %s", beats, gaps)
    if beats >= 5:
        assert gaps == [beats], f"stacked frames not back to back: {gaps} (frames of {beats} beats)"
    await tb.check_state()


# ---------------------------------------------------------------------------
# soak with the lean beat driver of sim.common.tb (no BFMs)


@cocotb.test(skip=os.environ.get("RPL_SOAK") != "1")
async def test_soak(dut: HierarchyObject) -> None:
    """Long random workload through a lean driver, every reply compared with the model."""
    tb = TB(dut, seed=SEED + 77, lean=True, stall=0.2)
    await tb.reset()
    await random_workload(tb, SOAK_OPS, max_batch=64)
    await tb.finish()


# ---------------------------------------------------------------------------
# benchmark (scripts/bench_replay.py)


@cocotb.test(skip=os.environ.get("RPL_BENCH_OUT") is None)
async def test_bench(dut: HierarchyObject) -> None:
    """Throughput and latency figures; results as JSON in ``RPL_BENCH_OUT``."""
    import json

    tb = TB(dut, seed=SEED, lean=True)
    await tb.reset()
    mon = BenchMonitor(dut)
    lrn = LEARNERS[0]
    for _ in range(64):  # 1024 records
        await tb.push(ACTORS[0], 16)
    await tb.quiesce()
    out: dict[str, float] = {}

    # latency: one request on an idle engine, last request beat -> first reply beat
    for name, prio in (("prioritized", True), ("uniform", False)):
        mon.reset()
        await tb.sample(lrn, 1, prio)
        await tb.quiesce()
        out[f"sample_latency_{name}"] = mon.out_first[0] - mon.in_last[0]

    # sample indices: one batch of 64; then 16 batches back to back (output bound)
    mon.reset()
    await tb.sample(lrn, 64, True)
    await tb.quiesce()
    out["samples_per_clock"] = 64 / (mon.result_clocks[-1] - mon.result_clocks[0] + 1)
    mon.reset()
    for _ in range(16):
        await tb.sample(lrn, 64, True)
    await tb.quiesce()
    span = mon.out_beat_clocks[-1] - mon.out_beat_clocks[0] + 1
    out["resp_beats_per_clock"] = len(mon.out_beat_clocks) / span
    out["resp_samples_per_clock"] = 16 * 64 / span

    # updates: one UPDATE of 128 pairs, then 16 back to back
    mon.reset()
    size = tb.m.read("RPL_SIZE")
    await tb.update(lrn, [tb.rng.randrange(size) for _ in range(128)],
                    [tb.rng.randint(1, 1 << 24) for _ in range(128)])
    await tb.quiesce()
    out["updates_per_clock"] = 128 / (mon.update_clocks[-1] - mon.update_clocks[0] + 1)
    mon.reset()
    for _ in range(16):
        await tb.update(lrn, [tb.rng.randrange(size) for _ in range(128)],
                        [tb.rng.randint(1, 1 << 24) for _ in range(128)])
    await tb.quiesce()
    assert len(mon.update_pairs) == 16 * 128
    out["updates_per_clock_sustained"] = len(mon.update_clocks) / (
        mon.update_clocks[-1] - mon.update_clocks[0] + 1)
    await tb.check_state()
    with open(os.environ["RPL_BENCH_OUT"], "w") as f:
        json.dump(out, f)
