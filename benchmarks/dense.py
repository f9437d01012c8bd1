"""Section "dense": the plugin's own work on the corpus files that hold Function classes, against
``libcst.parse_module`` of the same file (the parse floor). Runs inside the plugin virtualenv."""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from benchmarks.common import CHECKOUT, Row, Spread, child_env, instructions, log, ratios
from benchmarks.inprocess import DENSE_SHARE, FunctionFile, checker_runner, function_files, parse_floor, timed

SECTIONS: Tuple[str, ...] = ("dense",)
TARGET_DENSE = 1.5


def measure(args: argparse.Namespace, corpus: Path) -> Dict[str, Any]:
    log("dense: the plugin's per-file work vs libcst.parse_module of the file")
    measured = section_dense(corpus, args.rounds)
    # Six runs under valgrind take minutes: not in a smoke run.
    measured["instructions"] = None if getattr(args, "quick", False) else dense_instructions(corpus)
    return measured


def dense_instructions(corpus: Path) -> Optional[Dict[str, int]]:
    """Instructions executed (valgrind) by one run over the Function-dense files of each of the parse, the
    plugin by default and with preview: what a change costs, free of the load of a shared machine. Each is
    the difference between three runs and one in a process that has read the files and run each step once,
    so that imports and start-up cancel out; string hashing is fixed, so that the count repeats."""
    if shutil.which("valgrind") is None:
        return None
    log("dense: the same in instructions executed (valgrind), three steps side by side, run 1 and 3 times")
    env = {**child_env(), "PYTHONHASHSEED": "0"}
    commands = {
        f"{step} {repeats}": [sys.executable, "-m", "benchmarks.dense", "--count", step, str(repeats), str(corpus)]
        for step in ("parse", "default", "preview")
        for repeats in (1, 3)
    }
    counts = instructions(commands, CHECKOUT, env)
    return {step: (counts[f"{step} 3"] - counts[f"{step} 1"]) // 2 for step in ("parse", "default", "preview")}


def _count_main(step: str, repeats: int, corpus: Path) -> None:
    """What ``dense_instructions`` runs under valgrind: ``step`` over the Function-dense files, ``repeats``
    times after one warm-up."""
    files = [item for item in function_files(corpus) if item.dense]
    runner = checker_runner(step == "preview")
    for item in files:
        runner(item.tree, item.lines, str(item.path))
        parse_floor(item.text)
    for _ in range(repeats):
        for item in files:
            if step == "parse":
                parse_floor(item.text)
            else:
                runner(item.tree, item.lines, str(item.path))


def section_dense(corpus: Path, rounds: int) -> Dict[str, Any]:
    files = function_files(corpus)
    log(f"dense: {len(files)} files hold Function classes ({sum(f.dense for f in files)} Function-dense)")
    runners = {"default": checker_runner(False), "preview": checker_runner(True)}
    for item in files:  # warm-up: imports, caches, first parse
        for runner in runners.values():
            runner(item.tree, item.lines, str(item.path))
        parse_floor(item.text)
    per_file: Dict[str, Dict[str, List[float]]] = {
        str(item.path): {"default": [], "preview": [], "parse": []} for item in files
    }
    for index in range(rounds):
        for item in files:
            timings = per_file[str(item.path)]
            steps: List[Tuple[str, Callable[[], Any]]] = [
                ("parse", lambda: parse_floor(item.text)),
                ("default", lambda: runners["default"](item.tree, item.lines, str(item.path))),
                ("preview", lambda: runners["preview"](item.tree, item.lines, str(item.path))),
            ]
            shift = index % len(steps)
            for name, step in steps[shift:] + steps[:shift]:
                timings[name].append(timed(step))
        log(f"  round {index + 1}/{rounds}")

    def aggregate(subset: List[FunctionFile], variant: str) -> Spread:
        values = []
        for index in range(rounds):
            ours = sum(per_file[str(item.path)][variant][index] for item in subset)
            floor = sum(per_file[str(item.path)]["parse"][index] for item in subset)
            values.append(ours / floor)
        return Spread(values)

    dense = [item for item in files if item.dense]
    table: List[Dict[str, Any]] = []
    for item in files:
        timings = per_file[str(item.path)]
        table.append(
            {
                "file": item.path.relative_to(corpus).as_posix(),
                "lines": len(item.lines),
                "classes": item.classes,
                "share": item.share,
                "parse_ms": statistics.median(timings["parse"]) * 1e3,
                "default_ms": statistics.median(timings["default"]) * 1e3,
                "preview_ms": statistics.median(timings["preview"]) * 1e3,
                "default_ratio": ratios(timings["default"], timings["parse"]).median,
                "preview_ratio": ratios(timings["preview"], timings["parse"]).median,
            }
        )
    table.sort(key=lambda row: -float(row["share"]))
    return {
        "files": len(files),
        "dense_files": len(dense),
        "all_default": aggregate(files, "default").as_json(),
        "all_preview": aggregate(files, "preview").as_json(),
        "dense_default": aggregate(dense, "default").as_json() if dense else None,
        "dense_preview": aggregate(dense, "preview").as_json() if dense else None,
        "table": table,
    }


def report_rows(measured: Dict[str, Any]) -> List[Row]:
    dense = measured.get("dense")
    if not dense:
        return []
    rows: List[Row] = []
    for variant, label in (("default", ""), ("preview", ", --autograd-preview")):
        if dense[f"dense_{variant}"] is not None:
            spread = Spread(dense[f"dense_{variant}"]["values"])
            rows.append(
                Row(
                    f"2. Function-dense files ({dense['dense_files']}){label}: plugin / libcst.parse_module",
                    spread.ratio_text(),
                    f"<= {TARGET_DENSE}",
                    spread.median <= TARGET_DENSE,
                )
            )
        worst = max(
            (row for row in dense["table"] if row["share"] >= DENSE_SHARE),
            key=lambda row: float(row[f"{variant}_ratio"]),
            default=None,
        )
        if worst is not None:
            rows.append(
                Row(
                    f"2. worst Function-dense file{label}: {worst['file']}",
                    f"{worst[f'{variant}_ratio']:.2f}x",
                )
            )
        spread = Spread(dense[f"all_{variant}"]["values"])
        rows.append(
            Row(f"2. all {dense['files']} files with Function classes{label}: plugin / parse", spread.ratio_text())
        )
    counted = dense.get("instructions")
    if counted:
        rows.append(
            Row(
                f"2. Function-dense files in instructions (valgrind), plugin / parse ({counted['parse'] / 1e6:,.0f} M)",
                f"{counted['default'] / counted['parse']:.3f}x; preview {counted['preview'] / counted['parse']:.3f}x",
            )
        )
    return rows


def report_tables(measured: Dict[str, Any]) -> List[str]:
    """The per-file table printed after the summary."""
    return [dense_table(measured["dense"])] if "dense" in measured else []


def dense_table(dense: Dict[str, Any]) -> str:
    lines = [
        "| file | lines | classes | share in classes | parse ms | plugin ms | ratio | preview ms | ratio |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in dense["table"]:
        if row["share"] < DENSE_SHARE:
            continue
        lines.append(
            f"| {row['file']} | {row['lines']} | {row['classes']} | {row['share']:.0%} | {row['parse_ms']:.1f} "
            f"| {row['default_ms']:.1f} | {row['default_ratio']:.2f} | {row['preview_ms']:.1f} "
            f"| {row['preview_ratio']:.2f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":  # the counted runs of dense_instructions
    if len(sys.argv) == 5 and sys.argv[1] == "--count":
        _count_main(sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]))
