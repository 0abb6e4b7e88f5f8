"""The mixed-traffic scenario shared by the switch testbench and the RTL-in-the-loop tests.

The member table, the register writes that configure the switch (the epoch
mailbox included), member frames, gradient chunks of a tensor of ``TENSOR``
elements, a round that fails on a tensor length mismatch, frames of every
length below 64 bytes, ordinary L2 traffic, the aggregation engine's and the
replay engine's traffic (:func:`agg_frames`, :func:`rpl_frames`), and a random
merge of frame streams that keeps each stream's order. ``sim/nrl_switch/test_nrl_switch.py`` (cocotb) and
``tests/test_rtlsim.py`` (Verilator via ``hostdrv.switch.rtl``) build their
traffic from these and compare the RTL with ``hostdrv.switch.reference``.
"""

from __future__ import annotations

import random

import numpy as np

from hostdrv.wire import protocol as proto

JOB = 7
ELEMS = 16
SLOTS = 2
TENSOR = 40
"""Elements of the tensor the workers reduce: ``total`` (word 60) of every GRADIENT."""
EPOCH = 0x03000000
"""AGG_EPOCH the scenario writes (its rounds 0, 1, 2 are behind it: processed as ever; the
far-ahead bound drops only rounds 2**25 .. 2**31 - 1 ahead of it)."""
SWITCH_MAC = bytes.fromhex("024e524c0001")

# SUME one-hot ports: MAC ports on even bits, DMA on odd bits
PORT_MAC = (0x01, 0x04, 0x10, 0x40)
PORT_DMA0 = 0x02

# member table: (port, IPv4, UDP source port, role)
WORKERS = [(PORT_MAC[i], 0x0A000002 + i, 40000 + i, 1) for i in range(3)]
ACTOR = (PORT_MAC[3], 0x0A00000A, 40010, 2)
LEARNER = (PORT_DMA0, 0x0A000010, 40016, 4)
MEMBERS = [*WORKERS, ACTOR, LEARNER]
ACTOR_ID, LEARNER_ID = 3, 4


def config_writes() -> list[tuple[str, int]]:
    """Register writes that set up the job, the members and the replay seed."""
    w: list[tuple[str, int]] = [
        ("SWITCH_MAC_HI", int.from_bytes(SWITCH_MAC[:2], "big")),
        ("SWITCH_MAC_LO", int.from_bytes(SWITCH_MAC[2:], "big")),
        ("JOB_ID", JOB),
        ("AGG_MEMBERS", len(WORKERS)),
        ("AGG_ELEMS", ELEMS),
        ("AGG_SLOTS", SLOTS),
        ("AGG_EPOCH", EPOCH),
        ("RPL_SEED", 0x1234567),
    ]
    for i, (port, ip, udp, role) in enumerate(MEMBERS):
        w += [(f"MEMBER_PORT_{i}", port), (f"MEMBER_IP_{i}", ip), (f"MEMBER_UDP_{i}", udp),
              (f"MEMBER_ROLE_{i}", role)]
    return w


def member_frame(member: int, msg: proto.Message) -> tuple[bytes, int]:
    """A protocol frame sent by member ``member`` and its ingress port."""
    port, ip, udp, _ = MEMBERS[member]
    f = proto.Frame(msg, eth_dst=b"\x02\x00\x00\x00\x00\xfe",
                    eth_src=bytes([2, 0, 0, 0, 1, member]), ip_src=ip, ip_dst=0x0A000001,
                    udp_src=udp, udp_dst=proto.DEFAULT_UDP_PORT)
    return proto.build_frame(f, validate=False), port


def gradient_frame(rng: np.random.Generator, w: int, slot: int, rnd: int, *, job: int = JOB,
                   total: int = TENSOR, values: np.ndarray | None = None) -> tuple[bytes, int]:
    """Worker ``w``'s GRADIENT chunk for ``slot``, round ``rnd`` of a tensor of ``total`` elements."""
    v = rng.standard_normal(ELEMS).astype(np.float32) if values is None else values
    return member_frame(w, proto.gradient(v, job=job, worker=w, slot=slot, round_=rnd, total=total))


