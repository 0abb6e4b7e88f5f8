"""cocotb testbench for ``hw/rtl/fp32_add.v``: bit-exact against numpy float32.

Operand pairs come from a seeded numpy generator: the cross product of
TestFloat-style special values with each other, then random uniform bit
patterns, close exponents (cancellation), ties to even, massive cancellation,
exponent differences 0..40, subnormals and near-overflow values. Expected sums
always come from :func:`hostdrv.wire.fp32.fp32_add_bits`.

The driver is lean on purpose: one ``FallingEdge`` await per clock, operands
written straight to the ports (no bus functional model), outputs sampled every
clock and compared in bulk at the end. Random one-clock bubbles on ``in_valid``
check that ``out_valid`` and ``out_tag`` follow at the fixed latency.

Environment:
    ``FP32_PAIRS``  number of operand pairs (default 20000; the special-value
                    cross product is always included, so at least that many)
    ``FP32_SEED``   generator seed (default ``cocotb.RANDOM_SEED``)
"""

from __future__ import annotations

import os

import cocotb
import numpy as np
import numpy.typing as npt
from cocotb.handle import HierarchyObject
from cocotb.triggers import FallingEdge

from hostdrv.wire.fp32 import CANONICAL_NAN, fp32_add_bits
from sim.common.tb import ClockReset

LATENCY = 6
"""Documented fixed latency of fp32_add (``// LATENCY = 6`` in the RTL header)."""

CLK_PERIOD_NS = 4

U32 = npt.NDArray[np.uint32]

# category labels, reported with each mismatch
CATEGORIES = (
    "special x special",
    "uniform bits",
    "close exponents",
    "ties to even",
    "massive cancellation",
    "exponent difference 0..40",
    "subnormal",
    "near overflow",
)

# share of the random (non cross-product) pairs per category, CATEGORIES[1:]
WEIGHTS = (0.25, 0.20, 0.15, 0.12, 0.15, 0.07, 0.06)


def pack(sign: npt.ArrayLike, exp: npt.ArrayLike, frac: npt.ArrayLike) -> U32:
    """Assemble binary32 bit patterns from sign, biased exponent and fraction."""
    s = np.asarray(sign, dtype=np.uint32) & 1
    e = np.asarray(exp, dtype=np.uint32) & 0xFF
    f = np.asarray(frac, dtype=np.uint32) & 0x7FFFFF
    return ((s << 31) | (e << 23) | f).astype(np.uint32)


def special_magnitudes() -> U32:
    """TestFloat-style magnitudes: zero, subnormal/normal extremes, powers of two,
    boundary significands, infinity, quiet and signalling NaNs."""
    mags: list[int] = [
        0x00000000,  # zero
        0x00000001, 0x00000002, 0x00000003,  # smallest subnormals
        0x00400000, 0x00400001, 0x00555555,  # mid subnormals
        0x007FFFFE, 0x007FFFFF,  # largest subnormals
        0x00800000, 0x00800001, 0x00FFFFFF,  # smallest normals
        0x7F7FFFFE, 0x7F7FFFFF,  # largest normals
        0x3F800001, 0x3FFFFFFF, 0x3F7FFFFF, 0x3FC00000, 0x4B7FFFFF, 0x3F800003,
        0x7F800000,  # infinity
        0x7FC00000, 0x7FC00001, 0x7FFFFFFF,  # quiet NaNs
        0x7F800001, 0x7FA00000, 0x7FBFFFFF,  # signalling NaNs
    ]
    # powers of two: 2^(e-127) around 1.0, the subnormal boundary, the 24/25/26-bit
    # alignment limits and the top of the range
    for e in (1, 2, 3, 22, 23, 24, 25, 26, 27, 28, 100, 102, 103, 104, 126, 127, 128,
              150, 151, 152, 153, 253, 254):
        mags.append(e << 23)
    return np.unique(np.array(mags, dtype=np.uint32))


def special_pairs() -> tuple[U32, U32]:
    """Cross product of the signed special values with each other."""
    m = special_magnitudes()
    vals = np.concatenate([m, m | np.uint32(0x80000000)])
    a, b = np.meshgrid(vals, vals, indexing="ij")
    return a.ravel(), b.ravel()


