"""The rack on one machine (``scripts/rack.py``): host namespaces around a switch namespace.

* A 4-host rack: an int32 all-reduce with :class:`hostdrv.Aggregator`, one
  worker in each host namespace, through the soft switch in the switch
  namespace, is bit-identical to numpy's sum of the four inputs.
* The links are shaped: TCP goodput between two hosts is the ``tc`` rate
  (changed to 100 Mbit/s for the measurement), and the round trip to the
  switch with a 1 ms delay line is at least two link delays.
* The RTL as the switch (``switch="rtl"``, 2 hosts): ARP/UDP/ICMP between the
  hosts and an int32 all-reduce over ``eth://`` cross the Verilator model, and
  torchrun trains PPO through it.
* torchrun across the 4 host namespaces (one node each, c10d rendezvous on
  host 0's rack address) trains PPO with in-switch sync (the ``netrl``
  backend) on the rack's soft switch: every rank ends with the same weights.

* Three jobs on the rack's switch (``--jobs 4``): two aggregation jobs and a replay job at
  once (``scripts/bench_multijob.py role``), each exact, each page's counters its own job's.

Every test builds its own rack with a unique prefix and removes it, also when
it fails. They need root and network namespaces (the one machine-dependent
skip, listed in ``tests/test_ci_policy.py``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]


def _load_rack() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rack", REPO / "scripts" / "rack.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("rack", mod)
    spec.loader.exec_module(mod)
    return mod


rackmod = _load_rack()


def _namespaces_permitted() -> str | None:
    """None when this machine lets us build a rack, else why not."""
    if not sys.platform.startswith("linux"):
        return "network namespaces need Linux"
    if os.geteuid() != 0:
        return "the rack needs root (ip netns, veth, tc, AF_PACKET)"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"the rack needs iproute2's {tool!r}"
    name = rackmod.unique_prefix("nrlprobe")[:12] + "-sw"
    r = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    if r.returncode:
        return f"cannot create a network namespace: {r.stderr.strip()}"
    return None


@pytest.fixture(scope="module")
def permitted() -> None:
    why = _namespaces_permitted()
    if why:
        pytest.skip(why)


@contextlib.contextmanager
def _rack(**kw: object) -> Iterator[Any]:
    rack = rackmod.Rack(rackmod.RackConfig(prefix=rackmod.unique_prefix("nrt"), **kw))
    try:
        yield rack.up()
    finally:
        rack.down()
        assert not rack.exists()


@pytest.fixture
def rack4(permitted: None) -> Iterator[Any]:
    with _rack(hosts=4) as rack:
        yield rack


ALLREDUCE = textwrap.dedent("""
    import os, sys
    import numpy as np
    from hostdrv import Aggregator
    i = int(os.environ["RACK_HOST"])
    url = sys.argv[1]
    x = np.random.default_rng([7, i]).integers(-(1 << 24), 1 << 24, size=int(sys.argv[2]),
                                               dtype=np.int32)
    with Aggregator(url, worker=i, timeout=0.2) as agg:
        for _ in range(3):
            y = agg.allreduce(x)
    np.save(sys.argv[3] + f"/out{i}.npy", y)
