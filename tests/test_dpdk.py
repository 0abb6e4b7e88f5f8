"""The DPDK data path (``docs/bypass.md``): the soft switch on DPDK ports, clients on ``dpdk://``.

* memif (one host): a switch child process with two memif ports, two ``Aggregator``\\ s
  and a ``ReplayClient`` in another process on ``dpdk://...memif:...`` URLs;
* the rack (root, network namespaces): the switch namespace's veths as ``af_packet`` ports
  of a DPDK switch, ``Aggregator`` / ``ReplayClient`` on each host's ``eth0`` over DPDK,
  and a kernel UDP client through the same switch.

Expected values come from the reference model (``hostdrv.switch.reference.SwitchModel``
fed the same GRADIENT / PUSH / SAMPLE_REQ messages). A build without DPDK fails under CI
and skips elsewhere (``toolcheck.missing``); a machine where network namespaces cannot be
created skips the rack test (``tests/test_ci_policy.py``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import toolcheck
from test_rack import _namespaces_permitted, rackmod

import hostdrv._native as native
from hostdrv.client.transport import TransportError, open_datagram
from hostdrv.rack import dpdk_switch
from hostdrv.switch.reference import SwitchModel
from hostdrv.switch.soft import SoftSwitch, SoftSwitchProcess
from hostdrv.wire import protocol as P
from hostdrv.wire.consts import MAX_PUSH_RECORDS
from hostdrv.wire.dpdkport import DpdkError, check_interface, devargs

REPO = Path(__file__).resolve().parents[1]
N, SIZE, P_ELEMS, SLOTS = 2, 5000, 352, 8
RECORDS, BATCH = 64, 32


def require_dpdk() -> None:
    if not getattr(native, "dpdk_available", False):
        toolcheck.missing("DPDK in hostdrv._native (libdpdk-dev at build time)",
                          "the kernel-bypass data path")


def inputs(i: int) -> np.ndarray:
    return np.random.default_rng([7, i]).integers(-(1 << 24), 1 << 24, size=SIZE, dtype=np.int32)


def replay_input(record_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(11)
    recs = rng.integers(0, 256, (RECORDS, record_bytes), dtype=np.uint8)
    prios = (rng.integers(1, 64, RECORDS).astype(np.uint32) << 16).astype(np.uint32)
    return recs, prios


def model_allreduce() -> np.ndarray:
    """The int32 all-reduce of every worker's :func:`inputs`, chunk by chunk, as the
    reference model's RESULTs carry it."""
    sw = SwitchModel()
    for i in range(N):
        sw.write(f"MEMBER_PORT_{i}", 1 << i)
        sw.write(f"MEMBER_IP_{i}", 0x0A000100 + i)
        sw.write(f"MEMBER_UDP_{i}", 40000 + i)
        sw.write(f"MEMBER_ROLE_{i}", 1)
    for reg, value in (("AGG_MEMBERS", N), ("AGG_ELEMS", P_ELEMS), ("AGG_SLOTS", SLOTS),
                       ("AGG_DTYPE", 1)):
        sw.write(reg, value)
    chunks = -(-SIZE // P_ELEMS)
    xs = [np.concatenate([inputs(i), np.zeros(chunks * P_ELEMS - SIZE, np.int32)])
          for i in range(N)]
    out = []
    for c in range(chunks):
        results = []
        for i in range(N):
            msg = P.gradient(xs[i][c * P_ELEMS:(c + 1) * P_ELEMS], job=0, worker=i,
                             slot=c % SLOTS, round_=c // SLOTS, total=SIZE)
            frame = P.build_frame(P.Frame(msg, eth_src=bytes([2, 0, 0, 0, 1, i]),
                                          ip_src=0x0A000100 + i, udp_src=40000 + i))
            results += sw.process(frame, 1 << i)
        (eg,) = [e for e in results if P.parse_frame(e.frame).message.opcode == P.Opcode.RESULT]
        out.append(np.frombuffer(P.parse_frame(eg.frame).message.payload, dtype=np.int32))
    return np.concatenate(out)[:SIZE]


def model_samples(record_bytes: int, worker: int) -> tuple[list[int], list[int], list[bytes]]:
    """(indices, priorities, records) of a prioritized sample of BATCH after pushing
    :func:`replay_input`, as the reference model answers them."""
    sw = SwitchModel(record_bytes=record_bytes)
    sw.write(f"MEMBER_PORT_{worker}", 1 << worker)
    sw.write(f"MEMBER_IP_{worker}", 0x0A000200)
    sw.write(f"MEMBER_UDP_{worker}", 41000)
    sw.write(f"MEMBER_ROLE_{worker}", 0b110)
    recs, prios = replay_input(record_bytes)

    def frame(msg: P.Message) -> bytes:
        return P.build_frame(P.Frame(msg, eth_src=bytes([2, 0, 0, 0, 2, 0]), ip_src=0x0A000200,
                                     udp_src=41000))

    for a in range(0, RECORDS, MAX_PUSH_RECORDS):
        sw.process(frame(P.push([r.tobytes() for r in recs[a:a + MAX_PUSH_RECORDS]],
                                [int(p) for p in prios[a:a + MAX_PUSH_RECORDS]],
                                job=0, worker=worker, seq=a)), 1 << worker)
    out = sw.process(frame(P.sample_request(BATCH, job=0, worker=worker, seq=1,
                                            prioritized=True)), 1 << worker)
    descs = [P.parse_frame(e.frame, udp_port=41000).message.descriptor() for e in out]
    return [d.index for d in descs], [d.priority for d in descs], [d.record for d in descs]


#: what a client process runs: argv = url, worker, what (agg | replay), outdir
CLIENT = textwrap.dedent("""
    import sys, threading
    import numpy as np
    sys.path.insert(0, sys.argv[5])
    from test_dpdk import inputs, replay_input, BATCH, N, P_ELEMS, SLOTS
    from hostdrv import Aggregator, ReplayClient, SwitchControl
    urls, what, out = sys.argv[1].split(" "), sys.argv[3], sys.argv[4]
    workers = [int(w) for w in sys.argv[2].split(",")]
    if what == "configure":
        with SwitchControl(urls[0]) as c:
            c.configure_aggregation(members=N, slots=SLOTS, packet_elems=P_ELEMS, dtype="int32")
        sys.exit(0)
    def agg(url, w):
        with Aggregator(url, worker=w, timeout=0.2) as a:
            for _ in range(3):
                y = a.allreduce(inputs(w))
            assert a._native() is not None
            kind = type(a.transport).__name__
        np.save(f"{out}/agg{w}.npy", y)
        print("transport", kind)
    def replay(url, w):
        with ReplayClient(url, worker=w, obs_shape=(4,)) as r:
            r.control.configure_replay()  # an empty table, the seed at its reset value
            recs, prios = replay_input(r.record_bytes)
            r.push_records(recs, prios)
            b = r.sample(BATCH, prioritized=True)
            kind = type(r.transport).__name__
        np.save(f"{out}/idx{w}.npy", b.indices)
        np.save(f"{out}/prio{w}.npy", b.priorities_fixed)
        np.save(f"{out}/recs{w}.npy", b.records)
        print("transport", kind)
    fn = agg if what == "agg" else replay
    errors = []
    def guarded(u, w):
        try:
            fn(u, w)
        except BaseException as e:
            errors.append(repr(e))
    ts = [threading.Thread(target=guarded, args=(u, w)) for u, w in zip(urls, workers)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        sys.exit("client failed: " + "; ".join(errors))
""")


def check_outputs(out: Path, workers: list[int]) -> None:
    expected = model_allreduce()
    for w in workers:
        got = np.load(out / f"agg{w}.npy")
        assert got.dtype == np.int32 and np.array_equal(got, expected), w


def check_replay(out: Path, worker: int, record_bytes: int = 128) -> None:
    idx, prio, recs = model_samples(record_bytes, worker)
    assert np.load(out / f"idx{worker}.npy").tolist() == idx
    assert np.load(out / f"prio{worker}.npy").tolist() == prio
    assert [bytes(r) for r in np.load(out / f"recs{worker}.npy")] == recs


# ---------------------------------------------------------------------------------------
# without DPDK (always run)


def test_port_specs_become_devargs() -> None:
    assert devargs("af_packet:p0", role="server").startswith("net_af_packet")
    assert ",iface=p0," in devargs("af_packet:p0", role="server")
    assert devargs("af_xdp:eth1", role="client").split(",")[1] == "iface=eth1"
    m = devargs("memif:/run/x.sock@3", role="client")
    assert ",role=client,socket=/run/x.sock,id=3," in m
    assert devargs("net_tap0,iface=t0", role="server") == "net_tap0,iface=t0"
    for bad in ("eth0", "af_packet:", "memif:/x@y", "pcap:x"):
        with pytest.raises(DpdkError, match="bad DPDK port"):
            devargs(bad, role="server")
    with pytest.raises(DpdkError, match="no interface 'nrl-none0'"):
        check_interface("af_packet:nrl-none0")
    check_interface("af_packet:lo")
    check_interface("memif:/x")


def test_dpdk_urls_are_checked() -> None:
    with pytest.raises(TransportError, match="no port=SPEC"):
        open_datagram("dpdk://10.0.0.1:20050")
    with pytest.raises(TransportError, match="unknown option 'iface'"):
        open_datagram("dpdk://10.0.0.1:20050?iface=eth0")


def test_dpdk_refused_clearly_when_not_built(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "dpdk_available", False, raising=False)
    with pytest.raises(DpdkError, match="built without DPDK.*make setup"):
        SoftSwitch("127.0.0.1:0", dpdk=["memif:/tmp/nope.sock"], engine="native")
    with pytest.raises(DpdkError, match="built without DPDK.*make setup"):
        open_datagram("dpdk://10.0.0.1:20050?port=memif:/tmp/nope.sock&ip=10.0.0.2")


def test_build_leaves_dpdk_out_on_request_or_without_libdpdk(tmp_path: Path) -> None:
    """NETRL_NO_DPDK=1 (or no libdpdk) leaves DPDK out of the build: setup.py's check."""
    code = ("import os, runpy, setuptools; setuptools.setup = lambda **k: None; "
            "g = runpy.run_path('setup.py'); print(g['DPDK'] is None, 'NRL_DPDK' in str(g['MACROS']))")
    env = dict(os.environ, NETRL_NO_DPDK="1")
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.stdout.split() == ["True", "False"], r.stdout + r.stderr
    env["NETRL_NO_DPDK"] = "0"
    env["PKG_CONFIG_PATH"] = env["PKG_CONFIG_LIBDIR"] = str(tmp_path)  # pkg-config finds nothing
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.stdout.split() == ["True", "False"], r.stdout + r.stderr


# ---------------------------------------------------------------------------------------
# memif: switch and clients on one host


def _clients(urls: list[str], workers: list[int], what: str, out: Path,
             prefix: list[str] | None = None) -> str:
    env = dict(os.environ, PYTHONPATH=str(REPO), NETRL_DPDK_TEST="1")
    r = subprocess.run([*(prefix or []), sys.executable, "-c", CLIENT, " ".join(urls),
                        ",".join(map(str, workers)), what, str(out), str(REPO / "tests")],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_memif_switch_and_clients_on_one_host(tmp_path: Path) -> None:
    require_dpdk()
    sock = tmp_path / "memif.sock"
    args = ["--dpdk", f"memif:{sock}@0", "--dpdk", f"memif:{sock}@1", "--dpdk", f"memif:{sock}@2",
            "--dpdk-address", "10.88.0.254:20050"]
    with SoftSwitchProcess("127.0.0.1:0", args) as sw:
        control = f"{sw.address[0]}:{sw.address[1]}"
        urls = [f"dpdk://10.88.0.254:20050?port=memif:{sock}@{i}&ip=10.88.0.{i + 1}"
                f"&control={control}" for i in range(3)]
        _clients([sw.url], [0], "configure", tmp_path)
        said = _clients(urls[:2], [0, 1], "agg", tmp_path)
        assert said.split().count("DpdkDatagramTransport") == 2, said
        check_outputs(tmp_path, [0, 1])
        _clients(urls[2:], [2], "replay", tmp_path)
        check_replay(tmp_path, 2)
        out = sw.stop()
    assert '"dpdk_datagrams"' in out and '"errors": 0' in out, out


# ---------------------------------------------------------------------------------------
# the rack: af_packet ports on the switch namespace's veths


@pytest.fixture
def dpdk_rack(tmp_path: Path) -> Any:
    require_dpdk()
    why = _namespaces_permitted()
    if why:
        pytest.skip(why)
    rack = rackmod.Rack(rackmod.RackConfig(prefix=rackmod.unique_prefix("nrd"), hosts=N,
                                           switch="none")).up()
    proc = None
    try:
        proc = dpdk_switch.start(rack, log=tmp_path / "switch.log")
        yield rack
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(10)
        rack.down()


def test_rack_dpdk_switch_and_clients(dpdk_rack: Any, tmp_path: Path) -> None:
    rack = dpdk_rack
    ip, port, key = rack.switch_ip, rack.config.switch_port, rack.key_file
    soft = rack.switch_url
    dpdk = f"dpdk://{ip}:{port}?port=af_packet:eth0&key={key}"
    here = ["ip", "netns", "exec"]
    _clients([soft], [0], "configure", tmp_path, here + [rack.host_ns(0)])
    # one DPDK client per host namespace, at the same time
    env = dict(os.environ, PYTHONPATH=str(REPO))
    procs = [subprocess.Popen(here + [rack.host_ns(i), sys.executable, "-c", CLIENT, dpdk, str(i),
                                      "agg", str(tmp_path), str(REPO / "tests")],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(N)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, out + err
        assert "DpdkDatagramTransport" in out, out
    check_outputs(tmp_path, list(range(N)))
    # a kernel UDP client through the same switch (host 1), and DPDK replay (host 0)
    for f in tmp_path.glob("agg*.npy"):
        f.unlink()
    said = _clients([soft], [1], "replay", tmp_path, here + [rack.host_ns(1)])
    assert "UdpDatagramTransport" in said
    check_replay(tmp_path, 1)
    said = _clients([dpdk], [0], "replay", tmp_path, here + [rack.host_ns(0)])
    assert "DpdkDatagramTransport" in said
    check_replay(tmp_path, 0)
