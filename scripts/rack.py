#!/usr/bin/env python3
"""A rack of hosts around one switch, built from Linux network namespaces on one machine.

::

    scripts/rack.py up --hosts 4 --rate 10gbit --delay-us 10     # prints the rack's figures
    scripts/rack.py run --host 0 -- python -c 'print(1)'         # one host namespace
    scripts/rack.py run --host all -- hostname -I                # every host, in parallel
    scripts/rack.py status
    scripts/rack.py down                                         # idempotent

Topology (``docs/rack.md``)
---------------------------
* ``PREFIX-h0`` … ``PREFIX-h{N-1}``: one namespace per host, each with one
  interface ``eth0`` at ``10.77.0.{i+1}/24`` (the subnet exists only inside
  the rack's namespaces).
* ``PREFIX-sw``: the switch namespace. Each host's ``eth0`` is one end of a
  veth pair whose other end, ``p{i}``, is switch port ``i``.
* ``switch="soft"`` (the default) makes the rack **bridged**: the ports join a
  Linux bridge ``br0`` that holds the switch's address ``10.77.0.254`` and
  the soft switch (``netfpga-softswitch``) listens on it. Hosts reach each
  other and the switch at layer 2 (one broadcast domain, as behind a
  top-of-rack switch), so torchrun rendezvous, gloo and the switch's
  datagrams all cross the same links.
* ``switch="rtl"``: no bridge, no address in the switch namespace; the ports
  are the MAC ports of the RTL (``hostdrv.switch.rtl_bridge``: frames
  read from ``p{i}`` enter the Verilator model as SUME MAC port ``i``, TUSER
  bit ``2i``, and leave on the ports of their ``dst_ports``), so every frame,
  ARP and ping included, crosses the RTL. Hosts use the board's ``eth://``
  URL (:attr:`Rack.switch_url`; registers through an ``rwaxi`` that reaches
  the simulation's register bus). ``switch="none"`` leaves the ports
  unattached.
* ``leaves=K`` (``--leaves K``, ``switch="soft"``): a two-level tree instead of one
  switch. ``PREFIX-l0`` … ``PREFIX-l{K-1}`` are leaf switch namespaces, each a bridge
  holding leaf ``k``'s address ``10.77.0.{240+k}`` and its own soft switch; host ``i``
  is cabled to leaf ``i // ceil(N/K)`` (the ``netrl`` backend's leaf plan,
  :class:`hostdrv.client.torch_hierarchy.Plan`), and every leaf has an uplink (veth
  ``up0`` in the leaf, ``u{k}`` in ``PREFIX-sw``) to the root: the switch namespace's
  bridge and soft switch. One broadcast domain still (hosts on different leaves reach
  each other through the root's bridge); ``run`` adds ``NETRL_LEAVES`` (the leaves'
  URLs), so ``init_process_group("netrl")`` builds the hierarchy on these switches.
* ``extra_switches=M``: M more soft switches in the switch namespace, on
  ``switch_port + 1`` … (:meth:`Rack.extra_switch_url`): separate switch jobs on the same
  links (e.g. the ``netrl`` backend's beside a bare ``Aggregator``'s).
* Every link is rate-shaped with ``tc`` ``tbf`` on both ends (host ``eth0``
  egress and switch ``p{i}`` egress), default 10 Gbit/s.
* Link delay (``netem`` is not available): with ``delay_us > 0`` each port
  gets a second veth pair ``q{i}``/``b{i}`` and the delay line
  (:mod:`hostdrv.rack.delay_line`) forwards every frame between ``p{i}``
  and ``q{i}`` ``delay_us`` later; ``b{i}`` joins the bridge. A link's delay
  is thus added once per direction; host to host crosses two links.

Every namespace name starts with the rack's prefix (``--prefix``, default
``nrl``; :func:`unique_prefix` for parallel test workers), so ``down`` finds
everything again after a crash: it ends the processes inside those
namespaces (by pid, from ``ip netns pids``) and deletes the namespaces,
which removes their veths, and their ``/etc/netns/NS`` folders (their
``hosts`` file: ``rack-h{i}`` / ``rack-sw`` name the rack's addresses; commands
on host ``i`` run with hostname ``rack-h{i}`` in a UTS namespace of their own). State (control key, logs) lives in
``$NRL_RACK_STATE/PREFIX`` (default ``/tmp/nrl-rack/PREFIX``).

``run`` sets in the command's environment: ``RACK_HOST`` (index),
``RACK_HOSTS``, ``RACK_HOST_IP``, ``RACK_SWITCH_IP``, ``NETRL_SWITCH`` (the
switch URL with the control key) and ``NETRL_CONTROL_KEY``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = ["Rack", "RackConfig", "RackError", "down", "list_racks", "main", "measure_rate",
           "measure_rtt", "net_counters", "unique_prefix"]

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # this checkout's hostdrv, not an installed one
    sys.path.insert(0, str(REPO))

from hostdrv.rack.probes import measure_rate, measure_rtt, net_counters  # noqa: E402
from hostdrv.wire.consts import MAX_JOBS  # noqa: E402

HOST_IF = "eth0"
BRIDGE = "br0"
ETC_NETNS = Path("/etc/netns")
SWITCH_HOST_OCTET = 254
LEAF_HOST_OCTET = 240
"""Leaf switch ``k`` of a two-level rack is ``SUBNET.{240 + k}``; hosts stay below."""
MAX_LEAVES = 8
"""A root switch aggregates at most 8 members (its leaves)."""
_SETHOST = "import os, socket, sys; socket.sethostname(sys.argv[1]); os.execvp(sys.argv[2], sys.argv[2:])"
SWITCHES = ("soft", "rtl", "bridge", "none")
"""``RackConfig.switch`` kinds."""
_PREFIX_RE = re.compile(r"^[a-z][a-z0-9]{0,11}$")


class RackError(RuntimeError):
    """A rack cannot be built, used or torn down (the message names the command)."""


def state_root() -> Path:
    """Folder of every rack's state (``$NRL_RACK_STATE``, default ``/tmp/nrl-rack``)."""
    return Path(os.environ.get("NRL_RACK_STATE", "/tmp/nrl-rack"))


