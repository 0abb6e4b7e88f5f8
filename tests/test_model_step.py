"""Golden model: step identity in sync mode and the far-ahead bound (issue 19, parts 1-2).

docs/protocol.md section 4 (GRADIENT processing, steps 3-4: a sync GRADIENT's ``aux`` is
its call's step id, and a round whose contributions name different steps is an error for
everyone, never a sum; a leaf's upward ``aux`` is the copy's step) and section 6 (check 11,
``AHEAD``: a GRADIENT whose round is ``AGG_AHEAD_ROUNDS`` or more ahead of ``AGG_EPOCH``).
Every test runs on the golden model and on the native engine; expected values are computed
here from the inputs and the documents.
"""

from __future__ import annotations

import numpy as np
import pytest
from engines import ENGINES, use_engine
from modelutil import (
    JOB,
    LEAF_N,
    LEAF_ON_ROOT,
    LEAF_PORTS,
    PARENT_IP,
    UPLINK,
    check_switch_frame,
    grad,
    make_switch,
    make_tree,
    nonzero,
    parse,
    ref_fp32,
    send,
    w_ip,
    w_mac,
    w_port,
    w_udp,
)

from hostdrv.switch.reference import Egress, SwitchModel
from hostdrv.wire import protocol as P
from hostdrv.wire import regmap
from hostdrv.wire.consts import AGG_AHEAD_ROUNDS, EPOCH_ROUNDS
from hostdrv.wire.protocol import Flags, Opcode


@pytest.fixture(autouse=True, params=ENGINES)
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs on the golden model and on the native engine."""
    use_engine("modelutil", request, monkeypatch)  # make_switch lives there
    return use_engine(__name__, request, monkeypatch)


P16 = 16
M32 = 0xFFFFFFFF


def step_grad(x: np.ndarray, w: int, step: int, slot: int = 0, rnd: int = 0,
              total: int = 1000) -> bytes:
    """A sync GRADIENT of call ``step`` (the step id travels in ``aux``)."""
    return grad(x, w, slot, rnd, version=step, total=total)


def ones(v: float, dtype: int = 0) -> np.ndarray:
    return np.full(P16, v, np.int32 if dtype else np.float32)


def parent_result(rnd: int) -> bytes:
    """The parent's RESULT for slot 0, round ``rnd``, as a leaf of make_tree receives it."""
    msg = P.result(ones(0.0), job=JOB, slot=0, round_=rnd, contributors=1,
                   flags=int(Flags.FROM_SWITCH), total=1000)
    return P.build_frame(P.Frame(msg, eth_src=b"\x02\x00\x0a\x00\x00\xfe", ip_src=PARENT_IP,
                                 udp_src=P.DEFAULT_UDP_PORT))


# ---------------------------------------------------------------------------
# step mismatch (section 4 step 4)


@pytest.mark.parametrize("dtype", [0, 1])
def test_step_mismatch_on_an_open_copy_fails_the_round_for_everyone(dtype: int) -> None:
    """Worker 1 sends a chunk of step 8 into a round opened by step 7: never added, an ERROR
    RESULT with aux = total (a step mismatch) to every member; the copy is an error copy."""
    sw = make_switch(n=3, p=P16, dtype=dtype)
    x = [ones(1.0 + i, dtype) for i in range(3)]
    assert send(sw, step_grad(x[0], 0, 7), 0) == []
    before = sw.counters()
    (err,) = send(sw, step_grad(x[1], 1, 8), 1)
    assert nonzero(sw, before) == {"CNT_RX_GRADIENT": 1, "CNT_DROP_MISMATCH": 1,
                                   "CNT_TX_RESULT": 1}
    assert err.dst_ports == 0b111
    m = check_switch_frame(err, sw).message
    assert m.flags == Flags.FROM_SWITCH | Flags.ERROR | (Flags.INT32 if dtype else 0)
    assert (m.opcode, m.worker, m.seq, m.aux, m.total) == (Opcode.RESULT, 1, 0, 1000, 1000)
    assert m.payload == x[0].tobytes()  # the partial accumulator, never x[1]
    # the third member, of step 7: the round failed, the error re-sent to it alone (LATE)
    before = sw.counters()
    (again,) = send(sw, step_grad(x[2], 2, 7), 2)
    assert nonzero(sw, before) == {"CNT_RX_GRADIENT": 1, "CNT_DROP_LATE": 1, "CNT_TX_RESEND": 1}
    a = check_switch_frame(again, sw).message
    assert again.dst_ports == w_port(2)
    assert a.flags == m.flags | Flags.RESEND and (a.worker, a.aux, a.total) == (1, 1000, 1000)
    # the culprit again (a step mismatch on an error copy): re-sent as it is
    before = sw.counters()
    (rs,) = send(sw, step_grad(x[1], 1, 8), 1)
    assert nonzero(sw, before) == {"CNT_RX_GRADIENT": 1, "CNT_DROP_MISMATCH": 1,
                                   "CNT_TX_RESEND": 1}
    assert rs.frame[42:] == again.frame[42:]
    # the next round of the copy opens clean, with its own step id
    outs: list[Egress] = []
    for w in range(3):
        outs += send(sw, step_grad(x[w], w, 9, rnd=2), w)
    (res,) = outs
    r = parse(res).message
    assert not r.flags & Flags.ERROR and r.aux == P.result_aux([0, 1, 2])


