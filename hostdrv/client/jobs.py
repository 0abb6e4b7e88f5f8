"""Admission of jobs onto a multi-job switch: who gets which slots and which replay table.

A switch serves ``JOBS`` jobs at once, each in its own register page
(``docs/protocol.md`` section 11); the switch only refuses overlapping shares, it never
chooses them. This module is the host's allocator, run with the admin key over an
ordinary :class:`~hostdrv.client.control.SwitchControl`:

* :func:`admit` finds a free range of slots and a free aligned power-of-two replay table
  among the enabled jobs, carves them into a disabled job's page and enables it; when
  they are not free it refuses naming what is taken, or, with ``best_effort``, grants
  the slots that are free (fewer, or none: the job's members then aggregate on the
  hosts, :mod:`hostdrv.peers.ps`);
* :func:`release` disables a job (its slots and table are free again) and frees its claim;
* :func:`renew` moves a job's lease (``JOB_LEASE``) on; a job's own key may do it;
* :func:`reclaim_expired` releases every enabled job whose lease has passed;
* :func:`shrink` narrows an enabled job's share in place (an administrator shrinks a job
  before giving its slots to another: at reset job 0 owns everything);
* :func:`jobs_table` is every job's share, enabled or not.

Writes are ordered so the switch never refuses one: a job is carved while disabled
(its count and capacity first set to 0, then its bases, then its sizes) and enabled
last, and the switch checks the enable against every enabled job. ``netrl jobs``
(:mod:`hostdrv.client.jobs_cli`) runs these from the command line.

Several allocators may admit on one switch at once (two programs sharing a switch): the
switch's test-and-set registers keep them apart. :func:`admit` first claims the job's
page (``JOB_OWNER``: a token is refused while another one is there), carves it, and
enables it with ``JOB_ENABLE_SET`` (refused when the job is enabled already or now
collides with a job another allocator enabled meanwhile: nothing changed, the claim is
given back and :class:`AdmissionError` says why); :func:`release` clears its bit with
``JOB_ENABLE_CLR``. No allocator rewrites ``JOB_ENABLE`` as a whole, so none clears
another's bit.
"""

from __future__ import annotations

import logging
import secrets
import time
from dataclasses import dataclass

from hostdrv.client.control import SwitchControl
from hostdrv.errors import NetrlError, RegisterError

log = logging.getLogger(__name__)


class AdmissionError(NetrlError, RuntimeError):
    """A job could not be admitted: its job, its id, its slots or its table are taken
    (the message names by whom), or what it asked for cannot exist on this switch."""


@dataclass(frozen=True)
class JobRow:
    """One job's page as :func:`jobs_table` reads it.

    Attributes
    ----------
    job:
        The job (register page) 0 … ``JOBS`` − 1.
    enabled:
        Its ``JOB_ENABLE`` bit.
    job_id:
        ``JOB_ID``: the header byte that selects it.
    slot_base, slot_count:
        ``JOB_SLOT_BASE``, ``JOB_SLOT_COUNT``: its range of the slot memory.
    table_base, table_records, record_bytes:
        ``JOB_RPL_BASE``, ``JOB_RPL_CAP``, ``JOB_RPL_RECORD``: its replay table.
    lease:
        ``JOB_LEASE``, Unix seconds (0: none).
    owner:
        ``JOB_OWNER``: the token of the allocator that claimed it (0: unclaimed).
    """

    job: int
    enabled: bool
    job_id: int
    slot_base: int
    slot_count: int
    table_base: int
    table_records: int
    record_bytes: int
    lease: int
    owner: int = 0

    @property
    def slots(self) -> range:
        """Its slots in the slot memory."""
        return range(self.slot_base, self.slot_base + self.slot_count)

    @property
    def table(self) -> range:
        """Its records in the record memory."""
        return range(self.table_base, self.table_base + self.table_records)

    def expired(self, now: float) -> bool:
        """Whether it holds a lease (not 0) that has passed at ``now`` (Unix seconds)."""
        return self.lease != 0 and self.lease < now


