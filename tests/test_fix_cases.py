"""The fix cases under torch: each module of tests/fixcases is fixed with the safe fixes only and with the
unsafe fixes too, and its ``check()`` run on the original and on each fixed version, in this process.

The cases are the ways a fix has been shown to change what working code computes (each module's docstring
says which), and the ways it must not. With safe fixes every case must give what the original gives. With
unsafe fixes too, only the cases of :data:`BY_DESIGN` may differ, and only in the documented way. Where a
case's original raises the very error a fixed rule names, the fixed one may run. :data:`CASES` adds what
each fix must (not) do. Skipped without torch.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import warnings
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, FrozenSet, Optional, Tuple, Type

import pytest

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=r"Failed to initialize NumPy", category=UserWarning)
    if os.environ.get("AGF_REQUIRE_TORCH"):
        torch = importlib.import_module("torch")
    else:
        torch = pytest.importorskip("torch", reason="the fix cases run Functions under PyTorch")

from conftest import source_lines  # noqa: E402
from flake8_autograd.adapters.command.fixer import fix_text  # noqa: E402
from flake8_autograd.adapters.command.runner import CheckOptions, lint_lines  # noqa: E402
from oracle import applied_fixes, is_repaired_error, load_fixture, same_value, snapshot  # noqa: E402
from test_command import run  # noqa: E402

FIXCASES = Path(__file__).parent / "fixcases"
CASE_PATHS = sorted(FIXCASES.glob("*.py"))

SAFE = CheckOptions(preview=True)
UNSAFE = CheckOptions(preview=True, unsafe_fixes=True)
MODES = {"safe": SAFE, "unsafe": UNSAFE}

#: Fixes that are never safe: with safe fixes only, they are not applied.
NEVER_SAFE = frozenset({"AGF003", "AGF118"})


@dataclass(frozen=True)
class ByDesign:
    """A change an unsafe fix of ``code`` is documented to make: ``check()`` now raises ``error``, or, with
    no error, gives another value (text the code prints)."""

    code: str
    error: Optional[Type[BaseException]]
    fragment: str
    reason: str


@dataclass(frozen=True)
class Expect:
    """What the fixes must do to one case, besides leaving what ``check()`` gives as it was."""

    no_fix: Tuple[str, ...] = ()  # codes whose findings carry no fix at all, safe or unsafe
    applied: Tuple[str, ...] = ()  # codes whose fix is applied with unsafe fixes
    unsafe: Tuple[str, ...] = ()  # codes whose fix is applied only with unsafe fixes
    by_design: Optional[ByDesign] = None  # with unsafe fixes, check() may raise this instead


SECOND_BACKWARD = ByDesign(
    "AGF003",
    RuntimeError,
    "Trying to backward through the graph a second time",
    "save_for_backward frees what it saved after the first backward: a second one needs retain_graph=True",
)
PRINTED_NAME = ByDesign(
    "AGF002",
    None,
    "",
    "an f-string's = specifier prints the renamed parameter's name: the text changes, nothing else",
)
CHANGED_IN_PLACE = ByDesign(
    "AGF003",
    RuntimeError,
    "modified by an inplace operation",
    "a saved input changed in place before backward fails torch's version check instead of giving a wrong gradient",
)
APPENDED = ByDesign(
    "AGF116", AttributeError, "'tuple' object has no attribute 'append'", "callers of forward get a tuple, not a list"
)
CONCATENATED = ByDesign(
    "AGF116", TypeError, "can only concatenate", "callers of forward get a tuple, not a list"
)

CASES: Dict[str, Expect] = {
    "agf001_agf002_agf003_together": Expect(applied=("AGF001", "AGF002", "AGF003"), unsafe=("AGF003",)),
    "agf002_agf003_together": Expect(applied=("AGF002", "AGF003"), unsafe=("AGF003",)),
    "agf002_fstring_attribute_debug": Expect(applied=("AGF002",), by_design=PRINTED_NAME),
    "agf002_fstring_name_debug": Expect(applied=("AGF002",), by_design=PRINTED_NAME),
    "agf002_keyword_callers": Expect(no_fix=("AGF002",)),
    "agf003_caller_changes_input": Expect(applied=("AGF003",), unsafe=("AGF003",), by_design=CHANGED_IN_PLACE),
    "agf003_changed_in_place_by_backward": Expect(),
    "agf003_ctx_alias": Expect(no_fix=("AGF003",)),
    "agf003_ctx_dict": Expect(),
    "agf003_ctx_in_lambda": Expect(no_fix=("AGF003",)),
    "agf003_ctx_in_starred_call": Expect(no_fix=("AGF003",)),
    "agf003_ctx_rebound_in_backward": Expect(no_fix=("AGF003",)),
    "agf003_double_backward": Expect(),
    "agf003_forward_composed_in_loop": Expect(no_fix=("AGF003",)),
    "agf003_identity": Expect(),
    "agf003_inner_backward_composed": Expect(no_fix=("AGF003",)),
    "agf003_inner_forward_composed": Expect(no_fix=("AGF003",)),
    "agf003_none_input": Expect(),
    "agf003_noqa_on_other_store": Expect(),
    "agf003_number_from_another_caller": Expect(no_fix=("AGF003",)),
    "agf003_output_kept": Expect(),
    "agf003_read_through_grad_fn": Expect(no_fix=("AGF003",)),
    "agf003_reads_in_another_order": Expect(applied=("AGF003",), unsafe=("AGF003",)),
    "agf003_rebound_by_del": Expect(),
    "agf003_rebound_by_except": Expect(),
    "agf003_rebound_by_exec": Expect(),
    "agf003_rebound_by_for": Expect(),
    "agf003_rebound_by_import": Expect(),
    "agf003_rebound_by_match": Expect(),
    "agf003_rebound_by_walrus": Expect(),
    "agf003_rebound_by_with": Expect(),
    "agf003_second_backward": Expect(applied=("AGF003",), unsafe=("AGF003",), by_design=SECOND_BACKWARD),
    "agf003_subclass_by_type": Expect(no_fix=("AGF003",)),
    "agf003_test_namespace_ctx": Expect(no_fix=("AGF003",)),
    "agf003_unannotated_list_input": Expect(),
    "agf003_view_output": Expect(),
    "agf004_parenthesized_gradient": Expect(applied=("AGF004",)),
    "agf111_base_defines_call": Expect(no_fix=("AGF111",)),
    "agf111_call_defined": Expect(no_fix=("AGF111",)),
    "agf111_call_patched": Expect(no_fix=("AGF111",)),
    "agf111_class_decorator": Expect(no_fix=("AGF111",)),
    "agf111_new_defined": Expect(no_fix=("AGF111",)),
    "agf116_forward_list_appended": Expect(unsafe=("AGF116",), by_design=APPENDED),
    "agf116_forward_list_concatenated": Expect(unsafe=("AGF116",), by_design=CONCATENATED),
    "agf118_data_of_non_tensor": Expect(no_fix=("AGF118",)),
    "agf118_data_of_parameter": Expect(),
}


@dataclass(frozen=True)
class Outcome:
    """What ``check()`` gave: a snapshot of its values, or the exception it raised."""

    values: Any = None
    error: Optional[Type[BaseException]] = None
    message: str = ""

    def describe(self) -> str:
        if self.error is not None:
            return f"raised {self.error.__name__}: {self.message[:160]}"
        return f"returned {self.values!r}"[:240]


def run_check(path: Path) -> Outcome:
    """Load a case from ``path`` (not entered in sys.modules) and run its check()."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module = load_fixture(path).module
        torch.manual_seed(0)
        try:
            return Outcome(values=snapshot(module.check()))
        except Exception as exc:  # noqa: BLE001 - recorded and compared
            return Outcome(error=type(exc), message=str(exc))


