"""Golden model: classification, checks, aggregation and registers.

Expected values are computed here from the inputs (numpy float32 sums in
arrival order, Python integer sums modulo 2**32) and from docs/protocol.md,
never copied from the model.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
from engines import ENGINES, use_engine

from hostdrv.switch.reference import Egress, SwitchModel, fp32_add, xorshift32
from hostdrv.wire import protocol as P
from hostdrv.wire import regmap
from hostdrv.wire.protocol import Flags, Frame, Message, Opcode


@pytest.fixture(autouse=True, params=ENGINES)
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs on the golden model and on the native engine."""
    return use_engine(__name__, request, monkeypatch)


JOB = 7
UDP = P.DEFAULT_UDP_PORT
SWITCH_IP = 0x0A000001
SWITCH_MAC = bytes.fromhex("02004e524c00")
MCAST_IP = 0xEF004E52
CANON_NAN = 0x7FC00000


def w_ip(i: int) -> int:
    return 0x0A000100 + i


def w_udp(i: int) -> int:
    return 40000 + i


def w_mac(i: int) -> bytes:
    return bytes([2, 0, 0, 0, 1, i])


def w_port(i: int) -> int:
    return 1 << i


def make_switch(n: int = 4, p: int = 32, slots: int = 4, *, dtype: int = 0, mode: int = 0,
                threshold: int = 0, staleness: int = 0, role: int = 1, **kw: int) -> SwitchModel:
    sw = SwitchModel(**kw)
    sw.write("JOB_ID", JOB)
    for i in range(n):
        sw.write(f"MEMBER_PORT_{i}", w_port(i))
        sw.write(f"MEMBER_IP_{i}", w_ip(i))
        sw.write(f"MEMBER_UDP_{i}", w_udp(i))
        sw.write(f"MEMBER_ROLE_{i}", role)
    sw.write("AGG_MEMBERS", n)
    sw.write("AGG_ELEMS", p)
    sw.write("AGG_SLOTS", slots)
    sw.write("AGG_DTYPE", dtype)
    sw.write("AGG_MODE", mode)
    if threshold:  # 1 .. N; 0: left at its reset value 0 (acts as 1)
        sw.write("AGG_THRESHOLD", threshold)
    sw.write("AGG_STALENESS", staleness)
    return sw


def frame_from(msg: Message, w: int, *, validate: bool = True, **over: object) -> bytes:
    kw: dict[str, object] = {"eth_src": w_mac(w), "ip_src": w_ip(w), "udp_src": w_udp(w)}
    kw.update(over)
    return P.build_frame(Frame(msg, **kw), validate=validate)  # type: ignore[arg-type]


def grad(values: np.ndarray, w: int, slot: int = 0, rnd: int = 0, version: int | None = None,
         total: int | None = None, **over: object) -> bytes:
    msg = P.gradient(values, job=JOB, worker=w, slot=slot, round_=rnd, version=version,
                     total=total)
    return frame_from(msg, w, **over)


def send(sw: SwitchModel, frame: bytes, w: int) -> list[Egress]:
    return sw.process(frame, w_port(w))


def parse(eg: Egress) -> Frame:
    udp_dst = struct.unpack_from("!H", eg.frame, 36)[0]
    return P.parse_frame(eg.frame, udp_port=udp_dst)


def check_switch_frame(eg: Egress, sw: SwitchModel) -> Frame:
    """Section 7 fields common to every frame the switch originates."""
    f = eg.frame
    assert f[12:14] == b"\x08\x00"
    assert f[6:12] == ((sw.read("SWITCH_MAC_HI") << 32) | sw.read("SWITCH_MAC_LO")).to_bytes(6, "big")
    ver_ihl, tos, tot, ident, frag, ttl, proto = struct.unpack_from("!BBHHHBB", f, 14)
    assert (ver_ihl, tos, tot, ident, frag, ttl, proto) == (0x45, 0, len(f) - 14, 0, 0x4000, 64, 17)
    assert P.ip_checksum(f[14:34]) == 0  # checksum over a header with a correct checksum
    assert struct.unpack_from("!I", f, 26)[0] == sw.read("SWITCH_IP")
    udp_src, _, udp_len, udp_ck = struct.unpack_from("!HHHH", f, 34)
    assert (udp_src, udp_len, udp_ck) == (sw.read("UDP_PORT"), len(f) - 34, 0)
    fr = parse(eg)
    assert fr.message.flags & Flags.FROM_SWITCH
    assert fr.message.job == sw.read("JOB_ID")
    return fr


def ref_fp32(chunks: list[np.ndarray]) -> np.ndarray:
    """Sum in arrival order, first stored as is, NaN results canonicalized."""
    acc = chunks[0].astype(np.float32).copy()
    for c in chunks[1:]:
        with np.errstate(all="ignore"):
            acc = (acc + c).astype(np.float32)
        bits = acc.view(np.uint32)
        bits[np.isnan(acc)] = CANON_NAN
    return acc


