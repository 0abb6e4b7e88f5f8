"""Build ``hw/rtl/replay_engine.v`` and check it against ``hostdrv.model`` with cocotb.

The default suite runs every cocotb test of ``sim/replay_engine`` on Icarus and
Verilator, for 256 and 512-bit buses, with C = 64 records of R = 128 bytes so
ring wrap-around happens within a few requests. The ``slow`` soak streams a
long random workload through a lean beat driver on Verilator.
"""

from __future__ import annotations

import pytest

from sim.common.runner import RTL, SIMULATORS, have_simulator, read_filelist, run_cocotb

SOURCES = read_filelist(RTL / "replay_engine.f")
TEST_MODULE = "sim.replay_engine.test_replay_engine"
CAPACITY = 64
RECORD_BYTES = 128


def _params(width: int, capacity: int = CAPACITY) -> dict[str, int]:
    return {"DATA_WIDTH": width, "CAPACITY": capacity, "RECORD_BYTES": RECORD_BYTES}


@pytest.mark.parametrize("width", [256, 512])
@pytest.mark.parametrize("sim", SIMULATORS)
def test_replay_engine(sim: str, width: int) -> None:
    """Every cocotb test (registers, traffic, malformed, ordering, statistics, throughput)."""
    if not have_simulator(sim):
        pytest.skip(f"{sim} not installed")
    run_cocotb(
        sim=sim,
        toplevel="replay_engine",
        sources=SOURCES,
        test_module=TEST_MODULE,
        parameters=_params(width),
        extra_env={"RPL_SEED": "1", "RPL_SCALE": "1"},
    )


@pytest.mark.slow
@pytest.mark.parametrize("width", [256, 512])
@pytest.mark.parametrize("sim", ["verilator"])
def test_replay_engine_soak(sim: str, width: int) -> None:
    """Long random workload (lean driver), C = 256, compared frame for frame with the model."""
    if not have_simulator(sim):
        pytest.skip(f"{sim} not installed")
    run_cocotb(
        sim=sim,
        toplevel="replay_engine",
        sources=SOURCES,
        test_module=TEST_MODULE,
        parameters=_params(width, 256),
        build_tag=f"soak_w{width}",
        extra_env={"RPL_SEED": "20250101", "RPL_SOAK": "1", "RPL_SOAK_OPS": "3000"},
        testcase="test_soak",
    )
