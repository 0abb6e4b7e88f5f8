"""Each ``netrl`` process group its own switch job (``docs/torch.md``, "Subgroups and switch jobs").

A switch serves ``JOBS`` jobs at once, each in a register page with its own slots
(``docs/protocol.md`` section 11). The world group and every
``new_group(..., backend="netrl")`` admit a job of their own on the same switch:

* the group's rank 0 (its group rank 0) takes the admission lock (a key in the root of
  the group's store: the groups of one program admit one at a time), reclaims the jobs
  whose lease passed, and admits a job on the lowest disabled page it can claim with
  :func:`hostdrv.client.jobs.admit` (``best_effort``, a lease of ``lease_s``; the
  switch's test-and-set registers ``JOB_OWNER`` and ``JOB_ENABLE_SET`` keep programs that
  share the switch apart: a page another program claimed or enabled meanwhile is passed
  over): its share is ``NetrlOptions.slots`` slots, by default
  ``AGG_MAX_SLOTS // JOBS`` (:func:`default_share`), so the world group leaves slots for
  later groups. A switch still at its reset share (job 0 enabled alone, owning every slot,
  no lease, no owner: nobody admitted it) is taken as unclaimed: the world group claims
  and adopts job 0 (its
  slots narrowed to the share, a lease set; what others configured in it, such as the
  replay table and members a launcher set up there, stays), a subgroup disables it first.
  Releasing an adopted job 0 gives the switch back its reset share when no other job is
  enabled;
* it configures aggregation on that page (members = the group size, slots = the grant)
  and publishes a :class:`GroupJob` (URL, page, ``JOB_ID``) in the group's store; every
  rank builds its :class:`~hostdrv.Aggregator` with ``page=``;
* its heartbeat thread renews the lease (:class:`JobLease`); its shutdown releases the job;
* a group that gets no job (no slots free, no page free, a switch of one job, more than
  one switch's members in a subgroup, a world group on a leaf/root hierarchy) aggregates
  on the hosts: through a native parameter server rank 0 starts
  (:mod:`hostdrv.peers.ps`, sums in rank order, exact), or on gloo when that cannot be set
  up on every rank; a ``logging`` warning names the group, the job and why, and
  :meth:`~hostdrv.client.torch_backend.NetrlGroup.stats` counts each such call as
  ``host_fallback``.

A subgroup finds the switch the way the world group does (``NETRL_SWITCH`` /
``NetrlOptions.switch``) or, for an embedded soft switch, from the world ``netrl`` group
live in the process of its rank 0 (every rank of a subgroup is a world rank).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from typing import Any

from hostdrv.client.control import SwitchControl
from hostdrv.client.jobs import (
    AdmissionError,
    admit,
    claim_page,
    jobs_table,
    new_token,
    reclaim_expired,
    release,
    renew,
    shrink,
)
from hostdrv.client.torch_worker import _live
from hostdrv.client.transport import switch_address
from hostdrv.wire.protocol import MAX_MEMBERS

log = logging.getLogger(__name__)

DEFAULT_LEASE = 60.0
"""Seconds a group's ``JOB_LEASE`` runs unless ``NetrlOptions.lease``; its heartbeat
renews it every quarter of that."""
ADMISSION_KEY = "netrl/admission"
"""Key of the admission lock in the root of the groups' store."""
ADMIT_TRIES = 8
"""Admissions a group tries (a page another program claimed or enabled meanwhile is passed
over) before it falls back to the hosts."""
LOCK_STALE = 60.0
"""Seconds after which a holder's admission lock is taken as abandoned (its process died)."""
STORE_HOST_OK_KEY = "netrl/host_ok/"
"""Store key prefix (``netrl/host_ok/<rank>``): whether a rank reached the parameter server."""


@dataclass(frozen=True)
class GroupJob:
    """Where a group's all-reduces go; rank 0 publishes it in the group's store.

    Attributes
    ----------
    url:
        The switch (``None``: no switch to be had).
    page, job_id, slots:
        The job's register page, its ``JOB_ID`` and its slots (the switch path).
    host:
        ``None``: the switch; ``"ps"``: the native parameter server at ``ps``;
        ``"gloo"``: gloo. Both host paths are the fallback (``why``).
    ps:
        The parameter server's (host, port).
    why:
        Why the group aggregates on the hosts.
    adopted:
        The job is job 0 of a switch found at its reset share (:func:`claim`): released,
        it goes back to that share.
    owner:
        The ``JOB_OWNER`` token the group holds its job with (0: none, a one-job switch).
    """

    url: str | None
    page: int = 0
    job_id: int = 0
    slots: int = 0
    host: str | None = None
    ps: tuple[str, int] | None = None
    why: str | None = None
    adopted: bool = False
    owner: int = 0

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> GroupJob:
        d = json.loads(text)
        if d.get("ps") is not None:
            d["ps"] = (str(d["ps"][0]), int(d["ps"][1]))
        return cls(**d)