@dataclass(frozen=True)
class Grant:
    """What :func:`admit` gave a job.

    Attributes
    ----------
    job:
        The job (register page): clients pass it as ``SwitchControl(..., job=)``,
        ``Aggregator(..., page=)``, ``ReplayClient(..., table=)``.
    job_id:
        Its ``JOB_ID``.
    slot_base, slots:
        Its slot range (``slots`` may be below ``asked_slots`` with ``best_effort``).
    asked_slots:
        The slots it asked for.
    table_base, table_records, record_bytes:
        Its replay table (``table_records`` 0: none).
    lease:
        ``JOB_LEASE`` written (0: none).
    owner:
        The ``JOB_OWNER`` token it holds the job with (give it to :func:`release`).
    """

    job: int
    job_id: int
    slot_base: int
    slots: int
    asked_slots: int
    table_base: int
    table_records: int
    record_bytes: int
    lease: int
    owner: int = 0

    @property
    def fallback(self) -> bool:
        """Whether it asked for slots and got none: its members aggregate on the hosts."""
        return self.asked_slots > 0 and self.slots == 0


def jobs_table(ctl: SwitchControl) -> list[JobRow]:
    """Every job's page (``JOBS`` of them), enabled or not."""
    enabled = ctl.read("JOB_ENABLE")
    return [JobRow(j, bool(enabled >> j & 1), ctl.read("JOB_ID", job=j),
                   ctl.read("JOB_SLOT_BASE", job=j), ctl.read("JOB_SLOT_COUNT", job=j),
                   ctl.read("JOB_RPL_BASE", job=j), ctl.read("JOB_RPL_CAP", job=j),
                   ctl.read("JOB_RPL_RECORD", job=j), ctl.read("JOB_LEASE", job=j),
                   ctl.read("JOB_OWNER", job=j))
            for j in range(ctl.read("JOBS"))]


def new_token() -> int:
    """A fresh ``JOB_OWNER`` token: random, 32 bits, never 0."""
    return secrets.randbits(32) or 1


def claim_page(ctl: SwitchControl, job: int, owner: int) -> bool:
    """Claim job ``job``'s page with token ``owner`` (``JOB_OWNER``, a test-and-set at the
    switch): ``False`` when another allocator holds it."""
    try:
        ctl.write("JOB_OWNER", owner, job=job)
    except RegisterError:
        return False
    return True


def _taken(rows: list[JobRow], what: str) -> str:
    parts = [f"job {r.job} (JOB_ID {r.job_id}) {_span(getattr(r, what))}"
             for r in rows if len(getattr(r, what))]
    return "; ".join(parts) or "nothing"


def _span(r: range) -> str:
    return f"{r.start}..{r.stop - 1}" if len(r) else "none"


def _free_runs(size: int, taken: list[range]) -> list[range]:
    """The maximal runs of 0 … size − 1 that no range of ``taken`` covers."""
    runs, at = [], 0
    for r in sorted((r for r in taken if len(r)), key=lambda r: r.start):
        if r.start > at:
            runs.append(range(at, r.start))
        at = max(at, r.stop)
    if at < size:
        runs.append(range(at, size))
    return runs


def _free_table(capacity: int, records: int, taken: list[range]) -> int | None:
    """The lowest base, a multiple of ``records``, whose table overlaps nothing taken."""
    for base in range(0, capacity - records + 1, records):
        if not any(r.start < base + records and base < r.stop for r in taken if len(r)):
            return base
    return None


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def admit(ctl: SwitchControl, job: int, *, slots: int, table_records: int = 0,
          record_bytes: int | None = None, job_id: int | None = None, best_effort: bool = False,
          lease_s: float | None = None, owner: int | None = None) -> Grant:
    """Claim disabled job ``job``, give it a free slot range and replay table, then enable it.

    Parameters
    ----------
    ctl:
        A control signed with the admin key (``--control-key``).
    job:
        The job (register page) to admit: 0 … ``JOBS`` − 1, not enabled.
    slots:
        Slots it needs (one contiguous range of the slot memory; 0: none).
    table_records:
        Records of its replay table (0: no table; else a power of two up to
        ``RPL_CAPACITY``), placed at a base that is a multiple of it.
    record_bytes:
        Bytes per record (a multiple of 64 up to ``RPL_RECORD_BYTES``, the default).
    job_id:
        Its ``JOB_ID`` (default: ``job`` when no enabled job carries it, else the lowest
        free id).
    best_effort:
        Grant what is free instead of refusing: the largest free slot range up to
        ``slots`` (possibly none: a log line says the job falls back to the hosts) and the
        largest free aligned table up to ``table_records`` (possibly none).
    lease_s:
        Seconds from now its lease (``JOB_LEASE``) runs; ``None``: no lease (0).
    owner:
        The ``JOB_OWNER`` token to claim the job with (default: :func:`new_token`); the
        grant carries it.

    Raises
    ------
    AdmissionError
        The job is enabled already, claimed by another allocator, or the switch has no
        such job; its id is taken; its slots or table are not free (without
        ``best_effort``): the message names the jobs that hold them. Another allocator
        enabling a colliding job between this one's reads and its enable is refused by the
        switch and raised here too (the claim is given back; nothing else changed).
    ValueError
        ``slots``, ``table_records`` or ``record_bytes`` cannot exist on this switch.
    """
    rows = jobs_table(ctl)
    if not 0 <= job < len(rows):
        raise AdmissionError(f"cannot admit job {job}: this switch serves jobs 0..{len(rows) - 1}"
                             " (JOBS)")
    if rows[job].enabled:
        raise AdmissionError(f"cannot admit job {job}: it is enabled already (JOB_ID "
                             f"{rows[job].job_id}, slots {_span(rows[job].slots)}, table "
                             f"{_span(rows[job].table)}); release it first")
    token = new_token() if owner is None else owner
    if len(rows) > 1 and not claim_page(ctl, job, token):
        raise AdmissionError(f"cannot admit job {job}: another allocator has claimed it "
                             f"(JOB_OWNER {ctl.read('JOB_OWNER', job=job):#x})")
    try:
        return _carve(ctl, rows, job, token, slots=slots, table_records=table_records,
                      record_bytes=record_bytes, job_id=job_id, best_effort=best_effort,
                      lease_s=lease_s)
    except BaseException:
        if len(rows) > 1:
            ctl.write("JOB_OWNER", 0, job=job)  # give the claim back
        raise


