"""Exact int32 sums on the fp32 switch: the lanes the ``netrl`` torch backend sends.

Each int32 element ``x`` is sent as two fp32 lanes, ``x = hi * 2**16 + lo`` with ``hi``
(signed) in [-2**15, 2**15) and ``lo`` in [0, 2**16): any sum of up to 256 such lanes
is an integer below 2**24, which fp32 adds exactly in any order, so the switch's
fp32 adders give the exact 64-bit total whatever the arrival order. numpy only.
"""

from __future__ import annotations

import numpy as np

_HALF = 1 << 16


def split_int32(x: np.ndarray) -> np.ndarray:
    """fp32 lanes ``[hi..., lo...]`` of int32 ``x``: ``x = hi * 2**16 + lo`` with
    ``hi`` in [-2**15, 2**15) and ``lo`` in [0, 2**16), both exact in fp32."""
    flat = x.reshape(-1)
    out = np.empty(2 * flat.size, dtype=np.float32)
    out[:flat.size] = flat >> 16
    out[flat.size:] = flat & (_HALF - 1)
    return out


def join_int32(lanes: np.ndarray) -> np.ndarray:
    """The exact int64 totals from the summed lanes of :func:`split_int32`."""
    e = lanes.size // 2
    hi = lanes[:e].astype(np.int64)
    lo = lanes[e:].astype(np.int64)
    return hi * _HALF + lo


def wrap_int32(total: np.ndarray) -> np.ndarray:
    """``total`` modulo 2**32 as int32 (two's-complement wrap-around)."""
    return ((total + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)


def div_toward_zero(total: np.ndarray, n: int) -> np.ndarray:
    """``total / n`` rounded toward zero (C, and NCCL's integer ``AVG``)."""
    q = np.abs(total) // n
    return np.where(total < 0, -q, q)


__all__ = ["div_toward_zero", "join_int32", "split_int32", "wrap_int32"]
