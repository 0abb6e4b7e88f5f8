"""Soft switch server, transports and control plane."""

from __future__ import annotations

import socket
import threading
from typing import Any

import numpy as np
import pytest
from netutil import any_port_allreduce, check_any_port_allreduce, send_datagrams, wait_for

from hostdrv import (
    Aggregator,
    AllreduceTimeoutError,
    RegisterAccessError,
    RegisterError,
    SoftSwitch,
    SoftSwitchProcess,
    SwitchControl,
    SwitchModel,
    SwitchTimeoutError,
    TransportError,
    open_datagram,
)
from hostdrv.client.control import ROLE_WORKER
from hostdrv.wire import regmap
from hostdrv.wire.control import CONTROL, CONTROL_MAGIC, CONTROL_READ, ControlStatus
from hostdrv.wire.protocol import (
    HEADER_LEN,
    Flags,
    Opcode,
    decode_message,
    encode_message,
    gradient,
)


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
            ctl.configure_aggregation(members=4, slots=4, packet_elems=32, threshold=2)
        with pytest.raises(RegisterError, match="parent"):
            ctl.configure_aggregation(members=2, slots=4, packet_elems=32, role="leaf",
                                      uplink_port=1)
        ctl.configure_aggregation(members=2, slots=4, packet_elems=32, role="leaf",
                                  uplink_port=0x80, parent="127.0.0.1:9999", leaf_id=3)
        assert ctl.read("AGG_PARENT_UDP") == 9999 and ctl.read("AGG_LEAF_ID") == 3
        ctl.write("RPL_SEED", 7)
        ctl.clear_counters()
        assert not any(ctl.counters().values())


def test_elems_is_a_deprecated_name_of_packet_elems(switch: SoftSwitch) -> None:
    """``configure_aggregation(elems=)`` and ``Aggregator.elems``, the old names of
    ``packet_elems``: still work, the keyword with a DeprecationWarning."""
    with SwitchControl(switch.url) as ctl:
        with pytest.warns(DeprecationWarning, match="packet_elems"):
            ctl.configure_aggregation(members=1, slots=4, elems=48)
        assert ctl.read("AGG_ELEMS") == 48
        with pytest.warns(DeprecationWarning), pytest.raises(RegisterError) as err:
            ctl.configure_aggregation(members=1, slots=4, elems=17)
        assert (err.value.field, err.value.value) == ("elems", 17)  # the name the caller used
        with pytest.raises(RegisterError) as err:
            ctl.configure_aggregation(members=1, slots=4, packet_elems=17)
        assert (err.value.field, err.value.value) == ("packet_elems", 17)
        with pytest.raises(TypeError, match="both"):
            ctl.configure_aggregation(members=1, slots=4, packet_elems=32, elems=32)
        with pytest.raises(TypeError, match="packet_elems"):
            ctl.configure_aggregation(members=1, slots=4)  # type: ignore[call-arg]
        assert ctl.read("AGG_ELEMS") == 48
        agg = Aggregator(switch.url, worker=0)
        try:
            assert agg.packet_elems == agg.elems == 48
            with pytest.raises(AttributeError):
                agg.elems = 64  # type: ignore[misc]
        finally:
            agg.close()


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
    ctl.configure_aggregation(members=3, slots=4, packet_elems=32)
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
    # the real members are unaffected once worker 2 is out of the job (the threshold
    # first: AGG_THRESHOLD <= AGG_MEMBERS holds after every write)
    ctl.write("AGG_THRESHOLD", 2)
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


# ---------------------------------------------------------------------------
# MEMBER_UDP = 0: multicast RESULTs to where the member last sent from


def test_any_port_members_complete_an_allreduce(switch: SoftSwitch) -> None:
    check_any_port_allreduce(any_port_allreduce(switch.url))


def _recv_message(sock: socket.socket, timeout: float) -> Any:
    sock.settimeout(timeout)
    try:
        return decode_message(sock.recv(65536))
    except TimeoutError:
        return None


