"""Performance benchmarks for flake8-autograd (not part of the test suite).

Run from anywhere with Python >= 3.9::

    python benchmarks/bench.py                        # default run: about ten minutes
    python benchmarks/bench.py --quick                # a smoke run
    python benchmarks/bench.py --max-classes 10000    # scaling up to 10,000 classes (slow)
    python benchmarks/bench.py --sample 1             # flake8 rows over the whole corpus (slow)

What it measures (see docs/performance.md for the figures and how to read them):

1. overhead   ``flake8 -j 1`` over the corpus with the plugin installed vs without it.
   instructions the same two runs counted in instructions executed (valgrind's cachegrind, when
              installed): a deterministic figure that the load on a shared machine does not move.
   startup    ``flake8`` on one file (an editor on save, a pre-commit hook) with the plugin vs without:
              a file that cannot hold a Function class, and a small one that does.
2. dense      the plugin's own work on files that hold Function classes vs ``libcst.parse_module``.
3. scaling    time per class on generated files of 1 to 10,000 Function classes (and a PNG plot).
   fixes      time per fix of ``--fix``/``--diff`` with 1,000 to 10,000 fixes in one file, and time per call
              of AGF111 (flake8 with --autograd-preview, and the command with its fixes) with 1,000 to
              10,000 direct calls in one function: each should stay flat.
4. command    wall time of the ``flake8-autograd`` console script with -j 1 and -j 2.
5. torchfix   ``flake8 -j 1`` with TorchFix installed vs without, as a reference.
6. memory     the plugin's peak (tracemalloc) while checking a file vs the size of its libcst tree.

The flake8 rows need three virtualenvs, created (``python -m venv`` + pip) and reused under a cache
directory (``--venvs``, default ``~/.cache/flake8-autograd-bench/venvs``): ``base`` (flake8 only),
``plugin`` (flake8 + this checkout, editable) and ``torchfix`` (flake8 + TorchFix). All three get
the same flake8, pyflakes and pycodestyle versions. Sections 2, 3 and 6 run in-process inside the
``plugin`` virtualenv.

The corpus defaults to the source of the torch installed for the interpreter running this script
(located without importing torch); ``--corpus`` names another directory.

Every comparison alternates the compared commands round by round and reports the median over the
rounds with the spread (min-max).
"""

from __future__ import annotations

import argparse
import ast
import gc
import hashlib
import importlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parent
DEFAULT_PLOT = CHECKOUT / "docs" / "performance-scaling.png"
SECTIONS = ("overhead", "instructions", "startup", "torchfix", "command", "dense", "scaling", "fixes", "memory")
INNER_SECTIONS = ("dense", "scaling", "fixes", "memory")
# Fixes in one file, and direct calls in one function, for the fixes section.
FIX_COUNTS = (1000, 2500, 5000, 10000)
SIZES = (1, 10, 100, 1000, 10000)
# A file counts as Function-dense when at least this share of its lines are inside Function classes.
DENSE_SHARE = 0.5
# "Flat" per-class time: the slowest size from 10 classes up is at most this factor of the fastest.
FLAT_FACTOR = 1.25

TARGET_OVERHEAD = 1.03
TARGET_DENSE = 1.5
TARGET_MEMORY = 2.0


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------------------------


@dataclass
class Spread:
    """Median and range of a list of measurements."""

    values: List[float]

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def low(self) -> float:
        return min(self.values)

    @property
    def high(self) -> float:
        return max(self.values)

    def ratio_text(self) -> str:
        return f"{self.median:.3f}x ({self.low:.3f}-{self.high:.3f})"

    def seconds_text(self) -> str:
        return f"{self.median:.2f} s ({self.low:.2f}-{self.high:.2f})"

    def as_json(self) -> Dict[str, Any]:
        return {"median": self.median, "min": self.low, "max": self.high, "values": self.values}


def ratios(numerators: Sequence[float], denominators: Sequence[float]) -> Spread:
    """Per-round ratios: each round's two timings were taken next to each other."""
    return Spread([a / b for a, b in zip(numerators, denominators)])


@dataclass
class Row:
    measure: str
    result: str
    target: str = ""
    met: Optional[bool] = None

    def cells(self) -> List[str]:
        verdict = "" if self.met is None else ("yes" if self.met else "**no**")
        return [self.measure, self.result, self.target, verdict]


def markdown_table(rows: Iterable[Row]) -> str:
    lines = ["| measure | result: median (min-max) | target | met |", "|---|---|---|---|"]
    lines += ["| " + " | ".join(row.cells()) + " |" for row in rows]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Corpus
