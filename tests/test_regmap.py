"""The register map artefacts are exactly what the generator writes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_regeneration_changes_nothing() -> None:
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "gen_regs.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_python_map_matches_yaml() -> None:
    sys.path.insert(0, str(REPO / "scripts"))
    import gen_regs

    from hostdrv.wire import regmap

    spec = gen_regs.load()
    assert {r["name"]: r["addr"] for r in spec["flat"]} == {n: r.addr for n, r in regmap.REGISTERS.items()}
    assert len(regmap.BY_ADDR) == len(regmap.REGISTERS)
    assert regmap.member_reg("MEMBER_IP", 3) in regmap.REGISTERS
