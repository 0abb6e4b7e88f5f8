"""The sim switch: the RTL (Verilator) behind the soft switch's UDP server.

Run it as ``netrl simswitch --listen 127.0.0.1:20060`` (or ``netfpga-simswitch``, ``python -m
hostdrv.switch.sim``); clients reach it as ``sim://host:port`` and
cannot tell it from the soft switch (``soft://``) except by speed: every
datagram becomes a frame driven into ``s_axis`` of ``hw/rtl/nrl_switch.v`` beat
by beat, and every frame the RTL emits on ``m_axis`` goes back out as a
datagram. Register reads and writes on the control channel are AXI4-Lite
transactions on the simulated pins, served once every datagram received before
them has taken effect (the RTL is clocked until the work that makes no output,
such as an UPDATE's pairs, is done: ``RtlSwitch.drain``), so a read reflects
every datagram the switch received before it (``docs/protocol.md`` section 9).

:class:`SimSwitch` is :class:`~hostdrv.switch.soft.SoftSwitch` serving an
:class:`~hostdrv.switch.rtl.RtlSwitch` instead of the reference model, so
addressing, multicast fan-out, the control channel and batching are the soft
switch's own code. :class:`SimSwitchProcess` runs one in a child process.

URL scheme
----------
``sim://host:port`` is a backend of :data:`hostdrv.client.transport.BACKENDS` (UDP,
as ``soft://``), so every client accepts it unchanged. The port is required
and ``?key=FILE`` is the only option, as for ``soft://``.

Frames the AXI4-Stream cannot carry (over 65535 bytes: a datagram of 65494
bytes or more) are judged host-side by :class:`~hostdrv.switch.rtl.RtlSwitch`
exactly as the model judges them (``BAD_LENGTH``), so they are counted too.

Command line
------------
``netfpga-simswitch`` (``python -m hostdrv.switch.sim``) options:

``--listen HOST:PORT``
    Address to bind (default ``127.0.0.1:20060``; port 0 picks one); prints
    ``listening sim://host:port``.
``--top``, ``--param K=V``, ``--build-dir``, ``--idle-cycles``, ``--trace FILE.vcd``, ``--build-only``
    What to simulate and how (see ``--help``).
``--control-key FILE``
    Execute only control requests signed with the key in FILE, from any
    address (``docs/protocol.md`` section 9); without it only loopback may use
    the control channel. Clients pass the same file (``SwitchControl(url,
    key_file=FILE)``, ``sim://host:port?key=FILE`` or ``NETRL_CONTROL_KEY``).

On SIGINT/SIGTERM it prints the RTL's nonzero counters, the server's figures
(``stats``, with ``rx_overflow`` and ``ctrl_refused``) and the simulation's.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType

from hostdrv.switch.rtl import RtlSwitch
from hostdrv.switch.soft import SoftSwitch, SoftSwitchProcess
from hostdrv.switch.soft_control import parse_job_key

__all__ = [
    "DEFAULT_PARAMS",
    "SimSwitch",
    "SimSwitchProcess",
    "main",
]

DEFAULT_PARAMS: Mapping[str, Mapping[str, int]] = MappingProxyType({
    "nrl_switch": MappingProxyType({"RPL_CAPACITY": 1024}),
    "replay_engine": MappingProxyType({"CAPACITY": 1024}),
})
"""Parameters used unless overridden: the soft switch's default replay capacity (1024
records) instead of the board's 16384, which also shortens the sum tree's clearing sweep."""


# ---------------------------------------------------------------------------
# server


class SimSwitch(SoftSwitch):
    """The soft switch's UDP server running the RTL
    (:class:`~hostdrv.switch.rtl.RtlSwitch`).

    Parameters
    ----------
    listen:
        ``"host:port"`` or (host, port); port 0 picks a free one.
    top, params, build_dir, idle_cycles, trace:
        Passed to :class:`~hostdrv.switch.rtl.RtlSwitch` (``params`` default:
        :data:`DEFAULT_PARAMS` of the top).
    switch:
        Serve this already built :class:`~hostdrv.switch.rtl.RtlSwitch` instead.
    log_arrivals, control_key, job_keys:
        As :class:`~hostdrv.switch.soft.SoftSwitch` (a job key for a job the RTL's
        ``JOBS`` does not serve signs requests the RTL answers as no register).

    Examples
    --------
    >>> with SimSwitch("127.0.0.1:0") as sw:                   # doctest: +SKIP
    ...     agg = Aggregator(sw.url, worker=0)
    """

    log_name = "netfpga-simswitch"

    def __init__(self, listen: str | tuple[str, int] = ("127.0.0.1", 0), *,
                 top: str = "nrl_switch", params: Mapping[str, int | str] | None = None,
                 build_dir: str | Path | None = None, idle_cycles: int | None = None,
                 trace: str | Path | None = None, switch: RtlSwitch | None = None,
                 log_arrivals: bool = False,
                 control_key: bytes | str | os.PathLike[str] | None = None,
                 job_keys: Mapping[int, bytes | str | os.PathLike[str]] | None = None) -> None:
        if switch is None:
            merged: dict[str, int | str] = dict(DEFAULT_PARAMS.get(top, {}))
            merged.update(params or {})
            switch = RtlSwitch(top, merged, build_dir, idle_cycles=idle_cycles, trace=trace)
        self.rtl = switch
        # SoftSwitch only calls process/read/write/counters on its model, which
        # RtlSwitch provides with the same contract.
        super().__init__(listen, log_arrivals=log_arrivals, model=switch,  # type: ignore[arg-type]
                         control_key=control_key, job_keys=job_keys)

    @property
    def url(self) -> str:
        """``sim://host:port`` for clients."""
        host, port = self.address
        return f"sim://{host}:{port}"

    @property
    def sim_stats(self) -> dict[str, float]:
        """Simulation figures: clocks, beats in/out, and clocks per second of busy time."""
        with self.lock:
            cycles = self.rtl.cycles
            beats_in, beats_out = self.rtl.beats
        busy = self.stats["busy_us"] / 1e6
        return {"cycles": cycles, "beats_in": beats_in, "beats_out": beats_out,
                "busy_s": round(busy, 3),
                "cycles_per_s": round(cycles / busy) if busy > 0 else 0.0}

    def _control(self, data: memoryview, addr: tuple[str, int]) -> bytes:
        """A control request, served after every datagram received before it has taken
        effect (:meth:`~hostdrv.switch.rtl.RtlSwitch.drain`): the ordering rule of
        ``docs/protocol.md`` section 9."""
        self.rtl.drain()
        return super()._control(data, addr)

    def close(self) -> None:
        """Stop serving, release the socket and the simulation (closing the waveform)."""
        super().close()
        self.rtl.close()


