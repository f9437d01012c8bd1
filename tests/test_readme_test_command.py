"""The README's test command is the one CI runs first, character for character, and what it leaves out
(the oracle layer, the slow tests) is what CI's second stage and tox's oracle environment select."""

from __future__ import annotations

import re
import shlex
import sys

from conftest import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - a runtime dependency before Python 3.11
    import tomli as tomllib

README = (ROOT / "README.md").read_text(encoding="utf-8")
CI_RUN = (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def readme_test_command() -> str:
    """The command of the code block under the README's "Run the test suite" line."""
    match = re.search(r"^Run the test suite.*?\n```sh\n(.+?)\n```", README, re.MULTILINE | re.DOTALL)
    assert match, "the README has no 'Run the test suite' code block"
    return match.group(1)


def test_ci_runs_the_readme_test_command_exactly() -> None:
    [assigned] = re.findall(r"^README_TEST_COMMAND='(.*)'$", CI_RUN, re.MULTILINE)
    assert assigned == readme_test_command()
    assert 'eval "$README_TEST_COMMAND"' in CI_RUN


def test_the_command_runs_on_every_core_without_torch_or_slow_tests() -> None:
    command = shlex.split(readme_test_command())
    assert command[-6:] == ["python", "-m", "pytest", "-q", "-n", "auto"]
    assert '".[test]"' in readme_test_command() and "oracle" not in readme_test_command()
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert config["tool"]["pytest"]["ini_options"]["addopts"] == ["-m", "not slow"]
    assert any(dep.startswith("pytest-xdist") for dep in config["project"]["optional-dependencies"]["test"])
    assert config["project"]["optional-dependencies"]["oracle"] == ["torch==2.13.0"]


def test_the_readme_states_the_time() -> None:
    assert re.search(r"^Run the test suite \(about \d+ minutes on an idle 2-core machine", README, re.MULTILINE)


def test_ci_and_tox_run_what_the_default_leaves_out_with_torch_required() -> None:
    second = 'AGF_REQUIRE_TORCH=1 python -m pytest -q -n auto -m "oracle or slow"'
    assert second in CI_RUN and second in README
    assert 'pip install -q -e ".[test,oracle]"' in CI_RUN
    tox = (ROOT / "tox.ini").read_text(encoding="utf-8")
    assert 'commands = python -m pytest -q -n auto -m "oracle or slow" {posargs}' in tox
    assert "AGF_REQUIRE_TORCH = 1" in tox
    # The stages in order: the README's command before torch is installed.
    assert CI_RUN.index('eval "$README_TEST_COMMAND"') < CI_RUN.index(".[test,oracle]") < CI_RUN.index(second)
