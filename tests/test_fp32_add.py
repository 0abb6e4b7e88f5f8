"""Build ``hw/rtl/fp32_add.v`` and check it bit-exact against numpy float32.

The default suite streams 100,000 operand pairs (the special-value cross
product plus random categories, see ``sim/fp32_add/test_fp32_add.py``) through
the adder on both Icarus and Verilator; the ``slow`` soak streams 2,000,000
pairs on Verilator with a different seed.
"""

from __future__ import annotations

import pytest
from toolcheck import require_simulator

from sim.common.runner import RTL, SIMULATORS, read_filelist, run_cocotb

SOURCES = read_filelist(RTL / "fp32_add.f")
TEST_MODULE = "sim.fp32_add.test_fp32_add"
# a tag wider than the default exercises the side-band passthrough
PARAMETERS = {"TAG_WIDTH": 16}

DEFAULT_PAIRS = 100_000
SOAK_PAIRS = 2_000_000


def _run(sim: str, pairs: int, seed: int, build_tag: str) -> None:
    require_simulator(sim, "the fp32_add cocotb testbench")
    run_cocotb(
        sim=sim,
        toplevel="fp32_add",
        sources=SOURCES,
        test_module=TEST_MODULE,
        parameters=PARAMETERS,
        build_tag=build_tag,
        extra_env={"FP32_PAIRS": str(pairs), "FP32_SEED": str(seed)},
    )


@pytest.mark.parametrize("sim", SIMULATORS)
def test_fp32_add(sim: str) -> None:
    """100k pairs bit-exact on each simulator."""
    _run(sim, DEFAULT_PAIRS, seed=1, build_tag="tag16")


@pytest.mark.slow
@pytest.mark.parametrize("sim", ["verilator"])
def test_fp32_add_soak(sim: str) -> None:
    """2M pairs, different seed (separate build dir so it can run beside the default)."""
    _run(sim, SOAK_PAIRS, seed=20250101, build_tag="tag16_soak")
