"""The switch RTL in Verilator (hostdrv.switch.rtl, hostdrv.switch.sim) against
the reference model.

* :class:`~hostdrv.switch.rtl.RtlSwitch` and :class:`~hostdrv.switch.reference.SwitchModel`
  get the same register writes and the same few dozen frames (the traffic of
  ``sim/common/switch_scenario.py`` that the cocotb switch testbench sends too:
  L2 traffic, gradient rounds with resends, drops, fp32 special values and a
  tensor length mismatch, replay pushes, uniform and prioritized samples, an
  update, malformed requests): every frame's outputs, every counter and the
  replay state registers must be identical.
* Two :class:`~hostdrv.client.aggregator.Aggregator` workers all-reduce through
  ``sim://`` (the soft switch's server running the RTL) and get the model's
  sum bit for bit.
* A ``JOBS`` = 4 build plays a conformance vector of several jobs and tables through
  :class:`~hostdrv.switch.rtl.RtlSwitch` exactly as the model.

The Verilator build is cached in ``sim_build/rtlsim/`` (the first run
compiles for about a minute; later runs load the cached model).
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator

import numpy as np
import pytest
from toolcheck import require_module, require_tool

from hostdrv.client.aggregator import Aggregator
from hostdrv.client.control import SwitchControl
from hostdrv.client.replay import ReplayClient
from hostdrv.switch import conformance as K
from hostdrv.switch.reference import SwitchModel, fp32_add
from hostdrv.switch.rtl import RtlSwitch, build_rtl
from hostdrv.switch.sim import DEFAULT_PARAMS, SimSwitch
from hostdrv.wire import regmap
from hostdrv.wire.consts import MAX_JOBS
from sim.common.switch_scenario import (
    SWITCH_MAC,
    agg_frames,
    config_writes,
    interleave,
    l2_frames,
    rpl_frames,
)
from sim.conformance import rtl_parameters

TOP = "nrl_switch"
PARAMS = dict(DEFAULT_PARAMS[TOP])
CAPACITY = int(PARAMS["RPL_CAPACITY"])
RECORD_BYTES = 128



@pytest.fixture(scope="module")
def rtl() -> Iterator[RtlSwitch]:
    require_tool("verilator", "hostdrv.switch.rtl's Verilator build of the switch")
    require_module("pyverilator", "hostdrv.switch.rtl's Verilator build of the switch")
    build_rtl(TOP, PARAMS)  # a missing RTL file raises FileNotFoundError: a failure
    sw = RtlSwitch(TOP, PARAMS)
    try:
        yield sw
    finally:
        sw.close()


# ---------------------------------------------------------------------------
# tests


def test_rtl_matches_model_frame_by_frame(rtl: RtlSwitch) -> None:
    model = SwitchModel(capacity=CAPACITY, record_bytes=RECORD_BYTES,
                        max_slots=rtl.read("AGG_MAX_SLOTS"), max_elems=rtl.read("AGG_MAX_ELEMS"))
    rtl.reset()
    rtl.write("RPL_RESET", 1)
    rtl.write("CTRL", 0x80000003)
    for name, value in config_writes():
        rtl.write(name, value)
        model.write(name, value)
    for name in ("MAGIC", "VERSION", "RPL_CAPACITY", "RPL_RECORD_BYTES", "AGG_SLOTS",
                 "MEMBER_IP_4", "JOB_ID"):
        assert rtl.read(name) == model.read(name), name
    with pytest.raises(ValueError, match="out of range"):
        rtl.write("AGG_ELEMS", 17)
    with pytest.raises(ValueError, match="read-only"):
        rtl.write("MAGIC", 1)

    prng = random.Random(5)
    nrng = np.random.default_rng(5)
    frames = interleave(prng, l2_frames(prng), agg_frames(nrng), rpl_frames(nrng, RECORD_BYTES))
    assert len(frames) >= 40, len(frames)
    emitted = 0
    for i, (frame, port) in enumerate(frames):
        want = model.process(frame, port)
        got = rtl.process(frame, port)
        assert [(e.dst_ports, e.frame.hex()) for e in got] == \
               [(e.dst_ports, e.frame.hex()) for e in want], \
               f"frame {i} (opcode {frame[43] if len(frame) > 43 else None}) from port {port:#x}"
        emitted += len(want)
    assert emitted > 40
    assert rtl.tuser_length_errors == 0
    assert rtl.counters() == model.counters()
    for name in ("RPL_SIZE", "RPL_WPTR", "RPL_TOTAL_LO", "RPL_TOTAL_HI"):
        assert rtl.read(name) == model.read(name), name
    rtl.write("CTRL", 0x80000003)
    assert not any(rtl.counters().values())
    assert all(regmap.REGISTERS[n].access == "rc" for n in rtl.counters())


def test_burst_at_line_rate_keeps_each_engines_order(rtl: RtlSwitch) -> None:
    """Back-to-back frames (one beat per clock): per engine, the model's outputs in order."""
    model = SwitchModel(capacity=CAPACITY, record_bytes=RECORD_BYTES,
                        max_slots=rtl.read("AGG_MAX_SLOTS"), max_elems=rtl.read("AGG_MAX_ELEMS"))
    rtl.reset()
    for name, value in config_writes():
        rtl.write(name, value)
        model.write(name, value)
    prng = random.Random(9)
    nrng = np.random.default_rng(9)
    frames = interleave(prng, l2_frames(prng), agg_frames(nrng), rpl_frames(nrng, RECORD_BYTES))
    want = [e for f, p in frames for e in model.process(f, p)]
    got = rtl.process_burst(frames)

    def engine(frame: bytes) -> str:
        if frame[6:12] != SWITCH_MAC:
            return "l2"
        return "rpl" if 3 <= frame[43] <= 7 else "agg"

    for cls in ("l2", "agg", "rpl"):
        assert [(e.dst_ports, e.frame) for e in got if engine(e.frame) == cls] == \
               [(e.dst_ports, e.frame) for e in want if engine(e.frame) == cls], cls
    assert rtl.counters() == model.counters()


