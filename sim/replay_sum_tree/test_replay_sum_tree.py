"""cocotb testbench for ``hw/rtl/replay_sum_tree.v`` against ``hostdrv.wire.sampler.SumTree``.

Bursts of random leaf updates (one per clock, with repeats of one leaf back to
back, zero and full-scale priorities) alternate with bursts of queries (one
per clock): prioritized draws at random targets and at the edges of leaf
intervals, and uniform draws by index. After each update burst the root sum
must equal the model's; every query result (leaf index, leaf priority, side
band) must equal the model's, and every result must come the same number of
clocks after its query (one draw per clock, in order). A clear empties the tree.
"""

from __future__ import annotations

import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.handle import HierarchyObject
from cocotb.triggers import ClockCycles, FallingEdge

from hostdrv.wire.sampler import SumTree

CLK_NS = 4
SEED = int(os.environ.get("TREE_SEED", "1"))
ROUNDS = int(os.environ.get("TREE_ROUNDS", "12"))


class Bench:
    def __init__(self, dut: HierarchyObject) -> None:
        self.dut = dut
        self.cap = int(dut.CAPACITY.value)
        self.levels = self.cap.bit_length() - 1
        self.latency = 5 * self.levels + 3  # an upper bound, for the busy waits
        self.model = SumTree(self.cap)
        self.clock = 0
        self.results: list[tuple[int, int, int, int]] = []  # (clock, index, prio, user)

    async def monitor(self) -> None:
        dut = self.dut
        while True:
            await FallingEdge(dut.clk)
            self.clock += 1
            if int(dut.r_valid.value):
                self.results.append((self.clock, int(dut.r_index.value), int(dut.r_prio.value),
                                     int(dut.r_user.value)))

    async def idle(self, busy: str) -> None:
        """Wait (falling edges) until ``busy`` (upd_busy, q_busy or clearing) is low."""
        for _ in range(self.cap + 10 * self.latency):
            await FallingEdge(self.dut.clk)
            if not int(getattr(self.dut, busy).value):
                return
        raise AssertionError(f"{busy} stuck high")

    async def updates(self, pairs: list[tuple[int, int]]) -> None:
        dut = self.dut
        for index, prio in pairs:
            await FallingEdge(dut.clk)
            dut.upd_valid.value = 1
            dut.upd_index.value = index
            dut.upd_prio.value = prio
            self.model.set(index, prio)
        await FallingEdge(dut.clk)
        dut.upd_valid.value = 0
        await self.idle("upd_busy")
        await FallingEdge(dut.clk)
        assert int(dut.total.value) == self.model.total, (
            f"total {int(dut.total.value)} != model {self.model.total}")

    async def queries(self, qs: list[tuple[bool, int]]) -> None:
        """``(uniform, target or index)`` each; checks every result against the model."""
        dut = self.dut
        self.results.clear()
        issued = []
        for tag, (uniform, value) in enumerate(qs):
            await FallingEdge(dut.clk)
            dut.q_valid.value = 1
            dut.q_uniform.value = int(uniform)
            dut.q_target.value = 0 if uniform else value
            dut.q_index.value = value if uniform else 0
            dut.q_user.value = tag
            issued.append(self.clock)
        await FallingEdge(dut.clk)
        dut.q_valid.value = 0
        await self.idle("q_busy")
        await ClockCycles(dut.clk, 2)
        assert len(self.results) == len(qs), f"{len(self.results)} results for {len(qs)} queries"
        for tag, ((uniform, value), (_clk, index, prio, user)) in enumerate(zip(qs, self.results, strict=True)):
            want = value if uniform else self.model.find(value)
            assert user == tag, f"result {tag} carries side band {user}"
            assert index == want, f"query {tag} ({'uniform' if uniform else 'target'} {value}): " \
                                  f"leaf {index}, model {want}"
            assert prio == self.model.leaf(index), f"leaf {index}: prio {prio}, model {self.model.leaf(index)}"
        # a fixed latency from query to result: one draw per clock, in order
        latencies = {clk - issued[tag] for tag, (clk, *_) in enumerate(self.results)}
        assert len(latencies) == 1, f"latencies {sorted(latencies)}"


async def setup(dut: HierarchyObject) -> Bench:
    cocotb.start_soon(Clock(dut.clk, CLK_NS, unit="ns").start())
    for s in ("clear_start", "upd_valid", "upd_index", "upd_prio", "q_valid", "q_uniform",
              "q_target", "q_index", "q_user"):
        getattr(dut, s).value = 0
    dut.rst.value = 1
    await ClockCycles(dut.clk, 3)
    dut.rst.value = 0
    bench = Bench(dut)
    cocotb.start_soon(bench.monitor())
    await ClockCycles(dut.clk, 2)
    await bench.idle("clearing")
    return bench


def random_prio(rng: random.Random) -> int:
    r = rng.random()
    if r < 0.1:
        return 0
    if r < 0.2:
        return 0xFFFFFFFF
    if r < 0.5:
        return rng.randrange(1 << 8)
    return rng.getrandbits(32)


def edge_targets(model: SumTree, rng: random.Random, count: int) -> list[int]:
    """Targets at the first and last value of random leaves' intervals."""
    out = []
    for _ in range(count):
        i = rng.randrange(model.capacity)
        start = sum(model.leaf(j) for j in range(i))
        if model.leaf(i):
            out += [start, start + model.leaf(i) - 1]
    return out


@cocotb.test()
async def test_updates_and_draws(dut: HierarchyObject) -> None:
    """Random update and query bursts; root, leaves and draws equal the model's."""
    bench = await setup(dut)
    rng = random.Random(SEED)
    cap = bench.cap
    for _ in range(ROUNDS):
        pairs = []
        for _ in range(rng.randint(1, 2 * cap)):
            index = rng.randrange(cap)
            pairs.append((index, random_prio(rng)))
            if rng.random() < 0.2:  # the same leaf again, next clock
                pairs.append((index, random_prio(rng)))
        await bench.updates(pairs)
        total = bench.model.total
        qs: list[tuple[bool, int]] = [(True, rng.randrange(cap)) for _ in range(rng.randint(1, cap))]
        if total:
            qs += [(False, rng.randrange(total)) for _ in range(rng.randint(1, 2 * cap))]
            qs += [(False, t) for t in edge_targets(bench.model, rng, 4)] + [(False, total - 1)]
        rng.shuffle(qs)
        await bench.queries(qs)


@cocotb.test()
async def test_clear(dut: HierarchyObject) -> None:
    """clear_start zeroes every leaf and the root."""
    bench = await setup(dut)
    rng = random.Random(SEED + 1)
    await bench.updates([(i, rng.getrandbits(32) | 1) for i in range(bench.cap)])
    await FallingEdge(dut.clk)
    dut.clear_start.value = 1
    await FallingEdge(dut.clk)
    dut.clear_start.value = 0
    await bench.idle("clearing")
    bench.model.clear()
    await FallingEdge(dut.clk)
    assert int(dut.total.value) == 0
    await bench.queries([(True, i) for i in range(bench.cap)])
    await bench.updates([(3, 5), (1, 7)])
    await bench.queries([(False, t) for t in range(12)])
