"""The soft switch's two engines behind a socket: the native loop and the Python loop.

The same datagrams, from the same sockets, in the same order, reach a soft switch
serving the golden model with the Python loop and one serving the native engine
with its native loop; every socket must receive the same datagrams in the same
order, and every counter must agree. The traffic exercises the address rules of
both loops: exact ``MEMBER_UDP`` members, ``MEMBER_UDP`` = 0 members reached at the
address they last sent from (forgotten when their entry is written), a stranger
claiming a member, control requests between data, malformed datagrams, replay.
The rest of the soft switch suite runs on the default engine (native);
``NRL_SOFTSWITCH_ENGINE=model`` runs it on the model.
"""

from __future__ import annotations

import random
import socket
import threading
import time
from typing import Any

import numpy as np
import pytest
from engines import switch_class

from hostdrv import (
    Aggregator,
    ReplayClient,
    SoftSwitch,
    SoftSwitchProcess,
    SwitchControl,
)
from hostdrv.wire import regmap
from hostdrv.wire.protocol import (
    Flags,
    Opcode,
    encode_message,
    gradient,
    push,
    sample_request,
    update,
)

ELEMS = 32
SOCKETS = 6  # members 0..4, then a stranger


def _sockets() -> list[socket.socket]:
    out = []
    for _ in range(SOCKETS):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        s.bind(("127.0.0.1", 0))
        s.settimeout(0.5)
        out.append(s)
    return out


def _drain(socks: list[socket.socket], quiet: float = 0.3) -> list[list[bytes]]:
    got: list[list[bytes]] = [[] for _ in socks]
    deadline = time.monotonic() + quiet
    while time.monotonic() < deadline:
        for i, s in enumerate(socks):
            s.setblocking(False)
            try:
                while True:
                    got[i].append(s.recv(65536))
                    deadline = time.monotonic() + quiet
            except BlockingIOError:
                pass
        time.sleep(0.005)
    return got


def _play(sw: SoftSwitch, seed: int) -> tuple[list[list[bytes]], dict[str, int]]:
    """Configure ``sw``, send the seeded traffic, return what each socket got and the counters."""
    rng = random.Random(seed)
    g = np.random.default_rng(seed)
    socks = _sockets()
    ports = [s.getsockname()[1] for s in socks]
    dest = sw.address
    with SwitchControl(sw.url) as ctl:
        ctl.configure_aggregation(members=4, slots=4, packet_elems=ELEMS)
        for i in range(5):  # 0, 1 and 4 exact; 2 and 3 any port of 127.0.0.1
            ctl.set_member(i, port=1 << i, ip="127.0.0.1", udp=ports[i] if i in (0, 1, 4) else 0,
                           role=0b111 if i < 4 else 0b110)
        ctl.configure_replay(seed=seed)

        def send(i: int, data: bytes) -> None:
            socks[i].sendto(data, dest)

        for k in range(100):
            r = rng.random()
            if r < 0.6:  # a round of one slot, some duplicated, a stranger claiming a member
                slot, rnd = rng.randrange(4), k
                order = list(range(4))
                rng.shuffle(order)
                for w in order:
                    x = g.standard_normal(ELEMS).astype(np.float32)
                    msg = encode_message(gradient(x, job=0, worker=w, slot=slot, round_=rnd,
                                                  total=ELEMS * 4))
                    src = 5 if w >= 2 and rng.random() < 0.2 else w
                    send(src, msg)
                    if rng.random() < 0.15:
                        send(src, msg)
            elif r < 0.75:
                recs = [g.integers(0, 256, 128, dtype=np.uint8).tobytes()
                        for _ in range(rng.randint(1, 16))]
                who = rng.choice([0, 4])
                send(who, encode_message(push(recs, [rng.randrange(1 << 20) for _ in recs],
                                              job=0, worker=who, seq=k)))
            elif r < 0.85:
                who = rng.choice([1, 4, 4, 5])
                send(who, encode_message(sample_request(1 << rng.randint(0, 5), job=0,
                                                        worker=4 if who != 1 else 1, seq=k,
                                                        prioritized=rng.random() < 0.5)))
            elif r < 0.9:
                send(4, encode_message(update([rng.randrange(40) for _ in range(8)],
                                              [rng.randrange(1 << 20) for _ in range(8)],
                                              job=0, worker=4, seq=k)))
            elif r < 0.95:  # malformed: empty, short, garbage, bad version
                send(rng.randrange(SOCKETS), rng.choice(
                    [b"", b"\x01", bytes(g.integers(0, 256, 40, dtype=np.uint8)),
                     b"\x07" + bytes(63)]))
            else:  # a control write between data: forget member 2's address, or clear
                if rng.random() < 0.5:
                    ctl.write("MEMBER_UDP_2", 0)
                else:
                    ctl.clear_counters()
        got = _drain(socks)
        counters = {name: ctl.read(name) for name in regmap.COUNTERS}
    for s in socks:
        s.close()
    return got, counters


