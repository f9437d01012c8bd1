"""Preview codes the flake8 way: off through flake8's default ignore list, on when selected by code or group.

flake8 and the command run as users meet them (subprocesses); the decision written out for the command is
checked against flake8's own decision engine.
"""

from __future__ import annotations

import argparse
import itertools
import textwrap
from pathlib import Path
from typing import List, Optional, Sequence

import pytest
from flake8 import defaults
from flake8.style_guide import Decision, DecisionEngine

from flake8_autograd.checking import selection
from flake8_autograd.rules import MESSAGES, PREVIEW_CODES
from test_command import codes_of, run, write
from test_command_flake8_parity import assert_same, flake8

# AGF001 (forward not a staticmethod), AGF004 (one gradient for two inputs), AGF113 (a Function without
# backward); nothing else.
OPS = textwrap.dedent(
    """\
    import torch


    class Scale(torch.autograd.Function):
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, grad):
            return grad


    class NoBackward(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x
    """
)


def test_the_light_code_lists_match_the_rules() -> None:
    assert set(selection.PREVIEW_CODES) == set(PREVIEW_CODES)
    assert set(selection.CODES) == set(MESSAGES) | {"AGF000"}


@pytest.mark.parametrize(
    "select, extend_select, ignore, extend_ignore",
    list(
        itertools.product(
            [None, ["AGF"], ["AGF004"], ["E", "W"], ["AGF0", "E"]],
            [[], ["AGF1"], ["AGF004"]],
            [None, ["E501"], ["AGF"], ["AGF00"]],
            [[], ["AGF004"], ["AGF1"]],
        )
    ),
)
def test_the_commands_decision_is_flake8s(
    select: Optional[List[str]], extend_select: List[str], ignore: Optional[List[str]], extend_ignore: List[str]
) -> None:
    options = argparse.Namespace(
        select=select,
        extend_select=extend_select,
        ignore=ignore,
        extend_ignore=extend_ignore,
        extended_default_select=["AGF", "C90", "E", "F", "W"],
        extended_default_ignore=list(selection.PREVIEW_CODES),
    )
    engine = DecisionEngine(options)
    for code in ("AGF000", "AGF001", "AGF004", "AGF113"):
        ours = selection.reported(
            code, select=select, extend_select=extend_select, ignore=ignore, extend_ignore=extend_ignore
        )
        assert ours == (engine.decision_for(code) is Decision.Selected), code
    assert defaults.IGNORE  # flake8's own default ignores name no AGF code
    assert not any(code.startswith(defaults.IGNORE) for code in selection.CODES)


@pytest.mark.parametrize(
    "command_options, flake8_options, expected",
    [
        ([], [], ["AGF001"]),
        (["--select", "AGF004"], ["--select", "AGF004"], ["AGF004"]),
        (["--extend-select", "AGF004"], ["--extend-select", "AGF004"], ["AGF001", "AGF004"]),
        (["--extend-select", "AGF1"], ["--extend-select", "AGF1"], ["AGF001", "AGF113"]),
        (["--select", "AGF0"], ["--select", "AGF0"], ["AGF001", "AGF004"]),
        # The plugin's whole prefix, and an ignore list (which in flake8 drops the default ignores), keep
        # the preview codes off.
        (["--select", "AGF"], ["--select", "AGF"], ["AGF001"]),
        (["--ignore", "E501"], ["--ignore", "E501"], ["AGF001"]),
        (["--preview"], ["--autograd-preview"], ["AGF001", "AGF004", "AGF113"]),
        (["--preview", "--extend-ignore", "AGF1"], ["--autograd-preview", "--extend-ignore", "AGF1"],
         ["AGF001", "AGF004"]),
        (["--select", "AGF001,AGF113"], ["--select", "AGF001,AGF113"], ["AGF001", "AGF113"]),
        (["--extend-select", "AGF1", "--extend-ignore", "AGF113"], ["--extend-select", "AGF1", "--extend-ignore",
         "AGF113"], ["AGF001"]),
    ],
)
def test_a_selected_preview_code_runs(
    tmp_path: Path, command_options: Sequence[str], flake8_options: Sequence[str], expected: List[str]
) -> None:
    write(tmp_path, {"ops.py": OPS})
    command = run(*command_options, "ops.py", cwd=tmp_path)
    lines = assert_same(command, flake8(*flake8_options, "ops.py", cwd=tmp_path))
    assert sorted(codes_of(command)) == expected, lines
    assert _said(command.stderr) == []


def test_a_selection_in_the_configuration_runs_its_preview_codes(tmp_path: Path) -> None:
    write(tmp_path, {"ops.py": OPS, "setup.cfg": "[flake8]\nextend-select = AGF004\n"})
    assert sorted(codes_of(flake8("ops.py", cwd=tmp_path))) == ["AGF001", "AGF004"]
    assert sorted(codes_of(run("ops.py", cwd=tmp_path))) == ["AGF001", "AGF004"]
    write(tmp_path, {"pyproject.toml": '[tool.flake8-autograd]\nextend-select = ["AGF1"]\n'})
    assert sorted(codes_of(run("ops.py", cwd=tmp_path))) == ["AGF001", "AGF113"]  # the table wins


@pytest.mark.parametrize(
    "options, warning",
    [
        (["--select", "AGF999"], "selection AGF999 has no effect: no flake8-autograd code starts with AGF999"),
        (["--extend-select", "AGF9,E501"], "selection AGF9 has no effect: no flake8-autograd code starts with AGF9"),
        (["--extend-select", "AGF004", "--extend-ignore", "AGF004"],
         "selection AGF004 has no effect: AGF004 is also ignored"),
        (["--select", "AGF1", "--ignore", "AGF1"],
         "selection AGF1 has no effect: every code it selects is also ignored"),
    ],
)
def test_a_selection_that_changes_nothing_is_a_warning(tmp_path: Path, options: List[str], warning: str) -> None:
    """On stderr, once per run (flake8 -j 2 over several files too); the run goes on."""
    write(tmp_path, {f"ops{number}.py": OPS for number in range(3)})
    line = f"flake8-autograd: warning: {warning}"
    command = run(*options, ".", cwd=tmp_path)
    assert _said(command.stderr) == [line]
    for jobs in ("1", "2"):
        result = flake8("-j", jobs, *options, ".", cwd=tmp_path)
        assert _said(result.stderr) == [line]
        assert sorted(result.stdout.splitlines()) == sorted(command.stdout.splitlines())  # flake8 5: any order


def test_a_selection_that_names_no_code_of_the_plugin_is_a_warning_of_the_command(tmp_path: Path) -> None:
    # flake8 reports none of this plugin's codes either; run as its own command, it says why nothing shows.
    write(tmp_path, {"ops.py": OPS, "tox.ini": "[flake8]\nselect = E,F,W\n"})
    result = run("ops.py", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "")
    assert result.stderr == "flake8-autograd: warning: select E,F,W names no flake8-autograd code: nothing is checked\n"
    assert flake8("ops.py", cwd=tmp_path).stdout == ""


def _said(stderr: str) -> List[str]:
    """The command's stderr lines but the closing count of fixable findings."""
    return [line for line in stderr.splitlines() if "fixable with the --fix option" not in line]
