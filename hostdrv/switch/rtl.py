"""The switch RTL in Verilator, behind the :class:`~hostdrv.switch.reference.SwitchModel` API.

:class:`RtlSwitch` builds ``hw/rtl/<top>.v`` (and the sources of
``hw/rtl/<top>.f``) with Verilator through pyverilator, loads the model in
this process and drives its pins: a frame goes in beat by beat on
``s_axis`` (TUSER length and one-hot source port), the clock runs until the
switch has been quiet for :attr:`RtlSwitch.idle_cycles` clocks, and every
frame that left on ``m_axis`` comes back as an :class:`~hostdrv.switch.reference.Egress`
with the TUSER destination bitmap. Registers are AXI4-Lite transactions on
the ``s_axil`` pins. ``process``, ``read``, ``write`` and ``counters`` have the
model's contract, so an ``RtlSwitch`` replaces the model anywhere (the
``sim://`` server, :mod:`hostdrv.switch.sim`, serves one over UDP).

A frame longer than 65535 bytes cannot enter the RTL (TUSER carries a 16-bit
length); only a soft/sim switch datagram can make one. :meth:`RtlSwitch.process`
judges it host-side with the reference model, exactly as the model would (the
opcode's RX counter, then ``CNT_DROP_BAD_LENGTH``; ``CNT_PASS`` for a
non-protocol frame), and keeps those counts as offsets that :meth:`RtlSwitch.read`
and :meth:`RtlSwitch.counters` add to the RTL's counters (cleared with them by
``CTRL`` bit 31 and by :meth:`RtlSwitch.reset`).

Building (Verilator through pyverilator, one cached shared object per top and parameter
set under :data:`~hostdrv.switch.rtl_build.BUILD_ROOT`) is :mod:`hostdrv.switch.rtl_build`;
this module re-exports its names.

Speed
-----
pyverilator exposes every port as ctypes getters and setters, one call per
32-bit word. Driving a 256-bit bus that way costs tens of ctypes calls per
clock, so the clock loop lives in a small C++ harness (``rtl_harness.cpp`` next
to this module, :data:`HARNESS_CPP`) compiled into the same shared object as pyverilator's wrapper; Python calls
it once per frame (or per burst of frames) and once per register access.
"""

from __future__ import annotations

import contextlib
import ctypes
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from hostdrv.errors import UnknownRegisterError
from hostdrv.switch.reference import Egress, SwitchModel
from hostdrv.switch.rtl_build import (
    BUILD_ROOT,
    HARNESS_CPP,
    RTL_DIR,
    RtlBuild,
    RtlSimError,
    build_rtl,
    param_tag,
)
from hostdrv.wire import regmap

__all__ = [
    "BUILD_ROOT",
    "HARNESS_CPP",
    "RTL_DIR",
    "RtlBuild",
    "RtlSimError",
    "RtlSwitch",
    "build_rtl",
    "param_tag",
]

_ONE_HOT = frozenset(1 << i for i in range(8))
_M32 = 0xFFFFFFFF
_MAX_FRAME = 0xFFFF  # TUSER[15:0]: the longest frame the stream carries
_CTRL_CLEAR = 1 << 31
_META = 4  # uint32 words per output frame: length, dst ports, TUSER length, clock of last beat


# ---------------------------------------------------------------------------
# the simulated switch


