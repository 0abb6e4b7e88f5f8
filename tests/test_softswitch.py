"""Soft switch server, transports and control plane."""

from __future__ import annotations

import socket
import threading
from typing import Any

import numpy as np
import pytest

from hostdrv import (
    Aggregator,
    AllreduceTimeoutError,
    RegisterAccessError,
    RegisterError,
    SoftSwitch,
    SoftSwitchProcess,
    SwitchControl,
    SwitchTimeoutError,
    TransportError,
    open_datagram,
)
from hostdrv.protocol import HEADER_LEN, encode_message, gradient
from hostdrv.transport import CONTROL, CONTROL_MAGIC, CONTROL_READ


@pytest.fixture()
def switch() -> Any:
    sw = SoftSwitch(build_hash=0xC0FFEE).start()
    try:
        yield sw
    finally:
        sw.close()


def test_identity_and_registers(switch: SoftSwitch) -> None:
    with SwitchControl(switch.url) as ctl:
        ident = ctl.identity()
        assert (ident.magic, ident.major, ident.build_hash) == (0x4E524C31, 1, 0xC0FFEE)
        ctl.write("AGG_SLOTS", 12)
        assert ctl.read("AGG_SLOTS") == 12 == switch.read("AGG_SLOTS")
        ctl.set_member(3, port=0x10, ip="10.1.2.3", udp=4242, role=5)
        assert ctl.member(3) == {"port": 0x10, "ip": "10.1.2.3", "udp": 4242, "role": 5}
        with pytest.raises(RegisterAccessError, match="AGG_ELEMS") as err:
            ctl.write("AGG_ELEMS", 17)  # legal width, illegal value: the switch says why
        assert err.value.field == "AGG_ELEMS" and err.value.value == 17
        with pytest.raises(RegisterError, match="read-only"):
            ctl.write("MAGIC", 1)
        with pytest.raises(RegisterError, match="NOPE"):
            ctl.read("NOPE")
        with pytest.raises(RegisterError, match="14-bit"):
            ctl.write("AGG_ELEMS", 1 << 14)
        with pytest.raises(RegisterError, match="threshold"):
            ctl.configure_aggregation(members=4, slots=4, elems=32, threshold=2)
        with pytest.raises(RegisterError, match="parent"):
            ctl.configure_aggregation(members=2, slots=4, elems=32, role="leaf", uplink_port=1)
        ctl.configure_aggregation(members=2, slots=4, elems=32, role="leaf", uplink_port=0x80,
                                  parent="127.0.0.1:9999", leaf_id=3)
        assert ctl.read("AGG_PARENT_UDP") == 9999 and ctl.read("AGG_LEAF_ID") == 3
        ctl.write("RPL_SEED", 7)
        ctl.clear_counters()
        assert not any(ctl.counters().values())


def test_control_timeout_and_bad_urls() -> None:
    silent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    silent.bind(("127.0.0.1", 0))
    try:
        host, port = silent.getsockname()
        ctl = SwitchControl(f"soft://{host}:{port}", timeout=0.01, retries=2)
        with pytest.raises(SwitchTimeoutError, match="did not answer read of register 0x000"):
            ctl.identity()
        ctl.close()
    finally:
        silent.close()
    with pytest.raises(TransportError, match="unknown scheme 'bogus'"):
        SwitchControl("bogus://x:1")
    with pytest.raises(TransportError, match="unknown option 'bogus'"):
        open_datagram("udp://localhost:1?bogus=1")
    with pytest.raises(TransportError, match="no scheme"):
        SwitchControl("127.0.0.1:20050")


