"""Sections measured with flake8 (or the command) as users run it, from the parent process: "overhead",
"instructions", "startup", "torchfix" and "command"."""

from __future__ import annotations

import ast
import json
import re
import shutil
import statistics
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

from benchmarks.common import (
    Row,
    Run,
    Spread,
    alternate,
    child_env,
    instructions,
    log,
    plugin_listed,
    python_files,
    ratios,
    readable_sources,
    venv_bin,
    versions_in,
)
from benchmarks.kernels import attention_module

SECTIONS: Tuple[str, ...] = ("overhead", "instructions", "startup", "torchfix", "command")
TARGET_OVERHEAD = 1.03
# One Function-dense file checked on save: the plugin adds at most 30 % to flake8's latency.
TARGET_EDITOR = 1.3
# One process, and no configuration file read: every flake8 row runs flake8 so.
ONE_JOB = ["--isolated", "-j", "1"]


def measure(run: Run, sections: Sequence[str]) -> None:
    """The wanted sections, in the order they have always run (TorchFix's virtualenv is built last)."""
    for name, section in (
        ("overhead", measure_overhead),
        ("instructions", measure_instructions),
        ("startup", measure_startup),
        ("command", measure_command),
        ("torchfix", measure_torchfix),
    ):
        if name in sections:
            section(run)


def measure_overhead(run: Run) -> None:
    """``flake8 -j 1`` over the corpus with the plugin installed vs without it, in wall and CPU time, and
    accounted from within flake8."""
    args, rows, data, workdir, base, plugin = run.args, run.rows, run.data, run.workdir, run.base, run.plugin
    targets = flake8_targets(run.corpus, args.sample)
    corpus_name, base_flake8 = run.corpus_name, str(venv_bin(base, "flake8"))
    label = sample_label(args.sample, len(targets))
    log(f"overhead: flake8 -j 1 over {corpus_name}, {label}, {args.rounds} rounds")
    cpu: Dict[str, List[float]] = {}
    times = alternate(
        {"flake8": [base_flake8, *ONE_JOB, *targets],
         "flake8 + flake8-autograd": [str(venv_bin(plugin, "flake8")), *ONE_JOB, *targets]},
        args.rounds,
        workdir,
        cpu,
    )
    data["overhead"] = {name: Spread(values).as_json() for name, values in times.items()}
    data["overhead_cpu"] = {name: Spread(values).as_json() for name, values in cpu.items()}
    rows.append(Row(f"flake8 -j 1 without the plugin, {label} (wall)", Spread(times["flake8"]).seconds_text()))
    spread = ratios(times["flake8 + flake8-autograd"], times["flake8"])
    rows.append(
        Row(
            "1. overhead: flake8 -j 1 with flake8-autograd / without (wall)",
            spread.ratio_text(),
            f"<= {TARGET_OVERHEAD}",
            spread.median <= TARGET_OVERHEAD,
        )
    )
    if all(cpu.get(name) and min(cpu[name]) > 0 for name in times):
        spread = ratios(cpu["flake8 + flake8-autograd"], cpu["flake8"])
        rows.append(
            Row(
                "1. overhead: the same, CPU time (user + system)",
                spread.ratio_text(),
                f"<= {TARGET_OVERHEAD}",
                spread.median <= TARGET_OVERHEAD,
            )
        )
    log(f"overhead, accounted from within flake8: {args.rounds} rounds")
    accounting = overhead_accounting(base, plugin, [*ONE_JOB, *targets], args.rounds, workdir)
    data["overhead_accounting"] = accounting
    with_runs = accounting["with"]
    rows.append(
        Row(
            "1. overhead accounted from within flake8: (flake8 alone + the plugin's import and run + the "
            "extra time in the garbage collector) / flake8 alone, CPU",
            Spread(accounting["estimate"]["values"]).ratio_text(),
            f"<= {TARGET_OVERHEAD}",
            accounting["estimate"]["median"] <= TARGET_OVERHEAD,
        )
    )
    rows.append(
        Row(
            "1. … the plugin's import and run (CPU s); the collector outside it, with / without the plugin "
            "(CPU s)",
            f"{accounting['plugin_run_s']['median']:.2f}; "
            f"{accounting['collector_outside_with_s']['median']:.2f} / "
            f"{accounting['collector_without_s']['median']:.2f} "
            f"(flake8's whole run {statistics.median(run['total'] for run in with_runs):.1f})",
        )
    )


