"""Board backends (``udp://``, ``eth://``) without a board.

* registers: :class:`hostdrv.client.board.RwaxiRegisterTransport` against a fake
  ``rwaxi`` (same CLI and output as NetFPGA SUME's ``sw/driver`` tool) that
  keeps registers in a JSON file;
* data: the ``udp://`` and ``eth://`` channels against the soft switch, which
  answers from its UDP port the way the board answers from ``SWITCH_IP``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hostdrv import (
    Aggregator,
    RegisterAccessError,
    SoftSwitch,
    SwitchControl,
    TransportError,
    open_datagram,
    open_registers,
)
from hostdrv.client.board import (
    SUME_S0_AXI_BASE,
    RwaxiRegisterTransport,
    build_udp_frame,
    parse_mac,
    udp_payload_span,
)
from hostdrv.client.control import ROLE_WORKER
from hostdrv.wire import regmap
from hostdrv.wire.protocol import Frame, build_frame, encode_message, gradient, parse_frame

REPO = Path(__file__).resolve().parents[1]
BASE = 0x44010000

FAKE_RWAXI = '''\
#!{python}
"""Fake NetFPGA SUME rwaxi: registers in a JSON file; same options and output."""
import getopt, json, sys
STATE = {state!r}
with open(STATE) as f:
    st = json.load(f)
opts, _ = getopt.getopt(sys.argv[1:], "a:hi:w:")
o = dict(opts)
if "-h" in o:
    print("Usage: %s -a <addr> [-w <value>] [-i <iface>]" % sys.argv[0])
    sys.exit(1)
addr = int(o.get("-a", "0x44020000"), 0)
key = "0x%08x" % addr
st.setdefault("log", []).append([key, o.get("-w")])
if key in st.get("fail", []):
    sys.stderr.write("rwaxi: ioctl: Input/output error\\n")
    sys.exit(1)
if "-w" in o:
    value = int(o["-w"], 0)
    st["regs"][key] = value
    print("WROTE 0x%08x = 0x%04x" % (addr, value))
else:
    value = st["regs"].get(key, 0)
    print("READ 0x%08x = 0x%04x" % (addr, value))
with open(STATE, "w") as f:
    json.dump(st, f)
'''


class FakeRwaxi:
    """A fake ``rwaxi`` in ``tmp_path`` with its register file."""

    def __init__(self, tmp_path: Path, regs: dict[str, int] | None = None,
                 base: int = BASE) -> None:
        self.base = base
        self.state = tmp_path / "rwaxi_state.json"
        self.path = tmp_path / "rwaxi"
        self.path.write_text(FAKE_RWAXI.format(python=sys.executable, state=str(self.state)))
        self.path.chmod(0o755)
        init = {"MAGIC": 0x4E524C31, "VERSION": 0x10000, "BUILD_HASH": 0xB0A4D}
        # a board serves one job (JOBS = 1): its job table reads the reset share
        init.update({n: regmap.REGISTERS[n].reset for n in (
            "JOBS", "JOB_ENABLE", "JOB_SLOT_COUNT", "JOB_RPL_CAP", "JOB_RPL_RECORD")})
        init.update(regs or {})
        self.save({"regs": {self.key(n): v for n, v in init.items()}, "fail": [], "log": []})

    def key(self, name: str) -> str:
        return f"0x{self.base + regmap.REGISTERS[name].addr:08x}"

    def load(self) -> dict[str, Any]:
        return json.loads(self.state.read_text())  # type: ignore[no-any-return]

    def save(self, st: dict[str, Any]) -> None:
        self.state.write_text(json.dumps(st))

    def fail(self, name: str) -> None:
        st = self.load()
        st["fail"].append(self.key(name))
        self.save(st)

    def reg(self, name: str) -> int | None:
        return self.load()["regs"].get(self.key(name))  # type: ignore[no-any-return]

    def accessed(self) -> list[tuple[str, str | None]]:
        return [(k, w) for k, w in self.load()["log"]]

    def query(self) -> str:
        return f"regs=rwaxi&rwaxi={self.path}&base=0x{self.base:08x}"


@pytest.fixture()
def switch() -> Any:
    sw = SoftSwitch().start()
    try:
        yield sw
    finally:
        sw.close()


def _allreduce_threads(aggs: list[Aggregator], xs: list[np.ndarray]) -> list[Any]:
    out: list[Any] = [None] * len(aggs)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            out[i] = aggs[i].allreduce(xs[i])
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(len(aggs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert not any(t.is_alive() for t in threads), "allreduce hung"
    if errors:
        raise errors[0]
    return out


# ---------------------------------------------------------------------------
# registers through rwaxi


def test_rwaxi_switch_control(tmp_path: Path) -> None:
    fake = FakeRwaxi(tmp_path)
    with SwitchControl(f"udp://127.0.0.1:1?{fake.query()}") as ctl:
        ident = ctl.identity()
        assert (ident.magic, ident.major, ident.build_hash) == (0x4E524C31, 1, 0xB0A4D)
        ctl.write("AGG_SLOTS", 12)
        assert fake.reg("AGG_SLOTS") == 12 == ctl.read("AGG_SLOTS")
        ctl.set_member(3, port=0x10, ip="10.1.2.3", udp=4242, role=5)
        assert ctl.member(3) == {"port": 0x10, "ip": "10.1.2.3", "udp": 4242, "role": 5}
    # the absolute address is base + register offset
    assert ("0x%08x" % (BASE + regmap.REGISTERS["MAGIC"].addr), None) in fake.accessed()
    assert SUME_S0_AXI_BASE == 0x44010000


def test_rwaxi_base_and_interface(tmp_path: Path) -> None:
    fake = FakeRwaxi(tmp_path, base=0x44020000)
    t = open_registers(f"eth://lo?switch_ip=10.0.0.1&{fake.query()}&rwaxi_if=nf1")
    assert isinstance(t, RwaxiRegisterTransport) and t.interface == "nf1"
    assert t.read(regmap.REGISTERS["MAGIC"].addr) == 0x4E524C31
    t.write(regmap.REGISTERS["AGG_ELEMS"].addr, 0x100)
    assert fake.reg("AGG_ELEMS") == 0x100
    t.close()


def test_rwaxi_missing_tool() -> None:
    with pytest.raises(TransportError, match=r"rwaxi='/nonexistent/rwaxi'.*not found.*rwaxi=/path"):
        SwitchControl("udp://127.0.0.1:1?regs=rwaxi&rwaxi=/nonexistent/rwaxi")


def test_rwaxi_failure_names_register(tmp_path: Path) -> None:
    fake = FakeRwaxi(tmp_path)
    fake.fail("AGG_ELEMS")
    with SwitchControl(f"udp://127.0.0.1:1?{fake.query()}") as ctl:
        with pytest.raises(RegisterAccessError, match=r"read AGG_ELEMS.*Input/output error") as e:
            ctl.read("AGG_ELEMS")
        assert e.value.field == "AGG_ELEMS"
        with pytest.raises(RegisterAccessError, match=r"write AGG_ELEMS=32.*ioctl"):
            ctl.write("AGG_ELEMS", 32)
        assert ctl.read("AGG_SLOTS") == 0  # other registers still work


def test_bad_board_urls(tmp_path: Path) -> None:
    with pytest.raises(TransportError, match=r"regs='serial:.*known register channels: rwaxi"):
        open_registers("udp://127.0.0.1:1?regs=serial:///dev/ttyUSB0")
    with pytest.raises(TransportError, match="unknown option 'bogus'"):
        open_datagram("udp://127.0.0.1:1?bogus=1")
    with pytest.raises(TransportError, match="bad base="):
        open_registers(f"udp://127.0.0.1:1?regs=rwaxi&rwaxi={sys.executable}&base=zz")
    with pytest.raises(TransportError, match="needs switch_ip"):
        open_datagram("eth://lo")
    with pytest.raises(TransportError, match="bad mac="):
        open_datagram("eth://lo?switch_ip=127.0.0.1&dst_mac=01:02")


# ---------------------------------------------------------------------------
# udp:// data path against a switch that answers as the board does


def test_udp_data_path_with_soft_switch(tmp_path: Path, switch: SoftSwitch) -> None:
    soft = SwitchControl(switch.url)
    soft.configure_aggregation(members=2, slots=4, packet_elems=32)
    fake = FakeRwaxi(tmp_path, {n: soft.read(n)
                                for n in ("AGG_SLOTS", "AGG_ELEMS", "AGG_DTYPE", "AGG_MEMBERS")})
    host, port = switch.address
    url = f"udp://{host}:{port}?{fake.query()}"
    fast = dict(timeout=0.05, retries=20)
    aggs = [Aggregator(url, worker=w, register=False, **fast) for w in range(2)]  # type: ignore[arg-type]
    try:
        for w, a in enumerate(aggs):
            ip, udp = a.transport.local_address
            soft.set_member(w, port=1 << w, ip=ip, udp=udp, role=ROLE_WORKER)
        xs = [np.arange(100, dtype=np.float32), np.full(100, 0.5, dtype=np.float32)]
        got = _allreduce_threads(aggs, xs)
        for g in got:
            np.testing.assert_array_equal(g, xs[0] + xs[1])
        assert soft.counters()["CNT_TX_RESULT"] > 0
        reads = {k for k, w in fake.accessed() if w is None}
        assert {fake.key(n) for n in ("AGG_SLOTS", "AGG_ELEMS", "AGG_DTYPE")} <= reads
        assert all(w is None for _, w in fake.accessed())  # register=False: no writes
    finally:
        for a in aggs:
            a.close()
        soft.close()


# ---------------------------------------------------------------------------
# eth:// framing


def test_eth_framing_matches_protocol_frames() -> None:
    msg = gradient(np.arange(32, dtype=np.float32), job=0, worker=1, slot=2, round_=3)
    body = encode_message(msg)
    kw = dict(eth_dst=b"\xff" * 6, eth_src=bytes.fromhex("020000000007"), ip_src=0x0A000002,
              ip_dst=0x0A000001, udp_src=40000, udp_dst=20050)
    frame = build_udp_frame(body, **kw)  # type: ignore[arg-type]
    assert frame == build_frame(Frame(msg, **kw))  # type: ignore[arg-type]
    parsed = parse_frame(frame)
    assert parsed.udp_src == 40000 and parsed.message.slot == 2
    # the receive side strips a reply to our port down to the message
    reply = build_udp_frame(body, **{**kw, "udp_src": 20050, "udp_dst": 40000})  # type: ignore[arg-type]
    assert udp_payload_span(reply, 40000) == (42, len(body))
    assert udp_payload_span(reply, 40000, 0x0A000002) == (42, len(body))
    assert udp_payload_span(reply, 40001) is None                   # another port
    assert udp_payload_span(reply, 40000, 0x0A000009) is None       # another source
    assert udp_payload_span(reply[:60], 40000) is None              # truncated
    frag = bytearray(reply)
    struct.pack_into("!H", frag, 20, 0x2000)                        # more fragments
    assert udp_payload_span(frag, 40000) is None
    arp = bytearray(reply)
    arp[12:14] = b"\x08\x06"
    assert udp_payload_span(arp, 40000) is None
    opts = bytearray(reply[:14]) + bytes([0x46]) + reply[15:34] + bytes(4) + reply[34:]
    struct.pack_into("!H", opts, 16, len(opts) - 14)                # IPv4 with options
    assert udp_payload_span(opts, 40000) == (46, len(body))
    assert parse_mac("00-11-22-aa-BB-cc") == bytes.fromhex("001122aabbcc")


ETH_CHILD = '''\
"""Run in a private network namespace (unshare -n): eth://lo end to end."""
import fcntl, socket, struct, sys, threading
import numpy as np
from hostdrv import Aggregator, SoftSwitch, SwitchControl, open_datagram
from hostdrv.client.control import ROLE_WORKER
from hostdrv.wire.protocol import decode_message, encode_message, gradient

