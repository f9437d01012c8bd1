"""Section "fixes": time per fix of ``--fix``/``--diff`` with 1,000 to 10,000 fixes in one file, and
time per call of AGF111 (flake8 with --autograd-preview, and the command with its fixes) with as many
direct calls in one function: each should stay flat. Runs inside the plugin virtualenv."""

from __future__ import annotations

import argparse
import ast
import importlib
from pathlib import Path
from typing import Any, Callable, Dict, List, Sequence, Tuple

from benchmarks.common import FLAT_FACTOR, Row, log
from benchmarks.inprocess import best_time, checker_runner

SECTIONS: Tuple[str, ...] = ("fixes",)
# Fixes in one file, and direct calls in one function, for the fixes section.
FIX_COUNTS = (1000, 2500, 5000, 10000)


def measure(args: argparse.Namespace, corpus: Path) -> Dict[str, Any]:
    log("fixes: --fix/--diff with 1,000 to 10,000 fixes in a file; AGF111 with as many calls in a function")
    return section_fixes([int(count) for count in args.fix_counts.split(",")])


_FIXABLE_CLASS = """
class Legacy{index}(torch.autograd.Function):
    def forward(self, x):
        return x * {index}

    @staticmethod
    def backward(ctx, grad):
        return grad * {index}
"""


def fixable_module(fixes: int) -> str:
    """A file with ``fixes`` certain fixes: each class lacks a ``@staticmethod`` and names its ctx ``self``."""
    return "import torch\n" + "".join(_FIXABLE_CLASS.format(index=index) for index in range(fixes // 2))


def direct_calls_module(calls: int, call: str) -> str:
    """One Function class and one function holding ``calls`` lines of ``call`` (AGF111 each)."""
    body = "".join(f"    x = {call}\n" for _ in range(calls))
    return (
        "import torch\n\n\nclass Fn(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
        "        return x * 2\n\n    @staticmethod\n    def backward(ctx, grad):\n        return grad * 2\n\n\n"
        f"def run(x):\n{body}    return x\n"
    )


def section_fixes(counts: Sequence[int]) -> Dict[str, Any]:
    """Per fix and per call, at each count: a flat row means linear time."""
    fixer: Any = importlib.import_module("flake8_autograd.adapters.command.fixer")
    patch: Any = importlib.import_module("flake8_autograd.adapters.command.patch")
    runner: Any = importlib.import_module("flake8_autograd.adapters.command.runner")
    preview = runner.CheckOptions(preview=True)
    plugin_preview = checker_runner(True)

    def fix_and_diff(text: str) -> int:
        fixed, count, _, _ = fixer.fix_text(text, "generated.py", preview)
        patch.unified_diff("generated.py", text.encode(), fixed.encode())
        return int(count)

    def fix_calls(text: str) -> int:
        return int(fixer.fix_text(text, "generated.py", preview)[1])

    def flake8_calls(text: str) -> int:
        return len(plugin_preview(ast.parse(text), text.splitlines(keepends=True), "generated.py"))

    cases: Dict[str, Tuple[Callable[[int], str], Callable[[str], int]]] = {
        "--fix/--diff, per fix": (fixable_module, fix_and_diff),
        "AGF111 in flake8 (--autograd-preview), per Cls.forward call": (
            lambda count: direct_calls_module(count, "Fn.forward(None, x)"), flake8_calls),
        "AGF111 --fix, per Cls()(x) call": (lambda count: direct_calls_module(count, "Fn()(x)"), fix_calls),
    }
    results: Dict[str, Any] = {"counts": list(counts), "per_unit_us": {}, "flat_factor": {}, "done": {}}
    for name, (make, work) in cases.items():
        work(make(10))  # warm: imports and first-use caches
        per_unit: Dict[str, float] = {}
        for count in counts:
            text = make(count)
            seconds = best_time(lambda: work(text), min_total=0.0, min_reps=1)
            results["done"].setdefault(name, {})[str(count)] = work(text)
            per_unit[str(count)] = seconds / count * 1e6
            log(f"  {name}: {count:,}: {per_unit[str(count)]:.0f} us")
        results["per_unit_us"][name] = per_unit
        results["flat_factor"][name] = max(per_unit.values()) / min(per_unit.values())
    return results


def report_rows(measured: Dict[str, Any]) -> List[Row]:
    fixes = measured.get("fixes")
    if not fixes:
        return []
    rows = []
    for name, table in fixes["per_unit_us"].items():
        factor = fixes["flat_factor"][name]
        cells = ", ".join(f"{int(count):,}: {value:.0f}" for count, value in table.items())
        rows.append(Row(f"7. {name}: µs (count: µs)", f"{cells}; slowest/fastest {factor:.2f}",
                        f"flat (<= {FLAT_FACTOR})", factor <= FLAT_FACTOR))
    return rows


def report_tables(measured: Dict[str, Any]) -> List[str]:
    return []
