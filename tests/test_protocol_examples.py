"""The worked hex examples of docs/protocol.md decode to exactly what the doc says."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path

import numpy as np
import pytest

from hostdrv.wire import protocol as p

DOC = Path(__file__).resolve().parents[1] / "docs" / "protocol.md"
EXAMPLE = re.compile(r"```hex\n(?P<hex>.*?)```\s*\ndecodes: `(?P<fields>[^`]*)`", re.S)


def examples() -> list[tuple[bytes, dict[str, str]]]:
    out = []
    for m in EXAMPLE.finditer(DOC.read_text()):
        raw = bytearray()
        for line in m["hex"].strip().splitlines():
            off, _, rest = line.partition("  ")
            assert int(off, 16) == len(raw), f"offset column {off} out of step"
            raw += bytes.fromhex(rest)
        fields = dict(kv.split("=", 1) for kv in m["fields"].split())
        out.append((bytes(raw), fields))
    return out


def test_doc_has_examples() -> None:
    ops = {f["opcode"] for _, f in examples()}
    assert {"GRADIENT", "SAMPLE_REQ", "UPDATE"} <= ops


@pytest.mark.parametrize("index", range(3))
def test_example_decodes_as_documented(index: int) -> None:
    raw, want = examples()[index]
    frame = p.parse_frame(raw, int(want["udp_dst"]))
    msg = frame.message
    assert len(raw) == int(want["length"])
    assert str(ipaddress.IPv4Address(frame.ip_src)) == want["ip_src"]
    assert str(ipaddress.IPv4Address(frame.ip_dst)) == want["ip_dst"]
    assert frame.udp_src == int(want["udp_src"])
    assert msg.opcode.name == want["opcode"]
    for name in ("flags", "job", "worker", "slot", "seq", "count", "aux"):
        assert getattr(msg, name) == int(want[name]), name
    assert msg.total == int(want.get("total", 0))  # reserved (0) unless the example names it
    # the checksum in the example is the one the codec computes
    assert p.ip_checksum(raw[14:24] + b"\0\0" + raw[26:34]) == int.from_bytes(raw[24:26], "big")
    if "elements" in want:
        lo, hi, step = (float(x) for x in want["elements"].split(":"))
        np.testing.assert_array_equal(msg.elements(), np.arange(lo, hi + step, step, dtype=np.float32))
    if "indices" in want:
        idx, pr = msg.update_pairs()
        assert idx.tolist() == [int(x) for x in want["indices"].split(",")]
        assert pr.tolist() == [int(x) for x in want["priorities"].split(",")]
    # re-encoding the decoded frame reproduces the bytes
    assert p.build_frame(frame) == raw
