"""Build ``hw/rtl/nrl_counter_bank.v`` behind its AXI4-Lite testbench top and run the cocotb tests.

The two instances the register files use (the replay engine's 14 counters with
the pulses registered once, the aggregation engine's 18 taken directly) and two
with narrow halves, which wrap within the test, and two with a bank per job (JOBS = 4 and 3);
on Icarus and Verilator.
"""

from __future__ import annotations

import pytest
from toolcheck import require_simulator

from hostdrv.wire import regmap
from sim.common.runner import REPO, RTL, SIMULATORS, run_cocotb

TB = REPO / "sim" / "nrl_counter_bank" / "tb_nrl_counter_bank.v"

REPLAY = ("CNT_RX_PUSH", "CNT_RX_SAMPLE", "CNT_RX_UPDATE", "CNT_TX_PUSH_ACK", "CNT_TX_SAMPLE_RESP",
          "CNT_DROP_BAD_LENGTH", "CNT_DROP_BAD_HEADER", "CNT_DROP_BAD_JOB", "CNT_DROP_DISABLED",
          "CNT_DROP_UNKNOWN_WORKER", "CNT_DROP_SPOOFED", "CNT_DROP_BAD_COUNT", "CNT_DROP_EMPTY",
          "CNT_DROP_BAD_INDEX")
AGG = ("CNT_RX_GRADIENT", "CNT_RX_RESULT", "CNT_TX_RESULT", "CNT_TX_RESEND", "CNT_TX_UP",
       "CNT_DROP_BAD_LENGTH", "CNT_DROP_BAD_HEADER", "CNT_DROP_BAD_JOB", "CNT_DROP_DISABLED",
       "CNT_DROP_UNKNOWN_WORKER", "CNT_DROP_SPOOFED", "CNT_DROP_BAD_COUNT", "CNT_DROP_BAD_DTYPE",
       "CNT_DROP_BAD_SLOT", "CNT_DROP_STALE", "CNT_DROP_DUPLICATE", "CNT_DROP_LATE",
       "CNT_DROP_MISMATCH")


def words(names: tuple[str, ...], sim: str) -> int | str:
    """The WORDS parameter: counter i's word of the counter window in bits [5i +: 5].

    Verilator's -G reads a plain number as at most 64 bits: it gets a sized literal.
    """
    value = sum(((getattr(regmap, n) >> 2) & 31) << (5 * i) for i, n in enumerate(names))
    return f"{5 * len(names)}'h{value:x}" if sim == "verilator" else value


@pytest.mark.parametrize(("names", "register_inc", "half", "jobs"),
                         [(REPLAY, 1, 16, 1), (AGG, 0, 16, 1), (REPLAY[:5], 1, 4, 1), (AGG[:3], 0, 3, 1),
                          (AGG, 0, 16, 4), (REPLAY[:5], 1, 4, 3)],
                         ids=["replay", "agg", "narrow_reg", "narrow", "agg_jobs4", "narrow_reg_jobs3"])
@pytest.mark.parametrize("sim", SIMULATORS)
def test_nrl_counter_bank(sim: str, names: tuple[str, ...], register_inc: int, half: int, jobs: int) -> None:
    """Increments, carry, wrap and clear, per job with JOBS > 1, read through AXI4-Lite against a
    Python reference."""
    require_simulator(sim, "the nrl_counter_bank cocotb testbench")
    run_cocotb(
        sim=sim,
        toplevel="tb_nrl_counter_bank",
        sources=[RTL / "nrl_counter_bank.v", TB],
        test_module="sim.nrl_counter_bank.test_nrl_counter_bank",
        parameters={"COUNT": len(names), "WORDS": words(names, sim), "REGISTER_INC": register_inc,
                    "HALF_WIDTH": half, "JOBS": jobs},
        build_tag=f"n{len(names)}_r{register_inc}_h{half}_j{jobs}",
        # the 65536-clock crossing of the 16-bit carry: once, on the faster simulator
        extra_env={"BANK_CARRY16": "1"} if (sim, register_inc, half, jobs) == ("verilator", 0, 16, 1) else {},
    )