@lru_cache(maxsize=None)
def original_outcome(path: Path) -> Outcome:
    return run_check(path)


def _same(before: Outcome, after: Outcome) -> bool:
    if before.error is not None or after.error is not None:
        return before.error is after.error
    return same_value(before.values, after.values)


def test_every_case_has_its_expectations() -> None:
    assert sorted(CASES) == [path.stem for path in CASE_PATHS]
    for path in CASE_PATHS:
        source = path.read_text(encoding="utf-8")
        assert source.startswith('"""'), f"{path.name}: a docstring says which defect the case shows"
        assert "\ndef check():" in source, path.name


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("path", CASE_PATHS, ids=lambda path: path.stem)
def test_fixed_case_computes_what_the_original_did(path: Path, mode: str, tmp_path: Path) -> None:
    torch.set_num_threads(1)
    options = MODES[mode]
    expect = CASES[path.stem]
    text = path.read_text(encoding="utf-8")
    fixed_text, _, _, notice = fix_text(text, path.name, options)
    assert notice is None
    applied: FrozenSet[str] = frozenset(code for _, code, _ in applied_fixes(text, path.name, options, fixed_text))
    if options.unsafe_fixes:
        assert set(expect.applied) <= applied, fixed_text
    else:
        assert not applied & (NEVER_SAFE | set(expect.unsafe)), fixed_text
        assert set(expect.applied) - set(expect.unsafe) <= applied, fixed_text
    again, again_count, _, _ = fix_text(fixed_text, path.name, options)
    assert (again, again_count) == (fixed_text, 0), "a second fix changes the fixed text"
    before = original_outcome(path)
    fixed_path = tmp_path / path.name
    fixed_path.write_text(fixed_text, encoding="utf-8")
    after = run_check(fixed_path) if fixed_text != text else before
    if _same(before, after):
        return
    if before.error is not None and after.error is None:
        repairs = [code for code in applied if is_repaired_error(code, before.error, before.message)]
        assert repairs, f"before: {before.describe()}\nafter: {after.describe()}\n{fixed_text}"
        return
    documented = expect.by_design
    assert options.unsafe_fixes and documented is not None, (
        f"before: {before.describe()}\nafter: {after.describe()}\n{fixed_text}"
    )
    assert documented.code in applied
    if documented.error is None:
        assert before.error is None and after.error is None, after.describe()
        return
    assert before.error is None and after.error is documented.error, after.describe()
    assert documented.fragment in after.message, after.describe()