@pytest.mark.parametrize("seed", [1, 2])
def test_native_loop_sends_what_the_python_loop_sends(seed: int) -> None:
    switch_class("native")  # fails when the extension is not built
    results = []
    for engine in ("model", "native"):
        with SoftSwitch(engine=engine) as sw:
            assert sw.engine == engine
            results.append(_play(sw, seed))
    (got_m, cnt_m), (got_n, cnt_n) = results
    assert cnt_n == cnt_m
    assert [len(g) for g in got_n] == [len(g) for g in got_m]
    assert got_n == got_m
    kinds = {(d[1], bool(d[2] & Flags.RESEND)) for g in got_m for d in g if len(d) > 2}
    assert {(Opcode.RESULT, False), (Opcode.RESULT, True), (Opcode.PUSH_ACK, False),
            (Opcode.SAMPLE_RESP, False)} <= kinds, kinds


@pytest.mark.parametrize("engine", ["model", "native"])
def test_cli_engine_option(engine: str) -> None:
    with SoftSwitchProcess(args=["--engine", engine]) as proc, SwitchControl(proc.url) as ctl:
        assert ctl.read("MAGIC") == regmap.REGISTERS["MAGIC"].reset
    out = proc.output
    assert "counters" in out and '"datagrams"' in out


def _client_run(native: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    """An all-reduce of 3 workers (threads, 2 tensor sizes) and a replay run (push,
    prioritized and uniform samples of 1..200, updates), with the client loops native or not."""
    monkeypatch.setenv("NRL_NATIVE_CLIENT", native)
    with SoftSwitch(capacity=256) as sw, SwitchControl(sw.url) as ctl:
        ctl.configure_aggregation(members=3, slots=8, packet_elems=64, dtype="int32")  # any order
        ctl.configure_replay(seed=5)
        aggs = [Aggregator(sw.url, worker=i, timeout=1.0) for i in range(3)]
        assert all((a._native() is not None) == (native == "1") for a in aggs)
        xs = [np.random.default_rng(i).integers(-2**31, 2**31, 5000, dtype=np.int32)
              for i in range(3)]
        sums: list[list[np.ndarray]] = [[], [], []]

        def work(i: int) -> None:
            for x in (xs[i], xs[i][:77]):
                sums[i].append(aggs[i].allreduce(x))

        ths = [threading.Thread(target=work, args=(i,)) for i in range(3)]
        for t in ths:
            t.start()
        for t in ths:
            t.join(60)
        contributors = [a.last_contributors.tolist() for a in aggs]
        rc = ReplayClient(sw.url, worker=5, obs_shape=(3,), action_shape=(), timeout=1.0)
        rng = np.random.default_rng(3)
        draws = []
        for k in range(6):
            n = 40
            rc.push(rng.standard_normal((n, 3)).astype(np.float32), rng.integers(0, 4, n),
                    rng.standard_normal(n).astype(np.float32),
                    rng.standard_normal((n, 3)).astype(np.float32), np.zeros(n, np.uint8),
                    priority=rng.random(n) + 0.1)
            b = rc.sample([1, 32, 64, 200, 7, 3][k], prioritized=k % 2 == 0)
            draws.append((b.indices.tolist(), b.weights.tolist(), bytes(b.records)))
            m = min(5, len(b.indices))
            rc.update_priorities(b.indices[:m], np.arange(m) + 1.0)
        for a in aggs:
            a.close()
        rc.close()
        # through the control channel: its request reaches the switch's socket after the
        # last UPDATE (fire and forget), so the counters include it (sw.counters() would race)
        counters = {k: v for k, v in ctl.counters().items() if v}
    return [[s.tobytes() for s in row] for row in sums], contributors, draws, counters


def test_native_client_loops_match_the_python_loops(monkeypatch: pytest.MonkeyPatch) -> None:
    """Aggregator and ReplayClient give the same sums (int32: any order of addition),
    contributor counts, samples and switch counters with their native loops
    (nrl_client.cpp) and their Python loops."""
    switch_class("native")
    assert _client_run("1", monkeypatch) == _client_run("0", monkeypatch)
