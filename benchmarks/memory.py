"""Section "memory": the plugin's peak (tracemalloc) while checking a file, against the size of the
file's libcst tree, on the Function-dense files of the corpus and a generated one. Runs inside the
plugin virtualenv."""

from __future__ import annotations

import argparse
import ast
import gc
import tracemalloc
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

from benchmarks.common import Row, log
from benchmarks.inprocess import checker_runner, function_files, parse_floor
from benchmarks.scaling import generated_module

SECTIONS: Tuple[str, ...] = ("memory",)
TARGET_MEMORY = 2.0


def measure(args: argparse.Namespace, corpus: Path) -> Dict[str, Any]:
    log("memory: tracemalloc peak while checking vs the libcst tree")
    largest = max(int(size) for size in args.sizes.split(","))
    return section_memory(corpus, min(1000, largest))


def traced_peak(function: Callable[[], Any]) -> Tuple[int, int, Any]:
    """(peak, still allocated at the end) bytes traced while ``function`` runs, and its result."""
    gc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    result = function()
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak, current, result


def section_memory(corpus: Path, generated_classes: int) -> Dict[str, Any]:
    runner = checker_runner(False)
    preview = checker_runner(True)
    files = [item for item in function_files(corpus) if item.dense]
    generated = generated_module(generated_classes)
    generated_tree = ast.parse(generated)
    samples: List[Tuple[str, str, List[str], ast.Module]] = [
        (item.path.relative_to(corpus).as_posix(), item.text, item.lines, item.tree) for item in files
    ]
    label = f"generated, {generated_classes:,} classes"
    samples.append((label, generated, generated.splitlines(keepends=True), generated_tree))
    rows = []
    for name, text, lines, tree in samples:
        runner(tree, lines, name)  # warm-up outside the trace
        parse_floor(text)
        ours, _, _ = traced_peak(lambda: runner(tree, lines, name))
        ours_preview, _, _ = traced_peak(lambda: preview(tree, lines, name))
        parse_peak, tree_size, module = traced_peak(lambda: parse_floor(text))
        del module
        rows.append(
            {
                "file": name,
                "plugin_peak_kib": ours / 1024,
                "plugin_preview_peak_kib": ours_preview / 1024,
                "tree_kib": tree_size / 1024,
                "parse_peak_kib": parse_peak / 1024,
                "ratio": ours / tree_size,
                "preview_ratio": ours_preview / tree_size,
            }
        )
        log(f"  {name}: plugin peak {ours / 1024:.0f} KiB, libcst tree {tree_size / 1024:.0f} KiB")
    return {"rows": rows}


def report_rows(measured: Dict[str, Any]) -> List[Row]:
    memory = measured.get("memory")
    if not memory:
        return []
    rows: List[Row] = []
    worst = max(memory["rows"], key=lambda row: float(row["ratio"]))
    rows.append(
        Row(
            f"6. peak memory / libcst tree, worst of {len(memory['rows'])} files ({worst['file']})",
            f"{worst['ratio']:.2f}x",
            f"<= {TARGET_MEMORY}",
            worst["ratio"] <= TARGET_MEMORY,
        )
    )
    return rows


def report_tables(measured: Dict[str, Any]) -> List[str]:
    """The per-file table printed after the summary."""
    return [memory_table(measured["memory"])] if "memory" in measured else []


def memory_table(memory: Dict[str, Any]) -> str:
    lines = [
        "| file | libcst tree KiB | plugin peak KiB | ratio | preview peak KiB | ratio |",
        "|---|---|---|---|---|---|",
    ]
    for row in memory["rows"]:
        lines.append(
            f"| {row['file']} | {row['tree_kib']:.0f} | {row['plugin_peak_kib']:.0f} | {row['ratio']:.2f} "
            f"| {row['plugin_preview_peak_kib']:.0f} | {row['preview_ratio']:.2f} |"
        )
    return "\n".join(lines)
