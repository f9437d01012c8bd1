"""Safe and unsafe fixes, as users meet them: ``--fix`` applies only the safe ones, ``--unsafe-fixes`` the
others too; JSON and SARIF say which a finding has and why; a fix that does not repair its finding is a
failed fix, never a loop; a fix never edits a line whose code the user silenced."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import pytest

from flake8_autograd.adapters.command import fixer
from flake8_autograd.adapters.command.fixer import fix_text
from flake8_autograd.adapters.command.runner import CheckOptions
from flake8_autograd.core.findings import Finding
from flake8_autograd.core.fixes import Edit, Fix
from test_command import run

# AGF001 (safe: nothing instantiates the class) and AGF003 (unsafe: saving changes what a second
# backward does), in one class.
MIXED = textwrap.dedent(
    """\
    import torch


    class Scale(torch.autograd.Function):
        def forward(ctx, x: torch.Tensor, w: torch.Tensor):
            ctx.w = w
            return x * w

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.w, None


    def scale(x, w):
        return Scale.apply(x, w)
    """
)
SAFE_ONLY = MIXED.replace("    def forward", "    @staticmethod\n    def forward")
EVERY_FIX = SAFE_ONLY.replace("ctx.w = w", "ctx.save_for_backward(w)").replace(
    "grad * ctx.w", "grad * ctx.saved_tensors[0]"
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "ops.py").write_text(MIXED, encoding="utf-8")
    return tmp_path


def test_fix_applies_only_the_safe_fixes_and_says_how_many_more_are_unsafe(project: Path) -> None:
    result = run("--preview", "--fix", "ops.py", cwd=project)
    assert (project / "ops.py").read_text(encoding="utf-8") == SAFE_ONLY
    assert "fixed 1 of 2 findings in 1 file (1 more with --unsafe-fixes)" in result.stderr
    assert "AGF003" in result.stdout and result.returncode == 1


def test_unsafe_fixes_applies_the_others_too(project: Path) -> None:
    result = run("--preview", "--fix", "--unsafe-fixes", "ops.py", cwd=project)
    assert (project / "ops.py").read_text(encoding="utf-8") == EVERY_FIX
    assert "fixed 2 of 2 findings in 1 file" in result.stderr and "more with" not in result.stderr
    assert result.returncode == 0


def test_diff_follows_the_same_choice(project: Path) -> None:
    safe = run("--preview", "--diff", "ops.py", cwd=project)
    assert "+    @staticmethod" in safe.stdout and "save_for_backward" not in safe.stdout
    every = run("--preview", "--diff", "--unsafe-fixes", "ops.py", cwd=project)
    assert "+        ctx.save_for_backward(w)" in every.stdout
    assert (project / "ops.py").read_text(encoding="utf-8") == MIXED


def test_pyproject_turns_unsafe_fixes_on_and_the_command_line_wins(project: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.flake8-autograd]\nunsafe-fixes = true\n", encoding="utf-8")
    run("--preview", "--fix", "--no-unsafe-fixes", "ops.py", cwd=project)
    assert (project / "ops.py").read_text(encoding="utf-8") == SAFE_ONLY
    run("--preview", "--fix", "ops.py", cwd=project)
    assert (project / "ops.py").read_text(encoding="utf-8") == EVERY_FIX


# AGF002 (safe: a rename) and AGF003 (unsafe), both fixable as the file stands.
RENAMED = SAFE_ONLY.replace(
    "def backward(ctx, grad):\n        return grad * ctx.w", "def backward(self, grad):\n        return grad * self.w"
)


@pytest.fixture
def reports(tmp_path: Path) -> Path:
    assert RENAMED != SAFE_ONLY
    (tmp_path / "ops.py").write_text(RENAMED, encoding="utf-8")
    return tmp_path


def test_json_gives_each_fix_its_applicability_and_reason(reports: Path) -> None:
    items = json.loads(run("--preview", "--format", "json", "ops.py", cwd=reports).stdout)
    fixes = {item["code"]: item["fix"] for item in items}
    assert {key: fixes["AGF002"][key] for key in ("applicability", "unsafe_because")} == {
        "applicability": "safe",
        "unsafe_because": None,
    }
    assert fixes["AGF002"]["edits"]  # what the fix writes (tests/test_command_formats.py checks it applies)
    assert fixes["AGF003"]["applicability"] == "unsafe"
    assert "retain_graph=True" in fixes["AGF003"]["unsafe_because"]
    assert all(item["fixable"] for item in items)


def test_sarif_gives_the_same_as_result_properties(reports: Path) -> None:
    log = json.loads(run("--preview", "--format", "sarif", "ops.py", cwd=reports).stdout)
    properties = {result["ruleId"]: result["properties"] for result in log["runs"][0]["results"]}
    assert properties["AGF002"] == {"fixApplicability": "safe"}
    assert properties["AGF003"]["fixApplicability"] == "unsafe"
    assert "save_for_backward" in properties["AGF003"]["unsafeFixReason"]


def test_a_finding_without_a_fix_has_none_in_json(tmp_path: Path) -> None:
    # AGF005 (gradients computed whatever ctx.needs_input_grad says): no fix
    source = SAFE_ONLY.replace("return grad * ctx.w, None", "return grad * ctx.w, grad * x.sum()")
    source = source.replace("ctx.w = w", "ctx.w = w\n        x = x")
    (tmp_path / "ops.py").write_text(source, encoding="utf-8")
    items = json.loads(run("--preview", "--select", "AGF005", "--format", "json", "ops.py", cwd=tmp_path).stdout)
    assert [(item["code"], item["fixable"], item["fix"]) for item in items] == [("AGF005", False, None)]


# -- a fix never moves what the user silenced ---------------------------------------------------------
SILENCED = textwrap.dedent(
    """\
    import torch


    class Mul(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a: torch.Tensor, b: torch.Tensor):
            ctx.a = a
            ctx.b = b  # noqa: AGF003 - read by a profiler hook
            return a * b

        @staticmethod
        def backward(ctx, g):
            return g * ctx.b, g * ctx.a
    """
)


def test_a_merged_fix_that_would_move_a_silenced_store_is_not_made() -> None:
    fixed, count, remaining, _ = fix_text(SILENCED, "ops.py", CheckOptions(preview=True, unsafe_fixes=True))
    assert fixed == SILENCED and count == 0
    assert [(finding.code, finding.line, finding.fix) for finding in remaining if finding.code == "AGF003"] == [
        ("AGF003", 7, None)
    ]


def test_the_unsilenced_store_alone_is_still_fixed_when_the_silenced_one_is_not_a_tensor() -> None:
    source = SILENCED.replace("b: torch.Tensor", "b: float").replace("g * ctx.b, g * ctx.a", "g * ctx.b * ctx.a, None")
    fixed, count, _, _ = fix_text(source, "ops.py", CheckOptions(preview=True, unsafe_fixes=True))
    assert count == 1 and "ctx.save_for_backward(a)" in fixed
    assert "ctx.b = b  # noqa: AGF003 - read by a profiler hook" in fixed


# -- a fix that does not repair its finding -----------------------------------------------------------
def fake_linter(fix: Fix) -> Any:
    """lint_lines as if one rule always reported the same finding, with ``fix`` attached."""

    def lint(lines: Sequence[str], path: str, options: CheckOptions) -> Tuple[List[Finding], Optional[str]]:
        return [Finding(2, 0, "AGF999", "AGF999 always here", fix=fix)], None

    return lint


@pytest.mark.parametrize(
    "edit, why",
    [
        (Edit.insert((2, 0), "# one more line\n"), "leaves its finding"),
        (Edit.insert((2, 0), "def (\n"), "leaves the file unparsable"),
    ],
    ids=["stubborn", "unparsable"],
)
def test_a_failed_fix_is_not_applied_and_is_said(monkeypatch: pytest.MonkeyPatch, edit: Edit, why: str) -> None:
    calls: Dict[str, int] = {"lint": 0}
    lint = fake_linter(Fix((edit,)))

    def counting(*args: Any) -> Tuple[List[Finding], Optional[str]]:
        calls["lint"] += 1
        return lint(*args)  # type: ignore[no-any-return]

    monkeypatch.setattr(fixer, "lint_lines", counting)
    text = "x = 1\ny = 2\n"
    fixed, count, remaining, notice = fix_text(text, "ops.py", CheckOptions())
    assert (fixed, count) == (text, 0), why
    assert [finding.code for finding in remaining] == ["AGF999"]
    assert notice is not None and "did not repair its finding" in notice and "AGF999 at line 2" in notice
    assert calls["lint"] <= 2  # the failed fix is tried once, not once per pass


def test_a_failed_fix_does_not_stop_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    stubborn = Finding(1, 0, "AGF998", "AGF998 stays", fix=Fix((Edit.insert((1, 0), "# a\n"),)))
    good = Finding(3, 0, "AGF997", "AGF997 goes", fix=Fix((Edit((3, 0), (3, 5), "z = 3"),)))

    def lint(lines: Sequence[str], path: str, options: CheckOptions) -> Tuple[List[Finding], Optional[str]]:
        found = [Finding(1 + sum(line.startswith("# a") for line in lines), 0, "AGF998", "AGF998 stays",
                         fix=stubborn.fix)]
        if not any(line.startswith("z = 3") for line in lines):
            found.append(good)
        return found, None

    monkeypatch.setattr(fixer, "lint_lines", lint)
    fixed, count, _, notice = fix_text("a = 1\nb = 2\nc = 3\n", "ops.py", CheckOptions())
    assert fixed == "a = 1\nb = 2\nz = 3\n" and count == 1
    assert notice is not None and "AGF998" in notice and "AGF997" not in notice


# -- AGF004: Nones after a parenthesised last gradient, once ------------------------------------------
PARENTHESISED = textwrap.dedent(
    """\
    import torch


    class Scaled(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, alpha: float):
            ctx.save_for_backward(x, w)
            ctx.alpha = alpha
            return x * w * alpha

        @staticmethod
        def backward(ctx, grad):
            x, w = ctx.saved_tensors
            return grad * w * ctx.alpha, (grad * x * ctx.alpha)
    """
)


def test_agf004_appends_after_the_closing_parenthesis_and_only_once() -> None:
    options = CheckOptions(preview=True, select=("AGF004",))
    fixed, count, remaining, notice = fix_text(PARENTHESISED, "ops.py", options)
    assert "return grad * w * ctx.alpha, (grad * x * ctx.alpha), None\n" in fixed
    assert count == 1 and remaining == [] and notice is None
    again, count_again, _, _ = fix_text(fixed, "ops.py", options)
    assert (again, count_again) == (fixed, 0)


# -- AGF003: an alias unpacked from ctx and changed in place in backward -------------------------------
UNPACKED_AND_CHANGED = textwrap.dedent(
    """\
    import torch


    class Fn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x: torch.Tensor, w: torch.Tensor):
            ctx.w = w
            ctx.x = x
            return x * w

        @staticmethod
        def backward(ctx, g):
            w, x = ctx.w, ctx.x
            w.mul_(2)
            return g * w, g * x
    """
)


def test_agf003_gives_no_fix_where_backward_changes_an_unpacked_alias_in_place() -> None:
    # Saved instead, w would fail torch's version check at the second unpack: the fix is not offered.
    options = CheckOptions(preview=True, unsafe_fixes=True)
    fixed, count, _, _ = fix_text(UNPACKED_AND_CHANGED, "ops.py", options)
    assert (fixed, count) == (UNPACKED_AND_CHANGED, 0)
    rebound = UNPACKED_AND_CHANGED.replace("w.mul_(2)", "w = w * 2")  # a new tensor: the fix is made
    fixed, count, _, _ = fix_text(rebound, "ops.py", options)
    assert count == 2 and "ctx.save_for_backward(w, x)" in fixed