def mismatch_frames(rng: np.random.Generator, slot: int, rnd: int) -> list[tuple[bytes, int]]:
    """A round that fails on a tensor length mismatch (docs/protocol.md section 4, step 4).

    Worker 0 opens it; worker 1's chunk belongs to a longer tensor: MISMATCH,
    and the ERROR RESULT (culprit 1, aux = 1's length) goes to every worker;
    worker 2's chunk then gets it re-sent (LATE), and worker 0's chunk of yet
    another length gets it re-sent as a MISMATCH.
    """
    return [gradient_frame(rng, 0, slot, rnd), gradient_frame(rng, 1, slot, rnd, total=TENSOR + 24),
            gradient_frame(rng, 2, slot, rnd), gradient_frame(rng, 0, slot, rnd, total=7)]


SPECIAL = np.array([np.inf, -np.inf, np.nan, -0.0, 1e-45, -1e-45, 3.4e38, 3.4e38]
                   + [1.0] * (ELEMS - 8), dtype=np.float32)
"""Infinities, NaN, -0, subnormals and a sum that overflows (a round of these and their negation)."""


def agg_frames(rng: np.random.Generator) -> list[tuple[bytes, int]]:
    """Gradient traffic for the aggregation engine: completed rounds, drops, resends, a mismatch.

    Slot 0 round 0 completes and a duplicate gets its RESULT re-sent; slot 1
    round 0 completes (and a duplicate); BAD_JOB; a chunk cut short
    (BAD_LENGTH); slot 0 round 1 of special values completes; a stale round 0
    chunk; UNKNOWN_WORKER (the actor's id is >= AGG_MEMBERS); slot 1 round 1
    completes; slot 1 round 2 fails on a tensor length mismatch
    (:func:`mismatch_frames`: two MISMATCH drops, an ERROR RESULT multicast
    and re-sent); slot 0 round 2 stays open.
    """

    def grad(w: int, slot: int, rnd: int, job: int = JOB,
             values: np.ndarray | None = None) -> tuple[bytes, int]:
        return gradient_frame(rng, w, slot, rnd, job=job, values=values)

    out = [grad(0, 0, 0), grad(1, 0, 0), grad(0, 1, 0), grad(2, 0, 0)]  # slot 0 completes
    out += [grad(1, 1, 0), grad(0, 0, 0)]   # duplicate after completion: resend to worker 0
    out += [grad(2, 1, 0), grad(1, 1, 0)]   # slot 1 completes, then a duplicate
    out += [grad(1, 0, 0, job=JOB + 1)]     # wrong job: BAD_JOB
    short, port = grad(2, 0, 1)
    out += [(short[:60], port)]             # cut short: BAD_LENGTH
    out += [grad(0, 0, 1, values=SPECIAL), grad(1, 0, 1, values=SPECIAL),
            grad(2, 0, 1, values=-SPECIAL)]  # infinities, NaN, subnormals, overflow
    out += [grad(0, 1, 1), grad(0, 0, 0)]   # round 1 of slot 1 open; stale round 0
    out += [grad(ACTOR_ID, 0, 2)]           # UNKNOWN_WORKER
    out += [grad(1, 1, 1), grad(2, 1, 1)]   # slot 1 round 1 completes
    out += mismatch_frames(rng, 1, 2)       # slot 1 round 2 fails: ERROR RESULT, resends
    out += [grad(0, 0, 2), grad(1, 0, 2)]   # slot 0 round 2 stays open
    return out


