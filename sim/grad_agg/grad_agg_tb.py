"""The grad_agg testbench: :class:`TB` (the stream testbench with the golden model), what
the traffic exercised (:func:`classify`), the lean-driver runs and the directed step and
far-ahead sequences used by ``sim/grad_agg/test_grad_agg.py``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from cocotb.triggers import FallingEdge, with_timeout

from hostdrv.switch.reference import Egress, SwitchModel
from hostdrv.wire import protocol as proto
from hostdrv.wire import regmap
from hostdrv.wire.consts import AGG_AHEAD_ROUNDS, EPOCH_ROUNDS
from sim.common.tb import StreamTB
from sim.grad_agg.workload import M32, AggConfig, Workload, be16, be32, describe, random_config

CLK_NS = 4


# ---------------------------------------------------------------------------
# what the traffic exercised (from the model's verdicts and output frames)


@dataclass(frozen=True)
class CopyBefore:
    """The model's slot copy a GRADIENT names, as it was before the GRADIENT."""

    state: int
    """0 OPEN, 1 UP, 2 DONE."""
    error: bool
    step: int


def classify(frame: bytes, outs: list[Egress], before: dict[str, int],
             after: dict[str, int], pre: CopyBefore | None = None) -> list[str]:
    """Names of the behaviours one input frame exercised in the model.

    ``mismatch_error`` (a MISMATCH that made an error copy: its ERROR RESULT
    multicast; ``mismatch_up`` when the copy was a leaf's waiting for its
    parent), ``mismatch_resend`` (a MISMATCH on a DONE copy: RESULT re-sent),
    ``step_error`` / ``step_up`` / ``step_resend`` / ``step_error_resend``
    (the same for a step mismatch: the ERROR RESULT's aux equals its total;
    the RESULT of a DONE copy re-sent with ERROR forced on, or an error
    copy's as it is), ``ahead`` (dropped as AHEAD), ``error_resend`` (an
    error copy's RESULT re-sent), ``error_relay`` (a leaf relaying its
    parent's ERROR RESULT), ``order`` (a RESULT whose aux names at least two
    contributions, not in ascending member order), ``total_hi`` (a RESULT
    or upward GRADIENT whose total has bit 31 set), ``up``, ``up_step`` (an
    upward GRADIENT whose aux is not its round: a sync leaf's step id) and
    ``result``.
    """
    tags = []
    mism = after["CNT_DROP_MISMATCH"] != before["CNT_DROP_MISMATCH"]
    if after["CNT_DROP_AHEAD"] != before["CNT_DROP_AHEAD"]:
        tags.append("ahead")
    op_in = frame[43] if len(frame) > 43 else -1
    for e in outs:
        f = e.frame
        flags, aux, total = f[44], be32(f, 56), be32(f, 60)
        if total >> 31:
            tags.append("total_hi")
        if f[43] == proto.Opcode.GRADIENT:
            tags.append("up")
            if aux != be32(f, 50):
                tags.append("up_step")
            continue
        tags.append("result")
        err, resend = bool(flags & proto.Flags.ERROR), bool(flags & proto.Flags.RESEND)
        if mism:
            # a step mismatch: the packet's total is the copy's (checked first)
            step = pre is not None and be32(frame, 60) == total
            tags.append("mismatch_resend" if resend else "mismatch_error")
            if not resend and pre is not None and pre.state == 1:
                tags.append("mismatch_up")
            if step and not resend:
                tags.append("step_up" if pre is not None and pre.state == 1 else "step_error")
            elif step:
                tags.append("step_error_resend" if pre is not None and pre.error else "step_resend")
        if err and resend:
            tags.append("error_resend")
        if err and op_in == proto.Opcode.RESULT:
            tags.append("error_relay")
        if not err and op_in == proto.Opcode.GRADIENT:
            order = proto.result_order(aux)
            if len(order) >= 2 and order != sorted(order):
                tags.append("order")
    return tags


# ---------------------------------------------------------------------------
# testbench


