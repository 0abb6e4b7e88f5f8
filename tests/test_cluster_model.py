"""Properties of the cluster model (``scripts/cluster_model.py``): hops, tree, window, validation.

The command re-exports its modules' names: the model (``cluster_analytic``), the
calibration (``cluster_calibration``) and the report (``cluster_report``).
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from hostdrv.wire.consts import MAX_MEMBERS

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "data"


@pytest.fixture(scope="module")
def cm() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cluster_model", ROOT / "scripts" / "cluster_model.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["cluster_model"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def host(cm: ModuleType) -> dict:
    return cm.host_costs_from(json.loads((DATA / "host_costs.json").read_text()))


def equal_hosts(cm: ModuleType) -> dict:
    """The same host cost for every strategy: only the network differs."""
    h = cm.HostCost(((4096.0, 1e-4), (4e6, 2e-3)))
    return {"ps": h, "allreduce": h, "inswitch": h}


@pytest.mark.parametrize("n", [2, 3, 4, 6, 8, 12, 33, 64])
def test_ring_latency_is_4n_minus_4_hops(cm: ModuleType, host: dict, n: int) -> None:
    levels = cm.tree_levels(n, MAX_MEMBERS)
    assert cm.latency_hops("allreduce", n) == (4 * n - 4) * levels
    a = cm.aggregation("allreduce", n, 1e5, cm.Network(delay_us=1.0), host)
    b = cm.aggregation("allreduce", n, 1e5, cm.Network(delay_us=11.0), host)
    assert b.latency - a.latency == pytest.approx((4 * n - 4) * levels * 10e-6)
    assert b.serialization == a.serialization


def test_ps_and_switch_hops(cm: ModuleType) -> None:
    assert cm.latency_hops("ps", 4) == 4
    assert cm.latency_hops("inswitch", 4) == cm.latency_hops("iswitch", 4) == 2
    with pytest.raises(ValueError, match="strategy"):
        cm.latency_hops("gossip", 4)


def test_hierarchy_kicks_in_above_eight(cm: ModuleType, host: dict) -> None:
    assert MAX_MEMBERS == 8
    assert [cm.tree_levels(n, MAX_MEMBERS) for n in (1, 8, 9, 64)] == [1, 1, 2, 2]
    with pytest.raises(ValueError, match="two-level"):
        cm.tree_levels(65, MAX_MEMBERS)
    assert cm.latency_hops("inswitch", 8) == 2 and cm.latency_hops("inswitch", 9) == 4
    net = cm.Network(delay_us=20.0)
    t8 = cm.aggregation("inswitch", 8, 1e5, net, host)
    t9 = cm.aggregation("inswitch", 9, 1e5, net, host)
    assert t9.latency - t8.latency > 2 * 20e-6  # two more link crossings and two more switches


@pytest.mark.parametrize("rate", [10.0, 40.0, 100.0])
@pytest.mark.parametrize("n", [4, 8, 16, 64])
def test_inswitch_beats_ps_and_ring_for_large_gradients(cm: ModuleType, rate: float,
                                                        n: int) -> None:
    hosts = equal_hosts(cm)
    net = cm.Network(rate_gbps=rate)
    g = 6.7e6
    t = {s: cm.aggregation(s, n, g, net, hosts).total for s in cm.STRATEGIES}
    assert t["inswitch"] < t["ps"]
    assert t["inswitch"] < t["allreduce"]
    # the PS's NIC carries N gradients each way: its serialization grows with N
    assert cm.aggregation("ps", n, g, net, hosts).serialization == pytest.approx(
        2 * n * cm.tcp_wire_bytes(g, net.mtu) * net.byte_s)


def test_window_bounds_ours_not_iswitch(cm: ModuleType) -> None:
    host = equal_hosts(cm)
    g = 4e6
    near = cm.Network(rate_gbps=100.0, delay_us=0.5)
    far = cm.Network(rate_gbps=100.0, delay_us=100.0)
    a = cm.aggregation("inswitch", 4, g, near, host)
    b = cm.aggregation("iswitch", 4, g, near, host)
    assert a.total == pytest.approx(b.total) and a.parts["window_bound"] == 0.0
    a = cm.aggregation("inswitch", 4, g, far, host)
    b = cm.aggregation("iswitch", 4, g, far, host)
    assert a.parts["window_bound"] == 1.0 and a.total > 1.5 * b.total
    chunks = math.ceil(g / 4 / far.packet_elems)
    assert a.serialization == pytest.approx((chunks - 1) * a.parts["rtt1"] / far.slots)


def test_round_computes_split(cm: ModuleType, host: dict) -> None:
    even = cm.Workload("x", 1e5, 0.08, 8)
    ppo = cm.Workload("x", 1e5, 0.08, 8, first_round_share=0.58)
    assert even.round_computes() == pytest.approx([0.01] * 8)
    assert sum(ppo.round_computes()) == pytest.approx(0.08)
    assert ppo.round_computes()[0] == pytest.approx(0.58 * 0.08)
    # the wait term uses them: a front-loaded iteration waits differently than an even one
    net = cm.Network()
    a = cm.iteration("inswitch", "sync", 4, even, net, host, wait=True)["comm"]
    b = cm.iteration("inswitch", "sync", 4, ppo, net, host, wait=True)["comm"]
    bare = cm.iteration("inswitch", "sync", 4, even, net, host)["comm"]
    assert a != pytest.approx(b) and min(a, b) > bare


def test_async_never_slower_than_sync(cm: ModuleType, host: dict) -> None:
    for c in (1e-3, 0.1, 2.0):
        w = cm.Workload("x", 1e6, c, 3)
        for s in cm.STRATEGIES:
            sy = cm.iteration(s, "sync", 4, w, cm.Network(), host)["total"]
            asy = cm.iteration(s, "async", 4, w, cm.Network(), host)["total"]
            assert c <= asy <= sy


def test_rack_json_is_the_rack_md_table(cm: ModuleType) -> None:
    rack = json.loads((DATA / "rack.json").read_text())
    parsed = cm.parse_rack_md((ROOT / "docs" / "rack.md").read_text())
    assert parsed["rows"] == rack["rows"]
    assert len(rack["rows"]) == 36
    assert parsed["rtt_switch_us"] == rack["rtt_switch_us"]


def test_rack_json_p_under_its_old_key_still_reads(cm: ModuleType) -> None:
    """rack.json's P is ``packet_elems``; a file written when it was ``elems`` still reads."""
    rack = json.loads((DATA / "rack.json").read_text())
    host_data = json.loads((DATA / "host_costs.json").read_text())
    old = {("elems" if k == "packet_elems" else k): v for k, v in rack.items()}
    assert "packet_elems" in rack and "elems" in old
    assert cm.validate(old, host_data) == cm.validate(rack, host_data)


