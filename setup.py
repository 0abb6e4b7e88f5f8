"""Build of the native switch engine (``hostdrv._native``, C++17 with pybind11).

Everything else about the package is in ``pyproject.toml``; this file only adds the
extension, so ``pip install .`` and ``pip install -e .`` compile it with the
machine's C++ compiler (``make setup`` installs Debian's g++ when it is missing).

The DPDK data path (``hostdrv/native/nrl_dpdk.cpp``, docs/bypass.md) is built in when
``pkg-config libdpdk`` finds DPDK (``make setup`` installs Debian's) and
``NETRL_NO_DPDK`` is not set to 1; without it the extension is the same minus
``--dpdk`` (``hostdrv._native.dpdk_available`` is False).
"""

import os
import shlex
import subprocess

from pybind11.setup_helpers import Pybind11Extension, build_ext
from setuptools import setup

NATIVE = "hostdrv/native/"
WIRE = "hostdrv/wire/"  # the generated nrl_protocol.h, shared with the SUME firmware


def dpdk_flags() -> tuple[list[str], list[str]] | None:
    """(compile flags, link flags) of libdpdk from pkg-config; None when absent or disabled."""
    if os.environ.get("NETRL_NO_DPDK", "") == "1":
        return None
    try:
        cflags = subprocess.run(["pkg-config", "--cflags", "libdpdk"], capture_output=True,
                                text=True, check=True).stdout
        libs = subprocess.run(["pkg-config", "--libs", "libdpdk"], capture_output=True,
                              text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    # only the libraries the port code calls: the PMDs are plugins the EAL loads itself
    wanted = ("-lrte_ethdev", "-lrte_mbuf", "-lrte_mempool", "-lrte_ring", "-lrte_eal",
              "-lrte_kvargs", "-lrte_net", "-lrte_telemetry")
    link = [f for f in shlex.split(libs) if not f.startswith("-l") or f in wanted]
    return shlex.split(cflags), link


DPDK = dpdk_flags()
SOURCES = [NATIVE + "nrl_engine.cpp", NATIVE + "nrl_engine_regs.cpp",
           NATIVE + "nrl_engine_replay.cpp", NATIVE + "nrl_server.cpp", NATIVE + "nrl_client.cpp",
           NATIVE + "nrl_module.cpp", NATIVE + "nrl_ps.cpp", NATIVE + "nrl_ps_module.cpp",
           NATIVE + "nrl_dpdk_module.cpp"]
COMPILE = ["-O2", "-fno-fast-math", "-ffp-contract=off"]
LINK: list[str] = []
MACROS: list[tuple[str, str]] = []
if DPDK is not None:
    SOURCES += [NATIVE + "nrl_dpdk_port.cpp", NATIVE + "nrl_dpdk.cpp"]
    COMPILE += DPDK[0]  # with its -march (SSE4.2: the rte_* inline code needs it)
    LINK += DPDK[1]
    MACROS.append(("NRL_DPDK", "1"))

setup(
    ext_modules=[
        Pybind11Extension(
            "hostdrv._native",
            SOURCES,
            include_dirs=[NATIVE, WIRE],
            depends=[NATIVE + "nrl_engine.h", NATIVE + "nrl_server.h", NATIVE + "nrl_client.h",
                     NATIVE + "nrl_ps.h", NATIVE + "nrl_dpdk.h", WIRE + "nrl_protocol.h"],
            cxx_std=17,
            # IEEE 754 fp32 as numpy computes it: no fast-math, no FMA contraction
            extra_compile_args=COMPILE,
            extra_link_args=LINK,
            define_macros=MACROS,
        ),
    ],
    cmdclass={"build_ext": build_ext},
)
