"""Build ``hw/rtl/replay_sum_tree.v`` and check it against ``hostdrv.wire.sampler.SumTree``.

Random update and draw bursts on Icarus and Verilator, for C = 4, 16 and 64
leaves; under ``slow`` the largest tree the replay engine takes, C = 2^17
(49-bit sums), on Verilator.
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


@pytest.mark.parametrize("sim", SIMULATORS)
def test_replay_sum_tree_tables(sim: str) -> None:
    """Four tables (JOBS = 4) as aligned sub-trees of a 64-leaf tree: their totals and draws
    equal those of a SumTree each (the default builds play one table)."""
    require_simulator(sim, "the replay_sum_tree cocotb testbench")
    run_cocotb(
        sim=sim,
        toplevel="replay_sum_tree",
        sources=[RTL / "replay_sum_tree.v"],
        test_module="sim.replay_sum_tree.test_replay_sum_tree",
        parameters={"CAPACITY": 64, "USER_WIDTH": 16, "JOBS": 4},
        build_tag="jobs4",
        testcase="test_tables",
        extra_env={"TREE_SEED": "4"},
    )


@pytest.mark.slow
@pytest.mark.parametrize("sim", ["verilator"])
def test_replay_sum_tree_2p17(sim: str) -> None:
    """C = 2^17 leaves (the replay engine's largest): root sums and draws equal the model's."""
    require_simulator(sim, "the replay_sum_tree cocotb testbench")
    run_cocotb(
        sim=sim,
        toplevel="replay_sum_tree",
        sources=[RTL / "replay_sum_tree.v"],
        test_module="sim.replay_sum_tree.test_replay_sum_tree",
        parameters={"CAPACITY": 1 << 17, "USER_WIDTH": 20},  # a query's tag: up to 3 C per burst
        extra_env={"TREE_SEED": "17", "TREE_ROUNDS": "6"},
    )
