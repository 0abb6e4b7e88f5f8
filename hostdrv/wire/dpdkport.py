"""How a DPDK port is named, on both ends (the soft switch's ``--dpdk``, a ``dpdk://`` client).

The kernel-bypass data path (``hostdrv/native/nrl_dpdk.cpp``, ``docs/bypass.md``) runs
on DPDK virtual devices, so it needs no NIC bound to a user-space driver:

``af_packet:IFACE``
    ``net_af_packet`` on a Linux interface (a veth of the rack, a NIC): a
    ``PACKET_MMAP`` ring, no system call per frame.
``af_xdp:IFACE``
    ``net_af_xdp``: an XDP socket on the interface's queue 0 (frames the XDP
    program redirects never reach the kernel's stack).
``memif:PATH`` or ``memif:PATH@ID``
    ``net_memif``: shared-memory rings to another process of the same host
    over the Unix socket PATH (interface ID, default 0). The switch is the
    memif server, a client the memif client.
``net_...``
    Any DPDK ``--vdev`` argument, passed as it is.

:func:`devargs` turns a spec into the ``--vdev`` argument; the device names get a
per-process counter so a process may open several ports of one kind.
"""

from __future__ import annotations

import itertools
import socket

from hostdrv.errors import NetrlError

_serial = itertools.count()

SPEC_FORMS = "af_packet:IFACE, af_xdp:IFACE, memif:PATH[@ID] or a net_* DPDK devargs string"
"""The spec forms, for error messages and ``--help``."""


class DpdkError(NetrlError, RuntimeError):
    """The DPDK data path cannot be used: the extension was built without DPDK, the EAL
    refused to start, or a port spec is bad or its device cannot be created."""


NOT_BUILT = ("the native extension was built without DPDK (hostdrv._native.dpdk_available "
             "is False): run `make setup` (it installs Debian's dpdk and libdpdk-dev) and "
             "rebuild (`python setup.py build_ext --inplace`, or `pip install -e .`); "
             "NETRL_NO_DPDK=1 at build time leaves it out")
"""Why ``--dpdk`` / ``dpdk://`` is refused when the extension has no DPDK."""


def devargs(spec: str, *, role: str) -> str:
    """The DPDK ``--vdev`` argument of ``spec``; ``role`` (``"server"`` for the switch,
    ``"client"`` for a client) is the memif role.

    Raises
    ------
    DpdkError
        For a spec of none of the forms.
    """
    if role not in ("server", "client"):
        raise ValueError(f"bad role={role!r}: server or client")
    kind, sep, rest = spec.partition(":")
    n = next(_serial)
    if spec.startswith("net_"):
        return spec
    if not sep or not rest:
        raise DpdkError(f"bad DPDK port {spec!r}: expected {SPEC_FORMS}")
    if kind == "af_packet":
        # 9 KB frames (jumbo MTU 9000 fits in an mbuf); the qdisc kept, so tc shaping applies as to
        # the kernel's own sends
        return (f"net_af_packet{n},iface={rest},blocksz=36864,framesz=9216,framecnt=512,"
                "qdisc_bypass=0")
    if kind == "af_xdp":
        return f"net_af_xdp{n},iface={rest},start_queue=0,queue_count=1"
    if kind == "memif":
        path, _, ident = rest.partition("@")
        if not ident:
            ident = "0"
        if not ident.isdigit():
            raise DpdkError(f"bad DPDK port {spec!r}: memif id {ident!r} is not a number")
        return f"net_memif{n},role={role},socket={path},id={ident},bsize=9216"
    raise DpdkError(f"bad DPDK port {spec!r}: unknown kind {kind!r}; expected {SPEC_FORMS}")


def interface_of(spec: str) -> str | None:
    """The Linux interface an ``af_packet:`` / ``af_xdp:`` spec (or ``iface=`` devargs)
    names; ``None`` for memif."""
    kind, _, rest = spec.partition(":")
    if kind in ("af_packet", "af_xdp"):
        return rest
    for part in spec.split(","):
        if part.startswith("iface="):
            return part[len("iface="):]
    return None


def check_interface(spec: str) -> None:
    """Raise :class:`DpdkError` when ``spec`` names a Linux interface this network namespace
    does not have (DPDK itself only says "Operation not supported")."""
    iface = interface_of(spec)
    if iface is None:
        return
    try:
        socket.if_nametoindex(iface)
    except OSError:
        raise DpdkError(f"bad DPDK port {spec!r}: no interface {iface!r} in this network "
                        "namespace") from None


__all__ = ["NOT_BUILT", "SPEC_FORMS", "DpdkError", "check_interface", "devargs", "interface_of"]
