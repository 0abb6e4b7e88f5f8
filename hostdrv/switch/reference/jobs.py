"""Jobs and replay tables (``docs/protocol.md`` section 11): the pages of the reference switch.

A switch built for ``JOBS`` jobs keeps one :class:`Page` per job: the job's copy of every
register (the global ones are the same in every page), its counters, its generator and
rate limiter, and its replay table while it is enabled. :func:`share_refusal` is the
section's write rules that no single register's ``legal:`` rule can say: the shares of
two enabled jobs never overlap, their ids never collide, and a one-job switch's share is
fixed. :func:`slot_range` and :func:`table_range` are a job's share of the memories.
"""

from __future__ import annotations

from collections.abc import Mapping

from hostdrv.errors import UnknownRegisterError
from hostdrv.switch.reference.replay import ReplayTable
from hostdrv.wire import regmap
from hostdrv.wire.ratelimit import RateLimiter, RateLimiterConfig
from hostdrv.wire.regrules import FIXED_SHARE
from hostdrv.wire.sampler import XorShift32

__all__ = ["FIXED_SHARE", "ID_OR_SHARE", "TABLE_SHAPE", "Page", "resolve", "share_refusal",
           "slot_range", "table_range"]

TABLE_SHAPE = frozenset(["JOB_RPL_BASE", "JOB_RPL_CAP", "JOB_RPL_RECORD"])
"""Job registers whose write empties the job's table (it is carved anew)."""
ID_OR_SHARE = frozenset(["JOB_ID", "JOB_SLOT_BASE", "JOB_SLOT_COUNT", "JOB_RPL_BASE", "JOB_RPL_CAP"])
"""Job registers an enabled job's write of must not collide with another enabled job."""


def resolve(reg: str | int, job: int, jobs: int) -> tuple[int, regmap.Register]:
    """``(job, register)`` of a register name and ``job``, or of a page address (``job``
    must then be 0: the address names its job), on a switch of ``jobs`` jobs.

    Raises
    ------
    UnknownRegisterError
        No such register on this switch (a job at or above ``jobs``, a global register
        outside page 0).
    ValueError
        A page address with a ``job`` other than 0.
    """
    if isinstance(reg, str):
        r, j = regmap.lookup(reg), job
    else:
        j, found = regmap.split(reg)
        if found is None:
            raise UnknownRegisterError(reg)
        if job:
            raise ValueError(f"address {reg:#x} names its job ({j}): pass job=0")
        r = found
    if isinstance(j, bool) or not isinstance(j, int) or not 0 <= j < jobs:
        raise UnknownRegisterError(f"{r.name} of job {j!r} (JOBS = {jobs})")
    if j and not r.job:
        raise UnknownRegisterError(f"{r.name} of job {j} (a global register: page 0 only)")
    return j, r


class Page:
    """One job's state: its registers by name (``regs``, the global ones included), its
    counters (``cnt``), generator (``rng``), rate limiter (``limiter``) and table
    (``table``: ``None`` while the job is disabled or has ``JOB_RPL_CAP`` = 0)."""

    __slots__ = ("cnt", "limiter", "regs", "rng", "table")

    def __init__(self, regs: dict[str, int], counters: tuple[str, ...]) -> None:
        self.regs = regs
        self.cnt: dict[str, int] = dict.fromkeys(counters, 0)
        self.rng = XorShift32(regs["RPL_SEED"])
        self.limiter = RateLimiter(RateLimiterConfig(
            regs["RPL_MIN_SIZE"], regs["RPL_SPI"], regs["RPL_SPI_ERROR"]))
        self.table: ReplayTable | None = None

    def carve(self, enabled: bool) -> None:
        """Empty the table, carved anew from ``JOB_RPL_CAP`` / ``JOB_RPL_RECORD`` when the job
        is ``enabled`` (none otherwise), and clear the rate limiter's accumulator."""
        regs = self.regs
        cap = regs["JOB_RPL_CAP"]
        self.table = ReplayTable(cap, regs["JOB_RPL_RECORD"]) if enabled and cap else None
        self.limiter.reset()


def slot_range(regs: Mapping[str, int]) -> range:
    """The memory slots of a job's share (``JOB_SLOT_BASE`` .. + ``JOB_SLOT_COUNT``)."""
    return range(regs["JOB_SLOT_BASE"], regs["JOB_SLOT_BASE"] + regs["JOB_SLOT_COUNT"])