def test_validation_reproduces_its_error(cm: ModuleType, host: dict) -> None:
    rack = json.loads((DATA / "rack.json").read_text())
    host_data = json.loads((DATA / "host_costs.json").read_text())
    val = cm.validate(rack, host_data)
    assert {r["delay_us"] for r in val["rows"]} == {0.0, 50.0}
    assert len(val["rows"]) == 24
    errs = []
    for r in val["rows"]:
        row = next(x for x in rack["rows"] if (x["algo"], x["delay_us"], x["sync"])
                   == (r["algo"], r["delay_us"], r["sync"]))
        gb, rounds, share = cm.rack_workloads(rack)[r["algo"]]
        w = cm.Workload(r["algo"], gb, row["compute_ms"] * 1e-3, rounds, first_round_share=share)
        net = cm.rack_network(rack, r["delay_us"], host_data)
        m = cm.iteration(r["sync"], "sync", 4, w, net, host, wait=True)
        errs.append((1e3 * m["comm"] - row["comm_ms"]) / row["comm_ms"])
        assert r["error"] == pytest.approx(errs[-1], abs=1e-4)
    assert val["max_error"] == pytest.approx(max(abs(e) for e in errs), abs=1e-4)
    results = ROOT / "docs" / "results.md"
    if results.exists():  # the error docs/results.md states is the one the data give
        m = re.search(r"model_vs_rack_error=([\d.]+)", results.read_text())
        assert m and float(m[1]) == pytest.approx(round(val["max_error"], 3), abs=1e-3)


