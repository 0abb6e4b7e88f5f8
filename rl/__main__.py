"""``python -m rl``: the ``netrl`` command line (what ``torchrun ... -m rl train ...`` runs)."""

from rl.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