def unique_prefix(base: str = "nrl") -> str:
    """A prefix no other rack on this machine uses (``base`` + 6 hex digits)."""
    return base + os.urandom(3).hex()


def _sh(args: Sequence[str], *, check: bool = True, timeout: float = 30.0) -> str:
    r = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)
    if check and r.returncode:
        raise RackError(f"`{' '.join(args)}` failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout


def _netns_list() -> list[str]:
    out = _sh(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def list_racks() -> list[str]:
    """Prefixes of every rack whose namespaces exist."""
    found = set()
    for ns in _netns_list():
        m = re.fullmatch(r"([a-z][a-z0-9]{0,11})-(h\d+|l\d+|sw)", ns)
        if m:
            found.add(m.group(1))
    return sorted(found)


def tbf_burst(rate_bytes: float, mtu: int) -> int:
    """Bytes of a link's ``tbf`` bucket: max(2 frames, 70 kB, 0.5 ms at the rate). A burst
    up to it leaves at once (the veth's speed), so a call of fewer bytes sees no shaping."""
    return int(max(2 * (mtu + 14), 70_000, rate_bytes * 0.0005))


def _rate_bytes(rate: str) -> float:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kmg]?)(bit|bps)", rate.lower())
    if not m:
        raise RackError(f"bad rate={rate!r}: expected e.g. 10gbit, 100mbit, 500kbit")
    scale = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)]
    value = float(m.group(1)) * scale
    return value / 8 if m.group(3) == "bit" else value


