"""PyTorch as the oracle for AGF005's joint-work fixture: every class there runs with correct gradients.

The silent cases of ``agf005_joint.py`` claim that their gradients share one computation (a launch that
fills several buffers, a chain of launches, gradients forward computed); a class whose gradients were
wrong would hide a real bug in a slot behind that claim. Each declaration runs as one test (grammar:
tests/oracle.py). The whole module is skipped when torch is not installed.
"""

from __future__ import annotations

from functools import lru_cache
from typing import List

import pytest

from conftest import require_torch

torch = require_torch()

from conftest import FIXTURES, expected_findings  # noqa: E402
from oracle import Declaration, LoadedFixture, check, load_fixture, parse_fixture  # noqa: E402

JOINT_FIXTURE = FIXTURES / "agf005_joint.py"
BLOCKS = parse_fixture(JOINT_FIXTURE)
DECLARATIONS: List[Declaration] = [declaration for block in BLOCKS for declaration in block.declarations]


@lru_cache(maxsize=None)
def _loaded() -> LoadedFixture:
    return load_fixture(JOINT_FIXTURE)


@pytest.mark.parametrize(
    "declaration", DECLARATIONS, ids=lambda declaration: f"{declaration.class_name}@L{declaration.line}"
)
def test_torch_confirms_declaration(declaration: Declaration) -> None:
    check(declaration, _loaded())


def test_every_function_class_is_declared_and_runs_with_correct_gradients() -> None:
    """Each Function class carries a declaration, and every one of them is a gradcheck."""
    loaded = _loaded()
    for block in BLOCKS:
        if issubclass(loaded.classes[block.line], torch.autograd.Function):
            assert block.declarations, f"{block.name} (line {block.line}) has no '# torch:' declaration"
            assert all(declaration.verdict == "passes gradcheck" for declaration in block.declarations), block.name


def test_fixture_holds_joint_and_separate_cases() -> None:
    """Both verdicts are shown: silent joint work and reported separate work."""
    expected = expected_findings(JOINT_FIXTURE)
    flagged = [
        block for block in BLOCKS
        if any((line, "AGF005") in expected for line in range(block.line, block.end_line + 1))
    ]
    assert len(flagged) >= 5 and len(BLOCKS) - len(flagged) >= 10
