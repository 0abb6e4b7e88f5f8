"""What the on-policy actor-critic algorithms (:mod:`rl.a2c`, :mod:`rl.ppo`) share.

* :class:`ActorCriticMLP`: separate actor and critic MLPs (tanh), CleanRL's
  orthogonal initialisation;
* :func:`bootstrapped_rewards`: a step's rewards with time-limit truncations
  bootstrapped from the critic's value of the true final observation;
* :func:`gae`: generalized advantage estimation over a rollout.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from rl.parts.envs import PoolStep, init_layer


class ActorCriticMLP(nn.Module):
    """Separate actor and critic MLPs (tanh), orthogonal initialisation.

    The critic is initialised first, then the actor, from ``gen``: two
    networks built from generators in the same state are identical.
    """

    def __init__(self, obs_dim: int, n_actions: int, hidden: int, gen: torch.Generator) -> None:
        super().__init__()
        self.critic = nn.Sequential(
            init_layer(nn.Linear(obs_dim, hidden), gen), nn.Tanh(),
            init_layer(nn.Linear(hidden, hidden), gen), nn.Tanh(),
            init_layer(nn.Linear(hidden, 1), gen, std=1.0))
        self.actor = nn.Sequential(
            init_layer(nn.Linear(obs_dim, hidden), gen), nn.Tanh(),
            init_layer(nn.Linear(hidden, hidden), gen), nn.Tanh(),
            init_layer(nn.Linear(hidden, n_actions), gen, std=0.01))

    def value(self, x: torch.Tensor) -> torch.Tensor:
        """State value V(x)."""
        return self.critic(x).squeeze(-1)

    def logits_and_value(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Action logits and state value of ``x``."""
        return self.actor(x), self.value(x)


def bootstrapped_rewards(out: PoolStep, value: Callable[[torch.Tensor], torch.Tensor],
                         gamma: float) -> torch.Tensor:
    """The rewards of ``out``, plus ``gamma * value(final obs)`` where an env was truncated.

    A time-limit truncation is not a terminal state: its return goes on, so
    it is bootstrapped from the value of the true final observation
    (``out.final_obs``; ``value`` is called without gradient, only when some
    env was truncated).
    """
    reward = torch.from_numpy(out.rewards)
    if out.truncated.any():
        with torch.no_grad():
            v_final = value(torch.from_numpy(out.final_obs))
        reward = reward + gamma * v_final * torch.from_numpy(out.truncated).float()
    return reward


@torch.no_grad()
def gae(rewards: torch.Tensor, dones: torch.Tensor, values: torch.Tensor,
        next_value: torch.Tensor, next_done: torch.Tensor, gamma: float,
        gae_lambda: float) -> torch.Tensor:
    """Generalized advantage estimates of a rollout (no gradient).

    Parameters
    ----------
    rewards, dones, values:
        Per step and env, shape (num_steps, num_envs): the rewards, whether
        the observation of that step began a new episode, and its value.
    next_value, next_done:
        Value of the observation after the last step, and whether it began a
        new episode, shape (num_envs,).
    gamma, gae_lambda:
        Discount and GAE lambda.

    Returns
    -------
    torch.Tensor
        The advantages, shape (num_steps, num_envs); the returns are
        ``advantages + values``.
    """
    num_steps = rewards.shape[0]
    advantages = torch.zeros_like(rewards)
    lastgaelam = torch.zeros(rewards.shape[1])
    for t in reversed(range(num_steps)):
        if t == num_steps - 1:
            nonterminal, nextvalues = 1.0 - next_done, next_value
        else:
            nonterminal, nextvalues = 1.0 - dones[t + 1], values[t + 1]
        delta = rewards[t] + gamma * nextvalues * nonterminal - values[t]
        lastgaelam = delta + gamma * gae_lambda * nonterminal * lastgaelam
        advantages[t] = lastgaelam
    return advantages


__all__ = ["ActorCriticMLP", "bootstrapped_rewards", "gae"]