""")


def test_allreduce_across_host_namespaces(rack4: Any, tmp_path: Path) -> None:
    n, size = 4, 5000
    url = rack4.switch_url
    r = rack4.run(0, [sys.executable, "-c",
                      "import sys; from hostdrv import SwitchControl as C;"
                      "c = C(sys.argv[1]); c.configure_aggregation(members=4, slots=8, "
                      "packet_elems=352, dtype='int32'); c.close()", url], timeout=60)
    assert r.returncode == 0, r.stderr
    results = rack4.run_all([sys.executable, "-c", ALLREDUCE, url, str(size), str(tmp_path)],
                            timeout=120)
    assert all(rc == 0 for rc, _o, _e in results), results
    inputs = [np.random.default_rng([7, i]).integers(-(1 << 24), 1 << 24, size=size,
                                                     dtype=np.int32) for i in range(n)]
    expected = np.sum(np.stack(inputs), axis=0, dtype=np.int32)
    for i in range(n):
        got = np.load(tmp_path / f"out{i}.npy")
        assert got.dtype == np.int32 and np.array_equal(got, expected), i


def test_rate_limit_and_delay_are_in_effect(permitted: None) -> None:
    delay_us = 1000.0
    with _rack(hosts=2, delay_us=delay_us) as rack:
        rack.set_rate(0, "100mbit")
        rack.set_rate(1, "100mbit")
        rate = rackmod.measure_rate(rack, 0, 1, seconds=1.0)
        assert 0.7 * 12.5e6 < rate < 1.05 * 12.5e6, rate
        rtt = sorted(rackmod.measure_rtt(rack, 0, None, n=40))
        # two link crossings: at least 2 ms, the median within 1.5 ms of it (a loaded machine)
        assert rtt[0] >= 2 * delay_us * 1e-6, rtt
        assert rtt[len(rtt) // 2] < 2 * delay_us * 1e-6 + 1.5e-3, rtt
        # host to host: four link crossings
        rtt = sorted(rackmod.measure_rtt(rack, 0, 1, n=20))
        assert rtt[0] >= 4 * delay_us * 1e-6, rtt
        status = rack.status()
        assert any("rate 100Mbit" in q for q in status[rack.host_ns(0)]["qdisc"]), status


def test_cli_up_run_down_and_cleanup_after_a_crash(permitted: None) -> None:
    """The command line (``scripts/rack.py``, parsed by ``scripts/rack_cli.py``): up, run on
    every host, status; a second up of the same prefix is refused; down removes the rack, also the processes a "crashed" session left inside it,
    and doing it again is harmless."""
    prefix = rackmod.unique_prefix("nrt")
    cli = [sys.executable, str(REPO / "scripts" / "rack.py")]
    try:
        r = subprocess.run([*cli, "up", "--prefix", prefix, "--hosts", "2", "--switch", "bridge"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        r = subprocess.run([*cli, "up", "--prefix", prefix, "--hosts", "2"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and "exists" in r.stderr
        r = subprocess.run([*cli, "run", "--prefix", prefix, "--host", "all", "--",
                            sys.executable, "-c",
                            "import os, socket; print(socket.gethostname(), "
                            "os.environ['RACK_HOST_IP'])"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert sorted(r.stdout.split("\n")[:2]) == ["[h0] rack-h0 10.77.0.1",
                                                    "[h1] rack-h1 10.77.0.2"], r.stdout
        # a process left behind in a host namespace, as after a crash
        rack = rackmod._load(prefix)
        orphan = rack.popen(1, ["sleep", "300"])
        r = subprocess.run([*cli, "status", "--prefix", prefix], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0 and f"{prefix}-h1" in r.stdout and "tbf" in r.stdout
    finally:
        subprocess.run([*cli, "down", "--prefix", prefix], capture_output=True, timeout=60)
    assert orphan.wait(timeout=10) != 0
    assert not rack.exists()
    assert not (rackmod.ETC_NETNS / f"{prefix}-h0").exists()
    r = subprocess.run([*cli, "down", "--prefix", prefix], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and "removed 0 namespaces" in r.stdout


PPO_ARGS = ["--algo", "ppo", "--seed", "3", "--total-steps", str(3 * 2 * 16 * 4),
            "--num-steps", "16", "--hidden", "16", "--update-epochs", "2", "--target", "nan",
            "--no-progress", "--packet-elems", "352"]
"""PPO, 3 iterations of 2 minibatches x 2 epochs per rank: 12 aggregation rounds."""

COUNTER = textwrap.dedent("""
    import sys
    from hostdrv import SwitchControl
    with SwitchControl(sys.argv[1]) as c:
        print(c.read(sys.argv[2]))
