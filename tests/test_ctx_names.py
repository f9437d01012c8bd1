"""AGF002's accepted names of the ctx parameter: the default, the option (flake8, the command, their
configuration files), and the fix, which renames only names the project does not accept."""

from __future__ import annotations

import ast
import subprocess
import textwrap
from pathlib import Path
from typing import List

import pytest

from conftest import source_lines
from flake8_autograd.adapters.command.fixer import fix_text
from flake8_autograd.adapters.command.runner import CheckOptions
from flake8_autograd.core.conventions import ConventionError, CtxNames
from flake8_autograd.checking.checker import check_module
from flake8_autograd.core.settings import Settings
from test_command import COMMAND
from test_flake8_cli import flake8, output_codes

# AGF002 is a preview rule: every check here runs with preview on.
EVERY_RULE = Settings(preview=True)

NAMED = textwrap.dedent(
    """\
    import torch


    class Quantize(torch.autograd.Function):
        @staticmethod
        def forward(_ctx, x):  # unused
            return x.round()

        @staticmethod
        def backward(func_ctx, grad):
            return grad


    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(context, x):
            return x * 2

        @staticmethod
        def backward(self, grad):
            return grad * 2
    """
)
# The line of each first parameter in NAMED: _ctx, func_ctx, context, self.
UNDERSCORED, SUFFIXED, CONTEXT, SELF = 6, 10, 16, 20


def reported(source: str, names: CtxNames = CtxNames()) -> List[int]:
    lines = source_lines(source)
    return [
        finding.line
        for finding in check_module(ast.parse(source), lines, "ops.py", Settings(preview=True, ctx_names=names))
        if finding.code == "AGF002"
    ]


def test_default_accepts_ctx_underscored_and_suffixed_names() -> None:
    assert reported(NAMED) == [CONTEXT, SELF]


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        (["ctx"], [UNDERSCORED, SUFFIXED, CONTEXT, SELF]),
        (["ctx", "context"], [UNDERSCORED, SUFFIXED, SELF]),
        (["ctx", "*_ctx"], [CONTEXT, SELF]),  # * also matches nothing: _ctx ends in _ctx
        (["ctx", "func_*"], [UNDERSCORED, CONTEXT, SELF]),
    ],
)
def test_configured_names(entries: List[str], expected: List[int]) -> None:
    assert reported(NAMED, CtxNames.parse(entries)) == expected


@pytest.mark.parametrize(
    ("entries", "error"),
    [
        (["ctx", "c-x"], "'c-x' is not a parameter name"),
        (["*_ctx"], "at least one plain name"),
        ([], "plain name"),
        (["class"], "'class' is a Python keyword"),
        (["ctx", "None"], "'None' is a Python keyword"),
    ],
)
def test_unusable_names_are_refused(entries: List[str], error: str) -> None:
    with pytest.raises(ConventionError, match=error):
        CtxNames.parse(entries)


@pytest.mark.parametrize("name", ["match", "case", "type", "_"])
def test_soft_keywords_are_names(name: str) -> None:
    assert CtxNames.parse([name]).preferred == name


def test_the_message_and_the_fix_use_the_first_plain_name() -> None:
    names = CtxNames.parse(["*_ctx", "context"])
    lines = source_lines(NAMED)
    settings = Settings(preview=True, ctx_names=names)
    messages = [finding.message for finding in check_module(ast.parse(NAMED), lines, "ops.py", settings)]
    assert "AGF002 Scale.backward takes 'self' first; name the first parameter context" in messages
    fixed, *_ = fix_text(NAMED, "ops.py", CheckOptions(ctx_names=names, preview=True, unsafe_fixes=True))
    assert "def backward(context, grad):\n        return grad * 2" in fixed
    assert "def forward(_ctx, x):" in fixed and "def backward(func_ctx, grad):" in fixed


