"""The real-code benchmark's scorer on a tiny fixture: three projects already in a cache folder, labels
that the linter partly disagrees with, adjudications and judgements. No network."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Dict, List, Tuple

import pytest

from conftest import ROOT

SCORER = ROOT / "benchmarks" / "realcode" / "score.py"
FIXTURE = Path(__file__).parent / "realcode_fixture"
HEADER = ["code", "rules", "labelled", "found", "TP", "FP", "FN", "precision", "recall"]


def score(*args: str, data: Path = FIXTURE, cache: Path = FIXTURE / "cache") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCORER), "--data", str(data), "--cache", str(cache), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def tables(output: str) -> Dict[str, Dict[Tuple[str, str], List[str]]]:
    """Each split's table rows by (code, rules): labelled, found, TP, FP, FN, precision, recall."""
    result: Dict[str, Dict[Tuple[str, str], List[str]]] = {}
    rows: Dict[Tuple[str, str], List[str]] = {}
    for line in output.splitlines():
        cells = line.split()
        if " split: " in line:
            rows = result.setdefault(line.split()[0], {})
        elif cells and cells[0] != "code" and len(cells) == len(HEADER) and cells[1] in ("default", "preview"):
            rows[(cells[0], cells[1])] = cells[2:]
    return result


def fixture_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "data"
    shutil.copytree(FIXTURE, copy, ignore=shutil.ignore_patterns("cache"))
    return copy


def test_scores_both_splits_with_preview_codes() -> None:
    result = score("--split", "both", "--preview")
    assert result.returncode == 0, result.stderr
    assert tables(result.stdout) == {
        "dev": {
            ("AGF001", "default"): ["1", "1", "1", "0", "0", "1.000", "1.000"],
            # HiddenTensor: the linter cannot see make_cache returns a tensor (a miss)
            ("AGF003", "preview"): ["2", "1", "1", "0", "1", "1.000", "0.500"],
            # TwoGradients: labelled after the adjudication against the label
            ("AGF004", "preview"): ["1", "1", "1", "0", "0", "1.000", "1.000"],
            # SavesTwice is labelled clean; the unlabelled class's AGF001 is not counted
            ("AGF101", "preview"): ["0", "1", "0", "1", "0", "0.000", "—"],
            # Instantiated: the finding is at module level and names the class
            ("AGF111", "preview"): ["1", "1", "1", "0", "0", "1.000", "1.000"],
            ("total", "default"): ["1", "1", "1", "0", "0", "1.000", "1.000"],
            ("total", "preview"): ["4", "4", "3", "1", "1", "0.750", "0.750"],
        },
        "test": {
            ("AGF001", "default"): ["2", "2", "2", "0", "0", "1.000", "1.000"],
            ("total", "default"): ["2", "2", "2", "0", "0", "1.000", "1.000"],
            ("total", "preview"): ["0", "0", "0", "0", "0", "—", "—"],
        },
    }
    lines = result.stdout.splitlines()
    assert "dev split: 1 project, 9 labelled classes (3 clean), 2 missing" in lines
    assert "test split: 1 project, 2 labelled classes (1 clean), 0 missing" in lines
    assert lines.count("adjudications: 1 label wrong, 1 linter wrong") == 1
    assert lines.count("adjudications: 0 label wrong, 0 linter wrong") == 1
    assert [line for line in lines if line.startswith("missing:")] == [
        "missing: alpha/gone.py:3 Gone: no such file in the cache",
        "missing: alpha/ops.py:12 Renamed: no class Renamed at line 12",
    ]
    assert HEADER == lines[1].split()


def test_holdout_split_is_scored_alone_or_with_all_never_with_both() -> None:
    holdout = {
        # Double is labelled clean: its AGF001 is a false alarm.
        ("AGF001", "default"): ["1", "2", "1", "1", "0", "0.500", "1.000"],
        ("total", "default"): ["1", "2", "1", "1", "0", "0.500", "1.000"],
    }
    alone = score("--split", "holdout")
    assert alone.returncode == 0, alone.stderr
    assert tables(alone.stdout) == {"holdout": holdout}
    assert "holdout split: 1 project, 2 labelled classes (1 clean), 0 missing" in alone.stdout.splitlines()
    every = score("--split", "all")
    assert every.returncode == 0, every.stderr
    assert list(tables(every.stdout)) == ["dev", "test", "holdout"]
    assert tables(every.stdout)["holdout"] == holdout
    assert "holdout" not in score("--split", "both").stdout