def test_length_mismatch_is_checked_before_the_step() -> None:
    """A chunk of another length and another step is a length mismatch: aux = its length."""
    sw = make_switch(n=2, p=P16)
    send(sw, step_grad(ones(1.0), 0, 7), 0)
    (err,) = send(sw, step_grad(ones(2.0), 1, 8, total=600), 1)
    m = parse(err).message
    assert m.flags & Flags.ERROR and (m.worker, m.aux, m.total) == (1, 600, 1000)
    assert sw.read("CNT_DROP_MISMATCH") == 1


@pytest.mark.parametrize("dtype", [0, 1])
def test_step_mismatch_on_a_done_copy_answers_with_a_forced_error(dtype: int) -> None:
    """The round completed for step 5; a chunk of step 6 for it gets the result re-sent with
    ERROR forced on, worker = its sender, aux = total; the copy keeps its real result."""
    sw = make_switch(n=2, p=P16, dtype=dtype)
    x = [ones(0.5 * (i + 1), dtype) for i in range(2)]
    send(sw, step_grad(x[0], 0, 5, slot=1, rnd=3), 0)
    (res,) = send(sw, step_grad(x[1], 1, 5, slot=1, rnd=3), 1)
    rm = parse(res).message
    assert not rm.flags & Flags.ERROR and P.result_order(rm.aux) == [0, 1]
    before = sw.counters()
    (rs,) = send(sw, step_grad(ones(9.0, dtype), 0, 6, slot=1, rnd=3), 0)
    assert nonzero(sw, before) == {"CNT_RX_GRADIENT": 1, "CNT_DROP_MISMATCH": 1,
                                   "CNT_TX_RESEND": 1}
    assert rs.dst_ports == w_port(0)
    fr = check_switch_frame(rs, sw)
    assert (fr.eth_dst, fr.ip_dst, fr.udp_dst) == (w_mac(0), w_ip(0), w_udp(0))
    m = fr.message
    want_flags = Flags.FROM_SWITCH | Flags.RESEND | Flags.ERROR | (Flags.INT32 if dtype else 0)
    assert m.flags == want_flags
    assert (m.opcode, m.worker, m.slot, m.seq, m.count, m.aux, m.total) == \
        (Opcode.RESULT, 0, 1, 3, P16, 1000, 1000)
    assert m.payload == rm.payload  # the accumulator
    # the copy is unchanged: the other member's retransmission gets the real result
    before = sw.counters()
    (ok,) = send(sw, step_grad(x[1], 1, 5, slot=1, rnd=3), 1)
    assert nonzero(sw, before) == {"CNT_RX_GRADIENT": 1, "CNT_DROP_DUPLICATE": 1,
                                   "CNT_TX_RESEND": 1}
    om = parse(ok).message
    assert om.flags == rm.flags | Flags.RESEND and om.aux == rm.aux and om.payload == rm.payload