def rpl_frames(rng: np.random.Generator, record_bytes: int) -> list[tuple[bytes, int]]:
    """Replay traffic: pushes, uniform and prioritized samples, an update, malformed requests.

    The first four frames (an EMPTY sample, two pushes, a sample) make a
    short replay exchange of their own (two PUSH_ACKs)."""

    def push(k: int, seq: int) -> tuple[bytes, int]:
        recs = [rng.integers(0, 256, record_bytes, dtype=np.uint8).tobytes() for _ in range(k)]
        prios = [int(p) for p in rng.integers(1, 1 << 20, k)]
        return member_frame(ACTOR_ID, proto.push(recs, prios, job=JOB, worker=ACTOR_ID, seq=seq))

    def sample(b: int, seq: int, prioritized: bool) -> tuple[bytes, int]:
        return member_frame(LEARNER_ID, proto.sample_request(
            b, job=JOB, worker=LEARNER_ID, seq=seq, prioritized=prioritized))

    out = [sample(2, 1, False)]             # empty memory: EMPTY
    out += [push(2, 2), push(3, 3)]
    out += [sample(4, 4, False), sample(2, 5, True)]
    out += [push(16, 6), push(5, 7)]
    out += [sample(8, 8, True)]
    out += [member_frame(LEARNER_ID, proto.update([1, 4, 100], [7 << 16, 3, 9], job=JOB,
                                                  worker=LEARNER_ID, seq=9))]  # 100: BAD_INDEX
    bad, port = push(1, 10)
    out += [(bad[:45] + bytes([JOB + 1]) + bad[46:], port)]  # wrong job: BAD_JOB
    out += [sample(16, 11, True), push(3, 12), sample(1, 13, False)]
    # a sample request from the actor, which has no learner role: dropped
    out += [member_frame(ACTOR_ID, proto.sample_request(2, job=JOB, worker=ACTOR_ID, seq=14))]
    return out


def short_frames(rng: random.Random) -> list[tuple[bytes, int]]:
    """A frame of every length 1..63, cut from member GRADIENTs and PUSHes.

    Below 42 bytes a frame is not a protocol frame (flooded, ``CNT_PASS``);
    42..63 bytes reach an engine by opcode and are dropped as ``BAD_LENGTH``
    (counted in ``CNT_RX_*`` from 44 bytes on)."""
    grad, gport = member_frame(0, proto.gradient(np.zeros(ELEMS, np.float32), job=JOB, worker=0,
                                                  slot=0, round_=0, total=TENSOR))
    push, pport = member_frame(ACTOR_ID, proto.push([bytes(64)], [1], job=JOB, worker=ACTOR_ID))
    out = []
    for n in range(1, 64):
        f, port = (grad, gport) if rng.random() < 0.5 else (push, pport)
        out.append((f[:n], port))
    return out


def l2_frames(rng: random.Random) -> list[tuple[bytes, int]]:
    """Ordinary traffic: the switch floods it to the MAC ports but its source."""

    def eth(ethertype: int, n: int, src: int) -> bytes:
        body = bytes(rng.getrandbits(8) for _ in range(n - 14))
        return b"\xff" * 6 + bytes([2, 0, 0, 0, 9, src]) + ethertype.to_bytes(2, "big") + body

    def ipv4(n: int, proto_num: int, dport: int, ihl: int = 0x45) -> bytes:
        f = bytearray(eth(0x0800, n, 1))
        f[14] = ihl
        f[23] = proto_num
        f[36:38] = dport.to_bytes(2, "big")
        return bytes(f)

    return [
        (eth(0x0806, 60, 1), PORT_MAC[0]),               # ARP-sized, two beats at 256
        (eth(0x88B5, 20, 2), PORT_MAC[1]),               # runt, one beat
        (ipv4(64, 6, proto.DEFAULT_UDP_PORT), PORT_MAC[2]),   # TCP to "our" port
        (ipv4(100, 17, 53), PORT_DMA0),                  # UDP elsewhere, from DMA
        (ipv4(80, 17, proto.DEFAULT_UDP_PORT, 0x46), PORT_MAC[3]),  # IPv4 options
        (eth(0x86DD, 301, 3), PORT_MAC[0]),              # IPv6-ish, ragged last beat
        (ipv4(41, 17, proto.DEFAULT_UDP_PORT), PORT_MAC[1]),  # one byte short of UDP
        (eth(0x0800, 32, 4), PORT_MAC[2]),               # exactly one beat at 256
        (eth(0x0806, 33, 5), 0x08),                      # from DMA port 1
        (eth(0x0800, 200, 6), PORT_MAC[3]),
    ]


def interleave(rng: random.Random, *streams: list[tuple[bytes, int]]) -> list[tuple[bytes, int]]:
    """Merge lists at random, keeping each list's own order."""
    queues = [list(s) for s in streams if s]
    out: list[tuple[bytes, int]] = []
    while queues:
        q = rng.choice(queues)
        out.append(q.pop(0))
        if not q:
            queues.remove(q)
    return out
