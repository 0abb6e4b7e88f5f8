"""Golden model: tensor length and step mismatches (section 4 step 4), ERROR RESULTs.

Expected values come from the inputs and docs/protocol.md, never from the model; every
test runs on the golden model and on the native engine (helpers: ``tests/modelutil.py``).
"""

from __future__ import annotations

import numpy as np
import pytest
from engines import ENGINES, use_engine
from modelutil import (
    LEAF_N,
    LEAF_ON_ROOT,
    LEAF_PORTS,
    UPLINK,
    check_switch_frame,
    grad,
    make_switch,
    make_tree,
    nonzero,
    parse,
    ref_fp32,
    send,
    w_port,
)

from hostdrv.switch.reference import Egress
from hostdrv.wire import protocol as P
from hostdrv.wire.protocol import Flags, Opcode


@pytest.fixture(autouse=True, params=ENGINES)
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs on the golden model and on the native engine."""
    return use_engine("modelutil", request, monkeypatch)  # make_switch lives there


# ---------------------------------------------------------------------------
# tensor length mismatch (section 4 step 4), ERROR RESULTs


def test_mismatched_tensor_length_is_never_added() -> None:
    """Worker 1 sends a chunk of a 600-element tensor into a round of 1000-element ones."""
    p = 16
    sw = make_switch(n=3, p=p)
    x = [np.full(p, 1.0 + i, np.float32) for i in range(3)]
    assert send(sw, grad(x[0], 0, total=1000), 0) == []
    before = sw.counters()
    (err,) = send(sw, grad(x[1], 1, total=600), 1)
    assert nonzero(sw, before) == {"CNT_RX_GRADIENT": 1, "CNT_DROP_MISMATCH": 1,
                                   "CNT_TX_RESULT": 1}
    assert err.dst_ports == 0b111  # every member of the round learns it
    m = check_switch_frame(err, sw).message
    assert m.flags == Flags.FROM_SWITCH | Flags.ERROR
    assert (m.opcode, m.worker, m.aux, m.total, m.seq) == (Opcode.RESULT, 1, 600, 1000, 0)
    assert m.elements().tobytes() == x[0].tobytes()  # the partial accumulator, never x[1]
    # a later contribution of the right length: the round failed, the error goes to it alone
    before = sw.counters()
    (again,) = send(sw, grad(x[2], 2, total=1000), 2)
    assert nonzero(sw, before) == {"CNT_RX_GRADIENT": 1, "CNT_DROP_LATE": 1, "CNT_TX_RESEND": 1}
    a = check_switch_frame(again, sw).message
    assert again.dst_ports == w_port(2)
    assert a.flags == Flags.FROM_SWITCH | Flags.ERROR | Flags.RESEND
    assert (a.worker, a.aux, a.total) == (1, 600, 1000)
    # a mismatching retransmission of the failed round: counted, error re-sent
    before = sw.counters()
    (again,) = send(sw, grad(x[1], 1, total=600), 1)
    assert nonzero(sw, before) == {"CNT_RX_GRADIENT": 1, "CNT_DROP_MISMATCH": 1,
                                   "CNT_TX_RESEND": 1}
    # the next round of the slot copy starts clean
    outs: list[Egress] = []
    for w in range(3):
        outs += send(sw, grad(x[w], w, 0, 2, total=48), w)
    (res,) = outs
    m = parse(res).message
    assert not m.flags & Flags.ERROR and m.total == 48
    assert np.array_equal(m.elements(), ref_fp32(x))


def test_mismatch_after_completion_resends_the_result() -> None:
    """Async H=2: the round completed with 1000-element chunks; a 600-element one is refused
    and its sender gets the result, whose total (1000) tells it the lengths differ."""
    p = 16
    sw = make_switch(n=3, p=p, mode=1, threshold=2)
    x = [np.full(p, 0.5 * (i + 1), np.float32) for i in range(3)]
    send(sw, grad(x[0], 0, total=1000), 0)
    (res,) = send(sw, grad(x[1], 1, total=1000), 1)
    before = sw.counters()
    (rs,) = send(sw, grad(x[2], 2, total=600), 2)
    assert nonzero(sw, before) == {"CNT_RX_GRADIENT": 1, "CNT_DROP_MISMATCH": 1,
                                   "CNT_TX_RESEND": 1}
    m = parse(rs).message
    assert m.flags == Flags.FROM_SWITCH | Flags.RESEND and m.total == 1000
    assert m.payload == parse(res).message.payload


def test_leaf_relays_an_error_result_from_the_root() -> None:
    """Leaves of different tensor lengths: the root refuses the second partial sum and its
    ERROR RESULT reaches every member of both leaves, lengths and culprit intact."""
    p = 16
    root, leaves = make_tree(dtype=0, p=p)
    ups = []
    for leaf, total in zip(leaves, (1000, 600), strict=True):
        out: list[Egress] = []
        for j in range(LEAF_N):
            out += send(leaf, grad(np.full(p, 1.0 + j, np.float32), j, 0, 0, total=total), j)
        (up,) = out
        assert parse(up).message.total == total
        ups.append(up)
    assert root.process(ups[0].frame, LEAF_ON_ROOT[0]) == []
    (err,) = root.process(ups[1].frame, LEAF_ON_ROOT[1])
    assert root.read("CNT_DROP_MISMATCH") == 1
    em = parse(err).message
    assert em.flags & Flags.ERROR and (em.worker, em.aux, em.total) == (1, 600, 1000)
    for leaf in leaves:
        (down,) = leaf.process(err.frame, UPLINK)
        assert down.dst_ports == LEAF_PORTS
        dm = check_switch_frame(down, leaf).message
        assert dm.flags == Flags.FROM_SWITCH | Flags.ERROR
        assert (dm.worker, dm.aux, dm.total) == (1, 600, 1000)
        # a member retransmitting afterwards gets the error again
        (rs,) = send(leaf, grad(np.zeros(p, np.float32), 0, 0, 0, total=1000), 0)
        assert parse(rs).message.flags & Flags.ERROR


def test_order_of_addition_recomputes_the_fp32_sum() -> None:
    """RESULT aux lists the members in the order they were added: that order, and only
    that one in general, reproduces the fp32 sum bit for bit."""
    rng = np.random.default_rng(9)
    n, p = 5, 64
    sw = make_switch(n=n, p=p)
    data = [(rng.standard_normal(p) * 10.0 ** rng.integers(-6, 7, p)).astype(np.float32)
            for _ in range(n)]
    order = [3, 0, 4, 1, 2]
    outs: list[Egress] = []
    for w in order:
        outs += send(sw, grad(data[w], w), w)
    m = parse(outs[0]).message
    assert P.result_order(m.aux) == order and m.aux == P.result_aux(order)
    got = m.elements().view(np.uint32)
    assert np.array_equal(got, ref_fp32([data[w] for w in P.result_order(m.aux)]).view(np.uint32))
    assert not np.array_equal(got, ref_fp32(data).view(np.uint32))  # the order matters here
