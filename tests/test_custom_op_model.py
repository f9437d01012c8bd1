"""A custom op's register_autograd read as a Function (engine/models/custom_op_model.py): the Function rules that
carry over report on the registered defs at their own lines, through the plugin and the command; the
others stay silent; fixtures tests/fixtures/customop_*.py, every case run under torch."""

from __future__ import annotations

import ast
import builtins
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, Iterator, List
from unittest import mock

import pytest

import oracle
from conftest import FIXTURES, expected_findings, lint, require_torch
from flake8_autograd.checking import checker, class_checks
from flake8_autograd.engine.analysis.module_analysis import Analysis
from flake8_autograd.engine.models.custom_op_model import declared_output_count
from flake8_autograd.engine.models.class_model import ClassModel
from flake8_autograd.core.findings import Finding
from flake8_autograd.rules import PREVIEW_RULES, RULES
from flake8_autograd.rules.base import Rule

OP_FIXTURES = sorted(FIXTURES.glob("customop_*.py"))

# The Function rules that carry over to an operator's registration (field research, section 3.4).
CARRIED_OVER = {
    "AGF003", "AGF004", "AGF005", "AGF101", "AGF102", "AGF103", "AGF104", "AGF105", "AGF106", "AGF107",
    "AGF110", "AGF116", "AGF117", "AGF122", "AGF124", "AGF128",
}


@pytest.mark.parametrize("path", OP_FIXTURES, ids=lambda path: path.name)
def test_op_fixture_findings_match_comments(path: Path) -> None:
    findings = lint(path.read_text(encoding="utf-8"), filename=str(path), preview=True)
    actual = {(finding.line, finding.code) for finding in findings}
    expected = expected_findings(path)
    assert sorted(actual - expected) == [], "unexpected findings (false alarms)"
    assert sorted(expected - actual) == [], "missed findings"


def test_op_fixtures_cover_every_carried_rule_both_ways() -> None:
    """Each carried-over code is expected somewhere, and every fixture has more silent ops than not."""
    expected = {code for path in OP_FIXTURES for _, code in expected_findings(path)}
    assert CARRIED_OVER <= expected, sorted(CARRIED_OVER - expected)
    for path in OP_FIXTURES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        ops = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.decorator_list]
        assert len(ops) >= 10, path.name


def test_only_the_rules_that_carry_over_read_registrations() -> None:
    flagged = {rule.code for rule in RULES + PREVIEW_RULES if rule.applies_to_custom_ops}
    assert flagged == CARRIED_OVER


OP = """
import torch
from torch import Tensor


@torch.library.custom_op("demo::scale", mutates_args=())
def scale(x: Tensor, alpha: float) -> Tensor:
    return x * alpha


def helper_far_away():
    return 1


def scale_setup(ctx, inputs, output):
    ctx.alpha = inputs[1]


def scale_backward(ctx, grad):
    return grad * ctx.alpha


scale.register_autograd(scale_backward, setup_context=scale_setup)
"""


def test_findings_sit_at_the_file_lines_of_defs_far_apart() -> None:
    findings = lint(OP, preview=True)
    assert [(finding.line, finding.column, finding.code) for finding in findings] == [(20, 4, "AGF004")]


def test_non_carried_rules_stay_silent_on_plain_functions() -> None:
    """No staticmethod, backward's ctx named otherwise (it is passed by position), the op called directly:
    nothing for the class rules to say."""
    backward = "def scale_backward(ctx, grad):\n    return grad * ctx.alpha"
    source = OP.replace(backward, backward.replace("ctx", "context")) + "\n\nprint(scale(torch.ones(3), 2.0))\n"
    codes = {finding.code for finding in lint(source, preview=True)}
    assert codes == {"AGF004"}


def test_noqa_and_flake8(tmp_path: Path) -> None:
    path = tmp_path / "ops.py"
    path.write_text(textwrap.dedent(OP), encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "flake8", "--select", "AGF", "--autograd-preview", str(path)],
        capture_output=True, text=True, check=False,
    )
    assert f"{path}:20:5: AGF004" in run.stdout
    quiet = textwrap.dedent(OP).replace("return grad * ctx.alpha", "return grad * ctx.alpha  # noqa: AGF004")
    path.write_text(quiet, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "flake8", "--select", "AGF", "--autograd-preview", str(path)],
        capture_output=True, text=True, check=False,
    )
    assert "AGF004" not in run.stdout


def test_command_reports_the_same(tmp_path: Path) -> None:
    path = tmp_path / "ops.py"
    path.write_text(textwrap.dedent(OP), encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "flake8_autograd", "--preview", str(path)], capture_output=True, text=True, check=False
    )
    assert f"{path}:20:5: AGF004" in run.stdout


class _Raising(Rule):
    code = "AGF004"
    name = "raises"
    message = ""
    applies_to_custom_ops = True

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        raise ValueError("boom")


def test_a_rule_that_raises_costs_one_internal_error() -> None:
    lines = textwrap.dedent(OP).splitlines(True)
    with mock.patch.object(class_checks, "rules_for", lambda settings: [_Raising()]):
        findings = checker.check_module(ast.parse("".join(lines)), lines)
    assert [(finding.line, finding.code) for finding in findings] == [(7, checker.INTERNAL_ERROR)]


