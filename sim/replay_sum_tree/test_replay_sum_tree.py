"""cocotb testbench for ``hw/rtl/replay_sum_tree.v`` against ``hostdrv.wire.sampler.SumTree``.

Bursts of random leaf updates (one per clock, with repeats of one leaf back to
back, zero and full-scale priorities) alternate with bursts of queries (one
per clock): prioritized draws at random targets and at the edges of leaf
intervals, and uniform draws by index. After each update burst the root sum
must equal the model's; every query result (leaf index, leaf priority, side
band) must equal the model's, and every result must come the same number of
clocks after its query (one draw per clock, in order). A clear empties the tree.

``test_tables``: tables (docs/protocol.md section 11) as aligned sub-trees, one
per job of the build (``JOBS``), each against a ``SumTree`` of its own capacity:
its total (``job_total``) after every update burst, and its prioritized draws
(``q_depth``: the levels above the table follow its base) index for index;
leaves outside every table change underneath (untagged updates) and no table
sees them; a table emptied (``job_total_clear`` and its leaves set to 0
untagged) and carved again elsewhere while the others keep theirs.
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
              "q_target", "q_index", "q_user", "upd_job", "q_depth", "job_total_clear"):
        getattr(dut, s).value = 0
    dut.upd_count.value = 1
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


# ---------------------------------------------------------------------------
# tables: aligned sub-trees with totals of their own


def carve(rng: random.Random, cap: int, taken: list[range], max_log: int) -> range:
    """A free aligned range of 2^k leaves (k random in 0 .. ``max_log``), not overlapping
    ``taken`` (one leaf when none is found)."""
    for _ in range(200):
        size = 1 << rng.randrange(max_log + 1)
        base = rng.randrange(cap // size) * size
        r = range(base, base + size)
        if not any(r.start < t.stop and t.start < r.stop for t in taken):
            return r
    return next(range(i, i + 1) for i in range(cap) if not any(i in t for t in taken))


class Tables:
    """The tables of a tree and their models (a SumTree each)."""

    def __init__(self, bench: Bench, jobs: int, rng: random.Random) -> None:
        self.bench, self.rng = bench, rng
        self.ranges: list[range] = []
        # up to a quarter of the leaves a table with several (the whole tree with one)
        self.max_log = bench.levels - (jobs - 1).bit_length()
        if jobs > 1:  # the first of several a single odd leaf: a descent forced to the leaves
            odd = 2 * rng.randrange(bench.cap // 2) + 1
            self.ranges.append(range(odd, odd + 1))
        while len(self.ranges) < jobs:
            self.ranges.append(carve(rng, bench.cap, self.ranges, self.max_log))
        self.models = [SumTree(len(r)) for r in self.ranges]

    async def update(self, pairs: list[tuple[int, int, int, int]]) -> None:
        """``(leaf, prio, job, count)`` each, one per clock (the whole-tree model too)."""
        dut = self.bench.dut
        for leaf, prio, job, count in pairs:
            await FallingEdge(dut.clk)
            dut.upd_valid.value = 1
            dut.upd_index.value = leaf
            dut.upd_prio.value = prio
            dut.upd_job.value = job
            dut.upd_count.value = count
            self.bench.model.set(leaf, prio)
            if count:
                self.models[job].set(leaf - self.ranges[job].start, prio)
        await FallingEdge(dut.clk)
        dut.upd_valid.value = 0
        dut.upd_count.value = 1
        await self.bench.idle("upd_busy")
        await ClockCycles(dut.clk, 2)
        self.check_totals()

    def check_totals(self) -> None:
        dut, width = self.bench.dut, self.bench.levels + 32
        totals = int(dut.job_total.value)
        for j, m in enumerate(self.models):
            got = totals >> (width * j) & ((1 << width) - 1)
            assert got == m.total, f"table {j} {self.ranges[j]}: total {got}, model {m.total}"
        assert int(dut.total.value) == self.bench.model.total

    def random_pairs(self, n: int) -> list[tuple[int, int, int, int]]:
        """Leaves of the tables (tagged) and outside them (untagged)."""
        rng, out = self.rng, []
        for _ in range(n):
            j = rng.randrange(len(self.ranges))
            if rng.random() < 0.15:
                leaf = rng.randrange(self.bench.cap)
                if not any(leaf in r for r in self.ranges):
                    out.append((leaf, random_prio(rng), 0, 0))
                    continue
            r = self.ranges[j]
            out.append((r.start + rng.randrange(len(r)), random_prio(rng), j, 1))
        # the neighbours of small tables change underneath (untagged)
        for r in self.ranges:
            for leaf in (r.start - len(r), r.stop):
                if 0 <= leaf < self.bench.cap and not any(leaf in t for t in self.ranges):
                    out.append((leaf, random_prio(rng), 0, 0))
        return out

    async def draws(self, n: int) -> None:
        """Prioritized draws in random tables, each against its table's model."""
        dut, bench, rng = self.bench.dut, self.bench, self.rng
        qs = []
        for _ in range(n):
            j = rng.randrange(len(self.ranges))
            total = self.models[j].total
            if total:
                qs.append((j, rng.choice([rng.randrange(total), 0, total - 1])))
        bench.results.clear()
        for tag, (j, t) in enumerate(qs):
            r = self.ranges[j]
            await FallingEdge(dut.clk)
            dut.q_valid.value = 1
            dut.q_uniform.value = 0
            dut.q_target.value = t
            dut.q_index.value = r.start
            dut.q_depth.value = bench.levels - (len(r).bit_length() - 1)
            dut.q_user.value = tag
        await FallingEdge(dut.clk)
        dut.q_valid.value = 0
        await bench.idle("q_busy")
        await ClockCycles(dut.clk, 2)
        assert len(bench.results) == len(qs)
        for tag, ((j, t), (_clk, index, prio, user)) in enumerate(zip(qs, bench.results, strict=True)):
            r, m = self.ranges[j], self.models[j]
            want = r.start + m.find(t)
            assert user == tag and index == want, \
                f"table {j} {r} target {t}: leaf {index}, model {want} (tag {user})"
            assert prio == m.leaf(index - r.start)

    async def empty(self, j: int, new: range) -> None:
        """Table ``j`` emptied (its total cleared, its leaves set to 0 untagged) and carved at
        ``new`` (whose leaves are set to 0 untagged too)."""
        dut = self.bench.dut
        await FallingEdge(dut.clk)
        dut.job_total_clear.value = 1 << j
        await FallingEdge(dut.clk)
        dut.job_total_clear.value = 0
        old, self.ranges[j] = self.ranges[j], new
        self.models[j] = SumTree(len(new))
        await self.update([(leaf, 0, j, 0) for leaf in sorted(set(old) | set(new))])


@cocotb.test()
async def test_tables(dut: HierarchyObject) -> None:
    """Tables as aligned sub-trees, each against a SumTree of its own (module docstring)."""
    bench = await setup(dut)
    rng = random.Random(SEED + 2)
    jobs = int(dut.JOBS.value)
    tables = Tables(bench, jobs, rng)
    for rnd in range(ROUNDS):
        await tables.update(tables.random_pairs(rng.randint(1, 2 * bench.cap)))
        await tables.draws(rng.randint(1, 2 * bench.cap))
        if rnd % 3 == 2:
            j = rng.randrange(jobs)
            others = [r for k, r in enumerate(tables.ranges) if k != j]
            await tables.empty(j, carve(rng, bench.cap, others, tables.max_log))
            await tables.draws(bench.cap)
