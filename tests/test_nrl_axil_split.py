"""Build ``hw/rtl/nrl_axil_split.v`` (with its job table, ``nrl_job_table.v``) and run its
cocotb testbench (Icarus and Verilator).

Routing of reads and writes by hw/regs.yaml, SLVERR from an engine, CNT_PASS
and the UDP_PORT shadow, the job pages (the switch's 16-bit address), and the job
table against the reference model: a one-job switch (its fixed share) and a switch of
four jobs (``JOBS`` = 4, the conformance suite's ``jobs`` parameters: the share rules,
the collisions, the slots freed and the tables emptied), against two Python engine
register files.
"""

from __future__ import annotations

import pytest
from toolcheck import require_simulator

from sim.common.runner import RTL, SIMULATORS, read_filelist, run_cocotb

BUILDS = {
    "jobs1": {"ADDR_WIDTH": 16},
    "jobs4": {"ADDR_WIDTH": 16, "JOBS": 4, "AGG_MAX_SLOTS": 8, "RPL_CAPACITY": 64},
}


# By default each build runs on one simulator, the two builds covering both: Icarus (about twice
# as slow) the one-job build, Verilator the four-job one; the other two pairs under ``slow``
DEFAULT = {("icarus", "jobs1"), ("verilator", "jobs4")}
CASES = [pytest.param(sim, build, id=f"{sim}-{build}",
                      marks=() if (sim, build) in DEFAULT else pytest.mark.slow)
         for sim in SIMULATORS for build in BUILDS]


@pytest.mark.parametrize(("sim", "build"), CASES)
def test_nrl_axil_split(sim: str, build: str) -> None:
    """Reads and writes reach the right engine, responses propagate, CNT_PASS counts, the
    job table takes and refuses writes as the model does."""
    require_simulator(sim, "the nrl_axil_split cocotb testbench")
    run_cocotb(
        sim=sim,
        toplevel="nrl_axil_split",
        sources=read_filelist(RTL / "nrl_axil_split.f"),
        test_module="sim.nrl_axil_split.test_nrl_axil_split",
        parameters=BUILDS[build],
        build_tag=build,
    )
