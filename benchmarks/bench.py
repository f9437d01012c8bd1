"""The benchmarks' command line as a script: ``python benchmarks/bench.py --help`` lists the sections and
options.

The measurements live in the ``benchmarks`` package around this file, one module per measurement (see
``benchmarks/__init__.py``); this script makes that package importable from any working directory and
runs :func:`benchmarks.cli.main`, as ``python -m benchmarks`` does from the checkout's root. The
in-process sections run this script again inside the plugin virtualenv (``--inner``).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def import_from_the_checkout() -> None:
    """Python puts a script's folder first on the path, where the package's modules would pass for
    top-level ones (``common``, ``memory``); the package is imported from the checkout's root instead."""
    sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != HERE]
    sys.path.insert(0, str(HERE.parent))


if __name__ == "__main__":
    import_from_the_checkout()
    from benchmarks.cli import main

    sys.exit(main())