# --------------------------------------------------------------------------------------------


def torch_source() -> Optional[Path]:
    """The directory of the torch package of this interpreter, found without importing torch."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def torch_version() -> str:
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def python_files(root: Path) -> List[Path]:
    return sorted(path for path in root.rglob("*.py") if path.is_file())


# --------------------------------------------------------------------------------------------
# Virtualenvs
# --------------------------------------------------------------------------------------------


def readable_sources(corpus: Path) -> Iterator[Tuple[Path, str]]:
    """Each Python file of the corpus with its text, skipping those that cannot be read as UTF-8."""
    for path in python_files(corpus):
        try:
            yield path, path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue


def venv_bin(venv: Path, name: str) -> Path:
    if os.name == "nt":
        return venv / "Scripts" / (name + ".exe")
    return venv / "bin" / name


def child_env() -> Dict[str, str]:
    """The environment of every measured command: bytecode caching on, as users have it."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run_checked(command: Sequence[str], what: str) -> str:
    result = subprocess.run(list(command), capture_output=True, text=True, env=child_env())
    if result.returncode != 0:
        tail = (result.stdout + result.stderr).strip().splitlines()[-15:]
        raise RuntimeError(f"{what} failed ({result.returncode}):\n" + "\n".join(tail))
    return result.stdout


