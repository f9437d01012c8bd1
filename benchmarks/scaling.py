"""Section "scaling": the plugin's time per class on generated files of 1 to 10,000 Function classes
(inside the plugin virtualenv, with a PNG plot), and, where valgrind is installed, its instructions per
class (counted from the parent). Also the generated modules the memory section reuses."""

from __future__ import annotations

import argparse
import ast
import importlib
import random
import shutil
import statistics
import textwrap
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from benchmarks.common import CHECKOUT, FLAT_FACTOR, Row, Run, Spread, instructions, log, ratios, venv_bin
from benchmarks.inprocess import best_time, checker_runner, parse_floor

SECTIONS: Tuple[str, ...] = ("scaling",)
SIZES = (1, 10, 100, 1000, 10000)
DEFAULT_PLOT = CHECKOUT / "docs" / "performance-scaling.png"


# Generated Function classes: realistic shapes, each a template filled with varied names and arity.
_COMBINED = '''
class {name}(torch.autograd.Function):
    """Scaled {op} of {arity} tensors."""

    @staticmethod
    def forward(ctx, {params}, scale: float = 1.0):
        ctx.scale = scale
        ctx.save_for_backward({params})
        out = {expr}
        return out * scale

    @staticmethod
    def backward(ctx, grad_output):
        {params_unpack} = ctx.saved_tensors
        grads = []
{grads}
        return {grad_list}, None
'''

_SETUP_CONTEXT = '''
class {name}(Function):
    @staticmethod
    def forward({params}):
        result = {expr}
        return result, result.detach()

    @staticmethod
    def setup_context(ctx, inputs, output):
        {params_unpack} = inputs
        result, _ = output
        ctx.save_for_backward({params}, result)
        ctx.mark_non_differentiable(output[1])

    @staticmethod
    def backward(ctx, grad_result, grad_detached):
        {params}, result = ctx.saved_tensors
        grads = []
{grads}
        return {grad_list}
'''

_ONCE_DIFFERENTIABLE = '''
class {name}(autograd.Function):
    @staticmethod
    def forward(ctx, {params}, inplace=False):
        if inplace:
            ctx.mark_dirty({first})
            out = {first}.mul_(2)
        else:
            out = {expr}
        ctx.inplace = inplace
        ctx.shape = {first}.shape
        ctx.save_for_backward({params})
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        {params_unpack} = ctx.saved_tensors
        grad_out = grad_out.reshape(ctx.shape)
        grads = []
{grads}
        return {grad_list}, None
'''

_FORWARD_AD = '''
class {name}(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward({params}):
        return {expr}

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)
        ctx.save_for_forward(*inputs)

    @staticmethod
    def backward(ctx, grad):
        {params_unpack} = ctx.saved_tensors
        grads = []
{grads}
        return {grad_list}

    @staticmethod
    def jvp(ctx, {tangents}):
        {params_unpack} = ctx.saved_tensors
        return {tangent_sum}
'''

# With findings, so the position pass runs: a missing gradient (AGF004) and a missing @staticmethod (AGF001).
_WITH_FINDINGS = '''
class {name}(torch.autograd.Function):
    @staticmethod
    def forward(ctx, {params}):
        ctx.save_for_backward({params})
        return {expr}

    def backward(ctx, grad_output):
        {params_unpack} = ctx.saved_tensors
        return grad_output * {first}
'''

_TEMPLATES = (_COMBINED, _SETUP_CONTEXT, _COMBINED, _ONCE_DIFFERENTIABLE, _SETUP_CONTEXT, _FORWARD_AD, _COMBINED,
              _WITH_FINDINGS)
_OPS = ("sum", "product", "maximum", "blend")

_HEADER = '''"""Generated for the flake8-autograd scaling benchmark."""
import torch
from torch import autograd
from torch.autograd import Function
from torch.autograd.function import once_differentiable

'''


def _class_source(index: int, rng: random.Random) -> str:
    arity = rng.randint(1, 4)
    names = ["x", "weight", "bias", "scale_t"][:arity]
    params = ", ".join(names)
    expr = " + ".join(f"{name}.sin()" if position % 2 else f"{name} * 2" for position, name in enumerate(names))
    grads = "\n".join(
        f"        grad_{name} = None\n"
        f"        if ctx.needs_input_grad[{position}]:\n"
        f"            grad_{name} = grad_output * {name}.cos()\n"
        f"        grads.append(grad_{name})"
        for position, name in enumerate(names)
    )
    grad_list = ", ".join(f"grads[{position}]" for position in range(arity))
    template = _TEMPLATES[index % len(_TEMPLATES)]
    if template is _SETUP_CONTEXT or template is _FORWARD_AD:
        grads = grads.replace("grad_output", "grad_result" if template is _SETUP_CONTEXT else "grad")
    if template is _ONCE_DIFFERENTIABLE:
        grads = grads.replace("grad_output", "grad_out")
    return template.format(
        name=f"Generated{index}Function",
        op=_OPS[index % len(_OPS)],
        arity=arity,
        params=params,
        params_unpack=params + ("," if arity == 1 else ""),
        first=names[0],
        expr=expr,
        grads=grads,
        grad_list=grad_list,
        tangents=", ".join(f"t_{name}" for name in names),
        tangent_sum=" + ".join(f"t_{name}" for name in names),
    )