def _carve(ctl: SwitchControl, rows: list[JobRow], job: int, token: int, *, slots: int,
           table_records: int, record_bytes: int | None, job_id: int | None,
           best_effort: bool, lease_s: float | None) -> Grant:
    """:func:`admit` once job ``job`` is claimed with ``token``."""
    max_slots, capacity = ctl.read("AGG_MAX_SLOTS"), ctl.read("RPL_CAPACITY")
    max_record = ctl.read("RPL_RECORD_BYTES")
    rb = max_record if record_bytes is None else record_bytes
    if not 0 <= slots <= max_slots:
        raise ValueError(f"bad slots={slots}: the slot memory holds {max_slots} (AGG_MAX_SLOTS)")
    if table_records and not (_is_pow2(table_records) and table_records <= capacity):
        raise ValueError(f"bad table_records={table_records}: 0 or a power of two up to "
                         f"RPL_CAPACITY ({capacity})")
    if not (64 <= rb <= max_record and rb % 64 == 0):
        raise ValueError(f"bad record_bytes={rb}: a multiple of 64 up to RPL_RECORD_BYTES "
                         f"({max_record})")
    others = [r for r in rows if r.enabled and r.job != job]
    ids = {r.job_id: r.job for r in others}
    if job_id is None:
        job_id = job if job not in ids else min(set(range(256)) - set(ids))
    elif job_id in ids:
        raise AdmissionError(f"cannot admit job {job} with JOB_ID {job_id}: enabled job "
                             f"{ids[job_id]} carries it")
    runs = _free_runs(max_slots, [r.slots for r in others])
    fit = next((r for r in runs if len(r) >= slots), None)
    if slots == 0:
        slot_base, got = 0, 0
    elif fit is not None:
        slot_base, got = fit.start, slots
    elif best_effort:
        best = max(runs, key=len, default=range(0))
        slot_base, got = (best.start if len(best) else 0), len(best)
    else:
        raise AdmissionError(f"cannot admit job {job}: no {slots} free slots in a row of "
                             f"{max_slots} (largest free run {max((len(r) for r in runs), default=0)}"
                             f"); taken: {_taken(others, 'slots')}")
    tables = [r.table for r in others]
    records, table_base = table_records, 0
    if records:
        base = _free_table(capacity, records, tables)
        while base is None and best_effort and records > 1:
            records //= 2
            base = _free_table(capacity, records, tables)
        if base is None and not best_effort:
            raise AdmissionError(f"cannot admit job {job}: no free table of {table_records} "
                                 f"records (aligned, in {capacity}); taken: "
                                 f"{_taken(others, 'table')}")
        records, table_base = (records, base) if base is not None else (0, 0)
    lease = 0 if lease_s is None else int(time.time() + lease_s)
    # carve the disabled job: sizes to 0 first, so every base and size written is legal
    ctl.write("JOB_SLOT_COUNT", 0, job=job)
    ctl.write("JOB_SLOT_BASE", slot_base, job=job)
    ctl.write("JOB_SLOT_COUNT", got, job=job)
    ctl.write("JOB_RPL_CAP", 0, job=job)
    ctl.write("JOB_RPL_BASE", table_base, job=job)
    ctl.write("JOB_RPL_CAP", records, job=job)
    ctl.write("JOB_RPL_RECORD", rb, job=job)
    ctl.write("JOB_ID", job_id, job=job)
    ctl.write("JOB_LEASE", lease, job=job)
    try:  # a test-and-set, checked against every enabled job (others may have come meanwhile)
        ctl.write("JOB_ENABLE_SET", 1 << job)
    except RegisterError as e:
        raise AdmissionError(f"cannot admit job {job}: the switch refused to enable it ({e}); "
                             "another allocator admitted a job meanwhile: try again") from e
    grant = Grant(job, job_id, slot_base, got, slots, table_base, records, rb, lease, token)
    if grant.fallback:
        log.warning("job %d (JOB_ID %d) admitted with no slots (asked %d; taken: %s): its "
                    "members aggregate on the hosts", job, job_id, slots, _taken(others, "slots"))
    elif got < slots:
        log.warning("job %d (JOB_ID %d) admitted with %d of the %d slots it asked for", job,
                    job_id, got, slots)
    return grant