def nonzero(sw: SwitchModel, before: dict[str, int]) -> dict[str, int]:
    after = sw.counters()
    return {k: after[k] - before[k] for k in after if after[k] != before[k]}


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
# classification


@pytest.mark.parametrize("src", [1 << i for i in range(8)])
def test_passthrough(src: int) -> None:
    sw = make_switch()
    arp = bytes(6) + w_mac(1) + b"\x08\x06" + bytes(46)
    other_udp = bytearray(grad(np.zeros(32, np.float32), 0))
    other_udp[36:38] = (UDP + 1).to_bytes(2, "big")
    options = bytearray(grad(np.zeros(32, np.float32), 0))
    options[14] = 0x46
    tcp = bytearray(grad(np.zeros(32, np.float32), 0))
    tcp[23] = 6
    short = bytes(grad(np.zeros(32, np.float32), 0)[:41])
    frames = [arp, bytes(other_udp), bytes(options), bytes(tcp), short]
    for f in frames:
        out = sw.process(f, src)
        assert out == [Egress(f, 0x55 & ~src)]
    c = sw.counters()
    assert c["CNT_PASS"] == len(frames)
    assert sum(c.values()) == len(frames)


def test_udp_port_register_reclassifies() -> None:
    sw = make_switch(n=1, p=16)
    f = grad(np.ones(16, np.float32), 0, udp_dst=9999)
    assert send(sw, f, 0)[0].dst_ports == 0x55 & ~1
    sw.write("UDP_PORT", 9999)
    out = send(sw, f, 0)
    assert len(out) == 1 and parse(out[0]).message.opcode == Opcode.RESULT
    assert struct.unpack_from("!H", out[0].frame, 36)[0] == 9999  # multicast to UDP_PORT


def test_src_port_must_be_one_hot() -> None:
    sw = make_switch()
    for bad in (0, 3, 0x100, -1):
        with pytest.raises(ValueError, match="src_port"):
            sw.process(grad(np.zeros(32, np.float32), 0), bad)


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


# ---------------------------------------------------------------------------
# two-level aggregation

PARENT_IP = 0x0A0000FE
UPLINK = 1 << 6
LEAF_ON_ROOT = (1 << 0, 1 << 2)  # root ingress ports of leaf 0 and leaf 1
LEAF_N = 3  # members per leaf; the root has 2 (the leaves), so the counts differ
LEAF_PORTS = (1 << LEAF_N) - 1


def make_tree(dtype: int, p: int = 32) -> tuple[SwitchModel, list[SwitchModel]]:
    root = make_switch(n=2, p=p, slots=2, dtype=dtype)
    root.write("SWITCH_IP", PARENT_IP)
    leaves = []
    for k in range(2):
        leaf = make_switch(n=LEAF_N, p=p, slots=2, dtype=dtype)
        leaf.write("SWITCH_IP", 0x0A000010 + k)
        leaf.write("SWITCH_MAC_LO", 0x4E524C10 + k)
        leaf.write("AGG_ROLE", 1)
        leaf.write("AGG_UPLINK_PORT", UPLINK)
        leaf.write("AGG_PARENT_IP", PARENT_IP)
        leaf.write("AGG_LEAF_ID", k)
        root.write(f"MEMBER_PORT_{k}", LEAF_ON_ROOT[k])
        root.write(f"MEMBER_IP_{k}", 0x0A000010 + k)
        root.write(f"MEMBER_UDP_{k}", UDP)
        leaves.append(leaf)
    return root, leaves


def run_tree(root: SwitchModel, leaves: list[SwitchModel], data: list[list[np.ndarray]],
             slot: int, rnd: int) -> list[list[Egress]]:
    """Leaf k member j sends data[k][j]; returns each leaf's frames to its members."""
    ups = []
    for k, leaf in enumerate(leaves):
        out: list[Egress] = []
        for j, x in enumerate(data[k]):
            out += send(leaf, grad(x, j, slot, rnd), j)
        (up,) = out
        assert up.dst_ports == UPLINK
        fr = check_switch_frame(up, leaf)
        m = fr.message
        assert (m.opcode, m.worker, m.slot, m.seq, m.aux, m.count, m.total) == \
            (Opcode.GRADIENT, k, slot, rnd, rnd, len(x), len(x))
        assert (fr.eth_dst, fr.ip_dst, fr.udp_dst) == (b"\xff" * 6, PARENT_IP, UDP)
        ups.append(up)
    res: list[Egress] = []
    for k, up in enumerate(ups):
        res += root.process(up.frame, LEAF_ON_ROOT[k])
    (mc,) = res
    assert mc.dst_ports == LEAF_ON_ROOT[0] | LEAF_ON_ROOT[1]
    down = []
    for leaf in leaves:
        out = leaf.process(mc.frame, UPLINK)
        assert len(out) == 1 and out[0].dst_ports == LEAF_PORTS
        m = check_switch_frame(out[0], leaf).message
        # the root's aux: its two contributions (the leaves) in arrival order
        assert (m.opcode, m.seq, m.slot, P.result_order(m.aux)) == (Opcode.RESULT, rnd, slot, [0, 1])
        down.append(out)
    return down


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


