"""The cocotb testbench base every testbench in ``sim/`` builds on.

* :class:`ClockReset`: the clock (started at construction, reset held from
  time zero so nothing moves before the first :meth:`ClockReset.reset`),
  ``cycles`` and ``reset``. Enough for a DUT without buses (``fp32_add``).
* :class:`StreamTB`: a :class:`ClockReset` with the SUME AXI4-Stream pair
  (``s_axis`` in, ``m_axis`` out, TUSER = length | source port << 16 |
  destination ports << 24) and the AXI4-Lite register port ``s_axil``. The
  streams are either the cocotbext-axi source and sink or a
  :class:`LeanStream` (whole beats written every clock, for throughput and
  soak runs where the BFMs' per-beat cost dominates).
* :meth:`StreamTB.set_stress`: the two stress axes, source idle insertion
  and sink backpressure, each on or off (or a pattern of its own) and
  independent of the workload a test sends; stream tests are parametrized
  over both with ``@cocotb.parametrize(idle=STRESS, backpressure=STRESS)``.

Expected values never come from here: the testbenches compare with
:mod:`hostdrv.switch.reference`. The traffic the switch tests share is in
:mod:`sim.common.switch_scenario`.
"""

from __future__ import annotations

import itertools
import logging
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, First, RisingEdge, with_timeout
from cocotbext.axi import (
    AxiLiteBus,
    AxiLiteMaster,
    AxiResp,
    AxiStreamBus,
    AxiStreamFrame,
    AxiStreamSink,
    AxiStreamSource,
)

from hostdrv.wire import regmap

STRESS = [False, True]
"""Values of each stress axis for ``@cocotb.parametrize(idle=STRESS, backpressure=STRESS)``."""

Stress = bool | float | Iterable[int] | None
"""One stress axis: off (False/None/0), on with the testbench's default (True), a
probability per clock (float, :class:`LeanStream` only) or a pause pattern (1 = pause)."""


def cycle_pause(pattern: Sequence[int]) -> Iterator[int]:
    """A pause generator repeating ``pattern`` (1 = pause that clock)."""
    return itertools.cycle(list(pattern))


def high(sig: Any) -> bool:
    """A 1-bit signal is resolved and 1."""
    v = sig.value
    return v.is_resolvable and int(v) == 1


def model_refuses(model: Any, name: str, value: int) -> None:
    """The golden model refuses ``value`` for register ``name`` (``ValueError``) and keeps its state."""
    try:
        model.write(name, value)
    except ValueError:
        return
    raise AssertionError(f"the model took {name} = {value:#x}")


def frame_beats(frames: Iterable[tuple[bytes, int]], nbytes: int) -> list[tuple[int, int, int, int]]:
    """Beats (tdata, tkeep, tuser, tlast) of ``(frame, source port)`` pairs on a bus of ``nbytes``."""
    full = (1 << nbytes) - 1
    out = []
    for data, port in frames:
        user = len(data) | port << 16
        n = (len(data) + nbytes - 1) // nbytes
        for i in range(n):
            chunk = data[i * nbytes:(i + 1) * nbytes]
            keep = full if len(chunk) == nbytes else (1 << len(chunk)) - 1
            out.append((int.from_bytes(chunk, "little"), keep, user, int(i == n - 1)))
    return out


class ClockReset:
    """A clock from time zero and a synchronous active-high reset held until :meth:`reset`."""

    def __init__(self, dut: Any, clk_ns: float, *, clk: str = "clk", rst: str = "rst",
                 idle_inputs: Sequence[str] = ()) -> None:
        self.dut = dut
        self.log = logging.getLogger("cocotb.tb")
        self.log.setLevel(logging.INFO)
        self.clk = getattr(dut, clk)
        self.rst = getattr(dut, rst)
        self.clk_ns = clk_ns
        self.rst.setimmediatevalue(1)
        for name in idle_inputs:
            getattr(dut, name).setimmediatevalue(0)
        cocotb.start_soon(Clock(self.clk, clk_ns, unit="ns").start())

    async def cycles(self, n: int) -> None:
        await ClockCycles(self.clk, n)

    async def reset(self, cycles: int = 4, after: int = 4) -> None:
        """Reset for ``cycles`` clocks, then ``after`` clocks out of reset."""
        self.rst.value = 1
        await ClockCycles(self.clk, cycles)
        self.rst.value = 0
        await ClockCycles(self.clk, after)


_STREAM_INPUTS = ("s_axis_tvalid", "s_axis_tdata", "s_axis_tkeep", "s_axis_tlast",
                  "s_axis_tuser", "m_axis_tready")