def test_a_straggler_of_another_step_is_never_summed() -> None:
    """Issue 19's straggler: members one step apart on the same rounds. Every round they
    share is an error for both, never a sum mixing two steps."""
    sw = make_switch(n=2, p=P16, dtype=1)
    for rnd in range(6):
        outs: list[Egress] = []
        outs += send(sw, step_grad(np.full(P16, 1000 * (rnd + 1), np.int32), 0, rnd + 1,
                                   rnd=rnd), 0)
        outs += send(sw, step_grad(np.full(P16, 1000 * (rnd + 2) + 1, np.int32), 1, rnd + 2,
                                   rnd=rnd), 1)
        (err,) = outs
        m = parse(err).message
        assert m.flags & Flags.ERROR and m.aux == m.total
    assert sw.read("CNT_TX_RESULT") == 6 and sw.read("CNT_DROP_MISMATCH") == 6


def test_async_mode_does_not_check_steps() -> None:
    """In async mode aux is the weight version: members of different versions are summed."""
    sw = make_switch(n=3, p=P16, mode=1, threshold=3, staleness=5)
    x = [ones(1.0 + i) for i in range(3)]
    outs: list[Egress] = []
    for w, version in enumerate((10, 8, 7)):
        outs += send(sw, grad(x[w], w, 0, 10, version=version, total=1000), w)
    (res,) = outs
    assert not parse(res).message.flags & Flags.ERROR
    assert np.array_equal(parse(res).message.elements(), ref_fp32(x))
    assert sw.read("CNT_DROP_MISMATCH") == 0


# ---------------------------------------------------------------------------
# hierarchy: the leaf's upward aux is the step (sync), the root checks it across leaves


def test_leaf_sends_the_step_up_in_sync_mode() -> None:
    root, leaves = make_tree(dtype=0, p=P16)
    leaf = leaves[0]
    out: list[Egress] = []
    for j in range(LEAF_N):
        out += send(leaf, step_grad(ones(1.0 + j), j, 0x1234_5678, slot=1, rnd=41), j)
    (up,) = out
    m = check_switch_frame(up, leaf).message
    assert (m.opcode, m.worker, m.slot, m.seq, m.aux, m.total) == \
        (Opcode.GRADIENT, 0, 1, 41, 0x1234_5678, 1000)


def test_async_leaf_sends_the_round_up() -> None:
    _, leaves = make_tree(dtype=0, p=P16)
    leaf = leaves[1]
    leaf.write("AGG_MODE", 1)
    leaf.write("AGG_THRESHOLD", 2)
    leaf.write("AGG_STALENESS", 3)
    send(leaf, grad(ones(1.0), 0, 0, 20, version=19), 0)
    (up,) = send(leaf, grad(ones(2.0), 1, 0, 20, version=18), 1)
    m = parse(up).message
    assert (m.opcode, m.worker, m.seq, m.aux) == (Opcode.GRADIENT, 1, 20, 20)


def test_root_checks_steps_across_leaves() -> None:
    """Leaf 0's members are at step 4, leaf 1's at step 5: the root refuses leaf 1's partial
    sum and its ERROR RESULT (aux = total) reaches every member of both leaves."""
    root, leaves = make_tree(dtype=0, p=P16)
    ups = []
    for k, (leaf, step) in enumerate(zip(leaves, (4, 5), strict=True)):
        out: list[Egress] = []
        for j in range(LEAF_N):
            out += send(leaf, step_grad(ones(1.0 + j + k), j, step, rnd=2), j)
        (up,) = out
        assert parse(up).message.aux == step
        ups.append(up)
    assert root.process(ups[0].frame, LEAF_ON_ROOT[0]) == []
    before = root.counters()
    (err,) = root.process(ups[1].frame, LEAF_ON_ROOT[1])
    assert nonzero(root, before) == {"CNT_RX_GRADIENT": 1, "CNT_DROP_MISMATCH": 1,
                                     "CNT_TX_RESULT": 1}
    em = parse(err).message
    assert em.flags & Flags.ERROR and (em.worker, em.seq, em.aux, em.total) == (1, 2, 1000, 1000)
    assert em.payload == parse(ups[0]).message.payload
    for leaf in leaves:
        (down,) = leaf.process(err.frame, UPLINK)
        assert down.dst_ports == LEAF_PORTS
        dm = check_switch_frame(down, leaf).message
        assert dm.flags == Flags.FROM_SWITCH | Flags.ERROR
        assert (dm.worker, dm.aux, dm.total) == (1, 1000, 1000)
    # leaf 1 sends its partial sum again (a member's retransmission while it is UP): the
    # root's error copy answers as it is
    (rs,) = root.process(ups[1].frame, LEAF_ON_ROOT[1])
    assert parse(rs).message.flags == Flags.FROM_SWITCH | Flags.ERROR | Flags.RESEND


