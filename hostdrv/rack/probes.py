"""Probes of a rack (``scripts/rack.py``): round-trip time, TCP goodput and the counters that
say where datagrams are lost.

Each takes the :class:`rack.Rack` (any object with its ``popen``, ``run``, ``host_ip``,
``switch_ip``, ``switch_ns`` and ``namespaces``); ``scripts/rack.py`` re-exports them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from hostdrv.errors import NetrlError


class ProbeError(NetrlError, RuntimeError):
    """A probe's helper process did not start or failed (the message says which)."""


_ECHO = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
print("ready", flush=True)
while True:
    data, addr = s.recvfrom(65536)
    if data == b"stop":
        break
    s.sendto(data, addr)
"""

_PING = """
import json, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2.0)
dst, n, size = (sys.argv[1], int(sys.argv[2])), int(sys.argv[3]), int(sys.argv[4])
msg = bytes(size)
out = []
for i in range(n + 5):
    t = time.perf_counter_ns()
    s.sendto(msg, dst)
    s.recvfrom(65536)
    if i >= 5:
        out.append(time.perf_counter_ns() - t)
    time.sleep(0.002)
if len(sys.argv) > 5:
    s.sendto(b"stop", dst)
print(json.dumps(out))
"""

_SINK = """
import socket, sys, time
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind((sys.argv[1], int(sys.argv[2])))
srv.listen(1)
print("ready", flush=True)
c, _ = srv.accept()
n, t0 = 0, None
while True:
    b = c.recv(1 << 20)
    if not b:
        break
    if t0 is None:
        t0 = time.perf_counter()
    n += len(b)
print(n, time.perf_counter() - t0, flush=True)
"""

_SOURCE = """
import socket, sys, time
c = socket.create_connection((sys.argv[1], int(sys.argv[2])))
buf = bytes(1 << 20)
end = time.perf_counter() + float(sys.argv[3])
while time.perf_counter() < end:
    c.sendall(buf)
c.close()
"""


def _wait_ready(proc: subprocess.Popen[str]) -> None:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("ready"):
        proc.kill()
        raise ProbeError(f"helper did not start: {line!r} {proc.communicate()[1]!r}")


def measure_rtt(rack: Any, src: int, dst: int | None, *, n: int = 200, size: int = 64,
                port: int = 20999) -> list[float]:
    """Round-trip times in seconds of ``n`` UDP datagrams of ``size`` bytes from host ``src`` to
    an echo on host ``dst`` (``None``: the switch namespace), one at a time."""
    ip = rack.switch_ip if dst is None else rack.host_ip(dst)
    cmd = [sys.executable, "-c", _ECHO, ip, str(port)]
    if dst is None:
        echo = subprocess.Popen(["ip", "netns", "exec", rack.switch_ns, *cmd], text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    else:
        echo = rack.popen(dst, cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_ready(echo)
        r = rack.run(src, [sys.executable, "-c", _PING, ip, str(port), str(n), str(size), "stop"],
                     timeout=60)
        if r.returncode:
            raise ProbeError(f"rtt probe failed: {r.stderr[-2000:]}")
        return [t / 1e9 for t in json.loads(r.stdout)]
    finally:
        try:
            echo.wait(timeout=5)
        except subprocess.TimeoutExpired:
            echo.kill()
            echo.wait()


def measure_rate(rack: Any, src: int, dst: int, *, seconds: float = 1.0,
                 port: int = 20998) -> float:
    """TCP goodput in bytes/s from host ``src`` to host ``dst`` over ``seconds``."""
    sink = rack.popen(dst, [sys.executable, "-c", _SINK, rack.host_ip(dst), str(port)],
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_ready(sink)
        rack.run(src, [sys.executable, "-c", _SOURCE, rack.host_ip(dst), str(port), str(seconds)],
                 timeout=seconds + 30)
        out, err = sink.communicate(timeout=30)
    finally:
        if sink.poll() is None:
            sink.kill()
            sink.wait()
    nbytes, secs = out.split()
    return int(nbytes) / float(secs)


UDP_FIELDS = ("InDatagrams", "InErrors", "RcvbufErrors", "SndbufErrors")


def net_counters(rack: Any) -> dict[str, int]:
    """Where datagrams are lost, summed over the rack: the switch namespace's and the hosts'
    UDP counters (``/proc/net/snmp``: ``sw_RcvbufErrors`` = datagrams the switch's socket
    dropped for want of receive buffer; ``leaves_*`` the leaf switches', ``hosts_*`` the
    hosts'), the ``tbf`` qdiscs' drops (``qdisc_dropped``),
    the veths' receive drops (``rx_dropped``, a full backlog) and the machine's
    ``softnet_stat`` backlog drops (``backlog_dropped``; not per namespace); ``sw_cpu_ms``:
    user + system CPU time of the processes in the switch namespace (the soft switches)."""
    out: dict[str, int] = {}
    leaves = {rack.leaf_ns(k) for k in range(rack.config.leaves)}
    for ns in rack.namespaces():
        side = ("sw" if ns == rack.switch_ns else "leaves" if ns in leaves else "hosts")
        snmp = subprocess.run(["ip", "netns", "exec", ns, "cat", "/proc/net/snmp"],
                              capture_output=True, text=True, check=False).stdout.splitlines()
        udp = [ln.split() for ln in snmp if ln.startswith("Udp:")]
        if len(udp) >= 2:
            for name, value in zip(udp[0][1:], udp[1][1:], strict=False):
                if name in UDP_FIELDS:
                    out[f"{side}_{name}"] = out.get(f"{side}_{name}", 0) + int(value)
        qd = subprocess.run(["ip", "netns", "exec", ns, "tc", "-s", "qdisc", "show"],
                            capture_output=True, text=True, check=False).stdout
        out["qdisc_dropped"] = out.get("qdisc_dropped", 0) + sum(
            int(m) for m in re.findall(r"dropped (\d+)", qd))
        link = subprocess.run(["ip", "-n", ns, "-s", "-j", "link", "show"], capture_output=True,
                              text=True, check=False).stdout
        for dev in json.loads(link or "[]"):
            rx = dev.get("stats64", dev.get("stats", {})).get("rx", {})
            out["rx_dropped"] = out.get("rx_dropped", 0) + int(rx.get("dropped", 0))
    tick = os.sysconf("SC_CLK_TCK")
    for pid in subprocess.run(["ip", "netns", "pids", rack.switch_ns], capture_output=True,
                              text=True, check=False).stdout.split():
        try:
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out["sw_cpu_ms"] = out.get("sw_cpu_ms", 0) + (int(stat[11]) + int(stat[12])) * 1000 // tick
    with open("/proc/net/softnet_stat") as f:
        out["backlog_dropped"] = sum(int(ln.split()[1], 16) for ln in f if ln.strip())
    return out


__all__ = ["UDP_FIELDS", "ProbeError", "measure_rate", "measure_rtt", "net_counters"]