def random_frac(rng: np.random.Generator, n: int) -> U32:
    """Fractions: mostly uniform, some all-zeros, all-ones or a single set bit."""
    f = rng.integers(0, 1 << 23, n, dtype=np.uint32)
    pick = rng.random(n)
    f[pick < 0.05] = 0
    f[(pick >= 0.05) & (pick < 0.10)] = 0x7FFFFF
    onebit = (pick >= 0.10) & (pick < 0.15)
    f[onebit] = np.uint32(1) << rng.integers(0, 23, int(onebit.sum()), dtype=np.uint32)
    return f


def random_sign(rng: np.random.Generator, n: int) -> U32:
    """Uniform random sign bits."""
    return rng.integers(0, 2, n, dtype=np.uint32)


def gen_uniform(rng: np.random.Generator, n: int) -> tuple[U32, U32]:
    """Uniformly random 32-bit patterns (hits NaN/inf about 1/256 of the time)."""
    return (rng.integers(0, 1 << 32, n, dtype=np.uint32),
            rng.integers(0, 1 << 32, n, dtype=np.uint32))


def gen_close(rng: np.random.Generator, n: int) -> tuple[U32, U32]:
    """Finite values with exponents at most 3 apart, random signs (cancellation)."""
    ea = rng.integers(0, 255, n)
    eb = np.clip(ea + rng.integers(-3, 4, n), 0, 254)
    return (pack(random_sign(rng, n), ea, random_frac(rng, n)),
            pack(random_sign(rng, n), eb, random_frac(rng, n)))


def gen_ties(rng: np.random.Generator, n: int) -> tuple[U32, U32]:
    """x + k * ulp(x)/2 for odd k (exact ties), and one ulp-step either side.

    Covers 1.0 + 2^-24, 1.0 + 3 * 2^-24 and the same for random x with odd and
    even last significand bits, both signs (ties of subtractions too).
    """
    ex = rng.integers(1, 255, n)
    x = pack(random_sign(rng, n), ex, random_frac(rng, n))
    small_k = np.array([1, 3, 5, 7, 9, 15, 17, 255, 257], dtype=np.int64)
    k = np.where(rng.random(n) < 0.6, rng.choice(small_k, n),
                 2 * rng.integers(0, 1 << 23, n) + 1)
    # ulp(x) / 2 = 2^(ex - 151); k < 2^24 keeps y exact unless it is subnormal
    y64 = k.astype(np.float64) * np.exp2(ex.astype(np.float64) - 151.0)
    y = np.abs(y64).astype(np.float32)
    nudge = rng.random(n)
    y = np.where(nudge < 0.15, np.nextafter(y, np.float32(np.inf)), y)
    y = np.where(nudge > 0.85, np.nextafter(y, np.float32(0)), y)
    yb = y.astype(np.float32).view(np.uint32) | (random_sign(rng, n) << 31)
    return x, yb.astype(np.uint32)


def gen_cancel(rng: np.random.Generator, n: int) -> tuple[U32, U32]:
    """x + (-x') with x' within a few ulps of x, or x with low bits scrambled."""
    e = rng.integers(0, 255, n)
    x = pack(random_sign(rng, n), e, random_frac(rng, n))
    mag = (x & np.uint32(0x7FFFFFFF)).astype(np.int64)
    step = rng.integers(-4, 5, n)
    near = np.clip(mag + step, 0, 0x7F7FFFFF)
    nbits = rng.integers(1, 24, n)
    scrambled = (mag & ~((1 << nbits) - 1)) | (rng.integers(0, 1 << 23, n) & ((1 << nbits) - 1))
    ymag = np.where(rng.random(n) < 0.5, near, scrambled).astype(np.uint32)
    y = ymag | ((x ^ np.uint32(0x80000000)) & np.uint32(0x80000000))
    return x, y.astype(np.uint32)


def gen_expdiff(rng: np.random.Generator, n: int) -> tuple[U32, U32]:
    """Exponent differences 0..40 (into the subnormal range), random signs."""
    ea = rng.integers(1, 255, n)
    eb = np.clip(ea - rng.integers(0, 41, n), 0, 254)
    return (pack(random_sign(rng, n), ea, random_frac(rng, n)),
            pack(random_sign(rng, n), eb, random_frac(rng, n)))


