"""Build ``hw/rtl/replay_engine.v`` and check it against ``hostdrv.switch.reference`` with cocotb.

The default suite runs every cocotb test of ``sim/replay_engine`` on Verilator
for the 256-bit bus with C = 64 records of R = 128 bytes (ring wrap-around within
a few requests), plus one odd size per simulator: C = 16, R = 64 on a 512-bit bus
(one beat per record, Verilator) and C = 16, R = 192 on a 256-bit bus (six beats
per record, not a power of two; Icarus). C = 64, R = 128 on the 512-bit bus and on
Icarus run under ``slow``. The ``slow`` soak streams a
long random workload through a lean beat driver on Verilator at C = 256. The engine built
with ``JOBS`` = 4 (C = 64, R = 128; ``sim/replay_engine/test_replay_multijob.py``) runs on
Verilator at 256 bits by default, at 512 bits and on Icarus under ``slow``.
"""

from __future__ import annotations

import pytest
from toolcheck import require_simulator

from sim.common.runner import RTL, SIMULATORS, read_filelist, run_cocotb

SOURCES = read_filelist(RTL / "replay_engine.f")
TEST_MODULE = "sim.replay_engine.test_replay_engine"

# (DATA_WIDTH, CAPACITY, RECORD_BYTES)
CONFIGS = [(256, 64, 128), (512, 64, 128)]
ODD_CONFIG = {"icarus": (256, 16, 192), "verilator": (512, 16, 64)}


def _run(sim: str, width: int, capacity: int, record_bytes: int, *, tag: str = "",
         env: dict[str, str] | None = None, testcase: str | None = None) -> None:
    require_simulator(sim, "the replay_engine cocotb testbench")
    run_cocotb(
        sim=sim,
        toplevel="replay_engine",
        sources=SOURCES,
        test_module=TEST_MODULE,
        parameters={"DATA_WIDTH": width, "CAPACITY": capacity, "RECORD_BYTES": record_bytes},
        build_tag=tag,
        extra_env=env or {"RPL_SEED": "1", "RPL_SCALE": "4"},
        testcase=testcase,
    )


# the SUME bus (256 bits) on Verilator by default; the 512-bit bus runs every test by default
# at its odd size (one beat per record, ODD_CONFIG), C = 64 under ``slow`` (3 min of CI); on
# Icarus (4-12 min a configuration on a loaded CI machine) the odd size (256-bit bus, six
# beats per record) runs every test by default, these under ``slow``
CASES = [pytest.param(sim, c, id=f"{sim}-w{c[0]}_c{c[1]}_r{c[2]}",
                      marks=pytest.mark.slow if (sim, c[0]) != ("verilator", 256) else ())
         for sim in SIMULATORS for c in CONFIGS]


@pytest.mark.parametrize(("sim", "config"), CASES)
def test_replay_engine(sim: str, config: tuple[int, int, int]) -> None:
    """Every cocotb test: registers, traffic, malformed, ordering, statistics, throughput."""
    _run(sim, *config)


@pytest.mark.parametrize("sim", SIMULATORS)
def test_replay_engine_odd_size(sim: str) -> None:
    """The same tests with a record of one beat or of a non-power-of-two number of beats."""
    _run(sim, *ODD_CONFIG[sim], env={"RPL_SEED": "2", "RPL_SCALE": "1"})


@pytest.mark.slow
@pytest.mark.parametrize("width", [256, 512])
@pytest.mark.parametrize("sim", ["verilator"])
def test_replay_engine_soak(sim: str, width: int) -> None:
    """Long random workload (lean driver), C = 256, compared frame for frame with the model."""
    _run(sim, width, 256, 128, tag=f"soak_w{width}",
         env={"RPL_SEED": "20250101", "RPL_SOAK": "1", "RPL_SOAK_OPS": "20000"},
         testcase="test_soak")


@pytest.mark.parametrize(("sim", "width"), [
    pytest.param(sim, w, id=f"{sim}-w{w}",
                 marks=pytest.mark.slow if (sim, w) != ("verilator", 256) else ())
    for sim, w in (("verilator", 256), ("verilator", 512), ("icarus", 256))])
def test_replay_engine_jobs(sim: str, width: int) -> None:
    """JOBS = 4: several jobs' tables carved out of C = 64 records, their traffic interleaved,
    every frame, counter and status register of every job against ``SwitchModel(jobs=4)``."""
    require_simulator(sim, "the replay_engine cocotb testbench")
    run_cocotb(
        sim=sim,
        toplevel="replay_engine",
        sources=SOURCES,
        test_module="sim.replay_engine.test_replay_multijob",
        parameters={"DATA_WIDTH": width, "CAPACITY": 64, "RECORD_BYTES": 128, "JOBS": 4},
        build_tag=f"jobs4_w{width}",
        extra_env={"RPL_JOBS": "4", "RPL_SEED": "1"},
    )
