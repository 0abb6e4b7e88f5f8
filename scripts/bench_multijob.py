#!/usr/bin/env python3
"""Three jobs on one soft switch (``docs/protocol.md`` section 11): what sharing costs each.

One soft switch child process started with ``--jobs 4``; the admin control
(:mod:`hostdrv.client.jobs`) releases job 0 (it owns everything at reset) and admits

* jobs 1 and 2: aggregation, half of the slot memory each (two DDP jobs' buckets): N
  worker processes per job, each ``Aggregator(url, worker=i, page=j).allreduce`` of a
  fixed-size fp32 tensor in a loop;
* job 3: replay, no slots, a table of ``--table`` records: an actor process pushing
  (``ReplayClient(url, table=3).push_records``) and a learner sampling B records by
  priority and updating their priorities.

Per repeat, on persistent processes, each job runs ``--seconds`` **alone** (the other
jobs admitted with the same shares, idle) and then all three **shared** (at once).
Throughput: allreduce calls/s (and MB/s of the tensor) per aggregation job, sampled
records/s for the replay job (pushes/s printed too); figures are medians over repeats.
``shared_vs_alone`` = min over the three jobs of shared / alone; ``shared_sum_vs_alone`` =
their sum (1.0: sharing only divides what one job gets alone); ``switch_cpu_*``: the switch
process's CPU seconds per wall second in each phase (near 1.0: one core, the switch, is
the bottleneck).

The **fallback**: job 0 admitted ``best_effort`` while jobs 1 and 2 hold every slot gets 0
slots (``Grant.fallback``; ``Aggregator(page=0)`` refuses it); its N workers aggregate the
same tensor through the native parameter server (:mod:`hostdrv.peers.ps`) on this host,
alone: ``fallback_vs_switch`` = its calls/s / job 1's alone.

**Every result is checked in the run**: the tensors are integer-valued fp32 (below 2**24),
so any order of addition is exact and each call's result must equal the numpy sum of the
members' inputs bit for bit; element 0 of every tensor is the member's "continue" flag (1
before the deadline), so the members of a job agree on the last call. Each replay record
carries its push sequence number and bytes derived from it: every sampled record must be
one the actor pushed (its sequence below the actor's count). The per-page counters must
show each job's traffic in its own page only (aggregation pages no PUSH or SAMPLE,
the replay page no GRADIENT, page 0 nothing while it is released). A failed check exits 1.

Context: this runs on one host over loopback UDP, so the links are not the bottleneck: the
switch process and the clients share the machine's cores (2 on the machine this was written
on, loaded by other work), and sharing is bounded by CPU. The issue's aim is
``shared_vs_alone >= 0.9`` on a switch whose links are. The soft switch runs the native engine
by default (``--engine model`` or ``NRL_SOFTSWITCH_ENGINE`` for the reference model).

Run: ``python scripts/bench_multijob.py [--quick] [--reps R] [--seconds S] [--members N]
[--elems E] [--engine model|native]``. The ``role``, ``setup`` and ``counters`` commands are
the pieces the rack test (``tests/test_rack.py``, three jobs) runs in host namespaces.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hostdrv.client.control import SwitchControl  # noqa: E402
from hostdrv.client.jobs import Grant, admit, release  # noqa: E402

AGG_JOBS = (1, 2)
REPLAY_JOB = 3
FALLBACK_JOB = 0
VARIANTS = 4
"""Distinct input tensors a member cycles through (call k uses variant k mod 4)."""
ONE = 1 << 16
"""Priority 1.0 in Q16.16."""
PUSH_BATCH = 16
ROLES = ("agg", "ps", "actor", "learner")


class CheckError(AssertionError):
    """A result of the run was not exact, or a counter moved in the wrong page."""


# -- inputs and their checks -----------------------------------------------------------------
def agg_input(worker: int, variant: int, elems: int) -> np.ndarray:
    """Member ``worker``'s tensor for ``variant``: integer-valued fp32 below 2**24 (so any sum
    of up to 64 members is exact); element 0 is the continue flag (set by the caller)."""
    x = ((worker + 1) * (np.arange(elems, dtype=np.int64) % 4093) + 7 * variant + worker)
    return x.astype(np.float32)


def agg_expected(members: int, elems: int) -> list[np.ndarray]:
    """The exact sum of every member's input, per variant (element 0: all continue)."""
    out = []
    for v in range(VARIANTS):
        acc = np.zeros(elems, np.float64)
        for w in range(members):
            acc += agg_input(w, v, elems)
        s = acc.astype(np.float32)
        s[0] = members
        out.append(s)
    return out