class TB(StreamTB):
    """The common stream testbench with the golden model and the expected-output queue.

    ``streams=False`` drives the streams with the lean driver (soak, bench)."""

    IDLE_PATTERN = (0, 0, 1, 0, 1, 0, 0, 0, 1)
    BACKPRESSURE_PATTERN = (0, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0)

    def __init__(self, dut: Any, *, streams: bool = True) -> None:
        # control registers are undefined until the first reset: reset is held
        # from time zero and the BFMs are made after it (they sample tready/arready)
        super().__init__(dut, CLK_NS, lean=not streams, bfms_after_reset=True)
        # the job table's frees (test_slot_free): a scheduled write (an Immediate one
        # here did not hold on Icarus)
        dut.slot_free.value = 0
        self.model = SwitchModel()
        self.max_slots = 0
        """``AGG_MAX_SLOTS`` of the DUT (read at each reset)."""
        self.max_elems = 0
        """``AGG_MAX_ELEMS`` of the DUT (read at each reset)."""
        self.expected: list[Egress] = []
        self.sent = 0
        self.tally: Counter[str] = Counter()

    async def reset(self, cycles: int = 4, after: int = 4) -> None:
        """Reset the DUT and start a fresh model with the DUT's parameters."""
        await super().reset(cycles, after)
        await self.new_model()

    @classmethod
    async def start(cls, dut: Any, seed: int, *,
                    streams: bool = True) -> tuple[TB, np.random.Generator]:
        """A testbench out of reset with a fresh model, and the test's generator seeded ``seed``."""
        tb = cls(dut, streams=streams)
        await tb.reset()
        return tb, np.random.default_rng(seed)

    async def new_model(self) -> None:
        """A fresh model with the DUT's parameters (``AGG_MAX_SLOTS``, ``AGG_MAX_ELEMS``,
        ``BUILD_HASH``); nothing expected."""
        self.max_slots = await self.read("AGG_MAX_SLOTS")
        self.max_elems = await self.read("AGG_MAX_ELEMS")
        build_hash = await self.read("BUILD_HASH")
        self.model = SwitchModel(max_slots=self.max_slots, max_elems=self.max_elems,
                                 build_hash=build_hash)
        self.expected = []

    async def write(self, name: str, value: int) -> None:
        """The same register write into the DUT and the model; the DUT must answer OKAY."""
        await self.write_reg(name, value)
        self.model.write(name, value)

    async def configure(self, cfg: AggConfig) -> None:
        """Write every register of ``cfg`` into the DUT and the model."""
        for name, value in cfg.writes(self.model.read("AGG_THRESHOLD")):
            await self.write(name, value)

    def random_config(self, rng: np.random.Generator, **kw: Any) -> AggConfig:
        """:func:`random_config` within this DUT's ``AGG_MAX_SLOTS`` and ``AGG_MAX_ELEMS``."""
        return random_config(rng, max_slots=self.max_slots, max_elems=self.max_elems, **kw)

    async def configure_random(self, rng: np.random.Generator, **kw: Any) -> AggConfig:
        """A :meth:`random_config` (``kw`` as for :func:`random_config`), configured."""
        cfg = self.random_config(rng, **kw)
        await self.configure(cfg)
        return cfg

    async def send(self, frame: bytes, port: int) -> list[Egress]:
        """Queue a frame into the DUT and the model; returns the model's outputs."""
        before = self.model.counters()
        pre = self._copy_before(frame)
        outs = self.model.process(frame, port)
        self.tally.update(classify(frame, outs, before, self.model.counters(), pre))
        self.expected.extend(outs)
        self.sent += 1
        await self.send_frame(frame, port)
        return outs

    def _copy_before(self, frame: bytes) -> CopyBefore | None:
        """The model's copy a GRADIENT names if it holds the GRADIENT's round, else None."""
        if len(frame) < 64 or frame[43] != proto.Opcode.GRADIENT:
            return None
        copies = self.model._copies  # test introspection of the golden model
        slot, seq = be16(frame, 48), be32(frame, 50)
        if slot >= len(copies) or not copies[slot][seq & 1].valid:
            return None
        c = copies[slot][seq & 1]
        if c.round != seq:
            return None
        return CopyBefore(c.state, c.error, c.step)

    async def free_slots(self, slots: range) -> None:
        """Free the copies of memory slots ``slots`` in the DUT (a ``slot_free`` pulse, as the
        switch's job table gives it) and in the model (the frees of protocol section 11)."""
        await self.settle()
        await FallingEdge(self.dut.clk)
        self.dut.slot_free.value = sum(1 << s for s in slots)
        await FallingEdge(self.dut.clk)
        self.dut.slot_free.value = 0
        self.model._free(slots)  # test introspection: the model's own free

    async def run(self, wl: Workload, n: int) -> None:
        for _ in range(n):
            wl.observe(await self.send(*wl.next()))

    async def settle(self) -> None:
        """Wait until every queued frame went in and the engine is quiet."""
        await self.send_done()
        await self.cycles(40)

    async def check(self, *, timeout_us: float = 400.0) -> None:
        """Every expected output, in order, then nothing more; then the counters."""
        await with_timeout(self.send_done(), timeout_us, "us")
        for i, exp in enumerate(self.expected):
            data, tuser = await self.recv_frame(timeout_us * 1000)
            self.compare(i, data, tuser, exp)
        n = len(self.expected)
        self.expected = []
        await self.cycles(60)
        assert not self.recv_pending(), f"unexpected output after {n} frames: {self.recv_pending()} more"
        await self.check_counters()

    def compare(self, i: int, data: bytes, tuser: int, exp: Egress) -> None:
        want_user = len(exp.frame) | exp.dst_ports << 24
        if data != exp.frame or (tuser & M32) != want_user:
            raise AssertionError(
                f"output {i} differs\n got  {describe(data)} tuser={tuser & M32:#010x}\n"
                f" want {describe(exp.frame)} tuser={want_user:#010x}\n"
                f" payload equal: {data[64:] == exp.frame[64:]}")

    async def check_counters(self) -> None:
        want = self.model.counters()
        got = {name: await self.read(name) for name in regmap.COUNTERS}
        self.log.info("counters: %s", {k[4:]: v for k, v in want.items() if v})
        diff = {k: (got[k], want[k]) for k in want if got[k] != want[k]}
        assert not diff, f"counters (dut, model) differ: {diff}"



