"""Build ``hw/rtl/replay_engine.v`` with ``REC_STORE = 1`` (records behind the AXI4 master).

The cocotb tests of ``sim/replay_engine/test_replay_ddr.py`` run with a
cocotbext-axi ``AxiRam`` (read and write latency, random pauses on every AXI
channel) on Icarus and Verilator, checked frame for frame against
``hostdrv.switch.reference``: C = 64 records of R = 128 bytes on a 256-bit bus (Icarus
under ``slow``) and C = 32 of R = 192 on a 512-bit bus (three 512-bit beats per record, a
256-byte stride; under ``slow``). The large configuration
(C = 65536 records of R = 4032 bytes, a 256 MiB memory) runs on Icarus by
default and on Verilator under ``slow``; records over 4 KB (two bursts each: R = 7104 on
Icarus, 8192 on Verilator) run by default. Every test but the random workload
(whose malformed frames bypass the testbench's PUSH) also checks each
record's place in the memory (slot i at i times the power-of-two stride). ``verilator --lint-only -Wall``
of the engine with ``REC_STORE = 1`` (four parameter sets) runs too.

C = 2^17 records of 64 bytes on a 512-bit bus (``BEYOND``, ``slow``, both
simulators): 8,200 PUSHes of 16 records through the lean beat driver, past
2^16 and round the ring, nearly all at priority 2^32 - 1 so the tree total
(the draw scale of a prioritized batch of one) needs its 49th bit; then
uniform and prioritized SAMPLEs and UPDATEs in the upper half. The default
run builds the same configuration on Verilator with 64 PUSHes only.

Several jobs (``JOBS`` = 4, ``sim/replay_engine/test_replay_multijob.py`` with the AXI RAM):
each job's table of records of its own size (64 bytes to R) in AXI memory, every frame, counter
and register of every job against ``SwitchModel(jobs=4)`` and each table's records checked in
place: C = 64, R = 256 on a 256-bit bus (Verilator by default, Icarus under ``slow``), and
R = 8192 on a 512-bit bus (records of one or two bursts, sizes mixed; Verilator by default).
"""

from __future__ import annotations

import subprocess

import pytest
from toolcheck import require_simulator, require_tool

from sim.common.runner import RTL, SIMULATORS, read_filelist, run_cocotb, setup_tool_env

SOURCES = read_filelist(RTL / "replay_engine.f")
TEST_MODULE = "sim.replay_engine.test_replay_ddr"

# (DATA_WIDTH, CAPACITY, RECORD_BYTES)
SMALL, ODD = (256, 64, 128), (512, 32, 192)
LARGE = (512, 65536, 4032)
# records over 4 KB: two AXI bursts each (the second 47 beats at R = 7104, 64 at R = 8192)
JUMBO = {"icarus": (256, 32, 7104), "verilator": (512, 16, 8192)}
BEYOND = (512, 1 << 17, 64)
# (simulator, configuration): SMALL on Verilator by default, on Icarus and ODD under ``slow``
# (Icarus: 228 s for SMALL, 5 min for ODD on a loaded CI machine; Icarus runs the store by
# default in the large and jumbo cases; 512-bit beats run in those too)
CASES = [
    pytest.param("icarus", SMALL, id="icarus-w256_c64_r128", marks=pytest.mark.slow),
    pytest.param("icarus", ODD, id="icarus-w512_c32_r192", marks=pytest.mark.slow),
    pytest.param("verilator", SMALL, id="verilator-w256_c64_r128"),
    pytest.param("verilator", ODD, id="verilator-w512_c32_r192", marks=pytest.mark.slow),
]


# (simulator, configuration, workload environment) of the several-job store: R = 256 (one
# burst a record) in full; R = 8192 (records of 1..128 beats, one or two bursts) shorter
JOBS_CASES = [
    pytest.param("verilator", (256, 64, 256), {}, id="verilator-w256_c64_r256"),
    pytest.param("icarus", (256, 64, 256), {}, id="icarus-w256_c64_r256", marks=pytest.mark.slow),
    pytest.param("verilator", (512, 64, 8192), {"RPL_CARVINGS": "2", "RPL_JOB_OPS": "48"},
                 id="verilator-w512_c64_r8192"),
]


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


@pytest.mark.parametrize("params", [
    ["-GREC_STORE=1"],
    ["-GREC_STORE=1", "-GDATA_WIDTH=512", "-GRECORD_BYTES=192", "-GCAPACITY=32"],
    ["-GREC_STORE=1", "-GRECORD_BYTES=4032", "-GCAPACITY=65536", "-GAXI_ADDR_WIDTH=34",
     "-GAXI_ID_WIDTH=4", "-GAXI_BASE_ADDR=34'h100000000"],
    ["-GREC_STORE=1", "-GDATA_WIDTH=512", "-GRECORD_BYTES=64", "-GCAPACITY=131072"],
    ["-GREC_STORE=1", "-GRECORD_BYTES=8192", "-GCAPACITY=131072", "-GAXI_ADDR_WIDTH=34"],
    ["-GREC_STORE=1", "-GDATA_WIDTH=512", "-GRECORD_BYTES=7104", "-GCAPACITY=16"],
    ["-GREC_STORE=1", "-GJOBS=4", "-GCAPACITY=64", "-GRECORD_BYTES=256"],
    ["-GREC_STORE=1", "-GJOBS=8", "-GDATA_WIDTH=512", "-GRECORD_BYTES=8192", "-GCAPACITY=131072",
     "-GAXI_ADDR_WIDTH=34"],
], ids=["default", "w512_r192", "large", "c2p17", "c2p17_r8192", "w512_r7104", "jobs4_r256",
        "jobs8_w512_r8192"])