def generated_module(classes: int, seed: int = 0) -> str:
    """A module of ``classes`` varied Function classes, each used once through ``.apply``."""
    rng = random.Random(seed)
    parts = [_HEADER]
    for index in range(classes):
        parts.append(_class_source(index, rng))
        parts.append(f"\n\ndef use_{index}(*args):\n    return Generated{index}Function.apply(*args)\n\n")
    return "".join(parts)


def generated_plain_module(classes: int, seed: int = 0) -> str:
    """A large module of ordinary classes; it mentions Function, so the text prefilter lets it through."""
    rng = random.Random(seed)
    parts = [_HEADER.replace("Function", "Function  # noqa: F401")]
    for index in range(classes):
        width = rng.randint(8, 64)
        parts.append(
            textwrap.dedent(
                f'''
                class Block{index}(torch.nn.Module):
                    """A plain module; not an autograd Function."""

                    def __init__(self, width={width}):
                        super().__init__()
                        self.linear = torch.nn.Linear(width, width)
                        self.scale = {index % 7 + 1}

                    def forward(self, x):
                        y = self.linear(x) * self.scale
                        if y.dim() > 1:
                            y = y.sum(dim=-1)
                        return torch.relu(y)

                '''
            )
        )
    return "".join(parts)


def scaling_rounds(rounds: int, size: int) -> int:
    """Fewer rounds for the big files, which take seconds each: 5 rounds up to 400 classes, 1 at 10,000."""
    return max(1, min(rounds, 2000 // size))


def section_scaling(rounds: int, sizes: Sequence[int], plot: Optional[Path]) -> Dict[str, Any]:
    runners = {"default": checker_runner(False), "preview": checker_runner(True)}
    results: Dict[str, Any] = {"sizes": list(sizes), "per_class_us": {}, "parse_per_class_us": {}}
    warm = generated_module(8)
    warm_tree = ast.parse(warm)
    for runner in runners.values():
        runner(warm_tree, warm.splitlines(keepends=True), "warm.py")
    parse_floor(warm)
    per_class: Dict[str, Dict[int, List[float]]] = {"default": {}, "preview": {}, "parse": {}}
    findings: Dict[int, int] = {}
    for size in sizes:
        text = generated_module(size)
        tree = ast.parse(text)
        lines = text.splitlines(keepends=True)
        findings[size] = len(runners["default"](tree, lines, "generated.py"))
        for variant in per_class:
            per_class[variant][size] = []
        for index in range(scaling_rounds(rounds, size)):
            steps: List[Tuple[str, Callable[[], Any]]] = [
                ("default", lambda: runners["default"](tree, lines, "generated.py")),
                ("preview", lambda: runners["preview"](tree, lines, "generated.py")),
                ("parse", lambda: parse_floor(text)),
            ]
            shift = index % len(steps)
            for name, step in steps[shift:] + steps[:shift]:
                seconds = best_time(step, min_reps=1 if size >= 1000 else 3)
                per_class[name][size].append(seconds / size * 1e6)
        log(
            f"  {size} classes ({len(lines)} lines): "
            + ", ".join(f"{name} {statistics.median(per_class[name][size]):.0f} us/class" for name in per_class)
        )
    for name, table in per_class.items():
        results["per_class_us"][name] = {str(size): Spread(values).as_json() for size, values in table.items()}
    results["findings"] = findings
    flat: Dict[str, float] = {}
    for variant in ("default", "preview"):
        medians = [statistics.median(per_class[variant][size]) for size in sizes if size >= 10]
        flat[variant] = max(medians) / min(medians) if medians else float("nan")
    results["flat_factor"] = flat

    plain_classes = max(sizes)
    plain = generated_plain_module(plain_classes)
    plain_lines = plain.splitlines(keepends=True)
    plain_tree = ast.parse(plain)
    ours = [best_time(lambda: runners["default"](plain_tree, plain_lines, "plain.py")) for _ in range(rounds)]
    flake8_parse = [best_time(lambda: ast.parse(plain)) for _ in range(rounds)]
    results["plain"] = {
        "lines": len(plain_lines),
        "plugin_ms": Spread([value * 1e3 for value in ours]).as_json(),
        "ast_parse_ms": Spread([value * 1e3 for value in flake8_parse]).as_json(),
        "share_of_ast_parse": ratios(ours, flake8_parse).as_json(),
    }
    log(f"  plain file of {len(plain_lines)} lines: plugin {statistics.median(ours) * 1e3:.1f} ms")
    if plot is not None:
        draw_plot(results, plot)
        results["plot"] = str(plot)
    return results


def draw_plot(results: Dict[str, Any], path: Path) -> None:
    try:
        matplotlib: Any = importlib.import_module("matplotlib")
    except ImportError:
        log("matplotlib is not installed (pip install -e '.[bench]'): no plot")
        return
    matplotlib.use("Agg")
    pyplot: Any = importlib.import_module("matplotlib.pyplot")
    sizes = results["sizes"]
    figure, axes = pyplot.subplots(figsize=(7, 4.2), dpi=120)
    styles = {
        "default": ("flake8-autograd (default rules)", "o-", "C0"),
        "preview": ("flake8-autograd (--autograd-preview)", "s-", "C1"),
        "parse": ("libcst.parse_module of the file (floor)", "^--", "C7"),
    }
    for variant, (label, marker, color) in styles.items():
        table = results["per_class_us"][variant]
        medians = [table[str(size)]["median"] for size in sizes]
        lows = [table[str(size)]["median"] - table[str(size)]["min"] for size in sizes]
        highs = [table[str(size)]["max"] - table[str(size)]["median"] for size in sizes]
        axes.errorbar(sizes, medians, yerr=[lows, highs], fmt=marker, color=color, label=label, capsize=3)
    axes.set_xscale("log")
    axes.set_xticks(sizes)
    axes.set_xticklabels([f"{size:,}" for size in sizes])
    axes.set_ylim(bottom=0)
    axes.set_xlabel("Function classes in the file")
    axes.set_ylabel("time per class (µs)")
    axes.set_title("flake8-autograd: time per class vs classes per file")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8, loc="lower right")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    pyplot.close(figure)
    log(f"  plot written to {path}")


def measure(args: argparse.Namespace, corpus: Path) -> Dict[str, Any]:
    log("scaling: generated files of 1 to 10,000 Function classes")
    sizes = [int(size) for size in args.sizes.split(",")]
    return section_scaling(args.rounds, sizes, Path(args.plot) if args.plot else None)


# One generated module checked once (argv: classes, "check" or "skip"): the plugin's work on it is the
# difference between the two runs' instructions; both import the whole engine, so its import cancels out.
_SCALING_PROBE = r"""
import ast, importlib, sys
sys.path.insert(0, sys.argv[3])
from benchmarks.inprocess import checker_runner
from benchmarks.scaling import generated_module
importlib.import_module("flake8_autograd.checking.class_checks")
source = generated_module(int(sys.argv[1]))
lines = source.splitlines(keepends=True)
tree = ast.parse(source)
run = checker_runner(False)
if sys.argv[2] == "check":
    run(tree, lines, "generated.py")
"""


def scaling_instructions(plugin: Path, sizes: Sequence[int], cwd: Path) -> Dict[str, float]:
    """Instructions per class the plugin executes on generated files of each size (deterministic, so
    any growth per class is the code's, not the machine's)."""
    commands = {
        f"{size} {action}": [str(venv_bin(plugin, "python")), "-c", _SCALING_PROBE, str(size), action, str(CHECKOUT)]
        for size in sizes
        for action in ("check", "skip")
    }
    counts = instructions(commands, cwd)
    return {str(size): (counts[f"{size} check"] - counts[f"{size} skip"]) / size for size in sizes}


def measure_instructions(run: Run) -> None:
    """The instructions per class, from the parent: valgrind runs outside the plugin virtualenv."""
    if shutil.which("valgrind") is None:
        return
    args, sizes, rows, data = run.args, run.sizes, run.rows, run.data
    counted = [size for size in sizes if 10 <= size <= min(args.max_classes, 1000)]
    log(f"scaling in instructions executed (valgrind): {', '.join(map(str, counted))} classes")
    per_class = scaling_instructions(run.plugin, counted, run.workdir)
    data["scaling_instructions"] = per_class
    factor = max(per_class.values()) / min(per_class.values())
    rows.append(
        Row(
            "3. scaling in instructions executed (valgrind): millions per class (classes: M)",
            ", ".join(f"{int(size):,}: {value / 1e6:.1f}" for size, value in per_class.items())
            + f"; largest/smallest {factor:.2f}",
            f"flat (<= {FLAT_FACTOR})",
            factor <= FLAT_FACTOR,
        )
    )


def report_rows(measured: Dict[str, Any]) -> List[Row]:
    scaling = measured.get("scaling")
    if not scaling:
        return []
    rows: List[Row] = []
    for variant, label in (("default", ""), ("preview", ", --autograd-preview")):
        table = scaling["per_class_us"][variant]
        cells = ", ".join(
            f"{int(size):,}: {table[str(size)]['median']:.0f}" for size in scaling["sizes"]
        )
        factor = scaling["flat_factor"][variant]
        rows.append(
            Row(
                f"3. scaling{label}: µs per class (classes: µs)",
                f"{cells}; slowest/fastest from 10 up {factor:.2f}",
                f"flat (<= {FLAT_FACTOR})",
                factor <= FLAT_FACTOR,
            )
        )
    plain = scaling["plain"]
    rows.append(
        Row(
            f"3. {plain['lines']:,}-line file without Function classes: plugin time / ast.parse",
            f"{plain['plugin_ms']['median']:.1f} ms = "
            + Spread(plain["share_of_ast_parse"]["values"]).ratio_text(),
        )
    )
    return rows


def report_tables(measured: Dict[str, Any]) -> List[str]:
    return []