_AXIL_INPUTS = ("s_axil_awvalid", "s_axil_wvalid", "s_axil_bready", "s_axil_arvalid",
                "s_axil_rready")


class StreamTB(ClockReset):
    """Clock, reset, the AXI4-Stream pair (BFMs or a lean driver) and the AXI4-Lite master.

    ``lean=True`` drives the streams with a :class:`LeanStream` instead of the
    cocotbext-axi source and sink. ``bfms_after_reset=True`` creates the bus
    models at the first :meth:`reset` (they sample the DUT's ready outputs,
    which some DUTs leave undefined until reset); otherwise at construction.
    ``IDLE_PATTERN`` / ``BACKPRESSURE_PATTERN`` are what ``set_stress(True, True)``
    applies; a testbench overrides them or :meth:`stress_pattern`.
    """

    IDLE_PATTERN: Sequence[int] = (1, 1, 1, 0)
    BACKPRESSURE_PATTERN: Sequence[int] = (1, 1, 1, 0)
    LEAN_STRESS = 0.25
    """Probability per clock that ``set_stress(True, ...)`` gives a :class:`LeanStream`."""

    def __init__(self, dut: Any, clk_ns: float, *, lean: bool = False,
                 bfms_after_reset: bool = False, axil: bool = True) -> None:
        super().__init__(dut, clk_ns, idle_inputs=_STREAM_INPUTS + (_AXIL_INPUTS if axil else ()))
        self.width = len(dut.s_axis_tdata)
        self.bytes = self.width // 8
        self.source: AxiStreamSource | None = None
        self.sink: AxiStreamSink | None = None
        self.axil: AxiLiteMaster | None = None
        self.lean: LeanStream | None = None
        self._want_axil = axil
        self._lean = lean
        if lean:
            self.lean = LeanStream(dut, self.clk)
        if not bfms_after_reset:
            self._make_bfms()

    def _make_bfms(self) -> None:
        dut = self.dut
        if not self._lean:
            self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), self.clk, self.rst)
            self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), self.clk, self.rst)
        else:
            dut.m_axis_tready.value = 1
        if self._want_axil:
            self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), self.clk, self.rst)
        # the BFMs log every frame at INFO
        for name in ("s_axis", "m_axis", "s_axil"):
            logging.getLogger(f"cocotb.{dut._name}.{name}").setLevel(logging.WARNING)

    async def reset(self, cycles: int = 4, after: int = 4) -> None:
        await super().reset(cycles, after)
        if self.axil is None and self._want_axil or self.source is None and not self._lean:
            self._make_bfms()

    # -- stress -----------------------------------------------------------------
    def stress_pattern(self, kind: str) -> Iterator[int]:
        """The pause generator ``set_stress(True)`` applies: ``kind`` is ``idle`` or ``backpressure``."""
        return cycle_pause(self.IDLE_PATTERN if kind == "idle" else self.BACKPRESSURE_PATTERN)

    def set_stress(self, idle: Stress, backpressure: Stress) -> None:
        """Source idle insertion and sink backpressure, independently; False turns one off."""
        if self.lean is not None:
            self.lean.idle = self._probability(idle)
            self.lean.backpressure = self._probability(backpressure)
            return
        assert self.source is not None and self.sink is not None
        self.source.set_pause_generator(self._generator(idle, "idle"))
        self.sink.set_pause_generator(self._generator(backpressure, "backpressure"))
        if not backpressure:
            self.sink.pause = False
        if not idle:
            self.source.pause = False

    def _generator(self, axis: Stress, kind: str) -> Iterator[int] | None:
        if axis is None or axis is False:
            return None
        if axis is True:
            return self.stress_pattern(kind)
        if isinstance(axis, float):
            raise TypeError("a probability is for the lean driver; the BFMs take a pattern")
        return iter(axis)  # type: ignore[arg-type]

    def _probability(self, axis: Stress) -> float:
        if axis is None or axis is False:
            return 0.0
        if axis is True:
            return self.LEAN_STRESS
        if isinstance(axis, (int, float)):
            return float(axis)
        raise TypeError("the lean driver takes a probability per clock")

    # -- AXI4-Lite ----------------------------------------------------------------
    async def read(self, name: str) -> int:
        """A register by its regmap name."""
        assert self.axil is not None
        return int(await self.axil.read_dword(regmap.REGISTERS[name].addr))

    async def write_resp(self, addr: int, data: bytes | int) -> AxiResp:
        """A raw write (``data`` bytes at byte address ``addr``: its strobes; an int is a
        whole word); the response."""
        assert self.axil is not None
        if isinstance(data, int):
            data = data.to_bytes(4, "little")
        return AxiResp((await self.axil.write(addr, data)).resp)

    async def write_reg(self, name: str, value: int) -> None:
        """A whole-word register write that must answer OKAY (the DUT only)."""
        resp = await self.write_resp(regmap.REGISTERS[name].addr, value)
        assert resp == AxiResp.OKAY, f"write {name} = {value:#x} answered {resp!r}"

    # -- AXI4-Stream --------------------------------------------------------------
    async def send_frame(self, frame: bytes, port: int) -> None:
        """Queue one frame from one-hot source ``port`` (TUSER = length | port << 16)."""
        if self.lean is not None:
            self.lean.send(frame, port)
        else:
            assert self.source is not None
            await self.source.send(AxiStreamFrame(frame, tuser=len(frame) | port << 16))

    async def recv_frame(self, timeout_ns: float | None = None) -> tuple[bytes, int]:
        """The next output frame and its TUSER (waits at most ``timeout_ns``)."""
        if self.lean is not None:
            return await self.lean.recv(None if timeout_ns is None else int(timeout_ns / self.clk_ns))
        assert self.sink is not None
        rx = self.sink.recv()
        got = await (with_timeout(rx, timeout_ns, "ns") if timeout_ns else rx)
        tuser = got.tuser[0] if isinstance(got.tuser, list) else int(got.tuser or 0)
        return bytes(got.tdata), tuser

    def recv_pending(self) -> int:
        """Output frames received and not yet taken."""
        if self.lean is not None:
            return len(self.lean.out)
        assert self.sink is not None
        return self.sink.count()

    def recv_nowait(self) -> tuple[bytes, int] | None:
        """The next output frame if one is waiting."""
        if self.lean is not None:
            return self.lean.out.popleft() if self.lean.out else None
        assert self.sink is not None
        if self.sink.empty():
            return None
        got = self.sink.recv_nowait()
        tuser = got.tuser[0] if isinstance(got.tuser, list) else int(got.tuser or 0)
        return bytes(got.tdata), tuser

    async def send_done(self, stall_clocks: int = 200_000) -> None:
        """Every queued input frame has gone in.

        Raises ``AssertionError`` when no queued frame started for ``stall_clocks`` clocks
        (the DUT holds its input: a hang, named instead of running until the job's limit)."""
        def left() -> int:
            if self.lean is not None:
                return len(self.lean.pending) + bool(self.lean.busy)
            assert self.source is not None
            return self.source.count() + (not self.source.idle())

        still, before = 0, left()
        while before:
            if self.lean is not None:
                await ClockCycles(self.clk, 8)
            else:  # returns the clock the source goes idle, as its wait() does
                assert self.source is not None
                await First(self.source.idle_event.wait(), ClockCycles(self.clk, 8))
            now = left()
            still = still + 8 if now == before else 0
            before = now
            if still >= stall_clocks:
                raise AssertionError(f"the DUT took no new input frame for {still} clocks "
                                     f"({now} frames still queued): it stalls")


