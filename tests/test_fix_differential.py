"""The fixes under torch, before and after: every Function class of the fixtures that torch can run is run on
the original file and on the file fixed, once with the safe fixes only and once with the unsafe fixes too.

The oracle fixtures' classes run their ``# torch:`` declarations. The classes of a fixture without
declarations that a fix changes and that imports with torch alone run an implied call (``oracle.implied_blocks``:
a fresh ``T`` for each forward parameter without a default); what it does, an exception included, is only
compared. A run of a call records the forward's values, the gradients of a first backward
(``torch.autograd.grad``, seeded as the declaration says), and what a second backward on the same graph
without ``retain_graph`` gives; an exception at a stage is recorded by its type. With safe fixes everything
must stay the same. With unsafe fixes the only differences allowed are those of :data:`UNSAFE_CHANGES`,
each the documented cost of one rule's fix, and only where that rule's fix was applied to the class. Where
the original raised the very error a fixed finding's rule names (``oracle.REPAIRED_ERRORS``), the fixed class
may get past it. Skipped without torch.
"""

from __future__ import annotations

import ast
import importlib
import os
import re
import warnings
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Sequence, Tuple, Type

import pytest

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=r"Failed to initialize NumPy", category=UserWarning)
    if os.environ.get("AGF_REQUIRE_TORCH"):
        torch = importlib.import_module("torch")
    else:
        torch = pytest.importorskip("torch", reason="the differential check runs fixture Functions under PyTorch")

from conftest import FIXTURES, source_lines  # noqa: E402
from flake8_autograd.adapters.command.fixer import fix_text  # noqa: E402
from flake8_autograd.adapters.command.runner import CheckOptions, lint_lines  # noqa: E402
from oracle import REPAIRED_ERRORS, ClassBlock, Declaration, LoadedFixture, applied_fixes  # noqa: E402
from oracle import implied_blocks, is_repaired_error  # noqa: E402
from oracle import _arguments, _differentiable_outputs, _target, load_fixture, parse_fixture  # noqa: E402
from oracle import same_value, snapshot  # noqa: E402

FIXTURE_PATHS = sorted(FIXTURES.glob("agf*.py"))

MODES = {"safe": CheckOptions(preview=True), "unsafe": CheckOptions(preview=True, unsafe_fixes=True)}

# Classes run, and classes a fix changed, counted on the fixtures as they are (229; 28 with safe fixes, 31
# with unsafe ones too), with room for fixes that become unsafe or are withheld. A lower count means a
# weaker check: lower these only on purpose.
MIN_CLASSES_RUN = 220
MIN_CLASSES_FIXED = {"safe": 15, "unsafe": 25}

STAGES = ("forward", "backward", "second backward")


@dataclass(frozen=True)
class Stage:
    """One stage of a run: the exception type it raised, or a snapshot of what it returned."""

    name: str  # one of STAGES
    error: Optional[Type[BaseException]] = None
    message: str = ""
    values: Any = None

    def describe(self) -> str:
        if self.error is not None:
            return f"{self.error.__name__}: {self.message[:160]}"
        return f"returned {self.values!r}"[:200]


@dataclass(frozen=True)
class AllowedChange:
    """A difference an unsafe fix of ``code`` is documented to make, and why."""

    code: str
    stage: str
    matches: Callable[[Stage, Stage], bool]  # (before, after) -> whether this is the documented change
    reason: str


def _now_raises(error: Type[BaseException], fragment: str) -> Callable[[Stage, Stage], bool]:
    def matches(before: Stage, after: Stage) -> bool:
        return before.error is None and after.error is error and fragment in after.message

    return matches


def _list_now_tuple(before: Stage, after: Stage) -> bool:
    values = before.values
    return isinstance(values, list) and before.error is None and same_value(tuple(values), after.values)


UNSAFE_CHANGES: Tuple[AllowedChange, ...] = (
    AllowedChange(
        "AGF003",
        "second backward",
        _now_raises(RuntimeError, "Trying to backward through the graph a second time"),
        "save_for_backward frees what it saved after the first backward, so a second one needs retain_graph=True",
    ),
    AllowedChange(
        "AGF116",
        "forward",
        _list_now_tuple,
        "a forward that returned a list returns a tuple of the same tensors after the fix (and torch now tracks"
        " them: a list's tensors were no outputs of the graph)",
    ),
)


