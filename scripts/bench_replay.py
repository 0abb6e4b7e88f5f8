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

Synthesis: ``replay_engine`` at the same size through ``scripts/synth_yosys.py``
(``synth_xilinx -family xc7 -abc9``): LUT, FF, RAMB36 (RAMB18 counted as half),
DSP48E1, ``logic_levels`` (Yosys ``ltp`` between registers) and ``path_ns``, the
delay-aware worst path before routing.

``--smoke`` runs the smallest configuration, for CI: C = 64 records, the
simulation's bench test (on the build the replay engine's default test uses) and
the synthesis both, the synthesis mapped with plain abc (``--no-abc9``: abc9's
delay-driven mapping of the 256-bit paths takes over ten minutes here; the
reading of the RTL, the one step that ever broke, is the same).

The last line printed is ``key=value`` pairs. ``--no-synth`` / ``--no-sim`` skip
a part; ``--capacity`` changes C for both.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

sys.path.insert(0, str(REPO / "scripts"))
import synth_yosys  # noqa: E402

from sim.common.runner import RTL, read_filelist, run_cocotb, setup_tool_env  # noqa: E402

SOURCES = read_filelist(RTL / "replay_engine.f")

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
            extra_env={"RPL_BENCH_OUT": str(out), "COCOTB_TEST_FILTER": "test_bench"},
        )
        return json.loads(out.read_text())


def synthesize(capacity: int, record_bytes: int, width: int, workdir: Path,
               timeout: float = 3600.0, abc9: bool = True) -> dict[str, float | str]:
    """Yosys figures of ``replay_engine`` at this size, through ``scripts/synth_yosys.py`` (the one
    way this repository runs Yosys: the same reading of the RTL, mapping and timing estimate;
    ``abc9=False``: plain abc, not delay-driven)."""
    if shutil.which("yosys") is None:
        raise SystemExit("yosys not found (apt-get install yosys; `make setup` installs it)")
    params = {"CAPACITY": str(capacity), "RECORD_BYTES": str(record_bytes), "DATA_WIDTH": str(width)}
    res = synth_yosys.synth("replay_engine", params, timeout, workdir, abc9=abc9)
    if not res.ok:
        raise SystemExit(f"yosys failed on replay_engine: {res.error} (log in {workdir})")
    c = res.cells
    (workdir / "critical_path.txt").write_text(
        f"{res.timing.start} -> {res.timing.end}\n" if res.timing else "\n")
    return {
        "lut": res.counts["lut"],
        "lutram": res.counts["lutram"],
        "ff": res.counts["ff"],
        "srl": res.counts["srl"],
        "ramb36": c.get("RAMB36E1", 0) + c.get("RAMB18E1", 0) / 2,
        "dsp": res.counts["dsp"],
        "carry4": res.counts["carry"],
        "logic_levels": res.depth,
        "path_ns": round(res.timing.ns, 2) if res.timing else -1.0,
        "synth_seconds": round(res.seconds, 1),
        "mapping": res.mapping,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--capacity", type=int, default=16384)
    ap.add_argument("--record-bytes", type=int, default=128)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--no-sim", action="store_true")
    ap.add_argument("--no-synth", action="store_true")
    ap.add_argument("--workdir", type=Path, default=REPO / "build" / "bench_replay")
    ap.add_argument("--no-abc9", action="store_true",
                    help="map with plain abc (faster, not delay-driven)")
    ap.add_argument("--smoke", action="store_true",
                    help="smallest configuration (C = 64, plain abc) of both parts, for CI")
    args = ap.parse_args()
    if args.smoke:
        args.capacity = 64
        args.no_abc9 = True
    setup_tool_env()
    args.workdir.mkdir(parents=True, exist_ok=True)
    res: dict[str, float | str] = {"capacity": args.capacity, "record_bytes": args.record_bytes,
                             "data_width": args.width}
    if not args.no_sim:
        sim = simulate(args.capacity, args.record_bytes, args.width)
        res.update(sim)
        res["sample_latency_clocks"] = sim["sample_latency_prioritized"]
    if not args.no_synth:
        res.update(synthesize(args.capacity, args.record_bytes, args.width, args.workdir,
                              abc9=not args.no_abc9))
    for k, v in res.items():
        if isinstance(v, float):
            res[k] = round(v, 3)
    print(" ".join(f"{k}={v}" for k, v in res.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
