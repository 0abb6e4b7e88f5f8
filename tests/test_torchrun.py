"""The RL trainers under torchrun (``rl.run.torchrun``): one worker per rank.

Each launch is ``python -m torch.distributed.run --standalone --nproc-per-node=4
-m rl ...`` for a few iterations. Rank 0 must write the local launcher's files
(plus ``ranks.json``), every rank must end with the same parameters, and with
int32 aggregation (exact sums, whatever the order) the parameters must be bit
for bit those of the local launcher's run with the same seed.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from rl.run.torchrun import (  # noqa: E402
    RankInfo,
    StoreBoard,
    _with_key,
    advertised_address,
    interface_of,
    params_digest,
    under_torchrun,
)

WORLD = 4
PPO_ARGS = ["--algo", "ppo", "--seed", "3", "--total-steps", str(3 * 2 * 16 * WORLD),
            "--num-steps", "16", "--hidden", "16", "--update-epochs", "2", "--target", "nan",
            "--no-progress"]
"""PPO, 3 iterations of 2 minibatches x 2 epochs per rank: 12 aggregation rounds."""
DQN_ARGS = ["--algo", "dqn", "--seed", "2", "--total-steps", str(200 * WORLD),
            "--learning-starts", "120", "--train-frequency", "8", "--batch-size", "16",
            "--hidden", "16", "--log-every", "2", "--target", "nan", "--no-progress"]
"""DQN, 11 updates per rank (steps 120, 128, ..., 200), 5 logged iterations."""


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT",
              "TORCHELASTIC_RUN_ID", "NETRL_SWITCH", "NETRL_ADVERTISE"):
        env.pop(k, None)
    return env


def _torchrun(args: list[str], cwd: Path, nproc: int = WORLD,
              timeout: float = 300) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1",
           f"--nproc-per-node={nproc}", "-m", "rl", *args]
    return subprocess.run(cmd, cwd=cwd, env=_env(), capture_output=True, text=True,
                          timeout=timeout)


def _check_run(run: Path, world: int = WORLD, identical: bool = True) -> list[dict[str, Any]]:
    """The local launcher's files are there; every rank reported (with the same final
    weights unless ``identical`` is false); return ranks.json."""
    for name in ("episodes.csv", "iterations.csv", "summary.json", "config.json",
                 "return.png", "time_split.png", "ranks.json"):
        assert (run / name).is_file(), f"{run / name} missing"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["workers"] == world
    with open(run / "iterations.csv") as f:
        rows = list(csv.DictReader(f))
    assert {int(r["rank"]) for r in rows} == set(range(world))  # every rank's rows
    ranks = json.loads((run / "ranks.json").read_text())
    assert [r["rank"] for r in ranks] == list(range(world))
    if identical:
        assert len({r["params_digest"] for r in ranks}) == 1, ranks  # identical weights
    assert sum(r["env_steps"] for r in ranks) == summary["env_steps"]
    return ranks


def _reference_digest(args: list[str], dtype: str) -> str:
    """Final parameters of the local launcher (reference strategy, worker threads)."""
    from rl.cli import algo_module, build_parser, make_config
    from rl.run import DistConfig, run_workers

    ns = build_parser(args[1]).parse_args(["train", *args])
    cfg = make_config(ns)
    mod = algo_module(ns.algo)
    s = run_workers(mod.train_worker, cfg, DistConfig(workers=WORLD, sync="reference",
                                                      dtype=dtype, launcher="thread"),
                    algo=ns.algo, env_id=cfg.env_id, total_steps=cfg.total_timesteps,
                    target_return=None, progress=False, timeout=120)
    digests = {params_digest(r.params) for r in s.results}
    assert len(digests) == 1
    return digests.pop()


def test_ppo_inswitch_ps_allreduce_match_local_launcher(tmp_path: Path) -> None:
    """``netrl compare`` under torchrun: PPO through the switch (the netrl backend), the
    parameter server and gloo, int32; every rank of every strategy ends bit-identical
    to the local launcher's run."""
    proc = _torchrun(["compare", *PPO_ARGS, "--dtype", "int32", "--runs-dir", str(tmp_path),
                      "--name", "cmp"], tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    expected = _reference_digest(PPO_ARGS, "int32")
    for sync in ("inswitch", "ps", "allreduce"):
        ranks = _check_run(tmp_path / "cmp" / sync)
        assert ranks[0]["params_digest"] == expected, sync
        summary = json.loads((tmp_path / "cmp" / sync / "summary.json").read_text())
        assert summary["sync"] == sync and summary["iterations"] == 3
    assert (tmp_path / "cmp" / "compare.png").is_file()
    config = json.loads((tmp_path / "cmp" / "inswitch" / "config.json").read_text())
    assert config["dist"]["launcher"] == "torchrun" and config["dist"]["workers"] == WORLD
    assert config["dist"]["inswitch_api"] == "netrl"  # torch.distributed's netrl backend


def test_dqn_innet_replay_through_netrl_launcher(tmp_path: Path) -> None:
    """``netrl train --launcher torchrun`` (which starts torchrun itself): DQN with
    in-switch aggregation (netrl backend, member ids 0..N-1) and the replay memory in
    the same switch (member ids N..2N-1)."""
    cmd = [sys.executable, "-m", "rl", "train", *DQN_ARGS, "--launcher", "torchrun",
           "--workers", str(WORLD), "--sync", "inswitch", "--replay", "innet",
           "--runs-dir", str(tmp_path), "--name", "dqn"]
    proc = subprocess.run(cmd, cwd=tmp_path, env=_env(), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    ranks = _check_run(tmp_path / "dqn")
    summary = json.loads((tmp_path / "dqn" / "summary.json").read_text())
    assert summary["replay"] == "innet" and summary["iterations"] == 5
    assert all(r["rounds"] == 11 for r in ranks)
    assert "torch.distributed.run --standalone" in proc.stdout
    config = json.loads((tmp_path / "dqn" / "config.json").read_text())
    assert config["dist"]["inswitch_api"] == "netrl"


def test_async_inswitch_through_aggregators(tmp_path: Path) -> None:
    """Async rounds cannot go through a torch all-reduce: they take the Aggregator path,
    and the stop board lives in the job's store.

    Threshold 1 of 2: one rank can run more than the staleness bound ahead of the other;
    the lagging rank's too-stale contributions are dropped and answered with the newer
    result (docs/protocol.md section 4), so it catches up instead of timing out."""
    args = ["--algo", "a2c", "--seed", "4", "--total-steps", "640", "--num-steps", "8",
            "--hidden", "16", "--target", "nan", "--no-progress"]
    proc = _torchrun(["train", *args, "--sync", "inswitch", "--mode", "async",
                      "--threshold", "1", "--staleness", "1", "--runs-dir", str(tmp_path),
                      "--name", "a2c"], tmp_path, nproc=2)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    # async rounds: the ranks' weights need not agree
    ranks = _check_run(tmp_path / "a2c", world=2, identical=False)
    assert all(r["rounds"] > 0 for r in ranks)
    config = json.loads((tmp_path / "a2c" / "config.json").read_text())
    assert config["dist"]["inswitch_api"] == "aggregator"
    summary = json.loads((tmp_path / "a2c" / "summary.json").read_text())
    assert summary["mode"] == "async"


def test_rank0_setup_failure_fails_every_rank(tmp_path: Path) -> None:
    """A packet size the switch refuses: rank 0 cannot configure the job and says why;
    the job fails (the other ranks get rank 0's reason from the store, not a hang)."""
    proc = _torchrun(["train", *PPO_ARGS, "--packet-elems", "100000", "--runs-dir", str(tmp_path),
                      "--name", "bad"], tmp_path, nproc=2)
    assert proc.returncode != 0
    assert "starting the shared pieces failed" in proc.stderr, proc.stderr[-4000:]
    assert "bad packet_elems=100000" in proc.stderr
    assert not (tmp_path / "bad" / "summary.json").exists()


# -- pieces, without torchrun ---------------------------------------------------------


def test_rank_info_from_env() -> None:
    env = {"RANK": "2", "WORLD_SIZE": "4", "LOCAL_RANK": "0", "MASTER_ADDR": "10.9.0.1",
           "MASTER_PORT": "29400"}
    info = RankInfo.from_env(env)
    assert (info.rank, info.world, info.local_rank, info.master_addr, info.master_port) == \
        (2, 4, 0, "10.9.0.1", 29400)
    assert not under_torchrun(env)
    assert under_torchrun({**env, "TORCHELASTIC_RUN_ID": "x"})
    with pytest.raises(RuntimeError, match="MASTER_PORT"):
        RankInfo.from_env({k: v for k, v in env.items() if k != "MASTER_PORT"})


def test_advertised_address() -> None:
    assert advertised_address("127.0.0.1", 29400, {}) == "127.0.0.1"
    assert advertised_address("localhost", 29400, {}).startswith("127.")
    assert advertised_address("127.0.0.1", 1, {"NETRL_ADVERTISE": "10.9.0.3"}) == "10.9.0.3"
    assert interface_of("127.0.0.1") == "lo"
    assert interface_of("203.0.113.254") is None  # TEST-NET-3: on no interface


def test_key_goes_only_to_own_switches() -> None:
    own = {"soft://10.9.0.1:4000"}
    assert _with_key("soft://10.9.0.1:4000", own, "/k") == "soft://10.9.0.1:4000?key=/k"
    assert _with_key("soft://10.9.0.1:4000?key=/r0", own, "/k") == \
        "soft://10.9.0.1:4000?key=/k"
    assert _with_key("soft://10.9.0.2:4000", own, "/k") == "soft://10.9.0.2:4000"
    assert _with_key(None, own, "/k") is None


def test_store_board_keeps_the_smallest_round() -> None:
    import torch.distributed as tdist

    store = tdist.HashStore()
    a, b = StoreBoard(store, "board"), StoreBoard(store, "board")
    assert a.get() is None
    a.propose(7)
    assert b.get() == 7
    b.propose(9)
    assert a.get() == 7
    b.propose(0)
    assert a.get() == 0

    racers = StoreBoard(store, "race")
    threads = [threading.Thread(target=racers.propose, args=(r,)) for r in (5, 3, 8, 4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert racers.get() == 3
