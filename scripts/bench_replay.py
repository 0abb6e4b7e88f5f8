#!/usr/bin/env python3
"""Replay engine figures: throughput and latency in simulation, area and depth from Yosys.

Simulation (Verilator, ``sim.replay_engine.test_replay_engine.test_bench``) at the
synthesis size C = 16384 records of R = 128 bytes on a 256-bit bus:

* ``samples_per_clock``: sample indices leaving the sum tree per clock within a
  64-sample prioritized batch (first to last index);
* ``resp_samples_per_clock`` / ``resp_beats_per_clock``: 16 batches back to
  back, where the reply stream (128 + R bytes per sample) is the bound;
* ``updates_per_clock``: leaf updates entering the tree per clock within one
  128-pair UPDATE (and ``updates_per_clock_sustained`` over 16 of them);
* ``sample_latency_clocks``: last beat of a SAMPLE_REQ (B = 1, prioritized,
  idle engine) to the first beat of its SAMPLE_RESP.

Synthesis: ``yosys synth_xilinx -family xc7 -flatten`` of ``replay_engine`` at
the same size; LUT, FF, RAMB36 (RAMB18 counted as half), DSP48E1, and
``logic_levels``: the longest register-to-register path in cells, counting
every LUT, MUXF7/F8 and CARRY4 as one level (as Vivado reports logic levels;
block RAM, FF, SRL and registered DSP outputs end a path). Yosys' own
``ltp -noff`` is not usable after ``synth_xilinx``: it does not know FDRE as a
flip-flop and reports loops through every register.

The last line printed is ``key=value`` pairs. ``--no-synth`` / ``--no-sim`` skip
a part; ``--capacity`` changes C for both.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sim.common.runner import RTL, read_filelist, run_cocotb, setup_tool_env  # noqa: E402

SOURCES = read_filelist(RTL / "replay_engine.f")

# cells that start and end paths
SEQUENTIAL = {"FDRE", "FDSE", "FDCE", "FDPE", "RAMB18E1", "RAMB36E1", "SRL16E", "SRLC32E",
              "IBUF", "OBUF", "BUFG"}
ZERO_DELAY = {"INV", "BUF"}


def simulate(capacity: int, record_bytes: int, width: int) -> dict[str, float]:
    """Run the cocotb bench test and return its figures."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bench.json"
        run_cocotb(
            sim="verilator",
            toplevel="replay_engine",
            sources=SOURCES,
            test_module="sim.replay_engine.test_replay_engine",
            parameters={"DATA_WIDTH": width, "CAPACITY": capacity, "RECORD_BYTES": record_bytes},
            build_tag=f"bench_c{capacity}_r{record_bytes}_w{width}",
            extra_env={"RPL_BENCH_OUT": str(out), "COCOTB_TEST_FILTER": "test_bench"},
        )
        return json.loads(out.read_text())


def _is_sequential(cell: dict) -> bool:
    t = cell["type"]
    if t in SEQUENTIAL:
        return True
    if t == "DSP48E1":
        preg = str(cell.get("parameters", {}).get("PREG", "1"))
        return int(preg, 2) == 1 if set(preg) <= {"0", "1"} else int(preg) == 1
    return False


def _read_addr_port(port: str) -> bool:
    """Ports of a distributed RAM cell with a combinational path to its data outputs."""
    return port.startswith(("ADDR", "DPRA")) or re.fullmatch(r"A\d+", port) is not None


