"""``netrl train`` writes TensorBoard event files beside its CSV files (rl.run.tblog).

The expected values come from the same run's ``iterations.csv`` and
``episodes.csv`` (what the launcher also wrote), read back through
tensorboard's ``EventAccumulator``.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from rl import cli


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_train_writes_the_scalars_and_switch_counters(tmp_path: Path) -> None:
    rc = cli.main(["train", "--algo", "ppo", "--sync", "inswitch", "--launcher", "thread",
                   "--workers", "2", "--num-steps", "32", "--iterations", "3",
                   "--target", "nan", "--runs-dir", str(tmp_path), "--name", "tb",
                   "--no-progress"])
    assert rc == 0
    run = tmp_path / "tb"
    events = list(run.glob("events.out.tfevents.*"))
    assert len(events) == 1
    acc = EventAccumulator(str(run))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    for tag in ("charts/episodic_return", "charts/episodic_length", "charts/SPS",
                "losses/pg_loss", "losses/v_loss", "time/compute_s", "time/comm_s",
                "time/iteration_s", "time/compute_cpu_s", "switch/CNT_RX_GRADIENT", "switch/CNT_TX_RESULT",
                "switch/CNT_DROP_STALE"):
        assert tag in tags, tag

    # rank 0's compute/communication split, one point per iteration, as in the CSV
    rows = [r for r in read_csv(run / "iterations.csv") if r["rank"] == "0"]
    compute = acc.Scalars("time/compute_s")
    comm = acc.Scalars("time/comm_s")
    assert [e.step for e in compute] == [int(r["iteration"]) for r in rows]
    # the CSV holds microseconds (6 decimals), the event file float32
    assert [e.value for e in compute] == pytest.approx([float(r["compute_s"]) for r in rows],
                                                       abs=2e-6)
    assert [e.value for e in comm] == pytest.approx([float(r["comm_s"]) for r in rows],
                                                    abs=2e-6)
    pg = [json.loads(r["metrics"])["pg_loss"] for r in rows]
    assert [e.value for e in acc.Scalars("losses/pg_loss")] == pytest.approx(pg, rel=1e-5)

    # every finished episode, at the global env step
    episodes = read_csv(run / "episodes.csv")
    assert [e.value for e in acc.Scalars("charts/episodic_return")] == pytest.approx(
        [float(r["return"]) for r in episodes], abs=2e-3)  # 3 decimals in the CSV

    # the switch's counters, read once per iteration: by iteration i both workers had
    # sent their gradients of rank 0's rounds so far (sync mode), one datagram per round
    rx = acc.Scalars("switch/CNT_RX_GRADIENT")
    assert [e.step for e in rx] == [int(r["iteration"]) for r in rows]
    rounds = [int(json.loads(r["metrics"])["rounds"]) for r in rows]
    for e, n in zip(rx, rounds, strict=True):
        assert e.value >= 2 * n
    assert [e.value for e in rx] == sorted(e.value for e in rx)


def test_no_tensorboard_writes_no_event_file(tmp_path: Path) -> None:
    rc = cli.main(["train", "--algo", "a2c", "--sync", "reference", "--workers", "2",
                   "--num-steps", "8", "--iterations", "2", "--target", "nan",
                   "--runs-dir", str(tmp_path), "--name", "off", "--no-progress",
                   "--no-tensorboard"])
    assert rc == 0
    assert (tmp_path / "off" / "iterations.csv").exists()
    assert not list((tmp_path / "off").glob("events.out.tfevents.*"))
