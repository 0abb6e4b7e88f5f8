"""One conformance suite for every implementation of the switch (issue 10).

The vectors of :mod:`hostdrv.switch.conformance` (random mixed traffic, every malformed
class, loss/duplication/reorder, async, a leaf of a hierarchy, replay with
prioritized sampling and updates, register writes including refused ones) run
through the golden model and the native engine; every emitted frame must agree
byte for byte, every counter after every operation, every register at the end.

A second copy of the native module, compiled with ``-DNRL_PLANT_BUG``, plants one
known bug at a time (``plant_bug(n)``): the suite must catch each of them, and
agree with the model when none is planted. The RTL leg (the same vectors saved with
:func:`hostdrv.switch.conformance.save` and replayed on nrl_switch in cocotb) is
``tests/test_conformance_rtl.py``.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from engines import switch_class
from toolcheck import require_module

from hostdrv.switch import conformance as K
from hostdrv.switch.reference import SwitchModel
from hostdrv.switch.reference.agg import AGG_CONFIG
from hostdrv.wire import consts as C
from hostdrv.wire import protocol as P
from hostdrv.wire import regmap
from hostdrv.wire.protocol import Flags, Opcode

REPO = Path(__file__).resolve().parents[1]
NATIVE = REPO / "hostdrv" / "native"
WIRE = REPO / "hostdrv" / "wire"  # nrl_protocol.h
VECTORS = K.vectors()
PLANTED_BUGS = (1, 2, 3, 4, 5, 6, 7, 8, 9)  # nrl_engine.cpp's list


@functools.cache
def expected(name: str) -> K.Trace:
    v = next(v for v in VECTORS if v.name == name)
    return K.run(v, SwitchModel(**v.params))


def test_vector_names_are_unique_and_deterministic() -> None:
    assert len({v.name for v in VECTORS}) == len(VECTORS)
    again = K.vectors()
    assert [(v.name, v.params, v.ops) for v in again] == [(v.name, v.params, v.ops) for v in VECTORS]


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v.name)
def test_native_engine_matches_the_model(vector: K.Vector) -> None:
    got = K.run(vector, switch_class("native")(**vector.params))
    assert K.compare(vector, expected(vector.name), got) == ""


def test_vectors_reach_every_counter_and_refusal() -> None:
    """Every drop class, every frame the switch sends, refused and accepted writes."""
    top = dict.fromkeys(regmap.COUNTERS, 0)
    refused = accepted = 0
    for v in VECTORS:
        t = expected(v.name)
        for c in t.counters:
            for k, x in c.items():  # another job's page: NAME@j
                name = k.partition("@")[0]
                top[name] = max(top[name], x)
        for op, r in zip(v.ops, t.results, strict=True):
            if op[0] == "write":
                refused += bool(r)
                accepted += not r
    assert [k for k, x in top.items() if not x] == []
    assert refused > 50 and accepted > 100


def _step_cases(v: K.Vector, t: K.Trace) -> set[str]:
    """The cases of issue 19's protocol change that the model's trace of ``v`` shows."""
    seen: set[str] = set()
    epoch = 0
    done: set[tuple[int, int]] = set()  # (slot, round) multicast without ERROR
    for op, res, before, after in zip(v.ops, t.results, [None, *t.counters[:-1]], t.counters,
                                      strict=True):
        if op[0] == "write" and op[1] == regmap.AGG_EPOCH and res == "":
            epoch = op[2]
        if op[0] == "write" and res == "" and regmap.BY_ADDR[op[1]].name in AGG_CONFIG:
            done.clear()
        if op[0] != "frame":
            continue
        if len(op[2]) >= 64 and op[2][C.OFF_OPCODE] == C.OP_GRADIENT:
            d = (int.from_bytes(op[2][C.OFF_SEQ:C.OFF_SEQ + 4], "big") - epoch) & 0xFFFFFFFF
            dropped = before is not None and after["CNT_DROP_AHEAD"] != before["CNT_DROP_AHEAD"]
            if d == C.AGG_AHEAD_ROUNDS and dropped:
                seen.add("ahead_2^25_dropped")
            if d == C.AGG_AHEAD_ROUNDS - 1 and res:
                seen.add("ahead_2^25-1_accepted")
            if d >= 1 << 31 and res:
                seen.add("behind_processed")
        for fr, _ in res:
            try:
                m = P.parse_frame(fr, udp_port=int.from_bytes(fr[36:38], "big")).message
            except P.ProtocolError:  # ordinary traffic switched at L2
                continue
            key = (m.slot, m.seq)
            err = bool(m.flags & Flags.ERROR)
            if m.opcode == Opcode.GRADIENT and m.aux != m.seq:
                seen.add("leaf_up_step")
            if m.opcode != Opcode.RESULT:
                continue
            if not m.flags & Flags.RESEND:
                if err and m.aux == m.total:
                    seen.add("step_error_copy")
                if not err:
                    done.add(key)
            elif err and key in done and m.aux == m.total:
                seen.add("step_forced_error_resend")
            elif err and m.aux == m.total:
                seen.add("step_error_copy_resend")
    return seen


def test_step_and_ahead_vectors_reach_every_case() -> None:
    """Issue 19 parts 1-2: step mismatches making an error copy, the ERROR-forced RESEND of a
    DONE copy, an error copy's RESEND, a leaf's upward step, a root refusing a leaf; far-ahead
    rounds dropped exactly from 2**25 on, 2**25 - 1 accepted, rounds behind processed."""
    want = {"step_flat": {"step_error_copy", "step_forced_error_resend", "step_error_copy_resend"},
            "step_root": {"step_error_copy", "step_forced_error_resend", "step_error_copy_resend"},
            "step_leaf": {"step_error_copy", "step_forced_error_resend", "step_error_copy_resend",
                          "leaf_up_step"},
            "ahead": {"ahead_2^25_dropped", "ahead_2^25-1_accepted", "behind_processed"}}
    for kind, cases in want.items():
        vs = [v for v in VECTORS if v.name.startswith(kind)]
        assert vs, kind
        for v in vs:
            assert cases - _step_cases(v, expected(v.name)) == set(), v.name


def test_save_and_load_a_vector_for_the_rtl(tmp_path: Path) -> None:
    v = VECTORS[-1]
    assert K.main([str(tmp_path)]) == 0
    assert sorted(p.stem for p in tmp_path.glob("*.json")) == sorted(x.name for x in VECTORS)
    back = K.load(tmp_path / f"{v.name}.json")
    assert (back.name, back.params, back.ops) == (v.name, v.params, v.ops)
    assert K.compare(back, expected(v.name), K.run(back, SwitchModel(**back.params))) == ""


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> object:
    """hostdrv._native compiled again with -DNRL_PLANT_BUG, as module _native_planted."""
    pybind11 = require_module("pybind11", "the planted-bug build of the native engine")
    out = tmp_path_factory.mktemp("planted")
    so = out / ("_native_planted" + sysconfig.get_config_var("EXT_SUFFIX"))
    cmd = [os.environ.get("CXX", "g++"), "-O1", "-std=c++17", "-shared", "-fPIC",
           "-fvisibility=hidden", "-fno-fast-math", "-ffp-contract=off",
           "-DNRL_PLANT_BUG", "-DNRL_MODULE_NAME=_native_planted",
           f"-I{NATIVE}", f"-I{WIRE}", f"-I{pybind11.get_include()}",
           f"-I{sysconfig.get_paths()['include']}",
           *(str(NATIVE / f) for f in ("nrl_engine.cpp", "nrl_engine_regs.cpp",
                                       "nrl_engine_replay.cpp", "nrl_server.cpp",
                                       "nrl_client.cpp", "nrl_module.cpp")),
           "-o", str(so)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    spec = importlib.util.spec_from_file_location("_native_planted", so)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["_native_planted"] = mod
    spec.loader.exec_module(mod)
    return mod


def _first_difference(module: object) -> str:
    from hostdrv.switch.native import NativeSwitchModel

    for v in VECTORS:
        diff = K.compare(v, expected(v.name), K.run(v, NativeSwitchModel(**v.params,
                                                                         module=module)))
        if diff:
            return diff
    return ""


def test_planted_copy_without_a_bug_conforms(planted: object) -> None:
    planted.plant_bug(0)  # type: ignore[attr-defined]
    assert _first_difference(planted) == ""


@pytest.mark.parametrize("bug", PLANTED_BUGS)
def test_a_planted_bug_is_caught(planted: object, bug: int) -> None:
    planted.plant_bug(bug)  # type: ignore[attr-defined]
    try:
        diff = _first_difference(planted)
    finally:
        planted.plant_bug(0)  # type: ignore[attr-defined]
    print(f"bug {bug}: {diff}")
    assert diff
