"""The command line of ``scripts/rack.py`` (``up``, ``run``, ``status``, ``down``): see its doc
and ``docs/rack.md``. ``scripts/rack.py``'s :func:`rack.main` calls :func:`main` here with
itself as ``lib`` (this module imports nothing of it: no circle)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from types import ModuleType


def _parser(lib: ModuleType) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rack.py", description=(lib.__doc__ or "").splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    d = lib.RackConfig()
    up = sub.add_parser("up", help="build the rack and start its switch")
    up.add_argument("--prefix", default=d.prefix)
    up.add_argument("--hosts", type=int, default=d.hosts)
    up.add_argument("--rate", default=d.rate, help="tc rate per link direction (default 10gbit)")
    up.add_argument("--delay-us", type=float, default=d.delay_us, help="one-way link delay")
    up.add_argument("--delay-line", action="store_true",
                    help="run the delay line even at --delay-us 0")
    up.add_argument("--mtu", type=int, default=d.mtu)
    up.add_argument("--subnet", default=d.subnet, help="first three octets of the /24")
    up.add_argument("--switch", choices=lib.SWITCHES, default=d.switch,
                    help="soft: soft switch behind a bridge; rtl: the RTL (Verilator) with "
                         "host i's link as MAC port i; bridge: a bridge only; none: nothing")
    up.add_argument("--switch-port", type=int, default=d.switch_port)
    up.add_argument("--max-elems", type=int, default=d.max_elems)
    up.add_argument("--engine", default=None)
    up.add_argument("--leaves", type=int, default=d.leaves,
                    help="K leaf switch namespaces under the switch namespace as root "
                         "(host i on leaf i // ceil(hosts/K)); 0: one switch")
    up.add_argument("--extra-switches", type=int, default=d.extra_switches,
                    help="more soft switches in the switch namespace (ports after --switch-port)")
    run = sub.add_parser("run", help="run a command in a host namespace (or all)")
    run.add_argument("--prefix", default=d.prefix)
    run.add_argument("--host", default="0", help="host index or 'all'")
    run.add_argument("argv", nargs=argparse.REMAINDER, help="-- command ...")
    st = sub.add_parser("status", help="namespaces, processes and qdiscs of a rack")
    st.add_argument("--prefix", default=None, help="default: every rack")
    dn = sub.add_parser("down", help="remove a rack (idempotent)")
    dn.add_argument("--prefix", default=d.prefix)
    dn.add_argument("--all", action="store_true", help="every rack on this machine")
    return p


def main(argv: Sequence[str] | None, lib: ModuleType) -> int:
    """Entry point of ``scripts/rack.py``; ``lib`` is that module (``Rack``, ``down``, ...)."""
    Rack, RackConfig, RackError = lib.Rack, lib.RackConfig, lib.RackError  # noqa: N806
    load, down, list_racks, state_root = lib._load, lib.down, lib.list_racks, lib.state_root
    args = _parser(lib).parse_args(argv)
    try:
        if args.cmd == "up":
            rack = Rack(RackConfig(prefix=args.prefix, hosts=args.hosts, rate=args.rate,
                                   delay_us=args.delay_us, mtu=args.mtu, subnet=args.subnet,
                                   switch=args.switch, switch_port=args.switch_port,
                                   max_elems=args.max_elems, engine=args.engine,
                                   delay_line=args.delay_line, leaves=args.leaves,
                                   extra_switches=args.extra_switches)).up()
            print(f"rack {rack.config.prefix}: hosts "
                  + " ".join(f"{rack.host_ns(i)}={rack.host_ip(i)}" for i in range(args.hosts))
                  + f" switch {rack.switch_ns}={rack.switch_ip}")
            if rack.config.switch in ("soft", "rtl"):
                print(f"switch_url={rack.switch_url}")
            for k in range(rack.config.leaves):
                print(f"leaf {k}: {rack.leaf_ns(k)}={rack.leaf_ip(k)} hosts "
                      + ",".join(str(i) for i in range(args.hosts) if rack.leaf_of(i) == k)
                      + f" leaf_url={rack.leaf_url(k)}")
            for m in range(rack.config.extra_switches):
                print(f"extra_switch_url={rack.extra_switch_url(m)}")
            return 0
        if args.cmd == "run":
            rack = load(args.prefix)
            argv_ = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
            if not argv_:
                raise RackError("run: no command (scripts/rack.py run --host 0 -- CMD ...)")
            if args.host == "all":
                rcs = []
                for i, (rc, o, e) in enumerate(rack.run_all(argv_)):
                    for line in o.splitlines():
                        print(f"[h{i}] {line}")
                    for line in e.splitlines():
                        print(f"[h{i}] {line}", file=sys.stderr)
                    rcs.append(rc)
                return max((abs(rc) for rc in rcs), default=0)
            return rack.run(int(args.host), argv_, capture=False).returncode
        if args.cmd == "status":
            prefixes = [args.prefix] if args.prefix else list_racks()
            for prefix in prefixes:
                path = state_root() / prefix / "config.json"
                rack = load(prefix) if path.exists() else Rack(RackConfig(prefix=prefix))
                print(json.dumps(rack.status(), indent=1))
            if not prefixes:
                print("no racks")
            return 0
        if args.cmd == "down":
            for prefix in (list_racks() if args.all else [args.prefix]):
                removed = down(prefix)
                print(f"rack {prefix}: removed {len(removed)} namespaces")
            return 0
    except RackError as e:
        print(f"rack.py: {e}", file=sys.stderr)
        return 2
    return 2
