"""The RTL leg of the conformance suite: ``hostdrv.switch.conformance`` vectors replayed on nrl_switch.

``test_conformance_rtl.py`` is the cocotb test; ``tests/test_conformance_rtl.py``
writes the vectors, builds the switch once per parameter set
(:func:`rtl_parameters`) and runs it.
"""

from __future__ import annotations

from collections.abc import Mapping

VECTORS_ENV = "NRL_CONF_VECTORS"
"""Environment variable: the vector JSON files to play (``os.pathsep`` separated)."""
RESULTS_ENV = "NRL_CONF_RESULTS"
"""Environment variable: the folder each vector's outcome is written to (``<name>.json``)."""

CORRUPT_ENV = "NRL_CONF_CORRUPT"
"""Environment variable (the harness's self-check): the index of a frame operation whose
frame reaches the RTL cut to its first 20 bytes (the model gets it whole)."""

EXTRA_ENV = "NRL_CONF_EXTRA"
"""Environment variable (the harness's check of its counter reads): ``i:port:hex``, one more
frame (``hex``, from ``port``) the RTL alone gets after frame operation ``i``."""

DATA_WIDTH = 256
"""The SUME bus width the suite runs on."""


def rtl_parameters(params: Mapping[str, int]) -> dict[str, int]:
    """nrl_switch's build parameters for a vector's ``params`` (``SwitchModel``'s keywords)."""
    return {"DATA_WIDTH": DATA_WIDTH,
            "AGG_MAX_SLOTS": params["max_slots"],
            "AGG_MAX_ELEMS": params["max_elems"],
            "RPL_CAPACITY": params["capacity"],
            "RPL_RECORD_BYTES": params["record_bytes"],
            "BUILD_HASH": params["build_hash"],
            "JOBS": params.get("jobs", 1)}


def build_tag(params: Mapping[str, int]) -> str:
    """The name of the build directory of one parameter set."""
    jobs = params.get("jobs", 1)
    return (f"conf_c{params['capacity']}_r{params['record_bytes']}_s{params['max_slots']}"
            f"_e{params['max_elems']}_h{params['build_hash']:x}" + (f"_j{jobs}" if jobs > 1 else ""))
