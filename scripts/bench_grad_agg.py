#!/usr/bin/env python3
"""Figures of the gradient aggregation engine (``hw/rtl/grad_agg.v``).

1. Throughput and latency, from a Verilator run of the cocotb test
   ``test_bench`` (``sim/grad_agg/test_grad_agg.py``): a root job of 4
   members, every packet for slot 0, back to back with no idle cycle and no
   backpressure (consecutive packets of a round hit the same slot copy, so
   every beat depends on the one a packet earlier). Input beats accepted per
   clock from the first to the last input beat, and the clocks from the last
   input beat of each completing packet to the first beat of its RESULT.
   Reported at the default P = 256 (the key figures) and, for reference, at
   other packet sizes (below 7 beats per packet the read-modify-write loop
   through the 6-clock adder spaces same-copy packets).
2. Yosys ``synth_xilinx -family xc7`` of ``grad_agg`` at DATA_WIDTH 256 and
   the default slot memory (64 slots x 2 copies x 352 elements), through
   ``scripts/synth_yosys.py``: LUT, FF, RAMB36 (RAMB36E1 + RAMB18E1/2),
   DSP, and the logic depth (``ltp -noff`` on the flattened netlist with
   every register and memory primitive removed: LUT/MUXF/CARRY4 cells
   between two registers).

Synthesis runs in parallel with the simulation. The output ends with one
line of ``key=value``::

    agg_beats_per_clock=1.00 agg_latency_clocks=10 lut=... ff=... ramb36=... dsp=0 logic_depth=8
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

import synth_yosys  # noqa: E402

from sim.common.runner import RTL, have_simulator, read_filelist, run_cocotb  # noqa: E402

FP_LATENCY = 6
"""fp32_add latency (its header); the latency target is FP_LATENCY + 4."""


def run_sim(width: int) -> dict[str, Any]:
    """Run ``test_bench`` on Verilator and return its JSON figures."""
    with tempfile.TemporaryDirectory(prefix="bench_grad_agg_") as tmp:
        out = Path(tmp) / "bench.json"
        run_cocotb(sim="verilator", toplevel="grad_agg", sources=read_filelist(RTL / "grad_agg.f"),
                   test_module="sim.grad_agg.test_grad_agg", parameters={"DATA_WIDTH": width},
                   testcase="test_bench",  # on the build of tests/test_grad_agg.py
                   extra_env={"GRAD_AGG_BENCH_JSON": str(out)})
        return dict(json.loads(out.read_text()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--width", type=int, default=256, choices=(256, 512),
                    help="bus width of the simulation (synthesis is always 256)")
    ap.add_argument("--slots", type=int, default=64,
                    help="MAX_SLOTS for synthesis (default 64, the register map's AGG_MAX_SLOTS)")
    ap.add_argument("--no-synth", action="store_true", help="skip Yosys")
    ap.add_argument("--no-sim", action="store_true", help="skip the simulation")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds allowed for Yosys")
    args = ap.parse_args(argv)

    synth_res: list[synth_yosys.Result] = []
    synth_thread = None
    t0 = time.monotonic()
    if not args.no_synth:
        params = {"DATA_WIDTH": "256", "MAX_SLOTS": str(args.slots)}

        def do_synth() -> None:
            synth_res.append(synth_yosys.synth("grad_agg", params, args.timeout, None))

        synth_thread = threading.Thread(target=do_synth)
        synth_thread.start()

    sim: dict[str, Any] = {}
    if not args.no_sim:
        if not have_simulator("verilator"):
            print("error: verilator not found", file=sys.stderr)
            return 2
        sim = run_sim(args.width)
        print(f"== simulation (Verilator, DATA_WIDTH {sim['data_width']}): same-slot packets "
              f"back to back, no idle, no backpressure")
        print(f"   {'P':>5} {'beats/pkt':>9} {'beats/clock':>11} {'latency':>9}")
        for p, r in sorted(sim["per_elems"].items(), key=lambda kv: int(kv[0])):
            lat = (f"{r['latency_min']}" if r["latency_min"] == r["latency_max"]
                   else f"{r['latency_min']}..{r['latency_max']}")
            print(f"   {p:>5} {r['beats_per_packet']:>9} {r['beats_per_clock']:>11.3f} {lat:>9}")
        print(f"   at P={sim['default_elems']}: {sim['beats_per_clock']:.3f} input beats per clock "
              f"(target 1.00), latency {sim['latency_clocks']} clocks from the last input beat to the "
              f"first result beat (target <= {FP_LATENCY + 4})", flush=True)

    kv: dict[str, str] = {}
    if sim:
        kv["agg_beats_per_clock"] = f"{sim['beats_per_clock']:.2f}"
        kv["agg_latency_clocks"] = str(sim["latency_clocks"])
    if synth_thread is not None:
        synth_thread.join()
        res = synth_res[0]
        print(f"== Yosys synth_xilinx -family xc7, grad_agg DATA_WIDTH 256, MAX_SLOTS {args.slots}, "
              f"MAX_ELEMS 352 ({res.seconds:.0f} s)")
        if not res.ok:
            print(f"   FAILED: {res.error}")
            return 1
        c = res.counts
        ramb36 = c["ramb36"] + c["ramb18"] / 2
        print(f"   LUT {c['lut']}  FF {c['ff']}  RAMB36E1 {c['ramb36']}  RAMB18E1 {c['ramb18']} "
              f"(= {ramb36:g} RAMB36)  DSP {c['dsp']}  CARRY4 {c['carry']}  LUTRAM {c['lutram']}  "
              f"SRL {c['srl']}")
        print(f"   logic depth {res.depth} (target <= 8); longest path {res.path}")
        kv.update(lut=str(c["lut"]), ff=str(c["ff"]), ramb36=f"{ramb36:g}", dsp=str(c["dsp"]),
                  logic_depth=str(res.depth))
    print(f"   total {time.monotonic() - t0:.0f} s")
    print(" ".join(f"{k}={v}" for k, v in kv.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