""")


def test_torchrun_trains_across_host_namespaces(rack4: Any, tmp_path: Path) -> None:
    """torchrun, one node per host namespace, c10d rendezvous on host 0's rack address,
    in-switch sync through the netrl backend on the rack's soft switch."""
    endpoint = f"{rack4.host_ip(0)}:29400"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes=4", "--nproc-per-node=1",
           "--rdzv-backend=c10d", f"--rdzv-endpoint={endpoint}", "--rdzv-id=racktest",
           "--max-restarts=0", "-m", "rl", "train", *PPO_ARGS, "--sync", "inswitch",
           "--switch", rack4.switch_url, "--runs-dir", str(tmp_path), "--name", "ppo"]
    results = rack4.run_all(cmd, env={"OMP_NUM_THREADS": "1"}, timeout=300)
    assert all(rc == 0 for rc, _o, _e in results), [e[-3000:] for _rc, _o, e in results]
    ranks = json.loads((tmp_path / "ppo" / "ranks.json").read_text())
    assert [r["rank"] for r in ranks] == [0, 1, 2, 3]
    assert len({r["params_digest"] for r in ranks}) == 1, ranks  # the ranks agree
    assert sorted(r["address"] for r in ranks) == [rack4.host_ip(i) for i in range(4)]
    assert all(r["rounds"] == 12 for r in ranks), ranks
    # the rounds went through the rack's switch: 4 members x 12 rounds x chunks of 352
    r = rack4.run(0, [sys.executable, "-c", COUNTER, rack4.switch_url, "CNT_RX_GRADIENT"],
                  timeout=60)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) >= 4 * 12, r.stdout


PING = textwrap.dedent("""
    import socket, struct, sys, time
    def csum(b):
        s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
        s = (s & 0xFFFF) + (s >> 16)
        return ~((s & 0xFFFF) + (s >> 16)) & 0xFFFF
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    s.settimeout(5)
    got = 0
    for seq in range(3):
        body = struct.pack("!BBHHH", 8, 0, 0, 0x4e52, seq) + b"netfpga-rl rack!"
        body = body[:2] + struct.pack("!H", csum(body)) + body[4:]
        s.sendto(body, (sys.argv[1], 0))
        while True:
            pkt, _ = s.recvfrom(2048)
            icmp = pkt[(pkt[0] & 15) * 4:]
            if icmp[0] == 0 and struct.unpack("!HH", icmp[4:8]) == (0x4e52, seq):
                got += 1
                break
    print(got)
""")

RTL_ALLREDUCE = textwrap.dedent("""
    import os, sys
    import numpy as np
    from hostdrv import Aggregator
    from hostdrv.switch.rtl_bridge import mac_port_bit
    i = int(os.environ["RACK_HOST"])
    x = np.random.default_rng([9, i]).integers(-(1 << 24), 1 << 24, size=int(sys.argv[2]),
                                               dtype=np.int32)
    with Aggregator(sys.argv[1], worker=i, port=mac_port_bit(i), timeout=0.5) as agg:
        y = agg.allreduce(x)
    np.save(sys.argv[3] + f"/out{i}.npy", y)
""")


