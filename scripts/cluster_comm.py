"""The cluster model's prediction of the rack's comm-only all-reduce rows (``scripts/rack_allreduce.py``).

One blocking all-reduce of G bytes (float32) over N hosts on links of rate R (bit/s)
and one-way delay d is modelled from three things only:

* **wire**: the bytes the busiest link carries one way, less the link's ``tbf`` bucket
  (``rack.tbf_burst``: max(2 frames, 70 kB, 0.5 ms at R), full when a call starts, so
  those bytes leave at once), over R:

  - ``inswitch`` / ``netrl``: every host's link carries its G out and the sum back
    (full duplex, so once), in ``ceil(G / 4P)`` datagrams of up to P float32 with the
    protocol header and Ethernet framing;
  - ``ring``: gloo's ring sends ``2 (N-1) / N`` G per link one way, as TCP segments
    (MTU 9000);
  - ``ps``: the parameter server's one link carries N gradients in and N sums out, the
    two directions at once (the native server streams the sum back while pushes still
    arrive), so N G as TCP segments on the busiest direction;

* **latency**: link crossings on the critical path x d (2 for in-switch, 4 for the PS,
  4 (N-1) for the ring; :func:`cluster_analytic.latency_hops`) plus the store-and-forward
  of one datagram or segment per crossing at R;
* **host**: the same call's time measured on one host over loopback (the calibration,
  ``docs/data/host_allreduce.json``, written by ``scripts/peers_allreduce.py --json``):
  the CPU cost of the call with the same processes on the same cores, and no link. At a
  rank count the calibration lacks it is carried from 4 ranks as
  :class:`cluster_analytic.HostCost` does (PS x N/4; ring (N-1)/3 x the cost at 4G/N;
  in-switch unchanged).

The predicted call time is ``fixed + max(wire, host - fixed) + latency``: the host work
that grows with the bytes and the wire overlap (a window of datagrams, TCP's pipelining),
so the slower of the two sets the pace; the call's fixed cost (the calibrated call at its
smallest size, 64 KB: dispatch, the first send, the hand-off back) does not overlap with
anything and adds to it (in-switch, ``netrl`` and the PS: one exchange per call; the ring's
small-size cost is its 2(N-1) step hand-offs, which overlap the other steps' bytes, so
the ring keeps ``max(wire, host)``).
No figure is fitted to the rack's rows.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for _p in (str(ROOT), str(ROOT / "scripts")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from cluster_analytic import (  # noqa: E402
    DATA,
    ETH_FRAMING,
    HostCost,
    latency_hops,
    tcp_wire_bytes,
)

from hostdrv.wire.consts import PAYLOAD_OFFSET  # noqa: E402

HOST_ALLREDUCE = DATA / "host_allreduce.json"
"""The calibration: ``scripts/peers_allreduce.py --json`` (one host, loopback)."""
RACK_MTU = 9000
RACK_PACKET_ELEMS = 2048
COMM_METHODS = ("netrl", "inswitch", "ring", "ps")
_HOST_RULE = {"netrl": "inswitch", "inswitch": "inswitch", "ring": "allreduce", "ps": "ps"}
_HOPS = {"netrl": "inswitch", "inswitch": "inswitch", "ring": "allreduce", "ps": "ps"}


def wire_s(method: str, n: int, nbytes: float, rate_bits: float, *, mtu: int = RACK_MTU,
           packet_elems: int = RACK_PACKET_ELEMS, burst: float = 0.0) -> float:
    """Seconds the busiest link needs, one way, for one all-reduce (see the module doc);
    ``burst``: bytes the link's shaper lets through at once (the rack's ``tbf`` bucket,
    full at the start of a call: the calls are apart), which take no time at the rate."""
    if method in ("netrl", "inswitch"):
        chunks = max(1, math.ceil(nbytes / (4 * packet_elems)))
        wire = nbytes + chunks * (PAYLOAD_OFFSET + ETH_FRAMING)
    elif method == "ring":
        wire = tcp_wire_bytes(2 * (n - 1) / n * nbytes, mtu) + 0.0
    elif method == "ps":
        wire = n * (tcp_wire_bytes(nbytes, mtu) + 0.0)
    else:
        raise ValueError(f"bad method={method!r}: one of {COMM_METHODS}")
    return 8 * max(0.0, wire - burst) / rate_bits


def latency_s(method: str, n: int, rate_bits: float, delay_us: float, *,
              mtu: int = RACK_MTU, packet_elems: int = RACK_PACKET_ELEMS) -> float:
    """Link crossings on the critical path x (delay + one frame's store-and-forward)."""
    hops = latency_hops(_HOPS[method], n)
    frame = (4 * packet_elems + PAYLOAD_OFFSET if method in ("netrl", "inswitch") else mtu)
    return hops * (delay_us * 1e-6 + 8 * (frame + ETH_FRAMING) / rate_bits)


class HostCalibration:
    """Per method and rank count, the loopback call time by size (from ``host_allreduce.json``)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.origin = data.get("origin", "?")
        self.curves: dict[tuple[str, int], HostCost] = {}
        by: dict[tuple[str, int], list[tuple[float, float]]] = {}
        for r in data["rows"]:
            by.setdefault((r["method"], int(r["ranks"])), []).append(
                (float(r["bytes"]), 1e-3 * float(r["median_ms"])))
        for (m, n), pts in by.items():
            self.curves[(m, n)] = HostCost(tuple(sorted(pts)), workers=n)

    def smallest(self, method: str, n: int) -> float:
        """The smallest calibrated size (bytes) of ``method`` at ``n`` ranks (else at the
        largest calibrated rank count)."""
        have = sorted(k for m, k in self.curves if m == method)
        if not have:
            raise KeyError(f"no host calibration of {method!r}")
        return self.curves[(method, n if n in have else have[-1])].points[0][0]

    @classmethod
    def load(cls, path: Path = HOST_ALLREDUCE) -> HostCalibration:
        """Read the calibration file (a clear error when it is missing)."""
        if not path.exists():
            raise FileNotFoundError(f"{path}: missing; run `python scripts/peers_allreduce.py "
                                    f"--json {path}` (one host, about 5 minutes)")
        return cls(json.loads(path.read_text()))

    def host_s(self, method: str, n: int, nbytes: float) -> float:
        """Seconds of the call on one host: measured at ``n`` ranks, else carried from the
        largest calibrated rank count (``HostCost.round_s``'s rules)."""
        if (method, n) in self.curves:
            return self.curves[(method, n)].cost(nbytes)
        have = sorted(k for m, k in self.curves if m == method)
        if not have:
            raise KeyError(f"no host calibration of {method!r}")
        base = self.curves[(method, have[-1])]
        return base.round_s(_HOST_RULE[method], nbytes, n)


def predict_s(method: str, n: int, nbytes: float, rate_bits: float, delay_us: float,
              host: HostCalibration) -> dict[str, float]:
    """The model's seconds of one call and its parts (``wire``, ``host``, ``fixed``,
    ``latency``): ``fixed + max(wire, host - fixed) + latency``, where ``fixed`` is the
    calibrated call at its smallest size (the per-call cost: dispatch, the first send,
    the hand-off back), which nothing overlaps with the wire; only the part that grows
    with the bytes does. The ring's ``fixed`` is 0: its calibrated small-size cost is
    2(N-1) step hand-offs, each overlapping the other steps' bytes on the wire."""
    import rack  # the rack's tbf bucket (scripts/rack.py)

    w = wire_s(method, n, nbytes, rate_bits, burst=rack.tbf_burst(rate_bits / 8, RACK_MTU))
    h = host.host_s(method, n, nbytes)
    f = 0.0 if method == "ring" else min(h, host.host_s(method, n, host.smallest(method, n)))
    lat = latency_s(method, n, rate_bits, delay_us)
    return {"wire": w, "host": h, "fixed": f, "latency": lat,
            "total": f + max(w, h - f) + lat}


def comm_rows_error(res: dict[str, Any], host: HostCalibration | None = None,
                    delay_us: float = 0.0) -> tuple[dict[tuple[str, int, int, str], float],
                                                    dict[str, Any]]:
    """Predict every row of a ``rack_allreduce.run`` result; (predicted ms by (rate, hosts,
    bytes, method), {"rows": [...], "max": largest |error|, "median": ...}). A row's error
    is (model - measured) / measured of the median call time."""
    host = host or HostCalibration.load()
    predicted: dict[tuple[str, int, int, str], float] = {}
    rows = []
    for r in res["rows"]:
        p = predict_s(r["method"].split("@")[0], r["ranks"], r["bytes"], r["rate_bits"],
                      r.get("delay_us", delay_us), host)
        ms = 1e3 * p["total"]
        predicted[(r["rate"], r["ranks"], r["bytes"], r["method"])] = ms
        rows.append({"rate": r["rate"], "hosts": r["ranks"], "bytes": r["bytes"],
                     "method": r["method"], "measured_ms": r["median_ms"], "model_ms": ms,
                     "wire_ms": 1e3 * p["wire"], "host_ms": 1e3 * p["host"],
                     "fixed_ms": 1e3 * p["fixed"], "cpu_ms": r.get("cpu_ms"),
                     "sw_cpu_ms_call": r.get("sw_cpu_ms_call"),
                     "retransmissions": r.get("retransmissions"),
                     "latency_ms": 1e3 * p["latency"],
                     "bound": "wire" if p["wire"] >= p["host"] - p["fixed"] else "host",
                     "error": (ms - r["median_ms"]) / r["median_ms"]})
    errs = [abs(x["error"]) for x in rows]
    return predicted, {"rows": rows, "max": max(errs) if errs else float("nan"),
                       "median": statistics.median(errs) if errs else float("nan"),
                       "calibration": host.origin}


def format_comm_errors(err: dict[str, Any]) -> str:
    """One line per row: measured, model (wire / host / latency), error."""
    lines = ["model of each comm-only row: fixed + max(wire, host - fixed) + latency (no fitted "
             "figure); "
             "host = the same call on one host (" + str(err.get("calibration", "?")) + ")",
             f"{'rate':>9} {'hosts':>5} {'size':>7} {'method':>9} {'measured':>9} {'model':>8} "
             f"{'wire':>8} {'host':>8} {'fixed':>6} {'bound':>5} {'error':>7}  rank-0 CPU, "
             f"switch CPU per call ms, retransmitted"]
    for r in err["rows"]:
        size = (f"{r['bytes'] // 2**20} MB" if r["bytes"] >= 2**20 else f"{r['bytes'] // 1024} KB")
        lines.append(f"{r['rate']:>9} {r['hosts']:>5} {size:>7} {r['method']:>9} "
                     f"{r['measured_ms']:9.2f} {r['model_ms']:8.2f} {r['wire_ms']:8.2f} "
                     f"{r['host_ms']:8.2f} {r.get('fixed_ms', 0.0):6.2f} {r['bound']:>5} "
                     f"{r['error']:+7.0%}  " + " ".join(
                         "-" if r.get(k) is None else f"{r[k]:.2f}" if isinstance(r[k], float)
                         else str(r[k]) for k in ("cpu_ms", "sw_cpu_ms_call", "retransmissions")))
    errs = np.array([abs(r["error"]) for r in err["rows"]])
    if len(errs):
        lines.append(f"largest |error| {err['max']:.1%}, median {err['median']:.1%}; rows within "
                     f"15 %: {int((errs <= 0.15).sum())} of {len(errs)}")
    return "\n".join(lines)


__all__ = ["COMM_METHODS", "HOST_ALLREDUCE", "HostCalibration", "comm_rows_error",
           "format_comm_errors", "latency_s", "predict_s", "wire_s"]
