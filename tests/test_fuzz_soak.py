"""Fuzz soak: junk datagrams interleaved with correct all-reduces and replay round trips.

1M random and structured-junk datagrams at the soft switch, 100k at the sim switch (``slow``;
every ``make test`` runs 20k and 2k). After
the soak every correct operation returned the right answer, the switch still answers, and
the counters add up to what was sent::

    sent = sum of CNT_RX_* + junk that names no RX opcode + SRV_RX_OVERFLOW

(every GRADIENT/RESULT/PUSH/SAMPLE_REQ/UPDATE is counted on arrival, every other message is
dropped and counted by its first failing check). The stateless drop counters are also
checked one by one against the verdicts of a :class:`~hostdrv.switch.reference.SwitchModel` holding
the switch's own register values, fed the same junk, unless the kernel dropped some.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from hostdrv import Aggregator, ReplayClient, SwitchControl
from hostdrv.switch.reference import SwitchModel
from hostdrv.wire import regmap
from hostdrv.wire.protocol import HEADER, HEADER_OFFSET, MAX_MEMBERS, Opcode
from tests.netutil import switch_of_kind

RX_OPS = frozenset({int(Opcode.GRADIENT), int(Opcode.RESULT), int(Opcode.PUSH),
                    int(Opcode.SAMPLE_REQ), int(Opcode.UPDATE)})
# verdicts that depend only on the datagram and the registers, never on slot or replay state
STATELESS = ("CNT_DROP_BAD_LENGTH", "CNT_DROP_BAD_HEADER", "CNT_DROP_BAD_JOB",
             "CNT_DROP_DISABLED", "CNT_DROP_UNKNOWN_WORKER", "CNT_DROP_SPOOFED",
             "CNT_DROP_BAD_COUNT", "CNT_DROP_BAD_DTYPE", "CNT_DROP_BAD_SLOT")
STRANGER_PORT = 0x80  # the soft switch's ingress port for a source no member entry names
JOB, ELEMS, SLOTS, SIZE = 5, 32, 4, 100


class CountingTransport:
    """Wraps a client's datagram transport and counts the datagrams it sends."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.sent = 0

    def send(self, data: Any) -> None:
        self.sent += 1
        self.inner.send(data)

    def send_segments(self, data: memoryview, seg: int) -> None:
        self.sent += -(-len(data) // seg)
        self.inner.send_segments(data, seg)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def junk(rng: np.random.Generator, n: int) -> Iterator[bytes]:
    """Random datagrams and well-formed ones broken in one field each."""
    kinds = rng.integers(0, 8, n)
    for k in kinds:
        if k == 0:  # any bytes, any length (mostly short)
            size = int(rng.choice([0, 1, 2, 21, 22, 23, 63, 64, int(rng.integers(0, 1500))]))
            d = rng.bytes(size)
            if d[:4] == b"NRLC":  # a control request, not junk
                d = b"\x00" + d[1:]
            yield d
            continue
        op = int(rng.choice([1, 2, 3, 4, 5, 6, 7, 0, 9, 255]))
        count = int(rng.choice([ELEMS, 1, 16, 0, 64, 128, 129]))
        flags = int(rng.choice([0, 1, 2, 0x10, 0x20, 0x80]))
        job = JOB if rng.random() < 0.8 else int(rng.integers(0, 256))
        worker = int(rng.choice([0, 1, 2, 3, MAX_MEMBERS, 300]))
        slot = int(rng.choice([0, 1, SLOTS, 0xFFFF]))
        total = int(rng.choice([0, SIZE, 7]))
        if op not in (1, 2) and rng.random() < 0.7:
            total = 0
        hdr = HEADER.pack(1 if rng.random() < 0.9 else int(rng.integers(0, 256)), op, flags,
                          job, worker, slot, int(rng.integers(0, 1 << 32)), count,
                          int(rng.integers(0, 1 << 32)), total)
        plen = {1: 4 * count, 2: 4 * count, 3: 64 + 128 * count, 7: 8 * count}.get(op, 0)
        plen += int(rng.choice([0, 0, 0, -4, 4, 64]))
        yield hdr + rng.bytes(max(plen, 0))


def model_verdicts(ctl: SwitchControl, datagrams: list[bytes], src: tuple[str, int],
                   record_bytes: int, capacity: int) -> dict[str, int]:
    """Counters of a model with the switch's registers after it saw ``datagrams`` from ``src``
    (each wrapped into the frame the soft switch builds: its bytes 0-41, then the datagram)."""
    m = SwitchModel(capacity=capacity, record_bytes=record_bytes,
                    max_slots=ctl.read("AGG_MAX_SLOTS"),
                    max_elems=max(ctl.read("AGG_MAX_ELEMS"), 16), jobs=ctl.read("JOBS"))
    for r in regmap.REGISTERS.values():
        if r.access == "rw" and not r.server and r.name not in ("CTRL", "RPL_RESET", "RPL_SEED"):
            value = ctl.read(r.name)
            # only what differs: a one-job switch's share registers refuse every write (their
            # reset values), and a share written register by register could pass through an
            # overlap the switch never had
            if m.read(r.name) != value:
                m.write(r.name, value)
    m.write("CTRL", ctl.read("CTRL") & 3)
    ip = bytes(int(x) for x in src[0].split("."))
    udp_dst = ctl.read("UDP_PORT").to_bytes(2, "big")
    for d in datagrams:
        f = bytearray(HEADER_OFFSET) + d
        f[12:14] = b"\x08\x00"
        f[14] = 0x45
        f[16:18] = ((len(f) - 14) & 0xFFFF).to_bytes(2, "big")
        f[23] = 17
        f[26:30] = ip
        f[34:36] = src[1].to_bytes(2, "big")
        f[36:38] = udp_dst
        f[38:40] = ((len(f) - 34) & 0xFFFF).to_bytes(2, "big")
        m.process(bytes(f), STRANGER_PORT)
    return m.counters()


# the soak sizes under ``slow``; a short run of each in every ``make test``, so that the soak's
# own checks (the model's verdicts from the switch's registers) cannot rot between slow runs
SOAKS = [
    pytest.param("soft", 20_000, id="soft-short"),
    pytest.param("sim", 2_000, id="sim-short"),
    pytest.param("soft", int(os.environ.get("SOAK_SOFT", 1_000_000)), id="soft", marks=pytest.mark.slow),
    pytest.param("sim", int(os.environ.get("SOAK_SIM", 100_000)), id="sim", marks=pytest.mark.slow),
]


@pytest.mark.parametrize(("kind", "n_junk"), SOAKS)
def test_fuzz_soak(kind: str, n_junk: int) -> None:
    rng = np.random.default_rng(2026)
    with switch_of_kind(kind) as sw, SwitchControl(sw.url) as ctl:
        ctl.configure_aggregation(members=2, slots=SLOTS, packet_elems=ELEMS, dtype="int32",
                                  job=JOB)
        ctl.clear_counters()
        aggs = [Aggregator(sw.url, worker=w, job=JOB, timeout=0.05, retries=12)
                for w in range(2)]
        rpl = ReplayClient(sw.url, worker=2, job=JOB, obs_shape=(4,))
        clients: list[Any] = [*aggs, rpl]
        for c in clients:
            c.transport = CountingTransport(c.transport)
        host, port = sw.address
        attacker = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        attacker.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
        attacker.bind(("127.0.0.1", 0))
        sent_junk: list[bytes] = []
        stored: dict[int, np.ndarray] = {}
        ops = 0
        every = 2000 if kind == "soft" else 500
        t0 = time.monotonic()
        for k, d in enumerate(junk(rng, n_junk)):
            attacker.sendto(d, (host, port))
            sent_junk.append(d)
            if k % every == every - 1:
                check_correct_ops(aggs, rpl, rng, ops, stored)
                ops += 1
        check_correct_ops(aggs, rpl, rng, ops, stored)
        seconds = time.monotonic() - t0
        assert ctl.read("MAGIC") == regmap.REGISTERS["MAGIC"].reset  # still up
        time.sleep(0.2)
        counters = ctl.counters()
        overflow = ctl.read("SRV_RX_OVERFLOW")
        capacity, record_bytes = ctl.read("RPL_CAPACITY"), ctl.read("RPL_RECORD_BYTES")
        want = model_verdicts(ctl, sent_junk, attacker.getsockname(), record_bytes, capacity)
        attacker.close()
        for c in clients:
            c.close()
    sent_ops = sum(c.transport.sent for c in clients)
    rx = sum(v for k, v in counters.items() if k.startswith("CNT_RX_"))
    no_rx = sum(1 for d in sent_junk if len(d) < 2 or d[1] not in RX_OPS)
    print(f"{kind}: {n_junk} junk + {sent_ops} correct datagrams, {ops + 1} correct rounds in "
          f"{seconds:.1f} s; kernel drops {overflow}")
    assert len(sent_junk) + sent_ops == rx + no_rx + overflow
    if overflow == 0:
        # every junk datagram was dropped by a check that needs no state (it comes from an
        # address no member entry names), exactly as the model drops it
        assert sum(counters[name] for name in STATELESS) == len(sent_junk)
        for name in STATELESS:
            assert counters[name] == want[name], name
    assert all(counters[k] == 0 for k in ("CNT_DROP_MISMATCH",))


def check_correct_ops(aggs: list[Aggregator], rpl: ReplayClient, rng: np.random.Generator,
                      k: int, stored: dict[int, np.ndarray]) -> None:
    """One all-reduce of both workers (exact int32 sum) and one replay push + sample."""
    xs = [rng.integers(-(1 << 20), 1 << 20, SIZE, dtype=np.int32) for _ in aggs]
    out: list[Any] = [None] * len(aggs)

    def run(w: int) -> None:
        try:
            out[w] = aggs[w].allreduce(xs[w])
        except BaseException as e:  # noqa: BLE001 - checked below
            out[w] = e

    threads = [threading.Thread(target=run, args=(w,)) for w in range(len(aggs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    want = xs[0] + xs[1]
    for g in out:
        assert isinstance(g, np.ndarray), g
        np.testing.assert_array_equal(g, want)
    obs = rng.standard_normal((2, 4)).astype(np.float32)
    idx = rpl.push(obs, np.array([0, 1]), np.ones(2, np.float32), obs + 1, np.zeros(2, np.uint8),
                   priority=np.array([1.0, 2.0]))
    for j, i in enumerate(idx):
        stored[int(i)] = obs[j]
    batch = rpl.sample(4, prioritized=bool(k % 2))
    for i, o in zip(batch.indices, batch.obs, strict=True):
        np.testing.assert_array_equal(o, stored[int(i)])
