"""cocotb testbench for ``hw/rtl/nrl_fifo.v``: random push/pop against a Python deque.

One clock at a time (lean driver, ``FallingEdge`` per cycle): the writer offers
a random word with probability ``P_WRITE``, the reader is ready with
probability ``P_READ`` (backpressure); both probabilities change in phases so
the FIFO runs empty, full and in between. Each cycle checks ``out_valid``,
``out_data`` (the deque's head), ``count`` (words held, output register
included) and ``in_ready``:

* ``FULL_GUARD=1``: ``in_ready`` is low exactly when ``2**ADDR_WIDTH`` words
  sit in the RAM, and a write then is ignored;
* ``FULL_GUARD=0``: ``in_ready`` is always high; the writer keeps the count
  below ``2**ADDR_WIDTH`` itself, as the aggregation engine does.

A word written in cycle t is visible on ``out_data`` at cycle t+2 (the
registered RAM read), which the model reproduces with a two-stage pipe in
front of the deque head.

Environment: ``NRL_FIFO_CYCLES`` (default 20000), ``NRL_FIFO_SEED``.
"""

from __future__ import annotations

import os
import random
from collections import deque

import cocotb
from cocotb.clock import Clock
from cocotb.handle import HierarchyObject
from cocotb.triggers import FallingEdge, RisingEdge

CLK_PERIOD_NS = 4
# (write probability, read probability) phases: balanced, filling, draining, bursty
PHASES = ((0.5, 0.5), (0.9, 0.3), (0.3, 0.9), (1.0, 1.0), (0.7, 0.1), (0.1, 0.8))


def _param(dut: HierarchyObject, name: str) -> int:
    return int(getattr(dut, name).value)


@cocotb.test()
async def test_random_push_pop(dut: HierarchyObject) -> None:
    """Random writes and reads with backpressure; the model is a deque plus the RAM read latency."""
    width = _param(dut, "WIDTH")
    depth = 2 ** _param(dut, "ADDR_WIDTH")
    full_guard = _param(dut, "FULL_GUARD")
    cycles = int(os.environ.get("NRL_FIFO_CYCLES", "20000"))
    rng = random.Random(int(os.environ.get("NRL_FIFO_SEED", str(cocotb.RANDOM_SEED))))

    cocotb.start_soon(Clock(dut.clk, CLK_PERIOD_NS, unit="ns").start())
    dut.in_valid.value = 0
    dut.in_data.value = 0
    dut.out_ready.value = 0
    dut.rst.value = 1
    for _ in range(3):
        await RisingEdge(dut.clk)
    await FallingEdge(dut.clk)
    dut.rst.value = 0

    ram: deque[int] = deque()   # words in the RAM (not yet in the output register)
    out: int | None = None      # word in the output register
    pushed = popped = refused = 0
    max_count = 0
    p_write, p_read = PHASES[0]

    for cycle in range(cycles):
        if cycle % 1000 == 0:
            p_write, p_read = PHASES[(cycle // 1000) % len(PHASES)]
        held = len(ram) + (out is not None)
        # outputs in this cycle (before the clock edge)
        assert int(dut.out_valid.value) == (out is not None), f"cycle {cycle}: out_valid"
        if out is not None:
            assert int(dut.out_data.value) == out, f"cycle {cycle}: out_data {int(dut.out_data.value):#x} != {out:#x}"
        assert int(dut.count.value) == held, f"cycle {cycle}: count {int(dut.count.value)} != {held}"
        full = len(ram) == depth
        assert int(dut.in_ready.value) == (1 if not full_guard else int(not full)), f"cycle {cycle}: in_ready"
        max_count = max(max_count, held)

        # inputs for the next edge
        write = rng.random() < p_write
        if not full_guard and len(ram) >= depth:
            write = False  # the unguarded FIFO's writer keeps its margin
        word = rng.getrandbits(width)
        ready = rng.random() < p_read
        dut.in_valid.value = int(write)
        dut.in_data.value = word
        dut.out_ready.value = int(ready)
        await RisingEdge(dut.clk)

        # model the edge: the output register is consumed or loaded from the RAM head
        if out is not None and ready:
            out = None
            popped += 1
        load = out is None and ram
        # the RAM read happens before this cycle's write lands (write-to-read latency 2)
        if load:
            out = ram.popleft()
        if write:
            if not full:  # in_ready is from before the edge: a read in the same cycle frees no room
                ram.append(word)
                pushed += 1
            else:
                refused += 1
        await FallingEdge(dut.clk)

    dut._log.info("pushed %d popped %d refused %d max count %d (depth %d)",
                  pushed, popped, refused, max_count, depth)
    assert popped > cycles // 10
    assert max_count >= depth, "the FIFO never filled"
    if full_guard:
        assert refused > 0, "no write to a full FIFO was tried"