def test_rtl_as_the_rack_switch(permitted: None, tmp_path: Path) -> None:
    """switch="rtl": each host's link is one MAC port of the RTL (Verilator). ARP, UDP and
    ICMP between the hosts cross the RTL's L2 path; an int32 all-reduce through eth:// (the
    board's frames, registers through the rack's rwaxi) is numpy's exact sum; torchrun trains
    PPO across the two hosts through the RTL and the ranks agree."""
    from netutil import build_sim_rtl

    build_sim_rtl()
    with _rack(hosts=2, switch="rtl") as rack:
        rtt = rackmod.measure_rtt(rack, 0, 1, n=5)  # ARP, then UDP both ways
        assert len(rtt) == 5
        r = rack.run(0, [sys.executable, "-c", PING, rack.host_ip(1)], timeout=60)
        assert r.returncode == 0 and r.stdout.strip() == "3", r.stderr
        url, size = rack.switch_url, 1000
        r = rack.run(0, [sys.executable, "-c",
                         "import sys; from hostdrv import SwitchControl as C;"
                         "c = C(sys.argv[1]); c.configure_aggregation(members=2, slots=4, "
                         "packet_elems=352, dtype='int32'); c.close()", url], timeout=120)
        assert r.returncode == 0, r.stderr
        results = rack.run_all([sys.executable, "-c", RTL_ALLREDUCE, url, str(size),
                                str(tmp_path)], timeout=300)
        assert all(rc == 0 for rc, _o, _e in results), results
        inputs = [np.random.default_rng([9, i]).integers(-(1 << 24), 1 << 24, size=size,
                                                         dtype=np.int32) for i in range(2)]
        expected = np.sum(np.stack(inputs), axis=0, dtype=np.int32)
        for i in range(2):
            assert np.array_equal(np.load(tmp_path / f"out{i}.npy"), expected), i
        r = rack.run(0, [sys.executable, "-c", COUNTER, url, "CNT_PASS"], timeout=60)
        assert r.returncode == 0 and int(r.stdout) >= 2 + 10 + 6, (r.stdout, r.stderr)
        # training across the RTL: torchrun's store and gloo (TCP) through the L2 path, the
        # in-switch rounds (netrl backend, NETRL_SWITCH = the eth:// URL, NETRL_MEMBER_PORT =
        # the host's MAC port bit) through the aggregation engine
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes=2", "--nproc-per-node=1",
               "--rdzv-backend=c10d", f"--rdzv-endpoint={rack.host_ip(0)}:29400",
               "--rdzv-id=rtlrack", "--max-restarts=0", "-m", "rl", "train", "--algo", "ppo",
               "--seed", "3", "--total-steps", str(2 * 2 * 16 * 2), "--num-steps", "16",
               "--hidden", "16", "--update-epochs", "2", "--target", "nan", "--no-progress",
               "--packet-elems", "352", "--sync", "inswitch", "--runs-dir", str(tmp_path),
               "--name", "ppo"]
        results = rack.run_all(cmd, env={"OMP_NUM_THREADS": "1"}, timeout=400)
        assert all(rc == 0 for rc, _o, _e in results), [e[-3000:] for _rc, _o, e in results]
        ranks = json.loads((tmp_path / "ppo" / "ranks.json").read_text())
        assert [r["rank"] for r in ranks] == [0, 1] and all(r["rounds"] == 8 for r in ranks)
        assert len({r["params_digest"] for r in ranks}) == 1, ranks  # the ranks agree


def _load_script(name: str) -> ModuleType:
    sys.path.insert(0, str(REPO / "scripts"))
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_tc_shapes_a_network_bound_rate(permitted: None) -> None:
    """At 1 Gbit/s (the rate where the links, not the 2 cores, set the pace) a bulk TCP
    transfer between two hosts gets the rate: 70-105 % of it (TCP/IP headers, slow start)."""
    with _rack(hosts=2, rate="1gbit", switch="bridge") as rack:
        rate = rackmod.measure_rate(rack, 0, 1, seconds=1.0)
        assert 0.7 * 125e6 < rate < 1.05 * 125e6, rate
        assert any("rate 1Gbit" in q for q in rack.status()[rack.host_ns(0)]["qdisc"])


def test_leaf_root_topology(permitted: None) -> None:
    """--leaves 2: hosts on two leaf namespaces under the root; every host reaches the other
    leaf's hosts, the root and both leaf switches; the ports sit in their leaf; run sets
    NETRL_LEAVES; down removes the leaves too."""
    with _rack(hosts=4, rate="1gbit", leaves=2, extra_switches=1) as rack:
        assert [rack.leaf_of(i) for i in range(4)] == [0, 0, 1, 1]
        assert rack.port_ns(3) == rack.leaf_ns(1)
        assert set(rackmod.list_racks()) >= {rack.config.prefix}
        rtt = rackmod.measure_rtt(rack, 0, 3, n=5)  # across both leaves and the root
        assert len(rtt) == 5
        r = rack.run(3, [sys.executable, "-c", COUNTER, rack.leaf_url(0), "AGG_MAX_ELEMS"],
                     timeout=60)
        assert r.returncode == 0 and int(r.stdout) == rack.config.max_elems, r.stderr
        r = rack.run(0, [sys.executable, "-c", COUNTER, rack.extra_switch_url(0),
                         "AGG_MAX_ELEMS"], timeout=60)
        assert r.returncode == 0, r.stderr
        env = rack.host_env(2)
        assert env["NETRL_LEAVES"] == ",".join(rack.leaf_url(k).split("?")[0] for k in range(2))
    assert not any(ns.startswith(rack.config.prefix) for ns in rackmod._netns_list())
    with pytest.raises(rackmod.RackError, match="leaves"):
        rackmod.RackConfig(leaves=2, switch="bridge").check()


