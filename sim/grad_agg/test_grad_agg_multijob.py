"""cocotb tests of the gradient aggregation engine built with several jobs (``JOBS`` > 1,
docs/protocol.md section 11, docs/architecture.md "Jobs in the RTL") against the golden model
built with as many (``SwitchModel(jobs=J)``). ``tests/test_grad_agg.py`` builds the engine with
``JOBS`` = 4 and runs this module (``GRAD_AGG_JOBS`` names J).

The testbench plays the switch's job table (``nrl_axil_split``, tested on its own): the job
registers (``JOB_ID``, ``JOB_SLOT_*``, ``JOB_ENABLE``) are written into the model, which judges
them, and its pages drive the engine's ``job_*`` inputs; the slots the model frees (its own
``_free``, recorded) are pulsed on ``slot_free``, as the split pulses them. Every other register
is written through the engine's AXI4-Lite port at the job's page (address ``job * JOB_PAGE +
offset``, ``regmap.job_address``) and into the model at the same job.

Tests:

* ``test_jobs``: jobs carved out of the slot memory with ids, members and configurations of
  their own (fp32 and int32, sync and async, flat and leaf), interleaved protocol traffic with
  loss and duplicates, frames naming no enabled job, cross-job spoofing (a member of one job
  sending with another job's id; another job's id on a frame of the right shape), a job
  disabled while the others run, a new carving, a job without slots, configuration writes of
  one job while the others keep their rounds: every output frame byte for byte and every
  job's counters against the model.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge

from hostdrv.switch.reference import SwitchModel
from hostdrv.wire import regmap
from sim.common.tb import AxiResp
from sim.grad_agg.grad_agg_tb import TB
from sim.grad_agg.workload import AggConfig, Workload

SEED = int(os.environ.get("GRAD_AGG_SEED", "20250"))
JOBS = int(os.environ.get("GRAD_AGG_JOBS", "1"))
ROUNDS = int(os.environ.get("GRAD_AGG_JOB_ROUNDS", "4"))
"""Carvings :func:`test_jobs` plays (each: traffic, a job leaving and coming back)."""


class JobsTB(TB):
    """The grad_agg testbench with the job table of a ``JOBS``-job switch in the model."""

    def __init__(self, dut: Any, *, streams: bool = True) -> None:
        super().__init__(dut, streams=streams)
        self.jobs = JOBS
        self.freed: list[range] = []
        self._drive_table()

    async def new_model(self) -> None:
        await super().new_model()
        self.model = SwitchModel(max_slots=self.max_slots, max_elems=self.max_elems,
                                 build_hash=self.model.read("BUILD_HASH"), jobs=self.jobs)
        free = self.model._free  # test introspection: record the model's own frees

        def recording_free(slots: range) -> None:
            self.freed.append(slots)
            free(slots)

        self.model._free = recording_free  # type: ignore[method-assign]
        self._drive_table()

    def _drive_table(self) -> None:
        """The engine's job_* inputs from the model's pages (as nrl_axil_split drives them)."""
        pages = self.model._pages  # test introspection: the model's job table
        regs = [p.regs for p in pages]
        self.dut.job_id.value = sum(r["JOB_ID"] << 8 * j for j, r in enumerate(regs))
        self.dut.job_enable.value = regs[0]["JOB_ENABLE"]
        self.dut.job_slot_base.value = sum(r["JOB_SLOT_BASE"] << 7 * j for j, r in enumerate(regs))
        self.dut.job_slot_count.value = sum(r["JOB_SLOT_COUNT"] << 7 * j
                                            for j, r in enumerate(regs))

    async def _pulse_freed(self) -> None:
        slots = {s for r in self.freed for s in r}
        self.freed = []
        if slots:
            await FallingEdge(self.dut.clk)
            self.dut.slot_free.value = sum(1 << s for s in slots)
            await FallingEdge(self.dut.clk)
            self.dut.slot_free.value = 0

    async def write_job(self, name: str, value: int, job: int) -> None:
        """Write ``name`` of job ``job`` once the engine is quiet: a job-table register into
        the model (which must take it) and the engine's inputs, any other through the engine's
        page ``job`` (OKAY) and into the model; then the slots the model freed."""
        await self.settle()
        if name.startswith("JOB_"):
            self.model.write(name, value, job=job)
            await FallingEdge(self.dut.clk)
            self._drive_table()
        else:
            resp = await self.write_resp(regmap.job_address(name, job), value)
            assert resp == AxiResp.OKAY, f"write {name} of job {job} = {value:#x}: {resp!r}"
            self.model.write(name, value, job=job)
        await self._pulse_freed()

    async def read_job(self, name: str, job: int) -> int:
        assert self.axil is not None
        return int(await self.axil.read_dword(regmap.job_address(name, job)))

    async def check_counters(self) -> None:
        for j in range(self.jobs):
            # a global counter (CNT_PASS) is a register of page 0 only
            want = {n: v for n, v in self.model.counters(job=j).items()
                    if j == 0 or regmap.REGISTERS[n].job}
            got = {n: await self.read_job(n, j) for n in want}
            diff = {k: (got[k], want[k]) for k in want if got[k] != want[k]}
            assert not diff, f"job {j}: counters (dut, model) differ: {diff}"
            self.log.info("job %d counters: %s", j, {k[4:]: v for k, v in want.items() if v})

    async def check_registers(self) -> None:
        """Every job's aggregation and member registers read back as the model holds them."""
        names = [r.name for r in regmap.REGISTERS.values()
                 if r.job and r.access == "rw" and (r.name.startswith(("AGG_", "MEMBER_")))]
        for j in range(self.jobs):
            for n in names:
                got, want = await self.read_job(n, j), self.model.read(n, job=j)
                assert got == want, f"job {j} {n}: dut {got:#x}, model {want:#x}"

    async def carve(self, shares: dict[int, tuple[int, int, int]]) -> None:
        """Every job disabled, then each job of ``shares`` given (id, base, count) and no
        replay table, and the jobs of ``shares`` enabled."""
        await self.write_job("JOB_ENABLE", 0, 0)
        for j, (ident, base, count) in shares.items():
            await self.write_job("JOB_RPL_CAP", 0, j)
            await self.write_job("JOB_SLOT_BASE", 0, j)
            await self.write_job("JOB_SLOT_COUNT", count, j)
            await self.write_job("JOB_SLOT_BASE", base, j)
            await self.write_job("JOB_ID", ident, j)
        await self.write_job("JOB_ENABLE", sum(1 << j for j in shares), 0)

    async def configure_job(self, cfg: AggConfig, job: int) -> None:
        """``cfg``'s registers into job ``job``'s page (not its global ones, written by
        :meth:`configure_global`; its JOB_ID is the job table's)."""
        threshold = self.model.read("AGG_THRESHOLD", job=job)
        for name, value in cfg.writes(threshold):
            if name != "JOB_ID" and regmap.REGISTERS[name].job:
                await self.write_job(name, value, job)

    async def configure_global(self, cfg: AggConfig) -> None:
        """``cfg``'s global registers (page 0), which every job shares."""
        for name, value in cfg.writes():
            if not regmap.REGISTERS[name].job:
                await self.write_job(name, value, 0)