def record(seq: np.ndarray, record_bytes: int) -> np.ndarray:
    """The records with push sequence numbers ``seq``: seq as u64 then bytes derived from it."""
    seq = np.asarray(seq, np.uint64).reshape(-1)
    body = (seq[:, None] * np.uint64(131) + np.arange(record_bytes, dtype=np.uint64)[None, :])
    rec = (body & np.uint64(0xFF)).astype(np.uint8)
    rec[:, :8] = seq.astype("<u8").view(np.uint8).reshape(-1, 8)
    return rec


def record_seq(records: np.ndarray) -> np.ndarray:
    """The sequence numbers of records that :func:`record` made (raises if one is not)."""
    seq = np.ascontiguousarray(records[:, :8]).view("<u8").reshape(-1)
    if not np.array_equal(record(seq, records.shape[1]), records):
        bad = int(np.flatnonzero((record(seq, records.shape[1]) != records).any(axis=1))[0])
        raise CheckError(f"sampled record {bad} (seq {int(seq[bad])}) is no record the actor "
                         "pushed")
    return seq


def page_control(url: str, page: int) -> SwitchControl:
    """Job ``page``'s page under the admin key (the rack's switch has that key only: a
    ``?key=FILE`` URL); on loopback without keys the key id is not used."""
    return SwitchControl(url, job=page, key_id=0)


# -- one member's loop (a process of the bench, or a command in a rack namespace) -------------
@dataclass
class RoleSpec:
    """What one member process runs."""

    role: str
    url: str
    page: int
    worker: int
    members: int = 2
    elems: int = 4096
    batch: int = 32
    prefill: int = 64
    ps_address: tuple[str, int] | None = None


def make_client(spec: RoleSpec) -> Any:
    """The client a role drives (an Aggregator, a PsClient or a ReplayClient)."""
    if spec.role == "agg":
        from hostdrv.client.aggregator import Aggregator

        return Aggregator(spec.url, worker=spec.worker, page=spec.page, timeout=0.1,
                          retries=100, control=page_control(spec.url, spec.page))
    if spec.role == "ps":
        from hostdrv.peers.ps import PsClient

        assert spec.ps_address is not None
        return PsClient(spec.ps_address, spec.worker, spec.members)
    from hostdrv.client.replay import ReplayClient

    c = ReplayClient(spec.url, worker=spec.worker, table=spec.page, obs_shape=(1,),
                     timeout=0.2, retries=50, rate_timeout=30.0,
                     control=page_control(spec.url, spec.page))
    if spec.role == "actor" and spec.prefill:
        c.push_records(record(np.arange(spec.prefill), c.record_bytes),
                       np.full(spec.prefill, ONE, np.uint32))
    return c


