"""What every benchmark module shares: statistics and the report's rows, the corpus, the virtualenvs,
the timing of external commands, the log and the facts about the machine.

Only the standard library is imported here: the parent runs under any Python >= 3.9, and the child in
the plugin virtualenv imports this module before it imports the plugin.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

CHECKOUT = Path(__file__).resolve().parent.parent
# "Flat" time per unit (per class, per fix): the slowest size is at most this factor of the fastest.
FLAT_FACTOR = 1.25


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


def readable_sources(corpus: Path) -> Iterator[Tuple[Path, str]]:
    """Each Python file of the corpus with its text, skipping those that cannot be read as UTF-8."""
    for path in python_files(corpus):
        try:
            yield path, path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue


# --------------------------------------------------------------------------------------------
# Virtualenvs
# --------------------------------------------------------------------------------------------


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


def plugin_listed(venv: Path, needle: str) -> bool:
    output = run_checked([str(venv_bin(venv, "flake8")), "--version"], "flake8 --version")
    return needle.lower() in output.lower()


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


def instructions(commands: Dict[str, List[str]], cwd: Path, env: Optional[Dict[str, str]] = None) -> Dict[str, int]:
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
            valgrind + command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env or child_env()
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


@dataclass
class Run:
    """What the sections measured from the parent share: the options, the corpus, the virtualenvs, and
    the report's rows and JSON data that each section adds to."""

    args: argparse.Namespace
    corpus: Path
    corpus_name: str
    sizes: List[int]  # generated files' sizes, in classes, up to --max-classes
    venvs: Venvs
    base: Path
    plugin: Path
    workdir: Path  # empty, so that no flake8 configuration is found from it
    rows: List[Row]
    data: Dict[str, Any]
    versions: Dict[str, str]


# --------------------------------------------------------------------------------------------
# The machine
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