def test_root_done_copy_answers_a_leaf_of_another_step() -> None:
    """The root's round completed for step 4 with both leaves; a partial sum of step 5 from
    leaf 0 (its members moved on to the next call on the same round) gets the forced error."""
    root, leaves = make_tree(dtype=1, p=P16)
    ups = []
    for leaf in leaves:
        out: list[Egress] = []
        for j in range(LEAF_N):
            out += send(leaf, step_grad(ones(j + 1, 1), j, 4, rnd=0), j)
        ups += out
    root.process(ups[0].frame, LEAF_ON_ROOT[0])
    (res,) = root.process(ups[1].frame, LEAF_ON_ROOT[1])
    other = bytearray(ups[0].frame)
    other[56:60] = (5).to_bytes(4, "big")  # the same partial sum, step 5
    (rs,) = root.process(bytes(other), LEAF_ON_ROOT[0])
    m = parse(rs).message
    assert rs.dst_ports == LEAF_ON_ROOT[0]
    assert m.flags == Flags.FROM_SWITCH | Flags.RESEND | Flags.ERROR | Flags.INT32
    assert (m.worker, m.aux, m.total) == (0, 1000, 1000)
    assert m.payload == parse(res).message.payload


def test_step_mismatch_at_a_leaf_while_up() -> None:
    """A leaf waiting for its parent (UP) refuses a member of another step: the copy becomes
    an error copy, its members get the ERROR RESULT; the parent's late RESULT is a DUPLICATE."""
    root, leaves = make_tree(dtype=0, p=P16)
    leaf = leaves[0]
    out: list[Egress] = []
    for j in range(LEAF_N):
        out += send(leaf, step_grad(ones(1.0 + j), j, 3), j)
    (up,) = out
    before = leaf.counters()
    (err,) = send(leaf, step_grad(ones(7.0), 2, 4), 2)
    assert nonzero(leaf, before) == {"CNT_RX_GRADIENT": 1, "CNT_DROP_MISMATCH": 1,
                                     "CNT_TX_RESULT": 1}
    assert err.dst_ports == LEAF_PORTS
    m = check_switch_frame(err, leaf).message
    assert m.flags == Flags.FROM_SWITCH | Flags.ERROR
    assert (m.worker, m.aux, m.total) == (2, 1000, 1000)
    assert m.payload == parse(up).message.payload
    # the parent's RESULT for the round arrives later: the copy is already DONE
    frame = parent_result(0)
    before = leaf.counters()
    assert leaf.process(frame, UPLINK) == []
    assert nonzero(leaf, before) == {"CNT_RX_RESULT": 1, "CNT_DROP_DUPLICATE": 1}


# ---------------------------------------------------------------------------
# the far-ahead bound (section 6, check 11)


def ahead_switch(epoch: int, mode: int = 0) -> SwitchModel:
    sw = make_switch(n=2, p=P16, mode=mode, threshold=2)
    sw.write("AGG_EPOCH", epoch)
    return sw