# ---------------------------------------------------------------------------
# the lean driver of sim.common.tb: whole beats written each clock (soak and bench)


@dataclass
class LeanRun:
    """What a lean run saw: output frames and handshake clocks."""

    outputs: list[tuple[bytes, int]] = field(default_factory=list)
    in_clocks: list[int] = field(default_factory=list)
    out_first_clocks: list[int] = field(default_factory=list)
    clocks: int = 0
    gaps: int = 0
    """Clocks with an output packet started, the sink ready and no valid beat."""


async def lean_run(tb: TB, frames: list[tuple[bytes, int]], n_out: int, *,
                   record: bool = False) -> LeanRun:
    """``frames`` through the testbench's lean driver; what it saw during this run."""
    lean = tb.lean
    assert lean is not None
    lean.record = record
    lean.in_clocks.clear()
    lean.out_first_clocks.clear()
    gaps, clock = lean.gaps, lean.clock
    outputs = await lean.run(frames, n_out)
    return LeanRun(outputs, list(lean.in_clocks), list(lean.out_first_clocks),
                   lean.clock - clock, lean.gaps - gaps)


def lean_compare(tb: TB, got: list[tuple[bytes, int]], want: list[Egress]) -> None:
    assert len(got) == len(want), f"{len(got)} outputs, model expects {len(want)}"
    for i, ((data, user), exp) in enumerate(zip(got, want, strict=True)):
        tb.compare(i, data, user, exp)




STEP_TAGS = ("step_error", "step_up", "step_resend", "step_error_resend", "mismatch_error",
             "mismatch_resend", "ahead", "up_step")
"""What ``test_steps_and_ahead`` must exercise (tags of :func:`classify`)."""


