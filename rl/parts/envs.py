"""Environments and seeding: :class:`EnvPool` (n seeded gymnasium envs stepped together
with same-step autoreset), :func:`make_env` (an id to an env, Atari games preprocessed
as DQN's Nature paper does), seeded torch generators and layer initialisation."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch

from hostdrv.extras import require

ATARI_FRAME = 84
"""Side of the square grey frame an Atari observation is resized to."""
ATARI_STACK = 4
"""Frames stacked into one Atari observation."""


class ResizeFrame(gym.ObservationWrapper):
    """Resize a grey frame (H, W) uint8 to (side, side) by sampling rows and columns.

    Nearest-neighbour sampling at the centres of ``side`` equal bands (no OpenCV:
    gymnasium's ``AtariPreprocessing`` needs it; the ALE renders grey frames
    itself with ``obs_type="grayscale"`` and skips frames with ``frameskip``).
    """

    def __init__(self, env: gym.Env, side: int = ATARI_FRAME) -> None:
        super().__init__(env)
        h, w = env.observation_space.shape[:2]
        self._rows = ((np.arange(side) + 0.5) * h / side).astype(np.intp)
        self._cols = ((np.arange(side) + 0.5) * w / side).astype(np.intp)
        self.observation_space = gym.spaces.Box(0, 255, (side, side), np.uint8)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        """The resized frame."""
        return observation[self._rows][:, self._cols]


def is_atari(env_id: str) -> bool:
    """Whether ``env_id`` names an Atari game of the ALE (``ALE/Pong-v5``)."""
    return env_id.startswith("ALE/")


def make_env(env_id: str) -> gym.Env:
    """A gymnasium env by id; an Atari game comes preprocessed.

    ``ALE/<Game>-v5``: grey frames (the ALE's ``obs_type="grayscale"``, every
    4th frame, its default ``frameskip``), resized to 84×84 (:class:`ResizeFrame`)
    and the last 4 stacked: observations of shape (4, 84, 84), uint8. Every
    other id is ``gym.make(env_id)`` (MuJoCo tasks such as ``HalfCheetah-v5``
    need the ``mujoco`` package).
    """
    if is_atari(env_id):
        from gymnasium.wrappers import FrameStackObservation

        ale_py = require("ale_py", "atari", f"the Atari environment {env_id}")

        gym.register_envs(ale_py)
        env = ResizeFrame(gym.make(env_id, obs_type="grayscale"))
        return FrameStackObservation(env, ATARI_STACK)
    try:
        entry = str(gym.spec(env_id).entry_point)
    except gym.error.Error:
        entry = ""  # an unknown id: gym.make names it
    if entry.startswith("gymnasium.envs.mujoco"):
        require("mujoco", "mujoco", f"the MuJoCo environment {env_id}")
    _mujoco_warnings_to_logging()
    return gym.make(env_id)


def _mujoco_warnings_to_logging() -> None:
    """Route MuJoCo's warnings to the ``mujoco`` logger, when nobody else took them.

    MuJoCo's default handler also appends every warning to ``MUJOCO_LOG.TXT`` in the
    working directory (gymnasium's HalfCheetah model draws a deprecation warning from
    mujoco 4 at every load), which would litter the checkout.
    """
    try:
        import mujoco
    except ImportError:
        return
    if mujoco.get_mju_user_warning() is None:
        log = logging.getLogger("mujoco")
        mujoco.set_mju_user_warning(lambda msg: log.warning("%s", msg))


@dataclass
class PoolStep:
    """What :meth:`EnvPool.step` returns (arrays over the n envs)."""

    next_obs: np.ndarray
    """Observation to act on next (already reset where an episode ended)."""
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    final_obs: np.ndarray
    """The true next observation (differs from ``next_obs`` where an episode ended)."""
    episodes: list[tuple[float, int]]
    """(return, length) of every episode that ended in this step."""


class EnvPool:
    """n copies of one gymnasium environment, seeded ``seed, seed+1, ...``.

    Parameters
    ----------
    env_id : str
        Gymnasium id (``CartPole-v1``, ``Pendulum-v1``, ``ALE/Pong-v5``,
        ``HalfCheetah-v5``; see :func:`make_env`).
    n : int
        Number of copies.
    seed : int
        Seed of copy 0 (copy i gets ``seed + i``), for the first reset and the
        action space.
    """

    def __init__(self, env_id: str, n: int, seed: int) -> None:
        self.envs = [make_env(env_id) for _ in range(n)]
        self.n = n
        self.seed = seed
        self.observation_space = self.envs[0].observation_space
        self.action_space = self.envs[0].action_space
        self._returns = np.zeros(n)
        self._lengths = np.zeros(n, dtype=np.int64)

    def reset(self) -> np.ndarray:
        """Reset every copy with its seed; return the stacked observations."""
        obs = []
        for i, env in enumerate(self.envs):
            env.action_space.seed(self.seed + i)
            obs.append(env.reset(seed=self.seed + i)[0])
        self._returns[:] = 0
        self._lengths[:] = 0
        return np.stack(obs).astype(np.float32)

    def step(self, actions: np.ndarray) -> PoolStep:
        """Step every copy; reset the ones whose episode ended."""
        next_obs, final_obs, rewards, term, trunc = [], [], [], [], []
        episodes: list[tuple[float, int]] = []
        for i, env in enumerate(self.envs):
            obs, r, te, tr, _ = env.step(actions[i])
            self._returns[i] += r
            self._lengths[i] += 1
            final_obs.append(obs)
            if te or tr:
                episodes.append((float(self._returns[i]), int(self._lengths[i])))
                self._returns[i] = 0
                self._lengths[i] = 0
                obs, _ = env.reset()
            next_obs.append(obs)
            rewards.append(r)
            term.append(te)
            tr_flag = tr and not te
            trunc.append(tr_flag)
        return PoolStep(np.stack(next_obs).astype(np.float32), np.array(rewards, np.float32),
                        np.array(term, bool), np.array(trunc, bool),
                        np.stack(final_obs).astype(np.float32), episodes)

    def close(self) -> None:
        """Close every copy."""
        for env in self.envs:
            env.close()


def torch_generator(seed: int) -> torch.Generator:
    """A CPU torch generator seeded with ``seed`` (explicit, per worker)."""
    gen = torch.Generator()
    gen.manual_seed(seed)
    return gen


def init_layer(layer: torch.nn.Linear, gen: torch.Generator, std: float = math.sqrt(2),
               bias: float = 0.0) -> torch.nn.Linear:
    """Orthogonal weights with gain ``std``, constant bias, drawn from ``gen``."""
    torch.nn.init.orthogonal_(layer.weight, std, generator=gen)
    torch.nn.init.constant_(layer.bias, bias)
    return layer


def uniform_layer(layer: torch.nn.Linear, gen: torch.Generator,
                  bound: float | None = None) -> torch.nn.Linear:
    """PyTorch's default fan-in uniform init (or ``±bound``), drawn from ``gen``."""
    fan_in = layer.weight.shape[1]
    b = 1.0 / math.sqrt(fan_in) if bound is None else bound
    torch.nn.init.uniform_(layer.weight, -b, b, generator=gen)
    torch.nn.init.uniform_(layer.bias, -b, b, generator=gen)
    return layer