def test_registrations_with_unresolved_functions_are_not_modelled() -> None:
    source = OP.replace(
        "scale.register_autograd(scale_backward, setup_context=scale_setup)",
        "scale.register_autograd(lambda ctx, grad: grad, setup_context=scale_setup)\n"
        "scale.register_autograd(scale_backward, setup_context=imported_setup)",
    )
    assert lint(source, preview=True) == []


def _returns(annotation: str) -> ast.FunctionDef:
    node = ast.parse(f"def f(x) -> {annotation}: ...").body[0]
    assert isinstance(node, ast.FunctionDef)
    return node


@pytest.mark.parametrize(
    "annotation, count",
    [("Tensor", 1), ("torch.Tensor", 1), ("tuple[Tensor, Tensor]", 2), ("Tuple[Tensor, Tensor, Tensor]", 3),
     ("List[Tensor]", 1), ("list[torch.Tensor]", 1), ("tuple[Tensor, int]", None), ("Tuple[Tensor, ...]", None),
     ("None", None), ("int", None)],
)
def test_outputs_from_the_return_annotation(annotation: str, count: object) -> None:
    assert declared_output_count(_returns(annotation)) == count


# -- torch as the oracle: every ``# torch:`` line above an op of the fixtures ---------------------------

def _declarations() -> List[oracle.Declaration]:
    found = []
    for path in OP_FIXTURES:
        lines = path.read_text(encoding="utf-8").splitlines()
        tree = ast.parse("\n".join(lines))
        helpers = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        for number, line in enumerate(lines, start=1):
            text = line.strip()
            if not text.startswith(oracle.PREFIX):
                continue
            match = oracle._DECLARATION.match(text[len(oracle.PREFIX):].strip())
            assert match is not None, f"{path.name}:{number}"
            call = ast.parse(match["call"], mode="eval").body
            assert isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in helpers
            exception = getattr(builtins, match["exc"]) if match["exc"] else None
            found.append(
                oracle.Declaration(
                    path=path, line=number, text=text, class_name=call.func.id, class_line=number,
                    target=call.func.id, args=oracle._parse_args(call, f"{path.name}:{number}"),
                    zero_grad=match["zero"] is not None, verdict="raises" if match["when"] else match["verdict"],
                    when=match["when"], exception=exception, fragment=match["fragment"] or "",
                )
            )
    return found


_LOADED: Dict[Path, oracle.LoadedFixture] = {}


@pytest.mark.oracle
@pytest.mark.parametrize("declaration", _declarations(), ids=lambda declaration: declaration.where)
def test_op_fixture_declarations_under_torch(declaration: oracle.Declaration) -> None:
    require_torch()
    path = declaration.path
    if path not in _LOADED:
        _LOADED[path] = oracle.load_fixture(path)  # each op is registered with torch once per session
    oracle.check(declaration, _LOADED[path])


def test_libcst_parses_only_the_defs_of_registrations(monkeypatch: pytest.MonkeyPatch) -> None:
    """One parse per registration, of its defs alone; none for an op without register_autograd."""
    from flake8_autograd.engine.models import custom_op_model

    parsed: List[List[str]] = []
    original = custom_op_model.parse_functions

    def counting(lines: List[str], functions: List[ast.FunctionDef]):  # type: ignore[no-untyped-def]
        parsed.append(sorted(function.name for function in functions))
        return original(lines, functions)

    monkeypatch.setattr(custom_op_model, "parse_functions", counting)
    lint(OP, preview=True)
    assert parsed == [["scale", "scale_backward", "scale_setup"]]
    parsed.clear()
    lint(OP.replace("scale.register_autograd(scale_backward, setup_context=scale_setup)", ""), preview=True)
    assert parsed == []


@pytest.mark.parametrize(
    "parameters, keyword_only, reported",
    [
        ("ctx, inputs, output", False, False),
        ("ctx, output, inputs", False, False),  # bound by name
        ("ctx, inputs, output, extra=None", False, False),
        ("ctx, inputs, **rest", False, False),  # output goes to **rest
        ("ctx, inputs, keyword_only_inputs, output", True, False),
        ("ctx, inputs, output, *, keyword_only_inputs", True, False),
        ("ctx, inputs, output", True, True),
        ("ctx, inputs, keyword_only_inputs, output", False, True),  # no keyword_only_inputs is passed
        ("ctx, inp, out", False, True),
        ("ctx, /, inputs, output", False, True),  # ctx cannot be passed by keyword
        ("*args", False, True),
    ],
)
def test_setup_context_names_against_the_keyword_call(parameters: str, keyword_only: bool, reported: bool) -> None:
    signature = "x: Tensor, *, alpha: float" if keyword_only else "x: Tensor, alpha: float"
    source = f'''
import torch
from torch import Tensor


@torch.library.custom_op("demo::scale", mutates_args=())
def scale({signature}) -> Tensor:
    return x * 2


def scale_setup({parameters}):
    pass


def scale_backward(ctx, grad):
    return (grad * 2,) + ((None,) if {not keyword_only} else ())


scale.register_autograd(scale_backward, setup_context=scale_setup)
'''
    codes = [finding.code for finding in lint(source, preview=True)]
    assert ("AGF128" in codes) is reported, codes
