"""The register write rules at work: what a switch refuses, what it reads back.

The rules themselves are data, generated from ``hw/regs.yaml`` (``legal:`` and
``self_clear:``) into :mod:`hostdrv.wire.regmap` as ``WRITE_RULES`` and
``SELF_CLEARING``; the native engine judges by the same table (``NRL_WRITE_RULES``
in ``nrl_protocol.h``). This module applies them: :func:`refusal` (the reference
switch's ``write`` and the tests), :func:`read_back` and :class:`RegisterFile`
(what the board's register transports expect to read after a write).
"""

from __future__ import annotations

__all__ = ["FIXED_SHARE", "RegisterFile", "read_back", "refusal"]

from collections.abc import Callable

from hostdrv.wire.regmap import FIXED_SHARE, REGISTERS, SELF_CLEARING, WRITE_RULES, Register, lookup


def _bit_list(mask: int) -> str:
    bits = [str(i) for i in range(32) if mask >> i & 1]
    return ", ".join(bits[:-1]) + " and " + bits[-1] if len(bits) > 1 else bits[0]


def refusal(reg: str | int | Register, value: int, current: Callable[[str], int]) -> str:
    """Why a switch refuses to write ``value`` to rw register ``reg``; ``""`` when it takes it.

    Parameters
    ----------
    reg:
        The register (name, address or :class:`Register`).
    value:
        The value written (an ``int``).
    current:
        The value another register holds now (``AGG_THRESHOLD`` is bounded by
        ``AGG_MEMBERS``, ``AGG_SLOTS`` by ``AGG_MAX_SLOTS``, ...).

    Raises
    ------
    UnknownRegisterError
        No such register.
    """
    r = reg if isinstance(reg, Register) else lookup(reg)
    if not 0 <= value < 1 << r.width:
        return f"must be an unsigned {r.width}-bit value"
    rule = WRITE_RULES.get(r.name)
    if rule is None:
        return ""
    if rule.bits is not None and value & ~rule.bits:
        return f"only bits {_bit_list(rule.bits)} are defined"
    if rule.max is not None and value > rule.max:
        return f"at most {rule.max}"
    m = rule.multiple
    if rule.high is not None:
        high = current(rule.high)
        if not rule.low <= value <= high or (m and value % m):
            where = f"{rule.low} .. {rule.high} ({high})"
            return f"must be a multiple of {m} in {where}" if m else f"must be {where}"
    elif m and value % m:
        k = m.bit_length() - 1
        return f"must be a multiple of 2^{k} ({m:#x})" if m == 1 << k else f"must be a multiple of {m}"
    if rule.at_least is not None and value < current(rule.at_least):
        low = current(rule.at_least)
        return f"below {rule.at_least} ({low}): lower {rule.at_least} first"
    if rule.one_hot and value & (value - 1):
        return "must be 0 or one-hot (one SUME port)"
    if rule.bits_of is not None and value >> current(rule.bits_of):
        n = current(rule.bits_of)
        return f"only bits 0 .. {n - 1} ({rule.bits_of} = {n})"
    return ""


def read_back(reg: str | int | Register, value: int) -> int:
    """What rw register ``reg`` reads after it took ``value``: the value without its
    self-clearing bits (``CTRL`` bit 31, ``RPL_RESET``)."""
    r = reg if isinstance(reg, Register) else lookup(reg)
    return value & ~SELF_CLEARING.get(r.name, 0)


class RegisterFile:
    """The values a switch's registers hold after the writes made through this object,
    by the write rules alone (no frames, no counters): what a register transport expects
    to read back after a write.

    Starts from the reset values (the build parameters at their defaults). ``read`` of a
    register that is neither rw nor a parameter gives its reset value.
    """

    def __init__(self) -> None:
        self._values = {r.name: r.reset for r in REGISTERS.values()
                        if r.access == "rw" or r.param}

    def read(self, reg: str | int) -> int:
        """The value ``reg`` holds."""
        r = lookup(reg)
        return self._values.get(r.name, r.reset)

    def write(self, reg: str | int, value: int) -> int | None:
        """Write ``value``: what ``reg`` reads afterwards, or ``None`` when the switch
        refuses the write (read-only register, or a value its rule refuses: the register
        keeps its old value)."""
        r = lookup(reg)
        if r.access != "rw" or refusal(r, value, self.read):
            return None
        if r.name in FIXED_SHARE and self.read("JOBS") == 1:
            return None
        self._values[r.name] = read_back(r, value)
        return self._values[r.name]