def test_allreduce_through_sim_url_equals_model_sum() -> None:
    require_tool("verilator", "hostdrv.switch.rtl's Verilator build of the switch")
    require_module("pyverilator", "hostdrv.switch.rtl's Verilator build of the switch")
    build_rtl(TOP, PARAMS)  # a missing RTL file raises FileNotFoundError: a failure
    size, slots, packet_elems = 200, 4, 32
    rng = np.random.default_rng(21)
    inputs = [[(rng.standard_normal(size) * 10).astype(np.float32) for _ in range(2)]
              for _ in range(2)]                     # [worker][call]
    results: list[list[np.ndarray]] = [[], []]
    errors: list[BaseException] = []
    with SimSwitch("127.0.0.1:0") as sw:
        assert sw.url.startswith("sim://")
        ctl = SwitchControl(sw.url)
        assert ctl.read("MAGIC") == regmap.REGISTERS["MAGIC"].reset
        ctl.configure_aggregation(members=2, slots=slots, packet_elems=packet_elems)
        aggs = [Aggregator(sw.url, worker=w, timeout=0.5)
                for w in range(2)]

        def work(w: int) -> None:
            try:
                for call in range(2):
                    results[w].append(np.asarray(aggs[w].allreduce(inputs[w][call])))
            except BaseException as e:  # noqa: BLE001 - reported by the main thread
                errors.append(e)

        threads = [threading.Thread(target=work, args=(w,)) for w in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        counters = ctl.counters()
        for a in aggs:
            a.close()
        ctl.close()
        sim = sw.sim_stats
    assert not errors, errors
    chunks = -(-size // packet_elems)
    for call in range(2):
        want = fp32_add(inputs[0][call], inputs[1][call])
        for w in range(2):
            got = results[w][call]
            assert got.dtype == np.float32 and got.shape == (size,)
            np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    assert counters["CNT_TX_RESULT"] == 2 * chunks
    assert counters["CNT_DROP_SPOOFED"] == counters["CNT_DROP_UNKNOWN_WORKER"] == 0
    assert sim["cycles"] > 0


def test_replay_client_through_sim_url() -> None:
    require_tool("verilator", "hostdrv.switch.rtl's Verilator build of the switch")
    require_module("pyverilator", "hostdrv.switch.rtl's Verilator build of the switch")
    build_rtl(TOP, PARAMS)  # a missing RTL file raises FileNotFoundError: a failure
    with SimSwitch("127.0.0.1:0") as sw:
        ctl = SwitchControl(sw.url)
        ctl.write("JOB_ID", 0)
        ctl.write("RPL_SEED", 99)
        rc = ReplayClient(sw.url, worker=0, obs_shape=(4,), timeout=0.5)
        n = 40
        obs = np.arange(n * 4, dtype=np.float32).reshape(n, 4)
        rc.push(obs, np.arange(n), np.ones(n, np.float32), obs + 1, np.zeros(n, bool))
        assert ctl.read("RPL_SIZE") == n
        batch = rc.sample(16, prioritized=True)
        assert len(batch.indices) == 16
        assert (batch.indices < n).all()
        np.testing.assert_array_equal(batch.obs, obs[batch.indices])
        rc.close()
        ctl.close()


def test_job_pages_and_table(rtl: RtlSwitch) -> None:
    """A one-job RTL (docs/protocol.md section 11): JOBS and the fixed share read as the model's
    and refuse writes as the model, JOB_LEASE round-trips, and a page beyond JOBS is no register, as the model says (it never
    reaches the bus, where the RTL would answer SLVERR)."""
    model = SwitchModel(capacity=rtl.read("RPL_CAPACITY"), record_bytes=rtl.read("RPL_RECORD_BYTES"),
                        max_slots=rtl.read("AGG_MAX_SLOTS"), max_elems=rtl.read("AGG_MAX_ELEMS"))
    assert rtl.jobs == rtl.read("JOBS") == model.read("JOBS")
    for r in regmap.REGISTERS.values():
        if not r.admin:
            continue
        try:  # the fixed share: the model refuses even its own value; so does the RTL
            model.write(r.name, model.read(r.name))
        except ValueError:
            assert rtl.read(r.name) == model.read(r.name), r.name
            with pytest.raises(ValueError):
                rtl.write(r.name, model.read(r.name))
    lease = rtl.read("JOB_LEASE")
    rtl.write("JOB_LEASE", lease ^ 0x5A5A5A5A)
    assert rtl.read("JOB_LEASE") == lease ^ 0x5A5A5A5A
    rtl.write(regmap.JOB_LEASE, lease)
    assert rtl.read(regmap.JOB_LEASE) == lease
    for page in range(rtl.jobs, MAX_JOBS):
        addr = regmap.job_address("JOB_LEASE", page)
        with pytest.raises(ValueError):
            model.read(addr)
        with pytest.raises(ValueError):
            rtl.read(addr)
        with pytest.raises(ValueError):
            rtl.write(addr, 1)
        with pytest.raises(ValueError):
            rtl.read("JOB_LEASE", job=page)


def test_several_jobs_on_the_sim_switch() -> None:
    """nrl_switch built with ``JOBS`` = 4 behind :class:`RtlSwitch` (what ``netfpga-simswitch
    --param JOBS=4`` serves) plays a conformance vector of several jobs (protocol section 11:
    three jobs carved out of the slot and record memories, interleaved aggregation and replay,
    refused carvings, jobs disabled and re-enabled) exactly as the model: every result, every
    page's counters after every operation and every register at the end. The host-side
    register checks (:meth:`RtlSwitch.write`'s validator) judge the share rules as the model
    with the RTL's memories."""
    require_tool("verilator", "hostdrv.switch.rtl's Verilator build of the switch")
    require_module("pyverilator", "hostdrv.switch.rtl's Verilator build of the switch")
    vector = K.rtl_vector(next(v for v in K.vectors() if v.name.startswith("jobs")))
    params = rtl_parameters(vector.params)
    build_rtl(TOP, params)
    sw = RtlSwitch(TOP, params)
    try:
        assert sw.jobs == 4 == sw.read("JOBS")
        got = K.run(vector, sw)
    finally:
        sw.close()
    assert K.compare(vector, K.run(vector, SwitchModel(**vector.params)), got) == ""