fake_query, slots_key, elems_key, dtype_key, state = sys.argv[1:6]
# lo comes up down in a new namespace; frames injected on lo with 127.0.0.1
# as source and destination pass the IPv4 input route only with these two
with socket.socket() as s:
    flags = struct.unpack_from("H", fcntl.ioctl(s, 0x8913, struct.pack("16sH", b"lo", 0)), 16)[0]
    fcntl.ioctl(s, 0x8914, struct.pack("16sH", b"lo", flags | 1))
for name in ("route_localnet", "accept_local"):
    with open(f"/proc/sys/net/ipv4/conf/lo/{name}", "w") as f:
        f.write("1")

# 1. a protocol frame to a plain UDP socket on 127.0.0.1 and its reply
srv = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
srv.bind(("127.0.0.1", 0))
srv.settimeout(5)
port = srv.getsockname()[1]
t = open_datagram(f"eth://lo?switch_ip=127.0.0.1&port={port}&dst_mac=00:00:00:00:00:00")
msg = encode_message(gradient(np.ones(16, np.float32), job=0, worker=0, slot=0, round_=0))
t.send(msg)
data, peer = srv.recvfrom(65536)
assert data == msg and peer == t.local_address, (peer, t.local_address)
srv.sendto(data[::-1], peer)
buf = bytearray(65536)
n, seg = t.recv_into(buf, 5.0)
assert bytes(buf[:n]) == msg[::-1] and seg == n, n
assert t.recv_into(buf, 0.05) == (0, 0)
# a UDP GSO batch (as the soft switch sends RESULTs): on lo the packet socket sees one
# frame before segmentation; the transport hands out one datagram per segment
from hostdrv.wire.net import SOL_UDP, UDP_SEGMENT
parts = [bytes([k]) * 100 for k in range(3)] + [b"\x07" * 40]
srv.sendmsg([b"".join(parts)], [(SOL_UDP, UDP_SEGMENT, struct.pack("H", 100))], 0, peer)
for p in parts:
    n, seg = t.recv_into(buf, 5.0)
    assert bytes(buf[:n]) == p and seg == n, (n, bytes(buf[:4]))
