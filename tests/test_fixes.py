"""Fixes, checked in process over every fixture and over mutants of them.

For each fix: the fixed file parses, the finding it repairs is gone, lines it does not touch are
unchanged; fixing a whole file twice changes nothing the second time; and each rule fixes exactly
what its docstring promises (and nothing it must leave to the author).
"""

from __future__ import annotations

import ast
import itertools
import textwrap
from pathlib import Path
from typing import Callable, Dict, List, Optional, Set, Tuple

import pytest
from hypothesis import given

from conftest import fixture_paths, source_lines
from flake8_autograd.adapters.command.fixer import fix_text
from flake8_autograd.adapters.command.runner import CheckOptions
from flake8_autograd.checking.checker import check_module
from flake8_autograd.core.settings import Settings
from flake8_autograd.core.fixes import Edit, Fix, apply_fixes, computing_fixes, split_lines
from flake8_autograd.rules.base import Finding
from test_properties import PROPERTIES, fixture_mutants

EVERYTHING = CheckOptions(preview=True, unsafe_fixes=True)  # every fix, safe or not
FIXABLE_CODES = {"AGF001", "AGF002", "AGF003", "AGF004", "AGF111", "AGF114", "AGF116", "AGF118", "AGF119"}


def findings_with_fixes(text: str) -> List[Finding]:
    lines = source_lines(text)
    with computing_fixes():
        return check_module(ast.parse("".join(lines)), lines, "example.py", Settings(preview=True))


def code_counts(findings: List[Finding]) -> Dict[str, int]:
    counts: Dict[str, int] = {}
    for finding in findings:
        counts[finding.code] = counts.get(finding.code, 0) + 1
    return counts


def touched_lines(fix: Fix) -> Tuple[int, int]:
    """0-based indexes of the first and last original line a fix may change."""
    (first, _), (last, _) = fix.span
    return first - 1, last - 1


def assert_only_fixed_lines_change(before: str, after: str, fix: Fix) -> None:
    """Every line before the fix's span and after it is unchanged. Compared as a prefix and a suffix, not
    through a diff, which may align a changed class with an identical copy elsewhere in the file."""
    old, new = split_lines(before), split_lines(after)
    first, last = touched_lines(fix)
    unchanged_after = len(old) - (last + 1)
    assert new[:first] == old[:first], fix
    assert len(new) >= first + unchanged_after, fix
    assert new[len(new) - unchanged_after:] == old[last + 1:], fix


def check_each_fix(text: str) -> int:
    """Apply every fix of ``text`` on its own and check it; how many there were."""
    findings = findings_with_fixes(text)
    before = code_counts(findings)
    fixable = [finding for finding in findings if finding.fix is not None]
    for finding in fixable:
        assert finding.fix is not None
        assert finding.code in FIXABLE_CODES, finding
        fixed, count = apply_fixes(text, [finding.fix])
        assert count == 1 and fixed != text, finding
        ast.parse(fixed)  # raises if a fix broke the file
        assert_only_fixed_lines_change(text, fixed, finding.fix)
        after = code_counts(findings_with_fixes(fixed))
        assert after.get(finding.code, 0) < before[finding.code], (finding, fixed)
    check_fix_pairs(text, fixable)
    return len(fixable)


ClassKey = Tuple[str, int]  # a class's qualified name, and which of the classes of that name it is


def class_at(text: str) -> Callable[[int], Optional[ClassKey]]:
    """The innermost class holding a line of ``text`` (None: outside every class)."""
    spans: List[Tuple[int, int, ClassKey]] = []
    seen: Dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                name = prefix + child.name
                seen[name] = seen.get(name, 0) + 1
                first = min([child.lineno] + [decorator.lineno for decorator in child.decorator_list])
                spans.append((first, child.end_lineno or child.lineno, (name, seen[name])))
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(text), "")

    def find(line: int) -> Optional[ClassKey]:
        enclosing = [span for span in spans if span[0] <= line <= span[1]]
        return max(enclosing, key=lambda span: span[0])[2] if enclosing else None

    return find