def default_share(max_slots: int, jobs: int) -> int:
    """A group's slots unless ``NetrlOptions.slots``: ``AGG_MAX_SLOTS // JOBS`` (at least 1)."""
    return max(1, max_slots // max(1, jobs))


def root_store(store: Any) -> Any:
    """The store under every ``PrefixStore`` around ``store`` (the one all groups share)."""
    while hasattr(store, "underlying_store"):
        store = store.underlying_store
    return store


@contextmanager
def admission_lock(store: Any, timeout: float) -> Iterator[None]:
    """Hold the admission lock of the program (``store``: its root store) for the block.

    Raises
    ------
    TimeoutError
        Not had within ``timeout`` seconds.
    """
    token = f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}:{time.time():.3f}"
    deadline = time.monotonic() + timeout
    while True:
        held = store.compare_set(ADMISSION_KEY, "", token).decode()
        if held == token:
            break
        try:
            since = float(held.rsplit(":", 1)[1])
        except (IndexError, ValueError):
            since = time.time()
        if time.time() - since > LOCK_STALE and \
                store.compare_set(ADMISSION_KEY, held, token).decode() == token:
            log.warning("netrl: the admission lock held by %s since %.0f s was abandoned: "
                        "taken over", held, time.time() - since)
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"netrl: the admission lock ({ADMISSION_KEY}) is held by "
                               f"{held} for longer than {timeout:g} s")
        time.sleep(0.01)
    try:
        yield
    finally:
        try:
            store.compare_set(ADMISSION_KEY, token, "")
        except Exception:  # noqa: BLE001 - the store may be gone at teardown
            pass


def world_switch(groups: Iterable[Any]) -> tuple[str | None, str | None]:
    """The switch URL of the live world ``netrl`` group among ``groups`` (this process's),
    or why a subgroup cannot have a job there; ``(None, None)``: no world group."""
    for g in groups:
        if getattr(g, "world", False) and not g._closed and g.url:
            if g._plan is not None:
                return None, (f"the world group runs a leaf/root hierarchy of {g.size()} ranks "
                              "(a subgroup job needs a switch every member reaches: set "
                              "NETRL_SWITCH)")
            return str(g.url), None
    return None, None


def _enabled(rows: list[Any]) -> str:
    return "; ".join(f"job {r.job} (JOB_ID {r.job_id}) slots {r.slot_base}.."
                     f"{r.slot_base + r.slot_count - 1}" if r.slot_count else
                     f"job {r.job} (JOB_ID {r.job_id}) no slots"
                     for r in rows if r.enabled) or "none"


def at_reset_share(rows: list[Any], max_slots: int) -> bool:
    """Whether the switch is at its reset share: job 0 enabled alone, with every slot, no
    lease and no owner (nobody admitted it)."""
    return bool(rows[0].enabled and rows[0].lease == 0 and rows[0].slot_count == max_slots
                and rows[0].owner == 0 and not any(r.enabled for r in rows[1:]))


