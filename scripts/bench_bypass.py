#!/usr/bin/env python3
"""Kernel UDP vs DPDK (kernel bypass) round trips on the rack's veths, measured the PDP'22 way.

Two racks of 2 host namespaces around a switch namespace (``scripts/rack.py``), side by
side, measured in interleaved rounds (kernel, DPDK, kernel, DPDK, ...), so that load on
this shared machine hits both alike:

* **kernel**: the usual soft rack: the soft switch (native engine, UDP socket loop) on
  the switch namespace's bridge; clients on ``soft://`` (kernel UDP sockets);
* **dpdk**: a ``switch="none"`` rack whose veths ``p0``/``p1`` are ``af_packet`` ports of
  the soft switch on DPDK (``--dpdk``, the same engine and datagram rules); clients on
  ``dpdk://...?port=af_packet:eth0`` (their own DPDK port on the host's veth).

Per round and rack, on persistent client processes (one per host):

A third rack (``dpdk_sw``; ``--no-split`` leaves it out) runs the DPDK switch with
kernel UDP clients, to tell the switch's share of the difference from the clients'. On
this host itself (``--no-onehost`` leaves it out), the same two measurements compare the
soft switch on loopback UDP (``kernel1``) with the switch and clients on memif ports
(``memif1``), printed as ``onehost_memif_*_rtt_vs_kernel`` on the line before the last.

* ``replay``: host 0 pushes 32 records (``ReplayClient.push_records``) and draws a
  prioritized sample of 32 (``sample``): one round trip each, timed together;
* ``agg``: both hosts all-reduce one chunk (P fp32 elements) at the same time; host 0's
  ``allreduce`` call is timed.

Each client also reports its CPU seconds per wall second while measuring (``cpu``: the
price of polling), and the switch processes' CPU over the whole run is printed.

First of all (before any rack's switch runs; ``--no-onehost`` leaves it out, with the
memif pair; ``--no-memif`` that pair alone), **one host, torch**: ``torch.distributed.all_reduce`` of float32 ones on 2 and
4 rank processes of this host launched as torchrun launches them (``env://``), the ``netrl``
backend (its embedded soft switch in rank 0, on loopback UDP: the best data path the
backend has on one host) against gloo, in interleaved blocks per size (10 k, 1 M, 6.5 M,
25 M elements), medians; the table adds what the netrl calls cost (CPU per call of the
switch thread and of every rank, retransmissions, switch socket drops). It needs no root.

The last line holds ``bypass_replay_rtt_vs_kernel`` and ``bypass_agg_rtt_vs_kernel``
(median DPDK / median kernel: below 1 is a cut) and ``onehost_allreduce_vs_gloo`` (the
worst gloo / netrl ratio of the median call over 1 M, 6.5 M and 25 M elements, 4 ranks;
above 1: netrl is faster; ``onehost2_allreduce_vs_gloo`` on the line before it: 2 ranks).
The racks need root, iproute2 and the extension built with DPDK (without it the DPDK keys
say ``not_measured``).

Run: ``sudo python scripts/bench_bypass.py [--quick] [--rounds R] [--iters N] [--json FILE]
[--onehost-ranks 2 4] [--onehost-sizes N ...] [--onehost-blocks B] [--no-onehost] [--no-memif]
[--no-split]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(REPO))

import rack as rackmod  # noqa: E402

from hostdrv.rack import dpdk_switch  # noqa: E402

#: the persistent client: reads "replay N" / "agg N" / "quit" on stdin, answers one JSON line
CLIENT = textwrap.dedent("""
    import json, os, sys, time
    import numpy as np
    from hostdrv import Aggregator, ReplayClient
    url, worker, elems = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    agg = Aggregator(url, worker=worker, timeout=0.5)
    rc = ReplayClient(url, worker=worker + 2, obs_shape=(4,)) if worker == 0 else None
    rng = np.random.default_rng(worker)
    x = rng.standard_normal(elems).astype(np.float32)
    if rc is not None:
        recs = rng.integers(0, 256, (32, rc.record_bytes), dtype=np.uint8)
        prios = (rng.integers(1, 1 << 8, 32).astype(np.uint32) << 16).astype(np.uint32)
        rc.push_records(recs, prios)
    print(json.dumps({"ready": type(agg.transport).__name__}), flush=True)
    for line in sys.stdin:
        what, n = line.split()
        n = int(n)
        if what == "quit":
            break
        times = []
        c0, w0 = time.process_time(), time.perf_counter()
        for _ in range(n):
            t = time.perf_counter()
            if what == "replay":
                rc.push_records(recs, prios)
                rc.sample(32, prioritized=True)
            else:
                agg.allreduce(x)
            times.append(time.perf_counter() - t)
        cpu = (time.process_time() - c0) / max(time.perf_counter() - w0, 1e-9)
        print(json.dumps({"times": times, "cpu": cpu}), flush=True)
    agg.close()
    if rc is not None:
        rc.close()
