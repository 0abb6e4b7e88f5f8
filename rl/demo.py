"""``python -m rl.demo`` (``make demo``): PPO on CartPole through the soft switch.

Starts a soft switch, trains PPO with 4 worker processes whose gradients are
summed in the switch (``inswitch``, sync mode) until the mean return over the
last 20 episodes reaches 195, with a progress bar, then prints where the CSV
files and the plots are. About a minute on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; return 0 when CartPole was solved."""
    parser = argparse.ArgumentParser(prog="python -m rl.demo", description=__doc__.split("\n")[2])
    parser.add_argument("--workers", type=int, default=4, help="worker processes")
    parser.add_argument("--runs-dir", default="runs", help="where the run folder goes")
    parser.add_argument("--seed", type=int, default=1, help="seed")
    args = parser.parse_args(argv)

    import hostdrv
    from rl import cli

    switch = hostdrv.SoftSwitch(max_elems=hostdrv.protocol.MAX_JUMBO_ELEMS).start()
    print(f"soft switch listening at {switch.url}")
    try:
        name = f"demo-ppo-{time.strftime('%Y%m%d-%H%M%S')}"
        argv_train = ["train", "--algo", "ppo", "--env", "CartPole-v1",
                      "--workers", str(args.workers), "--sync", "inswitch", "--mode", "sync",
                      "--switch", switch.url, "--seed", str(args.seed),
                      "--runs-dir", args.runs_dir, "--name", name]
        parsed = cli.build_parser("ppo").parse_args(argv_train)
        summary = cli.train_once(parsed, "inswitch", Path(args.runs_dir) / name)
        counters = hostdrv.SwitchControl(switch.url).counters()
    finally:
        switch.stop()
    run_dir = Path(args.runs_dir) / name
    print(cli.describe(summary))
    rx = {k: v for k, v in counters.items() if v and ("GRAD" in k or "RESULT" in k
                                                      or "DROP" in k)}
    if rx:
        print("switch counters: " + ", ".join(f"{k}={v}" for k, v in rx.items()))
    print(f"CSV:   {run_dir / 'episodes.csv'}  {run_dir / 'iterations.csv'}")
    print(f"plots: {run_dir / 'return.png'}  {run_dir / 'time_split.png'}")
    return 0 if summary.solved else 1


if __name__ == "__main__":
    sys.exit(main())