def run_phase(spec: RoleSpec, client: Any, go: float, deadline: float,
              state: dict[str, int]) -> dict[str, Any]:
    """Wait for ``go`` and work until ``deadline`` (Unix seconds); check every result.

    Returns ``ops`` (calls, or records pushed or sampled, completed by the deadline), the
    phase's length, for aggregation the calls made in all (``calls``: the same in every
    member), and for the learner the largest sequence number it sampled, for the
    actor the records it has pushed in all (``state`` carries that between phases)."""
    time.sleep(max(0.0, go - time.time()))
    ops = 0
    out: dict[str, Any] = {"role": spec.role, "page": spec.page, "worker": spec.worker,
                           "seconds": deadline - go}
    if spec.role in ("agg", "ps"):
        want = agg_expected(spec.members, spec.elems)
        xs = [agg_input(spec.worker, v, spec.elems) for v in range(VARIANTS)]
        k = k0 = state.get("calls", 0)
        last = np.empty(0, np.float32)
        while True:
            x = xs[k % VARIANTS]
            x[0] = 1.0 if time.time() < deadline else 0.0
            y = np.asarray(client.allreduce(x), np.float32)
            done = time.time()
            flags = float(y[0])
            if not (flags == int(flags) and 0 <= flags <= spec.members) or \
                    not np.array_equal(y[1:].view(np.uint32), want[k % VARIANTS][1:].view(np.uint32)):
                raise CheckError(f"page {spec.page} worker {spec.worker} call {k}: the result "
                                 "is not the exact sum of the members' inputs")
            k += 1
            last = y
            if done <= deadline:
                ops += 1
            if flags < spec.members:
                break
        state["calls"] = k
        out["calls"] = k - k0  # the same in every member of the job
        out["variant"] = (k - 1) % VARIANTS
        out["last"] = last
    elif spec.role == "actor":
        seq = state.get("pushed", spec.prefill)
        prio = np.full(PUSH_BATCH, ONE, np.uint32)
        while time.time() < deadline:
            client.push_records(record(np.arange(seq, seq + PUSH_BATCH), client.record_bytes),
                                prio)
            seq += PUSH_BATCH
            if time.time() <= deadline:
                ops += PUSH_BATCH
        state["pushed"] = seq
        out["pushed_total"] = seq
    else:
        rng = np.random.default_rng(spec.worker)
        top = state.get("max_seq", -1)
        while time.time() < deadline:
            b = client.sample(spec.batch)
            top = max(top, int(record_seq(b.records).max()))
            client.update_priorities(b.indices, rng.uniform(0.5, 2.0, len(b.indices)))
            if time.time() <= deadline:
                ops += spec.batch
        state["max_seq"] = top
        out["max_seq"] = top
    out["ops"] = ops
    return out


def _member_main(spec: RoleSpec, cmds: Any, results: Any) -> None:
    """A bench member process: build the client, then one phase per command until None."""
    try:
        client = make_client(spec)
        results.put(("ready", spec.role, spec.page, spec.worker))
        state: dict[str, int] = {}
        while (cmd := cmds.get()) is not None:
            r = run_phase(spec, client, *cmd, state)
            r.pop("last", None)
            results.put(("done", r))
        client.close()
    except BaseException as e:  # noqa: BLE001 - reported by the parent
        results.put(("error", f"{spec.role} page {spec.page} worker {spec.worker}: "
                              f"{type(e).__name__}: {e}"))


# -- the switch's side: shares, configuration, counters --------------------------------------
def setup_jobs(url: str, members: int, table: int, packet_elems: int) -> dict[int, Grant]:
    """Release job 0 and admit the two aggregation jobs (half the slots each) and the replay
    job (a table of ``table`` records); configure each job's page."""
    with SwitchControl(url) as admin:
        half = admin.read("AGG_MAX_SLOTS") // 2
        release(admin, 0)
        grants = {j: admit(admin, j, slots=half) for j in AGG_JOBS}
        grants[REPLAY_JOB] = admit(admin, REPLAY_JOB, slots=0, table_records=table)
    for j in AGG_JOBS:
        with page_control(url, j) as c:
            c.configure_aggregation(members=members, slots=min(16, half),
                                    packet_elems=packet_elems)
    with page_control(url, REPLAY_JOB) as c:
        c.configure_replay(seed=0x5EED)
    return grants