@pytest.mark.parametrize("path", [path for path in CASE_PATHS if CASES[path.stem].no_fix], ids=lambda path: path.stem)
def test_no_fix_is_offered_where_another_reader_may_exist(path: Path) -> None:
    codes = CASES[path.stem].no_fix
    text = path.read_text(encoding="utf-8")
    findings, _ = lint_lines(source_lines(text), path.name, UNSAFE)
    offered = [f"{finding.line}: {finding.code} {finding.message}" for finding in findings
               if finding.code in codes and finding.fix is not None]
    assert not offered
    assert fix_text(text, path.name, UNSAFE)[0] == text


def test_agf004_appends_none_after_the_closing_parenthesis_once() -> None:
    path = FIXCASES / "agf004_parenthesized_gradient.py"
    text = path.read_text(encoding="utf-8")
    fixed_text, count, remaining, notice = fix_text(text, path.name, SAFE)
    original_return = "return grad * right * ctx.factor, (grad * left * ctx.factor)"
    assert original_return in text
    assert original_return + ", None\n" in fixed_text
    assert (count, notice) == (1, None)
    assert not [finding for finding in remaining if finding.code == "AGF004"]
    assert fix_text(fixed_text, path.name, UNSAFE)[1] == 0


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_silenced_store_stays_on_ctx(mode: str) -> None:
    path = FIXCASES / "agf003_noqa_on_other_store.py"
    text = path.read_text(encoding="utf-8")
    silenced = "        ctx.right = right  # noqa: AGF003 - kept on ctx on purpose\n"
    assert silenced in text
    fixed_text = fix_text(text, path.name, MODES[mode])[0]
    assert silenced in fixed_text
    assert "save_for_backward(left, right)" not in fixed_text
    assert "ctx.right" in fixed_text.split("def backward")[1]


_SUMMARY = re.compile(r"^fixed (\d+) of (\d+) findings? in (\d+) files?(?: \((\d+) more with --unsafe-fixes\))?$", re.M)


def test_the_command_fixes_the_cases_folder_once(tmp_path: Path) -> None:
    """``flake8-autograd --preview --fix`` as a user runs it: the summary agrees with the fixes made in
    process, the files are written as ``fix_text`` gives them, and a second run fixes nothing."""
    folder = tmp_path / "fixcases"
    shutil.copytree(FIXCASES, folder, ignore=shutil.ignore_patterns("__pycache__"))
    fixed = found = changed = unsafe = 0
    expected: Dict[str, str] = {}
    for path in CASE_PATHS:
        text = path.read_text(encoding="utf-8")
        fixed_text, count, remaining, _ = fix_text(text, path.name, SAFE)
        expected[path.name] = fixed_text
        fixed += count
        found += count + len(remaining)
        changed += fixed_text != text
        unsafe += sum(1 for finding in remaining if finding.fix is not None and not finding.fix.safe)
    assert fixed > 0 and unsafe > 0
    first = run("--preview", "--fix", ".", cwd=folder)
    summary = _SUMMARY.search(first.stderr)
    assert summary is not None, first.stderr
    assert [int(group or 0) for group in summary.groups()] == [fixed, found, changed, unsafe], first.stderr
    assert first.returncode == (1 if found > fixed else 0), first.stderr
    assert {path.name: path.read_text(encoding="utf-8") for path in sorted(folder.glob("*.py"))} == expected
    second = run("--preview", "--fix", ".", cwd=folder)
    summary = _SUMMARY.search(second.stderr)
    assert summary is not None, second.stderr
    assert [int(group or 0) for group in summary.groups()] == [0, found - fixed, 0, unsafe], second.stderr
    assert {path.name: path.read_text(encoding="utf-8") for path in sorted(folder.glob("*.py"))} == expected