class SimSwitchProcess(SoftSwitchProcess):
    """A :class:`SimSwitch` in a child process (``python -m hostdrv.switch.sim``).

    Parameters
    ----------
    listen:
        Address to bind (port 0: a free one; the child reports it).
    args:
        Extra command-line options (``["--param", "RPL_CAPACITY=4096"]``).
    ready_timeout:
        Seconds to wait for the child to listen (the first run builds the RTL).

    Raises
    ------
    RuntimeError
        When the child exits or stays silent before it listens.
    """

    module = "hostdrv.switch.sim"
    scheme = "sim"

    def __init__(self, listen: str = "127.0.0.1:0", args: Sequence[str] = (), *,
                 ready_timeout: float = 600.0) -> None:
        super().__init__(listen, args, ready_timeout=ready_timeout)


# ---------------------------------------------------------------------------
# command line


def _param(text: str) -> tuple[str, int | str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected K=V, got {text!r}")
    try:
        return key, int(value, 0)
    except ValueError:
        return key, value


def build_parser(prog: str = "netfpga-simswitch") -> argparse.ArgumentParser:
    """Command-line options of ``netfpga-simswitch`` (``prog``: the name usage lines show)."""
    p = argparse.ArgumentParser(
        prog=prog,
        description="Serve the netfpga-rl switch RTL (Verilator) behind a UDP socket; "
                    "clients use sim://host:port.")
    p.add_argument("--listen", default="127.0.0.1:20060", help="host:port to bind (port 0: any)")
    p.add_argument("--top", default="nrl_switch",
                   help="top module in hw/rtl (nrl_switch; grad_agg or replay_engine alone)")
    p.add_argument("--param", action="append", type=_param, default=[], metavar="K=V",
                   help="Verilog parameter, repeatable (e.g. RPL_CAPACITY=4096 DATA_WIDTH=512)")
    p.add_argument("--build-dir",
                   help="Verilator build directory (default: sim_build/rtlsim/... in a checkout, "
                        "~/.cache/netfpga-rl/rtlsim/... installed; NRL_SIM_BUILD)")
    p.add_argument("--idle-cycles", type=int, default=None,
                   help="quiet clocks on m_axis that end the processing of a datagram "
                        "(default 96 + 3 log2 RPL_CAPACITY)")
    p.add_argument("--trace", metavar="FILE.vcd", help="dump a VCD waveform of the whole run")
    p.add_argument("--build-only", action="store_true", help="build (or find) the model and exit")
    p.add_argument("--control-key", metavar="FILE",
                   help="execute only control requests signed with the key in FILE (HMAC-SHA256, "
                        "docs/protocol.md section 9), from any address; default: unsigned "
                        "requests from loopback only")
    p.add_argument("--job-key", metavar="J:FILE", action="append", type=parse_job_key,
                   default=[],
                   help="job J's control key (repeatable; needs --control-key): requests "
                        "signed with it (key id J+1) read any register and write only job J's "
                        "non-admin job registers (docs/protocol.md section 11)")
    return p


def main(argv: Sequence[str] | None = None, prog: str = "netfpga-simswitch") -> int:
    """Entry point: serve until SIGINT/SIGTERM, then print counters and simulation figures."""
    args = build_parser(prog).parse_args(argv)
    params: dict[str, int | str] = dict(DEFAULT_PARAMS.get(args.top, {}))
    params.update(dict(args.param))
    try:
        rtl = RtlSwitch(args.top, params, args.build_dir, idle_cycles=args.idle_cycles,
                        trace=args.trace)
    except (OSError, ValueError, RuntimeError) as e:
        print(f"{SimSwitch.log_name}: {e}", file=sys.stderr)
        return 2
    if args.build_only:
        print(f"{'built' if rtl.build.built else 'cached'} {rtl.build.library}", flush=True)
        rtl.close()
        return 0
    try:
        sw = SimSwitch(args.listen, switch=rtl, control_key=args.control_key,
                       job_keys=dict(args.job_key))
    except (OSError, ValueError) as e:
        print(f"{SimSwitch.log_name}: {e}", file=sys.stderr)
        rtl.close()
        return 2

    def _stop(_signum: int, _frame: object) -> None:
        sw._stop.set()

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    print(f"listening {sw.url}", flush=True)
    sw.serve_forever()
    sw.sock.close()
    counters = {k: v for k, v in rtl.counters().items() if v}
    print("counters " + json.dumps(counters), flush=True)
    print("stats " + json.dumps(sw.stats), flush=True)
    print("sim " + json.dumps(sw.sim_stats), flush=True)
    rtl.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
