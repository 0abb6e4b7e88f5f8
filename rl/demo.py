"""``netrl demo`` (``python -m rl.demo``, ``make demo``): agents trained through the soft switch.

Starts a soft switch, then trains on CartPole with 4 worker processes until
the mean return over the last 20 episodes reaches 195, with a progress bar:
PPO whose gradients are summed in the switch (``inswitch``, sync mode), then
DQN whose gradients are summed in the switch and whose transitions live in
the switch's replay memory (actors push, learners sample prioritized batches
and update priorities). Prints where the CSV files and the plots are and the
switch's counters. Well under a minute on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; return 0 when CartPole was solved."""
    parser = argparse.ArgumentParser(prog="netrl demo", description=__doc__.split("\n")[2])
    parser.add_argument("--workers", type=int, default=4, help="worker processes")
    parser.add_argument("--runs-dir", default="runs", help="where the run folder goes")
    parser.add_argument("--seed", type=int, default=1, help="seed")
    parser.add_argument("--skip-dqn", action="store_true",
                        help="PPO only (skip DQN with the in-network replay)")
    args = parser.parse_args(argv)

    import hostdrv
    from rl import cli
    from rl.replay import DEFAULT_CAPACITY

    switch = hostdrv.SoftSwitch(max_elems=hostdrv.wire.protocol.MAX_JUMBO_ELEMS,
                                capacity=DEFAULT_CAPACITY).start()
    print(f"soft switch listening at {switch.url}")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    runs: list[tuple[str, Path, object]] = []
    try:
        # 1. PPO: gradients summed in the switch
        # 2. DQN: gradients summed in the switch, transitions in the switch's
        #    replay memory, prioritized batches sampled by the switch
        stages = [("ppo", "PPO, in-switch gradient aggregation", []),
                  ("dqn", "DQN, in-switch aggregation + in-network prioritized replay",
                   ["--replay", "innet"])]
        if args.skip_dqn:
            stages = stages[:1]
        for algo, what, extra in stages:
            print(f"\n== {what} ==", flush=True)
            name = f"demo-{algo}-{stamp}"
            argv_train = ["train", "--algo", algo, "--env", "CartPole-v1",
                          "--workers", str(args.workers), "--sync", "inswitch", "--mode", "sync",
                          "--switch", switch.url, "--seed", str(args.seed),
                          "--runs-dir", args.runs_dir, "--name", name, *extra]
            parsed = cli.build_parser(algo).parse_args(argv_train)
            summary = cli.train_once(parsed, "inswitch", Path(args.runs_dir) / name)
            runs.append((what, Path(args.runs_dir) / name, summary))
        counters = hostdrv.SwitchControl(switch.url).counters()
    finally:
        switch.stop()
    print()
    for what, run_dir, summary in runs:
        print(f"{what}: {cli.describe(summary)}")
        print(f"  CSV:   {run_dir / 'episodes.csv'}  {run_dir / 'iterations.csv'}")
        print(f"  plots: {run_dir / 'return.png'}  {run_dir / 'time_split.png'}")
    seen = {k: v for k, v in counters.items() if v}
    if seen:
        print("switch counters: " + ", ".join(f"{k}={v}" for k, v in seen.items()))
    return 0 if all(getattr(r[2], "solved", False) for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
