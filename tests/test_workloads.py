"""The workloads (``--workload demo|paper``, :mod:`rl.workloads`) and ``--iterations``.

Fast: every paper network's gradient size against what ``docs/rl.md`` states
(parameters counted from the model built as the worker builds it), what the
command line asks a :class:`~rl.workloads.Workload` (environment, config, replay
kind, record size and capacity; a new workload is one entry of ``WORKLOADS``), and
``--iterations`` stopping a CartPole run. Slow: each workload runs a few
iterations through the soft switch (in-switch sync; PPO also async).
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest

from rl import cli
from rl.parts.nets import param_count
from rl.replay import DEFAULT_RECORD_BYTES
from rl.run import RunSummary
from rl.workloads import (
    PAPER,
    REPLAY_FOR_SYNC,
    WORKLOADS,
    Task,
    Workload,
    env_spaces,
    paper_networks,
    replay_record_bytes,
)

DOCS = Path(__file__).resolve().parents[1] / "docs" / "rl.md"


def documented_sizes() -> dict[str, tuple[int, int]]:
    """``algo -> (parameters, gradient bytes)`` from the paper-workload table of docs/rl.md
    (rows ``| dqn | ALE/Pong-v5 | ... | 1,687,206 | 6,748,824 | ...``)."""
    sizes = {}
    for line in DOCS.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 5 and cells[0] in PAPER and cells[1] == PAPER[cells[0]].env_id:
            nums = [int(c.replace(",", "")) for c in cells if re.fullmatch(r"[\d,]+", c)]
            sizes[cells[0]] = (nums[0], nums[1])
    return sizes


def test_paper_networks_have_the_documented_gradient_sizes() -> None:
    docs = documented_sizes()
    assert sorted(docs) == sorted(PAPER), "docs/rl.md lists every paper workload"
    for algo, wl in PAPER.items():
        params = param_count(*paper_networks(algo))
        assert docs[algo] == (params, 4 * params), algo
        # the order of the paper's gradient (iSwitch: 6 MB, 3 MB, 40 KB, 158 KB)
        assert abs(4 * params - wl.paper_grad_bytes) <= 0.15 * wl.paper_grad_bytes, algo


def test_paper_networks_are_the_same_from_the_same_seed() -> None:
    for algo in ("ppo", "ddpg"):
        a, b = paper_networks(algo, seed=3), paper_networks(algo, seed=3)
        for m, n in zip(a, b, strict=True):
            for p, q in zip(m.parameters(), n.parameters(), strict=True):
                assert np.array_equal(p.detach().numpy(), q.detach().numpy())


def test_the_command_line_asks_the_workload() -> None:
    demo, paper = WORKLOADS["demo"], WORKLOADS["paper"]
    assert cli.ALGOS == {a: t.env_id for a, t in demo.tasks.items()}
    assert set(demo.tasks) == set(paper.tasks) == set(cli.ALGOS)
    for algo in cli.ALGOS:
        for wl in (demo, paper):
            args = cli.build_parser(algo).parse_args(
                ["train", "--algo", algo, "--workload", wl.name])
            assert cli.env_of(args) == wl.env_id(algo)
            cfg = cli.make_config(args)
            assert cfg.env_id == wl.env_id(algo)
            assert all(getattr(cfg, k) == v for k, v in wl.task(algo).config.items())
    # --replay auto: the replay of the sync strategy (every workload's records fit the switch:
    # Atari's as frame records, issue 26)
    for sync, kind in REPLAY_FOR_SYNC.items():
        assert demo.replay_kind(sync) == kind and paper.replay_kind(sync) == kind
        assert paper.replay_kind(sync, "server") == "server"
    assert demo.replay_spec("ppo", "inswitch") is None  # no replay memory
    innet = demo.replay_spec("dqn", "inswitch", url="soft://127.0.0.1:1")
    assert innet is not None and innet.kind == "innet" and innet.url == "soft://127.0.0.1:1"
    assert innet.record_bytes == DEFAULT_RECORD_BYTES and innet.frames == 0  # CartPole fits
    frames = paper.replay_spec("dqn", "inswitch")
    assert frames is not None and frames.kind == "innet" and frames.frames == 4
    assert frames.record_bytes == 7104 and frames.capacity == PAPER["dqn"].innet_capacity
    ddpg = paper.replay_spec("ddpg", "inswitch")
    assert ddpg is not None and ddpg.frames == 0 and ddpg.record_bytes == 192
    local = paper.replay_spec("dqn", "inswitch", "local")  # frames too: the comparison
    assert local is not None and local.kind == "local" and local.url is None
    assert (local.frames, local.record_bytes) == (4, 7104)
    assert local.capacity == PAPER["dqn"].innet_capacity
    server = paper.replay_spec("dqn", "ps")  # no record chains: whole transitions
    assert server is not None and server.kind == "server" and server.frames == 0
    assert server.capacity == PAPER["dqn"].replay_capacity
    obs, act = env_spaces(PAPER["dqn"].env_id)
    assert server.record_bytes == replay_record_bytes(tuple(obs.shape), (), True) \
        > DEFAULT_RECORD_BYTES


def test_a_switch_too_small_is_refused_before_anything_starts(tmp_path: Path) -> None:
    """Pong's frame records (7104 bytes) on a switch of 128-byte records: refused before a
    run folder exists, naming the record size, the switch's limit and the option."""
    from hostdrv import SoftSwitch

    with SoftSwitch(record_bytes=128) as sw:
        sw.start()
        for extra in (["--replay", "innet"], ["--topology", "apex"]):
            with pytest.raises(SystemExit) as e:
                cli.main(["train", "--workload", "paper", "--algo", "dqn", *extra,
                          "--switch", sw.url, "--no-progress", "--runs-dir", str(tmp_path)])
            msg = str(e.value)
            for part in ("7104", "RPL_RECORD_BYTES = 128", "--record-bytes 7104"):
                assert part in msg, (part, msg)
            assert not any(tmp_path.iterdir())


