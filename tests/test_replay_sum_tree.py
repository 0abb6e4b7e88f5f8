"""Build ``hw/rtl/replay_sum_tree.v`` and check it against ``hostdrv.sampler.SumTree``.

Random update and draw bursts on Icarus and Verilator, for C = 16 and C = 64
leaves (and C = 4, the smallest tree, on Icarus).
"""

from __future__ import annotations

import pytest
from toolcheck import require_simulator

from sim.common.runner import RTL, SIMULATORS, run_cocotb


@pytest.mark.parametrize("capacity", [4, 16, 64])
@pytest.mark.parametrize("sim", SIMULATORS)
def test_replay_sum_tree(sim: str, capacity: int) -> None:
    """Root sum after each update burst, and every draw, equal the model's."""
    require_simulator(sim, "the replay_sum_tree cocotb testbench")
    run_cocotb(
        sim=sim,
        toplevel="replay_sum_tree",
        sources=[RTL / "replay_sum_tree.v"],
        test_module="sim.replay_sum_tree.test_replay_sum_tree",
        parameters={"CAPACITY": capacity, "USER_WIDTH": 16},
        extra_env={"TREE_SEED": str(capacity)},
    )