def measure_instructions(run: Run) -> None:
    """The same two runs counted in instructions executed (valgrind's cachegrind, when installed): a
    deterministic figure that the load on a shared machine does not move."""
    args, rows, data, corpus_name = run.args, run.rows, run.data, run.corpus_name
    base, plugin, workdir = run.base, run.plugin, run.workdir
    instruction_targets = flake8_targets(run.corpus, args.instructions_sample)
    label = sample_label(args.instructions_sample, len(instruction_targets))
    if shutil.which("valgrind") is None:
        rows.append(Row("1. overhead in instructions executed", "skipped (valgrind is not installed)"))
    else:
        log(f"instructions: flake8 -j 1 under valgrind over {corpus_name}, {label}, the two side by side")
        counts = instructions(
            {name: [str(venv_bin(venv, "flake8")), *ONE_JOB, *instruction_targets]
             for name, venv in (("flake8", base), ("flake8 + flake8-autograd", plugin))},
            workdir,
        )
        data["instructions"] = counts
        ratio = counts["flake8 + flake8-autograd"] / counts["flake8"]
        rows.append(
            Row(
                f"1. overhead in instructions executed (valgrind), flake8 -j 1 with / without, {label}; "
                f"without: {counts['flake8'] / 1e9:.1f} G",
                f"{ratio:.3f}x",
                f"<= {TARGET_OVERHEAD}",
                ratio <= TARGET_OVERHEAD,
            )
        )


def measure_startup(run: Run) -> None:
    """``flake8`` on one file (an editor on save, a pre-commit hook) with the plugin vs without: a file that
    cannot hold a Function class, and a small one that does."""
    args, corpus, rows, data, workdir, plugin = run.args, run.corpus, run.rows, run.data, run.workdir, run.plugin
    base_flake8 = str(venv_bin(run.base, "flake8"))
    # Each run is a fraction of a second: many more rounds than the corpus rows.
    rounds = args.rounds * 5
    for what, path in startup_files(corpus):
        name = path.relative_to(corpus).as_posix()
        lines = len(path.read_text(encoding="utf-8").splitlines())
        log(f"startup: flake8 -j 1 on {name} ({what}), {rounds} rounds")
        times = alternate(
            {"flake8": [base_flake8, *ONE_JOB, str(path)],
             "flake8 + flake8-autograd": [str(venv_bin(plugin, "flake8")), *ONE_JOB, str(path)]},
            rounds,
            workdir,
        )
        data.setdefault("startup", {})[name] = {key: Spread(values).as_json() for key, values in times.items()}
        spread = ratios(times["flake8 + flake8-autograd"], times["flake8"])
        rows.append(
            Row(
                f"1. start-up: flake8 -j 1 on one file, {what} ({name}, {lines} lines), with / without "
                f"(without: {Spread(times['flake8']).seconds_text()})",
                spread.ratio_text(),
            )
        )
    measure_editor_latency(run, rounds)


def measure_editor_latency(run: Run, rounds: int) -> None:
    """``flake8`` on one Function-dense file, as an editor runs it on save, with the plugin vs without: the
    generated attention-kernel module of ``kernels.py``, the same text on every machine."""
    text = attention_module()
    path = run.workdir / "attention_kernels.py"
    path.write_text(text, encoding="utf-8")
    tree = ast.parse(text)
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    lines = len(text.splitlines())
    share = sum((node.end_lineno or node.lineno) - node.lineno + 1 for node in classes) / lines
    log(f"editor latency: flake8 -j 1 on a generated module of {len(classes)} Function classes, {rounds} rounds")
    cpu: Dict[str, List[float]] = {}
    times = alternate(
        {"flake8": [str(venv_bin(run.base, "flake8")), *ONE_JOB, str(path)],
         "flake8 + flake8-autograd": [str(venv_bin(run.plugin, "flake8")), *ONE_JOB, str(path)]},
        rounds,
        run.workdir,
        cpu,
    )
    run.data["editor_latency"] = {key: Spread(values).as_json() for key, values in times.items()}
    run.data["editor_latency_cpu"] = {key: Spread(values).as_json() for key, values in cpu.items()}
    spread = ratios(times["flake8 + flake8-autograd"], times["flake8"])
    label = (
        f"1. editor on save: flake8 -j 1 on one Function-dense file (generated attention kernels, {lines} lines, "
        f"{len(classes)} classes, {share:.0%} of the lines in them), with / without "
        f"(without: {Spread(times['flake8']).seconds_text()})"
    )
    run.rows.append(Row(label, spread.ratio_text(), f"<= {TARGET_EDITOR}", spread.median <= TARGET_EDITOR))
    if all(cpu.get(name) and min(cpu[name]) > 0 for name in times):
        spread = ratios(cpu["flake8 + flake8-autograd"], cpu["flake8"])
        run.rows.append(
            Row(
                f"1. … the same, CPU time (user + system; without: {Spread(cpu['flake8']).seconds_text()})",
                spread.ratio_text(),
                f"<= {TARGET_EDITOR}",
                spread.median <= TARGET_EDITOR,
            )
        )


