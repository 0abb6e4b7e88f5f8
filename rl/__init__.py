"""netfpga-rl training code: DQN, A2C, PPO and DDPG through in-network aggregation and replay.

One file per algorithm (``rl.dqn``, ``rl.a2c``, ``rl.ppo``, ``rl.ddpg``); the
shared pieces are the gradient-sync strategies (``rl.sync``), the replay
strategies (``rl.replay``) and env/logging/launch helpers (``rl.common``).
The ``netrl`` command line is ``rl.cli``; ``python -m rl.demo`` is the demo.
"""
