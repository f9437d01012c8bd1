"""The draw of classes to label: every Function class found, the same sample for the same seed."""

from __future__ import annotations

import sys
from pathlib import Path

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
