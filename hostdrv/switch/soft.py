"""Soft switch: the switch engine behind a UDP socket.

Run it as ``python -m hostdrv.switch.soft --listen 127.0.0.1:20050`` (or the
``netfpga-softswitch`` console script), in a thread with :class:`SoftSwitch`,
or as a child process with :class:`SoftSwitchProcess`. Clients reach it as
``soft://host:port``.

:class:`SoftSwitch` is put together from its control channel
(:class:`~hostdrv.switch.soft_control.ControlServer`, ``soft_control.py``) and its
datagram path (:class:`~hostdrv.switch.soft_loop.DatagramLoop`, ``soft_loop.py``);
:class:`SoftSwitchProcess` is in ``soft_process.py``. Every name is importable from
here.

Engines
-------
``engine="native"`` (``--engine native``) serves the compiled engine
(:class:`~hostdrv.switch.native.NativeSwitchModel`) with its native socket loop
(``hostdrv/native/nrl_server.cpp``: ``recvmmsg``/``sendmmsg``, preallocated
buffers, no Python per datagram, the GIL released; only control requests come
back to Python). ``engine="model"`` (``--engine model``) serves the golden model
(:class:`~hostdrv.switch.reference.SwitchModel`) with the Python loop below, for debugging.
The default is :data:`DEFAULT_ENGINE`, or the environment variable
``NRL_SOFTSWITCH_ENGINE`` (the golden model when the extension is not built).
Both loops follow the rules of this section, and the conformance suite
(``tests/test_conformance.py``) holds the two engines to the same bytes.

Data path
---------
Every datagram is one protocol message (the UDP payload). The switch wraps
it into the frame the hardware would see: Ethernet (destination the switch
MAC, source ``02:00`` + the sender's IPv4), IPv4 from the real source address
to ``SWITCH_IP``, UDP from the real source port to ``UDP_PORT``, then hands it
to :meth:`hostdrv.switch.reference.SwitchModel.process` with the ingress port of the
sender:

* ``MEMBER_PORT[i]`` of the member whose ``MEMBER_IP``/``MEMBER_UDP`` match the
  source address (``MEMBER_UDP`` = 0 matches any port of that address);
* ``AGG_UPLINK_PORT`` when the source is the parent of a leaf
  (``AGG_PARENT_IP``:``AGG_PARENT_UDP``);
* otherwise a port no member is on, so the model drops a packet that claims
  to be a member as ``SPOOFED``.

Several entries may share one ``MEMBER_IP`` with ``MEMBER_UDP`` = 0 (two
workers on one host, any source port): a datagram from that address then gets
the port of the entry its header's ``worker`` names. An empty datagram is a
42-byte frame (the model drops it as ``BAD_LENGTH``); every datagram reaches the
model, so each one moves a counter.

Each emitted frame goes out as a UDP datagram carrying its bytes 42 onward:
a frame to ``MCAST_IP`` to every aggregation member (role bit 0) whose
``MEMBER_PORT`` is in the egress bitmap, at ``MEMBER_IP``:``MEMBER_UDP``, or,
for a member with ``MEMBER_UDP`` = 0, at the address it last sent an authentic
datagram from (a datagram from ``MEMBER_IP`` given that entry's port; forgotten
when the entry's registers are written; a member never heard from gets
nothing and recovers by retransmitting); any other frame to its IPv4
destination and UDP destination port. Datagrams for one destination produced
by one receive are sent with UDP GSO (one system call for up to 64), and
received batches are coalesced with UDP GRO.

The socket reports the datagrams the kernel dropped because its receive
buffer was full (``SO_RXQ_OVFL``): the server keeps them in ``SRV_RX_OVERFLOW``.

Control channel
---------------
Register reads and writes arrive on the same socket as ``NRLC`` datagrams
(format in :mod:`hostdrv.wire.control`); they are executed in arrival order with
the protocol traffic, so a write takes effect before every packet received
after it. The server answers reads of its own registers (``SRV_RX_OVERFLOW``,
``SRV_CTRL_REFUSED``; ``server=True`` in :mod:`hostdrv.wire.regmap`) itself; a write
of ``CTRL`` bit 31 clears them with the model's counters.

By default only requests from loopback addresses are executed; any other
source is answered with status 5 and counted in ``SRV_CTRL_REFUSED``. With a
control key (``--control-key FILE``, ``SoftSwitch(control_key=...)``) only
requests signed with it are executed, from any address, loopback included,
each at most once: a replayed send (from any address), a request signed for
another session (this switch draws one per start, so nothing signed before a
restart runs after it) or an expired one is refused with status 5 and counted;
a retry (a new attempt of a request) is answered from the reply cache
(:class:`~hostdrv.wire.control.ControlReplayGuard`, ``docs/protocol.md``
section 9).

With job keys as well (``--job-key J:FILE``, ``SoftSwitch(job_keys={j: key})``)
byte 5 of a signed request names its key (0 the admin key, j + 1 job j's): a
request under job j's key reads any register and writes only page j's job
registers that are not *admin*; any other write is refused with status 6
(forbidden), nothing changed, and counted in ``SRV_CTRL_REFUSED``. Registers are
addressed by byte address, job j's page at ``j * 0x1000`` (section 11).

Command line
------------
``python -m hostdrv.switch.soft`` (``netfpga-softswitch``) options:

``--listen HOST:PORT``
    Address to bind (default ``127.0.0.1:20050``; port 0 picks one). The
    chosen URL is printed as ``listening soft://host:port``.
``--capacity C``, ``--record-bytes R``, ``--max-slots S``, ``--max-elems P``, ``--build-hash H``
    Model parameters (``RPL_CAPACITY``, ``RPL_RECORD_BYTES``, ``AGG_MAX_SLOTS``,
    ``AGG_MAX_ELEMS``, ``BUILD_HASH``). The replay memory is host memory: C up to 2**31
    (2**20 records of an Atari frame, R = 7104, are 6.9 GiB), R up to 8192. The server
    prints what it reserves (:func:`replay_memory_bytes`) on stderr at start, right after
    its ``listening`` line; the native engine's records are zero pages until written.
``--control-key FILE``
    Execute only control requests signed with the key in FILE (whitespace
    around it stripped), from any address; clients pass the same file
    (``SwitchControl(url, key_file=FILE)``, ``soft://host:port?key=FILE`` or
    ``NETRL_CONTROL_KEY=FILE``). Without it only loopback may use the control
    channel. This is the admin key (key id 0).
``--jobs J``
    ``JOBS``: jobs (register pages) served at once, 1 to 8, default 4
    (``docs/protocol.md`` section 11).
``--job-key J:FILE``
    Job J's key (repeatable, needs ``--control-key``): a request signed with it
    (key id J + 1, ``SwitchControl(url, key_file=FILE, job=J, key_id=J + 1)``) reads any register
    and writes only job J's job registers that are not *admin*; any other write is
    refused with status 6 (forbidden) and counted in ``SRV_CTRL_REFUSED``.
``--engine native|model``
    The compiled engine with its native socket loop, or the golden model with the
    Python loop (see Engines). Default :data:`DEFAULT_ENGINE` or ``NRL_SOFTSWITCH_ENGINE``.
``--profile FILE``
    Write a cProfile of the serve loop to FILE.
``--dpdk PORT`` (repeatable), ``--dpdk-address IP:PORT``
    Serve the same engine on DPDK ports as well (kernel bypass, ``docs/bypass.md``):
    ``af_packet:IFACE``, ``af_xdp:IFACE``, ``memif:PATH[@ID]`` or DPDK devargs
    (:mod:`hostdrv.wire.dpdkport`). Every IPv4/UDP frame to the DPDK address
    (default: the ``--listen`` address) is a datagram as on the socket, with the
    same rules; the switch answers ARP for that address and passes every other
    frame through the engine's learning switch (port *i* = SUME MAC port *i*).
    The socket keeps serving ``--listen``. Needs the extension built with DPDK.

On SIGINT/SIGTERM it prints the model's nonzero counters (``counters {...}``)
and the server's figures (``stats {...}``, with ``rx_overflow`` and
``ctrl_refused``) and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import socket
import sys
import threading
from collections.abc import Mapping, Sequence

from hostdrv.switch import native as native_engine
from hostdrv.switch.engine import Engine
from hostdrv.switch.reference import SwitchModel
from hostdrv.switch.soft_control import (  # noqa: F401 - _is_loopback: importable here as before
    _SERVER_STATS,
    ControlServer,
    KeySource,
    _is_loopback,
    control_keys,
    parse_job_key,
)
from hostdrv.switch.soft_loop import RECV_BYTES, SO_RXQ_OVFL, Arrival, DatagramLoop
from hostdrv.switch.soft_process import SoftSwitchProcess
from hostdrv.wire.consts import MAX_JOBS
from hostdrv.wire.control import ADMIN_KEY_ID, ControlReplayGuard
from hostdrv.wire.dpdkport import NOT_BUILT, DpdkError, check_interface, devargs
from hostdrv.wire.net import SOL_UDP, UDP_GRO, ip_to_int, parse_hostport, tune_socket
from hostdrv.wire.protocol import HEADER_OFFSET

ENGINES = ("native", "model")
"""``--engine`` choices: the compiled engine and its socket loop, or the golden model."""
DEFAULT_ENGINE = "native"
"""The engine a soft switch serves unless told (``NRL_SOFTSWITCH_ENGINE`` overrides it);
the golden model when the extension is not built (the test suite fails then)."""
DEFAULT_JOBS = 4
"""``JOBS`` of a soft switch unless told (``--jobs``; the RTL's is 1)."""
_NATIVE_STATS = ("datagrams", "sent", "send_calls", "receives", "busy_us", "rx_overflow")


def default_engine() -> str:
    """``NRL_SOFTSWITCH_ENGINE`` if set, else :data:`DEFAULT_ENGINE` (``"model"`` when
    ``hostdrv._native`` is not built)."""
    engine = os.environ.get("NRL_SOFTSWITCH_ENGINE") or DEFAULT_ENGINE
    return engine if engine != "native" or native_engine.available() else "model"


def make_model(engine: str, **params: int) -> Engine:
    """A new switch of ``engine`` ("native" or "model") with ``params``.

    Raises
    ------
    ValueError
        For an unknown engine or a bad parameter.
    RuntimeError
        For "native" when the extension is not built.
    """
    if engine == "model":
        return SwitchModel(**params)
    if engine == "native":
        return native_engine.NativeSwitchModel(**params)
    raise ValueError(f"bad engine={engine!r}: must be one of {', '.join(ENGINES)}")


class SoftSwitch(ControlServer, DatagramLoop):
    """A :class:`~hostdrv.switch.reference.SwitchModel` served over UDP.

    Parameters
    ----------
    listen:
        ``"host:port"`` or (host, port) to bind; port 0 picks a free one
        (see :attr:`address`).
    capacity, record_bytes, max_slots, max_elems, build_hash, jobs:
        Model parameters (see :class:`~hostdrv.switch.reference.SwitchModel`); ``jobs``
        (``JOBS``, default :data:`DEFAULT_JOBS`) is how many register pages it serves.
    log_arrivals:
        Keep every GRADIENT datagram in :attr:`arrivals` (tests use it to
        recompute fp32 sums in arrival order).
    model:
        Serve this model instead of a new one. Change its registers through
        :meth:`write` (or the control channel), which also refreshes the
        address tables the switch routes with.
    engine:
        ``"native"`` or ``"model"`` for a new model (default
        :func:`default_engine`); ignored when ``model`` is given.
    control_key:
        Execute only control requests signed with this key (``bytes``), or with
        the key in this file (a path; whitespace around it stripped), from any
        address (``--control-key``). ``None``: execute unsigned requests, from
        loopback addresses only.
    job_keys:
        Job j's key by j (``{j: bytes or path}``, ``--job-key J:FILE``): requests signed
        with it (key id j + 1) read any register and write only page j's job registers
        that are not *admin* (``docs/protocol.md`` section 11). Needs ``control_key``.

    Raises
    ------
    OSError
        When the address cannot be bound or the key file cannot be read
        (:class:`~hostdrv.wire.net.TransportError`).
    ValueError
        For an empty control key, job keys without a control key or for a job the
        switch does not have, or a bad model parameter.

    Examples
    --------
    >>> with SoftSwitch("127.0.0.1:0") as sw:               # doctest: +SKIP
    ...     ctl = SwitchControl(sw.url)
    """

    log_name = "netfpga-softswitch"
    """Program name the server's messages start with."""

    def __init__(self, listen: str | tuple[str, int] = ("127.0.0.1", 0), *,
                 capacity: int = 1024, record_bytes: int = 128, max_slots: int = 64,
                 max_elems: int = 352, build_hash: int = 0, log_arrivals: bool = False,
                 model: Engine | None = None,
                 control_key: KeySource | None = None,
                 engine: str | None = None, dpdk: Sequence[str] = (),
                 dpdk_address: str | tuple[str, int] | None = None,
                 jobs: int = DEFAULT_JOBS, job_keys: Mapping[int, KeySource] | None = None) -> None:
        self._keys = control_keys(control_key, job_keys, MAX_JOBS if model is not None else jobs)
        self._control_key: bytes | None = self._keys.get(ADMIN_KEY_ID)
        self.model = model if model is not None else make_model(
            engine or default_engine(), capacity=capacity, record_bytes=record_bytes,
            max_slots=max_slots, max_elems=max_elems, build_hash=build_hash, jobs=jobs)
        host, port = parse_hostport(listen) if isinstance(listen, str) else listen
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        tune_socket(sock)
        try:
            sock.bind((host, port))
        except OSError as e:
            sock.close()
            raise OSError(e.errno, f"cannot listen on {host}:{port}: {e.strerror}") from e
        sock.setblocking(False)
        self._gro = True
        try:
            sock.setsockopt(SOL_UDP, UDP_GRO, 1)
        except OSError:
            self._gro = False
        self._ovfl = True
        try:
            sock.setsockopt(socket.SOL_SOCKET, SO_RXQ_OVFL, 1)
        except OSError:
            self._ovfl = False
        self._gso = True
        self.sock = sock
        self._arrivals: list[Arrival] | None = [] if log_arrivals else None
        self.lock = threading.Lock()
        """Held while a batch of datagrams is processed; take it to touch :attr:`model`."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._replies: dict[tuple[str, int], tuple[bytes, bytes]] = {}
        self._guard = ControlReplayGuard()
        self._poll = select.poll()
        self._poll.register(sock, select.POLLIN)
        self._rbuf = bytearray(RECV_BYTES)
        self._frame = bytearray(HEADER_OFFSET + RECV_BYTES)
        self._tables_valid = False
        self._sources: dict[tuple[str, int],
                            tuple[int, bytes, dict[tuple[int, int], int] | None]] = {}
        self._members: list[tuple[int, int, tuple[str, int]]] = []
        self._agg_entries: list[tuple[tuple[int, int], int, int, tuple[str, int] | None]] = []
        self._last_addr: dict[tuple[int, int], tuple[str, int]] = {}
        self._pages: dict[int, int] = {}
        self._stats = {"datagrams": 0, "control": 0, "sent": 0, "send_calls": 0, "receives": 0,
                       "busy_us": 0, "errors": 0, "rx_overflow": 0, "ctrl_refused": 0}
        self._srv_base = dict.fromkeys(_SERVER_STATS.values(), 0)
        self._native: object | None = None  # the native loop (hostdrv._native.Server)
        self._dpdk_server: object | None = None  # the DPDK ports' Server and loop
        self._dpdk_switch: object | None = None
        self.dpdk_address: tuple[str, int] | None = None
        """(IPv4, UDP port) the switch answers on its DPDK ports (``None``: no DPDK)."""
        if dpdk:
            try:
                self._open_dpdk(list(dpdk), dpdk_address)
            except BaseException:
                sock.close()
                raise

    @property
    def engine(self) -> str:
        """What serves the datagrams: ``"native"`` (the compiled engine and its socket
        loop), ``"model"`` (the golden model) or the model's class name."""
        if isinstance(self.model, native_engine.NativeSwitchModel):
            return "native"
        return "model" if type(self.model) is SwitchModel else type(self.model).__name__

    @property
    def arrivals(self) -> list[Arrival] | None:
        """Every GRADIENT datagram received, in order (``log_arrivals``; else ``None``)."""
        if self._arrivals is not None and self._native is not None:
            self._arrivals += [Arrival(*a) for a in self._native.arrivals()]  # type: ignore[attr-defined]
        if self._arrivals is not None and self._dpdk_server is not None:
            self._arrivals += [Arrival(*a) for a in self._dpdk_server.arrivals()]  # type: ignore[attr-defined]
        return self._arrivals

    def _sync_stats(self) -> None:
        """Copy the native loop's figures into :attr:`_stats` (the socket's and the DPDK
        ports' added up; the DPDK loop's own figures as ``dpdk_*``)."""
        if self._native is not None:
            figures = self._native.stats()  # type: ignore[attr-defined]
            for k in _NATIVE_STATS:
                self._stats[k] = figures[k]
        if self._dpdk_server is not None and self._dpdk_switch is not None:
            figures = self._dpdk_server.stats()  # type: ignore[attr-defined]
            for k in _NATIVE_STATS:
                base = self._stats[k] if self._native is not None else 0
                self._stats[k] = base + figures[k]
            for k, v in self._dpdk_switch.stats().items():  # type: ignore[attr-defined]
                self._stats[f"dpdk_{k}"] = v

    # -- DPDK ports --------------------------------------------------------------
    def _open_dpdk(self, specs: list[str], address: str | tuple[str, int] | None) -> None:
        """Create the DPDK ports and their loop (run by :meth:`serve_forever`)."""
        if self.engine != "native":
            raise DpdkError("--dpdk serves the native engine (--engine native), not "
                            f"{self.engine!r}")
        module = sys.modules[type(self.model.engine).__module__]  # type: ignore[attr-defined]
        if not getattr(module, "dpdk_available", False):
            raise DpdkError("--dpdk cannot be used: " + NOT_BUILT)
        host, port = self.address
        if address is not None:
            host, port = parse_hostport(address) if isinstance(address, str) else address
        if port == 0:
            port = self.address[1]
        if host in ("0.0.0.0", ""):
            raise DpdkError("--dpdk needs the switch's IPv4 address on its ports: give "
                            "--dpdk-address IP:PORT (or --listen IP:PORT)")
        for spec in specs:
            check_interface(spec)
        args = [devargs(spec, role="server") for spec in specs]
        srv = native_engine.server(self.model, -1, self._native_control,  # type: ignore[arg-type]
                                   log_arrivals=self._arrivals is not None)
        try:
            sw = module.DpdkSwitch(self.model.engine, srv, args,  # type: ignore[attr-defined]
                                   ip_to_int(host), port)
        except RuntimeError as e:
            raise DpdkError(f"cannot open the DPDK ports {specs}: {e}") from e
        self._dpdk_server, self._dpdk_switch = srv, sw
        self.dpdk_address = (host, port)

    @property
    def dpdk_ports(self) -> list[str]:
        """The DPDK devices the switch serves (empty without ``dpdk``)."""
        if self._dpdk_switch is None:
            return []
        return list(self._dpdk_switch.port_names())  # type: ignore[attr-defined]

    def serve_forever(self, poll_interval: float = 0.05) -> None:
        """Serve until :meth:`stop`; with DPDK ports, their loop runs in a thread of its own
        beside the socket's."""
        sw = self._dpdk_switch
        if sw is None:
            return DatagramLoop.serve_forever(self, poll_interval)
        t = threading.Thread(target=sw.serve,  # type: ignore[attr-defined]
                             args=(max(1, int(poll_interval * 1000)),), name="softswitch-dpdk",
                             daemon=True)
        t.start()
        try:
            DatagramLoop.serve_forever(self, poll_interval)
        finally:
            sw.stop()  # type: ignore[attr-defined]
            t.join()

    # -- addressing --------------------------------------------------------------
    @property
    def address(self) -> tuple[str, int]:
        """(host, port) the switch listens on."""
        host, port = self.sock.getsockname()[:2]
        return str(host), int(port)

    @property
    def url(self) -> str:
        """``soft://host:port`` for clients."""
        host, port = self.address
        return f"soft://{host}:{port}"

    @property
    def stats(self) -> dict[str, int]:
        """Host-side figures since the switch started.

        ``datagrams`` and ``control`` requests received, datagrams ``sent`` and
        ``send_calls``, ``receives`` (receive calls), microseconds spent
        processing (``busy_us``), datagrams whose processing raised
        (``errors``; the first is printed), datagrams the kernel dropped
        because the socket's receive buffer was full (``rx_overflow``, as last
        reported by ``SO_RXQ_OVFL``) and control requests refused as not
        authenticated or forbidden (``ctrl_refused``). The registers ``SRV_RX_OVERFLOW`` and
        ``SRV_CTRL_REFUSED`` count the last two since counters were last cleared.
        With the native loop ``receives`` counts datagrams (``recvmmsg`` takes many
        per call) and ``send_calls`` counts ``sendmmsg`` calls.
        """
        self._sync_stats()
        return dict(self._stats)

    # -- serving -----------------------------------------------------------------
    def start(self) -> SoftSwitch:
        """Serve in a daemon thread; returns ``self``."""
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self.serve_forever, name="softswitch",
                                            daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving (joins the thread started by :meth:`start`)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def close(self) -> None:
        """Stop and release the socket (and the DPDK ports)."""
        self.stop()
        self._dpdk_switch = None
        self.sock.close()

    def __enter__(self) -> SoftSwitch:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def replay_memory_bytes(capacity: int, record_bytes: int) -> int:
    """Host memory a switch engine reserves for its replay: C records of R bytes, the sum
    tree (2C 64-bit nodes) and the record chains (owner, wseq, prev: 9 bytes a record)."""
    return capacity * record_bytes + 16 * capacity + 9 * capacity


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


# ---------------------------------------------------------------------------
# command line


def build_parser(prog: str = "netfpga-softswitch") -> argparse.ArgumentParser:
    """Command-line options of ``netfpga-softswitch`` (``prog``: the name usage lines show)."""
    p = argparse.ArgumentParser(prog=prog,
                                description="Run the netfpga-rl reference switch behind a UDP socket.")
    p.add_argument("--listen", default="127.0.0.1:20050", help="host:port to bind (port 0: any)")
    p.add_argument("--capacity", type=int, default=1024,
                   help="replay records C (a power of two; host memory, 2**20 and more)")
    p.add_argument("--record-bytes", type=int, default=128,
                   help="bytes per record R (a multiple of 64, at most 8192: an Atari frame "
                        "record is 7104)")
    p.add_argument("--max-slots", type=int, default=64, help="aggregation slot memory depth")
    p.add_argument("--max-elems", type=int, default=352,
                   help="largest elements per packet P: 352 fits an Ethernet frame (the hardware "
                        "limit); on loopback up to 16352, one datagram of up to 64 KB per chunk "
                        "(a larger P makes frames over 65535 bytes, dropped as BAD_LENGTH)")
    p.add_argument("--build-hash", type=lambda s: int(s, 0), default=0,
                   help="value of BUILD_HASH")
    p.add_argument("--control-key", metavar="FILE",
                   help="execute only control requests signed with the key in FILE (HMAC-SHA256, "
                        "docs/protocol.md section 9), from any address; default: unsigned "
                        "requests from loopback only")
    p.add_argument("--jobs", type=int, default=DEFAULT_JOBS,
                   help=f"JOBS, jobs served at once (register pages), 1..{MAX_JOBS} "
                        "(docs/protocol.md section 11)")
    p.add_argument("--job-key", metavar="J:FILE", action="append", type=parse_job_key,
                   default=[],
                   help="job J's control key (repeatable; needs --control-key): requests "
                        "signed with it (key id J+1) read any register and write only job J's "
                        "non-admin job registers")
    p.add_argument("--engine", choices=ENGINES, default=None,
                   help="native: the compiled engine and its socket loop; model: the Python "
                        f"golden model (debugging). Default: {DEFAULT_ENGINE}, or "
                        "NRL_SOFTSWITCH_ENGINE")
    p.add_argument("--profile", metavar="FILE", help="write a cProfile of the serve loop to FILE")
    p.add_argument("--dpdk", metavar="PORT", action="append", default=[],
                   help="also serve on this DPDK port (kernel bypass; repeat for more): "
                        "af_packet:IFACE, af_xdp:IFACE, memif:PATH[@ID] or DPDK devargs "
                        "(docs/bypass.md); needs the extension built with DPDK")
    p.add_argument("--dpdk-address", metavar="IP:PORT", default=None,
                   help="the switch's address on its DPDK ports (default: --listen's)")
    return p


def main(argv: Sequence[str] | None = None, prog: str = "netfpga-softswitch") -> int:
    """Entry point of ``netfpga-softswitch``: serve until SIGINT/SIGTERM, print the counters
    (``counters {...}``: the model's nonzero ones) and the server's figures (``stats {...}``,
    :attr:`SoftSwitch.stats`, which include ``rx_overflow`` and ``ctrl_refused``)."""
    args = build_parser(prog).parse_args(argv)
    try:
        sw = SoftSwitch(args.listen, capacity=args.capacity, record_bytes=args.record_bytes,
                        max_slots=args.max_slots, max_elems=args.max_elems,
                        build_hash=args.build_hash, control_key=args.control_key,
                        engine=args.engine, dpdk=args.dpdk, dpdk_address=args.dpdk_address,
                        jobs=args.jobs, job_keys=dict(args.job_key))
    except (OSError, ValueError, RuntimeError) as e:
        print(f"{SoftSwitch.log_name}: {e}", file=sys.stderr)
        return 2

    def _stop(_signum: int, _frame: object) -> None:
        sw._stop.set()

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    print(f"listening {sw.url}", flush=True)  # the first line: launchers wait for it
    if sw.dpdk_address is not None:
        host, port = sw.dpdk_address
        print(f"dpdk {host}:{port} ports {','.join(sw.dpdk_ports)}", flush=True)
    mem = replay_memory_bytes(args.capacity, args.record_bytes)
    print(f"{SoftSwitch.log_name}: replay memory {args.capacity} records x {args.record_bytes} "
          f"bytes: {_gib(mem)} of host memory ({_gib(args.capacity * args.record_bytes)} "
          "records, the rest sum tree and record chains)", file=sys.stderr, flush=True)
    if args.profile:
        import cProfile

        prof = cProfile.Profile()
        prof.runcall(sw.serve_forever)
        prof.dump_stats(args.profile)
    else:
        sw.serve_forever()
    sw.sock.close()
    counters = {k: v for k, v in sw.model.counters().items() if v}
    print("counters " + json.dumps(counters), flush=True)
    print("stats " + json.dumps(sw.stats), flush=True)
    return 0


__all__ = [
    "DEFAULT_ENGINE",
    "DEFAULT_JOBS",
    "ENGINES",
    "SO_RXQ_OVFL",
    "Arrival",
    "ControlServer",
    "DatagramLoop",
    "SoftSwitch",
    "SoftSwitchProcess",
    "build_parser",
    "default_engine",
    "main",
    "make_model",
    "replay_memory_bytes",
]


if __name__ == "__main__":
    sys.exit(main())
