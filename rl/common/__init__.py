"""The old name of :mod:`rl.parts` and :mod:`rl.run`, kept as an alias.

``rl.common`` held both the algorithms' parts (envs, networks, actor-critic
arithmetic: now :mod:`rl.parts`) and the run harness (launch, worker context,
run logs, torchrun: now :mod:`rl.run`). Code written against it keeps working:
every name it exported is importable from ``rl.common``, and ``rl.common.envs``,
``rl.common.launch`` ... are the new modules themselves. New code imports from
:mod:`rl.parts` and :mod:`rl.run`.
"""

import sys

from rl import parts, run
from rl.parts import *  # noqa: F403
from rl.parts import actor_critic, envs, nets
from rl.run import *  # noqa: F403
from rl.run import launch, runlog, tblog, torchrun, worker

for _module in (actor_critic, envs, nets, launch, runlog, tblog, torchrun, worker):
    sys.modules[f"{__name__}.{_module.__name__.rsplit('.', 1)[1]}"] = _module

__all__ = sorted(parts.__all__ + run.__all__)