class RtlSwitch:
    """The switch RTL simulated by Verilator, with the :class:`~hostdrv.switch.reference.SwitchModel` API.

    Parameters
    ----------
    top:
        Top module in ``hw/rtl`` (``nrl_switch``; an engine alone such as
        ``grad_agg`` or ``replay_engine`` works too, it has the same pins).
    params:
        Verilog parameters, e.g. ``{"RPL_CAPACITY": 1024, "DATA_WIDTH": 512}``.
    build_dir:
        Build directory (default :data:`BUILD_ROOT` ``/<top>_<params>``).
    idle_cycles:
        Clocks of silence on ``m_axis`` after the last input beat that end a
        :meth:`process` call. Must exceed the longest silence between an input
        and its outputs: a PUSH_ACK waits for the sum tree (87 clocks measured
        at C = 1024, about ``3 log2 C + 57``, before the tree's reads gained a
        second register, one more clock per level). Default ``96 + 4 log2 C``
        (``RPL_CAPACITY`` read after reset; 96 without a replay engine).
    max_cycles:
        Clocks one :meth:`process` call may take before :class:`RtlSimError`.
    trace:
        Write a VCD waveform of everything simulated to this path.
    reset_cycles:
        Clocks of ``rst`` at start and in :meth:`reset`.

    Examples
    --------
    >>> sw = RtlSwitch("nrl_switch", {"RPL_CAPACITY": 1024})  # doctest: +SKIP
    >>> sw.write("AGG_MEMBERS", 2)                            # doctest: +SKIP
    >>> sw.process(frame, src_port=0x01)                       # doctest: +SKIP
    [Egress(frame=b'...', dst_ports=5)]
    """

    def __init__(self, top: str = "nrl_switch", params: Mapping[str, int | str] | None = None,
                 build_dir: str | Path | None = None, *, idle_cycles: int | None = None,
                 max_cycles: int = 1_000_000, trace: str | Path | None = None,
                 reset_cycles: int = 16, quiet: bool = True) -> None:
        if (idle_cycles is not None and idle_cycles < 1) or max_cycles < 1:
            raise ValueError("idle_cycles and max_cycles must be positive")
        self.top = top
        self.params = dict(params or {})
        self.idle_cycles = idle_cycles or 128
        self._auto_idle = idle_cycles is None
        self.max_cycles = max_cycles
        self.reset_cycles = reset_cycles
        self.build = build_rtl(top, self.params, build_dir, quiet=quiet)
        # pyverilator built the library; its Python model class drives one pin per
        # ctypes call, so the harness's own entry points are used instead.
        lib = ctypes.CDLL(str(self.build.library))
        vp, u32, u64, i64 = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int64
        pu32 = ctypes.POINTER(ctypes.c_uint32)
        for name, res, argt in (
            ("nrl_create", vp, []),
            ("nrl_destroy", None, [vp]),
            ("nrl_bytes_per_beat", ctypes.c_uint, []),
            ("nrl_cycles", u64, [vp]),
            ("nrl_beats_in", u64, [vp]),
            ("nrl_beats_out", u64, [vp]),
            ("nrl_last_in", u64, [vp]),
            ("nrl_trace_open", ctypes.c_int, [vp, ctypes.c_char_p, ctypes.c_int]),
            ("nrl_trace_close", None, [vp]),
            ("nrl_reset", None, [vp, ctypes.c_uint]),
            ("nrl_step", None, [vp, u64]),
            ("nrl_process", i64, [vp, ctypes.c_char_p, pu32, pu32, u32, u32, u32, u64]),
            ("nrl_out_frames", u32, [vp]),
            ("nrl_out_bytes", u64, [vp]),
            ("nrl_out_take", None, [vp, ctypes.POINTER(ctypes.c_char), pu32]),
            ("nrl_axil_write", ctypes.c_int, [vp, u32, u32, u32]),
            ("nrl_axil_read", i64, [vp, u32, u32]),
        ):
            fn = getattr(lib, name)
            fn.restype = res
            fn.argtypes = argt
        self._lib = lib
        self._h: int | None = lib.nrl_create()
        self._late: list[Egress] = []
        """Frames that left during :meth:`drain` (none expected), returned by the next call."""
        self._undrained = False
        self.latencies: list[int] = []
        """Clocks from the last input beat to the last beat of each frame of the last call."""
        self.tuser_length_errors = 0
        """Output frames whose TUSER[15:0] differed from their length (should stay 0)."""
        self._host_counts: dict[str, int] = {}
        """Counts of the frames judged host-side (over 65535 bytes), added to the RTL's."""
        self.bytes_per_beat = int(lib.nrl_bytes_per_beat())
        self.trace_path: Path | None = None
        if trace is not None:
            self.open_trace(trace)
        self.reset()

    # -- lifetime ----------------------------------------------------------------
    def reset(self) -> None:
        """Pulse ``rst`` (every register back to its reset value, memories keep contents)."""
        self._lib.nrl_reset(self._handle, self.reset_cycles)
        self._lib.nrl_step(self._handle, 8)
        self._take()
        self._host_counts = {}
        self.jobs = 1
        self.jobs = max(self._read_param("JOBS"), 1)
        """``JOBS``: the job pages this RTL decodes (nrl_switch's parameter, 1 to 8; an engine
        alone, without the register, counts as 1)."""
        self._validator = self._new_validator()
        self._settle_replay()
        self._take()
        cap = self._read_param("RPL_CAPACITY")
        if self._auto_idle:
            self.idle_cycles = 96 + 4 * max(cap - 1, 1).bit_length()
        self.drain_cycles = 256 + 4 * max(cap - 1, 1).bit_length()
        """Clocks :meth:`drain` runs: longer than any work a frame leaves behind without an
        output (an UPDATE's 128 pairs, one per clock, and the sum tree's update pipeline)."""
        self._undrained = False
        self._late = []

    def _read_param(self, name: str) -> int:
        """A parameter register, 0 when this top does not answer it."""
        try:
            return self.read(name)
        except RtlSimError:
            return 0

    def _settle_replay(self) -> None:
        """Clock through the replay sum tree's clearing sweep (after reset, RPL_RESET and, with
        several jobs, a table carved: a JOB_RPL_* or JOB_ENABLE write).

        The sweep zeroes the tree in C/2 clocks (with ``JOBS`` > 1 a table's leaves, one a
        clock: at most C) while nothing leaves the switch, so the quiet window of
        :meth:`process` cannot see it; a PUSH sent meanwhile would be acknowledged only after
        it.
        """
        cap = self._read_param("RPL_CAPACITY")
        if 0 < cap <= 1 << 24:
            self._lib.nrl_step(self._handle, (cap if self.jobs > 1 else cap // 2) + 64)

    def _new_validator(self) -> SwitchModel:
        """A model with this RTL's parameters: it checks written values exactly like the model."""
        def param(name: str, lo: int, hi: int, quantum: int, default: int) -> int:
            try:
                v = self.read(name)
            except RtlSimError:
                return default
            return v if lo <= v <= hi and v % quantum == 0 else default

        if self.jobs == 1:
            return SwitchModel(capacity=1, record_bytes=64,
                               max_slots=param("AGG_MAX_SLOTS", 1, 64, 1, 64),
                               max_elems=param("AGG_MAX_ELEMS", 16, 352, 16, 352))
        # several jobs: the share rules (section 11) compare with the memories' true sizes
        cap = param("RPL_CAPACITY", 4, 1 << 17, 1, 4)
        return SwitchModel(capacity=cap if cap & (cap - 1) == 0 else 4,
                           record_bytes=param("RPL_RECORD_BYTES", 64, 8192, 64, 64),
                           max_slots=param("AGG_MAX_SLOTS", 1, 64, 1, 64),
                           max_elems=param("AGG_MAX_ELEMS", 16, 352, 16, 352), jobs=self.jobs)

    @property
    def _handle(self) -> int:
        if self._h is None:
            raise RtlSimError("the simulated switch is closed")
        return self._h

    def close(self) -> None:
        """Close the waveform and free the simulated model."""
        if self._h is not None:
            self._lib.nrl_destroy(self._h)
            self._h = None

    def __enter__(self) -> RtlSwitch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    # -- waveforms -----------------------------------------------------------------
    def open_trace(self, path: str | Path, levels: int = 99) -> None:
        """Dump a VCD of everything simulated from now on to ``path`` (gtkwave, surfer)."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        if self._lib.nrl_trace_open(self._handle, str(p).encode(), levels) != 0:
            raise RtlSimError("this build has no tracing support")
        self.trace_path = p

    def close_trace(self) -> None:
        """Flush and close the waveform file."""
        self._lib.nrl_trace_close(self._handle)
        self.trace_path = None

    # -- statistics ----------------------------------------------------------------
    @property
    def cycles(self) -> int:
        """Clocks simulated since the model was created."""
        return int(self._lib.nrl_cycles(self._handle))

    @property
    def beats(self) -> tuple[int, int]:
        """(beats accepted on ``s_axis``, beats sent on ``m_axis``) so far."""
        return int(self._lib.nrl_beats_in(self._handle)), int(self._lib.nrl_beats_out(self._handle))

    # -- registers ---------------------------------------------------------------------
    def _bus_address(self, reg: str | int, job: int) -> tuple[regmap.Register, int]:
        """The register and its AXI4-Lite byte address: a name in job ``job``'s page, or a byte
        address (in any page, ``job`` then 0), as :meth:`SwitchModel.read` takes them.

        Raises
        ------
        UnknownRegisterError
            No such register, or a page of a job this RTL does not serve (``JOBS``): the
            address never reaches the bus (the RTL would answer SLVERR).
        """
        r = regmap.lookup(reg)
        if isinstance(reg, str):
            addr = regmap.job_address(r, job)
        elif job:
            raise UnknownRegisterError(f"{reg:#x} with job {job}: a byte address names its page")
        else:
            addr = int(reg)
        if addr // regmap.JOB_PAGE >= self.jobs:
            raise UnknownRegisterError(f"{regmap.label(addr)}: this switch serves {self.jobs} job(s)")
        return r, addr

    def read(self, reg: str | int, job: int = 0) -> int:
        """Read a register over AXI4-Lite (by name, in job ``job``'s page, or byte address, as
        the model).

        A counter also counts the frames judged host-side (see :meth:`process`).

        Raises
        ------
        ValueError
            For an unknown name or address (a page of a job beyond ``JOBS`` included).
        RtlSimError
            When the read never completes or answers an error response.
        """
        r, addr = self._bus_address(reg, job)
        v = int(self._lib.nrl_axil_read(self._handle, addr, 1000))
        if v < 0:
            raise RtlSimError(f"AXI4-Lite read of {r.name} (0x{addr:03X}) timed out")
        if v >> 32:
            raise RtlSimError(f"AXI4-Lite read of {r.name} (0x{addr:03X}) answered "
                              f"RRESP={v >> 32}")
        extra = self._host_counts.get(r.name)
        return (v + extra) & _M32 if extra else v & _M32

    def write(self, reg: str | int, value: int, job: int = 0) -> None:
        """Write a register over AXI4-Lite (addressed as :meth:`read`).

        Values are checked first exactly as :meth:`SwitchModel.write` checks
        them (the hardware refuses the same values itself, with SLVERR), so a
        caller sees the same ``ValueError`` from the RTL as from the model.

        Raises
        ------
        ValueError
            For an unknown or read-only register or an illegal value; nothing is written.
        RtlSimError
            When the write never completes or answers an error response.
        """
        r, addr = self._bus_address(reg, job)
        self._validator.write(addr, value)
        resp = int(self._lib.nrl_axil_write(self._handle, addr, int(value) & 0xFFFFFFFF, 1000))
        if resp < 0:
            raise RtlSimError(f"AXI4-Lite write of {r.name} (0x{addr:03X}) timed out")
        if resp:
            raise RtlSimError(f"AXI4-Lite write of {r.name} (0x{addr:03X}) answered BRESP={resp}")
        if (r.name == "RPL_RESET" and int(value) & 1) or (
                self.jobs > 1 and r.name.startswith(("JOB_RPL_", "JOB_ENABLE"))):
            self._settle_replay()
        elif r.name == "CTRL" and int(value) & _CTRL_CLEAR:
            self._host_counts.clear()

    def counters(self, job: int = 0) -> dict[str, int]:
        """Every ``CNT_*`` register of job ``job``'s page by name, read over AXI4-Lite (register
        map order), as :meth:`SwitchModel.counters`: a global counter (``CNT_PASS``) is a
        register of page 0 only, so another page's reads 0, as the model's copy there does.

        Raises
        ------
        ValueError
            For a job this RTL does not serve (``JOBS``).
        """
        if isinstance(job, bool) or not isinstance(job, int) or not 0 <= job < self.jobs:
            raise ValueError(f"job {job!r} out of range 0 .. {self.jobs - 1}")
        return {name: self.read(name, job=job) if job == 0 or regmap.REGISTERS[name].job else 0
                for name in regmap.COUNTERS}

    # -- frames --------------------------------------------------------------------------
    def process(self, frame: bytes | bytearray | memoryview, src_port: int) -> list[Egress]:
        """Send one frame into ``s_axis`` and collect what leaves ``m_axis``.

        Parameters
        ----------
        frame:
            The whole frame (destination MAC first, no FCS).
        src_port:
            One-hot SUME ingress port bitmap (TUSER[23:16]).

        Returns
        -------
        list[Egress]
            Frames emitted until the switch was quiet for :attr:`idle_cycles`
            clocks, in the order they left, with TUSER[31:24] as ``dst_ports``.
            A frame over 65535 bytes never enters the RTL: it is judged and
            counted host-side as the model does (``BAD_LENGTH``, or
            ``CNT_PASS`` and the model's flood for a non-protocol frame).

        Raises
        ------
        ValueError
            When ``src_port`` is not one-hot or the frame is empty.
        RtlSimError
            When the switch does not accept the frame or never goes quiet.
        """
        return self.process_burst([(frame, src_port)])

    def process_burst(self, frames: Iterable[tuple[bytes | bytearray | memoryview, int]], *,
                      gap: int = 0) -> list[Egress]:
        """Send frames back to back (``gap`` idle clocks between them), then collect outputs.

        At line rate the switch may interleave the replies of different
        engines, so the output order across engines can differ from a
        frame-by-frame run; within each engine it cannot. Frames over 65535
        bytes are judged host-side (:meth:`process`); what the model emits for
        them follows the RTL's outputs.
        """
        blobs: list[bytes] = []
        lens: list[int] = []
        ports: list[int] = []
        host: list[Egress] = []
        for frame, port in frames:
            if port not in _ONE_HOT:
                raise ValueError(f"src_port {port!r} must be a one-hot 8-bit port bitmap")
            n = len(frame)
            if n == 0:
                raise ValueError("frame of 0 bytes: a frame has at least one byte")
            if n > _MAX_FRAME:
                host += self._judge_host_side(frame, port)
                continue
            blobs.append(bytes(frame))
            lens.append(n)
            ports.append(port)
        if not blobs:
            return host
        count = len(blobs)
        self._undrained = True
        lens_a = (ctypes.c_uint32 * count)(*lens)
        ports_a = (ctypes.c_uint32 * count)(*ports)
        used = self._lib.nrl_process(self._handle, b"".join(blobs), lens_a, ports_a, count, gap,
                                     self.idle_cycles, self.max_cycles)
        outs = self._take()
        if self._late:
            outs, self._late = self._late + outs, []
        if used < 0:
            raise RtlSimError(f"{self.top}: {count} frame(s) not processed within "
                              f"{self.max_cycles} clocks (input stalled or output never quiet); "
                              f"{len(outs)} frame(s) left meanwhile")
        return outs + host if host else outs

    def _judge_host_side(self, frame: bytes | bytearray | memoryview, port: int) -> list[Egress]:
        """Judge a frame the stream cannot carry with the model; count it in the offsets.

        The validator model mirrors every register written through
        :meth:`write`, so its verdict is the model's; only its counters move.
        """
        v = self._validator
        before = v.counters()
        out = v.process(frame, port)
        counts = self._host_counts
        for name, value in v.counters().items():
            d = (value - before[name]) & _M32
            if d:
                counts[name] = (counts.get(name, 0) + d) & _M32
        return out

    def drain(self) -> None:
        """Let every frame given so far take effect before a register access.

        :meth:`process` returns once the outputs have been quiet for
        :attr:`idle_cycles`, which can be before the work that makes no output
        is done (the pairs of an UPDATE still entering the sum tree). This
        clocks :attr:`drain_cycles` more, once after any frame; a frame that
        leaves meanwhile (none is expected) is returned by the next :meth:`process`.
        """
        if self._undrained:
            self._undrained = False
            self._lib.nrl_step(self._handle, self.drain_cycles)
            self._late += self._take()

    def step(self, cycles: int) -> list[Egress]:
        """Clock ``cycles`` times with idle inputs; returns any frames that left meanwhile."""
        self._lib.nrl_step(self._handle, cycles)
        return self._take()

    def _take(self) -> list[Egress]:
        lib, h = self._lib, self._handle
        n = int(lib.nrl_out_frames(h))
        if n == 0:
            self.latencies = []
            return []
        buf = ctypes.create_string_buffer(max(1, int(lib.nrl_out_bytes(h))))
        meta = (ctypes.c_uint32 * (n * _META))()
        lib.nrl_out_take(h, buf, meta)
        raw = buf.raw
        last_in = int(lib.nrl_last_in(h)) & 0xFFFFFFFF
        out: list[Egress] = []
        lat: list[int] = []
        off = 0
        for i in range(n):
            length, dst, ulen, when = meta[i * _META:(i + 1) * _META]
            out.append(Egress(raw[off:off + length], dst))
            lat.append((when - last_in) & 0xFFFFFFFF)
            if ulen != length:
                self.tuser_length_errors += 1
            off += length
        self.latencies = lat
        return out


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m hostdrv.switch.rtl [TOP] [K=V ...]``: build (or find) a model, print
    where."""
    args = list(sys.argv[1:] if argv is None else argv)
    top = args.pop(0) if args and "=" not in args[0] else "nrl_switch"
    params = dict(a.split("=", 1) for a in args)
    b = build_rtl(top, params, quiet=False)
    print(f"{'built' if b.built else 'cached'} {b.library} in {b.seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