def page_counters(url: str, jobs: int = 4) -> dict[int, dict[str, int]]:
    """Every page's counters."""
    out = {}
    for j in range(jobs):
        with page_control(url, j) as c:
            out[j] = c.counters()
    return out


def check_pages(counts: dict[int, dict[str, int]], idle: tuple[int, ...] = (FALLBACK_JOB,)) -> None:
    """Each job's traffic is in its page and nothing in the others (raises :class:`CheckError`)."""
    rx = ("CNT_RX_GRADIENT", "CNT_RX_PUSH", "CNT_RX_SAMPLE", "CNT_RX_UPDATE")
    for j in AGG_JOBS:
        c = counts[j]
        if not (c["CNT_RX_GRADIENT"] > 0 and c["CNT_TX_RESULT"] > 0):
            raise CheckError(f"page {j}: no aggregation traffic: {c}")
        if any(c[k] for k in rx[1:]) or c["CNT_TX_PUSH_ACK"] or c["CNT_TX_SAMPLE_RESP"]:
            raise CheckError(f"page {j} (aggregation) counted replay traffic: {c}")
    c = counts[REPLAY_JOB]
    if not (c["CNT_RX_PUSH"] > 0 and c["CNT_RX_SAMPLE"] > 0 and c["CNT_TX_SAMPLE_RESP"] > 0):
        raise CheckError(f"page {REPLAY_JOB}: no replay traffic: {c}")
    if c["CNT_RX_GRADIENT"] or c["CNT_TX_RESULT"]:
        raise CheckError(f"page {REPLAY_JOB} (replay) counted aggregation traffic: {c}")
    for j in idle:
        moved = {k: v for k, v in counts[j].items() if v and k != "CNT_PASS"}
        if moved:
            raise CheckError(f"page {j} (no job running) counted {moved}")
    for j, c in counts.items():
        drops = {k: v for k, v in c.items()
                 if k in ("CNT_DROP_BAD_JOB", "CNT_DROP_SPOOFED", "CNT_DROP_UNKNOWN_WORKER",
                          "CNT_DROP_BAD_SLOT", "CNT_DROP_DISABLED") and v}
        if drops:
            raise CheckError(f"page {j}: drops {drops}")


# -- the bench ---------------------------------------------------------------------------------
class Members:
    """Persistent member processes, by job; a phase is one command to a chosen few."""

    def __init__(self, ctx: Any, specs: list[RoleSpec], timeout: float) -> None:
        self.results = ctx.Queue()
        self.timeout = timeout
        self.procs: list[tuple[RoleSpec, Any, Any]] = []
        for spec in specs:  # the actor first: its prefill is in before the learner samples
            q = ctx.Queue()
            p = ctx.Process(target=_member_main, args=(spec, q, self.results), daemon=True)
            p.start()
            self.procs.append((spec, q, p))
            if spec.role == "actor":
                self._collect(1)
        self._collect(len(specs) - sum(s.role == "actor" for s in specs))

    def _collect(self, n: int) -> list[dict[str, Any]]:
        out = []
        deadline = time.monotonic() + self.timeout
        while len(out) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CheckError(f"members did not answer in {self.timeout:.0f} s")
            try:
                msg = self.results.get(timeout=left)
            except Exception as e:  # noqa: BLE001 - queue.Empty
                raise CheckError(f"members did not answer in {self.timeout:.0f} s") from e
            if msg[0] == "error":
                raise CheckError(msg[1])
            out.append(msg[1] if msg[0] == "done" else {})
        return out

    def phase(self, pages: tuple[int, ...], seconds: float, lead: float = 0.3) -> dict[int, dict[str, Any]]:
        """Run the members of ``pages`` for ``seconds``; per page: its figures."""
        chosen = [(s, q) for s, q, _p in self.procs if s.page in pages]
        go = time.time() + lead
        for _s, q in chosen:
            q.put((go, go + seconds))
        res = self._collect(len(chosen))
        out: dict[int, dict[str, Any]] = {}
        for r in res:
            page = out.setdefault(r["page"], {"seconds": r["seconds"]})
            if r["role"] in ("agg", "ps") and r["worker"] == 0:
                page["calls"] = r["ops"]
            elif r["role"] == "learner":
                page["samples"], page["max_seq"] = r["ops"], r["max_seq"]
            elif r["role"] == "actor":
                page["pushes"], page["pushed_total"] = r["ops"], r["pushed_total"]
        for page in out.values():
            if "max_seq" in page and page["max_seq"] >= page["pushed_total"]:
                raise CheckError(f"sampled seq {page['max_seq']} was never pushed "
                                 f"({page['pushed_total']} pushed)")
        return out

    def close(self) -> None:
        for _s, q, _p in self.procs:
            q.put(None)
        for _s, _q, p in self.procs:
            p.join(10)
            if p.is_alive():
                p.terminate()


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rate(fig: dict[str, Any]) -> float:
    """A job's primary throughput in a phase: calls/s, or sampled records/s."""
    return float(fig.get("calls", fig.get("samples", 0))) / fig["seconds"]


