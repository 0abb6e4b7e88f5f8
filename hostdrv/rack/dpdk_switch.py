"""The soft switch on DPDK ports as a rack's switch (``docs/bypass.md``).

A ``switch="none"`` rack (``scripts/rack.py``) leaves the switch namespace's veths
``p{i}`` unattached; :func:`start` runs ``netfpga-softswitch --dpdk af_packet:p{i} ...``
there, at the rack's switch address (``--dpdk-address``) with its control key, so hosts
reach it at the same ``soft://`` URL as the bridged soft rack's switch (kernel UDP) or
over their own DPDK port (``dpdk://SWITCH_IP:PORT?port=af_packet:eth0&key=FILE``).

The hosts' ``eth0`` are set to one segment per frame (``gso_max_segs 1``, as for the
RTL rack): a kernel client's UDP GSO super-frame would reach an ``af_packet`` port
whole, as no wire would carry it.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hostdrv.errors import NetrlError


class DpdkRackError(NetrlError, RuntimeError):
    """The DPDK switch did not start in the rack's switch namespace."""


def start(rack: Any, ports: Sequence[str] | None = None, log: Path | None = None, *,
          max_elems: int = 2048, extra: Sequence[str] = (),
          wait: float = 30.0) -> subprocess.Popen[str]:
    """Start the DPDK soft switch in ``rack``'s switch namespace; return its process once it
    serves (stop it with ``terminate()``; ``rack.down()`` also ends it).

    ``ports`` default to ``af_packet:p{i}`` for every host; ``log`` to
    ``rack.state_dir / "dpdkswitch.log"``.
    """
    hosts = rack.config.hosts
    for i in range(hosts):
        subprocess.run(["ip", "netns", "exec", rack.host_ns(i), "ip", "link", "set", "eth0",
                        "gso_max_segs", "1"], check=True)
    ports = list(ports) if ports is not None else [f"af_packet:p{i}" for i in range(hosts)]
    log = log if log is not None else rack.state_dir / "dpdkswitch.log"
    args = [sys.executable, "-m", "hostdrv.switch.soft", "--listen", "127.0.0.1:20050",
            "--dpdk-address", f"{rack.switch_ip}:{rack.config.switch_port}",
            "--control-key", str(rack.key_file), "--max-elems", str(max_elems), *extra]
    for p in ports:
        args += ["--dpdk", p]
    with open(log, "w") as f:
        proc = subprocess.Popen(["ip", "netns", "exec", rack.switch_ns, *args], stdout=f,
                                stderr=subprocess.STDOUT, env=rack._env(), start_new_session=True,
                                text=True)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if "dpdk " in log.read_text():
            return proc
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    raise DpdkRackError(f"the DPDK switch did not start in {rack.switch_ns}: "
                        f"{log.read_text()[-2000:]}")


__all__ = ["DpdkRackError", "start"]
