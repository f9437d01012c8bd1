"""Output formats: text (as flake8 prints), JSON, SARIF 2.1.0 and GitHub workflow annotations."""

from __future__ import annotations

import json
import os
import posixpath
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Sequence, Tuple
from urllib.parse import quote_from_bytes

from .. import __version__
from ..engine.checker import INTERNAL_ERROR
from ..rules.base import DOCS_URL, Rule
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
            "code": report.code,
            "message": report.text,
            "fixable": report.fixable,
            "fix": _fix_of(report),
        }
        if item["path"] != report.path:
            item["path_bytes"] = quote_from_bytes(os.fsencode(report.path), safe="/")
        items.append(item)
    return json.dumps(items, indent=2) + "\n"


def _fix_of(report: Report) -> Optional[Dict[str, Any]]:
    """How the finding can be fixed: ``applicability`` "safe" (``--fix``) or "unsafe" (``--unsafe-fixes``,
    with what it may change); None without a fix."""
    if report.applicability is None:
        return None
    return {"applicability": report.applicability, "unsafe_because": report.unsafe_because}


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
        f"::error file={_property(shown_path(report.path))},line={report.line},col={report.column},"
        f"title={_property(report.code)}::{_data(report.text)}\n"
        for report in reports
    )


def _data(value: str) -> str:
    # The escaping GitHub's runner undoes in a command's message.
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(value: str) -> str:
    # Property values also end at ',' and ':'.
    return _data(value).replace(":", "%3A").replace(",", "%2C")


def sarif(reports: Sequence[Report], run: Run) -> str:
    rules = list(run.rules)
    descriptors: List[Dict[str, Any]] = [_descriptor(rule, rule.code in run.preview_codes) for rule in rules]
    index = {rule.code: position for position, rule in enumerate(rules)}
    if any(report.code not in index for report in reports):
        index[INTERNAL_ERROR] = len(descriptors)
        descriptors.append(
            {
                "id": INTERNAL_ERROR,
                "name": "InternalError",
                "shortDescription": {
                    "text": f"{TOOL_NAME} could not check a class: it failed on it (please report it), or the "
                    "class is nested too deeply to check"
                },
                "helpUri": PROJECT_URL,
            }
        )
    results = []
    for report in reports:
        result: Dict[str, Any] = {
            "ruleId": report.code,
            "level": "error",
            "message": {"text": f"{report.code} {report.text}"},
            "locations": [_location(report.path, report.line, report.column)],
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


def _descriptor(rule: Rule, preview: bool) -> Dict[str, Any]:
    class_name = type(rule).__name__
    descriptor: Dict[str, Any] = {
        "id": rule.code,
        "name": class_name[: -len("Rule")] if class_name.endswith("Rule") else class_name,
        "shortDescription": {"text": rule.name},
        "helpUri": DOCS_URL.format(code=rule.code),
    }
    if preview:
        descriptor["properties"] = {"tags": ["preview"]}
    return descriptor


def _location(path: str, line: int = 0, column: int = 0) -> Dict[str, Any]:
    physical: Dict[str, Any] = {"artifactLocation": {"uri": _uri(path)}}
    if line > 0:
        physical["region"] = {"startLine": line, "startColumn": max(column, 1)}
    return {"physicalLocation": physical}


def _uri(path: str) -> str:
    """A relative path stays relative (code scanning resolves it against the checkout)."""
    if os.path.isabs(path):
        return Path(path).as_uri()
    relative = posixpath.normpath(path.replace(os.sep, "/"))
    # The name's bytes, as Path.as_uri quotes them: a name that is not UTF-8 (surrogate escapes) quotes too.
    return quote_from_bytes(os.fsencode(relative), safe="/")


FORMATS: Dict[str, Callable[[Sequence[Report], Run], str]] = {
    "text": text,
    "json": json_list,
    "sarif": sarif,
    "github": github,
}
