"""Every finding of the chosen codes on every Python file of a split's projects, not only labelled classes.

A code added after the blind labels were written has no labels to score against: its precision is
measured by running it on whole projects and judging each finding by reading the code. This lists them::

    python benchmarks/realcode/sweep.py --split dev --select AGF122,AGF123
    python benchmarks/realcode/sweep.py --split test --select AGF12 --counts   # totals per code only

``--select`` takes code prefixes, as flake8 does. Files the checker cannot read are counted, not listed.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import List, Optional, Sequence

from score import SPLIT_GROUPS, SPLITS, MalformedData, add_data_arguments, load_benchmark

from flake8_autograd.adapters.command.runner import CheckOptions, check_file

EVERY_RULE = CheckOptions(preview=True)


def sweep(cache: Path, projects: Sequence[str], prefixes: Sequence[str], counts_only: bool) -> List[str]:
    """One line per finding (unless ``counts_only``), then the number of findings per code."""
    lines: List[str] = []
    per_code: Counter[str] = Counter()
    unreadable = 0
    for project in projects:
        root = cache / project
        for path in sorted(root.rglob("*.py")):
            outcome = check_file(str(path), EVERY_RULE)
            if outcome.error:
                unreadable += 1
                continue
            for report in outcome.reports:
                if not report.code.startswith(tuple(prefixes)):
                    continue
                per_code[report.code] += 1
                if not counts_only:
                    where = path.relative_to(cache).as_posix()
                    lines.append(f"{where}:{report.line}:{report.column}: {report.code} {report.text}")
    lines.append(f"{len(projects)} projects, {unreadable} unreadable files")
    lines.extend(f"{code}: {number}" for code, number in sorted(per_code.items()))
    return lines


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    add_data_arguments(parser, "projects.toml", "dev", "which projects to sweep", (*SPLITS, *SPLIT_GROUPS))
    parser.add_argument("--select", required=True, help="comma-separated code prefixes, e.g. AGF122,AGF13")
    parser.add_argument("--counts", action="store_true", help="print only the number of findings per code")
    arguments = parser.parse_args(argv)
    try:
        benchmark = load_benchmark(arguments.data)
    except MalformedData as error:
        print(f"sweep.py: error: {error}", file=sys.stderr)
        return 2
    splits = SPLIT_GROUPS.get(arguments.split, (arguments.split,))
    projects = sorted(name for name, project in benchmark.projects.items() if project.split in splits)
    prefixes = [prefix.strip() for prefix in arguments.select.split(",") if prefix.strip()]
    print("\n".join(sweep(arguments.cache.expanduser(), projects, prefixes, arguments.counts)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
