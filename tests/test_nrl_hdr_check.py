"""Build ``hw/rtl/nrl_hdr_check.v`` and check its flags against the model's checks 1 and 2
on both simulators and bus widths, in the configuration of each engine that uses it."""

from __future__ import annotations

import pytest
from toolcheck import require_simulator

from sim.common.runner import RTL, SIMULATORS, run_cocotb

SOURCES = [RTL / "nrl_hdr_check.v"]
TEST_MODULE = "sim.nrl_hdr_check.test_nrl_hdr_check"

# (REPLAY, CHECK_BEATS, IN_REG): the aggregation engine's use, the replay engine's use
CONFIGS = {"agg": (0, 0, 0), "replay": (1, 1, 1)}


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("width", (256, 512))
@pytest.mark.parametrize("sim", SIMULATORS)
def test_nrl_hdr_check(sim: str, width: int, config: str) -> None:
    """1500 back-to-back random and malformed headers: rx, bad_length, bad_header as the model says."""
    require_simulator(sim, "the nrl_hdr_check cocotb testbench")
    replay, check_beats, in_reg = CONFIGS[config]
    run_cocotb(sim=sim, toplevel="nrl_hdr_check", sources=SOURCES, test_module=TEST_MODULE,
               parameters={"DATA_WIDTH": width, "REPLAY": replay, "CHECK_BEATS": check_beats,
                           "IN_REG": in_reg},
               extra_env={"NRL_HDR_REPLAY": str(replay), "NRL_HDR_CHECK_BEATS": str(check_beats),
                          "NRL_HDR_IN_REG": str(in_reg), "NRL_HDR_WIDTH": str(width)})
