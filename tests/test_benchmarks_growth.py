"""The growth section of the benchmarks (benchmarks/growth.py) on tiny sizes: every generated input is valid
Python with the findings it is made for, the section runs each input through each of its runs and prints
its table, and a run past the budget is stopped and said to be. Nothing here is timed."""

from __future__ import annotations

import argparse
import ast
import importlib
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, List

import pytest

from conftest import ROOT, codes


@pytest.fixture
def growth(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The section's module, imported from the checkout's root as ``python -m benchmarks`` does."""
    monkeypatch.syspath_prepend(str(ROOT))
    return importlib.import_module("benchmarks.growth")


@pytest.mark.parametrize(
    "shape, code", [("stores", "AGF003"), ("classes", "AGF002"), ("ops", "AGF005"), ("returns", "AGF004")]
)
def test_each_input_holds_a_finding_a_unit(growth: ModuleType, shape: str, code: str) -> None:
    make = growth.SHAPES[shape].make
    for size in (1, 3):
        ast.parse(make(size))
    found = codes(make(3), preview=True)
    assert "AGF000" not in found
    assert found.count(code) >= 3
    assert make(3) == make(3)


def test_the_section_runs_every_input_on_tiny_sizes_and_prints_the_table(
    growth: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    args = argparse.Namespace(growth_sizes="2,3", growth_budget=60.0)
    measured: Dict[str, Any] = {"growth": growth.measure(args, Path("."))}
    for table in growth.report_tables(measured):
        print(table)
    printed = capsys.readouterr().out
    header = "| input (per unit) | run | units | CPU seconds | ms per unit | growth (largest / smallest per unit) |"
    assert header in printed
    runs = [(name, run) for name, shape in growth.SHAPES.items() for run in shape.runs]
    assert len(runs) == 9
    for name, run in runs:
        table = measured["growth"]["shapes"][name]["runs"][run]
        assert set(table["seconds"]) == {"2", "3"} and not table["stopped"]
        assert all(found > 0 for found in table["found"].values())
        assert growth.growth_ratio(table["seconds"]) > 0
    body = [line for line in printed.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert len(body) == 2 * len(runs)
    assert "flake8-autograd --preview --diff" in printed and "returns of one backward" in printed
    rows = growth.report_rows(measured)
    assert len(rows) == len(runs) and all("largest/smallest" in row.result for row in rows)


# The timer may land in a weakref callback, where Python reports the exception and goes on (the timer
# fires again a tenth of a second later).
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_run_past_its_budget_is_stopped_and_the_larger_sizes_are_not_run(growth: ModuleType) -> None:
    measured = growth.section_growth([2, 3, 4], 0.001, shapes=["returns"])
    runs: Dict[str, Any] = measured["shapes"]["returns"]["runs"]
    for table in runs.values():
        assert table["seconds"] == {}
        assert table["stopped"] == "2 and up not run: 2 passed 0.001 s and was stopped"
    lines: List[str] = growth.growth_table(measured).splitlines()
    assert sum("and was stopped" in line for line in lines) == 3


def test_a_size_a_linear_forecast_puts_past_the_budget_is_not_started(growth: ModuleType) -> None:
    measured = growth.section_growth([1, 100000], 5.0, shapes=["returns"])
    table = measured["shapes"]["returns"]["runs"]["flake8"]
    assert set(table["seconds"]) == {"1"}
    assert table["stopped"].startswith("100,000 and up not run: linear from 1 would pass 5 s")
