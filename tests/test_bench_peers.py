"""scripts/bench_peers.py (replay against Reverb) and scripts/peers_reverb.py, its Reverb side.

The default suite never installs Reverb: the fast test runs our side only, with the
peer interpreter pointed at a path that does not exist (the "absent" path a clean
clone takes before ``make bench-peers``). The slow test runs ``--quick`` against
Reverb when ``.venv-peers`` is there (``make bench-peers``); it skips otherwise,
also under CI: ``make setup`` does not install the peers, by design.
"""

from __future__ import annotations

import importlib.util
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
    assert [n for n, _ in bench.SECTIONS] == ["replay", "allreduce"]
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
