"""Every datagram sent to a soft or sim switch is counted, even those the kernel drops.

The switch's socket gets a small receive buffer (a few dozen datagrams) and a
burst is sent before the switch serves: the kernel queues a few datagrams and
drops the rest, which the switch learns from ``SO_RXQ_OVFL`` and keeps in
``SRV_RX_OVERFLOW``. The burst is made of datagrams that each move exactly one
counter when they reach the model: empty ones (``BAD_LENGTH``), headers with
opcode 0 (``BAD_HEADER``) and GRADIENTs of a registered member, each opening a
new round (accepted: ``CNT_RX_GRADIENT`` only). So what was sent equals the
RX and drop counters plus ``SRV_RX_OVERFLOW``, exactly.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import numpy as np
import pytest
from netutil import build_sim_rtl, wait_for

from hostdrv.client.control import ROLE_WORKER, SwitchControl
from hostdrv.switch.soft import SoftSwitch
from hostdrv.wire import protocol as proto
from hostdrv.wire import regmap
from hostdrv.wire.net import ip_to_int

ELEMS, SLOTS = 16, 4


def _make(kind: str) -> SoftSwitch:
    if kind == "sim":
        from hostdrv.switch.sim import SimSwitch

        build_sim_rtl()
        return SimSwitch("127.0.0.1:0")
    return SoftSwitch("127.0.0.1:0")


@pytest.fixture(params=["soft", "sim"])
def idle_switch(request: pytest.FixtureRequest) -> Iterator[SoftSwitch]:
    """A switch that is not serving yet, with a small receive buffer."""
    sw = _make(request.param)
    sw.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    try:
        yield sw
    finally:
        sw.close()


def _burst(member: int, count: int) -> list[bytes]:
    """``count`` datagrams, each moving one counter (see the module docstring)."""
    out = []
    x = np.ones(ELEMS, np.float32)
    for i in range(count):
        kind = i % 3
        if kind == 0:
            out.append(b"")
        elif kind == 1:
            out.append(b"\x01\x00" + bytes(proto.HEADER_LEN - 2))
        else:
            k = i // 3
            out.append(proto.encode_message(proto.gradient(x, job=0, worker=member,
                                                           slot=k % SLOTS, round_=k // SLOTS)))
    return out


def _settled(sw: SoftSwitch, quiet: float = 0.3, timeout: float = 60.0) -> None:
    """Wait until the switch has received nothing for ``quiet`` seconds."""
    last, since = -1, time.monotonic()
    deadline = since + timeout
    while time.monotonic() < deadline:
        n = sw.stats["receives"]
        if n != last:
            last, since = n, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
        time.sleep(0.02)
    raise TimeoutError("the switch kept receiving")


def test_kernel_drops_are_counted(idle_switch: SoftSwitch) -> None:
    sw = idle_switch
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sender.bind(("127.0.0.1", 0))
        ip, port = sender.getsockname()
        for name, value in (("AGG_MEMBERS", 2), ("AGG_SLOTS", SLOTS), ("AGG_ELEMS", ELEMS),
                            ("MEMBER_PORT_0", 1), ("MEMBER_IP_0", ip_to_int(ip)),
                            ("MEMBER_UDP_0", port), ("MEMBER_ROLE_0", ROLE_WORKER)):
            sw.write(name, value)
        burst = _burst(0, 600)
        for d in burst:
            sender.sendto(d, sw.address)
    finally:
        sender.close()
    sw.start()
    _settled(sw)
    with SwitchControl(sw.url) as ctl:
        overflow = ctl.read("SRV_RX_OVERFLOW")  # this request reports the kernel's count
        counters = ctl.counters()
    moved = sum(v for k, v in counters.items() if k != "CNT_DROP_BAD_INDEX"
                and not k.startswith("CNT_TX_"))
    assert overflow > 0, "the burst did not overflow the receive buffer"
    assert len(burst) == moved + overflow, (counters, overflow)
    kinds = [counters[k] for k in ("CNT_DROP_BAD_LENGTH", "CNT_DROP_BAD_HEADER", "CNT_RX_GRADIENT")]
    assert sum(kinds) == moved and min(kinds) > 0, counters
    assert sw.stats["datagrams"] == moved
    with SwitchControl(sw.url) as ctl:
        srv = ctl.server_counters()
    assert srv["SRV_RX_OVERFLOW"] == overflow == sw.stats["rx_overflow"]
    assert srv["SRV_CTRL_REFUSED"] == 0
    with SwitchControl(sw.url) as ctl:
        ctl.clear_counters()
        assert ctl.server_counters() == dict.fromkeys(regmap.SERVER_COUNTERS, 0)
        assert not any(ctl.counters().values())
    assert wait_for(lambda: sw.stats["rx_overflow"] == overflow)  # stats count since start
