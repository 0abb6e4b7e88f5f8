"""Build ``hw/rtl/nrl_l2_learn.v`` (the learning switch's MAC table) and check it against
:class:`hostdrv.switch.reference.L2Table` on both simulators, at the switch's table size and a
small one."""

from __future__ import annotations

import pytest
from toolcheck import require_simulator

from hostdrv.wire import consts as C
from sim.common.runner import RTL, SIMULATORS, run_cocotb


@pytest.mark.parametrize("entries", (C.L2_ENTRIES, 4))
@pytest.mark.parametrize("sim", SIMULATORS)
def test_nrl_l2_learn(sim: str, entries: int) -> None:
    """4000 requests: lookup, learning, replacement and aging as the model does them."""
    require_simulator(sim, "the nrl_l2_learn cocotb testbench")
    run_cocotb(sim=sim, toplevel="nrl_l2_learn", sources=[RTL / "nrl_l2_learn.v"],
               test_module="sim.nrl_l2_learn.test_nrl_l2_learn", parameters={"ENTRIES": entries})