def test_final_line_has_the_keys(cm: ModuleType, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    # a workloads.json in scripts/bench_workloads.py's schema (version 1)
    wl = {"schema": 1, "workers": 4, "workloads": {
        "dqn_atari": {"algo": "dqn", "env": "ALE/Pong-v5", "params": 1_687_206,
                      "grad_bytes": 6_748_824, "rounds_per_iteration": 1.0,
                      "compute_s": {"mean": 0.14, "median": 0.13, "n": 10}},
        "ppo_mujoco": {"algo": "ppo", "env": "HalfCheetah-v5", "params": 11_085,
                       "grad_bytes": 44_340, "rounds_per_iteration": 64.0,
                       "compute_s": {"mean": 2.0, "median": 1.9, "n": 10}},
        "a2c_atari": {"algo": "a2c", "params": 10, "grad_bytes": None,
                      "compute_s": {"mean": None, "median": None, "n": 0}}}}
    path = tmp_path / "workloads.json"
    path.write_text(json.dumps(wl))
    loaded = cm.workloads_from(wl, "test")
    assert set(loaded) == {"dqn", "ppo"}  # a2c has no compute: left out
    assert loaded["ppo"].rounds == 64 and loaded["dqn"].compute_s == 0.13
    assert cm.main(["--workloads", str(path), "--replay", str(tmp_path / "none.json")]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    kv = dict(t.split("=", 1) for t in last.split())
    for key in ("model_vs_rack_error", "dqn_sync_vs_ps", "dqn_async_vs_ps",
                "ppo_sync_scaling_12"):
        assert math.isfinite(float(kv[key])), key
    assert float(kv["dqn_sync_vs_ps"]) > 1.0  # 6.7 MB: the switch beats the PS
    assert 1.0 <= float(kv["ppo_sync_scaling_12"]) <= 3.0  # at most ideal (12/4)


def test_replay_cuts_two_hops_against_four(cm: ModuleType) -> None:
    # scripts/bench_replay_host.py's layout: figures[R][kind][actors]
    def kind(push: float, uni: float, prio: float) -> dict:
        return {"4": {"push_us": push, "uniform_us": uni, "prioritized_us": prio}}

    data = {"figures": {"128": {"innet": kind(100.0, 50.0, 80.0),
                                "server": kind(150.0, 100.0, 200.0)}}}
    near = cm.replay_cuts(data, cm.Network(rate_gbps=40.0, delay_us=0.0))
    far = cm.replay_cuts(data, cm.Network(rate_gbps=40.0, delay_us=100.0))
    for k in ("replay_access", "prioritized"):
        assert near[k]["cut_loopback"] == far[k]["cut_loopback"]
        assert far[k]["server_us"] - near[k]["server_us"] == pytest.approx(400.0)  # 4 hops
        assert far[k]["innet_us"] - near[k]["innet_us"] == pytest.approx(200.0)  # 2 hops
    assert near["replay_access"]["cut_loopback"] == pytest.approx(1 - 150 / 250)


def test_workloads_prefer_cpu_compute(cm: ModuleType) -> None:
    wl = {"workloads": {"dqn_atari": {"algo": "dqn", "grad_bytes": 8,
                                      "compute_s": {"median": 0.3},
                                      "compute_cpu_s": {"median": 0.04}}}}
    assert cm.workloads_from(wl, "t")["dqn"].compute_s == 0.04
    assert cm.workloads_from(wl, "t", compute="wall")["dqn"].compute_s == 0.3


def test_calibration_selects_least_disturbed_repeat(cm: ModuleType) -> None:
    def run(rounds: float, compute: float, comm: float) -> dict:
        return {"rounds": {s: [rounds, 2 * rounds] for s in ("inswitch", "ps", "allreduce")},
                "sync_wait": {s: [{"solo_compute_s": 0.005, "grad_bytes": 8192,
                                   "compute_s": compute, "comm_s": comm}]
                              for s in ("inswitch", "ps", "allreduce")}}

    out = {"sizes_elems": [2048, 16384], "strategies": {}, "sync_wait": {},
           "all": [run(0.3e-3, 0.030, 0.020), run(0.2e-3, 0.012, 0.009), run(0.4e-3, 0.020, 0.001)]}
    cm.select_repeats(out)
    assert out["repeats"] == 3
    assert out["strategies"]["ps"]["round_s"] == [0.2e-3, 0.4e-3]
    assert out["sync_wait"]["inswitch"][0]["compute_s"] == 0.012  # inflation 2.4, the least