def gen_subnormal(rng: np.random.Generator, n: int) -> tuple[U32, U32]:
    """Subnormals and the smallest normals with each other."""
    return (pack(random_sign(rng, n), rng.integers(0, 3, n), random_frac(rng, n)),
            pack(random_sign(rng, n), rng.integers(0, 3, n), random_frac(rng, n)))


def gen_overflow(rng: np.random.Generator, n: int) -> tuple[U32, U32]:
    """Large magnitudes whose sum may round to, or overflow to, infinity."""
    return (pack(random_sign(rng, n) & (rng.random(n) < 0.2), rng.integers(250, 255, n),
                 random_frac(rng, n)),
            pack(random_sign(rng, n) & (rng.random(n) < 0.2), rng.integers(220, 255, n),
                 random_frac(rng, n)))


GENERATORS = (gen_uniform, gen_close, gen_ties, gen_cancel, gen_expdiff, gen_subnormal,
              gen_overflow)


def make_operands(rng: np.random.Generator, n_pairs: int) -> tuple[U32, U32, npt.NDArray[np.int8]]:
    """Special cross product plus weighted random categories, shuffled.

    Returns operands ``a``, ``b`` and the category index of each pair.
    """
    sa, sb = special_pairs()
    a_parts: list[U32] = [sa]
    b_parts: list[U32] = [sb]
    cats: list[npt.NDArray[np.int8]] = [np.zeros(sa.size, dtype=np.int8)]
    rest = max(n_pairs - sa.size, 0)
    counts = np.floor(np.array(WEIGHTS) * rest).astype(int)
    counts[0] += rest - int(counts.sum())
    for idx, (gen, cnt) in enumerate(zip(GENERATORS, counts, strict=True), start=1):
        a, b = gen(rng, int(cnt))
        swap = rng.random(int(cnt)) < 0.5  # both operand orders
        a_parts.append(np.where(swap, b, a).astype(np.uint32))
        b_parts.append(np.where(swap, a, b).astype(np.uint32))
        cats.append(np.full(int(cnt), idx, dtype=np.int8))
    a_all = np.concatenate(a_parts)
    b_all = np.concatenate(b_parts)
    c_all = np.concatenate(cats)
    order = rng.permutation(a_all.size)
    return a_all[order], b_all[order], c_all[order]


def bits_str(x: int) -> str:
    """Hex bits and the float32 value."""
    return f"0x{x:08x} ({np.array([x], dtype=np.uint32).view(np.float32)[0]!r})"


async def start_and_reset(dut: HierarchyObject) -> None:
    """Start the clock (sim.common.tb) and hold reset for a few clocks with in_valid low."""
    ClockReset(dut, CLK_PERIOD_NS, idle_inputs=("in_valid", "in_a", "in_b", "in_tag"))
    for _ in range(4):
        await FallingEdge(dut.clk)
    dut.rst.value = 0


