"""Section "growth": the cost per unit on generated inputs that grow in one direction (tensors one forward
keeps on ctx, Function classes in a module, custom ops in a module, returns of one backward), each from 10
units to 1,000, through flake8 with --autograd-preview and through the command (its check, which works out
each finding's fix, and --diff). Flat time per unit means linear cost. Runs inside the plugin virtualenv.

Times are the process's CPU time (the machines are shared). A run past the time budget (wall clock) is
stopped there, and so are the larger sizes of that input and run, which the table says: a super-linear
case must not hold the benchmark for hours.
"""

from __future__ import annotations

import argparse
import ast
import gc
import importlib
import signal
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from benchmarks.common import FLAT_FACTOR, Row, log
from benchmarks.inprocess import checker_runner

SECTIONS: Tuple[str, ...] = ("growth",)
GROWTH_SIZES = (10, 30, 100, 300, 1000)
QUICK_GROWTH_SIZES = (10, 30, 100, 300)
# Seconds one run of one size may take (--quick: QUICK_GROWTH_BUDGET); a size whose run would take longer even
# at linear cost from the size before is not started.
BUDGET = 60.0
QUICK_GROWTH_BUDGET = 15.0
_HEADER = '"""Generated for the flake8-autograd growth benchmark."""\nimport torch\n'


# -- the generated inputs -------------------------------------------------------------------------------
def stores_module(count: int) -> str:
    """One forward keeps ``count`` input tensors on ctx (AGF003 each, merged into one fixable
    ``save_for_backward``), and backward reads each of them once."""
    params = ", ".join(f"part{index}: torch.Tensor" for index in range(count))
    stores = "".join(f"        ctx.part{index} = part{index}\n" for index in range(count))
    grads = "".join(f"            grad * ctx.part{index},\n" for index in range(count))
    return _HEADER + (
        "\n\nclass KeepParts(torch.autograd.Function):\n"
        f"    @staticmethod\n    def forward(ctx, {params}):\n{stores}        return part0 * 2\n\n"
        f"    @staticmethod\n    def backward(ctx, grad):\n        return (\n{grads}        )\n"
    )


_LEGACY_CLASS = '''

class Legacy{index}(torch.autograd.Function):
    def forward(this, x: torch.Tensor, weight: torch.Tensor):
        this.weight = weight
        return x * weight * {index}

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.weight * {index}, None


def legacy{index}(x, weight):
    return Legacy{index}.apply(x, weight)
'''


def classes_module(count: int) -> str:
    """``count`` Function classes, each used through ``.apply``, each with three fixable findings: no
    ``@staticmethod`` on forward (AGF001), its ctx named ``this`` (AGF002), a tensor on ctx (AGF003)."""
    return _HEADER + "".join(_LEGACY_CLASS.format(index=index) for index in range(count))


_CUSTOM_OP = '''

@torch.library.custom_op("growth::scaled{index}", mutates_args=())
def scaled{index}(x: torch.Tensor, weight: torch.Tensor, factor: float) -> torch.Tensor:
    return x * weight * factor


def scaled{index}_setup(ctx, inputs, output):
    x, weight, factor = inputs
    ctx.save_for_backward(x, weight)
    ctx.factor = factor


def scaled{index}_backward(ctx, grad):
    x, weight = ctx.saved_tensors
    return grad * weight * ctx.factor, grad * x * ctx.factor, None


scaled{index}.register_autograd(scaled{index}_backward, setup_context=scaled{index}_setup)
'''


def ops_module(count: int) -> str:
    """``count`` custom ops, each with a setup_context and a backward given to ``register_autograd``."""
    return _HEADER + "".join(_CUSTOM_OP.format(index=index) for index in range(count))


def returns_module(count: int) -> str:
    """One backward with ``count`` returns, each a list (AGF116) one gradient short (AGF004), both fixable."""
    branches = "".join(
        f"        if ctx.branch == {index}:\n            return [grad * {index + 2}]\n" for index in range(count)
    )
    return _HEADER + (
        "\n\nclass Branches(torch.autograd.Function):\n"
        "    @staticmethod\n    def forward(ctx, x, branch: int):\n"
        "        ctx.branch = branch\n        return x * 2\n\n"
        f"    @staticmethod\n    def backward(ctx, grad):\n{branches}        return [grad]\n"
    )


