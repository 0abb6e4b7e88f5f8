"""hostdrv.wire.sampler: the replay sampler arithmetic against docs/protocol.md section 5 written out.

The switch model and rl.replay.PrioritizedStore both draw through this module;
tests/test_model_replay.py and tests/test_rl.py check them end to end.
"""

from __future__ import annotations

import numpy as np
import pytest

from hostdrv.wire import sampler
from hostdrv.wire.sampler import SumTree, XorShift32


def xs32(x: int) -> int:
    x ^= (x << 13) & 0xFFFFFFFF
    x ^= x >> 17
    x ^= (x << 5) & 0xFFFFFFFF
    return x


def test_generator_follows_the_formula_and_replaces_seed_zero() -> None:
    g = XorShift32(0)
    assert g.state == sampler.DEFAULT_SEED
    x = sampler.DEFAULT_SEED
    for _ in range(100):
        x = xs32(x)
        assert g.draw() == x == g.state
    assert sampler.xorshift32(123) == xs32(123)
    g.seed(1 << 32)  # taken modulo 2**32: 0
    assert g.state == sampler.DEFAULT_SEED


@pytest.mark.parametrize("cap", [1, 2, 8, 64])
def test_sum_tree_matches_prefix_sums(cap: int) -> None:
    rng = np.random.default_rng(cap)
    tree = SumTree(cap)
    prio = [0] * cap
    for _ in range(200):
        i, p = int(rng.integers(cap)), int(rng.integers(0, 1 << 32))
        tree.set(i, p)
        prio[i] = p
        assert tree.total == sum(prio) and tree.leaf(i) == p
        for n in range(1, cap):  # every inner node is the sum of its children
            assert tree.nodes[n] == tree.nodes[2 * n] + tree.nodes[2 * n + 1]
    prefix = np.cumsum(np.array(prio, dtype=object))
    for target in [0, tree.total - 1, *(int(x) for x in rng.integers(0, tree.total, 50))]:
        assert tree.find(target) == next(j for j in range(cap) if prefix[j] > target)
    tree.clear()
    assert tree.total == 0 and tree.nodes == [0] * (2 * cap)


def test_sum_tree_rejects_a_capacity_that_is_not_a_power_of_two() -> None:
    for cap in (0, 3, 12):
        with pytest.raises(ValueError, match="power of two"):
            SumTree(cap)


@pytest.mark.parametrize("batch", [1, 4, 64])
def test_draws_follow_the_documented_rules(batch: int) -> None:
    rng = np.random.default_rng(batch)
    cap, size = 32, 27
    tree = SumTree(cap)
    for i in range(size):
        tree.set(i, int(rng.integers(1, 1 << 20)))
    prefix = np.cumsum(np.array(tree.nodes[cap:], dtype=object))
    total = sampler.sample_total(tree, size, True)
    assert total == tree.total and sampler.sample_total(tree, size, False) == size

    g = XorShift32(99)
    x = 99
    seg = total // batch
    want = []
    for i in range(batch):
        x = xs32(x)
        target = i * seg + x * seg // 2**32
        want.append(next(j for j in range(cap) if prefix[j] > target))
    assert sampler.draw_indices(tree, g, batch, size, True) == want
    assert g.state == x

    want = []
    for _ in range(batch):
        x = xs32(x)
        want.append(x * size // 2**32)
    assert sampler.draw_indices(tree, g, batch, size, False) == want
    assert g.state == x