def test_the_fix_leaves_accepted_names_alone() -> None:
    fixed, *_ = fix_text(NAMED, "ops.py", CheckOptions(preview=True, unsafe_fixes=True))
    assert "def forward(_ctx, x):  # unused" in fixed
    assert "def backward(func_ctx, grad):" in fixed
    assert "def forward(ctx, x):\n        return x * 2" in fixed
    assert "def backward(ctx, grad):\n        return grad * 2" in fixed


# -- flake8 ------------------------------------------------------------------------------------


def test_flake8_option_on_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(NAMED)
    assert output_codes(flake8("--select", "AGF", "--autograd-preview", "ops.py", cwd=tmp_path)) == ["AGF002"] * 2
    strict = flake8("--select", "AGF", "--autograd-preview", "--autograd-ctx-names", "ctx", "ops.py", cwd=tmp_path)
    assert output_codes(strict) == ["AGF002"] * 4
    loose = flake8(
        "--select", "AGF", "--autograd-preview", "--autograd-ctx-names=ctx,context,self,*_ctx", "ops.py", cwd=tmp_path
    )
    assert loose.returncode == 0 and loose.stdout == ""


@pytest.mark.parametrize("config_name", ["setup.cfg", "tox.ini", ".flake8"])
def test_flake8_option_from_a_config_file(tmp_path: Path, config_name: str) -> None:
    (tmp_path / "ops.py").write_text(NAMED)
    (tmp_path / config_name).write_text("[flake8]\nautograd-ctx-names =\n    ctx,\n    context\n")
    result = flake8("--select", "AGF", "--autograd-preview", "ops.py", cwd=tmp_path)
    assert [int(line.split(":")[1]) for line in result.stdout.splitlines()] == [UNDERSCORED, SUFFIXED, SELF]