def shrink(ctl: SwitchControl, job: int, *, slots: int | None = None,
           table_records: int | None = None) -> JobRow:
    """Narrow job ``job``'s share in place (enabled or not): its first ``slots`` slots and
    its first ``table_records`` records (a power of two, or 0), bases unchanged. Frees the
    job's slot copies (a slot write) and empties its table (a table write).

    Raises
    ------
    ValueError
        A size larger than the job has (that would be growing it: :func:`admit`).
    """
    row = jobs_table(ctl)[job]
    if slots is not None:
        if not 0 <= slots <= row.slot_count:
            raise ValueError(f"bad slots={slots}: job {job} has {row.slot_count}; shrink only")
        ctl.write("JOB_SLOT_COUNT", slots, job=job)
    if table_records is not None:
        if table_records > row.table_records or (table_records and not _is_pow2(table_records)):
            raise ValueError(f"bad table_records={table_records}: job {job} has "
                             f"{row.table_records}; shrink only, to 0 or a power of two")
        ctl.write("JOB_RPL_CAP", table_records, job=job)
    return jobs_table(ctl)[job]


def release(ctl: SwitchControl, job: int) -> None:
    """Disable job ``job`` (its teardown) and free its claim (``JOB_OWNER``): its slots and
    table are free for others, its slot copies freed and its table emptied by the switch.
    Clears its bit alone (``JOB_ENABLE_CLR``). Needs the admin key."""
    if ctl.read("JOB_ENABLE") >> job & 1:
        ctl.write("JOB_ENABLE_CLR", 1 << job)
    if ctl.read("JOBS") > 1 and ctl.read("JOB_OWNER", job=job):
        ctl.write("JOB_OWNER", 0, job=job)


def renew(ctl: SwitchControl, job: int, lease_s: float) -> int:
    """Move job ``job``'s lease to ``lease_s`` seconds from now; returns ``JOB_LEASE``.

    Works with the job's own key (``SwitchControl(url, key_file=..., job=job, key_id=job + 1)``): its
    clients call it while they run."""
    lease = int(time.time() + lease_s)
    ctl.write("JOB_LEASE", lease, job=job)
    return lease


def reclaim_expired(ctl: SwitchControl, now: float | None = None) -> list[int]:
    """Release every enabled or claimed job whose lease (not 0) has passed at ``now``
    (default: the clock); returns them. (A claimed, disabled page holds the lease its
    allocator carved before it died; one claimed with no lease is freed by hand:
    ``netrl jobs release``.)"""
    at = time.time() if now is None else now
    gone = [r.job for r in jobs_table(ctl) if (r.enabled or r.owner) and r.expired(at)]
    for j in gone:
        log.warning("job %d: lease passed, reclaimed (disabled)", j)
        release(ctl, j)
    return gone


__all__ = ["AdmissionError", "Grant", "JobRow", "admit", "claim_page", "jobs_table", "new_token",
           "reclaim_expired", "release", "renew", "shrink"]
