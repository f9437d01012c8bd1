"""The plugin as users meet it: the real ``flake8`` executable, in a subprocess."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import List, Optional

import pytest

from conftest import ROOT, expected_findings, fixture_paths
from flake8_autograd.rules import PREVIEW_CODES, RULES

FLAKE8 = str(Path(sys.executable).parent / "flake8")

BUGGY = textwrap.dedent(
    """\
    import torch


    class Scale(torch.autograd.Function):
        def forward(ctx, x: torch.Tensor, y: torch.Tensor):{noqa}
            ctx.save_for_backward(x, y)
            return x * y

        @staticmethod
        def backward(ctx, grad):
            x, y = ctx.saved_tensors
            return grad * y, grad * x
    """
)
# AGF001 on line 5 (on by default) and AGF005 on line 10 (preview); nothing else from the preview rules.


def flake8(*args: str, cwd: Path, stdin: Optional[str] = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [FLAKE8, *args], cwd=cwd, input=stdin, capture_output=True, text=True, timeout=300
    )


def output_codes(result: subprocess.CompletedProcess) -> List[str]:
    return [line.split(": ", 1)[1].split()[0] for line in result.stdout.splitlines() if ": AGF" in line]


def test_version_lists_the_plugin(tmp_path: Path) -> None:
    result = flake8("--version", cwd=tmp_path)
    assert result.returncode == 0
    assert "flake8-autograd" in result.stdout


def test_bundled_example_shows_every_first_code(tmp_path: Path) -> None:
    result = flake8("--select", "AGF", "--autograd-preview", str(ROOT / "examples"), cwd=tmp_path)
    assert result.returncode == 1
    assert {"AGF001", "AGF002", "AGF003", "AGF004", "AGF005"} <= set(output_codes(result))
    assert "Traceback" not in result.stderr
    by_default = flake8("--select", "AGF", str(ROOT / "examples"), cwd=tmp_path)
    assert set(output_codes(by_default)) == {rule.code for rule in RULES}


def test_select_reports_line_and_one_based_column(tmp_path: Path) -> None:
    path = tmp_path / "scale.py"
    path.write_text(BUGGY.format(noqa=""))
    assert flake8("--select", "AGF", str(path), cwd=tmp_path).stdout.splitlines() == [
        f"{path}:5:5: AGF001 Scale.forward is not a @staticmethod; add @staticmethod",
    ]
    result = flake8("--select", "AGF", "--autograd-preview", str(path), cwd=tmp_path)
    assert result.stdout.splitlines() == [
        f"{path}:5:5: AGF001 Scale.forward is not a @staticmethod; add @staticmethod",
        f"{path}:10:5: AGF005 Scale.backward always computes gradients for x, y; check "
        "ctx.needs_input_grad first",
    ]


@pytest.mark.parametrize(
    "noqa, expected",
    [
        ("  # noqa: AGF001", ["AGF005"]),
        ("  # noqa: AGF005", ["AGF001", "AGF005"]),
        ("  # noqa", ["AGF005"]),
    ],
)
def test_noqa(tmp_path: Path, noqa: str, expected: List[str]) -> None:
    path = tmp_path / "scale.py"
    path.write_text(BUGGY.format(noqa=noqa))
    assert output_codes(flake8("--select", "AGF", "--autograd-preview", str(path), cwd=tmp_path)) == expected


def test_extend_ignore(tmp_path: Path) -> None:
    path = tmp_path / "scale.py"
    path.write_text(BUGGY.format(noqa=""))
    result = flake8("--select", "AGF", "--autograd-preview", "--extend-ignore", "AGF001", str(path), cwd=tmp_path)
    assert output_codes(result) == ["AGF005"]


def test_plugin_is_on_by_default(tmp_path: Path) -> None:
    path = tmp_path / "scale.py"
    path.write_text(BUGGY.format(noqa=""))
    assert "AGF001" in output_codes(flake8(str(path), cwd=tmp_path))


def test_stdin_with_display_name(tmp_path: Path) -> None:
    result = flake8(
        "--select", "AGF", "--autograd-preview", "-", "--stdin-display-name", "x.py", cwd=tmp_path,
        stdin=BUGGY.format(noqa=""),
    )
    assert [line.split(":", 1)[0] for line in result.stdout.splitlines()] == ["x.py", "x.py"]
    assert output_codes(result) == ["AGF001", "AGF005"]


def test_parallel_run_over_fixtures_matches_expectations(tmp_path: Path) -> None:
    """``-j 2`` over every fixture file: exactly the findings the fixture comments name."""
    # As tests/test_fixtures.py: a preview rule's fixture with every rule on, a default rule's as installed.
    preview = [str(path) for path in fixture_paths() if path.name[:6].upper() in PREVIEW_CODES]
    core = [str(path) for path in fixture_paths() if path.name[:6].upper() not in PREVIEW_CODES]
    results = [flake8("-j", "2", "--select", "AGF", *core, cwd=tmp_path)]
    if preview:
        results.append(flake8("-j", "2", "--select", "AGF", "--autograd-preview", *preview, cwd=tmp_path))
    actual = set()
    for result in results:
        assert "Traceback" not in result.stderr
        for line in result.stdout.splitlines():
            path, number, _column, rest = line.split(":", 3)
            actual.add((Path(path).name, int(number), rest.split()[0]))
    expected = {(path.name, line, code) for path in fixture_paths() for line, code in expected_findings(path)}
    assert actual == expected


PROJECT_BASE = textwrap.dedent(
    """\
    from mypkg.autograd_base import KernelFunction


    class Fused(KernelFunction):
        def forward(ctx, x):
            return x
    """
)


def test_function_bases_option_on_command_line(tmp_path: Path) -> None:
    path = tmp_path / "ops.py"
    path.write_text(PROJECT_BASE)
    assert output_codes(flake8("--select", "AGF", str(path), cwd=tmp_path)) == []
    result = flake8(
        "--select", "AGF", "--autograd-function-bases", "mypkg.autograd_base.KernelFunction", str(path), cwd=tmp_path
    )
    assert output_codes(result) == ["AGF001"]


@pytest.mark.parametrize("config_name", ["setup.cfg", "tox.ini", ".flake8"])
def test_function_bases_option_from_config_file(tmp_path: Path, config_name: str) -> None:
    (tmp_path / "ops.py").write_text(PROJECT_BASE)
    (tmp_path / config_name).write_text(
        "[flake8]\nautograd-function-bases =\n    other.Base,\n    mypkg.autograd_base.KernelFunction\n"
    )
    assert output_codes(flake8("--select", "AGF", "ops.py", cwd=tmp_path)) == ["AGF001"]


LIST_RETURN = textwrap.dedent(
    """\
    import torch


    class Mul(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            return [grad * b if ctx.needs_input_grad[0] else None, grad * a if ctx.needs_input_grad[1] else None]
    """
)


def test_preview_rules_only_with_the_option(tmp_path: Path) -> None:
    path = tmp_path / "mul.py"
    path.write_text(LIST_RETURN)
    assert output_codes(flake8("--select", "AGF", str(path), cwd=tmp_path)) == []
    assert output_codes(flake8("--select", "AGF", "--autograd-preview", str(path), cwd=tmp_path)) == ["AGF116"]
    (tmp_path / "setup.cfg").write_text("[flake8]\nautograd-preview = true\n")
    assert output_codes(flake8("--select", "AGF", "mul.py", cwd=tmp_path)) == ["AGF116"]