def test_flake8_refuses_an_unusable_name(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(NAMED)
    result = flake8("--select", "AGF", "--autograd-preview", "--autograd-ctx-names", "ctx,c-x", "ops.py", cwd=tmp_path)
    assert result.returncode == 2
    assert "--autograd-ctx-names: 'c-x' is not a parameter name" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("where", ["command line", "setup.cfg"])
def test_flake8_refuses_a_keyword(tmp_path: Path, where: str) -> None:
    (tmp_path / "ops.py").write_text(NAMED)
    if where == "setup.cfg":
        (tmp_path / "setup.cfg").write_text("[flake8]\nautograd-ctx-names = class\n")
        result = flake8("--select", "AGF", "--autograd-preview", "ops.py", cwd=tmp_path)
    else:
        options = ("--autograd-ctx-names", "class")
        result = flake8("--select", "AGF", "--autograd-preview", *options, "ops.py", cwd=tmp_path)
    assert result.returncode == 2
    assert "--autograd-ctx-names: 'class' is a Python keyword, which cannot name a parameter" in result.stderr
    assert "Traceback" not in result.stderr


# -- the command --------------------------------------------------------------------------------


def command(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The command with preview on (AGF002 is a preview rule)."""
    return subprocess.run([COMMAND, "--preview", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def reported_lines(result: subprocess.CompletedProcess) -> List[int]:
    return [int(line.split(":")[1]) for line in result.stdout.splitlines() if " AGF002 " in line]


def test_command_option_and_pyproject(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(NAMED)
    assert reported_lines(command("ops.py", cwd=tmp_path)) == [CONTEXT, SELF]
    strict = command("--ctx-names", "ctx", "ops.py", cwd=tmp_path)
    assert reported_lines(strict) == [UNDERSCORED, SUFFIXED, CONTEXT, SELF]
    (tmp_path / "pyproject.toml").write_text('[tool.flake8-autograd]\nctx-names = ["ctx", "self"]\n')
    assert reported_lines(command("ops.py", cwd=tmp_path)) == [UNDERSCORED, SUFFIXED, CONTEXT]
    # The command line wins over the file.
    overridden = command("--ctx-names", "ctx,context", "ops.py", cwd=tmp_path)
    assert reported_lines(overridden) == [UNDERSCORED, SUFFIXED, SELF]


def test_command_refuses_an_unusable_name(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(NAMED)
    result = command("--ctx-names", "*_ctx", "ops.py", cwd=tmp_path)
    assert result.returncode == 2
    assert "--ctx-names: needs at least one plain name" in result.stderr
    (tmp_path / "pyproject.toml").write_text('[tool.flake8-autograd]\nctx-names = ["c-x"]\n')
    result = command("ops.py", cwd=tmp_path)
    assert result.returncode == 2
    assert "ctx-names in" in result.stderr and "'c-x' is not a parameter name" in result.stderr


def test_command_refuses_a_keyword_and_fixes_nothing(tmp_path: Path) -> None:
    """Renamed to a keyword, the file would not parse, and every other fix of it would be dropped."""
    (tmp_path / "ops.py").write_text(NAMED)
    result = command("--fix", "--ctx-names", "None", "ops.py", cwd=tmp_path)
    assert result.returncode == 2
    assert "--ctx-names: 'None' is a Python keyword, which cannot name a parameter" in result.stderr
    assert (tmp_path / "ops.py").read_text() == NAMED
    (tmp_path / "pyproject.toml").write_text('[tool.flake8-autograd]\nctx-names = ["ctx", "class"]\n')
    result = command("ops.py", cwd=tmp_path)
    assert result.returncode == 2
    assert "ctx-names in" in result.stderr and "'class' is a Python keyword" in result.stderr


def test_command_fix_keeps_underscored_ctx(tmp_path: Path) -> None:
    path = tmp_path / "ops.py"
    path.write_text(NAMED)
    result = command("--fix", "ops.py", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    text = path.read_text()
    assert "def forward(_ctx, x):  # unused" in text and "def backward(func_ctx, grad):" in text
    assert "def forward(context" not in text and "def backward(self" not in text


# -- names written in other forms of the same letters ---------------------------------------------
# Python reads identifiers NFKC-normalized: ``ｃｔｘ`` (fullwidth) is ``ctx``, and ``ｃｔｘ.ｘ`` is ``ctx.x``.
FULLWIDTH = textwrap.dedent(
    """\
    import torch


    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(\uff43\uff54\uff58, x):
            \uff43\uff54\uff58.\uff58 = 2
            return x * 2

        @staticmethod
        def backward(\uff43\uff54\uff58, grad):
            return grad * ctx.x
    """
)


def test_identifiers_are_read_as_python_reads_them() -> None:
    findings = check_module(ast.parse(FULLWIDTH), source_lines(FULLWIDTH), "ops.py", EVERY_RULE)
    assert [finding.message for finding in findings] == []  # no AGF002 for ctx, no AGF124 for ctx.x


def test_identifiers_are_read_as_python_reads_them_by_flake8_and_the_command(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(FULLWIDTH, encoding="utf-8")
    through_flake8 = flake8("--select", "AGF", "--autograd-preview", "ops.py", cwd=tmp_path)
    assert (through_flake8.returncode, through_flake8.stdout) == (0, "")
    through_command = command("ops.py", cwd=tmp_path)
    assert (through_command.returncode, through_command.stdout, through_command.stderr) == (0, "", "")


def test_a_fix_that_would_rewrite_such_a_name_is_withheld() -> None:
    """``ｓｅｌｆ`` is ``self``: reported, but its rename is not made (the fix regenerates the name as
    Python reads it, which the file does not hold)."""
    source = FULLWIDTH.replace("\uff43\uff54\uff58", "\uff53\uff45\uff4c\uff46").replace("ctx.x", "self.x")
    findings = check_module(ast.parse(source), source_lines(source), "ops.py", EVERY_RULE)
    assert [(finding.line, finding.code) for finding in findings] == [(6, "AGF002"), (11, "AGF002")]
    assert "takes 'self' first" in findings[0].message
    fixed, count, _findings, _notice = fix_text(source, "ops.py", CheckOptions(preview=True, unsafe_fixes=True))
    assert (fixed, count) == (source, 0)