def run_bench(args: argparse.Namespace) -> dict[str, str]:
    """The whole run; returns the final figures."""
    from hostdrv.peers.ps import NativeParameterServer
    from hostdrv.switch.soft_process import SoftSwitchProcess

    ctx = mp.get_context("spawn")
    sw_args = ["--jobs", "4", "--engine", args.engine, "--capacity", str(args.capacity),
               "--max-elems", str(args.packet_elems)]
    figures: dict[str, str] = {}
    with SoftSwitchProcess(args=sw_args) as sw:
        grants = setup_jobs(sw.url, args.members, args.table, args.packet_elems)
        for j, g in grants.items():
            slots = f"{g.slot_base}..{g.slot_base + g.slots - 1}" if g.slots else "none"
            table = (f"records {g.table_base}..{g.table_base + g.table_records - 1} of "
                     f"{g.record_bytes} B" if g.table_records else "none")
            print(f"# job {j}: JOB_ID {g.job_id}, slots {slots}, table {table}")
        specs = [RoleSpec("agg", sw.url, j, w, args.members, args.elems)
                 for j in AGG_JOBS for w in range(args.members)]
        specs += [RoleSpec("actor", sw.url, REPLAY_JOB, 0, prefill=args.prefill),
                  RoleSpec("learner", sw.url, REPLAY_JOB, 1, batch=args.batch)]
        members = Members(ctx, specs, timeout=60 + 4 * args.seconds)
        alone: dict[int, list[dict[str, Any]]] = {j: [] for j in (*AGG_JOBS, REPLAY_JOB)}
        shared: dict[int, list[dict[str, Any]]] = {j: [] for j in alone}
        try:
            for _ in range(args.reps):
                for j in alone:
                    t0 = cpu_seconds(sw.proc.pid)
                    alone[j].append(members.phase((j,), args.seconds)[j])
                    alone[j][-1]["switch_cpu"] = cpu_seconds(sw.proc.pid) - t0
                t0 = cpu_seconds(sw.proc.pid)
                both = members.phase(tuple(alone), args.seconds)
                both[AGG_JOBS[0]]["switch_cpu"] = cpu_seconds(sw.proc.pid) - t0
                for j in shared:
                    shared[j].append(both[j])
        finally:
            members.close()
        counts = page_counters(sw.url)
        check_pages(counts)
        print("# per-page counters (RX_GRADIENT TX_RESULT RX_PUSH RX_SAMPLE TX_SAMPLE_RESP): " +
              "; ".join(f"page {j}: {c['CNT_RX_GRADIENT']} {c['CNT_TX_RESULT']} {c['CNT_RX_PUSH']}"
                        f" {c['CNT_RX_SAMPLE']} {c['CNT_TX_SAMPLE_RESP']}" for j, c in counts.items()))
        mb = args.elems * 4 / 1e6
        ratios = []
        for j in alone:
            a = statistics.median(rate(f) for f in alone[j])
            s = statistics.median(rate(f) for f in shared[j])
            ratios.append(s / a if a else 0.0)
            kind = "agg" if j in AGG_JOBS else "replay"
            unit = "calls_per_s" if kind == "agg" else "samples_per_s"
            line = f"job{j}_{kind}_alone_{unit}={a:.1f} job{j}_{kind}_shared_{unit}={s:.1f}"
            if kind == "agg":
                line += f" job{j}_alone_MBps={a * mb:.2f} job{j}_shared_MBps={s * mb:.2f}"
            else:
                pa = statistics.median(f["pushes"] / f["seconds"] for f in alone[j])
                ps = statistics.median(f["pushes"] / f["seconds"] for f in shared[j])
                line += f" job{j}_alone_pushes_per_s={pa:.1f} job{j}_shared_pushes_per_s={ps:.1f}"
            print(line + f" job{j}_shared_vs_alone={ratios[-1]:.3f}")
            figures[f"job{j}_shared_vs_alone"] = f"{ratios[-1]:.3f}"
        # the switch process's CPU per wall second (1.0: one core busy: it is the bottleneck)
        load = {j: statistics.median(f["switch_cpu"] / (f["seconds"] + 0.3) for f in alone[j])
                for j in alone}
        load_shared = statistics.median(f["switch_cpu"] / (f["seconds"] + 0.3)
                                        for f in shared[AGG_JOBS[0]])
        print(" ".join(f"switch_cpu_alone_job{j}={v:.2f}" for j, v in load.items()) +
              f" switch_cpu_shared={load_shared:.2f}")
        figures["shared_vs_alone"] = f"{min(ratios):.3f}"
        # 1.0: sharing only divides what one job alone gets; above: one job alone left the
        # switch idle part of the time (its members' round trips, not the switch, set its pace)
        figures["shared_sum_vs_alone"] = f"{sum(ratios):.3f}"
        figures["switch_cpu_shared"] = f"{load_shared:.2f}"
        switch_rate = statistics.median(rate(f) for f in alone[AGG_JOBS[0]])
        # the fallback: every slot is held by jobs 1 and 2, so job 0 gets none
        with SwitchControl(sw.url) as admin:
            g = admit(admin, FALLBACK_JOB, slots=args.members, best_effort=True)
        if not g.fallback:
            raise CheckError(f"job {FALLBACK_JOB} was given slots: {g}")
        try:
            make_client(RoleSpec("agg", sw.url, FALLBACK_JOB, 0))
            raise CheckError("an Aggregator joined a job with no slots")
        except ValueError as e:
            print(f"# fallback: job {FALLBACK_JOB} granted 0 of {g.asked_slots} slots; "
                  f"Aggregator(page={FALLBACK_JOB}) says: {str(e)[:80]}...")
    with NativeParameterServer(args.members) as ps:
        specs = [RoleSpec("ps", "", FALLBACK_JOB, w, args.members, args.elems,
                          ps_address=ps.address) for w in range(args.members)]
        members = Members(ctx, specs, timeout=60 + 4 * args.seconds)
        try:
            fb = [members.phase((FALLBACK_JOB,), args.seconds)[FALLBACK_JOB]
                  for _ in range(args.reps)]
        finally:
            members.close()
    fb_rate = statistics.median(rate(f) for f in fb)
    print(f"fallback_ps_calls_per_s={fb_rate:.1f} switch_job{AGG_JOBS[0]}_alone_calls_per_s="
          f"{switch_rate:.1f} fallback_MBps={fb_rate * args.elems * 4 / 1e6:.2f}")
    figures["fallback_vs_switch"] = f"{fb_rate / switch_rate:.3f}" if switch_rate else "inf"
    figures["checked"] = "exact"
    return figures


