"""``python -m flake8_autograd``: the same as the ``flake8-autograd`` command."""

from .adapters.command.main import main

if __name__ == "__main__":  # guarded: worker processes of -j import this module again
    raise SystemExit(main())