def codes_per_class(text: str, findings: List[Finding]) -> Dict[Optional[ClassKey], Set[str]]:
    """The codes found in each class of ``text`` (None: findings outside every class)."""
    find = class_at(text)
    codes: Dict[Optional[ClassKey], Set[str]] = {}
    for finding in findings:
        codes.setdefault(find(finding.line), set()).add(finding.code)
    return codes


def check_fix_pairs(text: str, fixable: List[Finding]) -> None:
    """Every two fixes of one class applied together: the file parses and no class gains a code."""
    find = class_at(text)
    by_class: Dict[Optional[ClassKey], List[Fix]] = {}
    for finding in fixable:
        assert finding.fix is not None
        fixes = by_class.setdefault(find(finding.line), [])
        if finding.fix not in fixes:  # one fix may repair several findings
            fixes.append(finding.fix)
    for fixes in by_class.values():
        for first, second in itertools.combinations(fixes, 2):
            fixed, _ = apply_fixes(text, [first, second])
            ast.parse(fixed)
            assert_no_new_codes(text, fixed)


def assert_no_new_codes(before: str, after: str) -> None:
    """A fixed class has no finding of a code (preview included) that it did not have before the fix."""
    old = codes_per_class(before, findings_with_fixes(before))
    new = codes_per_class(after, findings_with_fixes(after))
    for key, codes in new.items():
        assert codes <= old.get(key, set()), (key, codes - old.get(key, set()), after)


def check_whole_file(text: str) -> Tuple[str, int]:
    fixed, count, remaining, _ = fix_text(text, "example.py", EVERYTHING)
    ast.parse(fixed)
    assert_no_new_codes(text, fixed)
    assert not [finding for finding in remaining if finding.fix is not None]
    again, count_again, _, _ = fix_text(fixed, "example.py", EVERYTHING)
    assert (again, count_again) == (fixed, 0)  # a second --fix changes nothing
    return fixed, count


@pytest.mark.slow  # every fix of every fixture, one at a time
@pytest.mark.parametrize("path", fixture_paths(), ids=lambda path: path.name)
def test_every_fix_of_every_fixture_is_safe_alone(path: Path) -> None:
    check_each_fix(path.read_text(encoding="utf-8"))


