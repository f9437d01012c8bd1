"""The layout of the benchmarks package (benchmarks/): one small module per measurement, both entry points
answering ``--help``. Nothing here measures anything."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Dict, List, Optional

import pytest

from conftest import ROOT

BENCHMARKS = ROOT / "benchmarks"
# The measurement modules stay small enough to read in one sitting.
MAX_MODULE_LINES = 500


@pytest.fixture
def modules(monkeypatch: pytest.MonkeyPatch) -> Dict[str, ModuleType]:
    """Every module of the package (realcode/ aside), imported from the checkout's root."""
    monkeypatch.syspath_prepend(str(ROOT))
    found = {}
    for info in pkgutil.iter_modules([str(BENCHMARKS)]):
        if not info.ispkg and info.name != "__main__":
            found[info.name] = importlib.import_module(f"benchmarks.{info.name}")
    return found


def test_every_section_is_handled_by_exactly_one_module(modules: Dict[str, ModuleType]) -> None:
    handlers: Dict[str, List[str]] = {}
    for name, module in modules.items():
        for section in getattr(module, "SECTIONS", ()):
            handlers.setdefault(section, []).append(name)
    cli = modules["cli"]
    assert sorted(handlers) == sorted(cli.ALL_SECTIONS)
    assert {section: names for section, names in handlers.items() if len(names) != 1} == {}
    # The child measures one section per module, and reports every module's rows.
    assert all(len(module.SECTIONS) == 1 for module in cli.INNER_MODULES)
    assert sorted(map(id, cli.ROW_ORDER)) == sorted(map(id, cli.INNER_MODULES))


@pytest.mark.parametrize(
    "command, cwd",
    [
        ([sys.executable, str(BENCHMARKS / "bench.py"), "--help"], None),  # from any working directory
        ([sys.executable, "-m", "benchmarks", "--help"], ROOT),
    ],
    ids=["bench.py", "python -m benchmarks"],
)
def test_both_entry_points_answer_help(command: List[str], cwd: Optional[Path], tmp_path: Path) -> None:
    result = subprocess.run(command, cwd=cwd or tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "--only" in result.stdout and "accuracy" in result.stdout


def test_no_module_of_the_package_is_long() -> None:
    lengths = {path.name: len(path.read_text(encoding="utf-8").splitlines()) for path in BENCHMARKS.glob("*.py")}
    assert "bench.py" in lengths
    assert {name: length for name, length in lengths.items() if length > MAX_MODULE_LINES} == {}
