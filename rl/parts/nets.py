"""The image networks of the paper workloads: the Nature-CNN torso (Mnih et al. 2015) and
the heads DQN and A2C put on it.

* :class:`NatureCNN`: three convolutions (32 8×8/4, 64 4×4/2, 64 3×3/1) and a
  fully connected layer of ``hidden`` units over (4, 84, 84) uint8 frames scaled
  to [0, 1];
* :class:`CNNQNetwork`: the torso and one Q-value per action (DQN; ``hidden``
  512 is the Nature network, about 1.7 M parameters, 6.7 MB of fp32 gradient);
* :class:`ActorCriticCNN`: one torso shared by a policy head and a value head
  (A2C), with the interface of :class:`rl.parts.ActorCriticMLP`.

All layers are initialised orthogonally from an explicit generator, so that two
networks built from generators in the same state are identical.
"""

from __future__ import annotations

import math

import torch
from torch import nn


def init_orthogonal(layer: nn.Linear | nn.Conv2d, gen: torch.Generator,
                    std: float = math.sqrt(2), bias: float = 0.0) -> nn.Linear | nn.Conv2d:
    """Orthogonal weights with gain ``std``, constant bias, drawn from ``gen``."""
    nn.init.orthogonal_(layer.weight, std, generator=gen)
    assert layer.bias is not None
    nn.init.constant_(layer.bias, bias)
    return layer


def is_image(obs_shape: tuple[int, ...]) -> bool:
    """Whether an observation shape is a stack of frames (C, H, W) rather than a vector."""
    return len(obs_shape) == 3


class NatureCNN(nn.Module):
    """The Nature-DQN torso: frames (B, C, 84, 84) in [0, 255] to ``hidden`` features.

    Parameters
    ----------
    obs_shape : tuple of int
        (C, H, W) of one observation, (4, 84, 84) for the Atari workloads.
    hidden : int
        Units of the fully connected layer after the convolutions.
    gen : torch.Generator
        Generator of the initial weights.
    """

    def __init__(self, obs_shape: tuple[int, ...], hidden: int, gen: torch.Generator) -> None:
        super().__init__()
        c, h, w = obs_shape
        self.convs = nn.Sequential(
            init_orthogonal(nn.Conv2d(c, 32, 8, stride=4), gen), nn.ReLU(),
            init_orthogonal(nn.Conv2d(32, 64, 4, stride=2), gen), nn.ReLU(),
            init_orthogonal(nn.Conv2d(64, 64, 3, stride=1), gen), nn.ReLU(),
            nn.Flatten())
        with torch.no_grad():
            flat = int(self.convs(torch.zeros(1, c, h, w)).shape[1])
        self.fc = nn.Sequential(init_orthogonal(nn.Linear(flat, hidden), gen), nn.ReLU())
        self.out_features = hidden

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Features of frames ``x`` (B, C, H, W) or flattened (B, C*H*W)."""
        c = self.convs[0].in_channels
        if x.dim() == 2:
            side = math.isqrt(x.shape[1] // c)
            x = x.view(-1, c, side, side)
        return self.fc(self.convs(x.float() / 255.0))


class CNNQNetwork(nn.Module):
    """DQN's Q-function on frames: :class:`NatureCNN` and a linear layer, one Q per action."""

    def __init__(self, obs_shape: tuple[int, ...], n_actions: int, hidden: int,
                 gen: torch.Generator) -> None:
        super().__init__()
        self.torso = NatureCNN(obs_shape, hidden, gen)
        self.head = init_orthogonal(nn.Linear(hidden, n_actions), gen, std=1.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Q-values of every action for frames ``x``."""
        return self.head(self.torso(x))


class ActorCriticCNN(nn.Module):
    """A2C on frames: one :class:`NatureCNN` torso, a policy head and a value head."""

    def __init__(self, obs_shape: tuple[int, ...], n_actions: int, hidden: int,
                 gen: torch.Generator) -> None:
        super().__init__()
        self.torso = NatureCNN(obs_shape, hidden, gen)
        self.policy = init_orthogonal(nn.Linear(hidden, n_actions), gen, std=0.01)
        self.critic_head = init_orthogonal(nn.Linear(hidden, 1), gen, std=1.0)

    def actor(self, x: torch.Tensor) -> torch.Tensor:
        """Action logits for frames ``x``."""
        return self.policy(self.torso(x))

    def value(self, x: torch.Tensor) -> torch.Tensor:
        """State value V(x)."""
        return self.critic_head(self.torso(x)).squeeze(-1)

    def logits_and_value(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits and value with one pass through the torso."""
        f = self.torso(x)
        return self.policy(f), self.critic_head(f).squeeze(-1)


def param_count(*modules: nn.Module) -> int:
    """Trainable parameters of ``modules`` (the elements one gradient exchange carries)."""
    return sum(p.numel() for m in modules for p in m.parameters() if p.requires_grad)


__all__ = ["ActorCriticCNN", "CNNQNetwork", "NatureCNN", "init_orthogonal", "is_image",
           "param_count"]
