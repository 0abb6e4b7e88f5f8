"""Job keys and admission on a multi-job soft switch (``docs/protocol.md`` sections 9 and 11).

A soft switch started as a child process with ``--jobs 4``, an admin key
(``--control-key``) and keys for jobs 1 and 2 (``--job-key J:FILE``):

* a job's key reads anything and writes its own page's non-admin job registers; a write to
  another job's page, to a global register or to an admin register is refused with status
  6 (:class:`ControlForbiddenError` naming the register and the job), changes nothing and
  is counted in ``SRV_CTRL_REFUSED``; a key id with no key, or a key under another job's
  id, is not authenticated (status 5);
* :mod:`hostdrv.client.jobs` admits jobs into free slot ranges and aligned tables, refuses
  naming what is taken, grants what is free with ``best_effort`` (none: the fallback),
  releases, renews leases (with the job's own key) and reclaims expired jobs; ``netrl jobs``
  and ``netrl regs --job`` drive the same from the command line.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import netrl
from hostdrv.client.control import SwitchControl
from hostdrv.client.jobs import (
    AdmissionError,
    admit,
    jobs_table,
    reclaim_expired,
    release,
    renew,
    shrink,
)
from hostdrv.client.transport import (
    CONTROL_KEY_ENV,
    ControlAuthError,
    ControlForbiddenError,
)
from hostdrv.errors import RegisterError
from hostdrv.switch.soft import DEFAULT_JOBS, SoftSwitch, SoftSwitchProcess, build_parser
from hostdrv.wire import regmap
from hostdrv.wire.consts import MAX_JOBS
from hostdrv.wire.control import ControlStatus, job_key_id

JOBS = 4
ENGINES = ("model", "native")


@dataclass
class Keyed:
    """A switch with an admin key and keys for jobs 1 and 2."""

    sw: SoftSwitchProcess
    admin: Path
    job_keys: dict[int, Path]

    def ctl(self, job: int | None = None, key: int | None = None) -> SwitchControl:
        """A control of ``job``'s page signed with job ``key``'s key (None: the admin's)."""
        path = self.admin if key is None else self.job_keys[key]
        return SwitchControl(self.sw.url, key_file=path, job=job,
                             key_id=0 if key is None else job_key_id(key))


@pytest.fixture(params=ENGINES)
def keyed(request: pytest.FixtureRequest, tmp_path: Path,
          monkeypatch: pytest.MonkeyPatch) -> Iterator[Keyed]:
    monkeypatch.delenv(CONTROL_KEY_ENV, raising=False)
    paths = {name: tmp_path / f"{name}.key" for name in ("admin", "job1", "job2")}
    for p in paths.values():
        p.write_bytes(os.urandom(24).hex().encode() + b"\n")
    args = ["--engine", request.param, "--jobs", str(JOBS), "--control-key", str(paths["admin"]),
            "--job-key", f"1:{paths['job1']}", "--job-key", f"2:{paths['job2']}"]
    with SoftSwitchProcess("127.0.0.1:0", args) as sw:
        yield Keyed(sw, paths["admin"], {1: paths["job1"], 2: paths["job2"]})


def _refused(admin: SwitchControl) -> int:
    return admin.read("SRV_CTRL_REFUSED")


def test_job_key_writes_only_its_own_pages_job_registers(keyed: Keyed) -> None:
    with keyed.ctl() as admin, keyed.ctl(job=1, key=1) as j1:
        assert admin.read("JOBS") == JOBS
        elems = admin.read("AGG_MAX_ELEMS") // 16 * 16
        # its own page's non-admin job registers: AGG_*, the member table, RPL_*, JOB_LEASE
        for name, value in (("AGG_ELEMS", elems), ("MEMBER_IP_3", 0x0A000003),
                            ("RPL_MIN_SIZE", 5), ("JOB_LEASE", int(time.time()) + 60)):
            j1.write(name, value)
            assert admin.read(name, job=1) == value == j1.read(name)
        assert j1.address("AGG_ELEMS") == regmap.job_address("AGG_ELEMS", 1)
        # it reads anything: other pages, global registers
        assert j1.read("AGG_ELEMS", job=2) == admin.read("AGG_ELEMS", job=2)
        assert j1.read("CTRL") == admin.read("CTRL")
        forbidden = [("AGG_ELEMS", 2), ("AGG_ELEMS", 0), ("MEMBER_IP_0", 3), ("CTRL", None),
                     ("UDP_PORT", None), ("JOB_ENABLE", None), ("JOB_ID", 1),
                     ("JOB_SLOT_COUNT", 1), ("JOB_RPL_CAP", 1), ("JOB_LEASE", 2)]
        for name, page in forbidden:
            target = admin.address(name, page)
            before, refused = admin.read(name, job=page), _refused(admin)
            value = 16 if before != 16 else 32
            with pytest.raises(ControlForbiddenError) as e:
                j1.write(name, value, job=page)
            assert e.value.status == ControlStatus.FORBIDDEN
            assert e.value.field == regmap.label(target)  # the register, NAME@j in page j
            assert "job 1" in str(e.value) and regmap.label(target) in str(e.value)
            assert admin.read(name, job=page) == before  # nothing changed
            assert _refused(admin) == refused + 1  # counted
        # the admin key writes everything, in any page
        admin.write("JOB_ID", 9, job=3)
        assert j1.read("JOB_ID", job=3) == 9
        with pytest.raises(RegisterError) as e:  # a page the switch does not serve
            admin.read("AGG_ELEMS", job=JOBS)
        assert e.value.status == ControlStatus.UNKNOWN_REGISTER


def test_key_ids_pick_the_key(keyed: Keyed) -> None:
    with keyed.ctl() as admin:
        refused = _refused(admin)
        # job 1's key signed as job 2's (key id 3): a wrong HMAC; job 3 has no key at all
        with SwitchControl(keyed.sw.url, key_file=keyed.job_keys[1], job=2,
                           key_id=job_key_id(2)) as bad, \
                pytest.raises(ControlAuthError, match="wrong HMAC"):
            bad.read("AGG_ELEMS")
        with SwitchControl(keyed.sw.url, key_file=keyed.job_keys[1], job=3,
                           key_id=job_key_id(3)) as none, \
                pytest.raises(ControlAuthError, match="no such key"):
            none.read("AGG_ELEMS")
        assert _refused(admin) > refused
        # job 2's key under its own id; and an admin in job 2's page (key id 0)
        with keyed.ctl(job=2, key=2) as j2, keyed.ctl(job=2) as admin2:
            j2.write("AGG_STALENESS", 7)
            assert admin2.read("AGG_STALENESS") == 7 and admin2.key_id == 0
            admin2.write("JOB_ID", 12)
            assert j2.read("JOB_ID") == 12


def test_job_keys_need_an_admin_key(capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ("1", "x:key", f"{MAX_JOBS}:key", "1:"):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["--job-key", bad])
        assert "expected J:FILE" in capsys.readouterr().err
    args = build_parser().parse_args(["--job-key", "1:a.key", "--job-key", "3:b.key"])
    assert dict(args.job_key) == {1: "a.key", 3: "b.key"} and args.jobs == DEFAULT_JOBS
    with pytest.raises(ValueError, match="need an admin key"):
        SoftSwitch("127.0.0.1:0", engine="model", jobs=JOBS, job_keys={1: b"secret"})
    with pytest.raises(ValueError, match="jobs 0..3"):
        SoftSwitch("127.0.0.1:0", engine="model", jobs=JOBS, control_key=b"admin",
                   job_keys={JOBS: b"secret"})


def test_admission_refusal_best_effort_release_and_leases(keyed: Keyed) -> None:
    with keyed.ctl() as admin, keyed.ctl(job=1, key=1) as j1:
        max_slots, capacity = admin.read("AGG_MAX_SLOTS"), admin.read("RPL_CAPACITY")
        rows = jobs_table(admin)
        assert [r.enabled for r in rows] == [True] + [False] * (JOBS - 1)  # the reset state
        # job 0 owns everything: a refusal names it, best effort grants nothing (fallback)
        with pytest.raises(AdmissionError, match=r"job 0 \(JOB_ID 0\) 0\.\.") as e:
            admit(admin, 1, slots=8)
        assert "taken" in str(e.value)
        g = admit(admin, 1, slots=8, best_effort=True)
        assert g.slots == 0 and g.fallback and admin.read("JOB_SLOT_COUNT", job=1) == 0
        assert admin.read("JOB_ENABLE") >> 1 & 1
        with pytest.raises(AdmissionError, match="enabled already"):
            admit(admin, 1, slots=8)
        release(admin, 1)
        assert not admin.read("JOB_ENABLE") >> 1 & 1
        # shrink job 0, then jobs fit beside it: the first free run, the first free table
        quarter, table = max_slots // 4, capacity // 4
        row0 = shrink(admin, 0, slots=quarter, table_records=table)
        assert (row0.slot_count, row0.table_records) == (quarter, table)
        g1 = admit(admin, 1, slots=quarter, table_records=table, record_bytes=64, lease_s=60)
        assert (g1.slot_base, g1.slots) == (row0.slots.stop, quarter)
        assert (g1.table_base, g1.table_records) == (row0.table.stop, table)
        assert g1.job_id == 1 and not g1.fallback
        row1 = jobs_table(admin)[1]
        assert (row1.enabled, row1.slots, row1.table, row1.record_bytes, row1.job_id) == \
            (True, range(g1.slot_base, g1.slot_base + quarter),
             range(g1.table_base, g1.table_base + table), 64, g1.job_id)
        # more than is free: refused naming both holders; best effort: the free rest
        with pytest.raises(AdmissionError) as e:
            admit(admin, 2, slots=max_slots)
        assert "job 0" in str(e.value) and "job 1" in str(e.value)
        with pytest.raises(AdmissionError, match="JOB_ID 1: enabled job 1 carries it"):
            admit(admin, 2, slots=1, job_id=g1.job_id)
        g2 = admit(admin, 2, slots=max_slots, table_records=capacity, best_effort=True)
        assert (g2.slot_base, g2.slots) == (row1.slots.stop, max_slots - row1.slots.stop)
        assert g2.table_records == capacity // 2 and g2.table_base == capacity // 2
        release(admin, 2)
        g2 = admit(admin, 2, slots=2, lease_s=3600)
        assert g2.slot_base == row1.slots.stop
        # leases: a job renews its own with its key, not another job's
        lease = renew(j1, 1, 120)
        assert admin.read("JOB_LEASE", job=1) == lease
        with pytest.raises(ControlForbiddenError):
            renew(j1, 2, 120)
        assert reclaim_expired(admin) == []  # nothing has passed
        assert reclaim_expired(admin, now=lease + 1) == [1]  # job 2's lease runs longer
        assert [r.job for r in jobs_table(admin) if r.enabled] == [0, 2]
        # job 0 has no lease (0): never reclaimed
        assert reclaim_expired(admin, now=time.time() + 10 ** 6) == [2]


def test_netrl_jobs_and_regs_job(keyed: Keyed, capsys: pytest.CaptureFixture[str]) -> None:
    url, key = keyed.sw.url, str(keyed.admin)
    with keyed.ctl() as admin:
        shrink(admin, 0, slots=admin.read("AGG_MAX_SLOTS") // 2)
    assert netrl.main(["jobs", url, "--key", key, "admit", "3", "--slots", "4", "--table", "0",
                       "--lease", "30"]) == 0
    assert "job 3 admitted" in capsys.readouterr().out
    assert netrl.main(["jobs", url, "--key", key, "list", "--json"]) == 0
    rows = {r["job"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows[3]["enabled"] and rows[3]["slot_count"] == 4 and rows[3]["lease"] > 0
    assert netrl.main(["regs", url, "--key", key, "--job", "3", "dump", "--json"]) == 0
    page = json.loads(capsys.readouterr().out)
    assert page["JOB_SLOT_BASE"] == rows[3]["slot_base"] and page["JOB_SLOT_COUNT"] == 4
    slots3 = regmap.job_address("JOB_SLOT_COUNT", 3)  # a page address, as given
    assert netrl.main(["regs", url, "--key", key, "read", hex(slots3)]) == 0
    assert capsys.readouterr().out.startswith(f"JOB_SLOT_COUNT@3 0x{slots3:03X} = ")
    assert netrl.main(["jobs", url, "--key", key, "admit", "3", "--slots", "1"]) == 1
    assert "enabled already" in capsys.readouterr().err
    assert netrl.main(["jobs", url, "--key", key, "release", "3"]) == 0
    assert netrl.main(["jobs", url, "--key", key, "reclaim"]) == 0
    assert "reclaimed nothing" in capsys.readouterr().out
    # a job's key through regs: its own page's registers, not another's
    j1 = str(keyed.job_keys[1])
    assert netrl.main(["regs", url, "--key", j1, "--job", "1", "--job-key", "write",
                       "AGG_STALENESS", "3"]) == 0
    assert "AGG_STALENESS@1" in capsys.readouterr().out
    assert netrl.main(["regs", url, "--key", j1, "--job", "1", "--job-key", "write",
                       "JOB_SLOT_COUNT", "3"]) == 1
    assert "FORBIDDEN" in capsys.readouterr().err