def test_a_new_workload_is_one_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    tiny = Workload("tiny", "PPO with 8 hidden units", {
        "ppo": Task("ppo", "CartPole-v1", {"hidden": 8, "num_envs": 3})})
    monkeypatch.setitem(WORKLOADS, "tiny", tiny)
    args = cli.build_parser("ppo").parse_args(["train", "--algo", "ppo", "--workload", "tiny"])
    cfg = cli.make_config(args)
    assert (cfg.env_id, cfg.hidden, cfg.num_envs) == ("CartPole-v1", 8, 3)
    args.algo = "dqn"
    with pytest.raises(ValueError, match="no task for algo='dqn'"):
        cli.make_config(args)


def iteration_rows(run: Path) -> list[dict[str, str]]:
    with open(run / "iterations.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_iterations_stops_a_cartpole_run(tmp_path: Path) -> None:
    for n in (2,):
        rc = cli.main(["train", "--algo", "ppo", "--sync", "reference", "--workers", "2",
                       "--num-steps", "32", "--iterations", str(n), "--target", "nan",
                       "--runs-dir", str(tmp_path), "--name", f"it{n}", "--no-progress",
                       "--no-tensorboard"])
        assert rc == 0
        run = tmp_path / f"it{n}"
        rows = iteration_rows(run)
        assert sorted((int(r["rank"]), int(r["iteration"])) for r in rows) == \
            [(rank, i) for rank in range(2) for i in range(1, n + 1)]
        for r in rows:  # a thread's CPU time outside communication fits in its wall time
            cpu = json.loads(r["metrics"])["compute_cpu_s"]
            assert 0 < cpu <= float(r["compute_s"]) + 2e-3
        summary = json.loads((run / "summary.json").read_text())
        assert summary["iterations"] == n
        # far below the budget (200,000 env steps): --iterations stopped it
        assert summary["env_steps"] == 2 * n * 2 * 32
        assert not list(run.glob("events.out.tfevents.*")), "--no-tensorboard writes none"


def run_paper(tmp_path: Path, algo: str, mode: str, iterations: int,
              workers: int = 2) -> RunSummary:
    args = cli.build_parser(algo).parse_args(
        ["train", "--workload", "paper", "--algo", algo, "--workers", str(workers),
         "--sync", "inswitch", "--mode", mode, "--iterations", str(iterations),
         "--no-progress", "--no-tensorboard"])
    args.store, args.launcher = None, "process"
    return cli.train_once(args, "inswitch", tmp_path / f"{algo}-{mode}")


@pytest.mark.slow
@pytest.mark.parametrize("algo", sorted(PAPER))
def test_paper_workload_runs_through_the_switch(tmp_path: Path, algo: str) -> None:
    s = run_paper(tmp_path, algo, "sync", 3)
    assert s.env_id == PAPER[algo].env_id
    assert [r.iterations for r in s.results] == [3, 3]
    rows = iteration_rows(tmp_path / f"{algo}-sync")
    assert len(rows) == 6
    assert all(float(r["compute_s"]) > 0 and float(r["comm_s"]) > 0 for r in rows)
    params = param_count(*paper_networks(algo))
    assert sum(p.size for p in s.results[0].params.values()) == params
    # sync rounds: every worker applied the same sums
    for name, value in s.results[0].params.items():
        assert np.array_equal(value, s.results[1].params[name]), name


@pytest.mark.slow
def test_paper_ppo_runs_async_through_the_switch(tmp_path: Path) -> None:
    s = run_paper(tmp_path, "ppo", "async", 2, workers=3)
    assert [r.iterations for r in s.results] == [2, 2, 2]
    assert all(r.rounds > 0 for r in s.results)
    # async rounds complete at H = N - 1 = 2 contributions
    assert all(2 <= c <= 3 for r in s.results for c in r.contributors)
    assert all(0 <= st <= 1 for r in s.results for st in r.staleness)  # --staleness 1


@pytest.mark.slow
def test_paper_dqn_runs_apex_through_in_network_replay(tmp_path: Path) -> None:
    """``--topology apex`` on Pong: actors push frame records into the switch, the learner
    learns from stacked samples (issue 26)."""
    rc = cli.main(["train", "--topology", "apex", "--workload", "paper", "--algo", "dqn",
                   "--actors", "2", "--learners", "1", "--total-steps", "2500",
                   "--no-progress", "--no-tensorboard", "--runs-dir", str(tmp_path),
                   "--name", "apex"])
    assert rc == 0
    cfg = json.loads((tmp_path / "apex" / "config.json").read_text())
    assert cfg["dist"]["replay"] == "innet"
    assert len(iteration_rows(tmp_path / "apex")) > 0


def test_solved_is_the_environments_threshold(tmp_path: Path) -> None:
    """CartPole-v1 is solved at its spec's reward_threshold (475, not CartPole-v0's 195) unless
    --target says otherwise; an env without a threshold (Pendulum) has the documented one."""
    import gymnasium as gym

    from rl.targets import TARGET_FALLBACK, default_target

    assert default_target("CartPole-v1") == gym.spec("CartPole-v1").reward_threshold == 475.0
    assert default_target("Pendulum-v1") == TARGET_FALLBACK["Pendulum-v1"]
    assert all(default_target(env) == t for env, t in cli.TARGETS.items())
    assert cli.main(["train", "--algo", "ppo", "--sync", "reference", "--workers", "1",
                     "--num-steps", "32", "--iterations", "1", "--runs-dir", str(tmp_path),
                     "--name", "t", "--no-progress", "--no-tensorboard"]) == 0
    assert json.loads((tmp_path / "t" / "config.json").read_text())["target"] == 475.0
