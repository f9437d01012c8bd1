"""What the user runs: the flake8 plugin (:mod:`.flake8_plugin`) and the ``flake8-autograd`` command
(:mod:`.command`).

Each adapter reads its options, decides which codes run, hands every file to :mod:`..checking` and
shows what comes back. It may import every layer below it; the two adapters do not import each other.
"""
