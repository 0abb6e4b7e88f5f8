"""cocotb testbench for ``hw/rtl/nrl_l2_learn.v`` against :class:`hostdrv.switch.reference.L2Table`.

Requests (one per frame, as ``nrl_classifier`` makes them: destination and source MAC
as they lie on the bus, one-hot source port, whether the frame holds an Ethernet
header) come in bursts of one per clock and with random gaps. The MACs are drawn from
a pool larger than the table (so entries are replaced), with broadcast and multicast
destinations, multicast sources, short frames and stations that move between ports;
the aging period is reloaded with small values between requests. Every answer
(``res_ports``, ``res_drop``) must be the model's, in order, the clock after the
request; the test also checks that every case happened (flood, forward, filter,
replacement, a sweep that removed an entry).

Environment: ``NRL_L2_REQS`` (default 4000), ``NRL_L2_SEED``.
"""

from __future__ import annotations

import os
import random
from collections import deque

import cocotb
from cocotb.clock import Clock
from cocotb.handle import HierarchyObject
from cocotb.triggers import ClockCycles, FallingEdge

from hostdrv.switch.reference import L2Table
from hostdrv.wire import consts as C
from hostdrv.wire import regmap

CLK_PERIOD_NS = 4
AGE_RESET = regmap.REGISTERS["L2_AGE_FRAMES"].reset
BROADCAST = b"\xff" * 6


def _mac(rng: random.Random, group: bool = False) -> bytes:
    first = (rng.getrandbits(8) & 0xFE) | int(group)
    return bytes([first]) + rng.randbytes(5)


def _le(b: bytes) -> int:
    """A MAC as it lies on the bus: byte 0 in bits 7:0."""
    return int.from_bytes(b, "little")


@cocotb.test()
async def test_against_model(dut: HierarchyObject) -> None:
    """Random requests and aging reloads: every answer as L2Table gives it."""
    rng = random.Random(int(os.environ.get("NRL_L2_SEED", str(cocotb.RANDOM_SEED))))
    count = int(os.environ.get("NRL_L2_REQS", "4000"))
    entries = int(dut.ENTRIES.value)
    table = L2Table(entries, AGE_RESET)
    pool = [_mac(rng) for _ in range(entries + entries // 2 + 2)]
    home = {m: 1 << rng.randrange(8) for m in pool}  # where each station usually is

    dut.rst.setimmediatevalue(1)
    dut.req_valid.setimmediatevalue(0)
    dut.age_load.setimmediatevalue(0)
    dut.age_frames.setimmediatevalue(AGE_RESET)
    cocotb.start_soon(Clock(dut.clk, CLK_PERIOD_NS, unit="ns").start())
    await ClockCycles(dut.clk, 4)
    dut.rst.value = 0
    await ClockCycles(dut.clk, 2)

    want: deque[tuple[int, int]] = deque()
    seen = {"flood": 0, "forward": 0, "filter": 0, "replace": 0, "aged": 0, "moved": 0}
    sent = 0
    prev_req = False
    busy = 0.9
    while sent < count or want:
        await FallingEdge(dut.clk)
        if int(dut.res_valid.value):
            assert want, "an answer with no request"
            ports, drop = want.popleft()
            got = (int(dut.res_ports.value), int(dut.res_drop.value))
            assert got == (ports, drop), f"request {sent - len(want) - 1}: {got} != {(ports, drop)}"
        dut.age_load.value = 0
        dut.req_valid.value = 0
        if rng.random() < 0.02:
            busy = rng.choice((1.0, 0.9, 0.5, 0.1))
        if not prev_req and rng.random() < 0.03:
            # a write of L2_AGE_FRAMES, between frames (the switch's registers are idle then)
            age = rng.choice((0, 1, 2, 3, 5, 8, 13, 40, 200))
            dut.age_frames.value = age
            dut.age_load.value = 1
            table.set_age(age)
            prev_req = False
            continue
        prev_req = False
        if sent >= count or rng.random() > busy:
            continue
        src = rng.choice(pool)
        port = home[src]
        if rng.random() < 0.05:  # the station moved
            port = home[src] = 1 << rng.randrange(8)
            seen["moved"] += 1
        r = rng.random()
        dst = BROADCAST if r < 0.08 else _mac(rng, True) if r < 0.12 else (
            _mac(rng) if r < 0.18 else rng.choice(pool))
        if rng.random() < 0.03:
            src = _mac(rng, True)  # a multicast source teaches nothing
        n = rng.choice((C.ETH_LEN - 1, 6, 1)) if rng.random() < 0.04 else rng.randrange(14, 1500)
        frame = (dst + src + b"\x88\xb5")[:n]
        ports = table.egress(frame, port)
        before = table.entries()
        table.learn(frame, port)
        learned = table.entries()
        table.tick()
        after = table.entries()
        if ports == 0:
            seen["filter"] += 1
        elif len(frame) >= C.ETH_LEN and not dst[0] & 1 and dst in before:
            seen["forward"] += 1
        else:
            seen["flood"] += 1
        seen["replace"] += len(set(before) - set(learned))
        seen["aged"] += len(set(learned) - set(after))
        want.append((ports, int(ports == 0)))
        dut.req_valid.value = 1
        dut.req_dst.value = _le(frame[0:6].ljust(6, b"\0"))
        dut.req_src.value = _le(frame[6:12].ljust(6, b"\0"))
        dut.req_port.value = port
        dut.req_eth.value = int(len(frame) >= C.ETH_LEN)
        sent += 1
        prev_req = True
    dut._log.info("requests %d, entries %d: %s", sent, entries, seen)
    for what, k in seen.items():
        assert k > 0, f"no {what} case in {sent} requests"