@pytest.mark.parametrize("epoch", [0, 3 * EPOCH_ROUNDS, 0xFF000000])
@pytest.mark.parametrize("mode", [0, 1])
def test_far_ahead_rounds_are_dropped(epoch: int, mode: int) -> None:
    """(seq - AGG_EPOCH) mod 2**32 in [2**25, 2**31): dropped as AHEAD before anything
    else of section 4; 2**25 - 1 ahead and every round behind are processed."""
    assert AGG_AHEAD_ROUNDS == 2 * EPOCH_ROUNDS
    for d in (AGG_AHEAD_ROUNDS, AGG_AHEAD_ROUNDS + 1, 1 << 28, (1 << 31) - 1):
        sw = ahead_switch(epoch, mode)
        rnd = (epoch + d) & M32
        before = sw.counters()
        assert send(sw, grad(ones(1.0), 0, 0, rnd, version=rnd), 0) == []
        assert nonzero(sw, before) == {"CNT_RX_GRADIENT": 1, "CNT_DROP_AHEAD": 1}, d
        # nothing stayed: the slot copy is free for an ordinary round
        outs = send(sw, grad(ones(1.0), 0, 0, epoch + 1, version=epoch + 1), 0)
        outs += send(sw, grad(ones(2.0), 1, 0, epoch + 1, version=epoch + 1), 1)
        (res,) = outs
        assert P.result_order(parse(res).message.aux) == [0, 1]
    for d in (0, 1, AGG_AHEAD_ROUNDS - 1, 1 << 31, M32, M32 - (1 << 28)):
        sw = ahead_switch(epoch, mode)
        rnd = (epoch + d) & M32
        outs = send(sw, grad(ones(1.0), 0, 1, rnd, version=rnd), 0)
        outs += send(sw, grad(ones(2.0), 1, 1, rnd, version=rnd), 1)
        (res,) = outs
        assert parse(res).message.seq == rnd and sw.read("CNT_DROP_AHEAD") == 0, d


def test_a_far_ahead_gradient_no_longer_poisons_a_copy() -> None:
    """Issue 19's part 2: a GRADIENT of zeros 2**28 rounds ahead used to open the copy of a
    round the job would reach later, so that round's real contribution counted DUPLICATE."""
    sw = make_switch(n=2, p=P16)
    far = 1 << 28
    assert send(sw, grad(np.zeros(P16, np.float32), 0, 0, far), 0) == []
    assert sw.read("CNT_DROP_AHEAD") == 1
    # the job reaches that round (its epoch is written as the members cross blocks)
    sw.write("AGG_EPOCH", far & ~(EPOCH_ROUNDS - 1))
    x = [ones(17.0), ones(34.0)]
    outs = send(sw, grad(x[0], 0, 0, far), 0) + send(sw, grad(x[1], 1, 0, far), 1)
    (res,) = outs
    assert np.array_equal(parse(res).message.elements(), ref_fp32(x))


def test_ahead_is_checked_after_bad_slot_and_before_stale() -> None:
    sw = ahead_switch(0, mode=1)
    sw.write("AGG_SLOTS", 1)
    sw.write("AGG_STALENESS", 0)
    rnd = AGG_AHEAD_ROUNDS
    assert send(sw, grad(ones(1.0), 0, 1, rnd, version=rnd), 0) == []  # slot 1 of 1
    assert send(sw, grad(ones(1.0), 0, 0, rnd, version=0), 0) == []  # also too stale
    drops = {k: v for k, v in sw.counters().items() if k.startswith("CNT_DROP") and v}
    assert drops == {"CNT_DROP_BAD_SLOT": 1, "CNT_DROP_AHEAD": 1}


def test_results_are_not_bounded() -> None:
    """A leaf's RESULT far ahead is processed as before (STALE: no copy holds it)."""
    _, leaves = make_tree(dtype=0, p=P16)
    leaf = leaves[0]
    frame = parent_result(AGG_AHEAD_ROUNDS)
    assert leaf.process(frame, UPLINK) == []
    drops = {k: v for k, v in leaf.counters().items() if k.startswith("CNT_DROP") and v}
    assert drops == {"CNT_DROP_STALE": 1}


def test_the_ahead_counter_is_in_the_map() -> None:
    r = regmap.REGISTERS["CNT_DROP_AHEAD"]
    assert r.access == "rc" and "CNT_DROP_AHEAD" in regmap.COUNTERS
    sw = make_switch(n=1, p=P16)
    send(sw, grad(ones(1.0), 0, 0, AGG_AHEAD_ROUNDS), 0)
    assert sw.read(r.addr) == 1
    sw.write("CTRL", 0x80000003)
    assert sw.read("CNT_DROP_AHEAD") == 0
