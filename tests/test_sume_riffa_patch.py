"""``scripts/sume_riffa_patch.py``: SUME's host driver, patched, builds on Linux 6.1 (kbuild only).

The stand-in driver ``tests/fixtures/sume_riffa`` (written for this test: the
real driver's interfaces in the real driver's forms) fails to build against
Debian's ``linux-headers`` for 6.1 as it is, and builds once patched. With
``$SUME_FOLDER`` set, the real ``sume_riffa.c`` of that checkout is patched and
built too. Nothing is loaded: there is no board here.

The headers come from ``$NRL_KBUILD_DIR`` or ``/usr/src/linux-headers-6.1*-amd64``
(Debian's ``linux-headers-amd64`` on bookworm; ``make setup`` installs it); when
they are missing the tests skip, or fail under CI.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "sume_riffa"
sys.path.insert(0, str(REPO / "scripts"))
import sume_riffa_patch  # noqa: E402
from toolcheck import missing, require_tool  # noqa: E402


def kbuild_dir() -> Path:
    """The kbuild tree of a Linux 6.1 kernel's headers (skip or fail when there is none)."""
    env = os.environ.get("NRL_KBUILD_DIR")
    cands = [Path(env)] if env else sorted(Path("/usr/src").glob("linux-headers-6.1*-amd64"))
    for c in cands:
        if (c / "Makefile").exists():
            return c
    missing("Debian's linux-headers for Linux 6.1 (/usr/src/linux-headers-6.1*-amd64, package "
            "linux-headers-amd64 on Debian 12)", "building the patched sume_riffa driver with kbuild")


def kbuild(folder: Path, kdir: Path) -> subprocess.CompletedProcess[str]:
    require_tool("make", "kbuild")
    require_tool("gcc", "kbuild")
    return subprocess.run(["make", "-C", str(kdir), f"M={folder}", "modules"], capture_output=True,
                          text=True, timeout=300)


def test_standin_builds_only_when_patched(tmp_path: Path) -> None:
    kdir = kbuild_dir()
    plain = tmp_path / "plain"
    shutil.copytree(FIXTURE, plain)
    r = kbuild(plain, kdir)
    assert r.returncode != 0 and "pci_alloc_consistent" in r.stderr, r.stdout + r.stderr
    out = tmp_path / "patched"
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "sume_riffa_patch.py"), str(FIXTURE), str(out)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    text = (out / "sume_riffa.c").read_text()
    for gone in ("pci_alloc_consistent(", "pci_free_consistent(", "pci_set_dma_mask(",
                 "pci_set_consistent_dma_mask("):
        assert gone not in text, gone
    assert ".ndo_siocdevprivate = nrl_sume_siocdevprivate," in text
    assert "netif_napi_add(netdev, &port->napi, sume_poll);" in text
    r = kbuild(out, kdir)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (out / "sume_riffa.ko").exists()
    assert " error" not in r.stderr and "warning:" not in r.stderr, r.stderr


def test_real_driver_if_present(tmp_path: Path) -> None:
    """The real driver of $SUME_FOLDER (optional input: skipped without a checkout)."""
    sume = os.environ.get("SUME_FOLDER")
    src = Path(sume or "/nonexistent") / "lib" / "sw" / "std" / "driver" / "sume_riffa_v1_0_0"
    if not (src / "sume_riffa.c").exists():
        pytest.skip("no NetFPGA-SUME-live checkout in $SUME_FOLDER")
    kdir = kbuild_dir()
    sume_riffa_patch.patch_tree(src, tmp_path / "drv")
    r = kbuild(tmp_path / "drv", kdir)
    assert r.returncode == 0, r.stdout + r.stderr


def test_patch_refuses_what_it_does_not_know(tmp_path: Path) -> None:
    text = (FIXTURE / "sume_riffa.c").read_text()
    once = sume_riffa_patch.patch_source(text)
    with pytest.raises(sume_riffa_patch.PatchError, match="already patched"):
        sume_riffa_patch.patch_source(once)
    with pytest.raises(sume_riffa_patch.PatchError, match="pci_alloc_consistent"):
        sume_riffa_patch.patch_source(text.replace("pci_alloc_consistent(", "my_alloc("))
    with pytest.raises(sume_riffa_patch.PatchError, match="no .ndo_tx_timeout"):
        sume_riffa_patch.patch_source(text.replace(".ndo_tx_timeout", ".ndo_other"))
    with pytest.raises(sume_riffa_patch.PatchError, match="has no sume_riffa.c"):
        sume_riffa_patch.patch_tree(tmp_path, tmp_path / "out")
    assert sume_riffa_patch.main([str(tmp_path), str(tmp_path / "out")]) == 1