""")


def cpu_seconds(ns: str) -> float:
    """utime + stime, in seconds, of every process in network namespace ``ns`` (the switch
    and, on the kernel rack, nothing else: the bridge is the kernel's)."""
    pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout
    total = 0
    for pid in pids.split():
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


class Side:
    """One rack with its switch and a persistent client per host."""

    def __init__(self, name: str, dpdk: bool, elems: int, *, kernel_clients: bool = False) -> None:
        self.name = name
        self.rack = rackmod.Rack(rackmod.RackConfig(
            prefix=rackmod.unique_prefix("nrb"), hosts=2, switch="none" if dpdk else "soft",
            max_elems=max(elems, 352))).up()
        self.proc: subprocess.Popen[str] | None = None
        self.clients: list[subprocess.Popen[str]] = []
        try:
            self._start(dpdk, elems, kernel_clients)
        except BaseException:
            self.close()  # the rack and whatever started in it
            raise

    def _start(self, dpdk: bool, elems: int, kernel_clients: bool) -> None:
        name, r = self.name, self.rack
        if dpdk:
            self.proc = dpdk_switch.start(r, max_elems=max(elems, 352))
            url = r.switch_url if kernel_clients else (
                f"dpdk://{r.switch_ip}:{r.config.switch_port}?port=af_packet:eth0&key={r.key_file}")
        else:
            url = r.switch_url
        self.cpu0 = cpu_seconds(r.switch_ns)
        self.t0 = time.monotonic()
        conf = r.run(0, [sys.executable, "-c",
                         "import sys; from hostdrv import SwitchControl as C; c = C(sys.argv[1]);"
                         f"c.configure_aggregation(members=2, slots=8, packet_elems={elems});"
                         "c.configure_replay(); c.close()", r.switch_url], timeout=60)
        if conf.returncode:
            raise RuntimeError(f"{name}: configure failed: {conf.stderr[-2000:]}")
        for i in range(2):
            p = r.popen(i, [sys.executable, "-c", CLIENT, url, str(i), str(elems)],
                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            self.clients.append(p)
        for p in self.clients:
            line = p.stdout.readline() if p.stdout else ""
            if not line.startswith("{"):
                raise RuntimeError(f"{name}: client did not start: {line!r} "
                                   f"{p.stderr.read()[-2000:] if p.stderr else ''}")

    def ask(self, what: str, n: int, hosts: list[int]) -> dict[str, Any]:
        for i in hosts:
            c = self.clients[i]
            assert c.stdin is not None
            c.stdin.write(f"{what} {n}\n")
            c.stdin.flush()
        answers = []
        for i in hosts:
            c = self.clients[i]
            line = c.stdout.readline() if c.stdout else ""
            if not line.startswith("{"):
                raise RuntimeError(f"{self.name}: client {i} failed: "
                                   f"{c.stderr.read()[-2000:] if c.stderr else ''}")
            answers.append(json.loads(line))
        return answers[0]

    def switch_cpu(self) -> float:
        return (cpu_seconds(self.rack.switch_ns) - self.cpu0) / (time.monotonic() - self.t0)

    def close_clients(self) -> None:
        """Ask every client to quit; kill one that does not within 10 s."""
        for c in self.clients:
            try:
                if c.stdin:
                    c.stdin.write("quit 0\n")
                    c.stdin.close()
                c.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                c.kill()

    def close(self) -> None:
        self.close_clients()
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.rack.down()


class OneHost(Side):
    """Switch and both clients on this host: the soft switch on loopback UDP (``kernel1``)
    or on memif ports to the clients (``memif1``: shared memory, no kernel on the data path)."""

    def __init__(self, name: str, memif: bool, elems: int, workdir: Path) -> None:
        from hostdrv.switch.soft import SoftSwitchProcess

        self.name = name
        self.clients = []
        self.proc = None
        sock = workdir / f"{name}.sock"
        args = ["--max-elems", str(max(elems, 352))]
        if memif:
            args += ["--dpdk", f"memif:{sock}@0", "--dpdk", f"memif:{sock}@1",
                     "--dpdk-address", "10.88.0.254:20050"]
        self.switch = SoftSwitchProcess("127.0.0.1:0", args)
        try:
            self._begin(memif, elems, sock)
        except BaseException:
            self.close()
            raise

    def _begin(self, memif: bool, elems: int, sock: Path) -> None:
        name = self.name
        ctl = f"{self.switch.address[0]}:{self.switch.address[1]}"
        self.pid = self.switch.proc.pid
        self.cpu0 = self._cpu()
        self.t0 = time.monotonic()
        conf = subprocess.run([sys.executable, "-c",
                               "import sys; from hostdrv import SwitchControl as C; "
                               "c = C(sys.argv[1]);"
                               f"c.configure_aggregation(members=2, slots=8, packet_elems={elems});"
                               "c.configure_replay(); c.close()", self.switch.url],
                              capture_output=True, text=True, timeout=60, env=_env())
        if conf.returncode:
            raise RuntimeError(f"{name}: configure failed: {conf.stderr[-2000:]}")
        for i in range(2):
            url = (f"dpdk://10.88.0.254:20050?port=memif:{sock}@{i}&ip=10.88.0.{i + 1}"
                   f"&control={ctl}") if memif else self.switch.url
            self.clients.append(subprocess.Popen(
                [sys.executable, "-c", CLIENT, url, str(i), str(elems)], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env()))
        for p in self.clients:
            line = p.stdout.readline() if p.stdout else ""
            if not line.startswith("{"):
                raise RuntimeError(f"{name}: client did not start: {line!r} "
                                   f"{p.stderr.read()[-2000:] if p.stderr else ''}")

    def _cpu(self) -> float:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def switch_cpu(self) -> float:
        return (self._cpu() - self.cpu0) / (time.monotonic() - self.t0)

    def close(self) -> None:
        self.close_clients()
        self.switch.stop()


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


#: one torchrun-style rank (``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``/``PORT``, ``env://``):
#: argv = JSON [[elements, calls per block], ...], blocks, warm-up calls; prints one JSON line
#: (per size and backend the call times, this rank's CPU in them, and on rank 0 what the
#: netrl calls cost the embedded switch: its thread's CPU, datagrams, drops, retransmissions)
RANK = textwrap.dedent("""
    import datetime, json, os, sys, threading, time
    from pathlib import Path
    import torch
    import torch.distributed as dist
    from hostdrv.torch_backend import netrl_group
    torch.set_num_threads(1)
    plan, (blocks, warmup) = json.loads(sys.argv[1]), map(int, sys.argv[2:4])
    dist.init_process_group("netrl", timeout=datetime.timedelta(seconds=300))
    rank, group = dist.get_rank(), netrl_group()
    gloo = dist.new_group(backend="gloo")
    switch = group._switches[0] if group._switches else None  # embedded: in rank 0
    tid = next((t.native_id for t in threading.enumerate() if t.name == "softswitch-native"),
               None)  # its native loop's thread
    clk = os.sysconf("SC_CLK_TCK")

    def switch_cpu():
        if tid is None:
            return 0.0
        f = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / clk

    def sw_stats():
        return switch.stats if switch is not None else {}

    out = {"window": group.aggregator.window, "packet_elems": group.aggregator.packet_elems,
           "sizes": {}}
    for n, iters in plan:
        t = torch.ones(n)
        for g in (None, gloo):
            for _ in range(warmup):
                dist.all_reduce(t, group=g)
        row = {"netrl": [], "gloo": [], "retrans": 0, "cpu": 0.0, "switch_cpu": 0.0,
               "proc_cpu": 0.0, "gloo_cpu": 0.0, "wall": 0.0}
        s0 = sw_stats()
        for b in range(blocks):
            for name in (("netrl", "gloo") if b % 2 == 0 else ("gloo", "netrl")):
                g = gloo if name == "gloo" else None
                dist.barrier(group=gloo)
                c0, w0, k0 = time.process_time(), time.perf_counter(), switch_cpu()
                for _ in range(iters):
                    t0 = time.perf_counter()
                    dist.all_reduce(t, group=g)
                    row[name].append(time.perf_counter() - t0)
                    if g is None:
                        row["retrans"] += group.aggregator.retransmissions
                if g is None:
                    row["wall"] += time.perf_counter() - w0
                    row["switch_cpu"] += switch_cpu() - k0
                    row["proc_cpu"] += time.process_time() - c0
                else:
                    row["gloo_cpu"] += time.process_time() - c0
        s1 = sw_stats()
        row["switch"] = {k: s1.get(k, 0) - s0.get(k, 0) for k in
                         ("datagrams", "sent", "send_calls", "busy_us", "rx_overflow")}
        row["calls"] = blocks * iters
        out["sizes"][str(n)] = row
        del t
    dist.barrier(group=gloo)
    print(json.dumps(out), flush=True)
    dist.barrier(group=gloo)  # every rank has its figures out
    # no teardown: the figures are out, and a rank whose peers (rank 0 holds the store)
    # already left can abort in gloo's teardown on a loaded host (seen once in CI:
    # "terminate called without an active exception"); teardown has its own tests
    # (tests/test_torch_backend.py, tests/test_torch_groups.py)
    sys.stderr.flush()
    os._exit(0)
""")


def onehost_allreduce(ranks: int, plan: list[tuple[int, int]], blocks: int, warmup: int = 1,
                      env: dict[str, str] | None = None, timeout: float = 900) -> dict[str, Any]:
    """``torch.distributed.all_reduce`` of float32 ones on ``ranks`` rank processes of this
    host, launched as torchrun does (``env://``): the ``netrl`` backend (its embedded soft
    switch in rank 0, the launcher's defaults) against gloo, per (elements, calls) of
    ``plan`` in ``blocks`` interleaved blocks (netrl then gloo, gloo then netrl, ...) after
    ``warmup`` calls of each. Returns rank 0's figures (:data:`RANK`) with every rank's CPU
    seconds (``rank_cpu``: in the netrl calls, rank 0's including the switch thread;
    ``rank_gloo_cpu``)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for r in range(ranks):
        e = _env()
        e.update(env or {})
        e.update(RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(ranks), LOCAL_WORLD_SIZE=str(ranks),
                 MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
        for k in ("NETRL_SWITCH", "NETRL_LEAVES"):
            e.pop(k, None)
        procs.append(subprocess.Popen(
            [sys.executable, "-c", RANK, json.dumps(plan), str(blocks), str(warmup)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e))
    try:
        outs = [p.communicate(timeout=timeout) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for p, (_, err) in zip(procs, outs, strict=True):
        if p.returncode:
            raise RuntimeError(f"onehost rank failed ({p.returncode}): {err[-3000:]}")
    got = [json.loads(o.strip().splitlines()[-1]) for o, _ in outs]
    for n, row in got[0]["sizes"].items():  # every rank's CPU (rank 0's includes the switch)
        row["rank_cpu"] = [g["sizes"][n]["proc_cpu"] for g in got]
        row["rank_gloo_cpu"] = [g["sizes"][n]["gloo_cpu"] for g in got]
    return got[0]


def summary(times: list[float]) -> dict[str, float]:
    us = sorted(t * 1e6 for t in times)
    return {"median_us": statistics.median(us), "p10_us": us[len(us) // 10],
            "p90_us": us[(9 * len(us)) // 10], "n": len(us)}


ONEHOST_SIZES = (10_000, 1_000_000, 6_500_000, 25_000_000)
"""float32 elements of the one-host all-reduces (6.5 M: DDP's default 25 MiB bucket)."""
KEY_SIZES = (1_000_000, 6_500_000, 25_000_000)
"""The sizes ``onehost_allreduce_vs_gloo`` takes the worst ratio over (4 ranks)."""


def calls_per_block(elems: int, quick: bool) -> int:
    """Calls of one size per block: about 0.1-0.5 s of all-reduces on this machine."""
    calls = 20 if elems <= 100_000 else 5 if elems <= 2_000_000 else 3 if elems <= 10_000_000 \
        else 2
    return max(1, calls // 2) if quick and elems > 100_000 else calls


def onehost_table(ranks_list: list[int], sizes: list[int], blocks: int,
                  quick: bool) -> dict[int, dict[str, Any]]:
    """:func:`onehost_allreduce` for each rank count; prints its table. Returns per rank
    count the figures, each size's row with ``netrl_ms``/``gloo_ms`` (medians) and
    ``ratio`` (gloo / netrl) added."""
    got: dict[int, dict[str, Any]] = {}
    for ranks in ranks_list:
        got[ranks] = onehost_allreduce(ranks, [(n, calls_per_block(n, quick)) for n in sizes],
                                       blocks)
    print(f"one host, torch.distributed.all_reduce of float32 ones, median ms per call over "
          f"{blocks} interleaved blocks; netrl: embedded soft switch, kernel UDP on loopback")
    print(f"{'ranks':>5} {'elems':>9} {'netrl ms':>9} {'gloo ms':>8} {'gloo/netrl':>10} "
          f"{'calls':>5} {'P':>6} {'window':>6} {'sw cpu':>7} {'netrl cpu':>9} "
          f"{'gloo cpu':>8} {'retx':>5} {'drops':>5}")
    for ranks, fig in got.items():
        for n, row in fig["sizes"].items():
            c = row["calls"]
            row["netrl_ms"] = 1e3 * statistics.median(row["netrl"])
            row["gloo_ms"] = 1e3 * statistics.median(row["gloo"])
            row["ratio"] = row["gloo_ms"] / row["netrl_ms"]
            # CPU ms per call: the switch thread; every rank's in its netrl calls (the
            # switch thread included, it runs in rank 0); every rank's in its gloo calls
            row["switch_cpu_ms"] = 1e3 * row["switch_cpu"] / c
            row["netrl_cpu_ms"] = 1e3 * sum(row["rank_cpu"]) / c
            row["gloo_cpu_ms"] = 1e3 * sum(row["rank_gloo_cpu"]) / c
            print(f"{ranks:>5} {int(n):>9} {row['netrl_ms']:>9.2f} {row['gloo_ms']:>8.2f} "
                  f"{row['ratio']:>10.2f} {c:>5} {fig['packet_elems']:>6} {fig['window']:>6} "
                  f"{row['switch_cpu_ms']:>7.1f} {row['netrl_cpu_ms']:>9.1f} "
                  f"{row['gloo_cpu_ms']:>8.1f} {row['retrans'] / c:>5.1f} "
                  f"{row['switch']['rx_overflow']:>5}")
    print("(cpu: ms of CPU per call, summed over the rank processes; sw: the switch thread's "
          "share; retx: retransmitted chunks per call at rank 0; drops: switch socket "
          "overflows)")
    return got


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="4 rounds of 100 (under 6 minutes)")
    p.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 10)")
    p.add_argument("--iters", type=int, default=None, help="round trips per round (default 200)")
    p.add_argument("--elems", type=int, default=256, help="fp32 elements of the all-reduced chunk")
    p.add_argument("--json", default="", help="write the figures to this file")
    p.add_argument("--no-onehost", action="store_true",
                   help="leave out both one-host parts (torch all_reduce; loopback UDP vs memif)")
    p.add_argument("--no-memif", action="store_true",
                   help="leave out the one-host pair loopback UDP vs memif only")
    p.add_argument("--onehost-ranks", type=int, nargs="+", default=[2, 4],
                   help="rank counts of the one-host all_reduce table (the key: 4)")
    p.add_argument("--onehost-sizes", type=int, nargs="+", default=list(ONEHOST_SIZES),
                   help="float32 elements of the one-host all_reduces")
    p.add_argument("--onehost-blocks", type=int, default=None,
                   help="interleaved netrl/gloo blocks per size (default 6, --quick 4)")
    p.add_argument("--no-split", action="store_true",
                   help="leave out the third rack (DPDK switch, kernel UDP clients)")
    args = p.parse_args(argv)
    rounds = args.rounds or (4 if args.quick else 10)
    iters = args.iters or (100 if args.quick else 200)
    figures: dict[str, Any] = {"rounds": rounds, "iters": iters, "elems": args.elems}
    onehost = "not_measured(--no-onehost)"
    if not args.no_onehost:  # first, before any rack's switch runs beside it
        try:
            import torch  # noqa: F401
        except ImportError:
            onehost = "not_measured(no_torch)"
        else:
            table = onehost_table(args.onehost_ranks, args.onehost_sizes,
                                  args.onehost_blocks or (4 if args.quick else 6), args.quick)
            figures["onehost_allreduce"] = {
                r: {n: {k: v for k, v in row.items() if k not in ("netrl", "gloo")}
                    for n, row in fig["sizes"].items()} for r, fig in table.items()}
            onehost = "not_measured(4_ranks_not_in_--onehost-ranks)"
            for r, fig in table.items():
                ratios = [row["ratio"] for n, row in fig["sizes"].items() if int(n) in KEY_SIZES]
                value = f"{min(ratios):.3f}" if ratios else "not_measured(no_1M_6.5M_25M_size)"
                if r == 4:
                    onehost = value
                else:
                    print(f"onehost{r}_allreduce_vs_gloo={value}")
    if os.geteuid() != 0:
        print("bench_bypass: the racks need root (network namespaces)")
        if args.json:
            Path(args.json).write_text(json.dumps(figures, indent=1))
        print(f"bypass_replay_rtt_vs_kernel=not_measured(no_root) "
              f"bypass_agg_rtt_vs_kernel=not_measured(no_root) onehost_allreduce_vs_gloo={onehost}")
        return 0
    try:
        import hostdrv._native as native

        dpdk = bool(getattr(native, "dpdk_available", False))
    except ImportError:
        dpdk = False
    sides: dict[str, Side] = {}
    try:
        sides["kernel"] = Side("kernel", False, args.elems)
        if dpdk:
            sides["dpdk"] = Side("dpdk", True, args.elems)
            if not args.no_split:  # what bounds it: the DPDK switch with kernel UDP clients
                sides["dpdk_sw"] = Side("dpdk_sw", True, args.elems, kernel_clients=True)
            if not args.no_onehost and not args.no_memif:
                import tempfile

                work = Path(tempfile.mkdtemp(prefix="nrl-bypass-"))
                sides["kernel1"] = OneHost("kernel1", False, args.elems, work)
                sides["memif1"] = OneHost("memif1", True, args.elems, work)
        got: dict[str, dict[str, list[float]]] = {s: {"replay": [], "agg": []} for s in sides}
        cpu: dict[str, dict[str, list[float]]] = {s: {"replay": [], "agg": []} for s in sides}
        for side in sides.values():  # warm-up, not counted
            side.ask("replay", 10, [0])
            side.ask("agg", 10, [0, 1])
        for r in range(rounds):
            order = list(sides) if r % 2 == 0 else list(reversed(sides))
            for name in order:
                a = sides[name].ask("replay", iters, [0])
                got[name]["replay"] += a["times"]
                cpu[name]["replay"].append(a["cpu"])
                a = sides[name].ask("agg", iters, [0, 1])
                got[name]["agg"] += a["times"]
                cpu[name]["agg"].append(a["cpu"])
        for name, side in sides.items():
            figures[name] = {what: summary(t) for what, t in got[name].items()}
            for what in ("replay", "agg"):
                figures[name][what]["client_cpu"] = statistics.mean(cpu[name][what])
            figures[name]["switch_cpu"] = side.switch_cpu()
    finally:
        for side in sides.values():
            side.close()
    print(f"{'path':8} {'what':7} {'median us':>10} {'p10':>8} {'p90':>8} {'client cpu':>10}")
    for name in sides:
        for what in ("replay", "agg"):
            f = figures[name][what]
            print(f"{name:8} {what:7} {f['median_us']:10.1f} {f['p10_us']:8.1f} "
                  f"{f['p90_us']:8.1f} {f['client_cpu']:10.2f}")
        print(f"{name:8} switch process CPU: {figures[name]['switch_cpu']:.2f} s/s")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))
    if dpdk:
        rr = figures["dpdk"]["replay"]["median_us"] / figures["kernel"]["replay"]["median_us"]
        ar = figures["dpdk"]["agg"]["median_us"] / figures["kernel"]["agg"]["median_us"]
        keys = f"bypass_replay_rtt_vs_kernel={rr:.3f} bypass_agg_rtt_vs_kernel={ar:.3f}"
    else:
        keys = ("bypass_replay_rtt_vs_kernel=not_measured(no_DPDK_in_hostdrv._native) "
                "bypass_agg_rtt_vs_kernel=not_measured(no_DPDK_in_hostdrv._native)")
    if "memif1" in figures:
        mr = figures["memif1"]["replay"]["median_us"] / figures["kernel1"]["replay"]["median_us"]
        ma = figures["memif1"]["agg"]["median_us"] / figures["kernel1"]["agg"]["median_us"]
        print(f"onehost_memif_replay_rtt_vs_kernel={mr:.3f} onehost_memif_agg_rtt_vs_kernel={ma:.3f}")
    print(f"{keys} onehost_allreduce_vs_gloo={onehost}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
