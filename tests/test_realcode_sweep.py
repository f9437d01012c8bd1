"""The benchmark's sweep (every finding of chosen codes on whole projects of a split) on the tiny fixture."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import ROOT

SWEEP = ROOT / "benchmarks" / "realcode" / "sweep.py"
FIXTURE = Path(__file__).parent / "realcode_fixture"


def sweep(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SWEEP), "--data", str(FIXTURE), "--cache", str(FIXTURE / "cache"), *args],
        capture_output=True, text=True, timeout=300,
    )


def test_lists_every_finding_of_the_selected_codes_in_the_split_only() -> None:
    result = sweep("--split", "test", "--select", "AGF001")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    findings = [line for line in lines if " AGF" in line and line.startswith("beta/")]
    assert len(findings) == 4  # the test project's four missing @staticmethods, in its subfolder too
    assert any(line.startswith("beta/sub/extra.py:7:5: AGF001 ") for line in findings)
    assert not any(line.startswith(("alpha/", "gamma/")) for line in lines)
    assert "AGF101" not in result.stdout  # not selected
    assert lines[-2:] == ["1 projects, 0 unreadable files", "AGF001: 4"]


def test_counts_only_hides_the_findings() -> None:
    result = sweep("--split", "both", "--select", "AGF001,AGF101", "--counts")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["2 projects, 0 unreadable files", "AGF001: 6", "AGF101: 2"]
