"""``--baseline FILE``: the findings a project has accepted for now, so that a run reports only new ones.

The file is JSON::

    {"tool": "flake8-autograd", "version": 1,
     "findings": [{"path": "pkg/ops.py", "code": "AGF003", "message": "...", "source": "ctx.x = x", "count": 1}]}

A finding is known by its file (relative to the baseline's folder, with ``/``), its code, its message and
the text of its line, stripped; never by its line number, so that an edit elsewhere in the file does not
bring it back. A message that names a line ("after line 12") is compared with its line numbers masked,
for the same reason. ``count`` is how many such findings the file had: one more is new.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple
from typing import Counter as CounterOf

from .runner import Report

FORMAT_VERSION = 1
TOOL = "flake8-autograd"

Key = Tuple[str, str, str, str]  # path, code, message (line numbers masked), source line
Known = CounterOf[Key]  # how many findings of each key the baseline accepts


# "line 12", "lines 12 and 15", "lines 3, 5-7": the numbers an edit above them shifts.
_LINE_NUMBERS = re.compile(r"\b(lines?) \d+(?:(?:, | and | ?- ?|, and )\d+)*", re.IGNORECASE)


def mask_line_numbers(message: str) -> str:
    """``message`` with the line numbers it names replaced by ``N`` (``after line N``): what identifies a
    finding across edits elsewhere in its file (the baseline, SARIF's fingerprints)."""
    return _LINE_NUMBERS.sub(lambda match: f"{match.group(1)} N", message)


class BaselineError(Exception):
    """The baseline cannot be read or written; the message names the file."""


def _key(report: Report, folder: Path) -> Key:
    try:
        path = os.path.relpath(os.path.abspath(report.path), folder)
    except ValueError:  # another drive (Windows): keep it absolute
        path = os.path.abspath(report.path)
    return (path.replace(os.sep, "/"), report.code, mask_line_numbers(report.text), report.source)


def write_baseline(file: Path, reports: Sequence[Report]) -> None:
    folder = file.resolve().parent
    counts: CounterOf[Key] = Counter()
    messages: Dict[Key, str] = {}  # each key's message as the first of its findings says it
    for report in reports:
        key = _key(report, folder)
        counts[key] += 1
        messages.setdefault(key, report.text)
    findings = [
        {"path": path, "code": code, "message": messages[(path, code, masked, source)], "source": source,
         "count": count}
        for (path, code, masked, source), count in sorted(counts.items())
    ]
    document = {"tool": TOOL, "version": FORMAT_VERSION, "findings": findings}
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    try:
        file.write_text(text, encoding="utf-8")
    except OSError as error:
        raise BaselineError(f"{file}: cannot write the baseline: {error.strerror or error}") from None


def read_baseline(file: Path) -> Known:
    try:
        document: Any = json.loads(file.read_text(encoding="utf-8"))
    except OSError as error:
        raise BaselineError(
            f"{file}: cannot read the baseline: {error.strerror or error} (--write-baseline writes it)"
        ) from None
    except (UnicodeError, ValueError) as error:
        raise BaselineError(f"{file}: not a baseline (not JSON: {error})") from None
    findings = document.get("findings") if isinstance(document, dict) else None
    if (
        not isinstance(document, dict)
        or document.get("version") != FORMAT_VERSION
        or not isinstance(findings, list)
    ):
        raise BaselineError(f"{file}: not a baseline of version {FORMAT_VERSION} (--write-baseline writes one)")
    counts: Known = Counter()
    for item in findings:
        fields = [item.get(name) if isinstance(item, dict) else None for name in ("path", "code", "message", "source")]
        count = item.get("count", 1) if isinstance(item, dict) else None
        path, code, message, source = (value if isinstance(value, str) else None for value in fields)
        if path is None or code is None or message is None or source is None or not isinstance(count, int) or count < 1:
            raise BaselineError(f"{file}: a finding is not path, code, message, source and count: {item!r}")
        counts[(path, code, mask_line_numbers(message), source)] += count
    return counts


def new_findings(reports: Sequence[Report], file: Path, known: Known) -> List[Report]:
    """The reports the baseline does not account for, in their order."""
    folder = file.resolve().parent
    left = Counter(known)
    fresh = []
    for report in reports:
        key = _key(report, folder)
        if left[key] > 0:
            left[key] -= 1
        else:
            fresh.append(report)
    return fresh