@dataclass(frozen=True)
class Shape:
    label: str  # what grows, per unit
    make: Callable[[int], str]
    runs: Tuple[str, ...]


SHAPES: Dict[str, Shape] = {
    "stores": Shape("tensors kept on ctx by one forward (AGF003)", stores_module, ("flake8", "check", "diff")),
    "classes": Shape("Function classes in a module (AGF001-AGF003)", classes_module, ("flake8", "diff")),
    "ops": Shape("custom ops with register_autograd in a module", ops_module, ("flake8",)),
    "returns": Shape("returns of one backward (AGF004, AGF116)", returns_module, ("flake8", "check", "diff")),
}
RUN_LABELS = {
    "flake8": "flake8 --autograd-preview",
    "check": "flake8-autograd --preview",
    "diff": "flake8-autograd --preview --diff --unsafe-fixes",
}


# -- the runs -----------------------------------------------------------------------------------------
def runners() -> Dict[str, Callable[[str, ast.Module], int]]:
    """Each run on a generated text (and its ``ast`` tree, which flake8 makes before it calls the plugin,
    so not timed), called as flake8 and the command call the engine; each gives how many findings (for
    --diff, fixes) it made, so that a run that finds nothing stands out."""
    runner: Any = importlib.import_module("flake8_autograd.adapters.command.runner")
    fixer: Any = importlib.import_module("flake8_autograd.adapters.command.fixer")
    patch: Any = importlib.import_module("flake8_autograd.adapters.command.patch")
    options = runner.CheckOptions(preview=True)
    every_fix = runner.CheckOptions(preview=True, unsafe_fixes=True)  # AGF003's fix is unsafe: apply it too
    plugin = checker_runner(True)

    def flake8(text: str, tree: ast.Module) -> int:
        return len(plugin(tree, text.splitlines(keepends=True), "generated.py"))

    def check(text: str, tree: ast.Module) -> int:
        return len(runner.check_source(text.encode(), "generated.py", options).reports)

    def diff(text: str, tree: ast.Module) -> int:
        fixed = fixer.fix_source(text.encode(), "generated.py", every_fix)
        patch.unified_diff("generated.py", fixed.before, fixed.after)
        return int(fixed.fixed)

    return {"flake8": flake8, "check": check, "diff": diff}


class OverBudget(BaseException):
    """Raised by the timer into a run past its budget (not an Exception: the engine catches those)."""


def _interrupt(signum: int, frame: Any) -> None:
    raise OverBudget


def cpu_seconds(work: Callable[[], Any], min_total: float = 0.2) -> float:
    """The CPU time of the process while ``work`` runs, the median of enough repetitions for short runs. The
    machines these figures come from are shared: their load moves the wall clock of a run far more than
    its CPU time, and the runs here use one thread."""
    values: List[float] = []
    while sum(values) < min_total and len(values) < 200:
        gc.collect()
        start = time.process_time()
        work()
        values.append(time.process_time() - start)
    return statistics.median(values)


def within(budget: float, work: Callable[[], Any]) -> Optional[float]:
    """:func:`cpu_seconds` of ``work``, or None when the run went past ``budget`` seconds of the wall clock
    and was stopped (where the platform has no interval timer, never)."""
    if not hasattr(signal, "setitimer"):
        return cpu_seconds(work)
    previous = signal.signal(signal.SIGALRM, _interrupt)
    try:
        try:
            # Again every tenth of a second: an interruption that lands where Python swallows exceptions
            # (a finalizer, a weakref callback) is not the last.
            signal.setitimer(signal.ITIMER_REAL, budget, 0.1)
            return cpu_seconds(work)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except OverBudget:
        return None
    finally:
        signal.signal(signal.SIGALRM, previous)


def measure(args: argparse.Namespace, corpus: Path) -> Dict[str, Any]:
    sizes = [int(size) for size in (args.growth_sizes or ",".join(map(str, GROWTH_SIZES))).split(",")]
    budget = args.growth_budget or BUDGET
    log(f"growth: generated inputs of {', '.join(map(str, sizes))} units, budget {budget:g} s a run")
    return section_growth(sizes, budget)


