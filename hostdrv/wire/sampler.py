"""Replay sampler arithmetic of ``docs/protocol.md`` section 5, in one place.

The switch model (:class:`hostdrv.switch.reference.SwitchModel`) and the host replay
stores (:class:`rl.replay.PrioritizedStore`, behind the local and server
replay strategies) draw the same records for the same seed because they share
this module:

* :func:`xorshift32` / :class:`XorShift32`: the generator, one draw per
  sample in batch order (state 0 is replaced by :data:`DEFAULT_SEED`);
* :class:`SumTree`: 64-bit sums of Q16.16 priorities over C leaves (C a
  power of two; node 1 is the root, leaf i is node C + i), O(log C) per
  update;
* :func:`sample_total` and :func:`draw_indices`: the uniform rule
  ``index = (u * size) >> 32`` and the stratified prioritized rule
  ``target = i * seg + ((u * seg) >> 32)`` with ``seg = total >> log2(B)``,
  followed by the sum tree descent.

Everything is plain Python integers (exact, and fast for one element at a
time, which is how the soft switch uses it); the module has no global state.
"""

from __future__ import annotations

__all__ = ["DEFAULT_SEED", "SumTree", "XorShift32", "draw_indices", "sample_total",
           "stack_chain", "xorshift32"]

from collections.abc import Sequence

from hostdrv.wire.consts import NO_INDEX, XORSHIFT_A, XORSHIFT_B, XORSHIFT_C
from hostdrv.wire.regmap import REGISTERS

_M32 = 0xFFFFFFFF

DEFAULT_SEED = REGISTERS["RPL_SEED"].reset
"""xorshift32 state used when ``RPL_SEED`` is written with 0 (and its reset value)."""


def xorshift32(state: int) -> int:
    """One xorshift32 step (shifts 13, 17, 5 on 32 bits).

    Parameters
    ----------
    state : int
        Current 32-bit generator state.

    Returns
    -------
    int
        The new state, which is also the value drawn.
    """
    x = state & _M32
    x ^= (x << XORSHIFT_A) & _M32
    x ^= x >> XORSHIFT_B
    x ^= (x << XORSHIFT_C) & _M32
    return x


class XorShift32:
    """The switch's generator: ``x ^= x << 13; x ^= x >> 17; x ^= x << 5`` (32-bit).

    Parameters
    ----------
    seed : int
        Initial state (taken modulo 2**32; 0 is replaced by :data:`DEFAULT_SEED`).
    """

    __slots__ = ("state",)

    def __init__(self, seed: int = DEFAULT_SEED) -> None:
        self.state = DEFAULT_SEED
        self.seed(seed)

    def seed(self, seed: int) -> None:
        """Reset the state (0 is replaced by ``0x2545F491``)."""
        seed &= _M32
        self.state = seed if seed else DEFAULT_SEED

    def draw(self) -> int:
        """Advance and return the new 32-bit state."""
        self.state = xorshift32(self.state)
        return self.state


class SumTree:
    """Sums of leaf priorities in a complete binary tree (exact Python integers).

    Parameters
    ----------
    capacity : int
        C, number of leaves; a power of two.

    Attributes
    ----------
    capacity : int
        C.
    nodes : list of int
        ``2 * C`` sums: node 1 is the root, the children of node n are
        ``2n`` and ``2n + 1``, leaf i is node ``C + i`` (node 0 is unused).

    Raises
    ------
    ValueError
        When ``capacity`` is not a power of two.
    """

    __slots__ = ("capacity", "nodes")

    def __init__(self, capacity: int) -> None:
        if capacity < 1 or capacity & (capacity - 1):
            raise ValueError(f"capacity {capacity} must be a power of two")
        self.capacity = capacity
        self.nodes = [0] * (2 * capacity)

    @property
    def total(self) -> int:
        """Sum of every leaf (the root)."""
        return self.nodes[1]

    def leaf(self, index: int) -> int:
        """Priority of leaf ``index``."""
        return self.nodes[self.capacity + index]

    def set(self, index: int, priority: int) -> None:
        """Set leaf ``index`` to ``priority`` and add the difference up to the root."""
        nodes = self.nodes
        node = self.capacity + index
        delta = priority - nodes[node]
        while node:
            nodes[node] += delta
            node >>= 1

    def find(self, target: int) -> int:
        """The leaf whose prefix-sum interval holds ``target`` (``0 <= target < total``).

        Descends from the root: go right, subtracting the left sum, when
        ``target`` is not below the left child's sum.
        """
        nodes, cap = self.nodes, self.capacity
        node = 1
        while node < cap:
            node <<= 1
            left = nodes[node]
            if target >= left:
                target -= left
                node += 1
        return node - cap

    def clear(self) -> None:
        """Set every priority to 0."""
        self.nodes = [0] * (2 * self.capacity)


def sample_total(tree: SumTree, size: int, prioritized: bool) -> int:
    """The ``total`` a SAMPLE_RESP reports: the priority sum, or ``size`` when uniform.

    Parameters
    ----------
    tree : SumTree
        The priorities.
    size : int
        Valid records.
    prioritized : bool
        Prioritized (stratified) or uniform sampling.

    Returns
    -------
    int
        0 when nothing may be drawn.
    """
    return tree.nodes[1] if prioritized else size


def draw_indices(tree: SumTree, rng: XorShift32, batch: int, size: int,
                 prioritized: bool) -> list[int]:
    """Draw one batch of record indices, advancing ``rng`` once per sample.

    Parameters
    ----------
    tree : SumTree
        The priorities (read only).
    rng : XorShift32
        The generator; left at its state after the last draw.
    batch : int
        B, a power of two.
    size : int
        Valid records (``> 0``).
    prioritized : bool
        Stratified prioritized sampling over ``tree`` (whose total must be
        ``> 0``), or uniform over ``0 .. size - 1``.

    Returns
    -------
    list of int
        B indices in batch order.
    """
    x = rng.state
    out = []
    if prioritized:
        find = tree.find
        seg = tree.nodes[1] >> (batch.bit_length() - 1)
        for i in range(batch):
            x = xorshift32(x)
            out.append(find(i * seg + ((x * seg) >> 32)))
    else:
        for _ in range(batch):
            x = xorshift32(x)
            out.append((x * size) >> 32)
    rng.state = x
    return out



def stack_chain(index: int, k: int, owner: Sequence[int], wseq: Sequence[int],
                prev: Sequence[int]) -> list[int]:
    """Stack positions 0 .. k − 1 of sampled record ``index`` (protocol section 5, Stacked
    samples): the record indices oldest first, ``NO_INDEX`` (``hostdrv.wire.consts``) where
    the chain broke and at every older position. Record ``p`` is the valid predecessor of
    ``x`` iff ``p == prev[x]``, ``owner[p] == owner[x]`` and ``wseq[p] == wseq[x] − 1
    (mod 2**32)``."""
    out = [index]
    x = index
    while len(out) < k:
        p = prev[x]
        if p == NO_INDEX or owner[p] != owner[x] or wseq[p] != (wseq[x] - 1) & 0xFFFFFFFF:
            break
        out.append(p)
        x = p
    return [NO_INDEX] * (k - len(out)) + out[::-1]