def test_comm_only_allreduce_on_the_rack(permitted: None) -> None:
    """scripts/rack_allreduce.py, smallest: 2 hosts + the PS host at 1 Gbit/s, 64 KB; every
    method's sum matches numpy's, the link is shaped, and the model predicts each row."""
    ra = _load_script("rack_allreduce")
    res = ra.run(False, racks=[("1gbit", 2)], sizes=[64 << 10], repeats=2, warmup=1,
                 log=lambda _m: None)
    assert sorted(r["method"] for r in res["rows"]) == sorted(ra.METHODS)
    assert all(r["sum_ok"] is True for r in res["rows"]), res["rows"]
    assert all(r["median_ms"] > 0 and r["p25_ms"] <= r["p75_ms"] for r in res["rows"])
    (rk,) = res["racks"]
    assert 0.7 * 125e6 < rk["goodput_bytes_s"] < 1.05 * 125e6, rk
    # the counters of where datagrams go (rack.net_counters): the switch received some
    assert rk["net"]["sw_InDatagrams"] > 0 and "sw_RcvbufErrors" in rk["net"], rk["net"]
    assert res["rack_allreduce_vs_ring"] is None  # the key rack (4 hosts, 4 MB) was not run
    import cluster_model

    predicted, err = cluster_model.comm_rows_error(res)
    assert len(err["rows"]) == len(res["rows"]) and err["max"] >= 0
    assert "(" in ra.format_table(res, predicted)


INT32_16 = textwrap.dedent("""
    import datetime, os, sys
    import numpy as np
    import torch, torch.distributed as dist
    import hostdrv.torch_backend as tb
    rank, world = int(os.environ["RACK_HOST"]), int(sys.argv[2])
    dist.init_process_group("netrl", init_method=sys.argv[1], rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=240))
    xs = [np.random.default_rng([5, r]).integers(-(1 << 31), (1 << 31) - 1, 9, dtype=np.int32)
          for r in range(world)]
    t = torch.from_numpy(xs[rank].copy())
    dist.all_reduce(t)
    ok = np.array_equal(t.numpy(), np.sum(np.stack(xs), axis=0, dtype=np.int32))
    print(ok, tb.netrl_group().url, tb.netrl_group().stats().get("switch_calls"))
    dist.destroy_process_group()
""")


@pytest.mark.slow
def test_sixteen_ranks_on_leaf_switch_namespaces(permitted: None) -> None:
    """16 ranks, one per host namespace, on three leaf switch namespaces (6, 6, 4: a leaf
    holds 7 ranks, its eighth port is the uplink, so two leaves hold 14) under the root:
    ``init_process_group("netrl")`` builds the hierarchy on the rack's switches and an int32
    SUM over the whole int32 range is numpy's exact sum on every rank (about 90 s here)."""
    n = 16
    with _rack(hosts=n, rate="1gbit", leaves=3) as rack:
        results = rack.run_all([sys.executable, "-c", INT32_16,
                                f"tcp://{rack.host_ip(0)}:29500", str(n)],
                               env={"OMP_NUM_THREADS": "1"}, timeout=600)
        assert all(rc == 0 for rc, _o, _e in results), [e[-2000:] for _rc, _o, e in results]
        for i, (_rc, out, _e) in enumerate(results):
            ok, url, calls = out.split()
            assert ok == "True", (i, out)
            assert url.startswith(rack.leaf_url(rack.leaf_of(i)).split("?")[0]), (i, url)
            assert int(calls) >= 1


@pytest.mark.slow
def test_ddp_steps_on_the_rack(permitted: None) -> None:
    """``rack_allreduce.py ddp``, smallest: 2 ranks at 1 Gbit/s, a small MLP, 2 blocks of 1
    step per backend: steps/s of both, DDP's buckets counted as switch calls, the int32
    check exact on every rank (about 40 s here)."""
    ra = _load_script("rack_allreduce")
    got = ra.run_ddp("1gbit", 2, steps=1, blocks=2, hidden=32, log=lambda _m: None)
    assert got["int32_exact_ranks"] == 2
    assert len(got["steps_per_s"]["netrl"]) == len(got["steps_per_s"]["gloo"]) == 2
    assert all(v > 0 for v in got["median_steps_per_s"].values())
    assert got["stats"]["switch_calls"] >= 1 + 2 + 2