def observe(declaration: Declaration, fixture: LoadedFixture) -> List[Stage]:
    """The stages of one run of a declaration's call, up to the first that raises."""
    function = _target(declaration, fixture)
    args, positions = _arguments(declaration)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)  # a forward may draw random numbers
        try:
            result = function(*args)
        except Exception as exc:  # noqa: BLE001 - recorded and compared
            return [Stage("forward", type(exc), str(exc))]
        stages = [Stage("forward", values=snapshot(result))]
        outputs = _differentiable_outputs(result)
        if not outputs or not positions:
            return stages
        seed = torch.zeros_like if declaration.zero_grad else torch.ones_like
        inputs = [args[position] for position in positions]
        for name in STAGES[1:]:
            try:
                found = torch.autograd.grad(outputs, inputs, [seed(output) for output in outputs], allow_unused=True)
            except Exception as exc:  # noqa: BLE001 - recorded and compared
                stages.append(Stage(name, type(exc), str(exc)))
                break
            stages.append(Stage(name, values=snapshot(list(found))))
    return stages


def _same_stage(before: Stage, after: Stage) -> bool:
    if before.error is not None or after.error is not None:
        return before.error is after.error
    return same_value(before.values, after.values)


def _repaired(before: Stage, fixed_codes: FrozenSet[str]) -> bool:
    """Whether the original raised, at this stage, the error a fixed finding's rule names."""
    for code in fixed_codes:
        if REPAIRED_ERRORS.get(code, ("",))[0] == before.name and is_repaired_error(code, before.error, before.message):
            return True
    return False


def difference(
    before: Sequence[Stage], after: Sequence[Stage], fixed_codes: FrozenSet[str], unsafe: bool
) -> Optional[str]:
    """What changed that neither a repair nor a documented unsafe change explains; None when nothing did."""
    for index, name in enumerate(STAGES):
        old = before[index] if index < len(before) else None
        new = after[index] if index < len(after) else None
        if old is None and new is None:
            return None
        if old is not None and new is not None and _same_stage(old, new):
            continue
        if old is not None and new is not None and _repaired(old, fixed_codes):
            if new.error is None:
                return None  # the fix got past the error it repairs: what follows is new behaviour
            return f"{name}: raised {old.describe()} before, {new.describe()} after its fix"
        if unsafe and old is not None and new is not None:
            allowed = [
                change for change in UNSAFE_CHANGES
                if change.code in fixed_codes and change.stage == name and change.matches(old, new)
            ]
            if allowed and index + 1 >= len(before):
                return None  # the original went no further: what follows is new behaviour
            if allowed:
                continue
        return (
            f"{name}: before {old.describe() if old else 'not reached'}; "
            f"after {new.describe() if new else 'not reached'}"
        )
    return None


@dataclass
class Observed:
    """A fixture as loaded, with each declaration's run (declarations in file order)."""

    blocks: List[ClassBlock]
    runs: List[List[List[Stage]]]  # per block, per declaration


def _blocks(path: Path) -> List[ClassBlock]:
    """The declared classes of an oracle fixture; of another fixture, each with its implied call."""
    return parse_fixture(path) if "# torch:" in path.read_text(encoding="utf-8") else implied_blocks(path)


def _observe_file(path: Path) -> Observed:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fixture = load_fixture(path)
    blocks = [block for block in _blocks(path) if hasattr(fixture.classes[block.line], "apply")]
    runs = [[observe(declaration, fixture) for declaration in block.declarations] for block in blocks]
    return Observed(blocks, runs)


@lru_cache(maxsize=None)
def offers_fixes(path: Path) -> bool:
    """Whether a finding of the fixture has a fix, safe or not."""
    findings, _ = lint_lines(source_lines(path.read_text(encoding="utf-8")), path.name, MODES["unsafe"])
    return any(finding.fix is not None for finding in findings)


@lru_cache(maxsize=None)
def original(path: Path) -> Optional[Observed]:
    """The original fixture's runs; None for one that does not import with torch alone."""
    try:
        return _observe_file(path)
    except ImportError:
        return None


@dataclass(frozen=True)
class Helper:
    """A top-level function of a fixture: its lines and its text."""

    start: int
    end: int
    text: str


