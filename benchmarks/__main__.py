"""``python -m benchmarks`` from the checkout's root: the same command line as ``benchmarks/bench.py``."""

import sys

from benchmarks.cli import main

if __name__ == "__main__":
    sys.argv[0] = "python -m benchmarks"  # what --help's usage line names, rather than "__main__.py"
    sys.exit(main())
