"""``netrl regs``: read, write, dump and watch switch registers by name over any register URL.

::

    netrl regs soft://127.0.0.1:20050 read AGG_SLOTS
    netrl regs serial:///dev/ttyUSB1 read 0x048
    netrl regs udp://10.0.0.1?regs=rwaxi write AGG_SLOTS 8
    netrl regs sim://127.0.0.1:20051 dump [--json]
    netrl regs serial:///dev/ttyUSB1 watch [--interval 1] [--count N]
    netrl regs serial:///dev/ttyUSB1 identity
    netrl regs soft://127.0.0.1:20050 --job 2 dump

Names come from :mod:`hostdrv.wire.regmap` (``docs/registers.md``); an address
(``0x048``) works where no name does. ``dump`` prints every counter by name
(and, on a soft or sim switch, the server's own ``SRV_*`` counters);
``watch`` samples them every ``--interval`` seconds and shows each counter's
value and rate per second, redrawn in place like ``top`` on a terminal, one
frame after the other otherwise. ``identity`` prints ``MAGIC``, ``VERSION`` and
``BUILD_HASH`` and, over ``serial://``, what the firmware reports of the
Si5324 that clocks the 10G ports: set-up acknowledged, locked or loss of lock.
``--job J`` reads and writes job J's page of a multi-job switch (``docs/protocol.md``
section 11): its job registers by name, and ``dump`` shows the page (its share, lease
and configuration, then its counters); ``--key`` is then the admin key, or job J's own
key with ``--job-key``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TextIO
from urllib.parse import urlsplit

from hostdrv.client.control import IdentityError, RegisterError, SwitchControl
from hostdrv.client.transport import (
    RegisterTransport,
    SwitchTimeoutError,
    open_registers,
)
from hostdrv.errors import UnknownRegisterError
from hostdrv.wire import regmap
from hostdrv.wire.consts import MAX_JOBS
from hostdrv.wire.control import job_key_id
from hostdrv.wire.net import TransportError

CLEAR_SCREEN = "\x1b[H\x1b[2J"
"""ANSI: cursor home, erase the screen (each ``watch`` frame on a terminal)."""
SERVER_SCHEMES = ("soft", "sim")
"""Schemes whose switch also keeps the server counters (``SRV_*``)."""


def add_regs_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``regs`` command (and its ``read``/``write``/``dump``/``watch`` actions) to ``sub``."""
    regs = sub.add_parser(
        "regs", help="read, write, dump or watch switch registers",
        description="Register access by name (hostdrv.wire.regmap, docs/registers.md) over any "
                    "register URL: soft://, sim://, udp://...?regs=rwaxi, serial://.")
    regs.add_argument("url", help="switch URL, e.g. soft://127.0.0.1:20050, "
                                  "serial:///dev/ttyUSB1?baud=115200")
    regs.add_argument("--timeout", type=float, default=0.5, help="seconds per reply (default 0.5)")
    regs.add_argument("--retries", type=int, default=4, help="requests before giving up")
    regs.add_argument("--key", default=None,
                      help="control key file of a soft/sim switch started with --control-key")
    regs.add_argument("--job", type=int, default=None,
                      help="job J's page of a multi-job switch (job registers by name; dump "
                           "shows the page)")
    regs.add_argument("--job-key", action="store_true",
                      help="--key is job J's own key (--job-key J:FILE of the switch), not the "
                           "admin key")
    action = regs.add_subparsers(dest="action", required=True)
    read = action.add_parser("read", help="read one register")
    read.add_argument("register", help="name (AGG_SLOTS) or byte address (0x048; job 1's 0x1048)")
    write = action.add_parser("write", help="write one register, then read it back")
    write.add_argument("register", help="name (AGG_SLOTS) or byte address (0x048; job 1's 0x1048)")
    write.add_argument("value", help="value (decimal, 0x hex, 0b binary)")
    action.add_parser("identity", help="MAGIC, VERSION, BUILD_HASH; over serial:// also the "
                                       "Si5324 clock status (set-up, loss of lock)")
    dump = action.add_parser("dump", help="every counter by name")
    dump.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    watch = action.add_parser("watch", help="counter values and rates per second, refreshed")
    watch.add_argument("--interval", type=float, default=1.0, help="seconds between samples")
    watch.add_argument("--count", type=int, default=0,
                       help="frames to show, then exit (default 0: until Ctrl-C)")