def _spans(text: str, blocks: Sequence[ClassBlock]) -> Tuple[List[str], Dict[str, Helper]]:
    """Each class's text (block order) and each top-level function, by name."""
    lines = source_lines(text)
    classes = ["".join(lines[block.line - 1:block.end_line]) for block in blocks]
    helpers = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef):
            end = node.end_lineno or node.lineno
            helpers[node.name] = Helper(node.lineno, end, "".join(lines[node.lineno - 1:end]))
    return classes, helpers


@pytest.mark.parametrize("mode", sorted(MODES))
def test_fixed_oracle_fixtures_do_what_the_originals_did(mode: str, tmp_path: Path) -> None:
    torch.set_num_threads(1)
    options = MODES[mode]
    problems: List[str] = []
    classes_run = classes_fixed = 0
    for path in FIXTURE_PATHS:
        text = path.read_text(encoding="utf-8")
        declared = "# torch:" in text
        if not declared and not offers_fixes(path):
            continue  # nothing to compare, and nothing said about what it computes
        fixed_text, _, _, notice = fix_text(text, path.name, options)
        assert notice is None, f"{path.name}: {notice}"
        before = original(path)
        if before is None:
            assert not declared, f"{path.name}: an oracle fixture must import with torch alone"
            continue
        classes_run += sum(1 for runs in before.runs if runs)
        if fixed_text == text:
            continue
        fixed_path = tmp_path / path.name
        fixed_path.write_text(fixed_text, encoding="utf-8")
        after = _observe_file(fixed_path)
        assert [block.name for block in before.blocks] == [block.name for block in after.blocks], path.name
        old_classes, old_helpers = _spans(text, before.blocks)
        new_classes, new_helpers = _spans(fixed_text, after.blocks)
        fixed_findings = applied_fixes(text, path.name, options, fixed_text)
        for index, block in enumerate(before.blocks):
            targets = {declaration.target for declaration in block.declarations} - {"apply"}
            changed = old_classes[index] != new_classes[index] or any(
                name not in new_helpers or old_helpers[name].text != new_helpers[name].text for name in targets
            )
            classes_fixed += 1 if changed else 0
            spans = [(block.line, block.end_line)]
            spans += [(old_helpers[name].start, old_helpers[name].end) for name in targets]
            codes = frozenset(
                code
                for line, code, message in fixed_findings
                if any(lo <= line <= hi for lo, hi in spans) or re.search(rf"\b{block.name}\b", message)
            )
            for declaration, old, new in zip(block.declarations, before.runs[index], after.runs[index]):
                found = difference(old, new, codes, unsafe=options.unsafe_fixes)
                if found is not None:
                    problems.append(f"{declaration.where} (fixed: {', '.join(sorted(codes)) or 'nothing'}): {found}")
    assert not problems, "\n".join(problems)
    assert classes_run >= MIN_CLASSES_RUN, classes_run
    assert classes_fixed >= MIN_CLASSES_FIXED[mode], classes_fixed


def test_the_differential_check_tells_a_changed_gradient_from_a_documented_change() -> None:
    """The comparison itself: a changed gradient is reported; the documented changes only for their rule."""
    torch.set_num_threads(1)
    ones, twos = [torch.ones(2)], [torch.full((2,), 2.0)]
    ran = [Stage("forward", values=ones), Stage("backward", values=ones), Stage("second backward", values=ones)]
    changed = ran[:1] + [Stage("backward", values=twos), ran[2]]
    assert difference(ran, changed, frozenset({"AGF003"}), unsafe=True) is not None
    freed = ran[:2] + [Stage("second backward", RuntimeError, "Trying to backward through the graph a second time")]
    assert difference(ran, freed, frozenset({"AGF003"}), unsafe=True) is None
    assert difference(ran, freed, frozenset({"AGF003"}), unsafe=False) is not None
    assert difference(ran, freed, frozenset({"AGF004"}), unsafe=True) is not None
    short = ran[:1] + [Stage("backward", RuntimeError, "returned an incorrect number of gradients (expected 2, got 1)")]
    assert difference(short, ran, frozenset({"AGF004"}), unsafe=False) is None
    assert difference(short, ran, frozenset({"AGF002"}), unsafe=False) is not None
    listed = [Stage("forward", values=[torch.ones(2), torch.ones(2)])]
    tupled = [Stage("forward", values=(torch.ones(2), torch.ones(2)))]
    assert difference(listed, tupled, frozenset({"AGF116"}), unsafe=True) is None
    assert difference(listed, tupled, frozenset({"AGF116"}), unsafe=False) is not None