@pytest.mark.slow
def test_paper_workload_on_the_rack_beside_the_model(permitted: None) -> None:
    """``bench_rack.py --paper --quick``: A2C's paper workload (Pong, the Nature CNN) on a
    4-host 1 Gbit/s rack, in-switch and gloo, 3 iterations; each row has the measured and
    the modelled seconds per iteration and the key line its largest error (about 70 s)."""
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "bench_rack.py"), "--paper",
                        "--quick"], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "| 1gbit | a2c | inswitch |" in r.stdout and "| 1gbit | a2c | allreduce |" in r.stdout
    keys = dict(kv.split("=") for kv in r.stdout.strip().splitlines()[-1].split())
    assert keys["rack_rl_rows"] == "2" and float(keys["rack_rl_model_error"]) >= 0


def test_three_jobs_share_the_rack_switch(permitted: None, tmp_path: Path) -> None:
    """The rack's soft switch with ``--jobs 4`` (its native engine): jobs 1 and 2 aggregate (2 workers each, hosts 0-1 and 2-3) while job 3 replays
    (actor on host 0, learner on host 1), all at once, through ``bench_multijob.py role``.
    Every aggregation call is exact (checked in each member; the last result here against
    numpy too), every sampled record is one the actor pushed, and each page's counters hold
    its own job's traffic and nothing of the others' (page 0, released, nothing at all)."""
    bench = _load_script("bench_multijob")
    script, elems, seconds, members = str(REPO / "scripts" / "bench_multijob.py"), 2048, 3.0, 2
    with _rack(hosts=4, jobs=4) as rack:
        url = rack.switch_url
        r = rack.run(0, [sys.executable, script, "setup", "--url", url, "--members",
                         str(members)], timeout=120)
        assert r.returncode == 0, r.stderr[-3000:]
        grants = json.loads(r.stdout.strip().splitlines()[-1])
        assert [grants[str(j)]["slots"] for j in (1, 2, 3)] == [32, 32, 0], grants
        assert grants["3"]["table_records"] == 256
        roles = [(0, "agg", 1, 0), (1, "agg", 1, 1), (2, "agg", 2, 0), (3, "agg", 2, 1),
                 (0, "actor", 3, 0), (1, "learner", 3, 1)]
        go = time.time() + 15  # every member joined (and the actor's prefill in) by then
        procs = [rack.popen(h, [sys.executable, script, "role", role, "--url", url, "--page",
                                str(page), "--worker", str(w), "--members", str(members),
                                "--elems", str(elems), "--go", str(go), "--seconds", str(seconds),
                                "--save", str(tmp_path / f"p{page}w{w}.npy")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for h, role, page, w in roles]
        outs = [p.communicate(timeout=180) for p in procs]
        for p, (_o, e), role in zip(procs, outs, roles, strict=True):
            assert p.returncode == 0, (role, e[-3000:])
        res = {(role[2], role[3]): json.loads(o.strip().splitlines()[-1])
               for (o, _e), role in zip(outs, roles, strict=True)}
        r = rack.run(0, [sys.executable, script, "counters", "--url", url], timeout=120)
        assert r.returncode == 0, r.stderr[-3000:]
        counts = {int(j): c for j, c in json.loads(r.stdout.strip().splitlines()[-1]).items()}
    chunks = -(-elems // 256)
    for page in (1, 2):
        calls = {res[(page, w)]["calls"] for w in range(members)}
        assert len(calls) == 1 and calls.pop() >= 1, res  # the members agreed on every call
        want = bench.agg_expected(members, elems)[res[(page, 0)]["variant"]]
        for w in range(members):
            got = np.load(tmp_path / f"p{page}w{w}.npy")
            np.testing.assert_array_equal(got[1:].view(np.uint32), want[1:].view(np.uint32))
        assert counts[page]["CNT_RX_GRADIENT"] >= res[(page, 0)]["ops"] * members * chunks
    assert res[(3, 1)]["ops"] > 0 and res[(3, 0)]["ops"] > 0, res
    assert res[(3, 1)]["max_seq"] < res[(3, 0)]["pushed_total"]
    assert counts[3]["CNT_RX_SAMPLE"] > 0
    bench.check_pages(counts)  # each job's traffic in its page, nothing in the others
