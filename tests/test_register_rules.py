"""Register rules every switch holds (``docs/registers.md``, ``docs/protocol.md`` section 9).

* **Ranges.** A write outside a register's documented range is refused with
  control status 3 and changes nothing, on the soft switch (both engines) and
  the sim switch alike: ``AGG_THRESHOLD`` 0 or above ``AGG_MEMBERS``,
  ``AGG_MEMBERS`` below ``AGG_THRESHOLD``, ``AGG_EPOCH`` not a multiple of 2^24,
  and the other registers' widths and ranges. The verdict and the value kept
  come from the golden model given the same writes. ``configure_aggregation``
  orders its writes so that shrinking a job never breaks ``H <= N``.
* **Ordering.** A register read reflects every datagram the switch received
  before it: UPDATEs (which get no answer) followed at once by a read of
  ``RPL_TOTAL`` read what the model reads after the same UPDATEs. On the sim
  switch that needs the RTL drained before the read (``RtlSwitch.drain``):
  without it the read comes before the sum tree has taken the last pairs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest
from netutil import switch_factory

from hostdrv.client.control import RegisterError, SwitchControl
from hostdrv.client.replay import ReplayClient
from hostdrv.client.transport import RegisterAccessError
from hostdrv.switch.reference import SwitchModel
from hostdrv.switch.soft import SoftSwitch
from hostdrv.wire.control import ControlStatus


@pytest.fixture(params=["native", "model", "sim"])
def make_switch(request: pytest.FixtureRequest) -> Iterator[Callable[..., SoftSwitch]]:
    """A factory of started switches on loopback: the soft switch (either engine) or the
    sim switch; closed after the test."""
    with switch_factory(request.param) as make:
        yield make


# (register, value): legal and illegal writes in an order that exercises H <= N both ways
WRITES: list[tuple[str, int]] = [
    ("AGG_THRESHOLD", 0), ("AGG_THRESHOLD", 1),            # N = 0 at reset: no H fits
    ("AGG_MEMBERS", 4), ("AGG_THRESHOLD", 0), ("AGG_THRESHOLD", 5), ("AGG_THRESHOLD", 9),
    ("AGG_THRESHOLD", 3), ("AGG_MEMBERS", 2), ("AGG_MEMBERS", 0), ("AGG_MEMBERS", 9),
    ("AGG_MEMBERS", 3), ("AGG_THRESHOLD", 2), ("AGG_MEMBERS", 2), ("AGG_THRESHOLD", 2),
    ("AGG_EPOCH", 1), ("AGG_EPOCH", 0x00FFFFFF), ("AGG_EPOCH", 0x12345678),
    ("AGG_EPOCH", 0x12000000), ("AGG_EPOCH", 0xFF000000),
    ("AGG_SLOTS", 0), ("AGG_SLOTS", 65), ("AGG_SLOTS", 64), ("AGG_ELEMS", 24),
    ("AGG_ELEMS", 0), ("AGG_ELEMS", 368), ("AGG_ELEMS", 352), ("AGG_DTYPE", 2),
    ("AGG_MODE", 2), ("AGG_ROLE", 2), ("AGG_LEAF_ID", 8), ("AGG_PARENT_UDP", 0x10000),
    ("AGG_UPLINK_PORT", 3), ("MEMBER_PORT_2", 0x05), ("MEMBER_ROLE_2", 8),
    ("MEMBER_UDP_2", 0x10000), ("JOB_ID", 256), ("UDP_PORT", 0x10000), ("CTRL", 4),
    ("SWITCH_MAC_HI", 0x10000), ("RPL_RESET", 2),
]


def test_out_of_range_writes_are_refused(make_switch: Callable[..., SoftSwitch]) -> None:
    sw = make_switch()
    model = SwitchModel(capacity=1024, max_slots=64, max_elems=352)
    refused = 0
    with SwitchControl(sw.url) as ctl:
        for name, value in WRITES:
            try:
                model.write(name, value)
            except ValueError as e:
                why = str(e).split("out of range: ", 1)[-1]
                # sent as it is (the client's own width check is bypassed)
                with pytest.raises(RegisterAccessError) as err:
                    ctl._t.write(ctl._reg(name).addr, value)
                assert err.value.status == ControlStatus.ILLEGAL_VALUE, (name, value)
                assert why in err.value.text, (name, value, err.value.text)
                refused += 1
            else:
                ctl.write(name, value)
            assert ctl.read(name) == model.read(name), (name, value)
    assert refused >= 25


def test_configure_aggregation_keeps_threshold_within_members(
        make_switch: Callable[..., SoftSwitch]) -> None:
    sw = make_switch()
    with SwitchControl(sw.url) as ctl:
        ctl.configure_aggregation(members=6, slots=4, packet_elems=64, mode="async", threshold=5)
        assert (ctl.read("AGG_MEMBERS"), ctl.read("AGG_THRESHOLD")) == (6, 5)
        # fewer members than the old threshold: the threshold is lowered first
        ctl.configure_aggregation(members=3, slots=4, packet_elems=64, mode="async", threshold=2)
        assert (ctl.read("AGG_MEMBERS"), ctl.read("AGG_THRESHOLD")) == (3, 2)
        ctl.configure_aggregation(members=8, slots=4, packet_elems=64)  # sync: H = N
        assert (ctl.read("AGG_MEMBERS"), ctl.read("AGG_THRESHOLD")) == (8, 8)
        ctl.configure_aggregation(members=1, slots=4, packet_elems=64)
        assert (ctl.read("AGG_MEMBERS"), ctl.read("AGG_THRESHOLD")) == (1, 1)
        with pytest.raises(RegisterError, match="threshold"):
            ctl.configure_aggregation(members=2, slots=4, packet_elems=64, mode="async",
                                      threshold=0)


def test_read_after_updates_sees_them(make_switch: Callable[..., SoftSwitch]) -> None:
    """UPDATEs (no answer) then at once a read of RPL_TOTAL: what the model reads."""
    sw = make_switch()
    model = SoftSwitch("127.0.0.1:0", engine="model").start()
    try:
        got = {}
        for name, s in (("switch", sw), ("model", model)):
            with SwitchControl(s.url) as ctl:
                ctl.configure_replay()
                rc = ReplayClient(s.url, worker=0, obs_shape=(4,), control=ctl)
                n = 512
                for _ in range(0, n, 16):
                    rc.push_records(np.zeros((16, 128), np.uint8),
                                    np.full(16, 1 << 16, np.uint32))
                rng = np.random.default_rng(7)
                reads = []
                for _ in range(6):
                    idx = rng.integers(0, n, 384).astype(np.uint32)
                    rc.update_fixed(idx, rng.integers(1, 1 << 32, 384, dtype=np.uint64)
                                    .astype(np.uint32))
                    # the low word first: the read right after the last UPDATE
                    reads.append((ctl.read("RPL_TOTAL_LO"), ctl.read("RPL_TOTAL_HI")))
                rc.close()
            got[name] = reads
        assert got["switch"] == got["model"]
    finally:
        model.close()