def logic_levels(netlist: dict) -> tuple[int, list[str]]:
    """Longest combinational path (cells) between sequential elements, and its cells."""
    mod = next(m for m in netlist["modules"].values() if m.get("attributes", {}).get("top"))
    cells: dict[str, dict] = mod["cells"]
    driver: dict[int, str] = {}
    for name, c in cells.items():
        for port, bits in c["connections"].items():
            if c["port_directions"].get(port) == "output":
                for b in bits:
                    if isinstance(b, int):
                        driver[b] = name
    inputs: dict[str, set[str]] = {}
    for name, c in cells.items():
        ins = set()
        lutram = c["type"].startswith("RAM") and not c["type"].startswith("RAMB")
        for port, bits in c["connections"].items():
            # distributed RAM: only the read address reaches the data outputs
            if lutram and not _read_addr_port(port):
                continue
            if c["port_directions"].get(port) == "input":
                ins.update(driver[b] for b in bits if isinstance(b, int) and b in driver)
        inputs[name] = ins
    seq = {name for name, c in cells.items() if _is_sequential(c)}
    depth: dict[str, int] = {}
    pred: dict[str, str | None] = {}
    for start in cells:
        stack: list[tuple[str, bool]] = [(start, False)]
        while stack:
            name, expanded = stack.pop()
            if name in depth:
                continue
            if name in seq:
                depth[name] = 0
                continue
            if not expanded:
                stack.append((name, True))
                stack.extend((d, False) for d in inputs[name] if d not in depth)
                continue
            best, best_d = 0, None
            for d in inputs[name]:
                v = 0 if d in seq else depth.get(d, 0)
                if v > best:
                    best, best_d = v, d
            depth[name] = best + (0 if cells[name]["type"] in ZERO_DELAY else 1)
            pred[name] = best_d
    worst = max(depth, key=lambda n: depth[n])
    chain = []
    n: str | None = worst
    while n is not None:
        chain.append(f"{cells[n]['type']} {n[:90]}")
        n = pred.get(n)
    return depth[worst], chain


def synthesize(capacity: int, record_bytes: int, width: int, workdir: Path) -> dict[str, float]:
    """Yosys synth_xilinx; returns area figures and logic levels."""
    if shutil.which("yosys") is None:
        raise SystemExit("yosys not found (apt-get install yosys)")
    srcs = " ".join(str(s) for s in SOURCES)
    script = workdir / "synth.ys"
    stat = workdir / "stat.txt"
    net = workdir / "replay_engine.json"
    script.write_text(
        f"read_verilog -I{RTL} {srcs}\n"
        f"chparam -set CAPACITY {capacity} -set RECORD_BYTES {record_bytes} "
        f"-set DATA_WIDTH {width} replay_engine\n"
        "synth_xilinx -family xc7 -top replay_engine -flatten\n"
        f"tee -q -o {stat} stat\n"
        f"write_json {net}\n")
    t0 = time.time()
    subprocess.run(["yosys", "-q", "-l", str(workdir / "yosys.log"), str(script)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seconds = time.time() - t0
    counts: dict[str, int] = {}
    for line in stat.read_text().splitlines():
        m = re.match(r"\s+(\w+)\s+(\d+)$", line)
        if m:
            counts[m.group(1)] = int(m.group(2))

    def total(names: Iterable[str]) -> int:
        return sum(counts.get(n, 0) for n in names)

    levels, chain = logic_levels(json.loads(net.read_text()))
    (workdir / "critical_path.txt").write_text("\n".join(chain) + "\n")
    return {
        "lut": total(f"LUT{i}" for i in range(1, 7)),
        "lutram": total(("RAM32M", "RAM64M", "RAM32X1D", "RAM64X1D", "RAM128X1D", "RAM256X1S")),
        "ff": total(("FDRE", "FDSE", "FDCE", "FDPE")),
        "srl": total(("SRL16E", "SRLC32E")),
        "ramb36": counts.get("RAMB36E1", 0) + counts.get("RAMB18E1", 0) / 2,
        "dsp": counts.get("DSP48E1", 0),
        "carry4": counts.get("CARRY4", 0),
        "logic_levels": levels,
        "synth_seconds": round(seconds, 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--capacity", type=int, default=16384)
    ap.add_argument("--record-bytes", type=int, default=128)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--no-sim", action="store_true")
    ap.add_argument("--no-synth", action="store_true")
    ap.add_argument("--workdir", type=Path, default=REPO / "build" / "bench_replay")
    args = ap.parse_args()
    setup_tool_env()
    args.workdir.mkdir(parents=True, exist_ok=True)
    res: dict[str, float] = {"capacity": args.capacity, "record_bytes": args.record_bytes,
                             "data_width": args.width}
    if not args.no_sim:
        sim = simulate(args.capacity, args.record_bytes, args.width)
        res.update(sim)
        res["sample_latency_clocks"] = sim["sample_latency_prioritized"]
    if not args.no_synth:
        res.update(synthesize(args.capacity, args.record_bytes, args.width, args.workdir))
    for k, v in res.items():
        if isinstance(v, float):
            res[k] = round(v, 3)
    print(" ".join(f"{k}={v}" for k, v in res.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
