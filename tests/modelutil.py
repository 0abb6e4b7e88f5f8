"""Shared helpers of the golden model tests (``tests/test_model_*.py``): a switch with a
member table, frames from the members, the reference fp32 sum and a two-level tree.

Every test file points this module's ``SwitchModel`` at the engine it runs on
(``engines.use_engine("modelutil", ...)``), so :func:`make_switch` builds that engine.
"""

from __future__ import annotations

import struct

import numpy as np

from hostdrv.switch.reference import Egress, SwitchModel
from hostdrv.wire import protocol as P
from hostdrv.wire.protocol import Flags, Frame, Message, Opcode

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
