"""One source for every protocol constant (hw/protocol.yaml and hw/regs.yaml).

The generated files are checked by ``tests/test_regmap.py`` (regeneration changes
nothing); this test fails when a value that has a generated name is typed by hand in a
source file: the Python driver and RL code, the RTL, the board wrapper and the scripts.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
GENERATED = {
    REPO / "hostdrv" / "wire" / "consts.py",
    REPO / "hostdrv" / "wire" / "regmap.py",
    REPO / "hw" / "rtl" / "nrl_protocol.vh",
    REPO / "hw" / "rtl" / "nrl_regs.vh",
    REPO / "hostdrv" / "wire" / "nrl_protocol.h",
}
PY_DIRS = ("hostdrv", "rl", "scripts")
V_DIRS = ("hw/rtl", "hw/boards/sume")


def sources(dirs: tuple[str, ...], pattern: str) -> list[Path]:
    out = []
    for d in dirs:
        out += [p for p in sorted((REPO / d).rglob(pattern)) if p not in GENERATED]
    assert out, dirs
    return out


def constants() -> dict[str, int]:
    groups = yaml.safe_load((REPO / "hw" / "protocol.yaml").read_text())["groups"]
    return {c["name"]: c["value"] for g in groups for c in g["constants"]}


def strip_py(text: str) -> str:
    """Code without comments and docstrings (a value named in prose is fine)."""
    text = re.sub(r'"""(?:.|\n)*?"""', '""', text)
    return re.sub(r"#.*", "", text)


def strip_v(text: str) -> str:
    text = re.sub(r"/\*(?:.|\n)*?\*/", "", text)
    return re.sub(r"//.*", "", text)


def test_no_python_module_redefines_a_constant() -> None:
    """``NAME = <literal>`` for a generated NAME, anywhere but the generated module."""
    names = "|".join(sorted(constants(), key=len, reverse=True))
    assign = re.compile(rf"^\s*_?(?:{names})\s*(?::\s*\w+\s*)?=\s*(?:0x[0-9a-fA-F]+|\d+|1\s*<<)",
                        re.MULTILINE)
    bad = []
    for p in sources(PY_DIRS, "*.py"):
        for m in assign.finditer(strip_py(p.read_text())):
            bad.append(f"{p.relative_to(REPO)}: {m.group(0).strip()}")
    assert not bad, "typed by hand instead of taken from hostdrv.wire.consts:\n" + "\n".join(bad)


@pytest.mark.parametrize(("what", "value"), [("RPL_SEED reset", 0x2545F491),
                                             ("MAGIC", 0x4E524C31)])
def test_register_values_not_retyped(what: str, value: int) -> None:
    """Reset values that mean something (the PRNG seed, the identity) come from the map."""
    pat = re.compile(rf"(?:0x|32'h|'h)0*{value:x}\b", re.IGNORECASE)
    bad = [str(p.relative_to(REPO)) for p in sources(PY_DIRS, "*.py")
           if pat.search(strip_py(p.read_text()))]
    bad += [str(p.relative_to(REPO)) for p in sources(V_DIRS, "*.v")
            if pat.search(strip_v(p.read_text()))]
    assert not bad, f"{what} {value:#x} typed by hand in {bad}"


def test_rtl_names_opcodes_flags_and_ports() -> None:
    """The RTL compares opcodes, builds flags and floods MAC ports by generated name
    (NRL_OP_*, NRL_FLAG_*, NRL_MAC_PORTS from nrl_protocol.vh), never by number."""
    rules = [
        (re.compile(r"\b\w*op\w*\s*(?:==|!=|>=|<=|<|>)\s*8'[dh]0*[1-9]\b"), "opcode literal"),
        (re.compile(r"localparam\s*(?:\[[^]]*\])?\s*(?:OP_|FLAG_)\w*\s*="), "local OP_/FLAG_"),
        (re.compile(r"8'h55\b"), "MAC port set"),
        (re.compile(r"\[\s*43\s*\*\s*8\s*\+:\s*8\s*\]\s*=[^;]*8'[dh]\d"), "opcode literal in a header"),
    ]
    bad = []
    for p in sources(V_DIRS, "*.v"):
        text = strip_v(p.read_text())
        for pat, why in rules:
            for m in pat.finditer(text):
                bad.append(f"{p.relative_to(REPO)}: {why}: {m.group(0)}")
    assert not bad, "\n".join(bad)
