"""Baselines a user would otherwise run, built as carefully as the switch path.

:mod:`hostdrv.peers.ps`: the native parameter server (``hostdrv/native/nrl_ps.cpp``) and
its client. A room of its own (``docs/architecture.md``, Host rooms): it imports only
``hostdrv.wire``, ``hostdrv.errors`` and the compiled extension, never a switch or a client.
"""
