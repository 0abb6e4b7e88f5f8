"""Conformance vectors: one set of deterministic stimuli for every implementation of the switch.

A :class:`Vector` is the switch's parameters and a list of operations, in order:

* ``("frame", port, bytes)``: one frame on the AXI4-Stream from one-hot SUME ``port``;
* ``("write", addr, value)``: a register write (32-bit value; it may be refused);
* ``("read", addr)``: a register read.

:func:`run` plays a vector on anything with :class:`~hostdrv.switch.reference.SwitchModel`'s
surface (the golden model, :class:`~hostdrv.switch.native.NativeSwitchModel`) and
returns its :class:`Trace`: per operation the frames emitted (bytes and egress
bitmap, in order), the write's outcome (``""`` or the refusal message), the value
read, the counters after it, and at the end every register. Two traces agree
byte for byte or :func:`compare` names the first operation where they differ.

:func:`vectors` is the suite (random mixed traffic, every malformed class, loss,
duplication and reorder, async and a leaf of a hierarchy, replay sequences with
prioritized sampling and updates, the replay rate limiter, register writes including refused ones); each
is generated from a seed, so the same name gives the same bytes on every machine.
:func:`save` writes a vector with the model's expected results as JSON (frames in
hex) for a replay on the RTL: a cocotb test drives the frames with ``port`` in
TUSER's source field, the register operations over AXI4-Lite (a refused write is a
SLVERR), and compares what comes out with ``expect``. :func:`rtl_vector` is what of
a vector the RTL can be given: the SUME stream carries frames of 1..65535 bytes
(TUSER[15:0] is the length), so the longer ones (the ``oversize`` mutation, for the
soft switch's 16-bit length fields) are left out there and the model's results are
recomputed without them (``sim/conformance``, ``tests/test_conformance_rtl.py``).
Every vector's capacity is one the RTL can be built with (a power of two of at least 4).
Capabilities (:class:`Capabilities`: :data:`FULL` for the model and the native engine,
:data:`RTL` for nrl_switch, today the same as :data:`FULL`) say which vectors an
implementation can play: :func:`unsupported` names what a vector needs beyond them (stacked
samples, records over an implementation's largest R), and a leg would leave those vectors out
by name, never silently.

``python -m hostdrv.switch.conformance DIR`` writes every vector of the suite to
``DIR/<name>.json``.

This module is the suite's public face and its command; the code is in three rooms:
:mod:`~hostdrv.switch.conformance_run` (vectors, traces, comparison, files),
:mod:`~hostdrv.switch.conformance_gen` (the builder of one vector and the frame
mutations) and :mod:`~hostdrv.switch.conformance_suite` (the kinds of vector).
"""


from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hostdrv.switch.conformance_run import (
    FULL,
    M32,
    MAX_STREAM_FRAME,
    RTL,
    Capabilities,
    Op,
    Switch,
    Trace,
    Vector,
    compare,
    describe,
    load,
    needs,
    rtl_vector,
    run,
    save,
    unsupported,
)
from hostdrv.switch.conformance_suite import vectors

__all__ = ["FULL", "MAX_STREAM_FRAME", "M32", "RTL", "Capabilities", "Op", "Switch", "Trace",
           "Vector", "compare", "describe", "load", "main", "needs", "rtl_vector", "run", "save",
           "unsupported", "vectors"]


def main(argv: list[str] | None = None) -> int:
    """Write the suite's vectors with the model's expected results, one JSON file each."""
    ap = argparse.ArgumentParser(prog="python -m hostdrv.switch.conformance",
                                 description="Write the conformance vectors as JSON files.")
    ap.add_argument("out", type=Path, help="folder to write <name>.json into")
    ap.add_argument("--scale", type=int, default=1, help="seeds of every kind")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for v in vectors(args.scale):
        save(v, args.out / f"{v.name}.json")
        print(f"{args.out / v.name}.json: {len(v.ops)} operations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
