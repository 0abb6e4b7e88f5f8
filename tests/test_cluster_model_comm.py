"""scripts/cluster_comm.py: the model of the rack's comm-only all-reduce rows (and
``scripts/cluster_model.py --comm``, which prints each row's error and ``model_comm_error``)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

import cluster_comm  # noqa: E402
from cluster_analytic import ETH_FRAMING, tcp_wire_bytes  # noqa: E402

from hostdrv.wire.consts import PAYLOAD_OFFSET  # noqa: E402

MB = 1 << 20
GBIT = 1e9


def _calibration(ranks: tuple[int, ...] = (2, 4)) -> cluster_comm.HostCalibration:
    rows = []
    for n in ranks:
        for size, ms in ((64 << 10, 1.0), (1 * MB, 5.0), (4 * MB, 20.0)):
            for k, m in enumerate(cluster_comm.COMM_METHODS):
                rows.append({"ranks": n, "bytes": size, "method": m, "median_ms": ms * (1 + k)})
    return cluster_comm.HostCalibration({"origin": "test", "rows": rows})


def test_wire_bytes_per_method() -> None:
    """The busiest link's bytes: own gradient in datagrams (in-switch), 2(N-1)/N G as TCP
    (ring), N G as TCP at the PS's link."""
    g, n, p = 4 * MB, 4, cluster_comm.RACK_PACKET_ELEMS
    chunks = math.ceil(g / (4 * p))
    assert cluster_comm.wire_s("inswitch", n, g, GBIT) == pytest.approx(
        8 * (g + chunks * (PAYLOAD_OFFSET + ETH_FRAMING)) / GBIT)
    assert cluster_comm.wire_s("netrl", n, g, GBIT) == cluster_comm.wire_s("inswitch", n, g, GBIT)
    assert cluster_comm.wire_s("ring", n, g, GBIT) == pytest.approx(
        8 * tcp_wire_bytes(2 * (n - 1) / n * g, 9000) / GBIT)
    assert cluster_comm.wire_s("ps", n, g, GBIT) == pytest.approx(
        8 * n * tcp_wire_bytes(g, 9000) / GBIT)
    # the topology's ratios, framing aside: ring 2(N-1)/N, PS N times in-switch's bytes
    sw = cluster_comm.wire_s("inswitch", n, g, GBIT)
    assert cluster_comm.wire_s("ring", n, g, GBIT) / sw == pytest.approx(2 * (n - 1) / n, rel=0.02)
    assert cluster_comm.wire_s("ps", n, g, GBIT) / sw == pytest.approx(n, rel=0.02)
    # a 10x slower link takes 10x longer (time dilation)
    assert cluster_comm.wire_s("ring", n, g, GBIT / 10) == pytest.approx(
        10 * cluster_comm.wire_s("ring", n, g, GBIT))
    with pytest.raises(ValueError, match="bad method"):
        cluster_comm.wire_s("gossip", n, g, GBIT)


def test_prediction_is_the_fixed_cost_then_the_slower_of_wire_and_host() -> None:
    """fixed + max(wire, host - fixed) + latency: the calibrated call's smallest-size cost
    is serial (none for the ring); the wire is the busiest link's bytes less the rack's
    tbf bucket."""
    import rack

    cal = _calibration()
    for m in cluster_comm.COMM_METHODS:
        for rate in (GBIT, 10 * GBIT, 100 * GBIT):
            p = cluster_comm.predict_s(m, 4, 1 * MB, rate, 5.0, cal)
            burst = rack.tbf_burst(rate / 8, cluster_comm.RACK_MTU)
            assert p["wire"] == cluster_comm.wire_s(m, 4, 1 * MB, rate, burst=burst)
            assert p["host"] == cal.host_s(m, 4, 1 * MB)
            assert p["fixed"] == (0.0 if m == "ring" else cal.host_s(m, 4, 64 << 10))
            assert p["latency"] == cluster_comm.latency_s(m, 4, rate, 5.0)
            assert p["total"] == p["fixed"] + max(p["wire"], p["host"] - p["fixed"]) + p["latency"]
    # the bucket: a call below it takes no wire time, above it the rest at the rate
    assert cluster_comm.wire_s("inswitch", 4, 64 << 10, GBIT, burst=70_000) == 0.0
    assert cluster_comm.wire_s("inswitch", 4, 4 * MB, GBIT, burst=70_000) == pytest.approx(
        cluster_comm.wire_s("inswitch", 4, 4 * MB, GBIT) - 8 * 70_000 / GBIT)
    # the ring's critical path crosses 4(N-1) links, in-switch's 2
    assert cluster_comm.latency_s("ring", 4, 1e15, 10.0) == pytest.approx(12 * 10e-6, rel=1e-4)
    assert cluster_comm.latency_s("inswitch", 4, 1e15, 10.0) == pytest.approx(2 * 10e-6, rel=1e-4)


