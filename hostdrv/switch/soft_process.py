"""A soft (or sim) switch in a child process: :class:`SoftSwitchProcess`."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from hostdrv.wire.net import parse_hostport


class SoftSwitchProcess:
    """A soft switch in a child process (``python -m hostdrv.switch.soft``).

    Parameters
    ----------
    listen:
        Address to bind (port 0: a free one; the child reports it).
    args:
        Extra command-line options (``["--capacity", "4096"]``).
    ready_timeout:
        Seconds to wait for the child to report its address.

    Raises
    ------
    RuntimeError
        When the child exits or stays silent before it listens.
    """

    module = "hostdrv.switch.soft"
    """The ``python -m`` module the child runs."""
    scheme = "soft"
    """URL scheme the child announces (``listening soft://host:port``)."""

    def __init__(self, listen: str = "127.0.0.1:0", args: Sequence[str] = (), *,
                 ready_timeout: float = 20.0) -> None:
        root = str(Path(__file__).resolve().parents[2])  # the folder hostdrv was imported from
        env = dict(os.environ)
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env["PYTHONUNBUFFERED"] = "1"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", self.module, "--listen", listen, *args],
            stdout=subprocess.PIPE, text=True, env=env)
        assert self.proc.stdout is not None
        deadline = time.monotonic() + ready_timeout
        line = ""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.1)
            if ready:
                line = self.proc.stdout.readline()
                break
            if self.proc.poll() is not None:
                break
        if not line.startswith(f"listening {self.scheme}://"):
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError(f"{self.module} child did not start (exit {self.proc.returncode}, "
                               f"said {line!r})")
        self.url = line.split()[1]
        self.address = parse_hostport(self.url.split("//", 1)[1])
        self.output = ""

    def stop(self, timeout: float = 10.0) -> str:
        """SIGTERM the child, wait, and return what it printed after starting."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                out, _ = self.proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                out, _ = self.proc.communicate()
            self.output = out or ""
        return self.output

    def __enter__(self) -> SoftSwitchProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
