"""Every script under ``scripts/`` runs somewhere in the test suite, in its smallest configuration.

A script nobody runs rots unnoticed (``bench_replay.py``'s Yosys step crashed for
a while: it read the RTL its own way). :data:`COVERED` names, for each script,
the test that runs it already; :data:`SMOKE` gives the others a command line
here. ``test_every_script_is_covered`` fails when a script is added to
``scripts/`` without either.

Every smoke run runs in every ``make test`` (CI): none is behind ``slow``. The three that
need root (network namespaces) are skipped on a machine where the tests do not run as root
(CI runs as root).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "scripts"
sys.path.insert(0, str(Path(__file__).resolve().parent))
from toolcheck import require_tool  # noqa: E402

# script -> the test that runs it
COVERED = {
    "gen_regs.py": "tests/test_regmap.py (regeneration changes nothing)",
    "lint_rtl.py": "tests/test_lint.py",
    "synth_yosys.py": "tests/test_synth_scripts.py::test_synth_yosys_tiny_top",
    "rack.py": "tests/test_rack.py",
    "rack_cli.py": "tests/test_rack.py::test_cli_up_run_down_and_cleanup_after_a_crash",
    # the modules of cluster_model.py (model / calibration / report), run by its smoke run
    "cluster_analytic.py": "tests/test_cluster_model.py",
    "cluster_calibration.py": "tests/test_cluster_model.py",
    "cluster_report.py": "tests/test_cluster_model.py",
    "cluster_comm.py": "tests/test_cluster_model_comm.py",
    "sume_build.sh": "tests/test_sume_flow.py::test_sume_build_dry_run",
    "sume_flash.sh": "tests/test_sume_flow.py::test_flash_*",
    "sume_riffa_patch.py": "tests/test_sume_riffa_patch.py",
    # our side and the "Reverb absent" path fast; --quick against Reverb (slow) with .venv-peers
    "bench_peers.py": "tests/test_bench_peers.py",
    "peers_reverb.py": "tests/test_bench_peers.py::test_quick_against_reverb",
}

# script -> (arguments, seconds allowed, needs root?, what it needs on PATH). The seconds in the
# comments: a CI run on a clean clone (2 cores, afc44d1); a cocotb build the suite's own tests
# also use is built once for both
SMOKE: dict[str, tuple[list[str], int, bool, tuple[str, ...]]] = {
    # under 1 s
    "cluster_model.py": ([], 120, False, ()),
    # 4 s: 2 ranks, 64 KB, in-switch / native PS / gloo
    "peers_allreduce.py": (["--ranks", "2", "--sizes-kb", "64", "--repeats", "2", "--warmup", "1",
                            "--no-netrl"], 300, False, ()),
    # 71 s: C = 64 records, the bench test on test_replay_engine's Verilator build, and Yosys with
    # plain abc (the step that used to crash; abc9 takes over 10 minutes there)
    "bench_replay.py": (["--smoke", "--workdir", "{tmp}"], 1200, False, ("yosys", "verilator")),
    # 17 s
    "bench_host.py": (["--seconds", "0.1", "--iters", "1", "--reps", "2", "--engines", "native"],
                      600, False, ()),
    # 6 s
    "bench_replay_host.py": (["--quick", "--reps", "5", "--seconds", "0.05", "--json", "", "--plot", ""],
                             600, False, ()),
    # 7 s: PPO through the soft switch, 4096 environment steps
    "bench_rl.py": (["--smoke"], 900, False, ()),
    # 7 s
    "bench_workloads.py": (["--algos", "ppo", "--strategies", "inswitch/sync", "--workers", "2",
                            "--iterations", "2", "--out", "{tmp}/workloads.json"], 900, False, ()),
    # 4 s: the bench test on test_grad_agg's Verilator build (DATA_WIDTH 256), no Yosys
    "bench_grad_agg.py": (["--no-synth", "--slots", "4"], 900, False, ("verilator",)),
    # 5 s: line and toggle coverage of one small testbench (its own coverage build)
    "coverage.py": (["-n", "1", "--tests", "tests/test_replay_mul.py"], 1800, False, ("verilator",)),
    # 13 s: three jobs on one --jobs 4 soft switch (model engine), alone and shared, and the host
    # fallback: 1 repeat of 2 s per phase
    "bench_multijob.py": (["--quick"], 300, False, ()),
    # 4 s
    "bench_torch.py": (["--ranks", "2", "--sizes", "16", "--iters", "5", "--warmup", "1",
                        "--ddp-steps", "0"], 600, False, ()),
    # 11 s (root)
    "bench_rack.py": (["--algos", "ppo", "--hosts", "2", "--iterations", "1", "--delays", "0"],
                      1800, True, ("ip",)),
    # 5 s (root): 2 hosts + the PS host at 1 Gbit/s, 64 KB, 2 repeats; its ddp mode:
    # tests/test_rack.py::test_ddp_steps_on_the_rack
    "rack_allreduce.py": (["--racks", "1gbit:2", "--sizes-kb", "64", "--repeats", "2",
                           "--warmup", "1"], 600, True, ("ip", "tc")),
    # 6 s (root): two 2-host racks (kernel UDP, DPDK), one interleaved round of 10 round trips,
    # and the one-host torch part at 2 ranks, 10k elements, one block (100 s more with the third
    # rack and the one-host memif pair)
    "bench_bypass.py": (["--quick", "--rounds", "1", "--iters", "10", "--no-split", "--no-memif",
                         "--onehost-ranks", "2", "--onehost-sizes", "10000", "--onehost-blocks", "1"],
                        600, True, ("ip",)),
}


def test_every_script_is_covered() -> None:
    scripts = {p.name for p in SCRIPTS.iterdir() if p.is_file() and p.suffix in (".py", ".sh")}
    missing = sorted(scripts - COVERED.keys() - SMOKE.keys())
    assert not missing, f"scripts without a test or a smoke run here: {missing}"
    stale = sorted((COVERED.keys() | SMOKE.keys()) - scripts)
    assert not stale, f"entries for scripts that are gone: {stale}"
    for name, where in COVERED.items():
        test_file = REPO / where.split("::")[0].split(" ")[0]
        assert test_file.exists(), (name, where)
        assert name in test_file.read_text() or name.removesuffix(".py") in test_file.read_text(), (name, where)


@pytest.mark.parametrize("name", sorted(SMOKE))
def test_smoke(name: str, tmp_path: Path) -> None:
    """The script in its smallest configuration exits 0 and ends with a ``key=value`` line."""
    args, timeout, root, tools = SMOKE[name]
    if root and os.geteuid() != 0:  # a machine-dependent skip (tests/test_ci_policy.py); CI is root
        pytest.skip(f"{name} needs root")
    for tool in tools:
        require_tool(tool, f"the smoke run of scripts/{name}")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args]
    r = subprocess.run([sys.executable, str(SCRIPTS / name), *argv], capture_output=True, text=True,
                       cwd=REPO, timeout=timeout)
    assert r.returncode == 0, (r.stdout[-3000:] + r.stderr[-3000:])
    last = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    assert "=" in last, f"no key=value line at the end of {name}'s output: {last!r}"


def test_bench_replay_synthesizes_through_synth_yosys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """bench_replay.py's Yosys step is synth_yosys.synth (one way of reading the RTL), with the
    bench's size as parameters; its figures come from that result."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_replay", SCRIPTS / "bench_replay.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    calls = []

    def fake_synth(top: str, params: dict[str, str], timeout: float, log_dir: Path | None,
                   config: str = "", abc9: bool = True) -> object:
        calls.append((top, params))
        counts = {k: i + 1 for i, k in enumerate(bench.synth_yosys.CLASSES)}
        return bench.synth_yosys.Result(top, True, 1.0, counts, {"RAMB36E1": 3, "RAMB18E1": 2}, 7,
                                        timing=bench.synth_yosys.Timing(2.5, "a", "b", 4))

    monkeypatch.setattr(bench.synth_yosys, "synth", fake_synth)
    monkeypatch.setattr(bench.shutil, "which", lambda _name: "/usr/bin/yosys")
    res = bench.synthesize(64, 128, 256, tmp_path)
    assert calls == [("replay_engine", {"CAPACITY": "64", "RECORD_BYTES": "128", "DATA_WIDTH": "256"})]
    assert res["ramb36"] == 4 and res["logic_levels"] == 7 and res["path_ns"] == 2.5