assert t.recv_into(buf, 0.05) == (0, 0)
t.close()

# 2. an Aggregator over eth://lo with a soft:// worker through the soft switch
import json
sw = SoftSwitch().start()
soft = SwitchControl(sw.url)
soft.configure_aggregation(members=2, slots=4, packet_elems=32)
with open(state) as f:
    st = json.load(f)
st["regs"].update({slots_key: 4, elems_key: 32, dtype_key: 0})
with open(state, "w") as f:
    json.dump(st, f)
host, sport = sw.address
a = Aggregator(f"eth://lo?switch_ip={host}&port={sport}&dst_mac=00:00:00:00:00:00&{fake_query}",
               worker=0, register=False, timeout=0.05, retries=20)
ip, udp = a.transport.local_address
soft.set_member(0, port=1, ip=ip, udp=udp, role=ROLE_WORKER)
b = Aggregator(sw.url, worker=1, timeout=0.05, retries=20)
xs = [np.arange(100, dtype=np.float32), np.full(100, 2.0, dtype=np.float32)]
out = [None, None]
ths = [threading.Thread(target=lambda i=i, c=c: out.__setitem__(i, c.allreduce(xs[i])))
       for i, c in enumerate((a, b))]
for th in ths:
    th.start()
for th in ths:
    th.join(20)