# ---------------------------------------------------------------------------
# checks and drop reasons

P16 = 16


def base_msg(**changes: object) -> Message:
    msg = P.gradient(np.arange(P16, dtype=np.float32), job=JOB, worker=1, slot=1, round_=0)
    return P.with_fields(msg, **changes)


def fix_lengths(f: bytearray) -> bytes:
    f[16:18] = (len(f) - 14).to_bytes(2, "big")
    f[38:40] = (len(f) - 34).to_bytes(2, "big")
    return bytes(f)


def bad(reason: str) -> list[tuple[str, bytes, int]]:
    """(case name, frame, ingress port) failing only ``reason``."""
    ok = frame_from(base_msg(), 1)
    short = fix_lengths(bytearray(ok[:63]))
    ip_len = bytearray(ok)
    ip_len[17] ^= 1
    udp_len = bytearray(ok)
    udp_len[39] ^= 2
    oversize = bytearray(ok + bytes(65536 - len(ok)))
    oversize[16:18] = ((len(oversize) - 14) & 0xFFFF).to_bytes(2, "big")
    oversize[38:40] = ((len(oversize) - 34) & 0xFFFF).to_bytes(2, "big")
    oversize = bytes(oversize)
    cases = {
        "BAD_LENGTH": [
            ("short", short, 2), ("ip_len", bytes(ip_len), 2), ("udp_len", bytes(udp_len), 2),
            ("payload_short", frame_from(base_msg(payload=bytes(4 * P16 - 4)), 1, validate=False), 2),
            ("payload_long", frame_from(base_msg(payload=bytes(4 * P16 + 64)), 1, validate=False), 2),
            # longer than TUSER's 16-bit length: only a soft switch datagram can be
            ("oversize", oversize, 2),
        ],
        "BAD_HEADER": [
            ("version", frame_from(base_msg(version=2), 1, validate=False), 2),
            ("opcode0", frame_from(base_msg(opcode=0), 1, validate=False), 2),
            ("opcode8", frame_from(base_msg(opcode=8), 1, validate=False), 2),
            ("push_ack", frame_from(base_msg(opcode=Opcode.PUSH_ACK), 1, validate=False), 2),
            ("sample_resp", frame_from(base_msg(opcode=Opcode.SAMPLE_RESP), 1, validate=False), 2),
            ("flags", frame_from(base_msg(flags=P.FLAGS_MASK + 1), 1, validate=False), 2),
            ("flags_high", frame_from(base_msg(flags=0x80), 1, validate=False), 2),
        ],
        "BAD_JOB": [("job", frame_from(base_msg(job=JOB + 1), 1), 2)],
        "UNKNOWN_WORKER": [
            ("worker8", frame_from(base_msg(worker=8), 1, validate=False), 2),
            ("worker_ge_n", frame_from(base_msg(worker=4), 1), 2),
            ("worker_300", frame_from(base_msg(worker=300), 1, validate=False), 2),
            ("role", frame_from(base_msg(worker=3), 3), 8),  # role cleared below
        ],
        "SPOOFED": [
            ("port", ok, 4), ("ip", frame_from(base_msg(), 1, ip_src=w_ip(2)), 2),
            ("udp", frame_from(base_msg(), 1, udp_src=w_udp(2)), 2),
        ],
        "BAD_COUNT": [
            ("count", frame_from(P.gradient(np.arange(32, dtype=np.float32), job=JOB,
                                            worker=1, slot=1, round_=0), 1), 2),
            ("count0", frame_from(base_msg(count=0, payload=b""), 1, validate=False), 2),
            ("total0", frame_from(base_msg(total=0), 1, validate=False), 2),
        ],
        "BAD_DTYPE": [("int32", frame_from(base_msg(flags=int(Flags.INT32)), 1), 2)],
        "BAD_SLOT": [("slot", frame_from(base_msg(slot=2), 1), 2)],
        # AGG_EPOCH 0: rounds 2**25 .. 2**31 - 1 are too far ahead
        "AHEAD": [("ahead", frame_from(base_msg(seq=1 << 25, aux=1 << 25), 1), 2),
                  ("far_ahead", frame_from(base_msg(seq=(1 << 31) - 1), 1), 2)],
    }
    return cases[reason]


