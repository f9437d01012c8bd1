"""What the sections measured inside the plugin virtualenv share: the plugin called as flake8 calls it,
the parse floor it is compared with, timers, and the corpus files that hold Function classes."""

from __future__ import annotations

import argparse
import ast
import gc
import importlib
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, List

from benchmarks.common import readable_sources

# A file counts as Function-dense when at least this share of its lines are inside Function classes.
DENSE_SHARE = 0.5


def checker_runner(preview: bool) -> Callable[[ast.Module, List[str], str], List[Any]]:
    """The plugin's entry point as flake8 calls it: options parsed once, then one checker per file."""
    plugin = importlib.import_module("flake8_autograd.adapters.flake8_plugin")
    checker_class: Any = plugin.AutogradChecker

    options = argparse.Namespace(autograd_preview=preview, autograd_function_bases=[])

    def run(tree: ast.Module, lines: List[str], filename: str) -> List[Any]:
        checker_class.parse_options(options)
        return list(checker_class(tree, lines, filename).run())

    return run


def parse_floor(text: str) -> Any:
    libcst: Any = importlib.import_module("libcst")
    return libcst.parse_module(text)


def timed(function: Callable[[], Any]) -> float:
    gc.collect()
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def best_time(function: Callable[[], Any], min_total: float = 0.3, min_reps: int = 3) -> float:
    """Median over enough repetitions that small inputs are not measured on one noisy call."""
    values: List[float] = []
    total = 0.0
    while len(values) < min_reps or total < min_total:
        value = timed(function)
        values.append(value)
        total += value
        if len(values) >= 200:
            break
    return statistics.median(values)


@dataclass
class FunctionFile:
    path: Path
    text: str
    lines: List[str]
    tree: ast.Module
    classes: int
    share: float  # share of the file's lines inside Function classes

    @property
    def dense(self) -> bool:
        return self.share >= DENSE_SHARE


def function_files(corpus: Path) -> List[FunctionFile]:
    """Files of the corpus holding Function classes, found with the plugin's own discovery."""
    discovery: Any = importlib.import_module("flake8_autograd.engine.discovery.functions")
    found: List[FunctionFile] = []
    for path, text in readable_sources(corpus):
        if "Function" not in text:
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        sites = discovery.Discovery(tree, str(path)).function_classes
        if not sites:
            continue
        lines = text.splitlines(keepends=True)
        covered: set[int] = set()
        for site in sites:
            node = site.node
            first = min([node.lineno] + [decorator.lineno for decorator in node.decorator_list])
            covered.update(range(first, (node.end_lineno or node.lineno) + 1))
        found.append(FunctionFile(path, text, lines, tree, len(sites), len(covered) / max(len(lines), 1)))
    return found
