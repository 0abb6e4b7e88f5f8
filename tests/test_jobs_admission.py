"""Several allocators admitting on one switch at once (``docs/protocol.md`` section 11, Admission).

Two programs that share a switch each run their own allocator: neither may get a job the
other holds, and neither may clear the other's ``JOB_ENABLE`` bit (a read-modify-write of
the whole mask could). The switch's test-and-set registers keep them apart:
``JOB_OWNER`` (a page is claimed by one token at a time) and the ``JOB_ENABLE_SET`` /
``JOB_ENABLE_CLR`` pair (set refused when the job is enabled already or collides; clear
touches its own bits only). On a soft switch with the model and with the native engine:

* the rules one by one, through the client's calls;
* allocator threads, each with its own control connection, admitting, checking and
  releasing jobs as fast as they can: every grant is its holder's alone (its token in
  ``JOB_OWNER``, its bit set; its slots overlapping no other enabled job's in every read of
  the whole table that two reads in a row confirm: a table read is register by register)
  for as long as it is held, and the switch ends with no job enabled or claimed;
* the torch backend's :func:`~hostdrv.client.torch_jobs.claim` from two "programs" at once
  (no shared admission lock): two different pages.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from hostdrv.client.control import SwitchControl
from hostdrv.client.jobs import (
    AdmissionError,
    JobRow,
    admit,
    claim_page,
    jobs_table,
    new_token,
    release,
)
from hostdrv.client.torch_jobs import claim
from hostdrv.errors import RegisterError
from hostdrv.switch.soft import SoftSwitch

JOBS = 4
ENGINES = ("model", "native")


@pytest.fixture(params=ENGINES)
def switch(request: pytest.FixtureRequest) -> Iterator[SoftSwitch]:
    """A soft switch of four jobs, none enabled (job 0's reset share released)."""
    with SoftSwitch("127.0.0.1:0", engine=request.param, jobs=JOBS) as sw:
        with SwitchControl(sw.url) as admin:
            release(admin, 0)
        yield sw


def test_the_rules_through_the_client(switch: SoftSwitch) -> None:
    with SwitchControl(switch.url) as a, SwitchControl(switch.url) as b:
        ta, tb = new_token(), new_token()
        assert claim_page(a, 1, ta)
        assert not claim_page(b, 1, tb)  # claimed: b's token refused, a's kept
        assert a.read("JOB_OWNER", job=1) == ta
        with pytest.raises(AdmissionError, match="another allocator has claimed it"):
            admit(b, 1, slots=4, owner=tb)
        assert a.read("JOB_OWNER", job=1) == ta  # b's refusal gave nothing back of a's
        ga = admit(a, 1, slots=4, owner=ta)
        assert (ga.owner, a.read("JOB_ENABLE")) == (ta, 0b10)
        gb = admit(b, 2, slots=4, owner=tb)
        with pytest.raises(RegisterError, match="enabled already"):
            b.write("JOB_ENABLE_SET", 0b100)
        release(a, 1)  # clears its own bit only
        assert a.read("JOB_ENABLE") == 0b100
        assert (a.read("JOB_OWNER", job=1), a.read("JOB_OWNER", job=2)) == (0, gb.owner)
        assert a.read("JOB_ENABLE_SET") == a.read("JOB_ENABLE_CLR") == 0  # they read 0


def _stable_table(ctl: SwitchControl) -> list[JobRow] | None:
    """The job table when two reads in a row agree (a read is register by register: while
    other allocators write, one read may mix two moments), else ``None``."""
    rows = jobs_table(ctl)
    for _ in range(3):
        again = jobs_table(ctl)
        if again == rows:
            return rows
        rows = again
    return None


def _allocator(url: str, rounds: int, violations: list[str], done: list[int],
               max_slots: int, overlap_checks: list[int]) -> None:
    token, held = new_token(), 0
    with SwitchControl(url, timeout=2.0) as ctl:
        while held < rounds:
            rows = jobs_table(ctl)
            free = [r.job for r in rows if not r.enabled and r.owner == 0]
            if not free:
                time.sleep(0.001)
                continue
            try:
                g = admit(ctl, free[-1] if token & 1 else free[0], slots=max_slots // 4,
                          owner=token)
            except AdmissionError:
                continue  # another allocator was faster: look again
            for _ in range(2):  # held: it stays ours (its page is only ours to write) ...
                enabled, owner = ctl.read("JOB_ENABLE"), ctl.read("JOB_OWNER", job=g.job)
                if not (enabled >> g.job & 1 and owner == token):
                    violations.append(f"job {g.job} of {token:#x} taken away: JOB_ENABLE "
                                      f"{enabled:#b}, JOB_OWNER {owner:#x}")
                rows = _stable_table(ctl)  # ... and overlaps no enabled job
                if rows is None:
                    continue
                overlap_checks.append(1)
                mine = rows[g.job]
                for r in rows:
                    if r.job != g.job and r.enabled and set(r.slots) & set(mine.slots):
                        violations.append(f"job {g.job} of {token:#x} overlaps {r}")
            release(ctl, g.job)
            held += 1
    done.append(held)


def test_allocators_at_once_never_share_or_clear_a_job(switch: SoftSwitch) -> None:
    """Six allocators, four pages, a quarter of the slots each: every grant is exclusive."""
    with SwitchControl(switch.url) as admin:
        max_slots = admin.read("AGG_MAX_SLOTS")
    violations: list[str] = []
    done: list[int] = []
    checks: list[int] = []
    threads = [threading.Thread(target=_allocator,
                                args=(switch.url, 12, violations, done, max_slots, checks))
               for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert violations == []
    assert done == [12] * 6
    assert checks  # the overlap check ran on consistent reads of the table
    with SwitchControl(switch.url) as admin:
        rows = jobs_table(admin)
    assert [(r.enabled, r.owner) for r in rows] == [(False, 0)] * JOBS


def test_two_programs_claim_torch_jobs_at_once(switch: SoftSwitch) -> None:
    """The torch backend's admission from two programs (each its own lock): two pages."""
    out: list[object] = []

    def program() -> None:
        with SwitchControl(switch.url, timeout=2.0) as ctl:
            out.append(claim(ctl, members=2, slots=None, packet_elems=64, lease_s=30.0,
                             world=False))

    threads = [threading.Thread(target=program) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    jobs = sorted(out, key=lambda j: j.page)  # type: ignore[attr-defined]
    assert len(jobs) == 2 and all(j.why is None for j in jobs), jobs  # type: ignore[attr-defined]
    assert jobs[0].page != jobs[1].page  # type: ignore[attr-defined]
    with SwitchControl(switch.url) as admin:
        rows = jobs_table(admin)
    for j in jobs:
        assert rows[j.page].enabled and rows[j.page].owner == j.owner  # type: ignore[attr-defined]
