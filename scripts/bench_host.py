"""Host-side benchmarks: the driver's send path and all-reduce through the soft switch.

Prints what it measures and what bounds it, then ONE last line of
``key=value`` figures:

* ``send_gbytes_per_s``: GRADIENT payload bytes per second that the
  :class:`~hostdrv.Aggregator` send path (one process, preallocated buffers,
  numpy views, UDP GSO) delivers into a UDP sink socket on loopback, counted
  at the sink;
* ``allreduce_vs_gloo``: all-reduce throughput of a 4 MB float32 tensor over 4
  worker processes through the soft switch (a child process), divided by
  ``torch.distributed`` gloo ``all_reduce`` of the same tensor on the same 4
  processes in the same run (> 1 means the switch is faster).

Usage: ``python scripts/bench_host.py [--seconds 1.0] [--iters 5] [--profile]``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import pstats
import socket
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from hostdrv import Aggregator, SoftSwitch, SoftSwitchProcess, SwitchControl  # noqa: E402
from hostdrv.net import SOL_UDP, UDP_GRO, tune_socket  # noqa: E402
from hostdrv.protocol import MAX_JUMBO_ELEMS  # noqa: E402

TENSOR_ELEMS = 1 << 20  # 4 MB of float32
WORKERS = 4
SLOTS, ELEMS = 64, 352
JUMBO_ELEMS = MAX_JUMBO_ELEMS  # loopback soft switch: one 64 KB datagram per chunk


# ---------------------------------------------------------------------------
# send path


def _sink(port_q: Any, result_q: Any, seconds: float) -> None:
    """Count bytes arriving on a UDP socket until ``seconds`` of silence or the stop datagram."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tune_socket(s, 16 << 20)
    s.bind(("127.0.0.1", 0))
    gro = True
    try:
        s.setsockopt(SOL_UDP, UDP_GRO, 1)
    except OSError:
        gro = False
    port_q.put((s.getsockname()[1], gro))
    buf = bytearray(1 << 16)
    anc = socket.CMSG_SPACE(4)
    total = datagrams = 0
    first = last = 0.0
    s.settimeout(seconds + 5)
    while True:
        try:
            n, ancdata, _fl, _a = s.recvmsg_into([buf], anc)
        except TimeoutError:
            break
        if n == 4 and buf[:4] == b"STOP":
            break
        seg = n
        for level, kind, data in ancdata:
            if level == SOL_UDP and kind == UDP_GRO and len(data) >= 4:
                seg = struct.unpack_from("=i", data)[0] or n
        now = time.perf_counter()
        if not first:
            first = now
        last = now
        k = -(-n // seg)
        datagrams += k
        total += n - 22 * k
    s.close()
    result_q.put((total, datagrams, last - first))


def bench_send(seconds: float) -> dict[str, float]:
    ctx = multiprocessing.get_context("spawn")
    port_q, result_q = ctx.Queue(), ctx.Queue()
    sink = ctx.Process(target=_sink, args=(port_q, result_q, seconds))
    sink.start()
    port, gro = port_q.get(timeout=30)
    with SoftSwitch() as sw, SwitchControl(sw.url) as ctl:
        ctl.configure_aggregation(members=1, slots=SLOTS, elems=ELEMS)
        agg = Aggregator(f"soft://127.0.0.1:{port}", worker=0, control=sw.url, register=False)
        x = np.random.default_rng(0).standard_normal(TENSOR_ELEMS).astype(np.float32)
        sent = 0
        t0 = time.perf_counter()
        calls = 0
        while time.perf_counter() - t0 < seconds:
            sent += agg.send_chunks(x, round_=calls)
            calls += 1
        elapsed = time.perf_counter() - t0
        stop = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        time.sleep(0.05)
        stop.sendto(b"STOP", ("127.0.0.1", port))
        stop.close()
        agg.close()
    delivered, datagrams, span = result_q.get(timeout=30)
    sink.join(10)
    return {
        "offered_gbytes_per_s": sent / elapsed / 1e9,
        "send_gbytes_per_s": delivered / elapsed / 1e9,
        "delivered_fraction": delivered / max(sent, 1),
        "datagrams": datagrams,
        "sink_gro": float(gro),
    }


# ---------------------------------------------------------------------------
# all-reduce vs gloo


def _worker(rank: int, master_port: int, switch_url: str, iters: int, q: Any) -> None:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(master_port)
    dist.init_process_group("gloo", rank=rank, world_size=WORKERS)
    x = torch.randn(TENSOR_ELEMS, generator=torch.Generator().manual_seed(rank))
    # gloo
    y = x.clone()
    dist.all_reduce(y)  # warm-up
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        y.copy_(x)
        dist.all_reduce(y)
    dist.barrier()
    t_gloo = (time.perf_counter() - t0) / iters
    # switch
    agg = Aggregator(switch_url, worker=rank, timeout=0.2, retries=20)
    dist.barrier()
    z = agg.allreduce(x)  # warm-up (and every member registered)
    dist.barrier()
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(iters):
        z = agg.allreduce(x)
    cpu = (time.process_time() - c0) / iters
    dist.barrier()
    t_switch = (time.perf_counter() - t0) / iters
    retrans = agg.retransmissions
    agg.close()
    err = float((z - y).abs().max()) if isinstance(z, torch.Tensor) else float("nan")
    q.put((rank, t_gloo, t_switch, retrans, err, cpu))
    dist.destroy_process_group()


def _free_port() -> int:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return int(port)


def bench_allreduce(iters: int, profile: bool, elems: int = ELEMS,
                    slots: int = SLOTS) -> tuple[dict[str, float], str]:
    prof_file = tempfile.mktemp(suffix=".prof") if profile else ""
    args = ["--profile", prof_file] if profile else []
    args += ["--max-elems", str(elems)]
    proc = SoftSwitchProcess(args=args)
    try:
        with SwitchControl(proc.url) as ctl:
            ctl.configure_aggregation(members=WORKERS, slots=slots, elems=elems)
        ctx = multiprocessing.get_context("spawn")
        q = ctx.Queue()
        port = _free_port()
        ps = [ctx.Process(target=_worker, args=(r, port, proc.url, iters, q))
              for r in range(WORKERS)]
        for p in ps:
            p.start()
        rows = [q.get(timeout=600) for _ in ps]
        for p in ps:
            p.join(30)
    finally:
        out = proc.stop()
    t_gloo = max(r[1] for r in rows)
    t_switch = max(r[2] for r in rows)
    figures = {
        "gloo_ms": t_gloo * 1e3,
        "switch_ms": t_switch * 1e3,
        "allreduce_vs_gloo": t_gloo / t_switch,
        "switch_gbytes_per_s": TENSOR_ELEMS * 4 / t_switch / 1e9,
        "retransmissions": float(sum(r[3] for r in rows)),
        "max_abs_diff_vs_gloo": max(r[4] for r in rows),
        "worker_cpu_ms": 1e3 * sum(r[5] for r in rows) / len(rows),
    }
    bound = out.strip()
    if profile and os.path.exists(prof_file):
        st = pstats.Stats(prof_file)
        st.sort_stats("tottime")
        lines = []
        total = st.total_tt  # type: ignore[attr-defined]
        for func, (_cc, nc, tt, _ct, _callers) in sorted(
                st.stats.items(), key=lambda kv: -kv[1][2])[:8]:  # type: ignore[attr-defined]
            name = f"{Path(func[0]).name}:{func[1]}({func[2]})"
            lines.append(f"  {tt / total:6.1%} {tt:7.3f}s {nc:8d} calls  {name}")
        bound += "\nsoft switch profile (self time, whole run incl. idle poll):\n" + "\n".join(lines)
        os.unlink(prof_file)
    return figures, bound


def bench_model(packets: int = 8000) -> float:
    """Microseconds :meth:`SwitchModel.process` takes per fp32 GRADIENT (P = 352), in-process."""
    from hostdrv import Frame, SwitchModel, build_frame
    from hostdrv.protocol import gradient

    m = SwitchModel()
    m.write("AGG_MEMBERS", WORKERS)
    m.write("AGG_ELEMS", ELEMS)
    m.write("AGG_SLOTS", SLOTS)
    for i in range(WORKERS):
        m.write(f"MEMBER_PORT_{i}", 1 << i)
        m.write(f"MEMBER_IP_{i}", 0x7F000001)
        m.write(f"MEMBER_UDP_{i}", 1000 + i)
        m.write(f"MEMBER_ROLE_{i}", 1)
    x = np.random.default_rng(1).standard_normal(ELEMS).astype(np.float32)
    frames = []
    for k in range(packets // WORKERS):
        for w in range(WORKERS):
            msg = gradient(x, job=0, worker=w, slot=k % SLOTS, round_=k // SLOTS)
            frames.append((build_frame(Frame(msg, ip_src=0x7F000001, udp_src=1000 + w)), 1 << w))
    t0 = time.perf_counter()
    for f, port in frames:
        m.process(f, port)
    return (time.perf_counter() - t0) / len(frames) * 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=1.0, help="send benchmark duration")
    ap.add_argument("--iters", type=int, default=5, help="timed all-reduces of each kind")
    ap.add_argument("--profile", action="store_true", help="cProfile the soft switch loop")
    args = ap.parse_args()

    send = bench_send(args.seconds)
    print("send path: " + " ".join(f"{k}={v:.3f}" for k, v in send.items()))
    ar, bound = bench_allreduce(args.iters, args.profile)
    print("allreduce: " + " ".join(f"{k}={v:.4g}" for k, v in ar.items()))
    print("soft switch:", bound)
    jumbo, _ = bench_allreduce(args.iters, False, JUMBO_ELEMS, 16)
    print(f"allreduce (jumbo P={JUMBO_ELEMS}, 64 KB datagrams, loopback only): "
          + " ".join(f"{k}={v:.4g}" for k, v in jumbo.items()))
    stats_line = next((ln for ln in bound.splitlines() if ln.startswith("stats ")), "")
    model_us = bench_model()
    packets = WORKERS * -(-TENSOR_ELEMS // ELEMS)
    if stats_line:
        st = json.loads(stats_line[6:])
        busy = st["busy_us"] / max(st["datagrams"], 1)
        print(f"bound: the soft switch is one Python thread; per GRADIENT it is busy {busy:.1f} us "
              f"(model.process alone {model_us:.1f} us in-process), {packets} GRADIENTs per "
              f"4 MB all-reduce -> >= {packets * busy / 1e3:.0f} ms vs gloo {ar['gloo_ms']:.1f} ms; "
              f"workers use {ar['worker_cpu_ms']:.1f} ms CPU each per all-reduce; "
              f"{os.cpu_count()} CPUs shared by 4 workers and the switch")
    print(f"send_gbytes_per_s={send['send_gbytes_per_s']:.3f} "
          f"allreduce_vs_gloo={ar['allreduce_vs_gloo']:.3f} "
          f"allreduce_vs_gloo_jumbo={jumbo['allreduce_vs_gloo']:.3f} "
          f"gloo_ms={ar['gloo_ms']:.2f} switch_ms={ar['switch_ms']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
