"""``--baseline FILE``: the findings a project has accepted for now, so that a run reports only new ones.

The file is JSON::

    {"tool": "flake8-autograd", "version": 1,
     "findings": [{"path": "pkg/ops.py", "code": "AGF003", "message": "...", "source": "ctx.x = x", "count": 1}]}

A finding is known by its file (relative to the baseline's folder, with ``/``), its code, its message and
the text of its line, stripped; never by its line number, so that an edit elsewhere in the file does not
bring it back. ``count`` is how many such findings the file had: one more is new.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any, List, Sequence, Tuple
from typing import Counter as CounterOf

from .runner import Report

FORMAT_VERSION = 1
TOOL = "flake8-autograd"

Key = Tuple[str, str, str, str]  # path, code, message, source line
Known = CounterOf[Key]  # how many findings of each key the baseline accepts


class BaselineError(Exception):
    """The baseline cannot be read or written; the message names the file."""


def _key(report: Report, folder: Path) -> Key:
    try:
        path = os.path.relpath(os.path.abspath(report.path), folder)
    except ValueError:  # another drive (Windows): keep it absolute
        path = os.path.abspath(report.path)
    return (path.replace(os.sep, "/"), report.code, report.text, report.source)


def write_baseline(file: Path, reports: Sequence[Report]) -> None:
    folder = file.resolve().parent
    counts = Counter(_key(report, folder) for report in reports)
    findings = [
        {"path": path, "code": code, "message": message, "source": source, "count": count}
        for (path, code, message, source), count in sorted(counts.items())
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
        counts[(path, code, message, source)] += count
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
