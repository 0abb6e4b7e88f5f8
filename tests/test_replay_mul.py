"""Build ``hw/rtl/replay_mul.v`` (the replay sampler's draw multiplier) and check its products.

On Icarus and Verilator, for the operand widths the replay engine uses
(a = 38 bits; b = result = 32 + log2(C) bits for C = 4, 16384 and 2^17, the
last with the fourth limb of b) and for the widest the module takes
(48 x 64 bits, 64-bit result, one clock more latency): back-to-back and
gapped operand pairs, every result compared with the integer product and its
latency checked.
"""

from __future__ import annotations

import pytest
from toolcheck import require_simulator

from sim.common.runner import RTL, SIMULATORS, run_cocotb

# (A_WIDTH, B_WIDTH = OUT_WIDTH): C = 4, 16384 (default), 2^17; the widest
WIDTHS = [(38, 34), (38, 46), (38, 49), (48, 64)]


@pytest.mark.parametrize("widths", WIDTHS, ids=lambda w: f"a{w[0]}_b{w[1]}")
@pytest.mark.parametrize("sim", SIMULATORS)
def test_replay_mul(sim: str, widths: tuple[int, int]) -> None:
    """Every product's bits [32 +: OUT_WIDTH], LATENCY clocks after its operands."""
    require_simulator(sim, "the replay_mul cocotb testbench")
    aw, bw = widths
    run_cocotb(
        sim=sim,
        toplevel="replay_mul",
        sources=[RTL / "replay_mul.v"],
        test_module="sim.replay_engine.test_replay_mul",
        parameters={"A_WIDTH": aw, "B_WIDTH": bw, "OUT_WIDTH": bw, "USER_WIDTH": 10},
        extra_env={"MUL_SEED": str(aw * 100 + bw)},
    )
