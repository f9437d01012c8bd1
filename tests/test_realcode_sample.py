"""The draw of classes to label: every Function class found, the same sample for the same seed."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks" / "realcode"))

import sample  # noqa: E402

SOURCE = '''\
import torch
from torch.autograd import Function


class A(torch.autograd.Function):
    pass


class B(Function):
    pass


class C(A):  # a Function too, through a class of the same file
    pass


class D:
    class E(torch.autograd.function.Function):
        pass
'''


def test_function_classes_and_a_reproducible_draw(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "ops.py").write_text(SOURCE, encoding="utf-8")
    (root / "broken.py").write_text("def (:\n", encoding="utf-8")
    found = list(sample.function_classes("proj", root))
    expected = [("A", 5, 6), ("B", 9, 10), ("C", 13, 14), ("E", 18, 19)]
    assert [(each.name, each.line, each.end) for each in found] == expected
    assert all(each.path == "pkg/ops.py" for each in found)
    first, second = sample.draw(found, 2, seed=7), sample.draw(list(reversed(found)), 2, seed=7)
    assert first == second and len(first) == 2
    assert sample.draw(found, 10, seed=7) == found  # fewer classes than asked: all of them
    text = sample.packet(found[0], root)
    assert text.startswith("# proj: pkg/ops.py:5 class A\n") and "    5  class A(torch.autograd.Function):" in text


MANIFEST = """\
[[project]]
name = "seen"
split = "dev"

[[project]]
name = "judged"
split = "test"

[[project]]
name = "unseen"
split = "holdout"
"""


def one_project_per_split(tmp_path: Path) -> Path:
    """A manifest of one project per split, each holding SOURCE's four classes, in a cache beside it."""
    (tmp_path / "projects.toml").write_text(MANIFEST, encoding="utf-8")
    for name in ("seen", "judged", "unseen"):
        (tmp_path / "cache" / name).mkdir(parents=True)
        (tmp_path / "cache" / name / "ops.py").write_text(SOURCE, encoding="utf-8")
    return tmp_path


def drawn_projects(path: Path) -> List[str]:
    return sorted({line.split("\t")[0] for line in path.read_text(encoding="utf-8").splitlines()})


def test_both_keeps_to_dev_and_test_and_all_adds_holdout() -> None:
    rows = [
        {"name": "seen", "split": "dev"},
        {"name": "judged", "split": "test"},
        {"name": "unseen", "split": "holdout"},
    ]
    assert sample.projects_of(rows, "both") == ["seen", "judged"]
    assert sample.projects_of(rows, "all") == ["seen", "judged", "unseen"]
    assert sample.projects_of(rows, "holdout") == ["unseen"]


def test_the_second_holdout_is_drawn_only_when_named() -> None:
    rows = [
        {"name": "seen", "split": "dev"},
        {"name": "judged", "split": "test"},
        {"name": "unseen", "split": "holdout"},
        {"name": "later", "split": "holdout-2026-11-27"},
    ]
    assert sample.projects_of(rows, "all") == ["seen", "judged", "unseen"]
    assert sample.projects_of(rows, "holdout-2026-11-27") == ["later"]
    assert sample.SPLIT_SEEDS["holdout-2026-11-27"] == 20261127


def test_holdout_is_drawn_alone_with_its_own_seed(tmp_path: Path) -> None:
    root = one_project_per_split(tmp_path)
    output = root / "sample-holdout.txt"
    arguments = ["--manifest", str(root / "projects.toml"), "--cache", str(root / "cache"), "--count", "2"]
    assert sample.main([*arguments, "--split", "holdout", "--output", str(output), "--packets", str(root / "p")]) == 0
    assert drawn_projects(output) == ["unseen"]
    classes = list(sample.function_classes("unseen", root / "cache" / "unseen"))
    expected = sample.draw(classes, 2, seed=20261124)
    assert output.read_text(encoding="utf-8") == "".join(found.row() + "\n" for found in expected)
    assert sorted(path.name for path in (root / "p").iterdir()) == ["0000.txt", "0001.txt"]
    # The default population is dev and test, as before the holdout split; it needs no holdout folder.
    (root / "cache" / "unseen" / "ops.py").unlink()
    (root / "cache" / "unseen").rmdir()
    both = root / "sample.txt"
    assert sample.main([*arguments, "--count", "8", "--output", str(both)]) == 0
    assert drawn_projects(both) == ["judged", "seen"]
    assert sample.main([*arguments, "--split", "all", "--output", str(both)]) == 2  # unseen is not fetched
