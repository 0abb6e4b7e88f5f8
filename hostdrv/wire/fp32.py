"""Bit-level IEEE 754 binary32 reference for the switch's fp32 adder.

The aggregation engine adds gradients with ``hw/rtl/fp32_add.v``, which is
bit-exact with numpy ``float32`` addition (round to nearest even, subnormals
kept) except that every NaN result is the canonical quiet NaN. This module is
the reference the RTL testbenches compare against.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

__all__ = ["CANONICAL_NAN", "canonical_nan", "fp32_add_bits", "fp32_add_inplace"]

CANONICAL_NAN: Final[int] = 0x7FC00000
"""Bits of the quiet NaN that every NaN-producing fp32 addition yields."""

canonical_nan: Final[int] = CANONICAL_NAN
"""Alias of :data:`CANONICAL_NAN`."""


def fp32_add_bits(a: npt.ArrayLike, b: npt.ArrayLike) -> npt.NDArray[np.uint32]:
    """Add binary32 values given as raw bit patterns, NaN results canonicalized.

    Computes numpy ``float32`` ``a + b`` on the reinterpreted bits (IEEE 754
    round to nearest even, subnormal inputs and results kept, overflow to
    infinity), then replaces every NaN result, whatever its payload or sign,
    with :data:`CANONICAL_NAN`.

    Parameters
    ----------
    a, b : array_like of uint32
        Bit patterns of the operands; broadcast against each other. Anything
        numpy converts to ``uint32`` without loss (Python ints, lists) works.

    Returns
    -------
    numpy.ndarray of uint32
        Bit patterns of the sums, in the broadcast shape of ``a`` and ``b``.
    """
    a32 = np.asarray(a, dtype=np.uint32)
    b32 = np.asarray(b, dtype=np.uint32)
    with np.errstate(over="ignore", invalid="ignore"):
        total = np.add(a32.view(np.float32), b32.view(np.float32))
    bits = np.asarray(total, dtype=np.float32).view(np.uint32)
    return np.where(np.isnan(total), np.uint32(CANONICAL_NAN), bits).astype(np.uint32)


def fp32_add_inplace(acc: npt.NDArray[np.uint32], x: npt.NDArray[np.uint32]) -> None:
    """``acc[:] = fp32_add_bits(acc, x)`` without temporaries (the soft switch's hot path).

    Parameters
    ----------
    acc : numpy.ndarray of uint32
        Accumulator bit patterns, updated in place (must be writable and contiguous).
    x : numpy.ndarray of uint32
        Addend bit patterns, same shape.
    """
    accf = acc.view(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        np.add(accf, x.view(np.float32), out=accf)
    nan = np.isnan(accf)
    if nan.any():
        acc[nan] = CANONICAL_NAN
