"""PyTorch as the oracle for feasible paths (``agf004_feasibility.py`` and the feasibility cases of the
AGF003 and AGF005 fixtures): a branch whose condition is settled where the code runs never executes.

Every declaration of the fixture holds under torch: the silent cases run forward and backward with
autograd's gradients (their short return, under ``if False:``, a false module flag, ``TYPE_CHECKING`` or
a version older than torch 2.0, is never reached), and the reported ones do reach their wrong count once
the condition holds: ``if True:`` at once, a rebound flag once it is set, an environment flag once the
environment sets it.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from pathlib import Path
from typing import List, Tuple

import pytest

from conftest import require_torch

torch = require_torch()

from conftest import FIXTURES, expected_findings  # noqa: E402
from oracle import Declaration, LoadedFixture, check, load_fixture, parse_fixture  # noqa: E402

FEASIBILITY = FIXTURES / "agf004_feasibility.py"
STORES = FIXTURES / "agf003_feasibility.py"
DECLARATIONS: List[Tuple[Path, Declaration]] = [
    (path, declaration)
    for path in (FEASIBILITY, STORES)
    for block in parse_fixture(path)
    for declaration in block.declarations
]
INCORRECT_COUNT = "returned an incorrect number of gradients"

SILENT = [
    "DeadLiteral", "DeadZero", "TakenArm", "LegacyFlag", "LegacyFallOff", "TypeCheckingOnly",
    "OldTorchString", "OldTorchParsed", "OldTorchNumbers",
]
STORES_SILENT = ["KeptByFlag", "KeptNever", "KeptForOldTorch"]


@lru_cache(maxsize=None)
def _loaded(path: Path = FEASIBILITY) -> LoadedFixture:
    return load_fixture(path)


def _pair() -> List["torch.Tensor"]:
    return [
        torch.tensor([0.5, 1.5, 2.0], dtype=torch.float64, requires_grad=True),
        torch.tensor([1.0, -0.5, 3.0], dtype=torch.float64, requires_grad=True),
    ]


@pytest.mark.parametrize(
    "path, declaration", DECLARATIONS, ids=lambda value: getattr(value, "class_name", getattr(value, "stem", ""))
)
def test_torch_confirms_declaration(path: Path, declaration: Declaration) -> None:
    check(declaration, _loaded(path))


@pytest.mark.parametrize("path, code, silent", [(FEASIBILITY, "AGF004", SILENT), (STORES, "AGF003", STORES_SILENT)])
def test_every_class_is_declared_and_both_verdicts_are_held(path: Path, code: str, silent: List[str]) -> None:
    blocks = parse_fixture(path)
    expected = expected_findings(path)
    flagged = {
        block.name for block in blocks
        if any((line, code) in expected for line in range(block.line, block.end_line + 1))
    }
    assert all(block.declarations for block in blocks)
    assert set(silent) == {block.name for block in blocks} - flagged
    assert len(flagged) >= 2


@pytest.mark.parametrize("name", SILENT)
def test_dead_branch_never_runs_and_gradients_are_autograds(name: str) -> None:
    """The Function gives the gradients of the same expression computed by autograd: the short return
    in its dead branch was never taken."""
    cls = getattr(_loaded().module, name)
    inputs = _pair()
    cls.apply(*inputs).sum().backward()
    reference = _pair()
    forward = cls.forward
    (forward(*reference) if name.startswith("OldTorch") else forward(None, *reference)).sum().backward()
    for got, want in zip(inputs, reference):
        assert torch.allclose(got.grad, want.grad)


def test_version_floor_holds_for_the_installed_torch() -> None:
    """The conditions settled false are false here: this torch is at least 2.0 (setup_context works)."""
    module = _loaded().module
    assert module.TORCH_VERSION >= (2, 0) and not torch.__version__ < "1.0"


def test_live_literal_raises_the_count_error() -> None:
    with pytest.raises(RuntimeError, match=INCORRECT_COUNT):
        _loaded().module.LiveLiteral.apply(*_pair()).sum().backward()


def test_environment_flag_reaches_the_short_return(monkeypatch: pytest.MonkeyPatch) -> None:
    """The flag is False in this run, but an environment that sets it takes the short return."""
    monkeypatch.setenv("AGF_FIXTURE_OLD_KERNEL", "1")
    spec = importlib.util.spec_from_file_location("agf004_feasibility_with_env", FEASIBILITY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(RuntimeError, match=INCORRECT_COUNT):
        module.EnvironmentFlag.apply(*_pair()).sum().backward()
