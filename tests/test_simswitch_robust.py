"""The sim switch (``sim://``, the RTL behind the soft switch's server) on the edge cases.

* Two workers registered with ``MEMBER_UDP`` = 0 (any source port) on one host
  complete an all-reduce: multicast RESULTs go where each last sent from.
* ``MEMBER_PORT`` with more than one bit is refused on the control channel
  (status 3) and the register keeps its value.
* An empty datagram (a 42-byte frame) and datagrams making frames over 65535
  bytes (which the AXI4-Stream cannot carry) move the counters the model
  moves; :class:`~hostdrv.switch.rtl.RtlSwitch` counts the latter host-side and
  ``CTRL`` bit 31 clears those counts too.
* The server says ``netfpga-simswitch`` in what it prints.

The Verilator build is shared with ``tests/test_rtlsim.py`` (cached in
``sim_build/rtlsim/``).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import numpy as np
import pytest
from netutil import (
    any_port_allreduce,
    build_sim_rtl,
    check_any_port_allreduce,
    datagram_frame,
    send_datagrams,
    wait_for,
)

from hostdrv.client.control import ROLE_WORKER, RegisterError, SwitchControl
from hostdrv.client.transport import RegisterAccessError
from hostdrv.switch.reference import Egress, SwitchModel
from hostdrv.switch.rtl import RtlSwitch
from hostdrv.switch.sim import DEFAULT_PARAMS, SimSwitch
from hostdrv.wire import protocol as proto
from hostdrv.wire.control import ControlStatus

TOP = "nrl_switch"
PARAMS = dict(DEFAULT_PARAMS[TOP])


@pytest.fixture(scope="module")
def built() -> None:
    build_sim_rtl()


@pytest.fixture()
def sim(built: None) -> Iterator[SimSwitch]:
    with SimSwitch("127.0.0.1:0") as sw:
        yield sw


def test_any_port_members_complete_an_allreduce_through_sim(sim: SimSwitch) -> None:
    check_any_port_allreduce(any_port_allreduce(sim.url, timeout=0.5, retries=8))


def test_member_port_with_several_bits_is_refused_by_sim(sim: SimSwitch) -> None:
    with SwitchControl(sim.url) as ctl:
        ctl.write("MEMBER_PORT_5", 0x20)
        for bad in (0x03, 0x0F, 0x30):
            with pytest.raises(RegisterAccessError, match="MEMBER_PORT_5") as err:
                ctl.write("MEMBER_PORT_5", bad)
            assert err.value.status == ControlStatus.ILLEGAL_VALUE and err.value.value == bad
            assert ctl.read("MEMBER_PORT_5") == 0x20
        with pytest.raises(RegisterError, match="port=15"):
            ctl.set_member(5, port=0x0F, ip="127.0.0.1", udp=9, role=ROLE_WORKER)
        assert ctl.member(5)["port"] == 0x20


def _datagrams() -> list[bytes]:
    big = proto.encode_message(proto.gradient(np.ones(16, np.float32), job=0, worker=1, slot=0,
                                              round_=0))
    push = proto.encode_message(proto.push([bytes(128)], [1], job=0, worker=0, seq=1))
    return [b"", big + bytes(65494 - len(big)), push + bytes(65507 - len(push)),
            big + bytes(65493 - len(big))]


def test_empty_and_oversize_datagrams_are_counted_by_sim(sim: SimSwitch) -> None:
    model = SwitchModel(capacity=int(PARAMS["RPL_CAPACITY"]))
    send_datagrams(_datagrams(), sim.address, model)
    want = model.counters()
    # what the datagrams are for: 3 frames too short or too long, one of 65535 bytes
    # (the longest the RTL takes) from a worker outside the job
    assert (want["CNT_DROP_BAD_LENGTH"], want["CNT_DROP_UNKNOWN_WORKER"]) == (3, 1)
    assert (want["CNT_RX_GRADIENT"], want["CNT_RX_PUSH"]) == (2, 1)
    with SwitchControl(sim.url) as ctl:
        assert wait_for(lambda: ctl.counters() == want, timeout=30), (ctl.counters(), want)
        assert sim.stats["errors"] == 0 and sim.stats["datagrams"] == len(_datagrams())
        ctl.clear_counters()
        assert not any(ctl.counters().values())


def test_rtl_judges_frames_over_65535_bytes_as_the_model(built: None) -> None:
    with RtlSwitch(TOP, PARAMS) as rtl:
        model = SwitchModel(capacity=int(PARAMS["RPL_CAPACITY"]))
        for name, value in (("UDP_PORT", 0x1234), ("CTRL", 0x80000003)):
            rtl.write(name, value)
            model.write(name, value)
        msg = proto.encode_message(proto.gradient(np.ones(16, np.float32), job=0, worker=0,
                                                  slot=0, round_=0))
        frames = [datagram_frame(msg + bytes(65500 - len(msg)), ip_src=1, udp_src=2,
                                 udp_dst=0x1234),      # protocol frame: RX, then BAD_LENGTH
                  datagram_frame(msg + bytes(65500 - len(msg)), ip_src=1, udp_src=2,
                                 udp_dst=20050),       # not to UDP_PORT: forwarded, CNT_PASS
                  datagram_frame(msg, ip_src=1, udp_src=2, udp_dst=0x1234)]  # into the RTL
        for f in frames:
            got: list[Egress] = rtl.process(f, 0x01)
            want = model.process(f, 0x01)
            assert [(e.dst_ports, e.frame) for e in got] == [(e.dst_ports, e.frame) for e in want]
        assert rtl.counters() == model.counters()
        assert rtl.counters()["CNT_PASS"] == 1 and rtl.read("CNT_DROP_BAD_LENGTH") == 1
        with pytest.raises(ValueError, match="0 bytes"):
            rtl.process(b"", 0x01)
        rtl.write("CTRL", 0x80000003)
        assert not any(rtl.counters().values())


def test_sim_switch_names_itself_in_what_it_prints(sim: SimSwitch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert SimSwitch.log_name == "netfpga-simswitch"

    def broken(frame: bytes, port: int) -> list[Egress]:
        raise RuntimeError("broken on purpose")

    with sim.lock:
        sim.rtl.process = broken  # type: ignore[method-assign]
    raw = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        raw.sendto(b"\x01\x01", sim.address)
    finally:
        raw.close()
    assert wait_for(lambda: sim.stats["errors"] == 1)
    err = capsys.readouterr().err
    assert "netfpga-simswitch: datagram from" in err and "broken on purpose" in err
    assert "netfpga-softswitch" not in err
