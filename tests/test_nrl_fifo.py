"""Build ``hw/rtl/nrl_fifo.v`` and run its cocotb testbench on both simulators.

Two configurations: the replay engine's (writes refused when full, count from
the pointers) and the aggregation engine's (no full guard, registered count).
"""

from __future__ import annotations

import pytest
from toolcheck import require_simulator

from sim.common.runner import RTL, SIMULATORS, run_cocotb

SOURCES = [RTL / "nrl_fifo.v"]
TEST_MODULE = "sim.nrl_fifo.test_nrl_fifo"
CONFIGS = {
    "guarded": {"WIDTH": 37, "ADDR_WIDTH": 3, "FULL_GUARD": 1, "COUNT_REG": 0},
    "counted": {"WIDTH": 37, "ADDR_WIDTH": 4, "FULL_GUARD": 0, "COUNT_REG": 1},
}


@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("sim", SIMULATORS)
def test_nrl_fifo(sim: str, config: str) -> None:
    """20k random cycles per configuration against a deque."""
    require_simulator(sim, "the nrl_fifo cocotb testbench")
    run_cocotb(sim=sim, toplevel="nrl_fifo", sources=SOURCES, test_module=TEST_MODULE,
               parameters=CONFIGS[config], build_tag=config)