def claim(ctl: SwitchControl, *, members: int, slots: int | None, packet_elems: int | None,
          lease_s: float, world: bool) -> GroupJob:
    """Admit and configure a job for a group of ``members`` ranks (call under
    :func:`admission_lock`, with the admin's control). Returns the job, or a
    :class:`GroupJob` with ``why`` set when the group must aggregate on the hosts.

    A switch of one job (``JOBS`` = 1) keeps its fixed share: the world group configures
    job 0 (``slots`` or every slot), a subgroup falls back."""
    url = ctl.url
    jobs, max_slots = ctl.read("JOBS"), ctl.read("AGG_MAX_SLOTS")
    elems = packet_elems or ctl.read("AGG_MAX_ELEMS")
    if members > MAX_MEMBERS:
        return GroupJob(url, why=f"{members} ranks: one switch job aggregates at most "
                        f"{MAX_MEMBERS} members (leaf/root hierarchies are the world group's)")
    if jobs == 1:
        if not world:
            return GroupJob(url, why=f"the switch at {url} serves one job (JOBS=1), the "
                            "world group's")
        ctl.configure_aggregation(members=members, slots=slots or max_slots,
                                  packet_elems=elems, dtype="fp32", mode="sync")
        return GroupJob(url, 0, ctl.read("JOB_ID"), min(slots or max_slots, max_slots))
    reclaim_expired(ctl)
    rows = jobs_table(ctl)
    token = new_token()
    if at_reset_share(rows, max_slots) and claim_page(ctl, 0, token):
        if world:  # adopt job 0: keep its table and members, narrow its slots to the share
            share = min(slots or default_share(max_slots, jobs), max_slots)
            shrink(ctl, 0, slots=share)
            renew(ctl, 0, lease_s)
            ctl.configure_aggregation(members=members, slots=share, packet_elems=elems,
                                      dtype="fp32", mode="sync")
            return GroupJob(url, 0, ctl.read("JOB_ID"), share, adopted=True, owner=token)
        release(ctl, 0)  # the reset share: nobody admitted job 0
    share = slots or default_share(max_slots, jobs)
    for _ in range(ADMIT_TRIES):
        rows = jobs_table(ctl)
        free = [r.job for r in rows if not r.enabled and r.owner == 0]
        if not free:
            return GroupJob(url, why=f"every job of the switch at {url} is taken (JOBS={jobs}: "
                            f"{_enabled(rows)})")
        page = free[0]
        try:
            grant = admit(ctl, page, slots=share, best_effort=True, lease_s=lease_s,
                          owner=token)
        except AdmissionError as e:  # another program claimed or enabled meanwhile
            log.info("netrl: admission of job %d on %s raced another allocator (%s): trying "
                     "again", page, url, e)
            continue
        break
    else:
        return GroupJob(url, why=f"admission on {url} lost {ADMIT_TRIES} races to other "
                        f"programs (taken: {_enabled(jobs_table(ctl))})")
    if grant.fallback:
        release(ctl, page)  # a job without slots only holds a page
        return GroupJob(url, page, grant.job_id, why=(
            f"job {page} (JOB_ID {grant.job_id}) was granted 0 of the {share} slots it asked "
            f"for on {url} (taken: {_enabled(rows)})"))
    with SwitchControl(url, job=page) as jc:
        jc.configure_aggregation(members=members, slots=grant.slots, packet_elems=elems,
                                 dtype="fp32", mode="sync")
    return GroupJob(url, page, grant.job_id, grant.slots, owner=token)


class JobLease:
    """Rank 0's hold on its group's job: renewed from the heartbeat thread
    (:meth:`tick`), released at shutdown (:meth:`release`)."""

    def __init__(self, url: str, job: GroupJob, lease_s: float) -> None:
        self.url, self.job, self.lease_s = url, job, lease_s
        self._ctl = SwitchControl(url, timeout=0.25, retries=2)
        self._next = time.monotonic() + lease_s / 4

    def tick(self, now: float) -> None:
        """Renew ``JOB_LEASE`` when a quarter of the lease has passed since the last time."""
        if now < self._next:
            return
        self._next = now + self.lease_s / 4
        try:
            renew(self._ctl, self.job.page, self.lease_s)
        except Exception as e:  # noqa: BLE001 - tried again next quarter
            log.warning("netrl: could not renew the lease of job %d (JOB_ID %d) on %s: %s: %s",
                        self.job.page, self.job.job_id, self.url, type(e).__name__, e)

    def release(self, store: Any, timeout: float) -> None:
        """Disable the job (under the admission lock when it can be had), unless it is no
        longer ours (its lease passed and another group took the page)."""
        page = self.job.page
        try:
            try:
                with admission_lock(store, timeout):
                    self._release_if_ours(page)
            except TimeoutError:
                self._release_if_ours(page)
        except Exception as e:  # noqa: BLE001 - the switch may be gone already
            log.info("netrl: job %d on %s not released: %s: %s", page, self.url,
                     type(e).__name__, e)
        finally:
            self._ctl.close()

    def _release_if_ours(self, page: int) -> None:
        if self.job.owner:  # a claimed job: ours while its claim is our token
            if self._ctl.read("JOB_OWNER", job=page) != self.job.owner:
                return
        elif self._ctl.read("JOB_ID", job=page) != self.job.job_id:
            return
        rows = jobs_table(self._ctl)
        if self.job.adopted and not any(r.enabled for r in rows[1:]):
            # back to the reset share: every slot, no lease, no owner (the table was never
            # touched)
            self._ctl.write("JOB_SLOT_COUNT", self._ctl.read("AGG_MAX_SLOTS"), job=page)
            self._ctl.write("JOB_LEASE", 0, job=page)
            self._ctl.write("JOB_OWNER", 0, job=page)
            return
        release(self._ctl, page)


# -- the host fallback -------------------------------------------------------------------


def host_address(url: str | None) -> str:
    """The address a parameter server for the group's ranks listens on: loopback for a
    loopback (or no) switch, else this host's address towards the switch."""
    if not url:
        return "127.0.0.1"
    host, port = switch_address(url)
    if host.startswith("127.") or host == "localhost":
        return "127.0.0.1"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((host, port))
        return str(s.getsockname()[0])