@cocotb.test()
async def test_fp32_add_vs_numpy(dut: HierarchyObject) -> None:
    """Stream operand pairs at one per clock and compare every sum with numpy."""
    n_pairs = int(os.environ.get("FP32_PAIRS", "20000"))
    seed = int(os.environ.get("FP32_SEED", str(cocotb.RANDOM_SEED)))
    rng = np.random.default_rng(seed)
    tag_width = len(dut.in_tag)
    tag_mask = (1 << tag_width) - 1

    # the reference must keep subnormals (no FTZ/DAZ in this process)
    assert int(fp32_add_bits(1, 1)) == 2, "numpy flushes subnormals: reference unusable"
    assert int(fp32_add_bits(0x7F800000, 0xFF800000)) == CANONICAL_NAN

    a, b, cat = make_operands(rng, n_pairs)
    expected = fp32_add_bits(a, b)
    n = a.size

    # issue schedule: about 1 clock in 16 is a bubble with junk operands
    cycles = n + int(n // 15) + 1
    issue = rng.random(cycles) >= 1 / 16
    while int(issue.sum()) < n:
        issue = np.append(issue, True)
    last = int(np.flatnonzero(issue)[n - 1])
    issue = issue[: last + 1]
    cycles = issue.size
    junk_a, junk_b = gen_uniform(rng, cycles)
    pos = np.cumsum(issue) - 1  # pair index for issuing clocks
    drive_a = np.where(issue, a[np.clip(pos, 0, n - 1)], junk_a).tolist()
    drive_b = np.where(issue, b[np.clip(pos, 0, n - 1)], junk_b).tolist()
    drive_tag = (np.arange(cycles) & tag_mask).tolist()
    drive_valid = issue.astype(np.int64).tolist()

    dut._log.info("fp32_add: %d pairs over %d clocks, seed %d, TAG_WIDTH %d",
                  n, cycles, seed, tag_width)
    await start_and_reset(dut)

    in_valid, in_a, in_b, in_tag = dut.in_valid, dut.in_a, dut.in_b, dut.in_tag
    out_valid, out_sum, out_tag = dut.out_valid, dut.out_sum, dut.out_tag
    fall = FallingEdge(dut.clk)
    total = cycles + LATENCY + 2
    got_valid: list[int] = [0] * total
    got_sum: list[int] = [0] * total
    got_tag: list[int] = [0] * total
    for c in range(total):
        # outputs as of the previous rising edge; the datapath is not reset, so
        # data is only read (and defined) while out_valid is high
        if int(out_valid.value):
            got_valid[c] = 1
            got_sum[c] = out_sum.value.to_unsigned()
            got_tag[c] = out_tag.value.to_unsigned()
        if c < cycles:
            in_valid.value = drive_valid[c]
            in_a.value = drive_a[c]
            in_b.value = drive_b[c]
            in_tag.value = drive_tag[c]
        elif c == cycles:
            in_valid.value = 0
        await fall

    # inputs driven before rising edge c+1 appear at sample c + 1 + LATENCY - 1
    exp_valid = np.zeros(total, dtype=np.int64)
    exp_valid[LATENCY : LATENCY + cycles] = issue
    gv = np.array(got_valid, dtype=np.int64)
    bad_valid = np.flatnonzero(gv != exp_valid)
    assert bad_valid.size == 0, (
        f"out_valid wrong at {bad_valid.size} clocks, first at sample {bad_valid[0]} "
        f"(expected latency {LATENCY})")

    sel = np.flatnonzero(exp_valid)
    got = np.array(got_sum, dtype=np.uint32)[sel]
    tags = np.array(got_tag, dtype=np.int64)[sel]
    exp_tags = np.flatnonzero(issue) & tag_mask
    assert np.array_equal(tags, exp_tags), "out_tag does not follow in_tag"

    bad = np.flatnonzero(got != expected)
    for i in bad[:20]:
        dut._log.error("mismatch [%s] a=%s b=%s got=%s expected=%s", CATEGORIES[cat[i]],
                       bits_str(int(a[i])), bits_str(int(b[i])), bits_str(int(got[i])),
                       bits_str(int(expected[i])))
    per_cat = {CATEGORIES[k]: int(np.count_nonzero(cat == k)) for k in range(len(CATEGORIES))}
    dut._log.info("pairs per category: %s", per_cat)
    assert bad.size == 0, f"{bad.size} of {n} sums differ from numpy float32"


@cocotb.test()
async def test_fp32_add_reset_flush(dut: HierarchyObject) -> None:
    """Reset empties the valid pipeline; issuing resumes at the fixed latency."""
    rng = np.random.default_rng(int(os.environ.get("FP32_SEED", str(cocotb.RANDOM_SEED))))
    await start_and_reset(dut)
    cycles = 80
    vin = (rng.random(cycles) < 0.7).astype(np.int64)
    rst = np.zeros(cycles, dtype=np.int64)
    rst[[20, 21, 45, 47]] = 1
    pipe = [0] * LATENCY
    fall = FallingEdge(dut.clk)
    for c in range(cycles):
        assert int(dut.out_valid.value) == pipe[-1], f"out_valid wrong at clock {c}"
        dut.in_valid.value = int(vin[c])
        dut.rst.value = int(rst[c])
        dut.in_a.value = 0x3F800000
        dut.in_b.value = 0x3F800000
        await fall
        pipe = [0] * LATENCY if rst[c] else [int(vin[c]), *pipe[:-1]]
        if pipe[-1]:
            assert dut.out_sum.value.to_unsigned() == int(fp32_add_bits(0x3F800000, 0x3F800000))
