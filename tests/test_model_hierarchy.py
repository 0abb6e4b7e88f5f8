"""Golden model: two-level aggregation (a leaf's partial sums to its root).

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
    PARENT_IP,
    UDP,
    UPLINK,
    grad,
    make_switch,
    make_tree,
    nonzero,
    parse,
    ref_fp32,
    run_tree,
    send,
)

from hostdrv.switch.reference import Egress
from hostdrv.wire import protocol as P
from hostdrv.wire.protocol import Flags


@pytest.fixture(autouse=True, params=ENGINES)
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs on the golden model and on the native engine."""
    return use_engine("modelutil", request, monkeypatch)  # make_switch lives there


# ---------------------------------------------------------------------------
# two-level aggregation



def test_two_level_int32_equals_flat() -> None:
    rng = np.random.default_rng(3)
    p = 32
    root, leaves = make_tree(dtype=1, p=p)
    flat = make_switch(n=2 * LEAF_N, p=p, dtype=1)
    for rnd in range(3):
        data = [[rng.integers(-(2 ** 31), 2 ** 31, p, dtype=np.int64).astype(np.int32)
                 for _ in range(LEAF_N)] for _ in range(2)]
        down = run_tree(root, leaves, data, rnd % 2, rnd)
        fout: list[Egress] = []
        for i, x in enumerate(data[0] + data[1]):
            fout += send(flat, grad(x, i, rnd % 2, rnd), i)
        want = parse(fout[0]).message.payload
        for out in down:
            assert parse(out[0]).message.payload == want


def test_two_level_fp32_order() -> None:
    rng = np.random.default_rng(4)
    p = 32
    root, leaves = make_tree(dtype=0, p=p)
    data = [[rng.standard_normal(p).astype(np.float32) for _ in range(LEAF_N)] for _ in range(2)]
    down = run_tree(root, leaves, data, 1, 0)
    want = ref_fp32([ref_fp32(data[0]), ref_fp32(data[1])])
    for out in down:
        assert np.array_equal(parse(out[0]).message.elements().view(np.uint32),
                              want.view(np.uint32))
    for leaf in leaves:
        c = leaf.counters()
        assert (c["CNT_TX_UP"], c["CNT_RX_RESULT"], c["CNT_TX_RESULT"]) == (1, 1, 1)


def test_leaf_recovery_paths() -> None:
    p = 16
    root, leaves = make_tree(dtype=0, p=p)
    leaf = leaves[0]
    x = [np.full(p, 1.25, np.float32), np.full(p, 2.5, np.float32), np.full(p, -1.0, np.float32)]
    send(leaf, grad(x[0], 0), 0)
    send(leaf, grad(x[2], 2), 2)
    (up,) = send(leaf, grad(x[1], 1), 1)
    assert parse(up).message.elements().tolist() == ref_fp32([x[0], x[2], x[1]]).tolist()
    # duplicate from a contributor while UP: the partial goes up again
    before = leaf.counters()
    (up2,) = send(leaf, grad(x[1], 1), 1)
    assert nonzero(leaf, before) == {"CNT_RX_GRADIENT": 1, "CNT_DROP_DUPLICATE": 1, "CNT_TX_UP": 1}
    assert up2 == up
    # the root has both leaves' partials; its result reaches leaf 0
    root.process(up.frame, LEAF_ON_ROOT[0])
    assert root.process(up2.frame, LEAF_ON_ROOT[0]) == []  # duplicate at the root, still OPEN
    assert root.read("CNT_DROP_DUPLICATE") == 1
    for j in range(LEAF_N - 1):
        send(leaves[1], grad(np.full(p, 4.0, np.float32), j), j)
    (up_b,) = send(leaves[1], grad(np.full(p, 4.0, np.float32), LEAF_N - 1), LEAF_N - 1)
    (mc,) = root.process(up_b.frame, LEAF_ON_ROOT[1])
    # leaf 0 "lost" the multicast: a member retransmits, the leaf re-sends up,
    # the root re-sends the result to leaf 0 alone, and leaf 0 relays it
    (up3,) = send(leaf, grad(x[0], 0), 0)
    (rs,) = root.process(up3.frame, LEAF_ON_ROOT[0])
    assert rs.dst_ports == LEAF_ON_ROOT[0] and rs.frame[44] & Flags.RESEND
    assert parse(rs).udp_dst == UDP and parse(rs).ip_dst == 0x0A000010
    (relay,) = leaf.process(rs.frame, UPLINK)
    m = parse(relay).message
    assert relay.dst_ports == LEAF_PORTS and not m.flags & Flags.RESEND
    assert m.aux == parse(rs).message.aux and P.result_order(m.aux) == [0, 1]
    assert m.payload == parse(mc).message.payload
    # the multicast arriving late: DUPLICATE
    before = leaf.counters()
    assert leaf.process(mc.frame, UPLINK) == []
    assert nonzero(leaf, before) == {"CNT_RX_RESULT": 1, "CNT_DROP_DUPLICATE": 1}
    # a result for another round: STALE
    other_round = bytearray(mc.frame)
    other_round[50:54] = (2).to_bytes(4, "big")
    assert leaf.process(bytes(other_round), UPLINK) == []
    assert leaf.read("CNT_DROP_STALE") == 1
    # after DONE, members get the relayed result re-sent with the parent's count
    (again,) = send(leaf, grad(x[0], 0), 0)
    assert again.dst_ports == 1 and parse(again).message.aux == m.aux
    assert parse(again).message.payload == m.payload
    # RESULT at a root, on a wrong port or from a wrong address: SPOOFED
    assert root.process(mc.frame, LEAF_ON_ROOT[0]) == []
    assert root.read("CNT_DROP_SPOOFED") == 1
    assert leaves[1].process(mc.frame, 1) == []
    wrong_src = bytearray(mc.frame)
    wrong_src[26:30] = (PARENT_IP + 1).to_bytes(4, "big")
    assert leaves[1].process(bytes(wrong_src), UPLINK) == []
    assert leaves[1].read("CNT_DROP_SPOOFED") == 2


def test_async_leaf_late_member_while_up() -> None:
    p = 16
    root, leaves = make_tree(dtype=0, p=p)
    leaf = leaves[0]
    leaf.write("AGG_MODE", 1)
    leaf.write("AGG_THRESHOLD", 1)
    (up,) = send(leaf, grad(np.ones(p, np.float32), 0), 0)
    before = leaf.counters()
    assert send(leaf, grad(np.ones(p, np.float32), 1), 1) == []
    assert nonzero(leaf, before) == {"CNT_RX_GRADIENT": 1, "CNT_DROP_LATE": 1}