class Venvs:
    """The base / plugin / torchfix virtualenvs under one cache directory, built once and reused."""

    def __init__(self, root: Path, flake8_spec: str, rebuild: bool) -> None:
        self.root = root
        self.flake8_spec = flake8_spec
        self.rebuild = rebuild
        self.constraints = root / "constraints.txt"

    def _stamp(self, *inputs: str) -> str:
        digest = hashlib.sha256()
        for item in (sys.version, self.flake8_spec) + inputs:
            digest.update(item.encode())
        return digest.hexdigest()

    def _make(self, name: str, stamp: str, install: Callable[[Path], None]) -> Path:
        venv = self.root / name
        stamp_file = venv / "bench-stamp.txt"
        if not self.rebuild and stamp_file.exists() and stamp_file.read_text() == stamp:
            return venv
        if venv.exists():
            shutil.rmtree(venv)
        log(f"creating virtualenv {name} ...")
        run_checked([sys.executable, "-m", "venv", str(venv)], f"python -m venv {name}")
        pip = [str(venv_bin(venv, "python")), "-m", "pip", "--disable-pip-version-check", "-q"]
        run_checked(pip + ["install", "--upgrade", "pip"], f"upgrading pip in {name}")
        install(venv)
        stamp_file.write_text(stamp)
        return venv

    def _pip(self, venv: Path, *args: str) -> None:
        pip = [str(venv_bin(venv, "python")), "-m", "pip", "--disable-pip-version-check", "-q", "install"]
        run_checked(pip + list(args), f"pip install {' '.join(args)}")

    def prepare_root(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        ignore = self.root / ".gitignore"
        if not ignore.exists():
            ignore.write_text("*\n")

    def base(self) -> Path:
        def install(venv: Path) -> None:
            self._pip(venv, self.flake8_spec)
            frozen = run_checked([str(venv_bin(venv, "python")), "-m", "pip", "freeze"], "pip freeze")
            self.constraints.write_text(frozen)

        venv = self._make("base", self._stamp("base"), install)
        if not self.constraints.exists():
            frozen = run_checked([str(venv_bin(venv, "python")), "-m", "pip", "freeze"], "pip freeze")
            self.constraints.write_text(frozen)
        return venv

    def plugin(self) -> Path:
        pyproject = (CHECKOUT / "pyproject.toml").read_bytes()
        stamp = self._stamp("plugin", hashlib.sha256(pyproject).hexdigest(), self.constraints.read_text())

        def install(venv: Path) -> None:
            self._pip(venv, "-c", str(self.constraints), "-e", f"{CHECKOUT}[bench]")

        return self._make("plugin", stamp, install)

    def torchfix(self) -> Path:
        stamp = self._stamp("torchfix", self.constraints.read_text())

        def install(venv: Path) -> None:
            self._pip(venv, "-c", str(self.constraints), "torchfix")

        return self._make("torchfix", stamp, install)


def versions_in(venv: Path, names: Sequence[str]) -> Dict[str, str]:
    code = (
        "import importlib.metadata as m, json, sys\n"
        "out = {}\n"
        "for name in sys.argv[1:]:\n"
        "    try:\n"
        "        out[name] = m.version(name)\n"
        "    except m.PackageNotFoundError:\n"
        "        pass\n"
        "print(json.dumps(out))\n"
    )
    output = run_checked([str(venv_bin(venv, "python")), "-c", code, *names], "reading versions")
    found: Dict[str, str] = json.loads(output)
    return found


# --------------------------------------------------------------------------------------------
# Timing external commands
# --------------------------------------------------------------------------------------------


# CPU seconds (user + system) of the last command timed; 0 where the platform does not say.
LAST_CPU: List[float] = [0.0]


def children_cpu() -> float:
    try:
        import resource
    except ImportError:  # Windows
        return 0.0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_command(command: Sequence[str], cwd: Path) -> float:
    """Wall time of one run; flake8 exits 1 when it reports something, which is expected here."""
    cpu = children_cpu()
    start = time.perf_counter()
    result = subprocess.run(
        list(command), cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=child_env()
    )
    elapsed = time.perf_counter() - start
    LAST_CPU[0] = children_cpu() - cpu
    if result.returncode not in (0, 1):
        error = result.stderr.decode(errors="replace").strip().splitlines()[-10:]
        raise RuntimeError(f"{command[0]} exited {result.returncode}:\n" + "\n".join(error))
    return elapsed


_INSTRUCTIONS = re.compile(r"I\s+refs:\s+([\d,]+)")


def instructions(commands: Dict[str, List[str]], cwd: Path) -> Dict[str, int]:
    """Instructions executed by one run of each command (children included) under valgrind's cachegrind.

    The count repeats to about 0.1 % from run to run, where the wall and CPU times of the same run on a
    shared machine move by 10 % or more; so the commands run side by side, and once. It does not see
    memory stalls.
    """
    valgrind = [
        "valgrind", "--tool=cachegrind", "--cache-sim=no", "--trace-children=yes",
        "--cachegrind-out-file=/dev/null",
    ]
    running = {
        name: subprocess.Popen(
            valgrind + command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=child_env()
        )
        for name, command in commands.items()
    }
    counts: Dict[str, int] = {}
    for name, process in running.items():
        _, stderr = process.communicate()
        report = stderr.decode(errors="replace")
        found = [int(count.replace(",", "")) for count in _INSTRUCTIONS.findall(report)]
        if process.returncode not in (0, 1) or not found:
            raise RuntimeError(f"valgrind {name} exited {process.returncode}:\n" + "\n".join(report.splitlines()[-10:]))
        counts[name] = sum(found)
    return counts


# One generated module checked once (argv: classes, "check" or "skip"): the plugin's work on it is the
# difference between the two runs' instructions; both import the whole engine, so its import cancels out.
_SCALING_PROBE = r"""
import ast, importlib, sys
sys.path.insert(0, sys.argv[3])
from bench import checker_runner, generated_module
importlib.import_module("flake8_autograd.engine.class_checks")
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
        f"{size} {action}": [str(venv_bin(plugin, "python")), "-c", _SCALING_PROBE, str(size), action, str(HERE)]
        for size in sizes
        for action in ("check", "skip")
    }
    counts = instructions(commands, cwd)
    return {str(size): (counts[f"{size} check"] - counts[f"{size} skip"]) / size for size in sizes}


def alternate(
    commands: Dict[str, List[str]], rounds: int, cwd: Path, cpu: Optional[Dict[str, List[float]]] = None
) -> Dict[str, List[float]]:
    """Run every command once per round, rotating which goes first; one untimed warm-up run each.

    Returns wall times; CPU times (user + system, children included) go to ``cpu`` when given.
    """
    names = list(commands)
    for name in names:
        log(f"  warm-up: {name}")
        time_command(commands[name], cwd)
    times: Dict[str, List[float]] = {name: [] for name in names}
    for index in range(rounds):
        shift = index % len(names)
        order = names[shift:] + names[:shift]
        for name in order:
            times[name].append(time_command(commands[name], cwd))
            if cpu is not None:
                cpu.setdefault(name, []).append(LAST_CPU[0])
        summary = ", ".join(f"{name} {times[name][-1]:.2f}s" for name in names)
        log(f"  round {index + 1}/{rounds}: {summary}")
    return times


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
    from flake8_autograd.plugin import AutogradChecker
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


def plugin_listed(venv: Path, needle: str) -> bool:
    output = run_checked([str(venv_bin(venv, "flake8")), "--version"], "flake8 --version")
    return needle.lower() in output.lower()


def has_cli(venv: Path) -> bool:
    probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('flake8_autograd.cli') is None)"
    result = subprocess.run([str(venv_bin(venv, "python")), "-c", probe], capture_output=True, env=child_env())
    return result.returncode == 0 and venv_bin(venv, "flake8-autograd").exists()


# --------------------------------------------------------------------------------------------
# In-process measurements (run inside the plugin virtualenv)
# --------------------------------------------------------------------------------------------


def checker_runner(preview: bool) -> Callable[[ast.Module, List[str], str], List[Any]]:
    """The plugin's entry point as flake8 calls it: options parsed once, then one checker per file."""
    plugin = importlib.import_module("flake8_autograd.plugin")
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
    discovery: Any = importlib.import_module("flake8_autograd.engine.discovery")
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
    fixer: Any = importlib.import_module("flake8_autograd.command.fixer")
    patch: Any = importlib.import_module("flake8_autograd.command.patch")
    runner: Any = importlib.import_module("flake8_autograd.command.runner")
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


def run_inner(args: argparse.Namespace) -> None:
    """Entry point of the child process running in the plugin virtualenv."""
    corpus = Path(args.corpus)
    wanted = args.inner.split(",")
    output: Dict[str, Any] = {}
    if "dense" in wanted:
        log("dense: the plugin's per-file work vs libcst.parse_module of the file")
        output["dense"] = section_dense(corpus, args.rounds)
    if "scaling" in wanted:
        log("scaling: generated files of 1 to 10,000 Function classes")
        sizes = [int(size) for size in args.sizes.split(",")]
        output["scaling"] = section_scaling(args.rounds, sizes, Path(args.plot) if args.plot else None)
    if "fixes" in wanted:
        log("fixes: --fix/--diff with 1,000 to 10,000 fixes in a file; AGF111 with as many calls in a function")
        output["fixes"] = section_fixes([int(count) for count in args.fix_counts.split(",")])
    if "memory" in wanted:
        log("memory: tracemalloc peak while checking vs the libcst tree")
        largest = max(int(size) for size in args.sizes.split(","))
        output["memory"] = section_memory(corpus, min(1000, largest))
    Path(args.inner_output).write_text(json.dumps(output, indent=1))


# --------------------------------------------------------------------------------------------
# The parent: venvs, flake8 runs, the report
# --------------------------------------------------------------------------------------------


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load_average() -> str:
    try:
        return " / ".join(f"{value:.2f}" for value in os.getloadavg())
    except (AttributeError, OSError):
        return "unknown"


def machine(versions: Dict[str, str]) -> List[str]:
    facts = [
        f"CPU: {cpu_model()}, {os.cpu_count()} logical cores",
        f"OS: {platform.platform()}",
        f"Python: {platform.python_implementation()} {platform.python_version()}",
    ]
    facts += [f"{name}: {version}" for name, version in sorted(versions.items())]
    return facts


def default_cache() -> Path:
    """Outside the checkout, so that flake8 and git never see the virtualenvs."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "flake8-autograd-bench"


def default_flake8_spec() -> str:
    try:
        return f"flake8=={importlib.metadata.version('flake8')}"
    except importlib.metadata.PackageNotFoundError:
        return "flake8"


def main(argv: Optional[Sequence[str]] = None) -> int:
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
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated subset of {','.join(SECTIONS)}")
    parser.add_argument(
        "--venvs", default=str(default_cache() / "venvs"), help="where the virtualenvs are kept and reused"
    )
    parser.add_argument("--rebuild", action="store_true", help="recreate the virtualenvs")
    parser.add_argument("--flake8", default=default_flake8_spec(), help="flake8 requirement for every virtualenv")
    parser.add_argument("--plot", default=str(DEFAULT_PLOT), help="where to write the scaling plot ('' for none)")
    parser.add_argument("--json", help="also write every measurement to this JSON file")
    parser.add_argument("--sizes", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--fix-counts", default=",".join(map(str, FIX_COUNTS)), help=argparse.SUPPRESS)
    parser.add_argument("--inner", help=argparse.SUPPRESS)
    parser.add_argument("--inner-output", help=argparse.SUPPRESS)
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
    sizes = [size for size in SIZES if size <= args.max_classes]
    sections = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = set(sections) - set(SECTIONS)
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
    targets = flake8_targets(corpus, args.sample)
    torchfix_targets = flake8_targets(corpus, args.torchfix_sample)
    instruction_targets = flake8_targets(corpus, args.instructions_sample)

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

    common = ["--isolated", "-j", "1"]
    base_flake8 = str(venv_bin(base, "flake8"))
    if "overhead" in sections:
        label = sample_label(args.sample, len(targets))
        log(f"overhead: flake8 -j 1 over {corpus_name}, {label}, {args.rounds} rounds")
        cpu: Dict[str, List[float]] = {}
        times = alternate(
            {"flake8": [base_flake8, *common, *targets],
             "flake8 + flake8-autograd": [str(venv_bin(plugin, "flake8")), *common, *targets]},
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
        accounting = overhead_accounting(base, plugin, [*common, *targets], args.rounds, workdir)
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

    if "instructions" in sections:
        label = sample_label(args.instructions_sample, len(instruction_targets))
        if shutil.which("valgrind") is None:
            rows.append(Row("1. overhead in instructions executed", "skipped (valgrind is not installed)"))
        else:
            log(f"instructions: flake8 -j 1 under valgrind over {corpus_name}, {label}, the two side by side")
            counts = instructions(
                {name: [str(venv_bin(venv, "flake8")), *common, *instruction_targets]
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

    if "startup" in sections:
        # Each run is a fraction of a second: many more rounds than the corpus rows.
        rounds = args.rounds * 5
        for what, path in startup_files(corpus):
            name = path.relative_to(corpus).as_posix()
            lines = len(path.read_text(encoding="utf-8").splitlines())
            log(f"startup: flake8 -j 1 on {name} ({what}), {rounds} rounds")
            times = alternate(
                {"flake8": [base_flake8, *common, str(path)],
                 "flake8 + flake8-autograd": [str(venv_bin(plugin, "flake8")), *common, str(path)]},
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

    if "command" in sections:
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

    if "torchfix" in sections:
        label = sample_label(args.torchfix_sample, len(torchfix_targets))
        try:
            torchfix = venvs.torchfix()
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
                {"flake8": [base_flake8, *common, *torchfix_targets],
                 "flake8 + TorchFix": [str(venv_bin(torchfix, "flake8")), *common, *torchfix_targets]},
                args.rounds,
                workdir,
            )
            data["torchfix"] = {name: Spread(values).as_json() for name, values in times.items()}
            spread = ratios(times["flake8 + TorchFix"], times["flake8"])
            rows.append(Row(f"5. reference: flake8 -j 1 with TorchFix / without, {label}{note}", spread.ratio_text()))

    if "scaling" in sections and shutil.which("valgrind") is not None:
        counted = [size for size in sizes if 10 <= size <= min(args.max_classes, 1000)]
        log(f"scaling in instructions executed (valgrind): {', '.join(map(str, counted))} classes")
        per_class = scaling_instructions(plugin, counted, workdir)
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

    inner = [name for name in sections if name in INNER_SECTIONS]
    if inner:
        output = workdir / "inner.json"
        command = [
            str(venv_bin(plugin, "python")), str(Path(__file__).resolve()),
            "--inner", ",".join(inner), "--inner-output", str(output),
            "--corpus", str(corpus), "--rounds", str(args.rounds),
            "--sizes", args.sizes or ",".join(str(size) for size in sizes),
            "--fix-counts", args.fix_counts,
            "--plot", args.plot,
        ]
        subprocess.run(command, check=True, env=child_env())
        measured = json.loads(output.read_text())
        data.update(measured)
        rows += inner_rows(measured)

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
    if "dense" in data:
        print()
        print(dense_table(data["dense"]))
    if "memory" in data:
        print()
        print(memory_table(data["memory"]))
    if args.json:
        data["machine"] = facts
        data["rows"] = [row.cells() for row in rows]
        Path(args.json).write_text(json.dumps(data, indent=1))
    return 0


def fixes_rows(fixes: Dict[str, Any]) -> List[Row]:
    rows = []
    for name, table in fixes["per_unit_us"].items():
        factor = fixes["flat_factor"][name]
        cells = ", ".join(f"{int(count):,}: {value:.0f}" for count, value in table.items())
        rows.append(Row(f"7. {name}: µs (count: µs)", f"{cells}; slowest/fastest {factor:.2f}",
                        f"flat (<= {FLAT_FACTOR})", factor <= FLAT_FACTOR))
    return rows


def inner_rows(measured: Dict[str, Any]) -> List[Row]:
    rows: List[Row] = fixes_rows(measured["fixes"]) if measured.get("fixes") else []
    dense = measured.get("dense")
    if dense:
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
    scaling = measured.get("scaling")
    if scaling:
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
    memory = measured.get("memory")
    if memory:
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


if __name__ == "__main__":
    sys.exit(main())