def section_growth(sizes: Sequence[int], budget: float, shapes: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """CPU seconds per run at each size, for each shape and run; where a size was not measured, why."""
    run_on = runners()
    results: Dict[str, Any] = {"sizes": list(sizes), "budget": budget, "shapes": {}}
    for name in shapes or list(SHAPES):
        shape = SHAPES[name]
        entry: Dict[str, Any] = {"label": shape.label, "runs": {}}
        for run in shape.runs:
            work = run_on[run]
            warm = shape.make(2)
            work(warm, ast.parse(warm))  # imports and first-use caches
            seconds: Dict[str, float] = {}
            done: Dict[str, int] = {}
            stopped = ""
            for size in sizes:
                if seconds:
                    last = max(seconds, key=int)
                    if seconds[last] * size / int(last) > budget:
                        stopped = f"{size:,} and up not run: linear from {int(last):,} would pass {budget:g} s"
                        break
                text = shape.make(size)
                tree = ast.parse(text)
                taken = within(budget, lambda: done.__setitem__(str(size), work(text, tree)))
                if taken is None:
                    stopped = f"{size:,} and up not run: {size:,} passed {budget:g} s and was stopped"
                    break
                seconds[str(size)] = taken
                log(f"  {name} {run} {size:,}: {taken:.3f} s, {taken / size * 1e3:.2f} ms per unit")
            entry["runs"][run] = {"seconds": seconds, "found": done, "stopped": stopped}
            if stopped:
                log(f"  {name} {run}: {stopped}")
        results["shapes"][name] = entry
    return results


def growth_ratio(seconds: Dict[str, float]) -> Optional[float]:
    """Time per unit at the largest size measured over that at the smallest: 1 for linear cost."""
    if len(seconds) < 2:
        return None
    smallest, largest = min(seconds, key=int), max(seconds, key=int)
    return (seconds[largest] / int(largest)) / (seconds[smallest] / int(smallest))


def _each_run(measured: Dict[str, Any]) -> Iterator[Tuple[str, str, Dict[str, Any]]]:
    for entry in measured["shapes"].values():
        for run, table in entry["runs"].items():
            yield entry["label"], run, table


def report_rows(measured: Dict[str, Any]) -> List[Row]:
    growth = measured.get("growth")
    if not growth:
        return []
    rows: List[Row] = []
    for label, run, table in _each_run(growth):
        seconds = table["seconds"]
        ratio = growth_ratio(seconds)
        cells = ", ".join(f"{int(size):,}: {value / int(size) * 1e3:.2f}" for size, value in seconds.items())
        verdict = f"; largest/smallest {ratio:.2f}" if ratio is not None else ""
        stopped = f" ({table['stopped']})" if table["stopped"] else ""
        rows.append(Row(
            f"9. growth, {label}, `{RUN_LABELS[run]}`: CPU ms per unit (units: ms)", f"{cells}{verdict}{stopped}",
            f"flat (<= {FLAT_FACTOR})", ratio is not None and ratio <= FLAT_FACTOR and not table["stopped"],
        ))
    return rows


def growth_table(growth: Dict[str, Any]) -> str:
    """One line per size measured: the seconds, the time per unit, and for each run the growth ratio."""
    lines = [
        f"Generated inputs: cost per unit (budget {growth['budget']:g} s a run)",
        "",
        "| input (per unit) | run | units | CPU seconds | ms per unit | growth (largest / smallest per unit) |",
        "|---|---|---|---|---|---|",
    ]
    for label, run, table in _each_run(growth):
        seconds = table["seconds"]
        ratio = growth_ratio(seconds)
        for position, (size, value) in enumerate(seconds.items()):
            last = position == len(seconds) - 1
            growth_cell = f"{ratio:.2f}" if last and ratio is not None else ""
            lines.append(
                f"| {label if position == 0 else ''} | {f'`{RUN_LABELS[run]}`' if position == 0 else ''} "
                f"| {int(size):,} | {value:.3f} | {value / int(size) * 1e3:.3f} | {growth_cell} |"
            )
        if table["stopped"]:
            lines.append(f"| | | {table['stopped']} | | | |")
    return "\n".join(lines)


def report_tables(measured: Dict[str, Any]) -> List[str]:
    growth = measured.get("growth")
    return [growth_table(growth)] if growth else []
