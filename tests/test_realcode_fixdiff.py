"""The benchmark's list of classes a fix changes (fixdiff.py) on the tiny fixture."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import ROOT

FIXDIFF = ROOT / "benchmarks" / "realcode" / "fixdiff.py"
FIXTURE = Path(__file__).parent / "realcode_fixture"


def test_lists_each_changed_class_with_its_codes_and_safety(tmp_path: Path) -> None:
    output = tmp_path / "fixdiff.md"
    result = subprocess.run(
        [sys.executable, str(FIXDIFF), "--data", str(FIXTURE), "--cache", str(FIXTURE / "cache"), "--split", "all",
         "--output", str(output)],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert output.read_text(encoding="utf-8") == result.stdout
    lines = result.stdout.splitlines()
    assert "| alpha | `ops.py` | `MissingStatic` | AGF001 |  |" in lines
    assert "| alpha | `ops.py` | `CtxTensor` |  | AGF003 |" in lines  # changed by an unsafe fix only
    assert "| beta | `sub/extra.py` | `Twice` | AGF001 |  |" in lines
    assert lines[-3:] == [
        "7 classes changed: 6 by safe fixes, 1 by unsafe fixes (1 by unsafe fixes only)",
        "codes fixed (classes): AGF001 6, AGF003 1",
        "failed fixes (withheld; each a rule's bug): 0",
    ]


def test_only_keeps_the_named_projects() -> None:
    result = subprocess.run(
        [sys.executable, str(FIXDIFF), "--data", str(FIXTURE), "--cache", str(FIXTURE / "cache"), "--split", "all",
         "--only", "gamma"],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert [line.split(" | ")[0] for line in result.stdout.splitlines() if line.startswith("| ") and "`" in line] == [
        "| gamma", "| gamma",
    ]