@pytest.mark.slow  # every fixture fixed whole, twice
@pytest.mark.parametrize("path", fixture_paths(), ids=lambda path: path.name)
def test_fixing_every_fixture_whole_is_stable(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    fixed, count = check_whole_file(text)
    assert (fixed == text) == (count == 0)


def test_the_fixtures_exercise_every_fix() -> None:
    fixed_codes = {
        finding.code
        for path in fixture_paths()
        for finding in findings_with_fixes(path.read_text(encoding="utf-8"))
        if finding.fix is not None
    }
    assert fixed_codes >= FIXABLE_CODES


@pytest.mark.slow  # generated mutants of the fixtures
@PROPERTIES
@given(mutant=fixture_mutants())
def test_fixes_of_fixture_mutants_are_safe(mutant: Tuple[str, str]) -> None:
    _, source = mutant
    text = "".join(source_lines(source))
    check_each_fix(text)
    check_whole_file(text)


def fixed(source: str) -> str:
    text = textwrap.dedent(source)
    result: str = fix_text(text, "example.py", EVERYTHING)[0]
    return result


HEADER = "import torch\nfrom torch.autograd.function import once_differentiable\n\n\n"


def test_agf001_adds_staticmethod_outermost_but_not_over_classmethod() -> None:
    source = HEADER + textwrap.dedent(
        """\
        class Fn(torch.autograd.Function):
            @torch.no_grad()
            def forward(ctx, x):
                return x * 2

            @classmethod
            def backward(cls, ctx, grad):
                return grad * 2
        """
    )
    result = fixed(source)
    assert "    @staticmethod\n    @torch.no_grad()\n    def forward(ctx, x):" in result
    assert "    @classmethod\n    def backward(cls, ctx, grad):" in result


def test_agf002_renames_the_parameter_and_its_references_only() -> None:
    source = HEADER + textwrap.dedent(
        """\
        class Fn(torch.autograd.Function):
            @staticmethod
            def forward(self, x):
                self.save_for_backward(x)
                self.scale = [self for _ in range(1)]
                return x * 2

            @staticmethod
            def backward(self, grad):
                ctx = self
                return grad * ctx.saved_tensors[0]

            @staticmethod
            def jvp(this, grad):
                this = grad
                return this
        """
    )
    result = fixed(source)
    renamed = "def forward(ctx, x):\n        ctx.save_for_backward(x)\n        ctx.scale = [ctx for _ in range(1)]"
    assert renamed in result
    assert "def backward(self, grad):\n        ctx = self" in result  # ctx is taken
    assert "def jvp(this, grad):\n        this = grad" in result  # rebound: which value a use sees varies


def test_agf002_leaves_a_missing_ctx_to_the_author() -> None:
    source = HEADER + textwrap.dedent(
        """\
        class Fn(torch.autograd.Function):
            @staticmethod
            def forward(x):
                return x * 2

            @staticmethod
            def backward(grad):
                return grad * 2
        """
    )
    assert fixed(source) == textwrap.dedent(source)


def test_agf004_appends_nones_only_for_trailing_non_tensors() -> None:
    source = HEADER + textwrap.dedent(
        """\
        class Scale(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, scale: float, inplace: bool):
                ctx.scale = scale
                return x * scale

            @staticmethod
            def backward(ctx, grad):
                return (grad * ctx.scale,)


        class Mul(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                ctx.save_for_backward(x, y)
                return x * y

            @staticmethod
            def backward(ctx, grad):
                x, y = ctx.saved_tensors
                return grad * y
        """
    )
    result = fixed(source)
    assert "return (grad * ctx.scale, None, None,)" in result
    assert "return grad * y\n" in result  # y may be a tensor: its gradient is the author's to write


def test_agf111_agf114_agf116() -> None:
    source = HEADER + textwrap.dedent(
        """\
        class Fn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @once_differentiable
            @staticmethod
            def backward(ctx, grad):
                return [grad * 2]


        def use(x):
            return Fn()(x) + Fn.forward(None, x)
        """
    )
    result = fixed(source)
    assert "    @staticmethod\n    @once_differentiable\n    def backward" in result
    assert "return (grad * 2,)" in result
    assert "return Fn.apply(x) + Fn.forward(None, x)" in result


def test_agf003_saves_an_input_only_when_that_is_the_whole_story() -> None:
    simple = HEADER + textwrap.dedent(
        """\
        class Fn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x: torch.Tensor, y):
                ctx.x = x
                return x * y

            @staticmethod
            def backward(ctx, grad):
                return grad * ctx.x.cos(), None
        """
    )
    result = fixed(simple)
    assert "        ctx.save_for_backward(x)\n        return x * y" in result
    assert "return grad * ctx.saved_tensors[0].cos(), None" in result
    already_saving = simple.replace("ctx.x = x\n", "ctx.x = x\n        ctx.save_for_backward(y)\n")
    assert "ctx.x = x" in fixed(already_saving)
    read_elsewhere = simple + "\n    @staticmethod\n    def jvp(ctx, tangent):\n        return tangent * ctx.x\n"
    assert "ctx.x = x" in fixed(read_elsewhere)
    conditional = simple.replace("        ctx.x = x\n", "        if y:\n            ctx.x = x\n")
    assert "ctx.x = x" in fixed(conditional)


def test_agf003_saves_every_fixable_tensor_of_a_forward_in_one_call() -> None:
    two = HEADER + textwrap.dedent(
        """\
        class Fn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a: torch.Tensor, b: torch.Tensor):
                ctx.a = a
                ctx.also_a = a
                out = a * b
                ctx.b = b
                ctx.out = out
                return out

            @staticmethod
            def backward(ctx, grad):
                return grad * ctx.b * ctx.out / ctx.out, grad * ctx.a * ctx.also_a / ctx.a
        """
    )
    text, count, remaining, _ = fix_text(two, "example.py", EVERYTHING)
    assert count == 4 and not [finding for finding in remaining if finding.code == "AGF003"]
    assert text.count("save_for_backward") == 1
    # One call where the last store was (every tensor is bound by then); a tensor stored twice saved once.
    assert "        out = a * b\n        ctx.save_for_backward(a, b, out)\n        return out\n" in text
    assert (
        "return grad * ctx.saved_tensors[1] * ctx.saved_tensors[2] / ctx.saved_tensors[2], "
        "grad * ctx.saved_tensors[0] * ctx.saved_tensors[0] / ctx.saved_tensors[0]"
    ) in text
    # A store whose line holds more than the store (a comment here) is not removed: it stays, reported.
    commented = two.replace("ctx.a = a\n", "ctx.a = a  # for backward\n")
    text, count, remaining, _ = fix_text(commented, "example.py", EVERYTHING)
    assert text.count("save_for_backward") == 1 and "ctx.a = a  # for backward" in text
    assert "ctx.save_for_backward(a, b, out)" in text  # ``also_a`` holds ``a`` too
    # The store left behind now copies a saved tensor: a duplicate, which AGF003 leaves alone.
    assert [finding.code for finding in remaining].count("AGF003") == 0


def test_apply_fixes_counts_a_shared_fix_once_per_finding_and_skips_overlaps() -> None:
    text = "a = 1\nb = 2\n"
    shared = Fix((Edit((1, 0), (1, 1), "x"), Edit((2, 0), (2, 1), "y")))
    overlapping = Fix((Edit((1, 0), (2, 5), "a = 3"),))
    inside = Fix((Edit((2, 4), (2, 5), "4"),))
    assert apply_fixes(text, [shared, shared, overlapping, inside]) == ("x = 1\ny = 4\n", 3)
    same_point = Fix((Edit.insert((1, 0), "# one\n"),))
    other_point = Fix((Edit.insert((1, 0), "# two\n"),))
    assert apply_fixes(text, [same_point, other_point]) == ("# one\na = 1\nb = 2\n", 1)
    # Inserted lines take the line ending of the line they go on.
    assert apply_fixes("a = 1\r\nb = 2\n", [Fix((Edit.insert((2, 0), "c = 3\n"),))]) == ("a = 1\r\nc = 3\nb = 2\n", 1)


def test_an_instantiated_call_is_a_call_site_for_the_gradient_count() -> None:
    """``Fn()(x, s)`` passes what ``Fn.apply(x, s)`` (AGF111's fix) passes: AGF004 counts it before the fix,
    so fixing AGF111 reveals no new finding. A name bound to something else there is no call site."""
    source = HEADER + textwrap.dedent(
        """\
        class ScaleBy(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, scale=2.0):
                ctx.scale = scale
                return x * scale

            @staticmethod
            def backward(ctx, grad):
                return grad * ctx.scale


        def scale_by(x, scale):
            return ScaleBy()(x, scale)
        """
    )
    assert "AGF004" in code_counts(findings_with_fixes(source))
    shadowed = source.replace("def scale_by(x, scale):", "def scale_by(ScaleBy, x, scale):")
    assert "AGF004" not in code_counts(findings_with_fixes(shadowed))
    defaulted = source.replace("return ScaleBy()(x, scale)", "return ScaleBy()(x)")  # correct: scale defaults
    assert "AGF004" not in code_counts(findings_with_fixes(defaulted))
