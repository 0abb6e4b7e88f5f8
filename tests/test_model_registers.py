"""Golden model: the register file (reads, writes, ranges, refusals).

Expected values come from the inputs and docs/protocol.md, never from the model; every
test runs on the golden model and on the native engine (helpers: ``tests/modelutil.py``).
"""

from __future__ import annotations

import numpy as np
import pytest
from engines import ENGINES, use_engine
from modelutil import (
    UDP,
    grad,
    make_switch,
    parse,
    send,
)

from hostdrv.switch.reference import SwitchModel
from hostdrv.wire import protocol as P
from hostdrv.wire import regmap


@pytest.fixture(autouse=True, params=ENGINES)
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs on the golden model and on the native engine."""
    use_engine("modelutil", request, monkeypatch)  # make_switch lives there
    return use_engine(__name__, request, monkeypatch)


# ---------------------------------------------------------------------------
# registers


def test_register_read_write() -> None:
    sw = SwitchModel(capacity=256, record_bytes=192, max_slots=8, max_elems=64, build_hash=0xC0FFEE)
    for name, r in regmap.REGISTERS.items():
        assert sw.read(name) == sw.read(r.addr)
    assert sw.read("MAGIC") == 0x4E524C31
    assert sw.read("VERSION") >> 16 == P.VERSION
    assert (sw.read("RPL_CAPACITY"), sw.read("RPL_RECORD_BYTES"), sw.read("AGG_MAX_SLOTS"),
            sw.read("AGG_MAX_ELEMS"), sw.read("BUILD_HASH")) == (256, 192, 8, 64, 0xC0FFEE)
    assert sw.read("AGG_SLOTS") == 8 and sw.read("AGG_ELEMS") == 64  # resets clipped
    assert sw.read("CTRL") == 3 and sw.read("UDP_PORT") == UDP
    sw.write("MEMBER_IP_3", 0x01020304)
    assert sw.read(regmap.MEMBER_IP_3) == 0x01020304
    sw.write(regmap.AGG_SLOTS, 8)
    assert sw.read("AGG_SLOTS") == 8


@pytest.mark.parametrize(("reg", "value"), [
    ("AGG_SLOTS", 9), ("AGG_SLOTS", 0), ("AGG_ELEMS", 24), ("AGG_ELEMS", 80), ("AGG_ELEMS", 0),
    ("AGG_MEMBERS", 9), ("AGG_THRESHOLD", 9), ("JOB_ID", 256), ("UDP_PORT", 1 << 16),
    ("MEMBER_PORT_0", 0x100), ("AGG_UPLINK_PORT", 3), ("CTRL", 4), ("AGG_LEAF_ID", 8),
    ("SWITCH_IP", -1), ("RPL_SEED", 1 << 32), ("AGG_DTYPE", 2),
    ("AGG_THRESHOLD", 0), ("AGG_THRESHOLD", 1), ("AGG_EPOCH", 1), ("AGG_EPOCH", 0x00FFFFFF),
    ("AGG_EPOCH", 0x12345678), ("AGG_PARENT_UDP", 1 << 16),
])
def test_register_range_errors(reg: str, value: int) -> None:
    sw = SwitchModel(max_slots=8, max_elems=64)
    old = sw.read(reg)
    with pytest.raises(ValueError, match=reg):
        sw.write(reg, value)
    assert sw.read(reg) == old


def test_threshold_within_members() -> None:
    """AGG_THRESHOLD is 1 .. AGG_MEMBERS after every write (0 only at reset); AGG_EPOCH a
    multiple of 2^24. A refused write changes nothing and invalidates no slot."""
    sw = make_switch(4, mode=1, threshold=3)
    for w in (0, 1):  # two of three contributions: the copy stays OPEN
        assert send(sw, grad(np.ones(32, np.float32), w, slot=0), w) == []
    for reg, value, why in (("AGG_THRESHOLD", 5, "1 .. AGG_MEMBERS"),
                            ("AGG_THRESHOLD", 0, "1 .. AGG_MEMBERS"),
                            ("AGG_MEMBERS", 2, "below AGG_THRESHOLD"),
                            ("AGG_MEMBERS", 0, "below AGG_THRESHOLD"),
                            ("AGG_EPOCH", (3 << 24) + 1, "multiple of 2\\^24")):
        old = sw.read(reg)
        with pytest.raises(ValueError, match=why):
            sw.write(reg, value)
        assert sw.read(reg) == old
    (res,) = send(sw, grad(np.ones(32, np.float32), 2, slot=0), 2)  # nothing invalidated
    assert parse(res).message.aux & 0xF == 3
    # the order that keeps H <= N: threshold first when the members shrink below it
    sw.write("AGG_THRESHOLD", 2)
    sw.write("AGG_MEMBERS", 2)
    sw.write("AGG_MEMBERS", 8)
    sw.write("AGG_THRESHOLD", 8)
    sw.write("AGG_EPOCH", 0xFF000000)
    assert (sw.read("AGG_MEMBERS"), sw.read("AGG_THRESHOLD"), sw.read("AGG_EPOCH")) == \
        (8, 8, 0xFF000000)


@pytest.mark.parametrize("reg", ["MAGIC", "BUILD_HASH", "RPL_CAPACITY", "RPL_SIZE",
                                 "RPL_TOTAL_HI", "CNT_PASS", "AGG_MAX_ELEMS", regmap.CNT_DROP_STALE])
def test_read_only_registers(reg: str | int) -> None:
    with pytest.raises(ValueError, match="read-only"):
        SwitchModel().write(reg, 0)


def test_unknown_registers() -> None:
    sw = SwitchModel()
    for reg in ("NOPE", 0x3FC, 0x011):
        with pytest.raises(ValueError):
            sw.read(reg)
        with pytest.raises(ValueError):
            sw.write(reg, 0)
    with pytest.raises(ValueError):
        sw.write("JOB_ID", 1.5)  # type: ignore[arg-type]


def test_ctrl_clears_counters() -> None:
    sw = make_switch(n=1, p=16)
    send(sw, grad(np.ones(16, np.float32), 0), 0)
    sw.process(b"\x00" * 60, 1)
    assert sw.read("CNT_PASS") == 1 and sw.read("CNT_TX_RESULT") == 1
    sw.write("CTRL", (1 << 31) | 1)
    assert all(v == 0 for v in sw.counters().values())
    assert sw.read("CTRL") == 1


@pytest.mark.parametrize(("kw", "word"), [
    ({"capacity": 1000}, "capacity"), ({"capacity": 0}, "capacity"),
    ({"record_bytes": 100}, "record_bytes"), ({"record_bytes": 0}, "record_bytes"),
    ({"record_bytes": 8256}, "record_bytes"), ({"max_slots": 0}, "max_slots"),
    ({"max_slots": 65}, "max_slots"), ({"max_elems": 360}, "max_elems"),
    ({"max_elems": 40}, "max_elems"), ({"build_hash": 1 << 32}, "build_hash"),
    ({"capacity": "8"}, "capacity"),
])
def test_constructor_validation(kw: dict[str, object], word: str) -> None:
    with pytest.raises(ValueError, match=word):
        SwitchModel(**kw)  # type: ignore[arg-type]


def test_fp32_add_inplace_matches_reference() -> None:
    """The in-place hot path equals fp32_add_bits, NaNs and all."""
    from hostdrv.wire.fp32 import fp32_add_bits, fp32_add_inplace

    rng = np.random.default_rng(5)
    a = rng.integers(0, 2**32, 4096, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2**32, 4096, dtype=np.uint64).astype(np.uint32)
    want = fp32_add_bits(a, b)
    acc = a.copy()
    fp32_add_inplace(acc, b)
    np.testing.assert_array_equal(acc, want)


@pytest.mark.parametrize("value", [0x3, 0xF, 0x81, 0xFF])
def test_member_port_must_be_one_hot(value: int) -> None:
    sw = make_switch(n=2)
    for name in ("MEMBER_PORT_1", "AGG_UPLINK_PORT"):
        old = sw.read(name)
        with pytest.raises(ValueError, match="one-hot"):
            sw.write(name, value)
        assert sw.read(name) == old


def test_agg_epoch_is_a_mailbox() -> None:
    """AGG_EPOCH reads back what was written and leaves every slot as it was (round 0 is
    behind the new epoch: processed; the far-ahead bound is tests/test_model_step.py's)."""
    p = 16
    sw = make_switch(n=2, p=p)
    send(sw, grad(np.ones(p, np.float32), 0), 0)
    sw.write("AGG_EPOCH", 3 << 24)
    assert sw.read("AGG_EPOCH") == 3 << 24
    (res,) = send(sw, grad(np.ones(p, np.float32), 1), 1)
    assert P.result_order(parse(res).message.aux) == [0, 1]
