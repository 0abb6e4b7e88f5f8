"""``python -m rl``: ``netrl train`` and ``netrl compare`` (and ``regs``), what ``torchrun ...
-m rl train ...`` runs on every rank. The whole ``netrl`` command is :mod:`netrl`."""

from rl.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
