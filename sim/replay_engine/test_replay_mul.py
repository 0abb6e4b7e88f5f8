"""cocotb testbench for ``hw/rtl/replay_mul.v``, the sampler's draw multiplier.

Operand pairs go in on random clocks (runs of back-to-back pairs, one per
clock), among them the extremes (zero, all ones, single bits at every limb
edge); every pair must come out exactly ``LATENCY`` clocks later, in order,
with its side band and with bits ``[32 +: OUT_WIDTH]`` of the product. When
the operands have the engine's shape (``a = {i, u}``: a 6-bit sample number
above a 32-bit xorshift32 draw) the result is also checked against the
sampler's own formula ``i * y + (u * y >> 32)`` (``hostdrv.wire.sampler.draw_indices``).

Environment (set by ``tests/test_replay_mul.py``):
    ``MUL_SEED``    seed of the operand generator (default 1)
    ``MUL_PAIRS``   operand pairs (default 3000)
"""

from __future__ import annotations

import os
import random
from collections import deque

import cocotb
from cocotb.clock import Clock
from cocotb.handle import HierarchyObject
from cocotb.triggers import ClockCycles, FallingEdge

SEED = int(os.environ.get("MUL_SEED", "1"))
PAIRS = int(os.environ.get("MUL_PAIRS", "3000"))


def draw_scaled(a: int, y: int) -> int:
    """The sampler's stratified target for ``a = {i, u}``: ``i * y + floor(u * y / 2^32)``."""
    i, u = a >> 32, a & 0xFFFFFFFF
    return i * y + ((u * y) >> 32)


def operands(rng: random.Random, aw: int, bw: int, n: int) -> list[tuple[int, int]]:
    """Edge cases first, then random pairs (uniform, and with few bits set)."""
    edges = [0, 1, (1 << aw) - 1] + [1 << k for k in range(0, aw, 15)] + [(1 << k) - 1 for k in (16, 32)
                                                                           if k < aw]
    edges_b = [0, 1, (1 << bw) - 1] + [1 << k for k in range(0, bw, 15)] + [(1 << k) - 1 for k in (16, 32, 48)
                                                                             if k < bw]
    out = [(a, b) for a in edges for b in edges_b]
    while len(out) < n:
        r = rng.random()
        if r < 0.6:
            out.append((rng.getrandbits(aw), rng.getrandbits(bw)))
        elif r < 0.8:
            out.append((rng.getrandbits(aw) | ((1 << aw) - 1 >> rng.randrange(aw)),
                        (1 << bw) - 1 >> rng.randrange(bw)))
        else:
            out.append((sum(1 << k for k in rng.sample(range(aw), 3)),
                        sum(1 << k for k in rng.sample(range(bw), 3))))
    return out


@cocotb.test()
async def test_products(dut: HierarchyObject) -> None:
    """Every result equals the integer product's bits [32 +: OUT_WIDTH], LATENCY clocks later."""
    aw, bw = len(dut.in_a), len(dut.in_b)
    ow, uw = len(dut.out_p), len(dut.out_user)
    latency = int(dut.LATENCY.value)
    assert latency == 4 + (ow + 46) // 16, f"LATENCY {latency} for OUT_WIDTH {ow}"
    rng = random.Random(SEED)
    pairs = operands(rng, aw, bw, PAIRS)
    cocotb.start_soon(Clock(dut.clk, 4, unit="ns").start())
    dut.rst.value = 1
    dut.in_valid.value = 0
    dut.in_a.value = 0
    dut.in_b.value = 0
    dut.in_user.value = 0
    await ClockCycles(dut.clk, 4)
    dut.rst.value = 0
    expected: deque[tuple[int, int, int, int]] = deque()  # (clock due, product, user, a)
    mask = (1 << ow) - 1
    clock = 0
    checked = 0
    k = 0
    while k < len(pairs) or expected:
        await FallingEdge(dut.clk)
        clock += 1
        if int(dut.out_valid.value):
            assert expected, f"clock {clock}: a result nobody asked for"
            due, want, user, a = expected.popleft()
            assert clock == due, f"result due at clock {due} came at {clock}"
            got = int(dut.out_p.value)
            assert got == want, f"a={a:#x}: got {got:#x} want {want:#x}"
            assert int(dut.out_user.value) == user
            checked += 1
        else:
            assert not expected or expected[0][0] != clock, f"clock {clock}: result missing"
        if k < len(pairs) and rng.random() < 0.85:
            a, b = pairs[k]
            k += 1
            user = rng.getrandbits(uw)
            want = ((a * b) >> 32) & mask
            if aw == 38 and (b << 6) < (1 << ow):
                # the engine's draws: target < 64 * y fits OUT_WIDTH bits
                assert want == draw_scaled(a, b)
            dut.in_valid.value = 1
            dut.in_a.value = a
            dut.in_b.value = b
            dut.in_user.value = user
            expected.append((clock + latency, want, user, a))
        else:
            dut.in_valid.value = 0
            dut.in_a.value = rng.getrandbits(aw)  # ignored while not valid
    dut.in_valid.value = 0
    await ClockCycles(dut.clk, latency + 2)
    assert not int(dut.out_valid.value)
    assert checked == len(pairs)
    dut._log.info("%d products checked, latency %d", checked, latency)