def test_replay_ddr_lint(params: list[str]) -> None:
    """verilator --lint-only -Wall with REC_STORE=1: no warning in the record store or the engine
    (scripts/lint_rtl.py lints the defaults, REC_STORE=0)."""
    setup_tool_env()
    verilator = require_tool("verilator", "linting replay_engine with REC_STORE=1")
    r = subprocess.run([verilator, "--lint-only", "-Wall", f"-I{RTL}", "--top-module", "replay_engine",
                        *params, *map(str, SOURCES)], capture_output=True, text=True, timeout=300)
    mine = [ln for ln in r.stderr.splitlines() if ln.startswith("%")
            and ("replay_rec_store_axi.v" in ln or "replay_engine.v" in ln)]
    assert not mine, "\n".join(mine)
    assert "%Error" not in r.stderr.replace("%Error: Exiting due to", ""), r.stderr[-3000:]


@pytest.mark.parametrize(("sim", "config"), CASES)
def test_replay_ddr(sim: str, config: tuple[int, int, int]) -> None:
    """Basic, ordering, hazards, random workload (under stream and AXI stress) and throughput."""
    _run(sim, *config, env={"RPL_SEED": "1", "RPL_SCALE": "1"})


@pytest.mark.parametrize(("sim", "config", "env"), JOBS_CASES)
def test_replay_ddr_jobs(sim: str, config: tuple[int, int, int], env: dict[str, str]) -> None:
    """JOBS = 4 with the records in AXI memory: several jobs' tables, each of its own record
    size, isolated and exact against the model, each table's records in place."""
    width, capacity, record_bytes = config
    require_simulator(sim, "the replay_engine REC_STORE=1 JOBS=4 cocotb testbench")
    run_cocotb(
        sim=sim,
        toplevel="replay_engine",
        sources=SOURCES,
        test_module="sim.replay_engine.test_replay_multijob",
        parameters={"DATA_WIDTH": width, "CAPACITY": capacity, "RECORD_BYTES": record_bytes,
                    "REC_STORE": 1, "JOBS": 4},
        build_tag=f"jobs4_ddr_w{width}_r{record_bytes}",
        extra_env={"RPL_JOBS": "4", "RPL_DDR": "1", "RPL_SEED": "1", **env},
    )


@pytest.mark.parametrize("sim", [
    "icarus", pytest.param("verilator", marks=pytest.mark.slow)])
def test_replay_ddr_large(sim: str) -> None:
    """C = 65536 records of 4032 bytes in AXI memory: a few PUSH / SAMPLE / UPDATE, the records'
    place in memory checked (on Verilator under ``slow``: its build alone takes half a minute)."""
    _run(sim, *LARGE, env={"RPL_SEED": "3", "RPL_LARGE": "1"})


@pytest.mark.parametrize("sim", SIMULATORS)
def test_replay_ddr_jumbo(sim: str) -> None:
    """Records over 4 KB in AXI memory (R = 7104 on Icarus, 8192 on Verilator): each record two
    bursts, the large-configuration test (stacked samples too) against the model, every record's
    place in memory checked."""
    _run(sim, *JUMBO[sim], env={"RPL_SEED": "4", "RPL_LARGE": "1"})


@pytest.mark.slow
@pytest.mark.parametrize("sim", SIMULATORS)
def test_replay_ddr_long(sim: str) -> None:
    """A longer random workload, 256-bit bus, C = 128 records of 256 bytes."""
    _run(sim, 256, 128, 256, env={"RPL_SEED": "11", "RPL_SCALE": "6"})


@pytest.mark.parametrize("sim", ["verilator"])
def test_replay_ddr_2p17(sim: str) -> None:
    """C = 2^17 records of 64 bytes in AXI memory, built and run with 64 PUSHes of 16 records
    (the configuration only: the ring stays in its lower half)."""
    _run(sim, *BEYOND, env={"RPL_SEED": "5", "RPL_BEYOND": "64"})


@pytest.mark.slow
@pytest.mark.parametrize("sim", SIMULATORS)
def test_replay_ddr_beyond_2p16(sim: str) -> None:
    """C = 2^17: 131,200 records pushed (the ring full and wrapped; tree total past 2^48), then uniform and
    prioritized SAMPLEs and UPDATEs in the upper half, every frame against the model."""
    _run(sim, *BEYOND, env={"RPL_SEED": "5", "RPL_BEYOND": "8200"})