for o in out:
    np.testing.assert_array_equal(o, xs[0] + xs[1])
a.close(); b.close(); soft.close(); sw.close()
print("ETH-OK")
'''


def test_eth_loopback_end_to_end(tmp_path: Path) -> None:
    """eth://lo against a UDP socket and the soft switch, in a private network namespace.

    On ``lo`` the kernel does hand a frame sent on an AF_PACKET socket to the
    IPv4 stack (zero MACs, valid headers), but with the default sysctls it
    drops one from 127.0.0.1 to 127.0.0.1 in the input route lookup (martian
    destination unless ``route_localnet``, a local source unless
    ``accept_local``; both checked here). The test therefore runs in a new
    network namespace (``unshare -n``) where it sets both on its own ``lo``,
    leaving the host's configuration untouched.
    """
    if not hasattr(socket, "AF_PACKET"):
        pytest.skip("AF_PACKET sockets need Linux")
    if os.geteuid() != 0:
        pytest.skip("eth:// needs root (AF_PACKET) and unshare -n needs CAP_SYS_ADMIN")
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("needs util-linux unshare for a private network namespace")
    probe = subprocess.run([unshare, "-n", "true"], capture_output=True, text=True, timeout=10)
    if probe.returncode != 0:
        pytest.skip(f"cannot create a network namespace: {probe.stderr.strip()}")
    fake = FakeRwaxi(tmp_path, {"AGG_MEMBERS": 2})  # the job the child configures
    script = tmp_path / "eth_child.py"
    script.write_text(textwrap.dedent(ETH_CHILD))
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [unshare, "-n", sys.executable, str(script), fake.query(), fake.key("AGG_SLOTS"),
         fake.key("AGG_ELEMS"), fake.key("AGG_DTYPE"), str(fake.state)],
        capture_output=True, text=True, timeout=60, env=env, cwd=str(REPO))
    assert proc.returncode == 0 and "ETH-OK" in proc.stdout, proc.stdout + proc.stderr
    assert {fake.key("AGG_SLOTS"), fake.key("AGG_ELEMS")} <= {k for k, _ in fake.accessed()}
