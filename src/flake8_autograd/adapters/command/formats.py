"""Output formats: text (as flake8 prints), JSON, SARIF 2.1.0 and GitHub workflow annotations."""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Sequence, Tuple
from typing import Counter as CounterOf
from urllib.parse import quote_from_bytes, urljoin

from ... import __version__
from ...checking.checker import INTERNAL_ERROR
from ...rules.base import DOCS_URL, Rule
from .baseline import mask_line_numbers
from .explain import explain
from .runner import Report

PROJECT_URL = "https://github.com/flake8-autograd/flake8-autograd"
TOOL_NAME = "flake8-autograd"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"


@dataclass(frozen=True)
class Run:
    """What every format may show besides the findings."""

    rules: Sequence[Rule]  # the rules that ran
    preview_codes: FrozenSet[str]  # the codes among them that are preview rules
    errors: Sequence[Tuple[str, str]]  # (path, why it could not be checked)


def text(reports: Sequence[Report], run: Run) -> str:
    return "".join(f"{report.path}:{report.line}:{report.column}: {report.code} {report.text}\n" for report in reports)


def json_list(reports: Sequence[Report], run: Run) -> str:
    """A list of findings. Every string is valid Unicode: a file name that is not UTF-8 is shown with
    U+FFFD for each byte that does not decode, and its exact bytes are in ``path_bytes``, percent-encoded
    (``bad%FF.py``; ``urllib.parse.unquote_to_bytes`` gives them back). Python's lone surrogates would
    be read back as U+FFFD anyway, and the name lost."""
    items = []
    for report in reports:
        item: Dict[str, Any] = {
            "path": shown_path(report.path),
            "line": report.line,
            "column": report.column,
            "end_line": report.end_line,
            "end_column": report.end_column,
            "code": report.code,
            "message": report.text,
            "url": _rule_url(report.code),
            "fixable": report.fixable,
            "fix": _fix_of(report, with_edits=True),
        }
        if item["path"] != report.path:
            item["path_bytes"] = quote_from_bytes(os.fsencode(report.path), safe="/")
        items.append(item)
    return json.dumps(items, indent=2) + "\n"


def _rule_url(code: str) -> str:
    """The page of the rule (of the project, for a failure of the command itself)."""
    return PROJECT_URL if code == INTERNAL_ERROR else DOCS_URL.format(code=code)


def _fix_of(report: Report, with_edits: bool = False) -> Optional[Dict[str, Any]]:
    """How the finding can be fixed: ``applicability`` "safe" (``--fix``) or "unsafe" (``--unsafe-fixes``,
    with what it may change); None without a fix. ``edits``: what the fix changes in the file as it is,
    each a replacement of the text from ``location`` up to (not including) ``end_location`` by ``content``;
    lines and columns count from 1, as the finding's own do."""
    if report.applicability is None:
        return None
    fix: Dict[str, Any] = {"applicability": report.applicability, "unsafe_because": report.unsafe_because}
    if with_edits:
        fix["edits"] = [
            {
                "content": edit.replacement,
                "location": {"line": edit.start[0], "column": edit.start[1] + 1},
                "end_location": {"line": edit.end[0], "column": edit.end[1] + 1},
            }
            for edit in sorted(report.edits, key=lambda edit: (edit.start, edit.end))
        ]
    return fix


def shown_path(path: str) -> str:
    """``path`` as valid Unicode: each byte of a name that is not UTF-8 (held as a surrogate escape) shown
    as U+FFFD, as a terminal or a browser shows it."""
    if path.isascii():
        return path
    return os.fsencode(path).decode("utf-8", "replace")


def github(reports: Sequence[Report], run: Run) -> str:
    """Workflow commands; GitHub shows each as an annotation on the file and line (a file name that is not
    UTF-8 with U+FFFD for its bytes that do not decode: the runner reads UTF-8)."""
    return "".join(
        f"::error file={_property(shown_path(_relative(report.path)))},line={report.line},col={report.column},"
        f"title={_property(report.code)}::{_data(report.text)}\n"
        for report in reports
    )


