"""What counts as solved: the mean return over the last 20 episodes that a run aims at.

A leaf of ``rl`` (it imports nothing of the package, and gymnasium only when asked), so the
workloads, the CLI and the plots all read the one rule without importing each other.
"""

from __future__ import annotations

__all__ = ["TARGET_FALLBACK", "default_target"]


TARGET_FALLBACK = {"Pendulum-v1": -400.0}
"""Solved thresholds of environments whose gymnasium spec has none (Pendulum: CleanRL's
usual bar)."""


def default_target(env_id: str) -> float | None:
    """The mean return over the last 20 episodes that counts as solved: the environment's
    ``spec.reward_threshold`` (CartPole-v1: 475, what CleanRL and SB3 curves are read
    against; CartPole-v0's was 195), else :data:`TARGET_FALLBACK`, else None (train the
    budget)."""
    import gymnasium as gym

    try:
        threshold = gym.spec(env_id).reward_threshold
    except gym.error.Error:
        threshold = None
    if threshold is not None:
        return float(threshold)
    return TARGET_FALLBACK.get(env_id)