def _bench_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true", help="1 repeat of 2 s, small tensors (< 60 s)")
    p.add_argument("--reps", type=int, default=3, help="repeats (alone x 3, shared) [3]")
    p.add_argument("--seconds", type=float, default=5.0, help="seconds per phase [5]")
    p.add_argument("--members", type=int, default=2, help="workers per aggregation job [2]")
    p.add_argument("--elems", type=int, default=16384, help="fp32 elements per allreduce [16384]")
    p.add_argument("--packet-elems", type=int, default=256, help="AGG_ELEMS [256]")
    p.add_argument("--table", type=int, default=256, help="replay table records [256]")
    p.add_argument("--capacity", type=int, default=1024, help="switch record memory [1024]")
    p.add_argument("--batch", type=int, default=32, help="learner sample batch [32]")
    p.add_argument("--prefill", type=int, default=64, help="records pushed before timing [64]")
    p.add_argument("--engine", default=os.environ.get("NRL_SOFTSWITCH_ENGINE") or "native",
                   help="soft switch engine [native]")


def _role_main(args: argparse.Namespace) -> None:
    spec = RoleSpec(args.role, args.url, args.page, args.worker, args.members, args.elems,
                    args.batch, args.prefill)
    client = make_client(spec)
    try:
        out = run_phase(spec, client, args.go, args.go + args.seconds, {})
    finally:
        client.close()
    last = out.pop("last", None)
    if last is not None and args.save:
        np.save(args.save, last)
    print(json.dumps(out))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd")
    _bench_args(p)
    r = sub.add_parser("role", help="one member, one phase (the rack test's hosts)")
    r.add_argument("role", choices=ROLES)
    r.add_argument("--url", required=True)
    r.add_argument("--page", type=int, required=True)
    r.add_argument("--worker", type=int, required=True)
    r.add_argument("--members", type=int, default=2)
    r.add_argument("--elems", type=int, default=4096)
    r.add_argument("--batch", type=int, default=32)
    r.add_argument("--prefill", type=int, default=64)
    r.add_argument("--go", type=float, required=True, help="Unix time to start")
    r.add_argument("--seconds", type=float, default=2.0)
    r.add_argument("--save", default="", help="aggregation: save the last result (.npy)")
    s = sub.add_parser("setup", help="admit and configure the three jobs; print the grants")
    s.add_argument("--url", required=True)
    s.add_argument("--members", type=int, default=2)
    s.add_argument("--table", type=int, default=256)
    s.add_argument("--packet-elems", type=int, default=256)
    c = sub.add_parser("counters", help="print every page's counters (JSON)")
    c.add_argument("--url", required=True)
    args = p.parse_args(argv)
    if args.cmd == "role":
        _role_main(args)
        return 0
    if args.cmd == "setup":
        grants = setup_jobs(args.url, args.members, args.table, args.packet_elems)
        print(json.dumps({j: g.__dict__ for j, g in grants.items()}))
        return 0
    if args.cmd == "counters":
        print(json.dumps(page_counters(args.url)))
        return 0
    if args.quick:
        args.reps, args.seconds, args.elems = 1, 2.0, 4096
    print(f"# context: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}, loopback UDP (the "
          f"links are not the bottleneck: the cores are, shared by the switch process, "
          f"{2 * args.members + 2} member processes and other work), soft switch "
          f"engine={args.engine}, "
          f"{args.members} workers x 2 aggregation jobs, {args.elems} fp32, replay B={args.batch};"
          " aim (issue 24) shared_vs_alone >= 0.9")
    try:
        figures = run_bench(args)
    except CheckError as e:
        print(f"CHECK FAILED: {e}", file=sys.stderr)
        return 1
    print(" ".join(f"{k}={v}" for k, v in figures.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