# ---------------------------------------------------------------------------
# helpers


def parse_int(text: str, what: str) -> int:
    """``text`` as an integer in Python syntax (``42``, ``0x2A``, ``0b101010``).

    Raises
    ------
    RegisterError
        When it is not one.
    """
    try:
        return int(text, 0)
    except ValueError:
        raise RegisterError(what, text, "not an integer (decimal, 0x hex or 0b binary)") from None


def resolve(register: str) -> tuple[str | None, int]:
    """(name or ``None``, byte address) of a register given by name or address.

    Raises
    ------
    RegisterError
        An unknown name (:class:`~hostdrv.errors.UnknownRegisterError`), or an
        address outside the 4 KB window or unaligned.
    """
    if not register[:1].isdigit():
        try:
            reg = regmap.lookup(register.upper())
        except UnknownRegisterError:
            raise UnknownRegisterError(register) from None  # as the user spelt it
        return reg.name, reg.addr
    addr = parse_int(register, "register")
    end = MAX_JOBS * regmap.JOB_PAGE  # job j's page at j * 0x1000 (docs/protocol.md section 11)
    if not 0 <= addr < end or addr % 4:
        raise RegisterError("register", register,
                            f"addresses are 0x000..0x{end - 4:X}, multiples of 4 (0x000..0xFFC "
                            "job 0's page and the global registers; job j's at j * 0x1000)")
    known = regmap.find(addr)
    return (known.name if known else None), addr


def counter_names(url: str) -> tuple[str, ...]:
    """The counters ``dump`` and ``watch`` show for ``url``: the RTL's, plus ``SRV_*`` on soft/sim."""
    scheme = urlsplit(url).scheme
    return regmap.COUNTERS + (regmap.SERVER_COUNTERS if scheme in SERVER_SCHEMES else ())


def read_counters(ctl: SwitchControl, transport: RegisterTransport,
                  names: tuple[str, ...]) -> dict[str, int]:
    """Counters ``names`` by name; one request where the transport can dump them (``serial://``)."""
    dump = getattr(transport, "counters", None)
    out: dict[str, int] = {}
    if callable(dump):
        out.update(dump())
    for name in names:
        if name not in out:
            out[name] = ctl.read(name)
    return {name: out[name] for name in names}


@dataclass(frozen=True)
class WatchFrame:
    """One ``watch`` sample.

    Attributes
    ----------
    index:
        1 for the first frame.
    values:
        Counter values by name.
    rates:
        Increase per second since the previous sample (32-bit wrap-around
        taken into account).
    seconds:
        Time between the two samples.
    """

    index: int
    values: Mapping[str, int]
    rates: Mapping[str, float]
    seconds: float


