"""ReplayClient at the papers' scale (issue 26): a soft switch of 2**20 records of an Atari
frame record (R = 7104), stacked samples with validity, PUSH sizes from the path MTU, and the
MTU check that refuses a record a 1500-byte path cannot carry before anything is sent."""

from __future__ import annotations

import struct
from collections.abc import Iterator

import numpy as np
import pytest

from hostdrv import ReplayClient, SoftSwitch, SwitchControl
from hostdrv.switch.soft import replay_memory_bytes
from hostdrv.wire.records import StackedSample, push_count

R = 7104
CAP = 1 << 20


@pytest.fixture(scope="module")
def switch() -> Iterator[SoftSwitch]:
    sw = SoftSwitch(capacity=CAP, record_bytes=R, engine="native").start()
    try:
        with SwitchControl(sw.url) as ctl:
            ctl.configure_replay(seed=99)
        yield sw
    finally:
        sw.close()


def _records(actor: int, first: int, n: int) -> np.ndarray:
    out = np.zeros((n, R), np.uint8)
    for j in range(n):
        out[j, :8] = np.frombuffer(struct.pack("<II", actor, first + j), np.uint8)
        out[j, 8:] = (actor * 31 + first + j) % 251
    return out


def test_memory_at_two_to_the_twenty() -> None:
    assert replay_memory_bytes(CAP, R) == CAP * (R + 25)
    assert 6.9 < replay_memory_bytes(CAP, R) / 2**30 < 7


def test_stacked_samples_through_the_soft_switch(switch: SoftSwitch) -> None:
    a = ReplayClient(switch.url, worker=1, obs_shape=None)
    b = ReplayClient(switch.url, worker=2, obs_shape=None)
    assert a.mtu is not None and a.mtu >= 65535  # loopback
    assert a.push_batch == push_count(R, a.mtu) == 9
    n = {1: 0, 2: 0}
    for rnd in range(6):  # the two actors' PUSHes interleave in the ring
        for c in (a, b):
            k = 3 + rnd % 4
            idx = c.push_records(_records(c.worker, n[c.worker] + 1, k), np.full(k, 65536))
            assert len(idx) == k
            n[c.worker] += k
    s = a.sample(32, prioritized=True, stack=5)
    assert isinstance(s, StackedSample) and s.records.shape == (32, 5, R) and s.stack == 5
    for i in range(32):
        actor, m = struct.unpack_from("<II", s.records[i, -1].tobytes())
        got = [struct.unpack_from("<II", s.records[i, j].tobytes()) for j in range(5)
               if s.valid[i, j]]
        assert got == [(actor, x) for x in range(max(m - 4, 1), m + 1)]
        assert not s.records[i, ~s.valid[i]].any()
        assert (s.stack_indices[i, ~s.valid[i]] == -1).all()
    assert (s.indices == s.stack_indices[:, -1]).all()
    plain = a.sample(8, prioritized=False, stack=1)
    assert plain.records.shape == (8, R)
    a.close()
    b.close()


def test_a_record_too_large_for_the_path_is_refused(switch: SoftSwitch) -> None:
    with pytest.raises(ValueError) as e:
        ReplayClient(switch.url, worker=3, obs_shape=None, mtu=1500)
    msg = str(e.value)
    for part in ("7104", "MTU 1500", "7218", "jumbo", "mtu=", "1344"):
        assert part in msg, (part, msg)
    with SwitchControl(switch.url) as ctl:
        assert ctl.read("CNT_RX_PUSH") == ctl.read("CNT_RX_PUSH")  # readable: nothing hung
    c = ReplayClient(switch.url, worker=3, obs_shape=None, mtu=9000)
    assert c.push_batch == 1  # one 7104-byte record per jumbo frame
    c.close()


def test_the_soft_switch_prints_its_replay_memory() -> None:
    """``netfpga-softswitch --capacity 2**20 --record-bytes 8192`` starts at once (the native
    engine's records are zero pages until written) and says on stderr what it reserves."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "hostdrv.switch.soft", "--listen",
                             "127.0.0.1:0", "--capacity", str(CAP), "--record-bytes", "8192"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        line = proc.stdout.readline()
        assert line.startswith("listening soft://"), line
        err = proc.stderr.readline()
        assert f"replay memory {CAP} records x 8192 bytes: 8.02 GiB" in err, err
    finally:
        proc.terminate()
        proc.wait(timeout=30)
