"""``netrl train`` and ``netrl compare``: train DQN, A2C, PPO and DDPG through the switch,
compare sync strategies.

The ``netrl`` command (:mod:`netrl`) runs these two through :func:`main`, which
is also ``python -m rl`` (what torchrun runs on every rank); ``python -m rl regs``
is kept as an alias of ``netrl regs``. What ``--workload`` runs comes from
:mod:`rl.workloads`.

Examples
--------
::

    netrl train --algo ppo --env CartPole-v1 --workers 4 --sync inswitch --mode sync
    netrl train --algo dqn --sync inswitch --replay innet --switch soft://127.0.0.1:20050
    netrl train --algo ppo --mode async --threshold 3 --staleness 1
    netrl train --algo ppo --help          # PPO's hyper-parameters as options
    netrl compare --algo ppo --workers 4   # inswitch vs ps vs allreduce, same seed
    # the papers' workloads (DQN/A2C on Pong, PPO/DDPG on HalfCheetah), bounded:
    netrl train --workload paper --algo dqn --iterations 20 --sync inswitch
    # one worker per rank on N hosts (the same command on every host):
    torchrun --nnodes=N --nproc-per-node=1 --rdzv-backend=c10d \
             --rdzv-endpoint=HOST:29400 -m rl train --algo ppo --sync inswitch
    netrl train --launcher torchrun --workers 4   # the same on this machine

Without ``--switch`` a soft switch is started in the launcher (under torchrun:
by rank 0). Everything a run writes goes to ``runs/<name>/``:
``episodes.csv``, ``iterations.csv``, ``summary.json``, ``config.json``,
``return.png``, ``time_split.png`` and TensorBoard event files
(``events.out.tfevents.*``; ``--no-tensorboard`` leaves them out) (under
torchrun on rank 0's host, plus ``ranks.json``).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from rl.targets import default_target
from rl.workloads import WORKLOADS, Workload

ALGOS = {algo: task.env_id for algo, task in WORKLOADS["demo"].tasks.items()}
"""Algorithm name → default environment (the ``demo`` workload's)."""
TARGETS = {"CartPole-v1": 475.0, "Pendulum-v1": -400.0}
"""Mean return over the last 20 episodes that counts as solved, for the demo environments:
:func:`rl.targets.default_target` (the env's ``spec.reward_threshold``; CartPole-v1's is
475), which every run without ``--target`` uses."""
STRATEGIES = ("inswitch", "ps", "allreduce")


def algo_module(name: str) -> ModuleType:
    """``rl.<name>`` (one file per algorithm)."""
    if name not in ALGOS:
        raise SystemExit(f"netrl: unknown algorithm {name!r} (choose from {', '.join(ALGOS)})")
    return importlib.import_module(f"rl.{name}")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def add_config_options(parser: argparse.ArgumentParser, cls: type) -> None:
    """One ``--option`` per field of the algorithm's ``Config`` dataclass."""
    group = parser.add_argument_group(f"{cls.__module__} hyper-parameters")
    for f in dataclasses.fields(cls):
        if f.name in ("env_id", "seed", "total_timesteps"):
            continue  # common options
        default = f.default
        if isinstance(default, bool):
            group.add_argument(_flag(f.name), type=lambda s: s.lower() in ("1", "true", "yes"),
                               default=None, metavar="BOOL", help=f"(default {default})")
        else:
            group.add_argument(_flag(f.name), type=type(default), default=None,
                               help=f"(default {default})")


def add_common_options(parser: argparse.ArgumentParser) -> None:
    """Options shared by ``train`` and ``compare``."""
    parser.add_argument("--algo", choices=sorted(ALGOS), default="ppo", help="algorithm")
    parser.add_argument("--env", default=None,
                        help="gymnasium id (default CartPole-v1, Pendulum-v1 for ddpg; "
                             "with --workload paper ALE/Pong-v5 or HalfCheetah-v5)")
    parser.add_argument("--workload", choices=tuple(WORKLOADS), default="demo",
                        help="; ".join(f"{w.name}: {w.summary}" for w in WORKLOADS.values()))
    parser.add_argument("--iterations", type=int, default=None,
                        help="stop every worker after N logged iterations (rows of "
                             "iterations.csv; one gradient update each for dqn/ddpg with "
                             "--workload paper)")
    parser.add_argument("--no-tensorboard", action="store_true",
                        help="no TensorBoard event files in the run folder")
    parser.add_argument("--workers", type=int, default=4, help="N worker processes")
    parser.add_argument("--mode", choices=("sync", "async"), default="sync",
                        help="sync: all N gradients per round; async: threshold H, staleness")
    parser.add_argument("--dtype", choices=("fp32", "int32"), default="fp32",
                        help="aggregation dtype (int32: host quantisation, --scale)")
    parser.add_argument("--threshold", type=int, default=0,
                        help="async: contributions that complete a round (H; default N-1)")
    parser.add_argument("--staleness", type=int, default=1,
                        help="async: staleness bound (rounds)")
    parser.add_argument("--pipeline", type=int, default=None,
                        help="async: rounds in flight per worker (default: the staleness bound)")
    parser.add_argument("--scale", type=float, default=65536.0, help="int32 quantisation scale")
    parser.add_argument("--switch", default=None,
                        help="switch URL (soft://host:port, sim://..., udp://...); "
                             "default: start a soft switch")
    parser.add_argument("--replay", choices=("auto", "local", "innet", "server"),
                        default="auto", help="replay for dqn/ddpg (auto: innet with inswitch, "
                                             "server with ps, local with allreduce)")
    parser.add_argument("--seed", type=int, default=1, help="seed (same for every strategy)")
    parser.add_argument("--total-steps", type=int, default=None,
                        help="env-step budget over all workers (default: the algorithm's)")
    parser.add_argument("--target", type=float, default=None,
                        help="stop at this mean return over the last 20 episodes "
                             "(default: the env's spec.reward_threshold, 475 for CartPole-v1; "
                             "-400 Pendulum; 'nan' trains the budget)")
    parser.add_argument("--runs-dir", default="runs", help="where run folders go")
    parser.add_argument("--name", default=None, help="run folder name")
    parser.add_argument("--launcher", choices=("process", "thread", "torchrun"), default=None,
                        help="worker processes (default), threads, or one worker per "
                             "torchrun rank (the default under torchrun; outside it, "
                             "starts torchrun --standalone with --workers ranks)")
    parser.add_argument("--inswitch-api", choices=("auto", "netrl", "aggregator"),
                        default="auto",
                        help="inswitch through torch.distributed's netrl backend or a "
                             "hostdrv.Aggregator per worker (auto: netrl under torchrun "
                             "in sync mode)")
    parser.add_argument("--packet-elems", "--elems", type=int, default=None,
                        help="switch packet size P, elements per packet (default: the largest "
                             "the switch takes; --elems is the old name)")
    parser.add_argument("--topology", choices=("workers", "apex"), default="workers",
                        help="dqn/ddpg: workers (each acts and learns) or apex (dedicated "
                             "actors that act and push, learners that sample and learn; "
                             "--replay innet (default), server or local, rl/apex/)")
    parser.add_argument("--actors", type=int, default=4, help="apex: actor processes")
    parser.add_argument("--learners", type=int, default=1,
                        help="apex: learner processes (their gradients summed by --sync)")
    parser.add_argument("--samples-per-insert", type=float, default=None,
                        help="apex: the switch's rate limiter target (default "
                             "batch_size / train_frequency)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def build_parser(algo: str | None = None) -> argparse.ArgumentParser:
    """The ``netrl`` parser; with ``algo``, ``train``/``compare`` also take its hyper-parameters."""
    parser = argparse.ArgumentParser(
        prog="netrl", description="Distributed deep RL through in-network aggregation and "
                                  "replay (iSwitch on NetFPGA, or its soft switch).")
    sub = parser.add_subparsers(dest="command", required=True)
    train = sub.add_parser("train", help="train one algorithm with one sync strategy",
                           description="Train with N workers; writes runs/<name>/. "
                                       "Pass --algo X --help for X's hyper-parameters.")
    train.add_argument("--sync", choices=("inswitch", "ps", "allreduce", "reference"),
                       default="inswitch", help="gradient sync strategy")
    add_common_options(train)
    compare = sub.add_parser("compare", help="run the sync strategies on one seed, plot them",
                             description="Run inswitch, ps and allreduce (or --syncs) with the "
                                         "same seed and plot them side by side.")
    compare.add_argument("--syncs", default=",".join(STRATEGIES),
                         help="comma-separated strategies to compare")
    add_common_options(compare)
    from hostdrv.client.regs_cli import add_regs_parser

    add_regs_parser(sub)
    if algo is not None:
        cls = algo_module(algo).Config
        add_config_options(train, cls)
        add_config_options(compare, cls)
    return parser


def _algo_from_argv(argv: Sequence[str]) -> str | None:
    for i, a in enumerate(argv):
        if a == "--algo" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--algo="):
            return a.split("=", 1)[1]
    return None


def workload_of(args: argparse.Namespace) -> Workload:
    """The run's :class:`~rl.workloads.Workload` (``--workload``, ``demo`` when absent)."""
    return WORKLOADS[getattr(args, "workload", "demo")]


def env_of(args: argparse.Namespace) -> str:
    """The run's environment: ``--env``, else the algorithm's in the workload."""
    if args.env:
        return str(args.env)
    return workload_of(args).env_id(args.algo)


def make_config(args: argparse.Namespace) -> Any:
    """The algorithm's ``Config`` with the workload's settings, then the command-line
    overrides applied."""
    mod = algo_module(args.algo)
    cfg = workload_of(args).configure(mod.Config(), args.algo)
    cfg.env_id = env_of(args)
    cfg.seed = args.seed
    if args.total_steps is not None:
        cfg.total_timesteps = args.total_steps
    for f in dataclasses.fields(cfg):
        value = getattr(args, f.name, None)
        if value is not None and f.name not in ("env_id", "seed", "total_timesteps"):
            setattr(cfg, f.name, value)
    return cfg


def train_once(args: argparse.Namespace, sync: str, run_dir: Path) -> Any:
    """One training run with strategy ``sync``; returns its :class:`rl.run.RunSummary`."""
    from rl.run import DistConfig, config_dict, run_workers

    mod = algo_module(args.algo)
    cfg = make_config(args)
    target = args.target if args.target is not None else default_target(cfg.env_id)
    if target is not None and target != target:  # nan: train the whole budget
        target = None
    if args.iterations is not None and args.iterations < 1:
        raise SystemExit(f"netrl: --iterations {args.iterations} must be >= 1")
    dist = DistConfig(workers=args.workers, sync=sync, mode=args.mode, dtype=args.dtype,
                      threshold=args.threshold, staleness=args.staleness,
                      pipeline=args.pipeline, scale=args.scale, switch=args.switch,
                      packet_elems=args.packet_elems, inswitch_api=args.inswitch_api,
                      launcher="thread" if sync == "reference" else launcher_of(args),
                      iterations=args.iterations,
                      tensorboard=not getattr(args, "no_tensorboard", False))
    replay = workload_of(args).replay_spec(args.algo, sync, args.replay, env_id=cfg.env_id,
                                           seed=cfg.seed, url=args.switch)
    if replay is not None:
        dist.replay = replay.kind
        _refuse_unfit_replay(replay, args.switch)
    if getattr(args, "topology", "workers") == "apex":
        return _train_apex(args, cfg, dist, replay, target, run_dir)
    if dist.launcher == "torchrun":
        return _train_rank(args, mod, cfg, dist, replay, target, run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text(json.dumps(
        {"algo": args.algo, "workload": workload_of(args).name,
         "config": config_dict(cfg), "dist": dataclasses.asdict(dist),
         "target": target}, indent=2))
    print(f"netrl: {args.algo} on {cfg.env_id}, {args.workers} workers, sync={sync} "
          f"mode={args.mode} dtype={args.dtype}"
          + (f" replay={replay.kind}" if replay else "") + f" -> {run_dir}", flush=True)
    return run_workers(mod.train_worker, cfg, dist, algo=args.algo, env_id=cfg.env_id,
                       total_steps=cfg.total_timesteps, target_return=target, replay=replay,
                       run_dir=run_dir, progress=not args.no_progress)


def _refuse_unfit_replay(replay: Any, switch: str | None) -> None:
    """Exit before anything starts when an in-network replay's records do not fit: larger
    than any switch record, or than the records of the switch at ``--switch``
    (:func:`rl.replay.innet_refusal` names the sizes and the option that fixes it)."""
    if replay is None or replay.kind != "innet":
        return
    from rl.replay import innet_refusal

    have = None
    url = replay.url or switch
    if url is not None:
        import hostdrv

        try:
            with hostdrv.SwitchControl(url) as ctl:
                have = ctl.read("RPL_RECORD_BYTES")
        except (OSError, hostdrv.NetrlError) as e:
            raise SystemExit(f"netrl: cannot read the switch at {url}: {e}") from None
    why = innet_refusal(replay, have, url)
    if why:
        raise SystemExit(f"netrl: {why}")


def _train_apex(args: argparse.Namespace, cfg: Any, dist: Any, replay: Any,
                target: float | None, run_dir: Path) -> Any:
    """``--topology apex``: dedicated actors and learners (:func:`rl.apex.run_apex`)."""
    from rl.apex import ALGOS as APEX_ALGOS
    from rl.apex import ApexConfig, run_apex
    from rl.run import config_dict

    if args.algo not in APEX_ALGOS or replay is None:
        raise SystemExit(f"netrl: --topology apex runs {', '.join(APEX_ALGOS)}, not {args.algo}")
    if args.replay == "auto":
        replay.kind, replay.url = "innet", args.switch
    if dist.launcher != "process":
        raise SystemExit("netrl: --topology apex runs actor and learner processes "
                         "(--launcher process)")
    _refuse_unfit_replay(replay, args.switch)
    apex = ApexConfig(actors=args.actors, learners=args.learners,
                      samples_per_insert=args.samples_per_insert)
    dist.replay, dist.workers = replay.kind, args.learners
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text(json.dumps(
        {"algo": args.algo, "topology": "apex", "apex": dataclasses.asdict(apex),
         "config": config_dict(cfg), "dist": dataclasses.asdict(dist), "target": target},
        indent=2))
    print(f"netrl: {args.algo} on {cfg.env_id}, {apex.actors} actors + {apex.learners} "
          f"learners (sync={dist.sync}), replay={replay.kind} with its rate limiter "
          f"-> {run_dir}", flush=True)
    try:
        return run_apex(args.algo, cfg, apex, dist, replay, target_return=target,
                        run_dir=run_dir, progress=not args.no_progress)
    except ValueError as e:
        raise SystemExit(f"netrl: {e}") from None


def _train_rank(args: argparse.Namespace, mod: ModuleType, cfg: Any, dist: Any, replay: Any,
                target: float | None, run_dir: Path) -> Any:
    """One torchrun rank's part of a run; rank 0 writes ``run_dir`` and returns the summary."""
    from rl.run import config_dict
    from rl.run.torchrun import RankInfo, job_store, run_torchrun

    info = RankInfo.from_env()
    if args.store is None:
        args.store = job_store()
    dist.workers = info.world
    dist.inswitch_api = dist.resolved_inswitch_api()
    if info.rank == 0:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "config.json").write_text(json.dumps(
            {"algo": args.algo, "workload": workload_of(args).name,
             "config": config_dict(cfg), "dist": dataclasses.asdict(dist),
             "target": target}, indent=2))
        via = f" ({dist.inswitch_api})" if dist.sync == "inswitch" else ""
        print(f"netrl: {args.algo} on {cfg.env_id}, {info.world} torchrun ranks, "
              f"sync={dist.sync}{via} mode={args.mode} dtype={args.dtype}"
              + (f" replay={replay.kind}" if replay else "") + f" -> {run_dir}", flush=True)
    return run_torchrun(mod.train_worker, cfg, dist, algo=args.algo, env_id=cfg.env_id,
                        total_steps=cfg.total_timesteps, target_return=target, replay=replay,
                        run_dir=run_dir, progress=not args.no_progress, store=args.store,
                        tag=f"{args.command}/{dist.sync}")


def _exec_torchrun(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """``--launcher torchrun`` outside torchrun: rerun this command under
    ``torchrun --standalone`` with ``--workers`` ranks on this machine."""
    import subprocess

    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1",
           f"--nproc-per-node={args.workers}", "-m", "rl", *argv]
    print("netrl: " + " ".join(cmd[1:]), flush=True)
    return subprocess.call(cmd)


def describe(summary: Any) -> str:
    """A short human summary of a run."""
    if summary.solved:
        head = (f"solved in {summary.solve_seconds:.1f} s of training "
                f"({summary.solve_steps} env steps)")
    else:
        last = summary.last_mean_return
        head = "not solved" + (f" (last mean return {last:.1f})" if last is not None else "")
    return (f"{head}; per iteration {1e3 * summary.mean_compute_s:.1f} ms compute + "
            f"{1e3 * summary.mean_comm_s:.1f} ms communication; wall {summary.wall_seconds:.1f} s")


def cmd_train(args: argparse.Namespace) -> int:
    """``netrl train``: one run, then where its CSV and plots are."""
    name = args.name or _run_name(args.algo, env_of(args), args.sync, args.mode)
    run_dir = Path(args.runs_dir) / name
    summary = train_once(args, args.sync, run_dir)
    if summary is None:  # a torchrun rank other than 0
        return 0
    print(describe(summary))
    print(f"CSV:   {run_dir / 'episodes.csv'}  {run_dir / 'iterations.csv'}")
    print(f"plots: {run_dir / 'return.png'}  {run_dir / 'time_split.png'}")
    if not args.no_tensorboard:
        print(f"TensorBoard: tensorboard --logdir {run_dir}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """``netrl compare``: one run per strategy, same seed, then ``compare.png``."""
    from rl.plots import plot_compare

    syncs = [s.strip() for s in args.syncs.split(",") if s.strip()]
    env = env_of(args)
    name = args.name or _run_name(args.algo, env, "compare", args.mode)
    root = Path(args.runs_dir) / name
    summaries = {}
    for sync in syncs:
        summaries[sync] = train_once(args, sync, root / sync)
        if summaries[sync] is None:  # a torchrun rank other than 0
            continue
        print(f"  {sync}: {describe(summaries[sync])}")
    if any(s is None for s in summaries.values()):
        return 0
    target = args.target if args.target is not None else default_target(env)
    workers = summaries[syncs[0]].workers  # under torchrun the world size
    png = plot_compare([root / s for s in syncs], syncs, root / "compare.png",
                       title=f"{args.algo} {env}, {workers} workers, {args.mode}",
                       target=target)
    (root / "compare.json").write_text(json.dumps(
        {s: summaries[s].to_json() for s in syncs}, indent=2))
    print(f"comparison: {png}  {root / 'compare.json'}")
    return 0


def _run_name(algo: str, env: str, sync: str, mode: str) -> str:
    env = env.split("/")[-1]
    return f"{algo}-{env.split('-')[0].lower()}-{sync}-{mode}-{time.strftime('%Y%m%d-%H%M%S')}"


def launcher_of(args: argparse.Namespace) -> str:
    """``--launcher``, or its default when not given: ``torchrun`` under torchrun, else
    ``process`` (callers that parse with :func:`build_parser` themselves, e.g. rl.demo)."""
    if args.launcher is not None:
        return str(args.launcher)
    return "torchrun" if _under_torchrun() else "process"


def _under_torchrun() -> bool:
    from rl.run.torchrun import under_torchrun

    return under_torchrun()


def main(argv: Sequence[str] | None = None) -> int:
    """``netrl train`` / ``netrl compare`` (and ``regs``) with ``argv`` after ``netrl``;
    ``python -m rl``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    algo = _algo_from_argv(argv)
    parser = build_parser(algo if algo in ALGOS else None)
    args = parser.parse_args(argv)
    if args.command == "regs":  # register access: no launcher, no workers
        from hostdrv.client.regs_cli import run_regs

        return run_regs(args)
    args.store = None
    args.launcher = launcher_of(args)
    if args.launcher == "torchrun":
        syncs = [args.sync] if args.command == "train" else args.syncs.split(",")
        if "reference" in (s.strip() for s in syncs):
            raise SystemExit("netrl: the reference strategy runs worker threads of one "
                             "process; under torchrun use inswitch, ps or allreduce")
        if not _under_torchrun():
            return _exec_torchrun(args, argv)
    if args.command == "train":
        return cmd_train(args)
    return cmd_compare(args)


if __name__ == "__main__":
    raise SystemExit(main())