def test_control_retry_is_answered_not_reexecuted(switch: SoftSwitch) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    try:
        req = CONTROL.pack(CONTROL_MAGIC, CONTROL_READ, 0, 77, 0x000, 0)
        replies = []
        for _ in range(2):
            s.sendto(req, switch.address)
            replies.append(s.recv(256))
        assert replies[0] == replies[1]
        magic, op, status, tag, addr, value = CONTROL.unpack_from(replies[0])
        assert (magic, op, status, tag, value) == (CONTROL_MAGIC, 0x81, 0, 77, 0x4E524C31)
        s.sendto(CONTROL.pack(CONTROL_MAGIC, CONTROL_READ, 0, 78, 0xFFC, 0), switch.address)
        reply = s.recv(256)
        assert CONTROL.unpack_from(reply)[2] == 2 and b"0xFFC" in reply[CONTROL.size:]
    finally:
        s.close()


def _allreduce_threads(aggs: list[Aggregator], xs: list[np.ndarray]) -> list[Any]:
    out: list[Any] = [None] * len(aggs)
    ts = [threading.Thread(target=lambda i=i: out.__setitem__(i, aggs[i].allreduce(xs[i])))
          for i in range(len(aggs))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(10)
    return out


def test_unregistered_and_spoofed_workers_are_dropped_and_counted(switch: SoftSwitch) -> None:
    ctl = SwitchControl(switch.url)
    ctl.configure_aggregation(members=3, slots=4, elems=32)
    a = Aggregator(switch.url, worker=0)
    b = Aggregator(switch.url, worker=1)
    fast = dict(timeout=0.005, retries=2, max_backoff=0.01)
    # id 2 is a member id but nobody registered it: UNKNOWN_WORKER
    stranger = Aggregator(switch.url, worker=2, register=False, **fast)
    with pytest.raises(AllreduceTimeoutError):
        stranger.allreduce(np.ones(32, dtype=np.float32))
    # worker 1 is registered from b's socket: the same id from another port is SPOOFED
    spoof = Aggregator(switch.url, worker=1, register=False, **fast)
    with pytest.raises(AllreduceTimeoutError, match="slot 0 round 0"):
        spoof.allreduce(np.full(32, 1000, dtype=np.float32))
    c = ctl.counters()
    assert c["CNT_DROP_UNKNOWN_WORKER"] == 3 and c["CNT_DROP_SPOOFED"] == 3
    assert c["CNT_TX_RESULT"] == 0
    # the real members are unaffected once worker 2 is out of the job
    ctl.write("AGG_MEMBERS", 2)
    xs = [np.arange(32, dtype=np.float32), np.ones(32, dtype=np.float32)]
    got = _allreduce_threads([a, b], xs)
    for g in got:
        np.testing.assert_array_equal(g, xs[0] + xs[1])
    # a raw GRADIENT claiming worker 0 from an unknown socket
    raw = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    msg = encode_message(gradient(np.zeros(32, dtype=np.float32), job=0, worker=0, slot=1,
                                  round_=1))
    raw.sendto(msg, switch.address)
    raw.sendto(b"\x01\x01garbage", switch.address)
    raw.close()
    for agg in (a, b, stranger, spoof):
        agg.close()
    c2 = ctl.counters()
    for _ in range(100):
        c2 = ctl.counters()
        if c2["CNT_DROP_SPOOFED"] == 4 and c2["CNT_DROP_BAD_LENGTH"] == 1:
            break
    assert c2["CNT_DROP_SPOOFED"] == 4 and c2["CNT_DROP_BAD_LENGTH"] == 1
    ctl.close()
    assert len(msg) == HEADER_LEN + 128


def test_subprocess_switch_serves_and_exits_cleanly() -> None:
    proc = SoftSwitchProcess(args=["--capacity", "256", "--build-hash", "0x1234"])
    try:
        with SwitchControl(proc.url) as ctl:
            assert ctl.identity().build_hash == 0x1234
            assert ctl.read("RPL_CAPACITY") == 256
            ctl.write("JOB_ID", 3)
    finally:
        out = proc.stop()
    assert proc.proc.returncode == 0
    assert out.startswith("counters {") and "stats" in out
