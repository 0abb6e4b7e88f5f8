"""Build ``hw/rtl/replay_engine.v`` with ``REC_STORE = 1`` (records behind the AXI4 master).

The cocotb tests of ``sim/replay_engine/test_replay_ddr.py`` run with a
cocotbext-axi ``AxiRam`` (read and write latency, random pauses on every AXI
channel) on Icarus and Verilator, checked frame for frame against
``hostdrv.model``: C = 64 records of R = 128 bytes on a 256-bit bus and
C = 32 of R = 192 on a 512-bit bus (three 512-bit beats per record, a
256-byte stride). The large configuration (C = 65536 records of R = 4032
bytes, a 256 MiB memory) runs on Verilator by default and on Icarus under
``slow``.
"""

from __future__ import annotations

import pytest
from toolcheck import require_simulator

from sim.common.runner import RTL, SIMULATORS, read_filelist, run_cocotb

SOURCES = read_filelist(RTL / "replay_engine.f")
TEST_MODULE = "sim.replay_engine.test_replay_ddr"

# (DATA_WIDTH, CAPACITY, RECORD_BYTES)
CONFIGS = [(256, 64, 128), (512, 32, 192)]
LARGE = (512, 65536, 4032)


def stride(record_bytes: int) -> int:
    """Bytes between two records in memory: R rounded up to a power of two."""
    return 1 << (record_bytes - 1).bit_length()


def _run(sim: str, width: int, capacity: int, record_bytes: int, env: dict[str, str]) -> None:
    require_simulator(sim, "the replay_engine REC_STORE=1 cocotb testbench")
    run_cocotb(
        sim=sim,
        toplevel="replay_engine",
        sources=SOURCES,
        test_module=TEST_MODULE,
        parameters={"DATA_WIDTH": width, "CAPACITY": capacity, "RECORD_BYTES": record_bytes,
                     "REC_STORE": 1},
        extra_env={"RPL_MEM_BYTES": str(capacity * stride(record_bytes)), **env},
    )


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"w{c[0]}_c{c[1]}_r{c[2]}")
@pytest.mark.parametrize("sim", SIMULATORS)
def test_replay_ddr(sim: str, config: tuple[int, int, int]) -> None:
    """Basic, ordering, random workload (all under stream and AXI stress) and throughput."""
    _run(sim, *config, env={"RPL_SEED": "1", "RPL_SCALE": "1"})


@pytest.mark.parametrize("sim", ["verilator"])
def test_replay_ddr_large(sim: str) -> None:
    """C = 65536 records of 4032 bytes in AXI memory: a few PUSH / SAMPLE / UPDATE."""
    _run(sim, *LARGE, env={"RPL_SEED": "3", "RPL_LARGE": "1"})


@pytest.mark.slow
@pytest.mark.parametrize("sim", ["icarus"])
def test_replay_ddr_large_icarus(sim: str) -> None:
    """The large configuration on Icarus (slower: the 65536-leaf tree clears in 32768 clocks)."""
    _run(sim, *LARGE, env={"RPL_SEED": "3", "RPL_LARGE": "1"})


@pytest.mark.slow
@pytest.mark.parametrize("sim", SIMULATORS)
def test_replay_ddr_long(sim: str) -> None:
    """A longer random workload, 256-bit bus, C = 128 records of 256 bytes."""
    _run(sim, 256, 128, 256, env={"RPL_SEED": "11", "RPL_SCALE": "6"})
