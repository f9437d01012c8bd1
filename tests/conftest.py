"""Shared helpers: run the engine on source text, read fixture expectations."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import io
import os
import re
import textwrap
import warnings
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Dict, Iterator, List, Sequence, Set, Tuple

import pytest

from flake8_autograd.checking.checker import check_module
from flake8_autograd.core.settings import Settings
from flake8_autograd.rules.base import Finding

FIXTURES = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).parent.parent

_EXPECT = re.compile(r"#\s*((?:AGF\d{3})(?:\s*,\s*AGF\d{3})*)\s*$")


def lint(
    source: str, filename: str = "example.py", extra_bases: Sequence[str] = (), preview: bool = False
) -> List[Finding]:
    """Findings for a source snippet (dedented), through the same entry point as the plugin.

    ``preview`` adds the preview rules, as ``--autograd-preview`` does.
    """
    lines = source_lines(textwrap.dedent(source))
    settings = Settings(function_bases=tuple(extra_bases), preview=preview)
    return check_module(ast.parse("".join(lines)), lines, filename, settings)


def source_lines(source: str) -> List[str]:
    """The lines flake8 hands a plugin: newlines made universal, then split on ``\\n`` only.

    ``str.splitlines`` would also split at form feeds and other characters Python treats as whitespace.
    """
    return io.StringIO(source, newline=None).readlines()


def codes(source: str, **kwargs: object) -> List[str]:
    return [finding.code for finding in lint(source, **kwargs)]  # type: ignore[arg-type]


def expected_findings(path: Path) -> Set[Tuple[int, str]]:
    """(line, code) pairs written as trailing ``# AGF00N`` comments in a fixture file."""
    expected: Set[Tuple[int, str]] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        match = _EXPECT.search(line)
        if match:
            for code in match.group(1).split(","):
                expected.add((number, code.strip()))
    return expected


def fixture_paths() -> List[Path]:
    return sorted(FIXTURES.glob("agf*.py"))


def parseable_fixture_sources() -> List[Tuple[Path, str]]:
    """Each fixture that parses (one being edited may not), with its text."""
    sources = []
    for path in fixture_paths():
        source = path.read_text(encoding="utf-8")
        try:
            ast.parse(source)
        except SyntaxError:
            continue
        sources.append((path, source))
    return sources


@lru_cache(maxsize=None)
def fixture_module(stem: str) -> ModuleType:
    """The fixture ``tests/fixtures/<stem>.py`` executed once, under a private name (the oracle tests
    run its classes; it imports torch)."""
    path = FIXTURES / f"{stem}.py"
    spec = importlib.util.spec_from_file_location(f"_fixture_{stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@lru_cache(maxsize=None)
def fixture_spans(stem: str) -> Dict[str, Tuple[int, int]]:
    """The line span of each top-level class and function of a fixture."""
    tree = ast.parse((FIXTURES / f"{stem}.py").read_text(encoding="utf-8"))
    return {
        node.name: (node.lineno, node.end_lineno or node.lineno)
        for node in tree.body
        if isinstance(node, (ast.ClassDef, ast.FunctionDef))
    }


@lru_cache(maxsize=None)
def fixture_findings(stem: str) -> Tuple[Tuple[int, str], ...]:
    """(line, code) of every finding on a fixture, preview rules included."""
    path = FIXTURES / f"{stem}.py"
    found = lint(path.read_text(encoding="utf-8"), filename=str(path), preview=True)
    return tuple((finding.line, finding.code) for finding in found)


def codes_inside(stem: str, name: str) -> Set[str]:
    """The codes the linter reports inside the top-level class or function ``name`` of a fixture."""
    start, end = fixture_spans(stem)[name]
    return {code for line, code in fixture_findings(stem) if start <= line <= end}


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


def require_torch() -> ModuleType:
    """torch for an oracle test: skipped when torch is not installed, unless ``AGF_REQUIRE_TORCH`` is set
    (CI sets it, so that a missing torch fails instead of skipping the oracle layer)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Failed to initialize NumPy", category=UserWarning)
        if os.environ.get("AGF_REQUIRE_TORCH"):
            return importlib.import_module("torch")
        return pytest.importorskip("torch", reason="the oracle layer runs fixture Functions under PyTorch")


#: How to run what skips without torch (the pin finds the CPU build; an unpinned torch pulls CUDA wheels).
ORACLE_HINT = "pip install -e '.[oracle]' (torch==2.13.0, CPU) to run them"
TORCH_INSTALLED = importlib.util.find_spec("torch") is not None


def pytest_collection_modifyitems(items: List[pytest.Item]) -> None:
    """Every test of a module that imports torch is in the oracle layer (``-m oracle`` selects it), as are
    the tests marked so one by one in a module that does not."""
    for item in items:
        module = getattr(item, "module", None)
        if isinstance(getattr(module, "torch", None), ModuleType):
            item.add_marker(pytest.mark.oracle)


def _skipped_for_torch(report: pytest.CollectReport | pytest.TestReport) -> bool:
    """A skip whose reason is a missing torch (every oracle module and test skips with "torch" in it)."""
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return "torch" in reason.lower()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A test that skips for want of torch must be in the oracle layer, or CI's torch stage (``-m "oracle or
    slow"``) would never run it: such a skip outside the layer fails instead."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if TORCH_INSTALLED or not report.skipped or item.get_closest_marker("oracle") is not None:
        return
    if _skipped_for_torch(report):
        report.outcome = "failed"
        report.longrepr = f"{item.nodeid} skips without torch but is not marked oracle: mark it @pytest.mark.oracle"


def _count(number: int, noun: str) -> str:
    return "" if number == 0 else f"{number} {noun}" + ("" if number == 1 else "s")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line saying what a run without torch left out, and how to run it."""
    if TORCH_INSTALLED:
        return
    skipped = [report for report in terminalreporter.stats.get("skipped", []) if _skipped_for_torch(report)]
    if not skipped:
        return
    modules = sum(1 for report in skipped if isinstance(report, pytest.CollectReport))
    tests = len(skipped) - modules
    parts = [_count(modules, "test module"), _count(tests, "test")]
    counted = " and ".join(part for part in parts if part)
    terminalreporter.write_line(f"oracle layer skipped ({counted}): torch is not installed; {ORACLE_HINT}")
