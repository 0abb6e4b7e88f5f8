"""Build and run the grad_agg cocotb testbench on every simulator and bus width."""

from __future__ import annotations

import pytest
from toolcheck import require_simulator

from sim.common.runner import RTL, SIMULATORS, read_filelist, run_cocotb

SOURCES = read_filelist(RTL / "grad_agg.f")
TEST_MODULE = "sim.grad_agg.test_grad_agg"
#: the default suite: the engine's tests and those of its job dimension
SUITE = ("sim.grad_agg.test_grad_agg", "sim.grad_agg.test_grad_agg_jobs")
WIDTHS = (256, 512)


# every width on Verilator; Icarus (several times slower: 6-9 min a width on a loaded CI
# machine) runs the 256-bit bus by default and the 512-bit one under ``slow``
CASES = [pytest.param(sim, w, id=f"{sim}-{w}",
                      marks=pytest.mark.slow if (sim, w) == ("icarus", 512) else ())
         for sim in SIMULATORS for w in WIDTHS]


@pytest.mark.parametrize(("sim", "width"), CASES)
def test_grad_agg(sim: str, width: int) -> None:
    """The default cocotb suite (every test but the soak and the bench)."""
    require_simulator(sim, "the grad_agg cocotb testbench")
    run_cocotb(sim=sim, toplevel="grad_agg", sources=SOURCES, test_module=",".join(SUITE),
               parameters={"DATA_WIDTH": width})


# the engine built for several jobs (docs/protocol.md section 11): its own cocotb module
JOBS_PARAMETERS = {"JOBS": 4, "MAX_SLOTS": 16}


@pytest.mark.parametrize(("sim", "width"), [
    pytest.param(sim, w, id=f"{sim}-{w}", marks=() if (sim, w) == ("verilator", 256)
                 else pytest.mark.slow) for sim in SIMULATORS for w in WIDTHS])
def test_grad_agg_jobs(sim: str, width: int) -> None:
    """Four jobs on one engine against the model of a four-job switch."""
    require_simulator(sim, "the grad_agg cocotb testbench")
    run_cocotb(sim=sim, toplevel="grad_agg", sources=SOURCES,
               test_module="sim.grad_agg.test_grad_agg_multijob",
               parameters={"DATA_WIDTH": width, **JOBS_PARAMETERS},
               build_tag=f"DATA_WIDTH{width}_jobs4",
               extra_env={"GRAD_AGG_JOBS": str(JOBS_PARAMETERS["JOBS"])})


@pytest.mark.slow
@pytest.mark.parametrize("width", WIDTHS)
def test_grad_agg_soak(width: int) -> None:
    """>= 100k packets through the engine with the lean driver (Verilator)."""
    require_simulator("verilator", "the grad_agg soak")
    run_cocotb(sim="verilator", toplevel="grad_agg", sources=SOURCES, test_module=TEST_MODULE,
               parameters={"DATA_WIDTH": width}, build_tag=f"DATA_WIDTH{width}_soak",
               testcase="test_soak", extra_env={"GRAD_AGG_SOAK": "1"})
