"""cocotb testbench for ``hw/rtl/nrl_axis_merge.v`` (packet round-robin merge).

Random packets on every input, random idle clocks on each input and random
backpressure on the output. Each beat carries (input, packet, beat) in its data,
so the checker can tell that every packet leaves whole (no interleaving), that
the packets of one input leave in the order they came, and that nothing is
lost or duplicated. A second test checks the line rate: with every input busy
and the output always ready, a beat leaves every clock.
"""

from __future__ import annotations

import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.handle import HierarchyObject
from cocotb.triggers import ClockCycles, FallingEdge, ReadOnly, RisingEdge

CLK_NS = 4
SEED = int(os.environ.get("MERGE_SEED", "1"))


class Bench:
    """Drives the S_COUNT inputs and the output ready once per clock, at the falling edge."""

    def __init__(self, dut: HierarchyObject, rng: random.Random) -> None:
        self.dut = dut
        self.rng = rng
        self.n = int(dut.S_COUNT.value)
        self.dw = int(dut.DATA_WIDTH.value)
        self.kw = int(dut.KEEP_WIDTH.value)
        self.uw = int(dut.USER_WIDTH.value)
        self.pending: list[list[tuple[int, int, int, int]]] = [[] for _ in range(self.n)]
        self.sent: list[list[list[tuple[int, int, int, int]]]] = [[] for _ in range(self.n)]
        self.received: list[list[tuple[int, int, int, int]]] = []

    def beat(self, src: int, pkt: int, idx: int, last: bool) -> tuple[int, int, int, int]:
        data = (src << 48) | (pkt << 16) | idx | (self.rng.getrandbits(self.dw) << 64 if self.dw > 64 else 0)
        data &= (1 << self.dw) - 1
        keep = self.rng.randrange(1, 1 << self.kw) if last else (1 << self.kw) - 1
        user = self.rng.getrandbits(self.uw)
        return data, keep, int(last), user

    def queue_packets(self, src: int, count: int, max_beats: int) -> None:
        for _ in range(count):
            pkt = len(self.sent[src])
            beats = self.rng.randint(1, max_beats)
            frame = [self.beat(src, pkt, i, i == beats - 1) for i in range(beats)]
            self.sent[src].append(frame)
            self.pending[src].extend(frame)

    async def run(self, idle: float, backpressure: float, limit: int) -> int:
        """Run until every queued beat has left; return the clocks taken."""
        dut = self.dut
        total = sum(len(p) for p in self.pending)
        offered = [False] * self.n
        got = 0
        clocks = 0
        while got < total:
            clocks += 1
            assert clocks < limit, f"stalled: {got} of {total} beats out after {limit} clocks"
            await FallingEdge(dut.clk)
            tdata = tkeep = tlast = tuser = tvalid = 0
            for i in range(self.n):
                # a beat once offered stays offered until taken (AXI4-Stream)
                if self.pending[i] and (offered[i] or self.rng.random() >= idle):
                    offered[i] = True
                    d, k, lst, u = self.pending[i][0]
                    tdata |= d << (i * self.dw)
                    tkeep |= k << (i * self.kw)
                    tlast |= lst << i
                    tuser |= u << (i * self.uw)
                    tvalid |= 1 << i
                else:
                    offered[i] = False
            dut.s_axis_tdata.value = tdata
            dut.s_axis_tkeep.value = tkeep
            dut.s_axis_tlast.value = tlast
            dut.s_axis_tuser.value = tuser
            dut.s_axis_tvalid.value = tvalid
            dut.m_axis_tready.value = int(self.rng.random() >= backpressure)
            await ReadOnly()
            tready = int(dut.s_axis_tready.value)
            assert bin(tready & tvalid).count("1") <= 1, f"two inputs taken at once: {tready:b}"
            taken = [bool(tready & tvalid & (1 << i)) for i in range(self.n)]
            out = None
            if int(dut.m_axis_tvalid.value) and int(dut.m_axis_tready.value):
                out = (int(dut.m_axis_tdata.value), int(dut.m_axis_tkeep.value),
                       int(dut.m_axis_tlast.value), int(dut.m_axis_tuser.value))
            await RisingEdge(dut.clk)
            for i in range(self.n):
                if taken[i]:
                    self.pending[i].pop(0)
                    offered[i] = False
            if out is not None:
                self.received.append(out)
                got += 1
        await FallingEdge(dut.clk)
        dut.s_axis_tvalid.value = 0
        return clocks

    def check(self) -> None:
        """Whole packets, per-input order, nothing lost or duplicated."""
        nxt = [0] * self.n
        cur: list[tuple[int, int, int, int]] = []
        for b in self.received:
            cur.append(b)
            if not b[2]:
                continue
            src = (cur[0][0] >> 48) & 0xFFFF
            assert src < self.n, f"beat from unknown input {src}"
            assert nxt[src] < len(self.sent[src]), f"input {src}: more packets out than in"
            assert cur == self.sent[src][nxt[src]], (
                f"input {src} packet {nxt[src]}: {len(cur)} beats out differ from the "
                f"{len(self.sent[src][nxt[src]])} sent (interleaved, reordered or corrupted)")
            nxt[src] += 1
            cur = []
        assert not cur, "a packet left without its tlast beat"
        for i in range(self.n):
            assert nxt[i] == len(self.sent[i]), f"input {i}: {nxt[i]} of {len(self.sent[i])} packets out"


async def setup(dut: HierarchyObject) -> None:
    cocotb.start_soon(Clock(dut.clk, CLK_NS, unit="ns").start())
    dut.s_axis_tvalid.value = 0
    dut.s_axis_tdata.value = 0
    dut.s_axis_tkeep.value = 0
    dut.s_axis_tlast.value = 0
    dut.s_axis_tuser.value = 0
    dut.m_axis_tready.value = 0
    dut.rst.value = 1
    await ClockCycles(dut.clk, 3)
    dut.rst.value = 0
    await ClockCycles(dut.clk, 2)


@cocotb.test()
async def test_random_streams(dut: HierarchyObject) -> None:
    """Random packets, idle and backpressure in four combinations; per-input order, no loss."""
    await setup(dut)
    rng = random.Random(SEED)
    for idle, bp in ((0.0, 0.0), (0.5, 0.0), (0.0, 0.5), (0.4, 0.6)):
        bench = Bench(dut, rng)
        for i in range(bench.n):
            bench.queue_packets(i, rng.randint(8, 20), 6)
        await bench.run(idle, bp, limit=20000)
        bench.check()
        assert int(dut.m_axis_tvalid.value) == 0, "a beat left over in the output"


@cocotb.test()
async def test_line_rate(dut: HierarchyObject) -> None:
    """Every input busy, output always ready: one beat per clock, packets back to back."""
    await setup(dut)
    bench = Bench(dut, random.Random(SEED + 1))
    for i in range(bench.n):
        bench.queue_packets(i, 20, 4)
    beats = sum(len(p) for p in bench.pending)
    clocks = await bench.run(0.0, 0.0, limit=10 * beats)
    bench.check()
    # the output register slice adds two clocks of latency
    assert clocks <= beats + 2, f"{beats} beats took {clocks} clocks"
