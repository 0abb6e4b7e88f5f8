"""Host-side benchmarks: the driver's send path and all-reduce through the soft switch.

Prints what it measures and what bounds it, then ONE last line of
``key=value`` figures:

* ``send_gbytes_per_s``: GRADIENT payload bytes per second that the
  :class:`~hostdrv.Aggregator` send path (one process, preallocated buffers,
  numpy views, UDP GSO) delivers into a UDP sink socket on loopback, counted
  at the sink;
* ``softswitch_mpps``: packets in + out per second through the soft switch (a
  child process) at P = 352, 4 members: one client process sends every slot's
  GRADIENTs of 4 members (UDP GSO, two rounds in flight) and receives the
  multicast RESULTs (UDP GRO); in = GRADIENTs sent, out = RESULTs received;
* ``allreduce_vs_gloo``: all-reduce throughput of a 4 MB float32 tensor over 4
  worker processes through the soft switch (a child process) at P = 352, divided
  by ``torch.distributed`` gloo ``all_reduce`` of the same tensor on the same 4
  processes in the same run (> 1 means the switch is faster);
  ``allreduce_vs_gloo_jumbo`` the same with P = 16352 (64 KB datagrams, loopback);
* ``replay_rtt_vs_server``: in-network replay round trip (push 32 + prioritized
  sample 32, ``scripts/bench_rl.py``) divided by the TCP replay server's;
* ``agg_rtt_vs_ps``: 9216-element aggregation round trip of 4 workers through the
  soft switch divided by the parameter server's (``scripts/bench_rl.py``).

Every soft switch figure is measured for both engines in the same run: the keys
above are the native engine's with the native client loop (the defaults),
``<key>_model`` the golden model's (``--engine model``, the Python server loop)
with the Python client loop (``NRL_NATIVE_CLIENT=0``): the state before issue 10.

Usage: ``python scripts/bench_host.py [--seconds 1.0] [--iters 5] [--profile]
[--engines native,model]``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import pstats
import selectors
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
from hostdrv.wire.net import (  # noqa: E402
    GSO_MAX_BYTES,
    GSO_MAX_SEGMENTS,
    SOL_UDP,
    UDP_GRO,
    UDP_SEGMENT,
    tune_socket,
)
from hostdrv.wire.protocol import MAX_JUMBO_ELEMS  # noqa: E402

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
        ctl.configure_aggregation(members=1, slots=SLOTS, packet_elems=ELEMS)
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


def bench_allreduce(iters: int, profile: bool, packet_elems: int = ELEMS,
                    slots: int = SLOTS, engine: str = "native") -> tuple[dict[str, float], str]:
    prof_file = tempfile.mktemp(suffix=".prof") if profile else ""
    args = ["--profile", prof_file] if profile else []
    args += ["--max-elems", str(packet_elems), "--engine", engine]
    proc = SoftSwitchProcess(args=args)
    try:
        with SwitchControl(proc.url) as ctl:
            ctl.configure_aggregation(members=WORKERS, slots=slots, packet_elems=packet_elems)
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


# ---------------------------------------------------------------------------
# packets through the soft switch


def _recv_count(socks: list[socket.socket], want: int, timeout: float, buf: bytearray) -> int:
    """Datagrams received on ``socks`` (GRO batches counted by segment) until ``want`` or
    ``timeout`` seconds without any."""
    got = 0
    anc = socket.CMSG_SPACE(4)
    sel = selectors.DefaultSelector()
    for sk in socks:
        sel.register(sk, selectors.EVENT_READ)
    while got < want:
        ready = sel.select(timeout)
        if not ready:
            break
        for key, _ in ready:
            sk = key.fileobj
            while True:
                try:
                    n, ancdata, _fl, _a = sk.recvmsg_into([buf], anc)  # type: ignore[union-attr]
                except BlockingIOError:
                    break
                seg = n
                for level, kind, data in ancdata:
                    if level == SOL_UDP and kind == UDP_GRO and len(data) >= 4:
                        seg = struct.unpack_from("=i", data)[0] or n
                got += -(-n // max(seg, 1))
    sel.close()
    return got


def bench_softswitch(engine: str, seconds: float) -> dict[str, float]:
    """Packets in + out per second through a soft switch child at P = 352, 4 members."""
    from hostdrv.client.control import ROLE_WORKER
    from hostdrv.wire.protocol import encode_message, gradient

    proc = SoftSwitchProcess(args=["--engine", engine])
    socks = []
    try:
        for _ in range(WORKERS):
            sk = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            tune_socket(sk, 16 << 20)
            sk.bind(("127.0.0.1", 0))
            try:
                sk.setsockopt(SOL_UDP, UDP_GRO, 1)
            except OSError:
                pass
            sk.setblocking(False)
            socks.append(sk)
        with SwitchControl(proc.url) as ctl:
            ctl.configure_aggregation(members=WORKERS, slots=SLOTS, packet_elems=ELEMS)
            for i, sk in enumerate(socks):
                ctl.set_member(i, port=1 << i, ip="127.0.0.1", udp=sk.getsockname()[1],
                               role=ROLE_WORKER)
        x = np.random.default_rng(0).standard_normal(ELEMS).astype(np.float32)
        seg = 22 + 4 * ELEMS
        bufs = [np.frombuffer(b"".join(
            encode_message(gradient(x, job=0, worker=w, slot=s, round_=0, total=ELEMS))
            for s in range(SLOTS)), np.uint8).reshape(SLOTS, seg).copy() for w in range(WORKERS)]
        per_call = min(GSO_MAX_SEGMENTS, GSO_MAX_BYTES // seg)
        cmsg = [(SOL_UDP, UDP_SEGMENT, struct.pack("=H", seg))]
        dst = proc.address
        rbuf = bytearray(1 << 16)

        def send(rnd: int) -> None:
            word = np.frombuffer(struct.pack("!I", rnd & 0xFFFFFFFF), np.uint8)
            for w, sk in enumerate(socks):
                b = bufs[w]
                b[:, 8:12] = word  # seq
                b[:, 14:18] = word  # aux (the round's version)
                mv = memoryview(b).cast("B")
                for i in range(0, SLOTS, per_call):
                    k = min(per_call, SLOTS - i)
                    while True:
                        try:
                            sk.sendmsg([mv[i * seg:(i + k) * seg]], cmsg if k > 1 else [], 0, dst)
                            break
                        except BlockingIOError:
                            time.sleep(0.0005)

        per_round = WORKERS * SLOTS
        send(0)  # warm-up round
        _recv_count(socks, per_round, 0.5, rbuf)
        sent = received = 0
        rnd = 1
        send(rnd)
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            send(rnd + 1)  # two rounds in flight: the slots' two shadow copies
            sent += per_round
            received += _recv_count(socks, per_round, 0.2, rbuf)
            rnd += 1
        received += _recv_count(socks, per_round, 0.2, rbuf)
        sent += per_round
        elapsed = time.perf_counter() - t0
    finally:
        for sk in socks:
            sk.close()
        proc.stop()
    return {"mpps": (sent + received) / elapsed / 1e6, "in": sent, "out": received,
            "seconds": elapsed, "lost_fraction": 1 - received / max(sent, 1)}


def bench_rl_rtts(engine: str, reps: int, ps: bool) -> dict[str, float]:
    """``scripts/bench_rl.py``'s aggregation (9216 elements, 4 workers) and replay round
    trips with the soft switch serving ``engine`` (and the parameter server when ``ps``)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import bench_rl

    os.environ["NRL_SOFTSWITCH_ENGINE"] = engine
    try:
        out = bench_rl.bench_aggregation(["inswitch", "ps"] if ps else ["inswitch"], WORKERS,
                                         9216, reps)
        out |= bench_rl.bench_replay(reps)
    finally:
        del os.environ["NRL_SOFTSWITCH_ENGINE"]
    return out


