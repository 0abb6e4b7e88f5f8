"""The register map artefacts are exactly what the generator writes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_regeneration_changes_nothing() -> None:
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "gen_regs.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_python_map_matches_yaml() -> None:
    sys.path.insert(0, str(REPO / "scripts"))
    import gen_regs

    from hostdrv.wire import regmap

    spec = gen_regs.load()
    assert {r["name"]: r["addr"] for r in spec["flat"]} == {n: r.addr for n, r in regmap.REGISTERS.items()}
    assert len(regmap.BY_ADDR) == len(regmap.REGISTERS)
    assert regmap.member_reg("MEMBER_IP", 3) in regmap.REGISTERS


# -- one register lookup ---------------------------------------------------------------


def test_lookup_by_name_and_address() -> None:
    import numpy as np

    from hostdrv.wire import regmap

    for name, reg in regmap.REGISTERS.items():  # member table entries included
        assert regmap.lookup(name) is reg
        assert regmap.lookup(reg.addr) is reg
        assert regmap.lookup(np.uint32(reg.addr)) is reg
        assert regmap.find(name) is reg
        assert regmap.label(reg.addr) == name
    unnamed = next(a for a in range(0, 0x1000, 4) if a not in regmap.BY_ADDR)
    assert regmap.label(unnamed) == f"0x{unnamed:03X}"


def test_an_unknown_register_is_one_error() -> None:
    import pytest

    from hostdrv.errors import NetrlError, RegisterError, UnknownRegisterError
    from hostdrv.wire import regmap

    unnamed = next(a for a in range(0, 0x1000, 4) if a not in regmap.BY_ADDR)
    for bad in ("NO_SUCH_REG", "agg_slots", unnamed, 0x1000, -4, True, 4.0, None):
        assert regmap.find(bad) is None  # type: ignore[arg-type]
        with pytest.raises(UnknownRegisterError) as err:
            regmap.lookup(bad)  # type: ignore[arg-type]
        assert all(isinstance(err.value, t) for t in (RegisterError, ValueError, NetrlError))
        assert err.value.field == "register" and err.value.value == bad


def test_every_switch_and_client_names_the_same_unknown_register() -> None:
    """The model, the native engine and SwitchControl's check all raise the lookup's error."""
    import pytest

    from hostdrv.client.control import SwitchControl
    from hostdrv.errors import UnknownRegisterError
    from hostdrv.switch.native import NativeSwitchModel
    from hostdrv.switch.reference import SwitchModel

    for sw in (SwitchModel(), NativeSwitchModel()):
        with pytest.raises(UnknownRegisterError):
            sw.read("NO_SUCH_REG")
        with pytest.raises(UnknownRegisterError):
            sw.write(0xFFC, 1)
    with pytest.raises(UnknownRegisterError):
        SwitchControl._reg("NO_SUCH_REG")


# -- the write rules and the read-back rule --------------------------------------------


def test_the_write_rules_follow_the_protocol_constants() -> None:
    from hostdrv.wire import consts as C
    from hostdrv.wire import regmap
    from hostdrv.wire.protocol import ELEM_QUANTUM, MAX_MEMBERS

    rules = regmap.WRITE_RULES
    assert rules["AGG_MEMBERS"].max == rules["AGG_THRESHOLD"].max == MAX_MEMBERS
    assert rules["AGG_EPOCH"].multiple == C.EPOCH_ROUNDS
    assert rules["AGG_ELEMS"].multiple == rules["AGG_ELEMS"].low == ELEM_QUANTUM
    assert regmap.SELF_CLEARING["CTRL"] == C.CTRL_CLEAR_COUNTERS
    assert rules["CTRL"].bits == C.CTRL_AGG_ENABLE | C.CTRL_RPL_ENABLE | C.CTRL_CLEAR_COUNTERS
    assert all(regmap.REGISTERS[n].access == "rw" for n in (*rules, *regmap.SELF_CLEARING))


def _writes() -> list[tuple[str, int]]:
    """Every rw register with values around its rules, in an order that exercises the
    rules between registers (AGG_THRESHOLD <= AGG_MEMBERS) both ways."""
    from test_register_rules import WRITES

    from hostdrv.wire import regmap

    out = list(WRITES)
    for r in regmap.REGISTERS.values():
        if r.access == "rw":
            top = (1 << r.width) - 1
            out += [(r.name, v) for v in (0, 1, 2, 3, 16, 0x80000000 & top, top, top + 1)]
    return out


def test_register_file_reads_back_what_the_model_reads() -> None:
    """RegisterFile (what the board and serial transports expect to read back) against the
    reference model given the same writes: a refused write (None) keeps the old value."""
    from hostdrv.switch.reference import SwitchModel
    from hostdrv.wire import regmap, regrules

    # at the RTL's build parameters, the ones RegisterFile assumes (JOB_RPL_CAP resets to C)
    model = SwitchModel(capacity=regmap.REGISTERS["RPL_CAPACITY"].reset)
    regs = regrules.RegisterFile()
    for name, value in _writes() + [("MAGIC", 1), ("CNT_PASS", 0), ("RPL_SIZE", 3)]:
        try:
            model.write(name, value)
            expected = model.read(name)
        except ValueError:
            expected = None
        assert regs.write(name, value) == expected, (name, value)
        assert regs.read(name) == model.read(name), (name, value)


def test_the_model_judges_by_the_generated_rule() -> None:
    """The model's refusals are the regmap's, word for word (one source), and for the job
    share registers (section 11) the share rules' (a one-job model: its share is fixed)."""
    from hostdrv.switch.reference import SwitchModel
    from hostdrv.switch.reference.jobs import share_refusal
    from hostdrv.wire import regrules

    model = SwitchModel()
    for name, value in _writes():
        why = regrules.refusal(name, value, model._value)
        if not why and name.startswith("JOB_") and name != "JOB_LEASE":
            why = share_refusal(model._pages, 0, name, value, model._params)
        try:
            model.write(name, value)
        except ValueError as e:
            assert why and str(e).endswith(f"out of range: {why}"), (name, value, str(e))
        else:
            assert why == "", (name, value)


def test_the_generator_refuses_a_malformed_rule(tmp_path: Path) -> None:
    import pytest

    sys.path.insert(0, str(REPO / "scripts"))
    import gen_regs

    text = (REPO / "hw" / "regs.yaml").read_text()
    for old, new in (("legal: {one_hot: true}", "legal: {one_hot: true, odd: 1}"),
                     ("range: [1, AGG_MAX_SLOTS]", "range: [1, NO_SUCH_REG]"),
                     ("access: ro, reset: 0x4E524C31,", "access: ro, reset: 0x4E524C31, "
                                                        "self_clear: 1,"),
                     ("self_clear: 0x1,", "self_clear: 0x2,"),
                     # fixed_share: on a read-only register, on an array (the RTL's word mask)
                     ("{name: JOBS, addr: 0x02C, access: ro,", "{name: JOBS, addr: 0x02C, access: ro, "
                                                               "fixed_share: true,"),
                     ("{name: MEMBER_PORT, ", "{name: MEMBER_PORT, fixed_share: true, ")):
        assert old in text, old
        bad = tmp_path / "regs.yaml"
        bad.write_text(text.replace(old, new, 1))
        with pytest.raises(ValueError):
            gen_regs.load(bad)
