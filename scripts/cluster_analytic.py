"""The analytic cluster model of ``scripts/cluster_model.py``: its inputs, the formulas, the
validation against the rack and this machine, and the papers' setup.

The model and what each input is are described in ``scripts/cluster_model.py``'s
docstring (the command's help); this module holds no measurement and no output format.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from hostdrv.wire.consts import MAX_ELEMS, MAX_MEMBERS, PAYLOAD_OFFSET  # noqa: E402
from hostdrv.wire.regmap import REGISTERS  # noqa: E402

DATA = ROOT / "docs" / "data"
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
    packet_elems : int
        In-switch packet size P (fp32 elements per packet, one chunk each).
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
    packet_elems: int = MAX_ELEMS
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
    n_elems = math.ceil(grad_bytes / 4)
    chunks = max(1, math.ceil(n_elems / net.packet_elems))
    chunk_wire = 4 * net.packet_elems + PAYLOAD_OFFSET + ETH_FRAMING
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
    # "elems": the key's name in rack.json files written before it was "packet_elems"
    p = rack["packet_elems"] if "packet_elems" in rack else rack["elems"]
    return Network(rate_gbps=float(rack["rate_gbps"]), delay_us=delay_us + extra,
                   ports=MAX_MEMBERS, mtu=int(rack["mtu"]), packet_elems=int(p))


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
    net = Network(rate_gbps=1e6, delay_us=0.0, mtu=65536,
                  packet_elems=int(host_data["packet_elems"]))
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


def papers_network(host_data: dict[str, Any], rate_gbps: float, delay_us: float,
                   packet_elems: int) -> Network:
    """The papers' cluster: standard MTU, P = the board's, the RTL's measured latency."""
    rtl = host_data.get("rtl", {})
    clocks = rtl.get("agg_latency_clocks", 10)
    return Network(rate_gbps=rate_gbps, delay_us=delay_us, mtu=1500, packet_elems=packet_elems,
                   switch_latency_s=clocks / float(rtl.get("clock_hz", CLOCK_HZ)))

