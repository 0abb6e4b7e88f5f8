"""scripts/bench_peers.py (replay against Reverb) and scripts/peers_reverb.py, its Reverb side.

The default suite never installs Reverb: the fast test runs our side only, with the
peer interpreter pointed at a path that does not exist (the "absent" path a clean
clone takes before ``make bench-peers``). The slow test runs ``--quick`` against
Reverb when ``.venv-peers`` is there (``make bench-peers``); it skips otherwise,
also under CI: ``make setup`` does not install the peers, by design.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "bench_peers.py"
PEERS_PYTHON = REPO / ".venv-peers" / "bin" / "python"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_peers", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_peers"] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def _keys(stdout: str) -> dict[str, str]:
    last = stdout.strip().splitlines()[-1]
    return dict(kv.split("=", 1) for kv in last.split())


def test_sections_and_arguments() -> None:
    bench = _load()
    assert [n for n, _ in bench.SECTIONS] == ["replay", "allreduce", "rack"]
    args = bench.parse_args(["--quick"])
    assert (args.reps, args.seconds, args.sizes) == (5, 0.75, [128, 4032])
    # drawn ahead of the consumed batch: in flight per worker + prefetched batches + the one
    # being assembled
    assert bench.staleness(args) == args.in_flight * args.reverb_workers + (args.prefetch + 1) * args.batch
    assert bench.limiter_name(args) == f"MinSize({args.min_size})"
    with pytest.raises(SystemExit):
        bench.parse_args(["--sections", "nonesuch"])
    with pytest.raises(SystemExit):
        bench.parse_args(["--actors", "8"])


def test_own_side_with_reverb_absent(tmp_path: Path) -> None:
    """Our figures are measured and printed; the Reverb keys say ``absent`` and the command
    that installs it is named; exit 0."""
    r = subprocess.run([sys.executable, str(SCRIPT), "--peers-python", str(tmp_path / "nope"),
                        "--sizes", "128", "--reps", "1", "--seconds", "0.2", "--actors", "2",
                        "--min-size", "64", "--capacity", "1024", "--sections", "replay"],
                       capture_output=True, text=True, cwd=REPO, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "Reverb absent" in r.stdout and "make bench-peers" in r.stdout
    keys = _keys(r.stdout)
    for k in ("replay_access_vs_reverb", "prioritized_vs_reverb", "replay_throughput_vs_reverb"):
        assert keys[k] == "absent"
    for k in ("access_us_ours", "prioritized_us_ours", "samples_per_s_ours"):
        assert float(keys[k]) > 0, k
    assert "prioritized sample + update" in r.stdout and "reverb dataset" not in r.stdout


@pytest.mark.slow
def test_quick_against_reverb() -> None:
    """``bench_peers.py --quick`` against Reverb in .venv-peers (about 3 min here)."""
    if not PEERS_PYTHON.is_file():
        pytest.skip("no .venv-peers (Reverb): `make bench-peers` installs it; never part of make setup")
    r = subprocess.run([sys.executable, str(SCRIPT), "--quick"], capture_output=True, text=True,
                       cwd=REPO, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    keys = _keys(r.stdout)
    for k in ("replay_access_vs_reverb", "prioritized_vs_reverb", "replay_throughput_vs_reverb"):
        assert float(keys[k]) > 0, (k, keys[k])
    assert "Staleness its prefetch allows" in r.stdout
    assert "TrajectoryDataset(max_in_flight_samples_per_worker=" in r.stdout


def test_rack_section_without_root_says_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where no rack can be built (not root, no iproute2) the rack keys read ``skipped`` and
    the reason is printed; nothing is measured."""
    bench = _load()
    sys.path.insert(0, str(REPO / "scripts"))
    import rack_allreduce

    monkeypatch.setattr(rack_allreduce, "can_build_rack", lambda: "needs root (network namespaces)")
    monkeypatch.setattr(rack_allreduce, "run", lambda *a, **k: pytest.fail("measured"))
    res = bench.rack_section(bench.parse_args(["--quick"]))
    assert res.keys == {k: "skipped" for k in bench.RACK_KEYS}
    assert res.lines == ["rack: skipped: needs root (network namespaces)"]
    assert set(bench.RACK_KEYS) == {"rack_allreduce_vs_ring", "rack_allreduce_vs_ps",
                                    "model_comm_error"}


def test_rack_allreduce_script_without_root() -> None:
    """``scripts/rack_allreduce.py`` as an unprivileged user: a clear skip line, exit 0."""
    if os.geteuid() != 0:
        cmd = [sys.executable, str(REPO / "scripts" / "rack_allreduce.py"), "--quick"]
    else:  # drop to nobody for this one run
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable,
               str(REPO / "scripts" / "rack_allreduce.py"), "--quick"]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd="/", timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.strip().splitlines()
    assert lines[-2] == "rack_allreduce: skipped: needs root (network namespaces)", r.stdout
    assert _keys(r.stdout) == {"rack_allreduce_vs_ring": "skipped",
                               "rack_allreduce_vs_ps": "skipped", "model_comm_error": "skipped"}
