"""cocotb tests of the gradient aggregation engine's job dimension (docs/protocol.md section 11,
docs/architecture.md "Jobs in the RTL") against the golden model, with the testbench of
:mod:`sim.grad_agg.test_grad_agg` (which ``tests/test_grad_agg.py`` runs with this module).

Tests:

* ``test_slot_free``: the job table's frees of slot ranges (``slot_free``, driven as
  ``nrl_axil_split`` drives it) between packets, directed and within random traffic, against
  the model's own free.
"""

from __future__ import annotations

import os
from typing import Any

import cocotb

from sim.grad_agg.grad_agg_tb import TB
from sim.grad_agg.workload import Workload, be16

SEED = int(os.environ.get("GRAD_AGG_SEED", "20250"))


@cocotb.test()
async def test_slot_free(dut: Any) -> None:
    """The job table's frees (``slot_free``, protocol section 11: a job's slot range) between
    packets, directed (two of three contributions everywhere, slot 0 complete: the freed
    slots restart, the others complete) and within random traffic; as the model frees."""
    tb, rng = await TB.start(dut, SEED + 95)
    for leaf in (False, True):
        cfg = await tb.configure_random(rng, leaf=leaf, mode_async=False, members=3,
                                        slots=min(6, tb.max_slots))
        wl = Workload(rng, cfg, noise=0.0)
        for s, w in [(s, w) for s in range(cfg.slots) for w in (0, 1)] + [(0, 2)]:
            await tb.send(*wl.gradient(w, s, 0))
        freed = range(lo := int(rng.integers(0, 2)), lo + max(1, cfg.slots // 2))
        await tb.free_slots(freed)
        outs = [e for s, w in [(s, 2) for s in range(1, cfg.slots)] + [(0, 0)]
                for e in await tb.send(*wl.gradient(w, s, 0))]
        await tb.check()
        done = {be16(e.frame, 48) for e in outs}  # RESULTs, sums upwards, a duplicate's answer
        assert done and not done & set(freed), (sorted(done), freed)
    for _ in range(4):
        wl = Workload(rng, await tb.configure_random(rng, slots=min(8, tb.max_slots)), noise=0.2)
        for _ in range(3):
            await tb.run(wl, int(rng.integers(10, 40)))
            lo = int(rng.integers(0, wl.cfg.slots))
            await tb.free_slots(range(lo, int(rng.integers(lo + 1, tb.max_slots + 1))))
        await tb.run(wl, 40)
        await tb.check()