def start_server(size: int, url: str | None) -> Any:
    """A started native parameter server for ``size`` ranks (``None``: it cannot run
    here, logged)."""
    try:
        from hostdrv.peers.ps import NativeParameterServer

        return NativeParameterServer(size, host_address(url)).start()
    except Exception as e:  # noqa: BLE001 - gloo then
        log.warning("netrl: no native parameter server (%s: %s): the group sums on gloo",
                    type(e).__name__, e)
        return None


class HostSum:
    """A rank's parameter-server client with the :class:`~hostdrv.Aggregator` call the
    group's worker makes (``allreduce(flat, step=, out=)``)."""

    def __init__(self, address: tuple[str, int], worker: int, world: int, timeout: float) -> None:
        from hostdrv.peers.ps import PsClient

        self.url = f"ps://{address[0]}:{address[1]}"
        self.worker = worker
        self._client = PsClient(address, worker, world, timeout=timeout)

    def allreduce(self, x: Any, *, step: int = 0, out: Any = None) -> Any:
        """The sum over the group's ranks, in rank order (``out``: written there)."""
        total = self._client.allreduce(x)
        if out is None:
            return total
        out[...] = total.reshape(out.shape)
        return out

    def close(self) -> None:
        self._client.close()


def join_host(store: Any, job: GroupJob, rank: int, size: int, timeout: float) -> HostSum | None:
    """Connect this rank to the group's parameter server and agree with every rank: the
    client when all of them reached it, else ``None`` (the group sums on gloo)."""
    client: HostSum | None = None
    if job.host == "ps" and job.ps is not None:
        try:
            client = HostSum(job.ps, rank, size, timeout)
        except Exception as e:  # noqa: BLE001 - the other ranks hear of it below
            log.warning("netrl: rank %d cannot reach the parameter server %s: %s: %s", rank,
                        job.ps, type(e).__name__, e)
    store.set(f"{STORE_HOST_OK_KEY}{rank}", "1" if client is not None else "0")
    deadline = time.monotonic() + timeout
    keys = [f"{STORE_HOST_OK_KEY}{r}" for r in range(size)]
    while not store.check(keys):
        if time.monotonic() > deadline:
            break
        time.sleep(0.01)
    ok = store.check(keys) and all(store.get(k) == b"1" for k in keys)
    if not ok and client is not None:
        client.close()
        client = None
    return client


# -- a group's setup ---------------------------------------------------------------------


def connect(group: Any, job_key: str) -> None:
    """Set up a one-switch ``NetrlGroup``: its rank 0 finds the switch (``switch``
    option, the world group's, or an embedded one it starts), admits and configures the
    group's job or picks the host path, and publishes the :class:`GroupJob` under
    ``job_key``; every rank then builds its aggregator (``group.job``, ``group._agg``)."""
    opt, rank, size = group.options, group._rank, group._size
    secs = group.timeout.total_seconds()
    lease_s = opt.lease or DEFAULT_LEASE

    def setup() -> str:
        url, why = opt.switch, None
        if url is None and not group.world:
            url, why = world_switch(list(_live))
        if url is None and why is None:
            url = group._start_embedded()
        jobs, job = 1, GroupJob(None, why=why)
        if url is not None:
            group.url = url
            with admission_lock(root_store(group._store), secs), SwitchControl(url) as ctl:
                jobs = ctl.read("JOBS")
                job = claim(ctl, members=size, slots=opt.slots, packet_elems=opt.packet_elems,
                            lease_s=lease_s, world=group.world)
        if job.why is None:
            if jobs > 1:  # a switch of one job has a fixed share: nothing to lease
                group._lease = JobLease(str(url), job, lease_s)
            return job.to_json()
        server = group._ps_server = start_server(size, url)
        return replace(job, host="ps" if server else "gloo",
                       ps=tuple(server.address) if server else None).to_json()

    if rank == 0:
        group._rank0_publish(setup)
    job = GroupJob.from_json(group._store.get(job_key).decode() if rank == 0
                             else group._await_rank0())
    group.job = job
    if job.why is None:
        group._make_aggregator(opt.switch or str(job.url), rank, size, job.job_id, job.page)
        return
    group._agg = join_host(group._store, job, rank, size, opt.timeout or secs)
    group.url = group._agg.url if group._agg is not None else None
    if group._agg is None and group._ps_server is not None:
        group._ps_server.close()
        group._ps_server = None
    path = f"the native parameter server at {group.url}" if group._agg else "gloo"
    log.warning("netrl: %s (rank %d of %d) aggregates on the hosts, on %s, not on the switch "
                "%s: %s; each such all_reduce counts as host_fallback in stats()", group.name,
                rank, size, path, job.url, job.why)


__all__ = ["ADMISSION_KEY", "at_reset_share", "DEFAULT_LEASE", "GroupJob", "HostSum", "JobLease",
           "admission_lock", "claim", "connect", "default_share", "join_host", "root_store",
           "start_server", "world_switch"]