async def steps_directed(tb: TB, wl: Workload, base: int) -> None:
    """Step mismatches in every copy state, on slots 0 and 1, rounds from ``base`` on.

    Sync mode: a step mismatch on an OPEN copy (error copy, aux = total), then
    on that error copy (re-sent as it is) and a late contribution of the
    right step; another length and another step at once (length first:
    aux = the refused length); a complete round (root: DONE, leaf: UP, then
    the parent's RESULT makes it DONE) answering another step with ERROR
    forced on and the right step with its real result; a leaf's UP copy
    becoming an error copy. Async mode: the same frames, where aux is a
    version and no step is checked."""
    cfg = wl.cfg
    w0, w1 = wl.contrib[0], wl.contrib[-1]
    r = base
    # OPEN: w0 opens with the round's step, w1 another step
    await tb.send(*wl.gradient(w0, 0, r, lag=0))
    await tb.send(*wl.gradient(w1, 0, r, lag=0, step=wl.bad_step(0, r)))
    await tb.send(*wl.gradient(w1, 0, r, lag=0, step=wl.bad_step(0, r)))  # error copy: resend
    await tb.send(*wl.gradient(w1, 0, r, lag=0))                          # right step: resend
    # another length and another step: the length decides (aux = refused length)
    r += 1
    await tb.send(*wl.gradient(w0, 0, r, lag=0))
    await tb.send(*wl.gradient(w1, 0, r, lag=0, total=wl.bad_total(0, r),
                               step=wl.bad_step(0, r)))
    # a complete round: DONE (root) or UP (leaf)
    r2 = base
    for w in wl.contrib:
        await tb.send(*wl.gradient(w, 1, r2, lag=0))
    if cfg.leaf:
        # UP: another step makes an error copy (ERROR RESULT to the members)
        await tb.send(*wl.gradient(w0, 1, r2, lag=0, step=wl.bad_step(1, r2)))
        # the next round goes UP, then DONE with the parent's RESULT
        r2 += 1
        for w in wl.contrib:
            await tb.send(*wl.gradient(w, 1, r2, lag=0))
        flags = int(proto.Flags.FROM_SWITCH) | int(cfg.dtype_int)
        await tb.send(*wl.frame(op=proto.Opcode.RESULT, worker=0, slot=1, seq=r2,
                                aux=proto.result_aux(wl.contrib), flags=flags))
    # DONE: another step gets the result with ERROR forced on (worker = sender, aux = total);
    # the copy is unchanged: the right step gets the real result, again another step the
    # forced ERROR
    await tb.send(*wl.gradient(w1, 1, r2, lag=0, step=wl.bad_step(1, r2)))
    await tb.send(*wl.gradient(w0, 1, r2, lag=0))
    await tb.send(*wl.gradient(w0, 1, r2, lag=0, step=wl.bad_step(1, r2)))
    # another length on the DONE copy: resent as it is
    await tb.send(*wl.gradient(w0, 1, r2, lag=0, total=wl.bad_total(1, r2)))


async def ahead_directed(tb: TB, wl: Workload, rng: np.random.Generator) -> None:
    """The far-ahead bound at its edges, on slot 2 (and a slot beyond AGG_SLOTS).

    Rounds 2**25 - 1 ahead of AGG_EPOCH are taken (a copy opens), 2**25 and
    2**31 - 1 ahead dropped as AHEAD, 2**31 ahead and one behind processed;
    BAD_SLOT before AHEAD; AHEAD before STALE (async lag beyond the bound);
    a leaf's RESULT is never AHEAD. Then AGG_EPOCH moves one block on
    between packets: the round 2**25 ahead of the old epoch is taken."""
    cfg = wl.cfg
    e = cfg.epoch
    w = wl.contrib[0]
    s = 2 % cfg.slots
    for d in (AGG_AHEAD_ROUNDS - 1, AGG_AHEAD_ROUNDS, AGG_AHEAD_ROUNDS + 1, 2**31 - 1,
              2**31, M32, int(rng.integers(AGG_AHEAD_ROUNDS, 2**31))):
        await tb.send(*wl.gradient(w, s, (e + d) & M32, lag=0))
    # BAD_SLOT is checked first
    await tb.send(*wl.frame(worker=w, slot=cfg.slots, seq=(e + AGG_AHEAD_ROUNDS) & M32, aux=0))
    # AHEAD before STALE: a contribution far ahead and (async) far too stale
    r = (e + AGG_AHEAD_ROUNDS + 2) & M32
    await tb.send(*wl.gradient(w, s, r, lag=cfg.staleness + 1 if cfg.mode_async else 0))
    if cfg.leaf:
        flags = int(proto.Flags.FROM_SWITCH) | int(cfg.dtype_int)
        await tb.send(*wl.frame(op=proto.Opcode.RESULT, worker=0, slot=s, aux=1, flags=flags,
                                seq=(e + AGG_AHEAD_ROUNDS + 4) & M32))
    # the epoch moves on one block: 2**25 ahead of the old one is 2**24 ahead now (the
    # frames before the write reach the engine first: the model takes them in that order)
    cfg.epoch = (e + EPOCH_ROUNDS) & M32
    await tb.settle()
    await tb.write("AGG_EPOCH", cfg.epoch)
    await tb.send(*wl.gradient(w, s, (e + AGG_AHEAD_ROUNDS + 6) & M32, lag=0))
    await tb.send(*wl.gradient(w, s, (e + EPOCH_ROUNDS + AGG_AHEAD_ROUNDS) & M32, lag=0))
    cfg.epoch = e
    await tb.settle()
    await tb.write("AGG_EPOCH", e)
