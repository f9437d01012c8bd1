"""Performance and accuracy benchmarks for flake8-autograd (not part of the test suite).

Run from anywhere with Python >= 3.9 (or ``python -m benchmarks`` from the checkout's root)::

    python benchmarks/bench.py                        # default run: about ten minutes
    python benchmarks/bench.py --quick                # a smoke run
    python benchmarks/bench.py --max-classes 10000    # scaling up to 10,000 classes (slow)
    python benchmarks/bench.py --sample 1             # flake8 rows over the whole corpus (slow)
    python benchmarks/bench.py --only accuracy        # the real-code scorer on both splits

What it measures (see docs/performance.md for the figures and how to read them):

1. overhead   ``flake8 -j 1`` over the corpus with the plugin installed vs without it.
   instructions the same two runs counted in instructions executed (valgrind's cachegrind, when
              installed): a deterministic figure that the load on a shared machine does not move.
   startup    ``flake8`` on one file (an editor on save, a pre-commit hook) with the plugin vs without:
              a file that cannot hold a Function class, a small one that does, and a Function-dense
              one (a generated 1,600-line module of attention-kernel Functions, benchmarks/kernels.py).
2. dense      the plugin's own work on files that hold Function classes vs ``libcst.parse_module``.
3. scaling    time per class on generated files of 1 to 10,000 Function classes (and a PNG plot).
   fixes      time per fix of ``--fix``/``--diff`` with 1,000 to 10,000 fixes in one file, and time per call
              of AGF111 (flake8 with --autograd-preview, and the command with its fixes) with 1,000 to
              10,000 direct calls in one function: each should stay flat.
   growth     time per unit on generated inputs of 10 to 1,000 units (tensors one forward keeps on ctx,
              Function classes or custom ops in a module, returns of one backward), through flake8 with
              --autograd-preview and the command (check, --diff); a run past --growth-budget seconds is
              stopped, and the larger sizes of that run are not started (--quick: up to 300 units).
4. command    wall time of the ``flake8-autograd`` console script with -j 1 and -j 2.
5. torchfix   ``flake8 -j 1`` with TorchFix installed vs without, as a reference.
6. memory     the plugin's peak (tracemalloc) while checking a file vs the size of its libcst tree.
8. accuracy   the real-code scorer (benchmarks/realcode/score.py) on its dev and test splits, preview
              codes shown, over the projects in ``--realcode-cache`` (see docs/accuracy.md); skipped
              when that folder does not exist.

The flake8 rows need three virtualenvs, created (``python -m venv`` + pip) and reused under a cache
directory (``--venvs``, default ``~/.cache/flake8-autograd-bench/venvs``): ``base`` (flake8 only),
``plugin`` (flake8 + this checkout, editable) and ``torchfix`` (flake8 + TorchFix). All three get
the same flake8, pyflakes and pycodestyle versions. The dense, scaling, fixes, memory and accuracy
sections run in-process inside the ``plugin`` virtualenv (this script again, with ``--inner``).

The corpus defaults to the source of the torch installed for the interpreter running this script
(located without importing torch); ``--corpus`` names another directory.

Every comparison alternates the compared commands round by round and reports the median over the
rounds with the spread (min-max).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Protocol, Sequence, Tuple

from benchmarks import accuracy, dense, fixes, growth, memory, performance, scaling
from benchmarks.common import (
    Row,
    Run,
    Venvs,
    child_env,
    default_cache,
    default_flake8_spec,
    load_average,
    machine,
    markdown_table,
    plugin_listed,
    python_files,
    torch_source,
    torch_version,
    venv_bin,
    versions_in,
)
from benchmarks.fixes import FIX_COUNTS
from benchmarks.growth import BUDGET as GROWTH_BUDGET
from benchmarks.growth import GROWTH_SIZES, QUICK_GROWTH_BUDGET, QUICK_GROWTH_SIZES
from benchmarks.scaling import DEFAULT_PLOT, SIZES


class InnerSection(Protocol):
    """A module measuring one section inside the plugin virtualenv, in the child started with --inner."""

    SECTIONS: Tuple[str, ...]

    def measure(self, args: argparse.Namespace, corpus: Path) -> Dict[str, Any]: ...

    def report_rows(self, measured: Dict[str, Any]) -> List[Row]: ...

    def report_tables(self, measured: Dict[str, Any]) -> List[str]: ...


INNER_MODULES: Tuple[InnerSection, ...] = (dense, scaling, fixes, memory, accuracy, growth)
INNER_SECTIONS = tuple(name for module in INNER_MODULES for name in module.SECTIONS)
# --only's sections, in this order: the parent's (performance), then the child's.
ALL_SECTIONS = performance.SECTIONS + INNER_SECTIONS
# The child's rows in the report, in the order they have always come.
ROW_ORDER: Tuple[InnerSection, ...] = (fixes, dense, scaling, memory, accuracy, growth)
# The child runs the script, not ``-m benchmarks``: it needs no working directory.
SCRIPT = Path(__file__).resolve().parent / "bench.py"


def run_inner(args: argparse.Namespace) -> None:
    """Entry point of the child process running in the plugin virtualenv."""
    corpus = Path(args.corpus)
    wanted = args.inner.split(",")
    output: Dict[str, Any] = {}
    for module in INNER_MODULES:
        (name,) = module.SECTIONS  # one section each
        if name in wanted:
            output[name] = module.measure(args, corpus)
    Path(args.inner_output).write_text(json.dumps(output, indent=1))


def measure_inside(run: Run, inner: Sequence[str]) -> None:
    """The in-process sections, in a child running in the plugin virtualenv; their rows join the report."""
    args = run.args
    output = run.workdir / "inner.json"
    command = [
        str(venv_bin(run.plugin, "python")), str(SCRIPT),
        "--inner", ",".join(inner), "--inner-output", str(output),
        "--corpus", str(run.corpus), "--rounds", str(args.rounds),
        "--sizes", args.sizes or ",".join(str(size) for size in run.sizes),
        "--fix-counts", args.fix_counts,
        "--growth-sizes", args.growth_sizes, "--growth-budget", str(args.growth_budget),
        "--plot", args.plot,
    ]
    if args.realcode_cache:
        command += ["--realcode-cache", args.realcode_cache]
    subprocess.run(command, check=True, env=child_env())
    measured = json.loads(output.read_text())
    run.data.update(measured)
    for module in ROW_ORDER:
        run.rows += module.report_rows(measured)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", help="directory of Python files (default: the installed torch's source)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per comparison (default 5)")
    parser.add_argument(
        "--sample", type=int, default=16,
        help="the overhead and command rows check 1 file in N of the corpus (default 16; 1 = all of it)",
    )
    parser.add_argument(
        "--instructions-sample", type=int, default=16,
        help="the instructions row (under valgrind, about 16 times slower than flake8) checks 1 file in N (default 16)",
    )
    parser.add_argument(
        "--torchfix-sample", type=int, default=128,
        help="the TorchFix row checks 1 file in N (default 128; TorchFix is about seven times slower than flake8)",
    )
    parser.add_argument(
        "--max-classes", type=int, default=1000,
        help="largest generated file, in classes (default 1000; 10000 takes several minutes more)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run: 2 rounds, 4x sparser samples, up to 100 classes"
    )
    parser.add_argument(
        "--only", default=",".join(ALL_SECTIONS), help=f"comma-separated subset of {','.join(ALL_SECTIONS)}"
    )
    parser.add_argument(
        "--venvs", default=str(default_cache() / "venvs"), help="where the virtualenvs are kept and reused"
    )
    parser.add_argument("--rebuild", action="store_true", help="recreate the virtualenvs")
    parser.add_argument("--flake8", default=default_flake8_spec(), help="flake8 requirement for every virtualenv")
    parser.add_argument("--plot", default=str(DEFAULT_PLOT), help="where to write the scaling plot ('' for none)")
    parser.add_argument("--json", help="also write every measurement to this JSON file")
    parser.add_argument(
        "--realcode-cache", metavar="DIR",
        help="the projects the real-code scorer checks, as benchmarks/realcode/fetch.py downloads them (default: "
        "the scorer's, ~/.cache/flake8-autograd-realcode); the accuracy section is skipped without them",
    )
    parser.add_argument(
        "--growth-budget", type=float, default=None, metavar="SECONDS",
        help=f"growth: the longest one run may take (default {GROWTH_BUDGET:g}; --quick {QUICK_GROWTH_BUDGET:g})",
    )
    parser.add_argument("--growth-sizes", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--sizes", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--fix-counts", default=",".join(map(str, FIX_COUNTS)), help=argparse.SUPPRESS)
    parser.add_argument("--inner", help=argparse.SUPPRESS)
    parser.add_argument("--inner-output", help=argparse.SUPPRESS)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)

    if args.inner:
        run_inner(args)
        return 0

    if args.quick:
        args.rounds = min(args.rounds, 2)
        args.sample *= 4
        args.torchfix_sample *= 4
        args.instructions_sample *= 4
        args.max_classes = min(args.max_classes, 100)
        args.fix_counts = "250,500,1000"
        args.growth_sizes = args.growth_sizes or ",".join(map(str, QUICK_GROWTH_SIZES))
        args.growth_budget = args.growth_budget or QUICK_GROWTH_BUDGET
    args.growth_sizes = args.growth_sizes or ",".join(map(str, GROWTH_SIZES))
    args.growth_budget = args.growth_budget or GROWTH_BUDGET
    sizes = [size for size in SIZES if size <= args.max_classes]
    sections = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = set(sections) - set(ALL_SECTIONS)
    if unknown:
        parser.error(f"unknown sections: {', '.join(sorted(unknown))}")

    if args.corpus:
        corpus = Path(args.corpus).resolve()
        corpus_name = str(corpus)
    else:
        found = torch_source()
        if found is None:
            parser.error("torch is not installed for this interpreter; pass --corpus DIR")
        corpus = found
        corpus_name = f"torch {torch_version()} source ({len(python_files(corpus))} files)"

    venvs = Venvs(Path(args.venvs), args.flake8, args.rebuild)
    venvs.prepare_root()
    rows: List[Row] = []
    data: Dict[str, Any] = {"corpus": corpus_name, "rounds": args.rounds}
    versions: Dict[str, str] = {"torch (corpus)": torch_version()} if not args.corpus else {}
    workdir = Path(tempfile.mkdtemp(prefix="agf-bench-"))  # no flake8 config is found from here
    started = time.perf_counter()
    load_at_start = load_average()

    base = venvs.base()
    plugin = venvs.plugin()
    versions.update(versions_in(plugin, ["flake8", "pyflakes", "pycodestyle", "libcst", "flake8-autograd"]))
    if not plugin_listed(plugin, "flake8-autograd") or plugin_listed(base, "flake8-autograd"):
        raise RuntimeError("the plugin virtualenv must list flake8-autograd in flake8 --version; the base must not")

    run = Run(args, corpus, corpus_name, sizes, venvs, base, plugin, workdir, rows, data, versions)
    performance.measure(run, sections)
    if "scaling" in sections:
        scaling.measure_instructions(run)
    inner = [name for name in sections if name in INNER_SECTIONS]
    if inner:
        measure_inside(run, inner)

    shutil.rmtree(workdir, ignore_errors=True)
    print()
    print(f"Corpus: {corpus_name}; {args.rounds} rounds")
    print()
    print(markdown_table(rows))
    print()
    facts = machine(versions) + [
        f"load average (1/5/15 min) at start: {load_at_start}; at the end: {load_average()}",
        f"this run took {(time.perf_counter() - started) / 60:.1f} min",
    ]
    print("\n".join("- " + fact for fact in facts))
    for module in INNER_MODULES:  # the per-file tables: dense, memory, accuracy
        for table in module.report_tables(data):
            print()
            print(table)
    if args.json:
        data["machine"] = facts
        data["rows"] = [row.cells() for row in rows]
        Path(args.json).write_text(json.dumps(data, indent=1))
    return 0
