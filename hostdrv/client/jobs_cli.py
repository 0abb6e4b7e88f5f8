"""``netrl jobs``: list, admit, release, renew and reclaim the jobs of a multi-job switch.

::

    netrl jobs soft://127.0.0.1:20050 --key admin.key list [--json]
    netrl jobs soft://127.0.0.1:20050 --key admin.key admit 1 --slots 16 --table 256 \\
        [--record-bytes 128] [--job-id 7] [--best-effort] [--lease 600]
    netrl jobs soft://127.0.0.1:20050 --key admin.key release 1
    netrl jobs soft://127.0.0.1:20050 --key job1.key --job-key renew 1 --lease 600
    netrl jobs soft://127.0.0.1:20050 --key admin.key reclaim

The allocator is :mod:`hostdrv.client.jobs` (``docs/protocol.md`` section 11); every
action but ``renew`` needs the admin key (``--key``, the switch's ``--control-key``).
``renew`` also takes the job's own key (``--job-key``: ``--key`` is then job J's key).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from typing import TextIO

from hostdrv.client.control import SwitchControl
from hostdrv.client.jobs import AdmissionError, admit, jobs_table, reclaim_expired, release, renew
from hostdrv.client.transport import SwitchTimeoutError
from hostdrv.errors import RegisterError
from hostdrv.wire.net import TransportError


def add_jobs_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``jobs`` command (``list``/``admit``/``release``/``renew``/``reclaim``) to ``sub``."""
    jobs = sub.add_parser(
        "jobs", help="list, admit, release, renew or reclaim the jobs of a switch",
        description="Admission of jobs onto a multi-job switch (docs/protocol.md section 11), "
                    "with the admin key: each job's slots and replay table.")
    jobs.add_argument("url", help="switch URL, e.g. soft://127.0.0.1:20050")
    jobs.add_argument("--key", default=None,
                      help="control key file: the admin key (--control-key of the switch)")
    jobs.add_argument("--job-key", action="store_true",
                      help="renew: --key is the renewed job's own key (--job-key J:FILE)")
    jobs.add_argument("--timeout", type=float, default=0.5, help="seconds per reply (default 0.5)")
    jobs.add_argument("--retries", type=int, default=4, help="requests before giving up")
    action = jobs.add_subparsers(dest="action", required=True)
    lst = action.add_parser("list", help="every job's share, lease and state")
    lst.add_argument("--json", action="store_true", help="one JSON list instead of a table")
    adm = action.add_parser("admit", help="give a disabled job free slots and a table, enable it")
    adm.add_argument("job", type=int, help="the job (register page) 0..JOBS-1")
    adm.add_argument("--slots", type=int, required=True, help="slots it needs (0: none)")
    adm.add_argument("--table", type=int, default=0,
                     help="replay table records, a power of two (default 0: no table)")
    adm.add_argument("--record-bytes", type=int, default=None,
                     help="bytes per record (default RPL_RECORD_BYTES)")
    adm.add_argument("--job-id", type=int, default=None, help="its JOB_ID (default: a free one)")
    adm.add_argument("--best-effort", action="store_true",
                     help="grant what is free (fewer slots, or none: host aggregation)")
    adm.add_argument("--lease", type=float, default=None,
                     help="seconds its lease runs (default: no lease)")
    rel = action.add_parser("release", help="disable a job (its slots and table become free)")
    rel.add_argument("job", type=int)
    ren = action.add_parser("renew", help="move a job's lease on")
    ren.add_argument("job", type=int)
    ren.add_argument("--lease", type=float, required=True, help="seconds from now")
    action.add_parser("reclaim", help="release every enabled job whose lease has passed")


def format_table(rows: list[dict[str, object]], now: float) -> str:
    """``list`` as text: one line per job."""
    head = (f"{'JOB':>3}  {'ON':>2}  {'ID':>3}  {'SLOTS':>9}  {'TABLE':>13}  {'REC':>5}  "
            f"{'OWNER':>10}  LEASE")
    lines = [head]
    for r in rows:
        count, cap = int(r["slot_count"]), int(r["table_records"])  # type: ignore[call-overload]
        base, tbase = int(r["slot_base"]), int(r["table_base"])  # type: ignore[call-overload]
        lease = int(r["lease"])  # type: ignore[call-overload]
        slots = f"{base}..{base + count - 1}" if count else "-"
        table = f"{tbase}..{tbase + cap - 1}" if cap else "-"
        left = ("-" if not lease else f"{lease} ({lease - now:+.0f} s)")
        owner = int(r.get("owner", 0))  # type: ignore[call-overload]
        claim = f"{owner:#010x}" if owner else "-"
        lines.append(f"{r['job']:>3}  {'on' if r['enabled'] else '--':>2}  {r['job_id']:>3}  "
                     f"{slots:>9}  {table:>13}  {r['record_bytes']:>5}  {claim:>10}  {left}")
    return "\n".join(lines) + "\n"


def run_jobs(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Execute ``netrl jobs``; 0 on success, 1 on an error (printed on stderr)."""
    out = out or sys.stdout
    job = args.job if args.job_key and args.action == "renew" else None
    try:
        ctl = SwitchControl(args.url, timeout=args.timeout, retries=args.retries,
                            key_file=args.key, job=job)
    except (TransportError, OSError, RegisterError) as e:
        print(f"netrl jobs: {e}", file=sys.stderr)
        return 1
    try:
        if args.action == "list":
            rows = [asdict(r) for r in jobs_table(ctl)]
            out.write(json.dumps(rows) + "\n" if args.json else format_table(rows, time.time()))
        elif args.action == "admit":
            g = admit(ctl, args.job, slots=args.slots, table_records=args.table,
                      record_bytes=args.record_bytes, job_id=args.job_id,
                      best_effort=args.best_effort, lease_s=args.lease)
            print(f"job {g.job} admitted: JOB_ID {g.job_id}, slots "
                  f"{g.slot_base}..{g.slot_base + g.slots - 1} ({g.slots} of {g.asked_slots})"
                  f", table {g.table_base}..{g.table_base + g.table_records - 1} "
                  f"({g.table_records} records of {g.record_bytes} bytes), lease {g.lease}"
                  + ("; no slots: its members aggregate on the hosts" if g.fallback else ""),
                  file=out)
        elif args.action == "release":
            release(ctl, args.job)
            print(f"job {args.job} released", file=out)
        elif args.action == "renew":
            print(f"job {args.job} lease {renew(ctl, args.job, args.lease)}", file=out)
        else:
            gone = reclaim_expired(ctl)
            print(f"reclaimed {', '.join(map(str, gone)) or 'nothing'}", file=out)
        return 0
    except (AdmissionError, ValueError, SwitchTimeoutError, TransportError) as e:
        print(f"netrl jobs: {e}", file=sys.stderr)
        return 1
    finally:
        ctl.close()