@dataclass(frozen=True)
class RackConfig:
    """What :meth:`Rack.up` builds.

    Attributes
    ----------
    prefix: namespace name prefix (lowercase letters and digits, at most 12).
    hosts: host namespaces (1 … 200).
    rate: ``tc`` rate of each link direction (``10gbit``, ``100mbit``, …).
    delay_us: one-way delay of each link in microseconds (0: no delay line).
    mtu: MTU of every link.
    subnet: first three octets of the rack's /24.
    switch: ``"soft"`` (bridge + soft switch), ``"bridge"`` (bridge, no switch process)
        or ``"none"`` (ports left unattached for a raw-frame switch).
    switch_port: UDP port of the soft switch.
    max_elems: the soft switch's ``--max-elems``.
    engine: the soft switch's ``--engine`` (None: its default).
    delay_line: run the delay line even at ``delay_us=0`` (measures its own cost).
    leaves: 0: every host on the one switch; K >= 1: K leaf switch namespaces under the
        switch namespace as root (``switch="soft"``, no delay line).
    extra_switches: more soft switches in the switch namespace (ports after ``switch_port``).
    jobs: the soft switches' ``--jobs`` (``docs/protocol.md`` section 11; None: their default).
    """

    prefix: str = "nrl"
    hosts: int = 4
    rate: str = "10gbit"
    delay_us: float = 0.0
    mtu: int = 9000
    subnet: str = "10.77.0"
    switch: str = "soft"
    switch_port: int = 20050
    max_elems: int = 2048
    engine: str | None = None
    delay_line: bool = False
    leaves: int = 0
    extra_switches: int = 0
    jobs: int | None = None

    def check(self) -> None:
        """Raise :class:`RackError` when a field is out of range."""
        if not _PREFIX_RE.match(self.prefix):
            raise RackError(f"bad prefix={self.prefix!r}: lowercase letter then up to 11 "
                            "letters/digits")
        if not 1 <= self.hosts <= 200:
            raise RackError(f"bad hosts={self.hosts}: 1..200")
        if self.delay_us < 0:
            raise RackError(f"bad delay_us={self.delay_us}: must be >= 0")
        if self.switch not in SWITCHES:
            raise RackError(f"bad switch={self.switch!r}: " + ", ".join(SWITCHES))
        if self.switch == "rtl" and (self.hosts > 4 or self.delay_us):
            raise RackError("switch='rtl' has the board's 4 MAC ports (hosts <= 4) and no "
                            "delay line")
        if not 0 <= self.leaves <= MAX_LEAVES:
            raise RackError(f"bad leaves={self.leaves}: 0..{MAX_LEAVES}")
        if self.leaves and (self.switch != "soft" or self.delay_us or self.delay_line):
            raise RackError("leaves need switch='soft' and no delay line")
        if self.leaves > self.hosts:
            raise RackError(f"bad leaves={self.leaves}: more leaves than hosts={self.hosts}")
        if self.hosts > LEAF_HOST_OCTET:
            raise RackError(f"bad hosts={self.hosts}: at most {LEAF_HOST_OCTET} (the "
                            "addresses above are the switches')")
        if not 0 <= self.extra_switches <= 8 or (self.extra_switches and self.switch != "soft"):
            raise RackError(f"bad extra_switches={self.extra_switches}: 0..8, switch='soft'")
        if self.jobs is not None and (not 1 <= self.jobs <= MAX_JOBS or self.switch != "soft"):
            raise RackError(f"bad jobs={self.jobs}: 1..{MAX_JOBS}, switch='soft'")
        _rate_bytes(self.rate)