def _data(value: str) -> str:
    # The escaping GitHub's runner undoes in a command's message.
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(value: str) -> str:
    # Property values also end at ',' and ':'.
    return _data(value).replace(":", "%3A").replace(",", "%2C")


# The key of each result's fingerprint in ``partialFingerprints`` (see :func:`_fingerprints`).
FINGERPRINT = "flake8AutogradFinding/v1"


def sarif(reports: Sequence[Report], run: Run) -> str:
    rules = list(run.rules)
    descriptors: List[Dict[str, Any]] = [_descriptor(rule, rule.code in run.preview_codes) for rule in rules]
    index = {rule.code: position for position, rule in enumerate(rules)}
    if any(report.code not in index for report in reports):
        index[INTERNAL_ERROR] = len(descriptors)
        summary = (
            f"{TOOL_NAME} could not check a class: it failed on it (please report it), or the class is nested "
            "too deeply to check"
        )
        descriptors.append(
            {
                "id": INTERNAL_ERROR,
                "name": "InternalError",
                "shortDescription": {"text": summary},
                "fullDescription": {"text": summary},
                "help": {"text": summary, "markdown": summary},
                "helpUri": PROJECT_URL,
                "defaultConfiguration": {"level": "error"},
            }
        )
    levels = {descriptor["id"]: descriptor["defaultConfiguration"]["level"] for descriptor in descriptors}
    fingerprints = _fingerprints(reports)
    results = []
    for report, fingerprint in zip(reports, fingerprints):
        result: Dict[str, Any] = {
            "ruleId": report.code,
            "level": levels.get(report.code, "error"),
            "message": {"text": report.text},  # the code is the ruleId
            "locations": [_location(report.path, report.line, report.column, report.end_line, report.end_column)],
            "partialFingerprints": {FINGERPRINT: fingerprint},
        }
        if report.code in index:
            result["ruleIndex"] = index[report.code]
        fix = _fix_of(report)
        if fix is not None:
            # SARIF's own "fixes" need the replacement text; the property bag says how the command fixes it.
            result["properties"] = {"fixApplicability": fix["applicability"]}
            if fix["unsafe_because"]:
                result["properties"]["unsafeFixReason"] = fix["unsafe_because"]
        results.append(result)
    invocation: Dict[str, Any] = {"executionSuccessful": not run.errors}
    if run.errors:
        invocation["toolExecutionNotifications"] = [
            {"level": "error", "message": {"text": f"{path}: {why}"}, "locations": [_location(path)]}
            for path, why in run.errors
        ]
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": TOOL_NAME,
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": PROJECT_URL,
                        "rules": descriptors,
                    }
                },
                "invocations": [invocation],
                # Columns count characters (code points), as Python and flake8 count them.
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"


def _fingerprints(reports: Sequence[Report]) -> List[str]:
    """A fingerprint for each report that an edit elsewhere in its file leaves as it is: a hash of its
    code, file, the stripped text of its line and its message with line numbers masked (never its line or
    column), and which of the reports with that same hash in the file it is (``:1``, ``:2``...)."""
    seen: CounterOf[str] = Counter()
    fingerprints = []
    for report in reports:
        parts = (report.code, _uri(report.path), report.source, mask_line_numbers(report.text))
        digest = hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]
        seen[digest] += 1
        fingerprints.append(f"{digest}:{seen[digest]}")
    return fingerprints


