#!/usr/bin/env python3
"""Patch NetFPGA SUME's ``sume_riffa`` host driver so that it builds on current Linux kernels.

SUME's driver (``lib/sw/std/driver/sume_riffa_v1_0_0/sume_riffa.c`` of
NetFPGA-SUME-live, written for Linux 3.x/4.x) no longer builds on a current
distribution. This script copies the driver folder and rewrites the copy:

=====================================  ==================================================  =========
what                                   becomes                                              since
=====================================  ==================================================  =========
``pci_alloc_consistent(p, n, &h)``     ``dma_alloc_coherent(&p->dev, n, &h, GFP_ATOMIC)``   5.18
``pci_free_consistent(p, ...)``        ``dma_free_coherent(&p->dev, ...)``                  5.18
``pci_set_dma_mask(p, m)``             ``dma_set_mask(&p->dev, m)``                         5.18
``pci_set_consistent_dma_mask(p, m)``  ``dma_set_coherent_mask(&p->dev, m)``                5.18
``netif_napi_add(d, n, poll, w)``      ``netif_napi_add(d, n, poll)`` (guarded)             6.1
``ndo_tx_timeout(dev)``                ``ndo_tx_timeout(dev, txqueue)`` (guarded)           5.6
``ndo_get_stats64`` returning a ptr    returning ``void`` (guarded)                         4.11
writes to ``netdev->dev_addr``         ``eth_hw_addr_set()`` (guarded)                      5.17
private ioctls in ``ndo_do_ioctl``     also ``ndo_siocdevprivate`` (guarded): ``rwaxi``'s   5.15
                                       ``SIOCDEVPRIVATE+1/+2`` reach only that hook
=====================================  ==================================================  =========

"since" is the kernel that removed or changed the interface; the guarded
changes keep the old form for older kernels (``LINUX_VERSION_CODE``), the
``dma_*`` calls exist on every kernel the driver was written for. Checked:
the patched driver builds with kbuild against Debian's ``linux-headers`` for
6.1 (``tests/test_sume_riffa_patch.py``, on a stand-in with the same
constructs; by hand on the real ``sume_riffa.c``). Not checked: loading it, or
any kernel after 6.1 (docs/board.md).

Usage::

    python scripts/sume_riffa_patch.py $DRIVER_FOLDER build/sume_riffa
    make -C build/sume_riffa        # kbuild against /lib/modules/$(uname -r)/build

Every rewrite must find what it rewrites (the optional ones: ``netif_napi_add``
and the MAC address writes), otherwise the script stops with a message naming
it: a driver that differs from the one this was written for is not patched
half-way. Exit status 0, 1 on such an error, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

MARKER = "/* netfpga-rl: patched by scripts/sume_riffa_patch.py for current kernels */"
V = "LINUX_VERSION_CODE >= KERNEL_VERSION"


class PatchError(Exception):
    """The driver source does not hold what a rewrite expects."""


def _sub(text: str, what: str, pattern: str, repl: str | Callable[[re.Match[str]], str],
         at_least: int = 1, flags: int = 0) -> str:
    new, n = re.subn(pattern, repl, text, flags=flags)
    if n < at_least:
        raise PatchError(f"{what}: expected at least {at_least} match(es) of {pattern!r}, found {n}")
    return new


def _ops_handler(text: str, hook: str) -> str:
    m = re.search(rf"\.{hook}\s*=\s*(\w+)\s*,", text)
    if m is None:
        raise PatchError(f"no .{hook} in the net_device_ops")
    return m.group(1)


def patch_source(text: str) -> str:
    """The patched ``sume_riffa.c`` (raises :class:`PatchError` when a rewrite finds nothing)."""
    if MARKER in text:
        raise PatchError("already patched")
    # headers
    text = _sub(text, "includes", r'(#include\s+"nf_sume\.h")',
                "#include <linux/version.h>\n#include <linux/dma-mapping.h>\n\\1")
    # PCI DMA wrappers (removed in 5.18): the dma_* calls on the PCI device's struct device
    text = _sub(text, "pci_alloc_consistent",
                r"\bpci_alloc_consistent\(\s*([^,()]+?),\s*([^,()]+?),\s*([^()]+?)\)",
                r"dma_alloc_coherent(&(\1)->dev, \2, \3, GFP_ATOMIC)")
    text = _sub(text, "pci_free_consistent", r"\bpci_free_consistent\(\s*([^,()]+?),",
                r"dma_free_coherent(&(\1)->dev,")
    text = _sub(text, "pci_set_dma_mask", r"\bpci_set_dma_mask\(\s*([^,()]+?),", r"dma_set_mask(&(\1)->dev,")
    text = _sub(text, "pci_set_consistent_dma_mask", r"\bpci_set_consistent_dma_mask\(\s*([^,()]+?),",
                r"dma_set_coherent_mask(&(\1)->dev,")
    # netif_napi_add lost its weight in 6.1 (the driver's call may sit in an #if 0)
    text = _sub(text, "netif_napi_add",
                r"^([ \t]*)netif_napi_add\(\s*([^,;]+?),\s*([^,;]+?),\s*([^,;]+?),\s*([^,;()]+?)\);",
                lambda m: (f"#if {V}(6, 1, 0)\n{m[1]}netif_napi_add({m[2]}, {m[3]}, {m[4]});\n#else\n"
                           f"{m[0].lstrip(chr(10))}\n#endif"), at_least=0, flags=re.M)
    # ndo_tx_timeout gained the queue index in 5.6
    name = _ops_handler(text, "ndo_tx_timeout")
    text = _sub(text, "ndo_tx_timeout", rf"\b({name}\(struct net_device \*\w+)\)(\s*\{{)",
                rf"\1\n#if {V}(5, 6, 0)\n    , unsigned int txqueue\n#endif\n    )\2")
    # ndo_get_stats64 returns void since 4.11
    name = _ops_handler(text, "ndo_get_stats64")
    m = re.search(rf"static struct rtnl_link_stats64 \*\s*\n?{name}\(", text)
    if m is None:
        raise PatchError(f"ndo_get_stats64: no 'static struct rtnl_link_stats64 *' definition of {name}")
    end = text.find("\n}\n", m.end())
    body = _sub(text[m.end():end], "ndo_get_stats64 return", r"^([ \t]*)return\s*\(?\s*(\w+)\s*\)?\s*;",
                rf"#if !({V}(4, 11, 0))\n\1return (\2);\n#endif", flags=re.M)
    text = (text[:m.start()] + f"#if {V}(4, 11, 0)\nstatic void\n#else\nstatic struct rtnl_link_stats64 *\n"
            f"#endif\n{name}(" + body + text[end:])
    # netdev->dev_addr is const since 5.17: eth_hw_addr_set (5.15+)
    text = _sub(text, "dev_addr (set address)",
                r"^([ \t]*)memcpy\((\w+)->dev_addr,\s*([^,]+?),\s*[^;]+\);(?!\n[ \t]*\2->dev_addr\[)",
                lambda m: (f"#if {V}(5, 15, 0)\n{m[1]}eth_hw_addr_set({m[2]}, (const u8 *)({m[3]}));\n#else\n"
                           f"{m[0]}\n#endif"), at_least=0, flags=re.M)
    text = _sub(text, "dev_addr (default address)",
                r"^([ \t]*)memcpy\((\w+)->dev_addr,\s*([^,]+?),\s*ETH_ALEN\);\n[ \t]*\2->dev_addr\[([^\]]+)\]"
                r"\s*=\s*([^;]+);",
                lambda m: (f"#if {V}(5, 15, 0)\n{m[1]}{{\n{m[1]}\tu8 nrl_addr[ETH_ALEN];\n\n"
                           f"{m[1]}\tmemcpy(nrl_addr, {m[3]}, ETH_ALEN);\n{m[1]}\tnrl_addr[{m[4]}] = {m[5]};\n"
                           f"{m[1]}\teth_hw_addr_set({m[2]}, nrl_addr);\n{m[1]}}}\n#else\n{m[0]}\n#endif"),
                at_least=0, flags=re.M)
    # SIOCDEVPRIVATE ioctls go to ndo_siocdevprivate since 5.15
    name = _ops_handler(text, "ndo_do_ioctl")
    wrapper = (f"#if {V}(5, 15, 0)\n/* netfpga-rl: since 5.15 SIOCDEVPRIVATE ioctls (rwaxi) reach only "
               f"ndo_siocdevprivate */\nstatic int\nnrl_sume_siocdevprivate(struct net_device *netdev, "
               f"struct ifreq *ifr,\n    void __user *data, int cmd)\n{{\n\n\treturn ({name}(netdev, ifr, "
               f"cmd));\n}}\n#endif\n\n")
    text = _sub(text, "net_device_ops", r"(static const struct net_device_ops\s+\w+\s*=\s*\{)",
                lambda m: wrapper + m[1])
    text = _sub(text, "ndo_do_ioctl hook", r"^([ \t]*)(\.ndo_do_ioctl\s*=\s*\w+\s*,)",
                rf"\1\2\n#if {V}(5, 15, 0)\n\1.ndo_siocdevprivate = nrl_sume_siocdevprivate,\n#endif",
                flags=re.M)
    return MARKER + "\n" + text


def patch_tree(src: Path, out: Path) -> Path:
    """Copy the driver folder ``src`` to ``out`` (which must not exist, or be empty) and patch
    its ``sume_riffa.c``; returns the patched file. Raises :class:`PatchError`."""
    c_file = src / "sume_riffa.c"
    if not c_file.is_file():
        raise PatchError(f"{src} has no sume_riffa.c (pass $DRIVER_FOLDER, "
                         "lib/sw/std/driver/sume_riffa_v1_0_0 of NetFPGA-SUME-live)")
    if out.exists() and any(out.iterdir()):
        raise PatchError(f"{out} exists and is not empty")
    if out.resolve() == src.resolve():
        raise PatchError("the output folder must differ from the driver folder")
    patched = patch_source(c_file.read_text(errors="surrogateescape"))
    out.mkdir(parents=True, exist_ok=True)
    for p in src.iterdir():  # sources and the Makefile, not the build products
        if (p.is_file() and p.suffix in ("", ".c", ".h") and not p.name.startswith(".")
                and not p.name.endswith(".mod.c")):
            shutil.copy2(p, out / p.name)
    (out / "sume_riffa.c").write_text(patched, errors="surrogateescape")
    return out / "sume_riffa.c"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("driver", type=Path, help="SUME's sume_riffa driver folder ($DRIVER_FOLDER)")
    ap.add_argument("out", type=Path, help="output folder for the patched copy (new or empty)")
    args = ap.parse_args(argv)
    try:
        path = patch_tree(args.driver, args.out)
    except PatchError as e:
        print(f"sume_riffa_patch.py: error: {e}", file=sys.stderr)
        return 1
    print(f"sume_riffa_patch.py: wrote {path}; build it with: make -C {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
