"""netfpga-rl training code: DQN, A2C, PPO and DDPG through in-network aggregation and replay.

One file per algorithm (``rl.dqn``, ``rl.a2c``, ``rl.ppo``, ``rl.ddpg``); the
shared pieces are the gradient-sync strategies (``rl.sync``), the replay
strategies (``rl.replay``), the algorithms' parts (``rl.parts``: envs, networks,
actor-critic arithmetic) and the run harness (``rl.run``: launching workers,
timing, run logs). The ``netrl`` training commands are ``rl.cli``; ``python -m
rl.demo`` is the demo.
"""

from hostdrv.extras import check as _check

# torch, gymnasium, matplotlib and tensorboard come with the extra "rl"; without them the
# first import of the package says which line installs them
_check("rl", "torch", "gymnasium", "matplotlib", "tensorboard")