def _descriptor(rule: Rule, preview: bool) -> Dict[str, Any]:
    class_name = type(rule).__name__
    page = explain(rule.code) or ""
    descriptor: Dict[str, Any] = {
        "id": rule.code,
        "name": class_name[: -len("Rule")] if class_name.endswith("Rule") else class_name,
        "shortDescription": {"text": rule.name},
        "fullDescription": {"text": what_it_does(page) or rule.name},
        "help": {"text": plain_text(page), "markdown": help_markdown(page, rule.code)},
        "helpUri": DOCS_URL.format(code=rule.code),
        # A preview rule is not yet measured precise enough to run by default: its results are warnings.
        "defaultConfiguration": {"level": "warning" if preview else "error"},
    }
    if preview:
        descriptor["properties"] = {"tags": ["preview"]}
    return descriptor


def what_it_does(page: str) -> str:
    """The "What it does" section of a rule's page, as plain text, its paragraphs unwrapped."""
    lines = page.splitlines()
    try:
        start = next(number for number, line in enumerate(lines) if line.strip().lower() == "## what it does")
    except StopIteration:
        return ""
    section = []
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        section.append(line)
    return plain_text("\n".join(section), unwrap=True)


_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_EMPHASIS = re.compile(r"(\*\*|__)(.+?)\1")
_LIST_ITEM = re.compile(r"\s*(?:[-*+]|\d+[.)])\s")
_RELATIVE_LINK = re.compile(r"(\]\()([^)\s]+)(\))")


def plain_text(markdown: str, unwrap: bool = False) -> str:
    """A page's Markdown as text: links as their words, without code quotes and bold marks; headings,
    lists and code blocks (without their fences) kept as lines. ``unwrap``: each paragraph and list item
    of prose on one line."""
    lines: List[str] = []
    fenced = False
    joinable = False  # the last line is prose that the next line of its paragraph continues
    for line in markdown.strip().splitlines():
        if line.startswith("```"):
            fenced, joinable = not fenced, False
            continue
        if fenced:
            lines.append(line)
            continue
        line = re.sub(r"^#+\s+", "", line)
        line = _EMPHASIS.sub(r"\2", _LINK.sub(r"\1", line)).replace("`", "")
        if unwrap and joinable and line.strip() and not _LIST_ITEM.match(line):
            lines[-1] += " " + line.strip()
            continue
        lines.append(line)
        joinable = bool(line.strip())
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def help_markdown(page: str, code: str) -> str:
    """The page with its relative links made absolute (a viewer shows it away from the repository)."""
    base = DOCS_URL.format(code=code)

    def absolute(match: "re.Match[str]") -> str:
        target: str = match.group(2)
        if "://" in target or target.startswith(("#", "mailto:")):
            return target.join((match.group(1), match.group(3)))
        return "".join((match.group(1), urljoin(base, target), match.group(3)))

    return _RELATIVE_LINK.sub(absolute, page)


def _location(path: str, line: int = 0, column: int = 0, end_line: int = 0, end_column: int = 0) -> Dict[str, Any]:
    physical: Dict[str, Any] = {"artifactLocation": {"uri": _uri(path)}}
    if line > 0:
        start_column = max(column, 1)
        region: Dict[str, Any] = {"startLine": line, "startColumn": start_column}
        if (end_line, end_column) >= (line, start_column):
            # SARIF's end column is the one just after the region, as the command's own end_column is
            region.update(endLine=end_line, endColumn=end_column)
        physical["region"] = region
    return {"physicalLocation": physical}


def _relative(path: str) -> str:
    """A relative path without ``./`` and ``..`` steps that lead nowhere, with ``/``; others unchanged."""
    if os.path.isabs(path):
        return path
    return posixpath.normpath(path.replace(os.sep, "/"))


def _uri(path: str) -> str:
    """A relative path stays relative (code scanning resolves it against the checkout)."""
    if os.path.isabs(path):
        return Path(path).as_uri()
    relative = _relative(path)
    # The name's bytes, as Path.as_uri quotes them: a name that is not UTF-8 (surrogate escapes) quotes too.
    return quote_from_bytes(os.fsencode(relative), safe="/")


FORMATS: Dict[str, Callable[[Sequence[Report], Run], str]] = {
    "text": text,
    "json": json_list,
    "sarif": sarif,
    "github": github,
}
