"""AGF126's option for projects that support a torch older than 2.13: keyword arguments to a combined-style
Function's apply are reported only when the oldest supported release is set below 2.13 (flake8's
``--autograd-min-torch-version``, its config files, the command's ``--min-torch-version`` and pyproject)."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path
from typing import List, Optional, Set, Tuple

import pytest

from conftest import FIXTURES, expected_findings, source_lines
from flake8_autograd.core.conventions import ConventionError, TorchVersion
from flake8_autograd.checking.checker import check_module
from flake8_autograd.core.settings import Settings
from test_command import run
from test_flake8_cli import flake8

FIXTURE = FIXTURES / "options" / "agf126_min_torch.py"
OLDEST_2_4 = Settings(preview=True, min_torch_version=TorchVersion(2, 4))  # AGF126 is a preview rule


def findings(release: Optional[str], path: Path = FIXTURE) -> Set[Tuple[int, str]]:
    source = path.read_text(encoding="utf-8")
    version = TorchVersion.parse(release) if release is not None else None
    return {
        (finding.line, finding.code)
        for finding in check_module(
            ast.parse(source), source_lines(source), str(path), Settings(preview=True, min_torch_version=version)
        )
    }


def reported_lines(stdout: str) -> List[int]:
    return sorted(int(line.split(":")[1]) for line in stdout.splitlines() if " AGF126 " in line)


EXPECTED_LINES = sorted(line for line, code in expected_findings(FIXTURE) if code == "AGF126")


# -- the engine --------------------------------------------------------------------------------


@pytest.mark.parametrize("release", ["2.4", "2.12", "1.13", "2.12.1"])
def test_fixture_findings_match_comments_below_2_13(release: str) -> None:
    assert sorted(findings(release)) == sorted(expected_findings(FIXTURE))


@pytest.mark.parametrize("release", [None, "2.13", "2.13.1", "2.14", "3.0"])
def test_fixture_is_silent_without_the_option_or_from_2_13(release: Optional[str]) -> None:
    assert findings(release) == set()


def test_the_message_names_the_keywords_the_release_and_the_fix() -> None:
    source = FIXTURE.read_text(encoding="utf-8")
    messages = [
        finding.message
        for finding in check_module(
            ast.parse(source), source_lines(source), "ops.py", OLDEST_2_4
        )
    ]
    assert (
        "AGF126 ScaleFunction.apply() gets keyword argument 'factor', refused before torch 2.13; pass it positionally"
    ) in messages
    assert any("keyword arguments 'x', 'factor'," in message and "pass them positionally" in message
               for message in messages)


def test_a_wrong_positional_count_is_still_reported_beside_the_option() -> None:
    source = FIXTURE.read_text(encoding="utf-8") + "\n\ndef too_many(x):\n    return ScaleFunction.apply(x, 1, 2)\n"
    last_line = source.count("\n")
    found = check_module(
        ast.parse(source), source_lines(source), "ops.py", OLDEST_2_4
    )
    assert [finding.message.split(" but ")[0] for finding in found if finding.line == last_line] == [
        "AGF126 ScaleFunction.apply() gets 3 positional arguments"
    ]


@pytest.mark.parametrize(
    ("value", "major", "minor"), [("2.4", 2, 4), ("2.10", 2, 10), (" 2.4.1 ", 2, 4), ("1.13", 1, 13)]
)
def test_release_parsing(value: str, major: int, minor: int) -> None:
    assert TorchVersion.parse(value) == TorchVersion(major, minor)


@pytest.mark.parametrize("value", ["2", "two", "2.4rc1", "v2.4", "2.4.1.0", ""])
def test_unusable_releases_are_refused(value: str) -> None:
    with pytest.raises(ConventionError, match="is not a torch release written as major.minor"):
        TorchVersion.parse(value)


def test_releases_compare_by_number() -> None:
    assert TorchVersion.parse("2.9") < TorchVersion.parse("2.13") < TorchVersion.parse("3.0")


# -- flake8 ------------------------------------------------------------------------------------


def test_flake8_option_on_the_command_line(tmp_path: Path) -> None:
    shutil.copy(FIXTURE, tmp_path / "ops.py")
    assert reported_lines(flake8("--select", "AGF", "--autograd-preview", "ops.py", cwd=tmp_path).stdout) == []
    older = flake8(
        "--select", "AGF", "--autograd-preview", "--autograd-min-torch-version", "2.4", "ops.py", cwd=tmp_path
    )
    assert older.returncode == 1 and reported_lines(older.stdout) == EXPECTED_LINES
    newer = flake8(
        "--select", "AGF", "--autograd-preview", "--autograd-min-torch-version=2.13", "ops.py", cwd=tmp_path
    )
    assert newer.returncode == 0 and newer.stdout == ""


@pytest.mark.parametrize("config_name", ["setup.cfg", "tox.ini", ".flake8"])
def test_flake8_option_from_a_config_file(tmp_path: Path, config_name: str) -> None:
    shutil.copy(FIXTURE, tmp_path / "ops.py")
    (tmp_path / config_name).write_text("[flake8]\nautograd-preview = true\nautograd-min-torch-version = 2.1\n")
    assert reported_lines(flake8("--select", "AGF", "ops.py", cwd=tmp_path).stdout) == EXPECTED_LINES


def test_flake8_refuses_an_unusable_release(tmp_path: Path) -> None:
    shutil.copy(FIXTURE, tmp_path / "ops.py")
    result = flake8("--select", "AGF", "--autograd-preview", "--autograd-min-torch-version", "2.x", "ops.py",
                    cwd=tmp_path)
    assert result.returncode == 2
    assert "--autograd-min-torch-version: '2.x' is not a torch release written as major.minor" in result.stderr
    assert "Traceback" not in result.stderr
    (tmp_path / "setup.cfg").write_text("[flake8]\nautograd-min-torch-version = latest\n")
    result = flake8("--select", "AGF", "--autograd-preview", "ops.py", cwd=tmp_path)
    assert result.returncode == 2 and "'latest' is not a torch release" in result.stderr
    assert "Traceback" not in result.stderr


# -- the command --------------------------------------------------------------------------------


def test_command_option_and_pyproject(tmp_path: Path) -> None:
    shutil.copy(FIXTURE, tmp_path / "ops.py")
    assert reported_lines(run("--preview", "ops.py", cwd=tmp_path).stdout) == []
    older = run("--preview", "--min-torch-version", "2.4", "ops.py", cwd=tmp_path)
    assert older.returncode == 1 and reported_lines(older.stdout) == EXPECTED_LINES
    (tmp_path / "pyproject.toml").write_text('[tool.flake8-autograd]\npreview = true\nmin-torch-version = "2.4"\n')
    assert reported_lines(run("ops.py", cwd=tmp_path).stdout) == EXPECTED_LINES
    # The command line wins over the file.
    assert reported_lines(run("--min-torch-version", "2.13", "ops.py", cwd=tmp_path).stdout) == []


def test_command_refuses_an_unusable_release(tmp_path: Path) -> None:
    shutil.copy(FIXTURE, tmp_path / "ops.py")
    result = run("--preview", "--min-torch-version", "2", "ops.py", cwd=tmp_path)
    assert result.returncode == 2 and "--min-torch-version: '2' is not a torch release" in result.stderr
    (tmp_path / "pyproject.toml").write_text('[tool.flake8-autograd]\nmin-torch-version = "newest"\n')
    result = run("--preview", "ops.py", cwd=tmp_path)
    assert result.returncode == 2 and "min-torch-version in" in result.stderr and "'newest'" in result.stderr
    # A TOML number loses the zeros of 2.10: only a string is taken.
    (tmp_path / "pyproject.toml").write_text("[tool.flake8-autograd]\nmin-torch-version = 2.10\n")
    result = run("--preview", "ops.py", cwd=tmp_path)
    assert result.returncode == 2 and 'min-torch-version: expected a string, like "2.4"' in result.stderr
    assert "Traceback" not in result.stderr