def table_range(regs: Mapping[str, int]) -> range:
    """The memory records of a job's table (``JOB_RPL_BASE`` .. + ``JOB_RPL_CAP``)."""
    return range(regs["JOB_RPL_BASE"], regs["JOB_RPL_BASE"] + regs["JOB_RPL_CAP"])


def _overlap(a: range, b: range) -> bool:
    return bool(len(a) and len(b) and a.start < b.stop and b.start < a.stop)


def _span(r: range) -> str:
    return f"{r.start} .. {r.stop - 1}"


def _conflict(pages: list[Page], enabled: int, j: int, regs: Mapping[str, int]) -> str:
    """Why job ``j`` with registers ``regs`` collides with another job of ``enabled``."""
    for k, other in enumerate(pages):
        if k == j or not enabled >> k & 1:
            continue
        o = other.regs
        if o["JOB_ID"] == regs["JOB_ID"]:
            return f"JOB_ID {regs['JOB_ID']} is job {k}'s"
        for what, rng in (("slots", slot_range), ("records", table_range)):
            mine, theirs = rng(regs), rng(o)
            if _overlap(mine, theirs):
                return f"{what} {_span(mine)} overlap job {k}'s {_span(theirs)}"
    return ""


def share_refusal(pages: list[Page], j: int, name: str, value: int,
                  params: Mapping[str, int]) -> str:
    """Why writing ``value`` to job ``j``'s register ``name`` is refused by section 11's
    rules ('' when they take it); the register's own ``legal:`` rule is judged before.

    Parameters
    ----------
    pages:
        Every job's page (their number is ``JOBS``).
    j:
        The job written (0 for a global register such as ``JOB_ENABLE``).
        ``JOB_ENABLE_SET`` is judged as the ``JOB_ENABLE`` it makes, after the check that
        none of its jobs is enabled already; ``JOB_OWNER`` takes a token only where none
        or the same one is held.
    name, value:
        The register and the value written.
    params:
        The build parameters by register name (``AGG_MAX_SLOTS``, ``RPL_CAPACITY``).
    """
    if len(pages) == 1 and name in FIXED_SHARE:
        return "a one-job switch (JOBS = 1) has a fixed share: it keeps its reset value"
    enabled = pages[0].regs["JOB_ENABLE"]
    if name == "JOB_OWNER":
        held = pages[j].regs["JOB_OWNER"]
        if value and held and held != value:
            return f"job {j} is claimed by another allocator (JOB_OWNER {held:#x})"
        return ""
    if name == "JOB_ENABLE_CLR":
        return ""
    if name == "JOB_ENABLE_SET":
        on = [k for k in range(len(pages)) if (value & enabled) >> k & 1]
        if on:
            return f"job {on[0]} is enabled already"
        name, value = "JOB_ENABLE", enabled | value
    if name == "JOB_ENABLE":
        for k in range(len(pages)):
            if value >> k & 1 and not enabled >> k & 1:
                why = _conflict(pages, value, k, pages[k].regs)
                if why:
                    return f"job {k} cannot be enabled: {why}"
        return ""
    regs = dict(pages[j].regs)
    regs[name] = value
    if name in ("JOB_SLOT_BASE", "JOB_SLOT_COUNT"):
        end = regs["JOB_SLOT_BASE"] + regs["JOB_SLOT_COUNT"]
        if end > params["AGG_MAX_SLOTS"]:
            return (f"JOB_SLOT_BASE + JOB_SLOT_COUNT = {end} is more than AGG_MAX_SLOTS "
                    f"({params['AGG_MAX_SLOTS']})")
    if name in ("JOB_RPL_BASE", "JOB_RPL_CAP"):
        cap, base, size = regs["JOB_RPL_CAP"], regs["JOB_RPL_BASE"], params["RPL_CAPACITY"]
        if cap & (cap - 1) or cap > size:
            return f"JOB_RPL_CAP must be 0 or a power of two up to RPL_CAPACITY ({size})"
        if cap and base % cap:
            return f"JOB_RPL_BASE ({base}) must be a multiple of JOB_RPL_CAP ({cap})"
        if base + cap > size:
            return f"JOB_RPL_BASE + JOB_RPL_CAP = {base + cap} is more than RPL_CAPACITY ({size})"
    if name in ID_OR_SHARE and enabled >> j & 1:
        why = _conflict(pages, enabled, j, regs)
        if why:
            return f"job {j} is enabled and {why}"
    return ""