def measure_command(run: Run) -> None:
    """Wall time of the ``flake8-autograd`` console script with -j 1 and -j 2."""
    args, rows, data, corpus_name = run.args, run.rows, run.data, run.corpus_name
    workdir, plugin = run.workdir, run.plugin
    targets = flake8_targets(run.corpus, args.sample)
    label = sample_label(args.sample, len(targets))
    if has_cli(plugin):
        script = str(venv_bin(plugin, "flake8-autograd"))
        commands = {f"-j {jobs}": [script, "-j", str(jobs), *targets] for jobs in (1, 2)}
        log(f"command: flake8-autograd over {corpus_name}, {label}, {args.rounds} rounds")
        try:
            times = alternate(commands, args.rounds, workdir)
            data["command"] = {name: Spread(values).as_json() for name, values in times.items()}
            for name, values in times.items():
                rows.append(Row(f"4. flake8-autograd {name}, {label} (wall)", Spread(values).seconds_text()))
        except RuntimeError as error:
            log(f"flake8-autograd: {error}")
            rows.append(Row("4. flake8-autograd -j 1 / -j 2", f"failed: {str(error).splitlines()[0]}"))
    else:
        rows.append(Row("4. flake8-autograd -j 1 / -j 2", "skipped (not installed)"))


def measure_torchfix(run: Run) -> None:
    """``flake8 -j 1`` with TorchFix installed vs without, as a reference."""
    args, rows, data, versions, corpus_name = run.args, run.rows, run.data, run.versions, run.corpus_name
    workdir = run.workdir
    torchfix_targets = flake8_targets(run.corpus, args.torchfix_sample)
    base_flake8 = str(venv_bin(run.base, "flake8"))
    label = sample_label(args.torchfix_sample, len(torchfix_targets))
    try:
        torchfix = run.venvs.torchfix()
        if not plugin_listed(torchfix, "torchfix"):
            raise RuntimeError("flake8 --version does not list TorchFix")
    except RuntimeError as error:
        log(f"TorchFix: {error}")
        rows.append(Row("5. flake8 -j 1 with TorchFix / without", "skipped (torchfix did not install)"))
    else:
        installed = versions_in(torchfix, ["torchfix", "flake8"])
        versions["torchfix"] = installed.get("torchfix", "?")
        note = ""
        if installed.get("flake8") != versions.get("flake8"):
            note = f" (its virtualenv has flake8 {installed.get('flake8')})"
        log(f"torchfix: flake8 -j 1 over {corpus_name}, {label}, {args.rounds} rounds")
        times = alternate(
            {"flake8": [base_flake8, *ONE_JOB, *torchfix_targets],
             "flake8 + TorchFix": [str(venv_bin(torchfix, "flake8")), *ONE_JOB, *torchfix_targets]},
            args.rounds,
            workdir,
        )
        data["torchfix"] = {name: Spread(values).as_json() for name, values in times.items()}
        spread = ratios(times["flake8 + TorchFix"], times["flake8"])
        rows.append(Row(f"5. reference: flake8 -j 1 with TorchFix / without, {label}{note}", spread.ratio_text()))


# Runs flake8 in-process and accounts its CPU time: in the plugin (its import when flake8 loads it, then
# its ``run`` on each file) and in the cyclic garbage collector, inside and outside the plugin.
# argv: output file, then flake8's arguments.
_ACCOUNTING = r"""
import gc, importlib.metadata, json, sys, time
output, arguments = sys.argv[1], sys.argv[2:]
clock = time.process_time
state = {"inside": False, "gc_started": 0.0, "plugin": 0.0, "gc_inside": 0.0, "gc_outside": 0.0}

def on_collection(phase, info):
    if phase == "start":
        state["gc_started"] = clock()
    else:
        state["gc_inside" if state["inside"] else "gc_outside"] += clock() - state["gc_started"]

gc.callbacks.append(on_collection)
entry_points = importlib.metadata.entry_points()
group = (entry_points.select(group="flake8.extension") if hasattr(entry_points, "select")
         else entry_points.get("flake8.extension", []))
if any(point.name == "AGF" for point in group):
    # flake8 imports the plugin when it starts: import it first, timed, so that it can be wrapped.
    state["inside"] = True
    started = clock()
    from flake8_autograd.adapters.flake8_plugin import AutogradChecker
    state["plugin"] += clock() - started
    state["inside"] = False
    original = AutogradChecker.run

    def run(self):
        state["inside"] = True
        started = clock()
        try:
            found = list(original(self))
        finally:
            state["plugin"] += clock() - started
            state["inside"] = False
        return iter(found)

    AutogradChecker.run = run
from flake8.main.cli import main

started = clock()
try:
    main(arguments)
except SystemExit:
    pass
state["total"] = clock() - started
with open(output, "w") as handle:
    json.dump(state, handle)
"""