def job_config(tb: JobsTB, rng: np.random.Generator, job: int, share: tuple[int, int, int],
               base: AggConfig | None) -> AggConfig:
    """A random configuration of job ``job`` with the share (id, base, count) ``share``: its
    slots mostly within the share (sometimes beyond: BAD_SLOT), members of its own (their
    addresses differ from every other job's) and the global registers of ``base``. The first
    job (``base`` None) is a sync one, the others mostly async with a threshold below their
    members, so that jobs of both modes interleave."""
    ident, count = share[0], share[2]
    slots = int(rng.integers(1, max(1, min(count, 6)) + 1))
    if rng.random() < 0.15:
        slots = int(rng.integers(1, tb.max_slots + 1))
    mode_async = base is not None and rng.random() < 0.8
    cfg = tb.random_config(rng, slots=slots, mode_async=mode_async,
                           members=int(rng.integers(3, 6)) if mode_async else None)
    if mode_async:
        cfg = dataclasses.replace(cfg, threshold=int(rng.integers(1, cfg.members)))
    table = [dataclasses.replace(m, ip=m.ip + 0x10000 * job) for m in cfg.table]
    cfg = dataclasses.replace(cfg, job_id=ident, table=table, parent_ip=0x0A0000F0 + job)
    if base is not None:
        cfg = dataclasses.replace(cfg, udp_port=base.udp_port, switch_ip=base.switch_ip,
                                  mac_hi=base.mac_hi, mac_lo=base.mac_lo, mcast_ip=base.mcast_ip)
    return cfg