def test_default_run_scores_dev_split_without_preview_codes() -> None:
    result = score()
    assert result.returncode == 0, result.stderr
    # AGF003 and AGF004 are preview codes: their labels and findings are left out with AGF101's.
    assert tables(result.stdout) == {
        "dev": {
            ("AGF001", "default"): ["1", "1", "1", "0", "0", "1.000", "1.000"],
            ("total", "default"): ["1", "1", "1", "0", "0", "1.000", "1.000"],
        }
    }
    for code in ("AGF003", "AGF004", "AGF101"):
        assert code not in result.stdout


def test_details_name_the_lines_of_each_disagreement() -> None:
    result = score("--preview", "--details")
    lines = result.stdout.splitlines()
    assert [line for line in lines if line.startswith("disagreement:")] == [
        "disagreement: alpha/ops.py:52 HiddenTensor AGF003: labelled at [55], found at [] (adjudicated: linter wrong)",
        "disagreement: alpha/layers/norm.py:6 SavesTwice AGF101: labelled at [], found at [10] (open)",
    ]
    assert "disagreements: 2, 1 adjudicated, 1 open" in lines


def test_lists_every_test_finding_with_its_verdict() -> None:
    result = score("--list-test-findings", "--preview")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split("\t") for line in lines[:5]] == [
        ["beta", "kernel.py:7:5", "AGF001", "Scale.forward is not a @staticmethod; add @staticmethod",
         "true"],
        ["beta", "kernel.py:11:5", "AGF001",
         "Scale.backward is not a @staticmethod; add @staticmethod", "false"],
        ["beta", "kernel.py:30:9", "AGF101",
         "Offset.forward calls ctx.save_for_backward again after line 29; save every tensor in one call",
         "debatable"],
        ["beta", "sub/extra.py:7:5", "AGF001",
         "Twice.forward is not a @staticmethod; add @staticmethod", "debatable"],
        ["beta", "sub/extra.py:10:5", "AGF001",
         "Twice.backward is not a @staticmethod; add @staticmethod", "UNJUDGED"],
    ]
    assert lines[5:] == [
        "5 findings, 1 unjudged, 1 judgement matching no finding, 0 projects missing",
        "precision from judged findings: AGF001 0.500 (1 true, 1 false, 1 debatable, 1 unjudged); "
        "AGF101 — (0 true, 0 false, 1 debatable, 0 unjudged)",
    ]


def test_listing_without_preview_keeps_judgements_of_hidden_codes() -> None:
    result = score("--list-test-findings")
    assert "AGF101" not in result.stdout
    assert result.stdout.splitlines()[-2:] == [
        "4 findings, 1 unjudged, 1 judgement matching no finding, 0 projects missing",
        "precision from judged findings: AGF001 0.500 (1 true, 1 false, 1 debatable, 1 unjudged)",
    ]