def accounted_flake8(venv: Path, arguments: Sequence[str], cwd: Path) -> Dict[str, float]:
    """One in-process flake8 run under :data:`_ACCOUNTING`: CPU seconds by where they went."""
    output = cwd / "accounting.json"
    command = [str(venv_bin(venv, "python")), "-c", _ACCOUNTING, str(output), *arguments]
    result = subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=child_env())
    if not output.exists():
        error = result.stderr.decode(errors="replace").strip().splitlines()[-10:]
        raise RuntimeError("accounted flake8 run failed:\n" + "\n".join(error))
    found: Dict[str, float] = json.loads(output.read_text())
    output.unlink()
    return found


def overhead_accounting(base: Path, plugin: Path, arguments: Sequence[str], rounds: int, cwd: Path) -> Dict[str, Any]:
    """The plugin's cost inside flake8, from within each process, so that it does not drown in the noise
    of a shared machine as a difference of two whole runs does.

    The cost is the plugin's own time (its import and its ``run``) plus what the collector spends outside
    it beyond its time in a run without the plugin (the objects the engine's import leaves behind are
    walked by flake8's own collections); it is compared with the run's CPU time less that cost, i.e.
    flake8 alone.
    """
    with_plugin: List[Dict[str, float]] = []
    without: List[Dict[str, float]] = []
    for index in range(rounds):
        pair = [(without, base), (with_plugin, plugin)]
        for results, venv in pair if index % 2 == 0 else reversed(pair):
            results.append(accounted_flake8(venv, arguments, cwd))
        log(f"  accounting round {index + 1}/{rounds}: the plugin {with_plugin[-1]['plugin']:.2f} s; the collector "
            f"outside it {with_plugin[-1]['gc_outside']:.2f} s with it, {without[-1]['gc_outside']:.2f} s without")
    collector_without = statistics.median(run["gc_outside"] for run in without)
    estimates = []
    for run in with_plugin:
        cost = run["plugin"] + run["gc_outside"] - collector_without
        estimates.append(run["total"] / (run["total"] - cost))
    return {
        "with": with_plugin,
        "without": without,
        "plugin_run_s": Spread([run["plugin"] for run in with_plugin]).as_json(),
        "collector_outside_with_s": Spread([run["gc_outside"] for run in with_plugin]).as_json(),
        "collector_without_s": Spread([run["gc_outside"] for run in without]).as_json(),
        "estimate": Spread(estimates).as_json(),
    }


def flake8_targets(corpus: Path, sample: int) -> List[str]:
    if sample <= 1:
        return [str(corpus)]
    return [str(path) for path in python_files(corpus)[::sample]]


# A class statement deriving from Function by one of its usual spellings: enough to pick a file.
_FUNCTION_CLASS = re.compile(r"^\s*class \w+\((?:torch\.)?(?:autograd\.)?Function\)", re.MULTILINE)


def startup_files(corpus: Path) -> List[Tuple[str, Path]]:
    """One file that cannot hold a Function class (the median size among those that do not mention
    ``Function``) and the smallest file with a Function class: the two cases of a one-file run."""
    plain: List[Tuple[int, Path]] = []
    holding: List[Tuple[int, Path]] = []
    for path, text in readable_sources(corpus):
        if "Function" not in text:
            plain.append((len(text), path))
        elif _FUNCTION_CLASS.search(text):
            holding.append((len(text), path))
    chosen: List[Tuple[str, Path]] = []
    if plain:
        plain.sort()
        chosen.append(("a file without Function classes", plain[len(plain) // 2][1]))
    if holding:
        chosen.append(("the smallest file with a Function class", min(holding)[1]))
    return chosen


def sample_label(sample: int, files: int) -> str:
    return "all files" if sample <= 1 else f"1 file in {sample} ({files} files)"


def has_cli(venv: Path) -> bool:
    # The command's module by this layout's name or an earlier one's.
    probe = (
        "import importlib.util as u, sys; "
        "sys.exit(u.find_spec('flake8_autograd.adapters.command.main') is None "
        "and u.find_spec('flake8_autograd.cli') is None)"
    )
    result = subprocess.run([str(venv_bin(venv, "python")), "-c", probe], capture_output=True, env=child_env())
    return result.returncode == 0 and venv_bin(venv, "flake8-autograd").exists()