class LeanStream:
    """A whole-beat AXI4-Stream driver and monitor: one coroutine, one write per port per clock.

    Frames queued with :meth:`send` go in back to back (a frame's first beat is
    valid the clock after the previous frame's last beat was taken); output frames collect
    in ``out`` as ``(bytes, tuser)``. ``idle`` and ``backpressure`` are
    probabilities per clock, drawn from ``rand`` (idle first, only while a beat
    waits; then backpressure), so a seeded run is reproducible. With ``record``
    the clock numbers of accepted input beats (``in_clocks``) and of each output
    frame's first beat (``out_first_clocks``) are kept; ``gaps`` counts clocks
    inside an output frame with the sink ready and no valid beat.
    """

    def __init__(self, dut: Any, clk: Any, *, rand: Callable[[], float] | None = None,
                 idle: float = 0.0, backpressure: float = 0.0, record: bool = False) -> None:
        import random

        self.dut = dut
        self.clk = clk
        self._cur = bytearray()
        self.rand = rand or random.Random(0).random
        self.idle = idle
        self.backpressure = backpressure
        self.record = record
        self.nbytes = len(dut.s_axis_tdata) // 8
        self.pending: deque[tuple[bytes, int]] = deque()
        self.out: deque[tuple[bytes, int]] = deque()
        self.n_out = 0
        self.in_clocks: list[int] = []
        self.out_first_clocks: list[int] = []
        self.gaps = 0
        self.clock = 0
        self.last_activity = 0
        self._beats: deque[tuple[int, int, int, int]] = deque()
        dut.s_axis_tvalid.value = 0
        dut.m_axis_tready.value = 1
        self._task = cocotb.start_soon(self._run())

    @property
    def busy(self) -> bool:
        """Input frames or beats still to go in."""
        return bool(self.pending or self._beats)

    def send(self, frame: bytes, port: int) -> None:
        self.pending.append((frame, port))

    def stop(self) -> None:
        self._task.cancel()
        self.dut.s_axis_tvalid.value = 0
        self.dut.m_axis_tready.value = 1

    async def recv(self, timeout_clocks: int | None = None) -> tuple[bytes, int]:
        """The next output frame, waiting at most ``timeout_clocks``."""
        waited = 0
        while not self.out:
            await ClockCycles(self.clk, 4)
            waited += 4
            if timeout_clocks is not None and waited > timeout_clocks:
                raise AssertionError("timeout waiting for an output frame")
        return self.out.popleft()

    async def _run(self) -> None:
        dut = self.dut
        edge = RisingEdge(self.clk)
        beats = self._beats
        nb = self.nbytes
        s_valid, s_ready = dut.s_axis_tvalid, dut.s_axis_tready
        s_data, s_keep, s_user, s_last = (dut.s_axis_tdata, dut.s_axis_tkeep, dut.s_axis_tuser,
                                          dut.s_axis_tlast)
        m_valid, m_ready = dut.m_axis_tvalid, dut.m_axis_tready
        m_data, m_user, m_last = dut.m_axis_tdata, dut.m_axis_tuser, dut.m_axis_tlast
        cur = self._cur
        valid = 0
        ready = 1
        while True:
            if not beats and self.pending:
                beats.extend(frame_beats([self.pending.popleft()], nb))
            if beats and not (self.idle and self.rand() < self.idle):
                d, k, u, last = beats[0]
                s_data.value = d
                s_keep.value = k
                s_user.value = u
                s_last.value = last
                if not valid:
                    s_valid.value = 1
                valid = 1
            elif valid:
                s_valid.value = 0
                valid = 0
            r = 0 if (self.backpressure and self.rand() < self.backpressure) else 1
            if r != ready:
                m_ready.value = r
                ready = r
            await edge
            self.clock += 1
            if valid and int(s_ready.value):
                beats.popleft()
                self.last_activity = self.clock
                if self.record:
                    self.in_clocks.append(self.clock)
            if ready and int(m_valid.value):
                if not cur and self.record:
                    self.out_first_clocks.append(self.clock)
                cur += int(m_data.value).to_bytes(nb, "little")
                if int(m_last.value):
                    self.out.append((bytes(cur), int(m_user.value)))
                    self.n_out += 1
                    cur.clear()
                self.last_activity = self.clock
            elif ready and cur:
                self.gaps += 1

    async def run(self, frames: Sequence[tuple[bytes, int]], n_out: int, *,
                  timeout: int = 100000, tail: int = 60) -> list[tuple[bytes, int]]:
        """Send ``frames``, wait for ``n_out`` more output frames (or ``timeout`` quiet clocks
        after the last input), then ``tail`` clocks with the sink ready in which no
        further frame may start. Returns the output frames."""
        start = self.n_out
        self.pending.extend(frames)
        while True:
            await ClockCycles(self.clk, 16)
            if self.busy:
                continue
            if self.n_out - start >= n_out or self.clock - self.last_activity > timeout:
                break
        self.backpressure = 0.0
        self.idle = 0.0
        before = self.n_out
        await ClockCycles(self.clk, tail)
        if self.n_out != before or self._cur or int(self.dut.m_axis_tvalid.value):
            raise AssertionError("output after the expected frames")
        return [self.out.popleft() for _ in range(len(self.out))]


class StallMonitor:
    """Counts accepted input beats and clocks where ``s_axis`` is valid but not ready."""

    def __init__(self, dut: Any, clk: Any | None = None) -> None:
        self.dut = dut
        self.clk = clk if clk is not None else dut.clk
        self.stalls = 0
        self.beats = 0
        self.running = True
        self.task = cocotb.start_soon(self._run())

    async def _run(self) -> None:
        edge = RisingEdge(self.clk)
        valid, ready = self.dut.s_axis_tvalid, self.dut.s_axis_tready
        while self.running:
            await edge
            if int(valid.value):
                if int(ready.value):
                    self.beats += 1
                else:
                    self.stalls += 1

    async def stop(self) -> None:
        self.running = False
        await self.task