def watch_frames(sample: Callable[[], Mapping[str, int]], *, interval: float, count: int,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> Iterator[WatchFrame]:
    """Sample counters every ``interval`` seconds and yield rates; ``count`` frames (0: forever).

    The first sample is taken at once and only serves as the base of the first frame's rates.
    """
    prev = dict(sample())
    t_prev = clock()
    index = 0
    while count <= 0 or index < count:
        sleep(interval)
        cur = dict(sample())
        now = clock()
        dt = max(now - t_prev, 1e-9)
        rates = {name: ((value - prev.get(name, value)) & 0xFFFFFFFF) / dt
                 for name, value in cur.items()}
        index += 1
        yield WatchFrame(index, cur, rates, dt)
        prev, t_prev = cur, now


def format_frame(url: str, frame: WatchFrame) -> str:
    """A ``watch`` frame as text: a header line, then NAME, VALUE, RATE/s per counter."""
    width = max(len(n) for n in frame.values) if frame.values else 4
    lines = [f"netrl regs {url}  frame {frame.index}  over {frame.seconds:.2f} s  "
             f"{time.strftime('%H:%M:%S')}",
             f"{'COUNTER':<{width}}  {'VALUE':>12}  {'RATE/s':>12}"]
    for name, value in frame.values.items():
        lines.append(f"{name:<{width}}  {value:>12}  {frame.rates[name]:>12.1f}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# the command


def run_regs(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Execute ``netrl regs``; 0 on success, 1 on an error (printed on stderr)."""
    out = out or sys.stdout
    options: dict[str, object] = {"timeout": args.timeout, "retries": args.retries}
    if args.key is not None:
        options["key_file"] = args.key
    job = getattr(args, "job", None)
    key_id = 0  # the admin key, also in job J's page; --job-key: job J's own key
    if getattr(args, "job_key", False):
        if job is None:
            print("netrl regs: --job-key needs --job J", file=sys.stderr)
            return 1
        key_id = options["key_id"] = job_key_id(job)
    try:
        transport = open_registers(args.url, **options)
    except (TransportError, OSError) as e:
        print(f"netrl regs: {e}", file=sys.stderr)
        return 1
    try:
        ctl = SwitchControl(args.url, transport=transport, job=job, key_id=key_id)
    except RegisterError as e:
        transport.close()
        print(f"netrl regs: {e}", file=sys.stderr)
        return 1
    try:
        return _action(args, ctl, transport, out)
    except KeyboardInterrupt:
        return 0
    except (RegisterError, SwitchTimeoutError, IdentityError, TransportError) as e:
        print(f"netrl regs: {e}", file=sys.stderr)
        return 1
    finally:
        ctl.close()


def _action(args: argparse.Namespace, ctl: SwitchControl, transport: RegisterTransport,
            out: TextIO) -> int:
    if args.action in ("read", "write"):
        name, addr = resolve(args.register)
        # a name: in --job's page; an address: in its own page
        page = regmap.split(addr)[0] if args.register[:1].isdigit() else None
        if name is not None:
            addr = ctl.address(name, page)
        label = f"{regmap.label(addr) if name else '-'} 0x{addr:03X}"
        if args.action == "write":
            value = parse_int(args.value, name or f"0x{addr:03X}")
            if name is not None:
                ctl.write(name, value, job=page)  # checks access and width before sending
            else:
                transport.write(addr, value)
        value = ctl.read(name, job=page) if name is not None else transport.read(addr)
        print(f"{label} = 0x{value:08X} ({value})", file=out)
        return 0
    if args.action == "identity":
        for name in ("MAGIC", "VERSION", "BUILD_HASH"):
            value = ctl.read(name)
            print(f"{name:<10}  0x{value:08X}", file=out)
        firmware_identity = getattr(transport, "identity", None)
        if callable(firmware_identity):  # serial://: the firmware's own identity reply
            fw = firmware_identity()
            print(f"{'FIRMWARE':<10}  line protocol {fw.firmware_protocol}", file=out)
            print(f"{'SI5324':<10}  {fw.clock_text()}", file=out)
            if fw.clock_status != 0 or fw.lol_status not in (0, None):
                print("netrl regs: the Si5324 is not locked: the 10G ports have no reference clock "
                      "(docs/board_uart.md)", file=sys.stderr)
                return 1
        return 0
    names = counter_names(args.url)
    if args.action == "dump" and args.job is not None:
        values = {r.name: ctl.read(r.name) for r in regmap.REGISTERS.values()
                  if r.job and not r.name.startswith("CNT_")}
        values.update({n: ctl.read(n) for n in regmap.COUNTERS})
        if args.json:
            print(json.dumps(values), file=out)
        else:
            width = max(len(n) for n in values)
            print(f"job {args.job}'s page (0x{args.job * regmap.JOB_PAGE:04X})", file=out)
            for name, value in values.items():
                print(f"{name:<{width}}  {value}", file=out)
        return 0
    if args.action == "dump":
        values = read_counters(ctl, transport, names)
        if args.json:
            print(json.dumps(values), file=out)
        else:
            width = max(len(n) for n in names)
            for name, value in values.items():
                print(f"{name:<{width}}  {value}", file=out)
        return 0
    if args.interval <= 0:
        raise RegisterError("interval", args.interval, "must be more than 0 seconds")
    tty = out.isatty()
    for frame in watch_frames(lambda: read_counters(ctl, transport, names),
                              interval=args.interval, count=args.count):
        text = format_frame(args.url, frame)
        out.write(CLEAR_SCREEN + text if tty else text + "\n")
        out.flush()
    return 0