def bench_model(packets: int = 8000) -> float:
    """Microseconds :meth:`SwitchModel.process` takes per fp32 GRADIENT (P = 352), in-process."""
    from hostdrv import Frame, SwitchModel, build_frame
    from hostdrv.wire.protocol import gradient

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
    ap.add_argument("--reps", type=int, default=50, help="aggregation and replay round trips")
    ap.add_argument("--profile", action="store_true", help="cProfile the soft switch loop")
    ap.add_argument("--engines", default="native,model",
                    help="soft switch engines to measure (the first one gives the plain keys)")
    args = ap.parse_args()
    engines = args.engines.split(",")

    send = bench_send(args.seconds)
    print("send path: " + " ".join(f"{k}={v:.3f}" for k, v in send.items()))
    figures: dict[str, float] = {"send_gbytes_per_s": send["send_gbytes_per_s"]}
    model_us = bench_model()
    packets = WORKERS * -(-TENSOR_ELEMS // ELEMS)
    for n, engine in enumerate(engines):
        suffix = "" if n == 0 else f"_{engine}"
        os.environ["NRL_NATIVE_CLIENT"] = "0" if engine == "model" else "1"  # workers inherit it
        sw = bench_softswitch(engine, args.seconds)
        print(f"[{engine}] soft switch packets: " + " ".join(f"{k}={v:.4g}" for k, v in sw.items()))
        ar, bound = bench_allreduce(args.iters, args.profile and engine == "model", engine=engine)
        print(f"[{engine}] allreduce: " + " ".join(f"{k}={v:.4g}" for k, v in ar.items()))
        print(f"[{engine}] soft switch:", bound)
        jumbo, _ = bench_allreduce(args.iters, False, JUMBO_ELEMS, 16, engine=engine)
        print(f"[{engine}] allreduce (jumbo P={JUMBO_ELEMS}, 64 KB datagrams, loopback only): "
              + " ".join(f"{k}={v:.4g}" for k, v in jumbo.items()))
        rtt = bench_rl_rtts(engine, args.reps, ps=n == 0)
        if n == 0:
            ps_ms = rtt["agg_rtt_ms_ps"]
        stats_line = next((ln for ln in bound.splitlines() if ln.startswith("stats ")), "")
        if stats_line:
            st = json.loads(stats_line[6:])
            busy = st["busy_us"] / max(st["datagrams"], 1)
            print(f"[{engine}] bound: per GRADIENT the switch is busy {busy:.2f} us"
                  + (f" (model.process alone {model_us:.1f} us in-process)"
                     if engine == "model" else "")
                  + f", {packets} GRADIENTs per 4 MB all-reduce -> >= {packets * busy / 1e3:.1f} "
                  f"ms of switch CPU vs gloo {ar['gloo_ms']:.1f} ms; workers use "
                  f"{ar['worker_cpu_ms']:.1f} ms CPU each per all-reduce; {os.cpu_count()} CPUs "
                  "shared by 4 workers and the switch")
        figures |= {
            f"softswitch_mpps{suffix}": sw["mpps"],
            f"allreduce_vs_gloo{suffix}": ar["allreduce_vs_gloo"],
            f"allreduce_vs_gloo_jumbo{suffix}": jumbo["allreduce_vs_gloo"],
            f"replay_rtt_vs_server{suffix}": rtt["replay_rtt_ms_innet"]
            / rtt["replay_rtt_ms_server"],
            f"agg_rtt_vs_ps{suffix}": rtt["agg_rtt_ms_inswitch"] / ps_ms,
            f"gloo_ms{suffix}": ar["gloo_ms"],
            f"switch_ms{suffix}": ar["switch_ms"],
        }
    del os.environ["NRL_NATIVE_CLIENT"]
    print(" ".join(f"{k}={v:.3f}" for k, v in figures.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
