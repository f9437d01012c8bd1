"""The README as users read it: on the package index too (absolute links only), with a starter
configuration for flake8 and one for pyproject.toml that say the same, a rule table that says which
codes have a fix, and the bundled example's output as the example gives it."""

from __future__ import annotations

import configparser
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, Set, Tuple, Union

from conftest import ROOT
from flake8_autograd.rules import PREVIEW_RULES, RULES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the test extras install tomli before Python 3.11
    import tomli as tomllib

README = (ROOT / "README.md").read_text(encoding="utf-8")
FLAKE8 = str(Path(sys.executable).parent / "flake8")
Value = Union[bool, str, Tuple[str, ...]]


def _without_code(text: str) -> str:
    """The text outside fenced blocks and inline code spans, where a link is a link."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    return re.sub(r"`[^`\n]*`", "", text)


def test_readme_links_are_absolute() -> None:
    """A relative link is dead once the README is the package's long description."""
    prose = _without_code(README)
    targets = re.findall(r"\]\(([^)\s]*)", prose)
    targets += re.findall(r"^\s*\[[^\]]+\]:\s*(\S+)", prose, re.MULTILINE)  # reference definitions
    targets += re.findall(r"""(?:href|src)=["']([^"']*)""", prose)  # HTML
    assert targets
    assert [target for target in targets if not target.startswith(("https://", "mailto:"))] == []


def _section(heading: str) -> str:
    return README.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]


def _fenced(text: str, language: str) -> str:
    found = re.search(rf"^```{language}\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    assert found, f"no {language} block"
    return found.group(1)


def _starter_flake8() -> Dict[str, Value]:
    parser = configparser.ConfigParser()
    parser.read_string(_fenced(_section("### A starter configuration"), "ini"))
    settings: Dict[str, Value] = {}
    for key, value in parser["flake8"].items():
        assert key.startswith("autograd-"), key
        if value in ("true", "false"):
            settings[key[len("autograd-"):]] = value == "true"
        elif "," in value or "\n" in value.strip() or key in ("autograd-function-bases", "autograd-ctx-names"):
            settings[key[len("autograd-"):]] = tuple(item.strip() for item in re.split(r"[,\n]", value) if item.strip())
        else:
            settings[key[len("autograd-"):]] = value
    return settings


def _starter_pyproject() -> Dict[str, Value]:
    table = tomllib.loads(_fenced(_section("### A starter configuration"), "toml"))["tool"]["flake8-autograd"]
    return {key: tuple(value) if isinstance(value, list) else value for key, value in table.items()}


def test_starter_configurations_name_the_same_options_and_values() -> None:
    flake8_settings = _starter_flake8()
    assert flake8_settings and flake8_settings == _starter_pyproject()


def _findings(output: str) -> Set[Tuple[str, str]]:
    return set(re.findall(r"^\S*?buggy_functions\.py:(\d+:\d+): (AGF\d{3})", output, re.MULTILINE))


def test_starter_configurations_give_the_same_findings(tmp_path: Path) -> None:
    """flake8 with the flake8 snippet, and the command with the pyproject one, on the bundled example."""
    example = (ROOT / "examples" / "buggy_functions.py").read_text(encoding="utf-8")
    with_flake8, with_pyproject = tmp_path / "flake8", tmp_path / "pyproject"
    for folder in (with_flake8, with_pyproject):
        folder.mkdir()
        (folder / "buggy_functions.py").write_text(example, encoding="utf-8")
    (with_flake8 / ".flake8").write_text(_fenced(_section("### A starter configuration"), "ini"), encoding="utf-8")
    (with_pyproject / "pyproject.toml").write_text(
        _fenced(_section("### A starter configuration"), "toml"), encoding="utf-8"
    )
    by_flake8 = subprocess.run(
        [FLAKE8, "--select", "AGF", "buggy_functions.py"], cwd=with_flake8, capture_output=True, text=True,
        timeout=300,
    )
    by_command = subprocess.run(
        [sys.executable, "-m", "flake8_autograd", "buggy_functions.py"], cwd=with_pyproject, capture_output=True,
        text=True, timeout=300,
    )
    assert by_flake8.returncode == by_command.returncode == 1, (by_flake8.stderr, by_command.stderr)
    assert _findings(by_flake8.stdout) == _findings(by_command.stdout)
    assert len({code for _, code in _findings(by_flake8.stdout)}) > 1  # preview is on in both


def test_rule_table_says_which_codes_have_a_fix() -> None:
    fixable = {rule.code for rule in RULES + PREVIEW_RULES if "fix" in type(rule).__dict__}
    rows = re.findall(r"^\| \[(AGF\d{3})\]\([^)]+\) \| .+ \| (default|preview) \| ([^|]+) \| [^|]+ \|$", README,
                      re.MULTILINE)
    assert {code for code, _, _ in rows} == {rule.code for rule in RULES + PREVIEW_RULES}
    for code, state, fix in rows:
        assert (fix.strip() != "—") == (code in fixable), code
        assert (state == "default") == (code in {rule.code for rule in RULES}), code


def test_readme_shows_what_the_example_command_prints(tmp_path: Path) -> None:
    """The README's output of its first command is the command's, line for line, and plain flake8 shows
    the codes on by default alone, as the README and the example's docstring say."""
    shown = re.findall(
        r"^examples/buggy_functions\.py:\d+:\d+: AGF\d{3} .*$", _fenced(_section("## Try it"), "text"), re.MULTILINE
    )
    assert shown
    printed = subprocess.run(
        [FLAKE8, "--select", "AGF", "--autograd-preview", "examples/"], cwd=ROOT, capture_output=True, text=True,
        timeout=300,
    ).stdout.splitlines()
    assert printed == shown
    default = subprocess.run(
        [FLAKE8, "--select", "AGF", "examples/"], cwd=ROOT, capture_output=True, text=True, timeout=300
    ).stdout
    assert {code for _, code in _findings(default)} == {rule.code for rule in RULES}
    assert "--autograd-preview" in (ROOT / "examples" / "buggy_functions.py").read_text(encoding="utf-8")