class Rack:
    """A rack of ``config.hosts`` host namespaces around a switch namespace.

    Use :meth:`up` (or ``with Rack(cfg).up() as rack``) and :meth:`down`;
    :meth:`run` / :meth:`popen` start commands in a host namespace.
    """

    def __init__(self, config: RackConfig | None = None) -> None:
        self.config = config or RackConfig()
        self.config.check()
        self.state_dir = state_root() / self.config.prefix
        self.key_file = self.state_dir / "control.key"

    # -- names and addresses -----------------------------------------------------------
    def host_ns(self, i: int) -> str:
        """Namespace of host ``i``."""
        return f"{self.config.prefix}-h{i}"

    @property
    def switch_ns(self) -> str:
        """The switch namespace."""
        return f"{self.config.prefix}-sw"

    def host_ip(self, i: int) -> str:
        """Address of host ``i``."""
        return f"{self.config.subnet}.{i + 1}"

    @staticmethod
    def host_name(i: int) -> str:
        """Hostname of host ``i`` inside the rack (``rack-h{i}``)."""
        return f"rack-h{i}"

    @staticmethod
    def host_mac(i: int) -> str:
        """Ethernet address of host ``i``'s ``eth0`` (locally administered, fixed)."""
        return f"02:4e:52:00:00:{i + 1:02x}"

    @property
    def switch_ip(self) -> str:
        """Address of the switch (the bridge in the switch namespace)."""
        return f"{self.config.subnet}.{SWITCH_HOST_OCTET}"

    @property
    def rwaxi_tool(self) -> Path:
        """``switch="rtl"``: the ``rwaxi`` the hosts reach the RTL's registers with."""
        return self.state_dir / "rwaxi"

    @property
    def switch_url(self) -> str:
        """URL of the switch as the hosts reach it: the soft switch with the control key, or
        for ``switch="rtl"`` the board's ``eth://`` URL (frames on ``eth0``, registers
        through :attr:`rwaxi_tool`)."""
        if self.config.switch == "rtl":
            return (f"eth://{HOST_IF}?switch_ip={self.switch_ip}&port={self.config.switch_port}"
                    f"&regs=rwaxi&rwaxi={self.rwaxi_tool}")
        return f"soft://{self.switch_ip}:{self.config.switch_port}?key={self.key_file}"

    def leaf_ns(self, k: int) -> str:
        """Namespace of leaf switch ``k`` (``leaves >= 1``)."""
        return f"{self.config.prefix}-l{k}"

    def leaf_ip(self, k: int) -> str:
        """Address of leaf switch ``k``."""
        return f"{self.config.subnet}.{LEAF_HOST_OCTET + k}"

    @property
    def per_leaf(self) -> int:
        """Hosts per leaf switch (the last leaf may hold fewer); 0 without leaves."""
        n = self.config.leaves
        return -(-self.config.hosts // n) if n else 0

    def leaf_of(self, i: int) -> int | None:
        """The leaf host ``i`` is cabled to (``None``: the one switch)."""
        return i // self.per_leaf if self.config.leaves else None

    def port_ns(self, i: int) -> str:
        """The namespace holding host ``i``'s switch port ``p{i}``: its leaf's or the switch's."""
        k = self.leaf_of(i)
        return self.switch_ns if k is None else self.leaf_ns(k)

    def leaf_url(self, k: int) -> str:
        """URL of leaf switch ``k``'s soft switch, with the control key."""
        return f"soft://{self.leaf_ip(k)}:{self.config.switch_port}?key={self.key_file}"

    def extra_switch_url(self, m: int) -> str:
        """URL of extra soft switch ``m`` (0-based) in the switch namespace, with the key."""
        if not 0 <= m < self.config.extra_switches:
            raise RackError(f"no extra switch {m}: the rack has {self.config.extra_switches}")
        return f"soft://{self.switch_ip}:{self.config.switch_port + 1 + m}?key={self.key_file}"

    def namespaces(self) -> list[str]:
        """Every namespace of the rack (hosts, leaves, then the switch)."""
        return ([self.host_ns(i) for i in range(self.config.hosts)]
                + [self.leaf_ns(k) for k in range(self.config.leaves)] + [self.switch_ns])

    def exists(self) -> bool:
        """Whether any of the rack's namespaces exists."""
        mine = set(self.namespaces())
        return any(ns in mine for ns in _netns_list())

    # -- building ----------------------------------------------------------------------
    def _ip(self, ns: str, *args: str) -> None:
        _sh(["ip", "-n", ns, *args])

    def _tc(self, ns: str, dev: str, rate: str | None = None) -> None:
        rate = rate or self.config.rate
        burst = tbf_burst(_rate_bytes(rate), self.config.mtu)
        _sh(["ip", "netns", "exec", ns, "tc", "qdisc", "replace", "dev", dev, "root", "tbf",
             "rate", rate, "burst", str(burst), "latency", "20ms"])

    def set_rate(self, i: int, rate: str) -> None:
        """Change host ``i``'s link rate (both directions) while the rack runs."""
        self._tc(self.host_ns(i), HOST_IF, rate)
        self._tc(self.port_ns(i), f"p{i}", rate)

    def up(self, *, wait: float = 30.0) -> Rack:
        """Build the rack and start its switch (and delay line); returns ``self``.

        Raises
        ------
        RackError
            When a namespace of this prefix exists already (run :meth:`down`), a
            command fails, or the switch does not start; what was built is removed.
        """
        if self.exists():
            raise RackError(f"a rack with prefix {self.config.prefix!r} exists: "
                            f"`scripts/rack.py down --prefix {self.config.prefix}` first")
        try:
            self._build(wait)
        except BaseException:
            self.down()
            raise
        return self

    def _build(self, wait: float) -> None:
        cfg = self.config
        self.state_dir.mkdir(parents=True, exist_ok=True)
        (self.state_dir / "config.json").write_text(json.dumps(asdict(cfg), indent=1))
        if not self.key_file.exists():
            fd = os.open(self.key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(os.urandom(24).hex() + "\n")
        mtu = str(cfg.mtu)
        self._write_hosts_files()
        for ns in self.namespaces():
            _sh(["ip", "netns", "add", ns])
            _sh(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                 "net.ipv6.conf.default.disable_ipv6=1"])
            self._ip(ns, "link", "set", "lo", "up")
        sw = self.switch_ns
        bridged = cfg.switch in ("soft", "bridge")
        if bridged:
            self._ip(sw, "link", "add", BRIDGE, "mtu", mtu, "type", "bridge", "forward_delay", "0",
                     "stp_state", "0")
            self._ip(sw, "addr", "add", f"{self.switch_ip}/24", "dev", BRIDGE)
            self._ip(sw, "link", "set", BRIDGE, "up")
        for k in range(cfg.leaves):
            # leaf k: a bridge with the leaf switch's address, cabled to the root's bridge
            lf = self.leaf_ns(k)
            self._ip(lf, "link", "add", BRIDGE, "mtu", mtu, "type", "bridge", "forward_delay",
                     "0", "stp_state", "0")
            self._ip(lf, "addr", "add", f"{self.leaf_ip(k)}/24", "dev", BRIDGE)
            self._ip(lf, "link", "set", BRIDGE, "up")
            _sh(["ip", "link", "add", "up0", "netns", lf, "mtu", mtu, "type", "veth", "peer",
                 "name", f"u{k}", "netns", sw, "mtu", mtu])
            self._ip(lf, "link", "set", "up0", "master", BRIDGE)
            self._ip(lf, "link", "set", "up0", "up")
            self._ip(sw, "link", "set", f"u{k}", "master", BRIDGE)
            self._ip(sw, "link", "set", f"u{k}", "up")
            self._tc(lf, "up0")
            self._tc(sw, f"u{k}")
        pairs = []
        for i in range(cfg.hosts):
            h, p = self.host_ns(i), f"p{i}"
            sw = self.port_ns(i)
            _sh(["ip", "link", "add", HOST_IF, "netns", h, "mtu", mtu, "address", self.host_mac(i),
                 "type", "veth", "peer", "name", p, "netns", sw, "mtu", mtu])
            self._ip(h, "addr", "add", f"{self.host_ip(i)}/24", "dev", HOST_IF)
            self._ip(h, "link", "set", HOST_IF, "up")
            self._ip(sw, "link", "set", p, "up")
            self._tc(h, HOST_IF)
            self._tc(sw, p)
            if cfg.switch == "rtl":
                # a MAC port takes frames, not GSO super-frames: one segment per skb
                self._ip(h, "link", "set", HOST_IF, "gso_max_segs", "1")
            if not bridged:
                continue
            if cfg.delay_us > 0 or cfg.delay_line:
                q, b = f"q{i}", f"b{i}"
                self._ip(sw, "link", "add", q, "mtu", mtu, "type", "veth", "peer", "name", b,
                         "mtu", mtu)
                self._ip(sw, "link", "set", b, "master", BRIDGE)
                # the switch's address is a local address of the namespace: without this,
                # its kernel would answer ARP on p{i}/q{i} with their own MACs, and the
                # hosts' datagrams to the switch would skip the delay line
                for dev in (p, q):
                    _sh(["ip", "netns", "exec", sw, "sysctl", "-qw",
                         f"net.ipv4.conf.{dev}.arp_ignore=8"])
                self._ip(sw, "link", "set", q, "up")
                self._ip(sw, "link", "set", b, "up")
                pairs.append((p, q))
            else:
                self._ip(sw, "link", "set", p, "master", BRIDGE)
        sw = self.switch_ns
        if pairs:
            args = ["-m", "hostdrv.rack.delay_line", "--delay-us", str(cfg.delay_us)]
            for a, b in pairs:
                args += ["--pair", f"{a}:{b}"]
            self._start(sw, "delay_line", args, "ready", wait)
        if cfg.switch == "rtl":
            from hostdrv.switch.rtl_bridge import write_rwaxi_tool

            sock = self.state_dir / "rtl.sock"
            write_rwaxi_tool(self.rwaxi_tool, sock)
            args = ["-m", "hostdrv.switch.rtl_bridge", "--socket", str(sock),
                    "--switch-ip", self.switch_ip]
            for i in range(cfg.hosts):
                args += ["--port", f"p{i}"]
            self._start(sw, "rtl_eth_bridge", args, "ready", max(wait, 900.0))
        if cfg.switch == "soft":
            starts = [(sw, "softswitch", self.switch_ip, cfg.switch_port)]
            starts += [(sw, f"softswitch{1 + m}", self.switch_ip, cfg.switch_port + 1 + m)
                       for m in range(cfg.extra_switches)]
            starts += [(self.leaf_ns(k), f"leaf{k}", self.leaf_ip(k), cfg.switch_port)
                       for k in range(cfg.leaves)]
            for ns, name, ip, port in starts:
                args = ["-m", "hostdrv.switch.soft", "--listen", f"{ip}:{port}",
                        "--control-key", str(self.key_file), "--max-elems", str(cfg.max_elems)]
                if cfg.engine:
                    args += ["--engine", cfg.engine]
                if cfg.jobs is not None:
                    args += ["--jobs", str(cfg.jobs)]
                self._start(ns, name, args, "listening", wait)

    def _write_hosts_files(self) -> None:
        # `ip netns exec NS` bind-mounts /etc/netns/NS/hosts over /etc/hosts: rack-h<j> and
        # rack-sw name the rack's addresses in every namespace of the rack.
        names = "".join(f"{self.host_ip(j)}\t{self.host_name(j)}\n"
                        for j in range(self.config.hosts))
        names += "".join(f"{self.leaf_ip(k)}\track-l{k}\n" for k in range(self.config.leaves))
        names += f"{self.switch_ip}\track-sw\n"
        for ns in self.namespaces():
            d = ETC_NETNS / ns
            d.mkdir(parents=True, exist_ok=True)
            (d / "hosts").write_text(f"127.0.0.1\tlocalhost\n{names}")

    def host_cmd(self, i: int, cmd: Sequence[str]) -> list[str]:
        """``cmd`` as run on host ``i``: in its network namespace and in a UTS namespace of its
        own whose hostname is ``rack-h{i}`` (torchrun's c10d rendezvous publishes the hostname
        of rank 0 as ``MASTER_ADDR``; the hosts files resolve it to the rack address)."""
        return ["ip", "netns", "exec", self.host_ns(i), "unshare", "--uts", "--",
                sys.executable, "-c", _SETHOST, self.host_name(i), *cmd]

    def _env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"]
                                         if env.get("PYTHONPATH") else "")
        env["PYTHONUNBUFFERED"] = "1"
        if extra:
            env.update(extra)
        return env

    def _start(self, ns: str, name: str, args: Sequence[str], ready: str, wait: float) -> int:
        log = self.state_dir / f"{name}.log"
        with open(log, "w") as f:
            proc = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, *args],
                                    stdout=f, stderr=subprocess.STDOUT, env=self._env(),
                                    start_new_session=True)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if log.read_text().startswith(ready):
                (self.state_dir / f"{name}.pid").write_text(str(proc.pid))
                return proc.pid
            if proc.poll() is not None:
                break
            time.sleep(0.05)
        proc.kill()
        raise RackError(f"{name} in {ns} did not start (exit {proc.poll()}): "
                        f"{log.read_text()[-2000:]}")

    # -- using -------------------------------------------------------------------------
    def host_env(self, i: int, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """Environment of a command on host ``i`` (see the module doc)."""
        env = self._env({
            "RACK_HOST": str(i), "RACK_HOSTS": str(self.config.hosts),
            "RACK_HOST_IP": self.host_ip(i), "RACK_SWITCH_IP": self.switch_ip,
            "NETRL_SWITCH": self.switch_url.split("?")[0], "NETRL_CONTROL_KEY": str(self.key_file),
            "GLOO_SOCKET_IFNAME": HOST_IF,
        })
        if self.config.leaves:
            env["NETRL_LEAVES"] = ",".join(self.leaf_url(k).split("?")[0]
                                           for k in range(self.config.leaves))
        if self.config.switch == "rtl":
            # the board's URL, and the member entry names the MAC port the host is cabled to
            env["NETRL_SWITCH"] = self.switch_url
            env["NETRL_MEMBER_PORT"] = str(1 << (2 * i))
        if extra:
            env.update(extra)
        return env

    def popen(self, i: int, cmd: Sequence[str], *, env: Mapping[str, str] | None = None,
              **kwargs: object) -> subprocess.Popen[str]:
        """Start ``cmd`` in host ``i``'s namespace (``kwargs`` go to :class:`subprocess.Popen`)."""
        return subprocess.Popen(self.host_cmd(i, cmd),
                                env=self.host_env(i, env), text=True, **kwargs)  # type: ignore[call-overload]

    def run(self, i: int, cmd: Sequence[str], *, env: Mapping[str, str] | None = None,
            timeout: float | None = None, capture: bool = True) -> subprocess.CompletedProcess[str]:
        """Run ``cmd`` in host ``i``'s namespace to completion."""
        return subprocess.run(self.host_cmd(i, cmd),
                              env=self.host_env(i, env), text=True, timeout=timeout,
                              capture_output=capture)

    def run_all(self, cmd: Sequence[str], *, env: Mapping[str, str] | None = None,
                timeout: float = 600.0) -> list[tuple[int, str, str]]:
        """Run ``cmd`` on every host in parallel; ``(returncode, stdout, stderr)`` per host.

        Hosts whose command outlives ``timeout`` are killed (returncode -9).
        """
        procs = [self.popen(i, cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for i in range(self.config.hosts)]
        deadline = time.monotonic() + timeout
        out = []
        for p in procs:
            try:
                o, e = p.communicate(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                o, e = p.communicate()
            out.append((p.returncode, o, e))
        return out

    def status(self) -> dict[str, object]:
        """What exists of the rack: namespaces, processes in them, and the qdiscs of each link."""
        present = set(_netns_list())
        info: dict[str, object] = {"prefix": self.config.prefix}
        for ns in self.namespaces():
            if ns not in present:
                continue
            qd = _sh(["ip", "netns", "exec", ns, "tc", "qdisc", "show"], check=False)
            info[ns] = {"pids": _ns_pids(ns),
                        "qdisc": [ln for ln in qd.splitlines() if "tbf" in ln]}
        return info

    def down(self) -> None:
        """Remove the rack (idempotent): see :func:`down`."""
        down(self.config.prefix)

    def __enter__(self) -> Rack:
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()


def _ns_pids(ns: str) -> list[int]:
    out = _sh(["ip", "netns", "pids", ns], check=False)
    return [int(x) for x in out.split() if x.isdigit()]


def down(prefix: str, *, grace: float = 3.0) -> list[str]:
    """Remove rack ``prefix``: end the processes inside its namespaces (SIGTERM, then SIGKILL
    after ``grace`` seconds), delete the namespaces and its state folder. Returns the deleted
    namespaces; doing it twice is harmless."""
    pat = re.compile(re.escape(prefix) + r"-(h\d+|l\d+|sw)")
    mine = [ns for ns in _netns_list() if pat.fullmatch(ns)]
    pids = {pid for ns in mine for pid in _ns_pids(ns)}
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    while pids and time.monotonic() < deadline:
        pids = {pid for ns in mine for pid in _ns_pids(ns)}
        time.sleep(0.05)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for ns in mine:
        _sh(["ip", "netns", "del", ns], check=False)
    for d in ETC_NETNS.glob(f"{prefix}-*"):
        if pat.fullmatch(d.name):
            shutil.rmtree(d, ignore_errors=True)
    shutil.rmtree(state_root() / prefix, ignore_errors=True)
    return mine


# ---------------------------------------------------------------------------
# command line (scripts/rack_cli.py)


def _load(prefix: str) -> Rack:
    path = state_root() / prefix / "config.json"
    if not path.exists():
        raise RackError(f"no rack {prefix!r} (no {path}): `scripts/rack.py up` first")
    return Rack(RackConfig(**json.loads(path.read_text())))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``scripts/rack.py`` (the command line is ``scripts/rack_cli.py``, given
    this module)."""
    if str(Path(__file__).resolve().parent) not in sys.path:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
    from rack_cli import main as cli_main

    return cli_main(argv, sys.modules[__name__])


if __name__ == "__main__":
    sys.exit(main())
