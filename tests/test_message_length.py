"""Messages fit on one line of a terminal or an editor hover: the problem and the fix, not the why.

Measured over every finding of the fixtures with preview on (each rule's fixture shows its templates
filled with realistic names). The why belongs in the rule's page, which ``--explain CODE`` prints.
"""

from __future__ import annotations

import statistics
from typing import Dict, List

from conftest import fixture_paths, lint

MEDIAN_LIMIT = 110  # characters of the message after the code
LONGEST_LIMIT = 130


def _messages() -> Dict[str, List[str]]:
    by_code: Dict[str, List[str]] = {}
    for path in fixture_paths():
        for finding in lint(path.read_text(encoding="utf-8"), filename=path.name, preview=True):
            text = finding.message.split(" ", 1)[1]
            by_code.setdefault(finding.code, []).append(text)
    return by_code


def test_messages_are_short() -> None:
    by_code = _messages()
    lengths = [len(text) for texts in by_code.values() for text in texts]
    assert len(by_code) >= 35 and len(lengths) >= 400  # the measure covers nearly every code
    assert statistics.median(lengths) <= MEDIAN_LIMIT
    too_long = sorted(
        (len(text), code, text) for code, texts in by_code.items() for text in texts if len(text) > LONGEST_LIMIT
    )
    assert not too_long, too_long[-5:]


def test_messages_are_one_line() -> None:
    for code, texts in _messages().items():
        for text in texts:
            assert "\n" not in text and "\r" not in text, (code, text)