def test_host_calibration_measured_and_carried() -> None:
    cal = _calibration()
    curve = cal.curves[("ps", 4)]
    assert cal.host_s("ps", 4, 1 * MB) == curve.cost(1 * MB)
    assert cal.host_s("ring", 2, 4 * MB) == cal.curves[("ring", 2)].cost(4 * MB)
    # 8 ranks: carried from 4 (PS x N/4, ring (N-1)/3 at G 4/N, in-switch unchanged)
    assert cal.host_s("ps", 8, 1 * MB) == pytest.approx(2 * curve.cost(1 * MB))
    ring = cal.curves[("ring", 4)]
    assert cal.host_s("ring", 8, 4 * MB) == pytest.approx(7 / 3 * ring.cost(2 * MB))
    assert cal.host_s("netrl", 8, 4 * MB) == cal.curves[("netrl", 4)].cost(4 * MB)
    with pytest.raises(KeyError):
        cluster_comm.HostCalibration({"rows": []}).host_s("ps", 4, 1.0)
    with pytest.raises(FileNotFoundError, match="peers_allreduce.py"):
        cluster_comm.HostCalibration.load(REPO / "nonesuch.json")


def _rack_result() -> dict[str, object]:
    rows = []
    for m in cluster_comm.COMM_METHODS:
        for size in (64 << 10, 4 * MB):
            rows.append({"rate": "1gbit", "rate_bits": GBIT, "ranks": 4, "bytes": size,
                         "method": m, "median_ms": 10.0 + size / MB})
    return {"rows": rows}


def test_every_row_gets_its_error() -> None:
    cal = _calibration()
    res = _rack_result()
    predicted, err = cluster_comm.comm_rows_error(res, cal)
    assert len(err["rows"]) == len(res["rows"]) == len(predicted)
    for r, e in zip(res["rows"], err["rows"], strict=True):
        model = 1e3 * cluster_comm.predict_s(r["method"], 4, r["bytes"], GBIT, 0.0, cal)["total"]
        assert e["model_ms"] == pytest.approx(model)
        assert e["error"] == pytest.approx((model - r["median_ms"]) / r["median_ms"])
    assert err["max"] == max(abs(e["error"]) for e in err["rows"])
    text = cluster_comm.format_comm_errors(err)
    assert "largest |error|" in text and text.count("1gbit") == len(res["rows"])


def test_cluster_model_comm_command(tmp_path: Path) -> None:
    cal = tmp_path / "cal.json"
    rows = [{"ranks": n, "bytes": b, "method": m, "median_ms": 2.0}
            for n in (4,) for b in (64 << 10, 4 * MB) for m in cluster_comm.COMM_METHODS]
    cal.write_text(json.dumps({"origin": "test", "rows": rows}))
    res = tmp_path / "rack.json"
    res.write_text(json.dumps(_rack_result()))
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "cluster_model.py"), "--comm",
                        str(res), "--host-allreduce", str(cal)], capture_output=True, text=True,
                       cwd=REPO, timeout=120)
    assert r.returncode == 0, r.stderr
    last = r.stdout.strip().splitlines()[-1]
    assert last.startswith("model_comm_error=") and float(last.split("=")[1]) >= 0
