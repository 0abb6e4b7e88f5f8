"""Replay records and priorities: layout, Q16.16 conversion and argument checks.

A record is ``obs``, ``action``, ``reward`` (float32), ``next_obs``, ``done``
(uint8), little-endian, padded to ``RPL_RECORD_BYTES`` (:func:`record_dtype`);
priorities travel as Q16.16 ``uint32`` (:func:`to_fixed`, ``docs/protocol.md``
section 3). Shared by :class:`~hostdrv.client.replay.ReplayClient` and the
host replay stores of :mod:`rl.replay`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hostdrv.wire.consts import MAX_PUSH_RECORDS

_M32 = 0xFFFFFFFF

FIXED_HINT = " (Q16.16 priorities: convert float priorities with to_fixed)"
"""Hint appended to the error for a Q16.16 priority that is not a ``uint32``."""


def _bad_value(values: np.ndarray, bad: np.ndarray, name: str, rule: str) -> ValueError:
    """A ``ValueError`` naming the first bad position of ``values`` and its value."""
    flat = int(np.flatnonzero(bad)[0])
    pos = np.unravel_index(flat, values.shape) if values.ndim else ()
    where = name + (f"[{', '.join(str(int(i)) for i in pos)}]" if pos else "")
    v = values.reshape(-1)[flat]
    value = v.item() if isinstance(v, np.generic) else v
    more = int(bad.sum()) - 1
    return ValueError(f"bad {where}={value!r}: {rule}"
                      + (f" ({more} more bad value{'s' if more > 1 else ''})" if more else ""))


def check_priorities(priority: Any, name: str = "priority") -> np.ndarray:
    """Float priorities as ``float64`` (same shape), each checked to be finite and >= 0.

    Raises
    ------
    ValueError
        When a priority is NaN, negative or infinite, or not a number; the
        message names the first such position (``name[i]``) and its value.
    """
    try:
        p = np.asarray(priority, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ValueError(f"bad {name}={priority!r}: priorities must be numbers ({e})") from None
    bad = ~np.isfinite(p) | (p < 0)
    if bad.any():
        raise _bad_value(p, bad, name, "a priority must be finite and >= 0 "
                                        "(p = (|delta| + eps) ** alpha)")
    return p


def check_u32(values: Any, name: str, hint: str = "") -> np.ndarray:
    """Integers as little-endian ``uint32`` (same shape), each checked to be in [0, 2**32 − 1].

    Floats are accepted when they hold an integer value. Nothing wraps or
    truncates silently.

    Raises
    ------
    ValueError
        When a value is not an integer in range (NaN, infinite, negative,
        fractional or >= 2**32); the message names the first such position
        (``name[i]``) and its value, then ``hint``.
    """
    a = np.asarray(values)
    with np.errstate(invalid="ignore"):
        if a.dtype.kind in "biu":
            bad = (a < 0) | (a > _M32)
        elif a.dtype.kind == "f":
            bad = ~np.isfinite(a) | (a < 0) | (a > _M32) | (a != np.rint(a))
        else:  # object arrays (Python ints past 64 bits, mixed types), strings, ...
            bad = np.array([not (isinstance(v, int | np.integer) and 0 <= v <= _M32)
                            for v in a.reshape(-1)], dtype=bool).reshape(a.shape)
    if bad.any():
        raise _bad_value(a, bad, name, "must be an integer in [0, 2**32 - 1]" + hint)
    return a.astype("<u4")


def to_fixed(priority: Any, name: str = "priority") -> np.ndarray:
    """Float priorities as Q16.16 ``uint32`` (``docs/protocol.md`` section 3).

    ``round(p * 65536)`` clamped to [1, 2**32 − 1], the range of a live
    record: 0 and priorities below 2**-17 become 1, priorities of 65536 and
    more become 2**32 − 1.

    Raises
    ------
    ValueError
        When a priority is NaN, negative or infinite (see :func:`check_priorities`;
        ``name`` is the argument named in the message).
    """
    p = check_priorities(priority, name)
    return np.clip(np.rint(np.minimum(p, 65536.0) * 65536.0), 1, _M32).astype(np.uint32)


def from_fixed(value: Any) -> np.ndarray:
    """Q16.16 ``uint32`` priorities as ``float64``."""
    return np.asarray(value, dtype=np.float64) / 65536.0


@dataclass
class Transitions:
    """A batch of transitions (arrays with a leading batch dimension)."""

    obs: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    next_obs: np.ndarray
    dones: np.ndarray


def importance_weights(priorities_fixed: Any, totals: Any, sizes: Any,
                       beta: float) -> np.ndarray:
    """Prioritized replay's importance weights, normalised by the batch maximum.

    ``w_i = (size_i * p_i / total_i) ** -beta / max_j w_j`` with ``p_i`` the Q16.16
    priority of sample i and ``total_i`` the sum tree total and ``size_i`` the valid
    records when it was drawn (scalars or one per sample), as ``float32``. The
    Q16.16 values are used as they are: the scale cancels in ``p_i / total_i``.
    """
    base = (np.asarray(sizes, np.float64) * np.asarray(priorities_fixed, np.float64)
            / np.maximum(np.asarray(totals, np.float64), 1))
    if base.size and base.min() > 0:
        w = base ** (-beta)
    else:  # a priority 0 weighs infinitely (never drawn by priority; only uniformly)
        with np.errstate(divide="ignore"):
            w = base ** (-beta)
    return (w / w.max()).astype(np.float32)


@dataclass
class SampleBatch(Transitions):
    """A sampled batch with what prioritized replay needs: what
    :meth:`hostdrv.ReplayClient.sample` and every :mod:`rl.replay` strategy return
    (``rl.replay.ReplayBatch`` is this class).

    Attributes
    ----------
    indices:
        Replay index of each sample (``int64``).
    priorities_fixed:
        Priority of each sample when it was drawn, as stored: Q16.16 ``uint32``
        (:attr:`priorities` is its float view).
    totals:
        Sum tree total (prioritized) or valid records (uniform) per sample.
    size:
        Valid records when the last sample was drawn.
    weights:
        Importance weights ``(size * p / total) ** -beta`` divided by their
        maximum (all ones for a uniform sample), ``float32``.
    records:
        The raw records, ``uint8`` of shape (B, R).
    """

    indices: np.ndarray
    priorities_fixed: np.ndarray
    totals: np.ndarray
    size: int
    weights: np.ndarray
    records: np.ndarray

    @property
    def priorities(self) -> np.ndarray:
        """Priority of each sample as ``float64`` (:func:`from_fixed` of
        :attr:`priorities_fixed`)."""
        return from_fixed(self.priorities_fixed)

    @property
    def total(self) -> int:
        """Sum tree total of the last sample."""
        return int(self.totals[-1]) if len(self.totals) else 0


@dataclass
class StackedSample:
    """A batch of stacked samples (``ReplayClient.sample(..., stack=k)``, k >= 2): sample i is
    the drawn record and its k − 1 predecessors in its actor's chain, oldest first
    (``docs/protocol.md`` section 5, Stacked samples).

    Attributes
    ----------
    records:
        ``uint8`` of shape (B, k, R): position k − 1 is the sampled record; a position whose
        chain broke is all zeros.
    valid:
        ``bool`` (B, k): whether each position holds its chain record (False: the actor had no
        earlier record, or it was overwritten; every older position is False too).
    stack_indices:
        ``int64`` (B, k): each position's replay index, −1 where not valid.
    indices:
        ``int64`` (B,): the sampled records' indices (``stack_indices[:, -1]``), what
        ``update_priorities`` takes.
    priorities_fixed, totals, size, weights:
        As :class:`SampleBatch`, per sample.
    """

    records: np.ndarray
    valid: np.ndarray
    stack_indices: np.ndarray
    indices: np.ndarray
    priorities_fixed: np.ndarray
    totals: np.ndarray
    size: int
    weights: np.ndarray

    @property
    def stack(self) -> int:
        """k, records per sample."""
        return int(self.records.shape[1])

    @property
    def priorities(self) -> np.ndarray:
        """Priority of each sample as ``float64``."""
        return from_fixed(self.priorities_fixed)


IPV4_OVERHEAD = 114
"""IPv4 bytes of a replay frame beyond its records: IPv4 20 + UDP 8 + header 22 + the 64-byte
priority block or descriptor (a SAMPLE_RESP is an IPv4 packet of 114 + R bytes)."""
MAX_IPV4_PACKET = 65521
"""Largest IPv4 packet of a protocol frame: the switch's 65535-byte frame limit less 14."""


