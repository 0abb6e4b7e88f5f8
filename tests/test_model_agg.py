"""Golden model: aggregation in one switch, sync and async (docs/protocol.md section 4),
and the arithmetic it exports (fp32_add, xorshift32).

Expected values are computed here from the inputs (numpy float32 sums in
arrival order, Python integer sums modulo 2**32) and from docs/protocol.md,
never copied from the model. Every test runs on the golden model and on the
native engine (``tests/modelutil.py``: the shared helpers).
"""

from __future__ import annotations

import numpy as np
import pytest
from engines import ENGINES, use_engine
from modelutil import (
    CANON_NAN,
    JOB,
    MCAST_IP,
    UDP,
    check_switch_frame,
    grad,
    make_switch,
    nonzero,
    parse,
    ref_fp32,
    send,
    w_ip,
    w_mac,
    w_port,
    w_udp,
)

from hostdrv.switch.reference import Egress, fp32_add, xorshift32
from hostdrv.wire import protocol as P
from hostdrv.wire.protocol import Flags, Opcode


@pytest.fixture(autouse=True, params=ENGINES)
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs on the golden model and on the native engine."""
    return use_engine("modelutil", request, monkeypatch)  # make_switch lives there


# ---------------------------------------------------------------------------
# helpers exported by the model


def test_xorshift32_marsaglia() -> None:
    # Marsaglia (2003), "Xorshift RNGs": y=2463534242, shifts 13/17/5 -> 723471715
    assert xorshift32(2463534242) == 723471715
    x = 1
    for _ in range(1000):
        x = xorshift32(x)
        assert 0 < x < 1 << 32


def test_fp32_add_canonical_nan() -> None:
    a = np.array([np.inf, 1.0, np.nan, -0.0, 1e-45], dtype=np.float32)
    b = np.array([-np.inf, np.nan, 1.0, -0.0, 1e-45], dtype=np.float32)
    a0 = a.copy()
    s = fp32_add(a, b)
    assert s.dtype == np.float32 and np.array_equal(a.view(np.uint32), a0.view(np.uint32))
    bits = s.view(np.uint32)
    assert bits[0] == bits[1] == bits[2] == CANON_NAN
    assert bits[3] == 0x80000000  # -0 + -0 = -0
    assert bits[4] == 2  # subnormals kept

# ---------------------------------------------------------------------------
# synchronous aggregation


def test_sync_fp32_bit_exact() -> None:
    rng = np.random.default_rng(1)
    n, p, slots = 4, 64, 3
    sw = make_switch(n=n, p=p, slots=slots)
    for rnd in range(4):
        for slot in range(slots):
            data = [(rng.standard_normal(p) * 10.0 ** rng.integers(-3, 4, p)).astype(np.float32)
                    for _ in range(n)]
            order = [int(w) for w in rng.permutation(n)]
            outs: list[Egress] = []
            for k, w in enumerate(order):
                out = send(sw, grad(data[w], w, slot, rnd), w)
                if k < n - 1:
                    assert out == []
                outs += out
            assert len(outs) == 1
            eg = outs[0]
            assert eg.dst_ports == 0b1111
            fr = check_switch_frame(eg, sw)
            m = fr.message
            assert (m.opcode, m.worker, m.slot, m.seq, m.count, m.total) == \
                (Opcode.RESULT, 0, slot, rnd, p, p)
            assert P.result_order(m.aux) == order and m.aux & 0xF == n
            assert m.flags == Flags.FROM_SWITCH
            assert fr.eth_dst == b"\xff" * 6 and fr.ip_dst == MCAST_IP and fr.udp_dst == UDP
            want = ref_fp32([data[w] for w in order])
            assert np.array_equal(m.elements().view(np.uint32), want.view(np.uint32))
    c = sw.counters()
    assert c["CNT_RX_GRADIENT"] == 4 * slots * n
    assert c["CNT_TX_RESULT"] == 4 * slots
    assert sum(v for k, v in c.items() if k.startswith("CNT_DROP")) == 0


def test_fp32_specials() -> None:
    p = 16
    sw = make_switch(n=1, p=p)
    snan = np.full(p, 0x7FA00001, dtype=np.uint32)
    snan[1] = 0x80000000  # -0.0
    snan[2] = 0xFFC12345  # negative NaN with payload
    out = send(sw, grad(snan.view(np.float32), 0), 0)
    # first contribution is stored as it is: NaN payloads and -0.0 survive
    assert np.array_equal(parse(out[0]).message.elements().view(np.uint32), snan)

    sw = make_switch(n=3, p=p)
    a = np.zeros(p, np.float32)
    b = np.zeros(p, np.float32)
    c = np.zeros(p, np.float32)
    a[0], b[0] = np.inf, -np.inf
    a[1], b[1] = np.float32(1.0), np.float32(np.nan)
    b[2] = np.uint32(0x7F800001).view(np.float32)  # signalling NaN in a later add
    a[3], b[3], c[3] = np.float32(-0.0), np.float32(-0.0), np.float32(-0.0)
    a[4], b[4], c[4] = (np.uint32(1).view(np.float32),) * 3  # subnormal sum
    a[5], b[5] = np.float32(3.4e38), np.float32(3.4e38)  # overflow to inf
    a[6], b[6], c[6] = np.float32(1.0), np.float32(2 ** -24), np.float32(2 ** -24)  # RNE ties
    out = []
    for w, x in enumerate((a, b, c)):
        out += send(sw, grad(x, w), w)
    got = parse(out[0]).message.elements().view(np.uint32)
    want = ref_fp32([a, b, c]).view(np.uint32)
    assert np.array_equal(got, want)
    assert got[0] == got[1] == got[2] == CANON_NAN
    assert got[3] == 0x80000000 and got[4] == 3 and got[5] == 0x7F800000


def test_int32_wrap() -> None:
    rng = np.random.default_rng(2)
    n, p = 5, 48
    sw = make_switch(n=n, p=p, dtype=1)
    data = [rng.integers(-(2 ** 31), 2 ** 31, p, dtype=np.int64).astype(np.int32) for _ in range(n)]
    data[0][:4] = 2 ** 31 - 1
    data[1][:4] = 2 ** 31 - 1
    out = []
    for w in range(n):
        out += send(sw, grad(data[w], w, 1, 0), w)
    assert len(out) == 1
    m = parse(out[0]).message
    assert m.flags == Flags.FROM_SWITCH | Flags.INT32
    want = [(sum(int(d[k]) for d in data)) & 0xFFFFFFFF for k in range(p)]
    assert m.elements().view(np.uint32).tolist() == want


def test_duplicate_before_and_after_completion() -> None:
    p = 16
    sw = make_switch(n=3, p=p)
    data = [np.full(p, i + 1.5, np.float32) for i in range(3)]
    assert send(sw, grad(data[0], 0), 0) == []
    before = sw.counters()
    assert send(sw, grad(np.full(p, 100.0, np.float32), 0), 0) == []
    assert nonzero(sw, before) == {"CNT_RX_GRADIENT": 1, "CNT_DROP_DUPLICATE": 1}
    send(sw, grad(data[1], 1), 1)
    (res,) = send(sw, grad(data[2], 2), 2)
    want = ref_fp32(data)
    assert np.array_equal(parse(res).message.elements(), want)
    # after completion: the worker gets the result again, alone
    before = sw.counters()
    (again,) = send(sw, grad(data[1], 1), 1)
    assert nonzero(sw, before) == {"CNT_RX_GRADIENT": 1, "CNT_DROP_DUPLICATE": 1,
                                   "CNT_TX_RESEND": 1}
    assert again.dst_ports == w_port(1)
    fr = check_switch_frame(again, sw)
    assert (fr.eth_dst, fr.ip_dst, fr.udp_dst) == (w_mac(1), w_ip(1), w_udp(1))
    m = fr.message
    assert m.flags == Flags.FROM_SWITCH | Flags.RESEND
    assert (m.seq, P.result_order(m.aux), m.worker, m.slot) == (0, [0, 1, 2], 0, 0)
    assert np.array_equal(m.elements(), want)
    assert again.frame[42:] != res.frame[42:]  # differs only by the RESEND flag ...
    assert again.frame[64:] == res.frame[64:]  # ... and addressing


def test_async_threshold_staleness_late() -> None:
    p = 16
    sw = make_switch(n=4, p=p, mode=1, threshold=2, staleness=1)
    x = [np.full(p, 0.25 * (i + 1), np.float32) for i in range(4)]
    # round 5 sent with weights of round 3: staleness 2 > 1
    before = sw.counters()
    assert send(sw, grad(x[0], 0, 0, 5, version=3), 0) == []
    assert nonzero(sw, before) == {"CNT_RX_GRADIENT": 1, "CNT_DROP_STALE": 1}
    assert send(sw, grad(x[0], 0, 0, 5, version=4), 0) == []
    (res,) = send(sw, grad(x[2], 2, 0, 5, version=5), 2)
    m = parse(res).message
    assert (m.seq, P.result_order(m.aux)) == (5, [0, 2])
    assert np.array_equal(m.elements(), ref_fp32([x[0], x[2]]))
    assert res.dst_ports == 0b1111
    # a third member is late: nothing added, result re-sent to it alone
    before = sw.counters()
    (late,) = send(sw, grad(x[3], 3, 0, 5, version=5), 3)
    assert nonzero(sw, before) == {"CNT_RX_GRADIENT": 1, "CNT_DROP_LATE": 1, "CNT_TX_RESEND": 1}
    assert late.dst_ports == w_port(3)
    lm = parse(late).message
    assert lm.flags & Flags.RESEND and lm.aux == m.aux and lm.elements().tobytes() == m.payload
    # a contributor again: DUPLICATE (also re-sent)
    before = sw.counters()
    assert len(send(sw, grad(x[0], 0, 0, 5, version=5), 0)) == 1
    assert nonzero(sw, before) == {"CNT_RX_GRADIENT": 1, "CNT_DROP_DUPLICATE": 1,
                                   "CNT_TX_RESEND": 1}
    # staleness is modulo 2**32
    assert send(sw, grad(x[0], 0, 1, 0, version=0xFFFFFFFF), 0) == []
    assert sw.read("CNT_DROP_STALE") == 1
    assert send(sw, grad(x[0], 0, 2, 1, version=0xFFFFFFFF), 0) == []
    assert sw.read("CNT_DROP_STALE") == 2


def test_async_threshold_zero_acts_as_one() -> None:
    """AGG_THRESHOLD at its reset value 0 (a write of 0 is refused) completes at 1."""
    sw = make_switch(n=2, p=16, mode=1, threshold=0, staleness=0)
    assert sw.read("AGG_THRESHOLD") == 0
    assert len(send(sw, grad(np.ones(16, np.float32), 1), 1)) == 1


def test_shadow_copies_reuse_and_stale_resend() -> None:
    p = 16
    sw = make_switch(n=2, p=p, slots=1)
    vals = {(r, w): np.full(p, 10 * r + w + 0.5, np.float32) for r in range(4) for w in range(2)}

    def contribute(r: int, w: int) -> list[Egress]:
        return send(sw, grad(vals[r, w], w, 0, r), w)

    # round 0 completes in copy 0; round 1 opens in copy 1 without disturbing it
    contribute(0, 0)
    contribute(0, 1)
    contribute(1, 0)
    (dup0,) = contribute(0, 0)  # round 0 still DONE in copy 0
    assert parse(dup0).message.seq == 0
    (r1,) = contribute(1, 1)
    assert np.array_equal(parse(r1).message.elements(), ref_fp32([vals[1, 0], vals[1, 1]]))
    # round 2 reuses copy 0: a fresh bitmap and accumulator
    assert contribute(2, 1) == []
    # straggler of round 0 while round 2 is OPEN: STALE, nothing sent
    before = sw.counters()
    assert contribute(0, 0) == []
    assert nonzero(sw, before) == {"CNT_RX_GRADIENT": 1, "CNT_DROP_STALE": 1}
    (r2,) = contribute(2, 0)
    assert np.array_equal(parse(r2).message.elements(), ref_fp32([vals[2, 1], vals[2, 0]]))
    # straggler of round 0 once round 2 is DONE: STALE and round 2's result re-sent
    before = sw.counters()
    (rs,) = contribute(0, 1)
    assert nonzero(sw, before) == {"CNT_RX_GRADIENT": 1, "CNT_DROP_STALE": 1, "CNT_TX_RESEND": 1}
    m = parse(rs).message
    assert rs.dst_ports == w_port(1) and m.seq == 2 and m.flags & Flags.RESEND
    assert m.payload == parse(r2).message.payload
    # a contributor of round 2 resending round 0 gets round 2 again as well
    assert len(contribute(0, 0)) == 1
    assert sw.read("CNT_DROP_STALE") == 3


def test_round_wraparound() -> None:
    p = 16
    sw = make_switch(n=1, p=p, slots=1)
    for r in (0xFFFFFFFE, 0xFFFFFFFF, 0, 1):
        (res,) = send(sw, grad(np.full(p, float(r & 7), np.float32), 0, 0, r), 0)
        assert parse(res).message.seq == r
    # 0xFFFFFFFF is now older than round 1 in copy 1
    assert send(sw, grad(np.ones(p, np.float32), 0, 0, 0xFFFFFFFF), 0) != []
    assert sw.read("CNT_DROP_STALE") == 1
    # a distance of exactly 2**31 counts as older: the copy is reopened
    (res,) = send(sw, grad(np.ones(p, np.float32), 0, 0, 1 + 2 ** 31), 0)
    assert not res.frame[44] & Flags.RESEND and parse(res).message.seq == 1 + 2 ** 31
    assert sw.read("CNT_DROP_STALE") == 1


def test_config_write_invalidates_slots() -> None:
    p = 16
    sw = make_switch(n=1, p=p, slots=1)
    send(sw, grad(np.ones(p, np.float32), 0, 0, 57), 0)
    assert send(sw, grad(np.ones(p, np.float32), 0, 0, 1), 0)[0].frame[44] & Flags.RESEND
    sw.write("JOB_ID", JOB)  # a new job, same id
    (res,) = send(sw, grad(np.ones(p, np.float32), 0, 0, 1), 0)
    assert not res.frame[44] & Flags.RESEND and parse(res).message.seq == 1
