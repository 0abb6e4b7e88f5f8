"""A per-port delay line: raw Ethernet frames held for a fixed time between two interfaces.

The rack (``scripts/rack.py``) needs link delay, and the ``netem`` qdisc is
not available on every machine. :class:`DelayLine` replaces it in user
space: for every pair of interfaces ``(a, b)`` it reads each frame that
arrives on ``a`` from an ``AF_PACKET`` socket, keeps it for ``delay``
seconds, and sends it out of ``b`` unchanged (and the same from ``b`` to
``a``). Frames leave in arrival order, each at its own arrival time plus the
delay, so a link's delay is added once per direction and frames keep their
spacing.

GSO and checksum offload are passed through: both sockets use
``PACKET_VNET_HDR``, so a 64 KB TCP or UDP-GSO super-frame the kernel hands
over unsegmented goes out as one super-frame again with its virtio header
(segmentation happens, if at all, where it would have happened without the
delay line).

Timing
------
The loop sleeps in ``poll`` (millisecond resolution) until the next frame is
due and spins for the last millisecond plus ``spin`` (default 100 µs) before a
deadline, so a frame leaves
within a few µs of its deadline when the loop is not busy; the time counted
is the moment the frame is read from the socket, not the kernel's receive
time. ``docs/rack.md`` has the measured precision.

Command line::

    python -m hostdrv.rack.delay_line --pair p0:q0 --pair p1:q1 --delay-us 10

runs until SIGTERM/SIGINT and prints ``ready`` once every socket is bound,
then on exit ``stats {...}`` (frames forwarded, late frames and the largest
lateness seen).
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import socket
import sys
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["DelayLine", "main"]

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_VNET_HDR = 15
PACKET_IGNORE_OUTGOING = 23
PACKET_OUTGOING = 4
RECV_BYTES = 65536 + 14 + 10


def _open(ifname: str) -> socket.socket:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.setsockopt(SOL_PACKET, PACKET_VNET_HDR, 1)
    try:
        s.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
    except OSError:  # kernels before 4.20: outgoing frames are filtered by pkttype below
        pass
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
    s.bind((ifname, ETH_P_ALL))  # protocol 0 here would leave the socket on every interface
    s.setblocking(False)
    return s


@dataclass
class _Direction:
    rx: socket.socket
    tx: socket.socket
    queue: deque[tuple[int, bytes]] = field(default_factory=deque)


class DelayLine:
    """Forward frames between interface pairs, each held ``delay_ns`` nanoseconds.

    Parameters
    ----------
    pairs:
        ``(a, b)`` interface names; frames from ``a`` go out of ``b`` and back.
    delay_ns:
        One-way delay added in each direction.
    spin_ns:
        Busy-wait this long before a deadline instead of sleeping in ``poll``.

    Raises
    ------
    OSError
        When a socket cannot be opened or bound (not root, no such interface).
    """

    def __init__(self, pairs: Sequence[tuple[str, str]], delay_ns: int, *,
                 spin_ns: int = 100_000) -> None:
        if delay_ns < 0:
            raise ValueError(f"bad delay_ns={delay_ns}: must be >= 0")
        self.delay_ns = delay_ns
        self.spin_ns = spin_ns
        self.sockets: list[socket.socket] = []
        self._dirs: dict[int, _Direction] = {}
        for a, b in pairs:
            sa, sb = _open(a), _open(b)
            self.sockets += [sa, sb]
            self._dirs[sa.fileno()] = _Direction(sa, sb)
            self._dirs[sb.fileno()] = _Direction(sb, sa)
        self.stats = {"frames": 0, "late": 0, "max_late_ns": 0, "send_errors": 0}
        """``frames`` forwarded, ``late`` ones sent over 20 µs after their deadline,
        ``max_late_ns`` the largest lateness, ``send_errors`` frames the kernel refused."""
        self._running = True

    def stop(self) -> None:
        """Make :meth:`serve_forever` return (safe from a signal handler)."""
        self._running = False

    def close(self) -> None:
        """Close every socket."""
        for s in self.sockets:
            s.close()

    def _drain(self, d: _Direction, now: int) -> None:
        due = now + self.delay_ns
        while True:
            try:
                data, addr = d.rx.recvfrom(RECV_BYTES)
            except BlockingIOError:
                return
            if addr[2] == PACKET_OUTGOING:
                continue
            d.queue.append((due, data))

    def _send_due(self, now: int) -> int | None:
        """Send every frame due by ``now``; the next deadline, or None when all queues are empty."""
        nxt: int | None = None
        stats = self.stats
        for d in self._dirs.values():
            q = d.queue
            while q and q[0][0] <= now:
                due, data = q.popleft()
                late = now - due
                if late > 20_000:
                    stats["late"] += 1
                if late > stats["max_late_ns"]:
                    stats["max_late_ns"] = late
                try:
                    d.tx.send(data)
                    stats["frames"] += 1
                except OSError:
                    stats["send_errors"] += 1
            if q and (nxt is None or q[0][0] < nxt):
                nxt = q[0][0]
        return nxt

    def serve_forever(self) -> None:
        """Forward until :meth:`stop`."""
        poller = select.poll()
        for fd in self._dirs:
            poller.register(fd, select.POLLIN)
        clock = time.monotonic_ns
        nxt: int | None = None
        while self._running:
            now = clock()
            if nxt is None:
                timeout = 200  # ms: wake up now and then to notice stop()
            else:
                wait = nxt - now - self.spin_ns
                timeout = 0 if wait < 1_000_000 else wait // 1_000_000  # poll counts ms
            try:
                events = poller.poll(timeout)
            except InterruptedError:
                continue
            now = clock()
            for fd, _ev in events:
                self._drain(self._dirs[fd], now)
            nxt = self._send_due(clock())


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: ``python -m hostdrv.rack.delay_line --pair A:B ... --delay-us D``."""
    p = argparse.ArgumentParser(prog="delay_line", description=__doc__.splitlines()[0])
    p.add_argument("--pair", action="append", required=True, metavar="A:B",
                   help="interfaces to join through the delay line (repeat for more)")
    p.add_argument("--delay-us", type=float, required=True, help="one-way delay in microseconds")
    p.add_argument("--spin-us", type=float, default=100.0,
                   help="busy-wait this long before a deadline (default 100)")
    args = p.parse_args(argv)
    pairs = []
    for text in args.pair:
        a, sep, b = text.partition(":")
        if not sep or not a or not b:
            p.error(f"bad --pair {text!r}: expected A:B")
        pairs.append((a, b))
    line = DelayLine(pairs, round(args.delay_us * 1000), spin_ns=round(args.spin_us * 1000))
    signal.signal(signal.SIGTERM, lambda *_: line.stop())
    signal.signal(signal.SIGINT, lambda *_: line.stop())
    print(f"ready pid={os.getpid()}", flush=True)
    line.serve_forever()
    line.close()
    print("stats " + json.dumps(line.stats), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