def push_count(record_bytes: int, mtu: int) -> int:
    """Records per PUSH on a path of IPv4 MTU ``mtu``: ``min(16, (MTU − 114) // R)`` (0 when not
    even one record fits: see :func:`check_record_mtu`)."""
    return max(0, min(MAX_PUSH_RECORDS, (min(mtu, MAX_IPV4_PACKET) - IPV4_OVERHEAD)
                      // record_bytes))


def check_record_mtu(record_bytes: int, mtu: int, where: str = "the path") -> None:
    """Raise ``ValueError`` when one record of ``record_bytes`` does not fit a frame on a path
    of IPv4 MTU ``mtu`` (a PUSH of one record and a SAMPLE_RESP are 114 + R bytes of IPv4),
    naming the record size, the MTU and the fix."""
    need = IPV4_OVERHEAD + record_bytes
    if need > mtu:
        fit = (mtu - IPV4_OVERHEAD) // 64 * 64
        raise ValueError(
            f"bad record size={record_bytes}: a replay frame of one {record_bytes}-byte record is "
            f"an IPv4 packet of {need} bytes, but {where} has MTU {mtu}: nothing was sent. Fix: "
            f"jumbo frames (an MTU of at least {need}, e.g. `ip link set dev IFACE mtu 9000` on "
            "every host and the switch's 10G MAC max frame length >= 9014), or pass mtu= if "
            "the path's MTU is not the interface's, or records of at most "
            f"{max(fit, 0)} bytes (RPL_RECORD_BYTES <= MTU - {IPV4_OVERHEAD})")


def record_dtype(obs_shape: tuple[int, ...], obs_dtype: Any, action_shape: tuple[int, ...],
                 action_dtype: Any, record_bytes: int) -> np.dtype:
    """Structured little-endian record layout padded to ``record_bytes``.

    Raises
    ------
    ValueError
        When the fields need more than ``record_bytes``.
    """
    fields = [("obs", np.dtype(obs_dtype), tuple(obs_shape)),
              ("action", np.dtype(action_dtype), tuple(action_shape)),
              ("reward", np.dtype(np.float32), ()),
              ("next_obs", np.dtype(obs_dtype), tuple(obs_shape)),
              ("done", np.dtype(np.uint8), ())]
    names, formats, offsets = [], [], []
    off = 0
    for name, dt, shape in fields:
        le = dt.newbyteorder("<")
        names.append(name)
        formats.append((le, shape) if shape else le)
        offsets.append(off)
        off += le.itemsize * int(np.prod(shape, dtype=np.int64))
    if off > record_bytes:
        raise ValueError(f"bad record size={off}: obs {obs_shape} {np.dtype(obs_dtype)}, action "
                         f"{action_shape} {np.dtype(action_dtype)}, reward, next_obs and done "
                         f"need {off} bytes but RPL_RECORD_BYTES is {record_bytes}")
    return np.dtype({"names": names, "formats": formats, "offsets": offsets,
                     "itemsize": record_bytes})


def pack_records(dtype: np.dtype, obs: Any, action: Any, reward: Any, next_obs: Any,
                 done: Any) -> np.ndarray:
    """Transitions as structured records of ``dtype`` (:func:`record_dtype`), shape (n,).

    A single transition (``obs`` of the record's obs shape) gives n = 1.

    Raises
    ------
    ValueError
        When a field's shape does not fit n transitions (the message names the field).
    """
    obs_shape = dtype["obs"].shape
    o = np.asarray(obs)
    n = 1 if o.shape == obs_shape else len(o)
    rec = np.zeros(n, dtype=dtype)
    for name, value in (("obs", obs), ("action", action), ("reward", reward),
                        ("next_obs", next_obs), ("done", done)):
        v = np.asarray(value)
        want = (n, *dtype[name].shape)
        try:
            rec[name] = v.reshape(want)
        except ValueError:
            raise ValueError(f"bad {name} shape={v.shape}: expected {want[1:]} per "
                             f"transition for {n} transitions") from None
    return rec


def records_from_bytes(records: Any, dtype: np.dtype) -> Transitions:
    """Parse records (bytes, ``uint8`` array or structured array) into :class:`Transitions`."""
    if isinstance(records, np.ndarray) and records.dtype == dtype:
        rec = records
    else:
        raw = np.ascontiguousarray(np.frombuffer(records, dtype=np.uint8)
                                   if isinstance(records, bytes | bytearray | memoryview)
                                   else np.asarray(records, dtype=np.uint8))
        rec = raw.reshape(-1).view(dtype)
    return Transitions(rec["obs"].copy(), rec["action"].copy(), rec["reward"].copy(),
                       rec["next_obs"].copy(), rec["done"].copy())


__all__ = [
    "FIXED_HINT",
    "IPV4_OVERHEAD",
    "MAX_IPV4_PACKET",
    "SampleBatch",
    "StackedSample",
    "Transitions",
    "check_priorities",
    "check_record_mtu",
    "check_u32",
    "from_fixed",
    "importance_weights",
    "pack_records",
    "push_count",
    "record_dtype",
    "records_from_bytes",
    "to_fixed",
]