def test_any_port_member_is_reached_only_where_it_last_sent_from(switch: SoftSwitch) -> None:
    """Never heard from: nothing (then a resend); a rewritten entry forgets the address."""
    packet_elems = 16
    with SwitchControl(switch.url) as ctl:
        ctl.configure_aggregation(members=2, slots=4, packet_elems=packet_elems)
        socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(3)]
        try:
            for s in socks:
                s.bind(("127.0.0.1", 0))
            w0, w1, w1_moved = socks
            ctl.set_member(0, port=1, ip="127.0.0.1", udp=w0.getsockname()[1], role=ROLE_WORKER)
            ctl.set_member(1, port=2, ip="127.0.0.1", udp=0, role=ROLE_WORKER)
            x = [np.full(packet_elems, w + 1.0, np.float32) for w in range(2)]

            def grad(w: int, slot: int) -> bytes:
                return encode_message(gradient(x[w], job=0, worker=w, slot=slot, round_=0))

            # slot 0: member 1's GRADIENT teaches the switch its address
            w1.sendto(grad(1, 0), switch.address)
            w0.sendto(grad(0, 0), switch.address)
            for s in (w0, w1):
                m = _recv_message(s, 5.0)
                assert m is not None and m.opcode == Opcode.RESULT and m.slot == 0
                assert not m.flags & Flags.RESEND
                np.testing.assert_array_equal(m.elements(), x[0] + x[1])
            # slot 1: member 1 sends from another socket, its entry is rewritten (the
            # same values), then member 0 completes the round: member 1 gets nothing
            w1_moved.sendto(grad(1, 1), switch.address)
            assert wait_for(lambda: switch.counters()["CNT_RX_GRADIENT"] == 3)
            ctl.set_member(1, port=2, ip="127.0.0.1", udp=0, role=ROLE_WORKER)
            w0.sendto(grad(0, 1), switch.address)
            m0 = _recv_message(w0, 5.0)
            assert m0 is not None and m0.slot == 1 and not m0.flags & Flags.RESEND
            assert _recv_message(w1_moved, 0.3) is None and _recv_message(w1, 0.05) is None
            # ... and recovers by retransmitting: the result re-sent to it alone
            w1_moved.sendto(grad(1, 1), switch.address)
            m1 = _recv_message(w1_moved, 5.0)
            assert m1 is not None and m1.slot == 1 and m1.flags & Flags.RESEND
            np.testing.assert_array_equal(m1.elements(), x[0] + x[1])
            c = ctl.counters()
            assert (c["CNT_TX_RESULT"], c["CNT_TX_RESEND"], c["CNT_DROP_DUPLICATE"]) == (2, 1, 1)
        finally:
            for s in socks:
                s.close()


# ---------------------------------------------------------------------------
# MEMBER_PORT: 0 or one-hot


def test_member_port_with_several_bits_is_refused(switch: SoftSwitch) -> None:
    with SwitchControl(switch.url) as ctl:
        ctl.write("MEMBER_PORT_2", 0x04)
        for bad in (0x03, 0x0F, 0xFF):
            with pytest.raises(RegisterAccessError, match="MEMBER_PORT_2") as err:
                ctl.write("MEMBER_PORT_2", bad)
            assert err.value.status == ControlStatus.ILLEGAL_VALUE and err.value.value == bad
            assert ctl.read("MEMBER_PORT_2") == 0x04 == switch.read("MEMBER_PORT_2")
        # set_member refuses it before sending anything
        sent = switch.stats["control"]
        with pytest.raises(RegisterError, match="port=3"):
            ctl.set_member(2, port=0x03, ip="127.0.0.1", udp=1, role=ROLE_WORKER)
        assert switch.stats["control"] == sent
        assert ctl.member(2)["port"] == 0x04
        # 0 marks the entry unused
        ctl.set_member(2, port=0, ip="127.0.0.1", udp=1, role=ROLE_WORKER)
        assert ctl.member(2) == {"port": 0, "ip": "127.0.0.1", "udp": 1, "role": ROLE_WORKER}


# ---------------------------------------------------------------------------
# every datagram is counted


def _sent_datagrams() -> list[bytes]:
    """An empty datagram, a GRADIENT making a 65536-byte frame and the largest datagram."""
    big = encode_message(gradient(np.zeros(16, np.float32), job=0, worker=0, slot=0, round_=0))
    return [b"", big + bytes(65494 - len(big)), big + bytes(65507 - len(big))]


def test_empty_and_oversize_datagrams_are_counted_as_the_model_does(switch: SoftSwitch) -> None:
    model = SwitchModel()
    send_datagrams(_sent_datagrams(), switch.address, model)
    want = model.counters()
    assert want["CNT_DROP_BAD_LENGTH"] == 3 and want["CNT_RX_GRADIENT"] == 2
    assert wait_for(lambda: switch.counters() == want), (switch.counters(), want)
    assert switch.stats["errors"] == 0 and switch.stats["datagrams"] == 3


# ---------------------------------------------------------------------------
# URLs


@pytest.mark.parametrize("url", ["soft://127.0.0.1", "sim://127.0.0.1", "soft://127.0.0.1:",
                                 "sim://localhost"])
def test_url_without_port_is_refused(url: str) -> None:
    with pytest.raises(TransportError, match="no port"):
        SwitchControl(url)
    with pytest.raises(TransportError, match="no port"):
        open_datagram(url)


def test_url_host_port_and_options_are_checked(switch: SoftSwitch) -> None:
    with pytest.raises(TransportError, match="no host"):
        SwitchControl("soft://:20050")
    with pytest.raises(TransportError, match="port=0"):
        SwitchControl("sim://127.0.0.1:0")
    with pytest.raises(TransportError, match="unknown option 'bogus'"):
        SwitchControl(switch.url + "?bogus=1")
    with pytest.raises(TransportError, match="unknown option 'bogus'"):
        open_datagram(switch.url + "?bogus=1")
    with SwitchControl(switch.url) as ctl:
        assert ctl.read("MAGIC") == 0x4E524C31


def test_server_registers_are_answered_by_the_server(switch: SoftSwitch) -> None:
    with SwitchControl(switch.url) as ctl:
        assert ctl.server_counters() == dict.fromkeys(regmap.SERVER_COUNTERS, 0)
        with pytest.raises(RegisterError, match="read-only"):
            ctl.write("SRV_RX_OVERFLOW", 0)
    assert switch.server_counters() == dict.fromkeys(regmap.SERVER_COUNTERS, 0)