REASONS = ["BAD_LENGTH", "BAD_HEADER", "BAD_JOB", "UNKNOWN_WORKER", "SPOOFED", "BAD_COUNT",
           "BAD_DTYPE", "BAD_SLOT", "AHEAD"]


def drop_switch() -> SwitchModel:
    sw = make_switch(n=4, p=P16, slots=2)
    sw.write("MEMBER_ROLE_3", 0b110)
    return sw


@pytest.mark.parametrize("reason", REASONS)
def test_drop_reason(reason: str) -> None:
    for name, f, port in bad(reason):
        sw = drop_switch()
        assert sw.process(f, port) == [], name
        rx = {"CNT_RX_GRADIENT": 1} if len(f) >= 44 and f[43] == Opcode.GRADIENT else {}
        assert nonzero(sw, dict.fromkeys(regmap.COUNTERS, 0)) == \
            {**rx, f"CNT_DROP_{reason}": 1}, name
        # nothing of the dropped packet stayed: a full round completes with the right sum
        xs = [np.full(P16, 0.5 + i, np.float32) for i in range(4)]
        for i in range(3):
            assert send(sw, frame_from(base_msg(worker=i, payload=xs[i].tobytes()), i), i) == []
        sw.write("MEMBER_ROLE_3", 1)  # member table writes leave the slots alone
        out = send(sw, frame_from(base_msg(worker=3, payload=xs[3].tobytes()), 3), 3)
        assert np.array_equal(parse(out[0]).message.elements(), ref_fp32(xs)), name


def test_disabled() -> None:
    sw = drop_switch()
    sw.write("CTRL", 0b10)
    before = sw.counters()
    assert sw.process(frame_from(base_msg(), 1), 2) == []
    assert nonzero(sw, before) == {"CNT_RX_GRADIENT": 1, "CNT_DROP_DISABLED": 1}
    assert sw.read("CTRL") == 0b10


def test_member_udp_zero_accepts_any_port() -> None:
    sw = drop_switch()
    sw.write("MEMBER_UDP_1", 0)
    assert sw.process(frame_from(base_msg(), 1, udp_src=1234), 2) == []
    assert sum(v for k, v in sw.counters().items() if k.startswith("CNT_DROP")) == 0


def test_check_order() -> None:
    """A frame failing two checks is counted under the earlier one (section 6)."""
    order = ["BAD_LENGTH", "BAD_HEADER", "BAD_JOB", "DISABLED", "UNKNOWN_WORKER", "SPOOFED",
             "BAD_COUNT", "BAD_LENGTH", "BAD_DTYPE", "BAD_SLOT", "AHEAD"]

    def msg_and_frame(fails: set[int]) -> tuple[bytes, int, bool]:
        ch: dict[str, object] = {}
        over: dict[str, object] = {}
        port, disabled = 2, False
        if 1 in fails:
            ch["version"] = 2
        if 2 in fails:
            ch["job"] = JOB + 1
        if 3 in fails:
            disabled = True
        if 4 in fails:
            ch["worker"] = 5
        if 5 in fails:
            over["ip_src"] = 99
        if 6 in fails:
            ch["count"] = 32  # the payload stays 16 elements: count is checked first
        if 7 in fails:
            ch["payload"] = bytes(4 * P16 + 4)
        if 8 in fails:
            ch["flags"] = int(Flags.INT32)
        if 9 in fails:
            ch["slot"] = 5
        if 10 in fails:
            ch["seq"] = 1 << 25
        f = bytearray(frame_from(base_msg(**ch), 1, validate=False, **over))
        if 0 in fails:
            f[17] ^= 1
        return bytes(f), port, disabled

    for i in range(len(order)):
        for j in range(i + 1, len(order)):
            f, port, disabled = msg_and_frame({i, j})
            sw = drop_switch()
            if disabled:
                sw.write("CTRL", 0b10)
            assert sw.process(f, port) == []
            drops = {k: v for k, v in sw.counters().items() if k.startswith("CNT_DROP") and v}
            assert drops == {f"CNT_DROP_{order[i]}": 1}, (order[i], order[j])


def test_rx_counted_before_checks() -> None:
    sw = drop_switch()
    f = frame_from(base_msg(), 1)
    sw.process(f[:44], 2)  # opcode byte present, too short
    sw.process(f[:43], 2)  # no opcode byte: no RX count
    c = sw.counters()
    assert c["CNT_RX_GRADIENT"] == 1 and c["CNT_DROP_BAD_LENGTH"] == 2
    res = frame_from(P.result(np.zeros(P16, np.float32), job=JOB, slot=0, round_=0,
                              contributors=1), 1)
    sw.process(res, 2)
    c = sw.counters()
    assert c["CNT_RX_RESULT"] == 1 and c["CNT_DROP_SPOOFED"] == 1


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
    ({"record_bytes": 4096}, "record_bytes"), ({"max_slots": 0}, "max_slots"),
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
