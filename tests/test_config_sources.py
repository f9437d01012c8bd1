"""One configuration: the command reads the ``[flake8]`` section flake8 reads (setup.cfg, tox.ini, .flake8)
as well as ``[tool.flake8-autograd]``, and reports what flake8 reports on the same project."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import List

import pytest

from test_command import findings_of, run, write
from test_command_flake8_parity import assert_same, flake8

# A project base class (autograd-function-bases), a ctx parameter named `context` (autograd-ctx-names),
# keyword arguments to apply (AGF126 with autograd-min-torch-version below 2.13); a copy under vendored/
# (exclude).
OPS = textwrap.dedent(
    """\
    import torch
    from mypkg.base import KernelFunction


    class Scale(KernelFunction):
        @staticmethod
        def forward(context, x, y):
            context.save_for_backward(x, y)
            return x * y

        @staticmethod
        def backward(context, grad):
            x, y = context.saved_tensors
            return grad * y


    class Plain(torch.autograd.Function):
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad


    def use(x):
        return Plain.apply(x=x)
    """
)

FLAKE8_SECTION = textwrap.dedent(
    """\
    [flake8]
    max-line-length = 100
    autograd-function-bases = mypkg.base.KernelFunction
    autograd_ctx_names = context
    extend-select = AGF002, AGF004,AGF126
    autograd-min-torch-version = 2.4
    extend-exclude = vendored
    """
)

PYPROJECT_TABLE = textwrap.dedent(
    """\
    [tool.flake8-autograd]
    function-bases = ["mypkg.base.KernelFunction"]
    ctx-names = ["context"]
    extend-select = ["AGF002", "AGF004", "AGF126"]
    min-torch-version = "2.4"
    exclude = ["vendored"]
    """
)

# flake8 does not read pyproject.toml: for that source, it gets the same options on its command line.
FLAKE8_OPTIONS = [
    "--autograd-function-bases", "mypkg.base.KernelFunction", "--autograd-ctx-names", "context",
    "--extend-select", "AGF002,AGF004,AGF126", "--autograd-min-torch-version", "2.4", "--extend-exclude", "vendored",
]

EXPECTED = [
    ("ops.py", 14, "AGF004"),  # Scale, a Function through the project's base
    ("ops.py", 18, "AGF001"),
    ("ops.py", 18, "AGF002"),  # ctx where `context` is the accepted name
    ("ops.py", 22, "AGF002"),
    ("ops.py", 27, "AGF126"),  # a keyword argument to apply, refused by torch 2.4
]


@pytest.mark.parametrize("source", ["setup.cfg", "tox.ini", ".flake8", "pyproject.toml"])
def test_each_configuration_source_gives_flake8s_findings(tmp_path: Path, source: str) -> None:
    text = PYPROJECT_TABLE if source == "pyproject.toml" else FLAKE8_SECTION
    write(tmp_path, {"ops.py": OPS, "vendored/ops.py": OPS, source: text, "pkg/__init__.py": ""})
    options = FLAKE8_OPTIONS if source == "pyproject.toml" else []
    for folder in (tmp_path, tmp_path / "pkg"):  # found from a folder below the project's too
        command = run("..", cwd=tmp_path / "pkg") if folder != tmp_path else run(cwd=tmp_path)
        reference = flake8(*options, *([".."] if folder != tmp_path else []), cwd=folder)
        assert_same(command, reference)
        assert findings_of(command) == EXPECTED
        assert "warning" not in command.stderr and "error" not in command.stderr, command.stderr


def test_without_configuration_none_of_it_applies(tmp_path: Path) -> None:
    write(tmp_path, {"ops.py": OPS, "vendored/ops.py": OPS, "setup.cfg": "[metadata]\nname = x\n"})
    command = run(cwd=tmp_path)
    assert_same(command, flake8(cwd=tmp_path))
    assert findings_of(command) == [("ops.py", 18, "AGF001"), ("ops.py", 18, "AGF001")]


def test_the_file_flake8_reads_is_the_one_the_command_reads(tmp_path: Path) -> None:
    """In one folder setup.cfg, then tox.ini, then .flake8, the first with a [flake8] section; the nearest
    folder that has one; a file that does not parse is passed over."""
    section = "[flake8]\nautograd-function-bases = mypkg.base.KernelFunction\nextend-select = {}\n"
    write(
        tmp_path,
        {
            "ops.py": OPS,
            "setup.cfg": "[metadata]\nname = x\n",  # no [flake8] section: not flake8's file
            "tox.ini": section.format("AGF004"),
            ".flake8": section.format("AGF002"),
            "sub/ops.py": OPS,
            "sub/setup.cfg": "not an ini file\n",
            "sub/tox.ini": "[flake8:local-plugins]\n",  # flake8's file, without options
            "sub/.flake8": section.format("AGF122"),
        },
    )

    def codes(folder: Path) -> List[str]:
        command = run(cwd=folder)
        assert_same(command, flake8(cwd=folder))
        return sorted({code for _, _, code in findings_of(command)})

    assert codes(tmp_path) == ["AGF001", "AGF004"]  # tox.ini's
    assert codes(tmp_path / "sub") == ["AGF001"]  # tox.ini's local-plugins section: no option set


def test_precedence_command_line_then_pyproject_then_flake8(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "ops.py": OPS,
            "setup.cfg": (
                "[flake8]\nextend-select = AGF004\nautograd-ctx-names = context\nautograd-preview = false\n"
                "autograd-min-torch-version = 2.4\n"
            ),
            "pyproject.toml": '[tool.flake8-autograd]\nextend-select = ["AGF002"]\n',
        },
    )
    # extend-select from the table; ctx-names, which the table does not set, from setup.cfg.
    assert findings_of(run(cwd=tmp_path)) == [
        ("ops.py", 18, "AGF001"), ("ops.py", 18, "AGF002"), ("ops.py", 22, "AGF002")
    ]
    assert findings_of(run("--extend-select", "AGF126", cwd=tmp_path)) == [
        ("ops.py", 18, "AGF001"), ("ops.py", 27, "AGF126")
    ]
    # ctx-names on the command line wins: the Function that names it ctx is fine, and no other is checked.
    assert [code for _, _, code in findings_of(run("--ctx-names", "ctx", cwd=tmp_path))] == ["AGF001"]


def test_another_plugins_selection_that_flake8_takes_is_left_to_it(tmp_path: Path) -> None:
    write(tmp_path, {"ops.py": OPS, "setup.cfg": "[flake8]\nextend-select = ASYNC, AGF004\n"})
    assert [code for _, _, code in findings_of(run(cwd=tmp_path))] == ["AGF001"]  # AGF004 needs the base


@pytest.mark.parametrize(
    "section, complaint",
    [
        ("[flake8]\nautograd-preview = maybe\n", "setup.cfg: [flake8] autograd-preview: expected true or false"),
        ("[flake8]\nextend-select = agf1\n", "extend-select in "),
        ("[flake8]\nautograd-ctx-names = class\n", "autograd-ctx-names in "),
        ("[flake8]\nautograd-min-torch-version = two\n", "autograd-min-torch-version in "),
    ],
)
def test_a_bad_flake8_section_is_a_usage_error(tmp_path: Path, section: str, complaint: str) -> None:
    write(tmp_path, {"ops.py": OPS, "setup.cfg": section})
    result = run(cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert complaint in result.stderr and "setup.cfg" in result.stderr
