"""Benchmarks of flake8-autograd, not part of the test suite: ``python benchmarks/bench.py`` from anywhere,
or ``python -m benchmarks`` from the checkout's root; ``--help`` says what each section measures.

One module per measurement, each named for what it measures, and the helpers they share:

- ``cli``: the command line; runs the sections and prints the report.
- ``common``: statistics and the report's rows, the corpus, the virtualenvs, the timing of external
  commands, the log and the machine's facts.
- ``performance``: "overhead", "instructions", "startup", "torchfix" and "command", flake8 and the
  command run as users run them, from the parent process.
- ``dense``, ``scaling``, ``fixes``, ``memory``, ``accuracy`` and ``growth``: measured inside the plugin virtualenv,
  in a child process (``bench.py --inner``); ``inprocess`` holds what they share.
- ``realcode/``: the real-code accuracy benchmark's data and scorer, which ``accuracy`` runs.

Every module imports only the standard library at its top, so that any Python runs the parent.
"""