def test_empty_cache_reports_everything_missing(tmp_path: Path) -> None:
    result = score("--split", "both", cache=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "dev split: 1 project, 9 labelled classes (3 clean), 9 missing" in result.stdout
    assert "test split: 1 project, 2 labelled classes (1 clean), 2 missing" in result.stdout
    assert tables(result.stdout)["dev"] == {("total", "default"): ["0", "0", "0", "0", "0", "—", "—"]}
    listing = score("--list-test-findings", cache=tmp_path)
    assert listing.returncode == 0, listing.stderr
    assert "missing: project beta has no folder in the cache" in listing.stdout.splitlines()


@pytest.mark.parametrize(
    "file, old, new, reason",
    [
        ("labels/alpha.toml", 'name = "Correct"', "", "labels/alpha.toml: [[class]] #3: 'name' must be a string"),
        ("labels/alpha.toml", '"AGF004"', '"AGF999"', "[[class]] #4 violation #1: unknown code 'AGF999'"),
        ("labels/beta.toml", 'project = "beta"', 'project = "delta"', "project 'delta' is not in projects.toml"),
        ("labels/beta.toml", "line = 15", "line = 6", "beta/kernel.py:6 Shift: class labelled twice (also as Scale)"),
        ("labels/beta.toml", "violations = []", "violations = [", "labels/beta.toml: not valid TOML"),
        (
            "projects.toml",
            'split = "test"',
            'split = "train"',
            "must be one of dev, test, holdout, holdout-2026-11-27, not 'train'",
        ),
        ("adjudications.toml", 'wrong = "label"', 'wrong = "both"', "'wrong' must be one of label, linter"),
        ("judgements.toml", 'verdict = "false"', 'verdict = "no"', "'verdict' must be one of true, false, debatable"),
    ],
)
def test_malformed_data_exits_2_with_one_line(tmp_path: Path, file: str, old: str, new: str, reason: str) -> None:
    data = fixture_copy(tmp_path)
    path = data / file
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    for mode in ((), ("--list-test-findings",)):
        result = score(*mode, data=data)
        assert result.returncode == 2
        assert result.stdout == ""
        assert len(result.stderr.splitlines()) == 1
        assert result.stderr.startswith("score.py: error: ")
        assert reason in result.stderr


def test_missing_manifest_exits_2(tmp_path: Path) -> None:
    result = score(data=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == f"score.py: error: {tmp_path / 'projects.toml'}: no such file"


def load_scorer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("realcode_score", SCORER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def one_file_project(tmp_path: Path, project: str, labels: str, source: str) -> Tuple[Path, Path]:
    """A dev project of one file ``m.py`` holding ``source``, labelled by ``labels`` (TOML tables):
    the data folder and the cache."""
    (tmp_path / "data" / "labels").mkdir(parents=True)
    (tmp_path / "data" / "projects.toml").write_text(f'[[project]]\nname = "{project}"\nsplit = "dev"\n')
    (tmp_path / "data" / "labels" / f"{project}.toml").write_text(labels)
    (tmp_path / "cache" / project).mkdir(parents=True)
    (tmp_path / "cache" / project / "m.py").write_text(source)
    return tmp_path / "data", tmp_path / "cache"


def test_finding_goes_to_the_innermost_labelled_class(tmp_path: Path) -> None:
    scorer = load_scorer()
    data, cache = one_file_project(
        tmp_path,
        "nested",
        '[[class]]\nproject = "nested"\npath = "m.py"\nline = 4\nname = "Outer"\nlabeller = "t"\n'
        'violations = [ { code = "AGF001", line = 6, reason = "" } ]\n'
        '[[class]]\nproject = "nested"\npath = "m.py"\nline = 5\nname = "Inner"\nlabeller = "t"\nviolations = []\n',
        "from torch.autograd import Function\n"
        "\n"
        "\n"
        "class Outer:\n"
        "    class Inner(Function):\n"
        "        def forward(ctx, x):\n"
        "            return x\n"
        "\n"
        "        @staticmethod\n"
        "        def backward(ctx, grad):\n"
        "            return grad\n",
    )
    result = scorer.score_split(scorer.load_benchmark(data), "dev", cache, preview=False)
    tally = result.tallies["AGF001"]
    # Outer's label claims the finding, but it belongs to Inner (labelled clean): one FP and one FN.
    assert (tally.labelled, tally.found, tally.true_positives) == (1, 1, 0)
    assert (tally.false_positives, tally.false_negatives) == (1, 1)
    assert (tally.precision, tally.recall) == (0.0, 0.0)


def test_file_that_is_not_python_is_missing_and_listed_as_not_checked(tmp_path: Path) -> None:
    (tmp_path / "data" / "labels").mkdir(parents=True)
    (tmp_path / "data" / "projects.toml").write_text('[[project]]\nname = "broken"\nsplit = "test"\n')
    (tmp_path / "data" / "labels" / "broken.toml").write_text(
        '[[class]]\nproject = "broken"\npath = "m.py"\nline = 1\nname = "A"\nlabeller = "t"\nviolations = []\n'
    )
    (tmp_path / "cache" / "broken").mkdir(parents=True)
    (tmp_path / "cache" / "broken" / "m.py").write_text("class A(Function):\n    def (\n")
    result = score("--split", "test", data=tmp_path / "data", cache=tmp_path / "cache")
    assert result.returncode == 0, result.stderr
    assert "test split: 1 project, 1 labelled class (1 clean), 1 missing" in result.stdout
    assert "missing: broken/m.py:1 A: cannot parse: invalid syntax (<unknown>, line 2)" in result.stdout
    listing = score("--list-test-findings", data=tmp_path / "data", cache=tmp_path / "cache")
    assert listing.stdout.splitlines()[0].startswith("broken\tm.py\tnot checked: skipped, not valid Python")


def test_finding_outside_its_class_goes_to_the_class_named_only_when_the_name_is_unique(tmp_path: Path) -> None:
    scorer = load_scorer()
    # Two classes of one name, one per branch: the unlabelled one's finding is its own, and the
    # module-level instantiation could mean either.
    data, cache = one_file_project(
        tmp_path,
        "twice",
        '[[class]]\nproject = "twice"\npath = "m.py"\nline = 5\nname = "Kernel"\nlabeller = "t"\nviolations = []\n',
        "from torch.autograd import Function\n"
        "\n"
        "\n"
        "if FAST:\n"
        "    class Kernel(Function):\n"
        "        @staticmethod\n"
        "        def forward(ctx, x):\n"
        "            return x\n"
        "\n"
        "        @staticmethod\n"
        "        def backward(ctx, grad):\n"
        "            return grad\n"
        "else:\n"
        "    class Kernel(Function):\n"
        "        def forward(ctx, x):\n"
        "            return x\n"
        "\n"
        "        @staticmethod\n"
        "        def backward(ctx, grad):\n"
        "            return grad\n"
        "\n"
        "kernel = Kernel()\n",
    )
    result = scorer.score_split(scorer.load_benchmark(data), "dev", cache, preview=True)
    assert {code: (tally.labelled, tally.found) for code, tally in result.tallies.items()} == {}


def test_codes_newer_than_the_labels_are_counted_apart_not_scored() -> None:
    result = score("--split", "dev", "--preview")
    assert result.returncode == 0, result.stderr
    # TwoGradients keeps a saved tensor backward never reads (AGF122, a code the labels predate): listed
    # apart, so it is neither a false alarm nor in the preview total.
    assert "codes newer than the labels, not scored (judge them with sweep.py): AGF122 1" in result.stdout
    rows = tables(result.stdout)["dev"]
    assert ("AGF122", "preview") not in rows
    assert rows[("total", "preview")][:3] == ["4", "4", "3"]


OP_MODULE = '''import torch


@torch.library.custom_op("fixture::double", mutates_args=())
def double(x: torch.Tensor) -> torch.Tensor:
    return x * 2


def double_backward(ctx, grad):
    return grad * 2


double.register_autograd(double_backward)
'''

OP_LABEL = '''
[[class]]
kind = "op"
project = "alpha"
path = "ops_custom.py"
line = 5
name = "double"
labeller = "fixture-a"
violations = [ { code = "AGF133", line = 6, reason = "a label the linter will not find: counted as missed" } ]

[[class]]
kind = "op"
project = "alpha"
path = "ops_custom.py"
line = 9
name = "double_backward"
labeller = "fixture-a"
violations = []
'''


def test_custom_ops_are_labelled_by_their_def_and_binding(tmp_path: Path) -> None:
    data = fixture_copy(tmp_path)
    cache = tmp_path / "cache"
    shutil.copytree(FIXTURE / "cache", cache)
    (cache / "alpha" / "ops_custom.py").write_text(OP_MODULE, encoding="utf-8")
    labels = data / "labels" / "alpha.toml"
    labels.write_text(labels.read_text(encoding="utf-8") + OP_LABEL, encoding="utf-8")
    result = score("--split", "dev", "--preview", data=data, cache=cache)
    assert result.returncode == 0, result.stderr
    assert "missing: alpha/ops_custom.py:9 double_backward: no custom op double_backward defined at line 9" in (
        result.stdout
    )
    assert "alpha/ops_custom.py:5 double" not in result.stdout.split("disagreements:")[0]  # found, not missing
    row = tables(result.stdout)["dev"][("AGF133", "preview")]
    assert row[:5] == ["1", "0", "0", "0", "1"]