def shares_for(rng: np.random.Generator, jobs: list[int], max_slots: int) -> dict[int, tuple[int, int, int]]:
    """Disjoint slot ranges (one possibly empty) and distinct ids for ``jobs``."""
    ids = [int(i) for i in rng.choice(256, size=len(jobs), replace=False)]
    if len(ids) > 1 and rng.random() < 0.7:  # id 0 (the bytes past a short frame's end), not job 0's
        k = int(rng.integers(1, len(ids)))
        if 0 in ids:
            z = ids.index(0)
            ids[z], ids[k] = ids[k], ids[z]
        else:
            ids[k] = 0
    cuts = sorted(int(c) for c in rng.choice(max_slots + 1, size=2 * len(jobs), replace=True))
    if rng.random() < 0.7:  # mostly no empty range: every job aggregates
        cuts = sorted(int(c) for c in rng.choice(max_slots + 1, size=2 * len(jobs), replace=False))
    out = {}
    for k, j in enumerate(jobs):
        lo, hi = cuts[2 * k], cuts[2 * k + 1]
        out[j] = (ids[k], lo, hi - lo)
    return out


async def traffic(tb: JobsTB, rng: np.random.Generator, wls: dict[int, Workload], n: int,
                  foreign: list[int]) -> None:
    """``n`` frames: each active job's workload in turn at random, its frames sometimes sent
    with another job's id (cross-job spoofing) or an id no enabled job has (``foreign``), or cut
    to 42 .. 49 bytes (a frame too short to hold the job byte counts in job 0's page)."""
    jobs = list(wls)
    for _ in range(n):
        j = jobs[int(rng.integers(len(jobs)))]
        wl = wls[j]
        frame, port = wl.next()
        r = rng.random()
        if r < 0.06 and len(jobs) > 1 and len(frame) > 45:
            other = wls[jobs[(jobs.index(j) + int(rng.integers(1, len(jobs)))) % len(jobs)]]
            frame = frame[:45] + bytes([other.cfg.job_id]) + frame[46:]
        elif r < 0.09 and foreign and len(frame) > 45:
            frame = frame[:45] + bytes([foreign[int(rng.integers(len(foreign)))]]) + frame[46:]
        elif r < 0.12:  # too short to name a job (its counts are job 0's), or just long enough
            frame = frame[:int(rng.integers(42, 50))]
        wl.observe(await tb.send(frame, port))


@cocotb.test()
async def test_jobs(dut: Any) -> None:
    """Several jobs on one engine, isolated and exact (see the module docstring)."""
    tb, rng = await JobsTB.start(dut, SEED + 400)
    assert tb.jobs > 1, "test_jobs needs an engine built with JOBS > 1 (GRAD_AGG_JOBS)"
    # a disabled job keeps a share and an id: its frames are BAD_JOB
    active = list(range(min(3, tb.jobs)))
    for rnd in range(ROUNDS):
        shares = shares_for(rng, list(range(tb.jobs)), tb.max_slots)
        await tb.carve({j: shares[j] for j in active})
        base = None
        cfgs = {}
        for j in active:
            cfgs[j] = job_config(tb, rng, j, shares[j], base)
            base = base or cfgs[j]
        await tb.configure_global(cfgs[active[0]])
        for j in active:
            await tb.configure_job(cfgs[j], j)
        await tb.check_registers()
        wls = {j: Workload(rng, c, noise=0.2) for j, c in cfgs.items()}
        unused = [shares[j][0] for j in range(tb.jobs) if j not in active]
        foreign = unused + [int(i) for i in rng.integers(0, 256, size=2)
                            if int(i) not in {c.job_id for c in cfgs.values()}]
        await traffic(tb, rng, wls, 200, foreign)
        await tb.check()
        # a job leaves while the others run on: its frames are BAD_JOB, its slots freed
        gone = active[int(rng.integers(len(active)))]
        await tb.write_job("JOB_ENABLE", sum(1 << j for j in active if j != gone), 0)
        await traffic(tb, rng, wls, 100, foreign)
        await tb.check()
        # it comes back; another job's configuration is rewritten (its slots freed)
        await tb.write_job("JOB_ENABLE", sum(1 << j for j in active), 0)
        other = active[(active.index(gone) + 1) % len(active)]
        await tb.write_job("AGG_STALENESS", int(rng.integers(0, 4)), other)
        await traffic(tb, rng, wls, 100, foreign)
        await tb.check()
        active = list(rng.permutation(tb.jobs)[:min(3, tb.jobs)])
        active = [int(j) for j in active]
        tb.log.info("round %d done; next jobs %s", rnd, active)
