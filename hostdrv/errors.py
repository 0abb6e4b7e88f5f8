"""The base of every exception the package raises: :class:`NetrlError`.

A neutral leaf (it imports nothing from ``hostdrv``), so every room may use it:
the wire format, the switches and the clients. Each exception keeps the builtin
base a caller may already catch (``ValueError``, ``TimeoutError``, ``OSError``,
``RuntimeError``, ``ImportError``, ``TypeError``), so ``except NetrlError``
catches anything this package raised on purpose and ``except ValueError`` keeps
catching what it caught before. The whole tree is in ``docs/architecture.md``
(Errors).

The register errors live here too, because the register map
(:mod:`hostdrv.wire.regmap`) raises :class:`UnknownRegisterError` and the
clients raise and extend :class:`RegisterError`.
"""

from __future__ import annotations

from enum import IntEnum


class NetrlError(Exception):
    """Something the netfpga-rl host package raised on purpose (its errors all derive from this)."""


class RegisterError(NetrlError, ValueError):
    """A register access refused: on the host side (an unknown register, a value or
    argument that cannot be sent; ``status`` is ``None``) or by the switch (``status``
    says why). ``RegisterAccessError`` (:mod:`hostdrv.client.transport`) is another
    name for this class.

    Attributes
    ----------
    field:
        Register name (or its address in hex when it has no name), or the
        configuration argument that was wrong.
    value:
        The offending value (``None`` for a read).
    text:
        Why it was refused.
    status:
        The control status the switch answered
        (:class:`hostdrv.wire.control.ControlStatus`); ``None`` when the host
        refused the access before sending it.
    """

    def __init__(self, field: str, value: object, text: str,
                 status: IntEnum | None = None) -> None:
        self.field = field
        self.value = value
        self.text = text
        self.status = status
        if status is None:
            msg = f"bad {field}={value!r}: {text}"
        else:
            what = f"write {field}={value!r}" if value is not None else f"read {field}"
            msg = f"switch refused {what}: {status.name}: {text}{self.hint}"
        super().__init__(msg)

    hint = ""
    """Appended to the message of a refusal by the switch (what to do about it)."""


class UnknownRegisterError(RegisterError):
    """No register of that name or at that address in the register map
    (:func:`hostdrv.wire.regmap.lookup`, ``docs/registers.md``)."""

    def __init__(self, reg: object) -> None:
        if isinstance(reg, str):
            why = "no register of that name in the register map (docs/registers.md)"
        elif isinstance(reg, int) and not isinstance(reg, bool):
            why = f"no register at address 0x{reg:03X} (docs/registers.md)"
        else:
            why = "a register is given by name or byte address"
        super().__init__("register", reg, why)


__all__ = ["NetrlError", "RegisterError", "UnknownRegisterError"]
