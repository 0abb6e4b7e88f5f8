"""Build ``hw/rtl/nrl_classifier.v`` and check it against the model's classification
on both simulators and bus widths."""

from __future__ import annotations

import pytest
from toolcheck import require_simulator

from sim.common.runner import RTL, SIMULATORS, read_filelist, run_cocotb

SOURCES = read_filelist(RTL / "nrl_classifier.f")
TEST_MODULE = "sim.nrl_classifier.test_nrl_classifier"


@pytest.mark.parametrize("width", (256, 512))
@pytest.mark.parametrize("sim", SIMULATORS)
def test_nrl_classifier(sim: str, width: int) -> None:
    """600 random and malformed frames: output, order, data and TUSER as the model says."""
    require_simulator(sim, "the nrl_classifier cocotb testbench")
    run_cocotb(sim=sim, toplevel="nrl_classifier", sources=SOURCES, test_module=TEST_MODULE,
               parameters={"DATA_WIDTH": width})
