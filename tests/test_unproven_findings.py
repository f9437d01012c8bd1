"""A finding that rests on what the model cannot settle is "unproven": a code reports it only with preview.

AGF004's fall-off after returns elsewhere is one: whether any call reaches the end of backward depends on
conditions the model cannot evaluate. A code that runs without preview (on by default, or a preview code
selected on its own) reports only what it proves; ``--autograd-preview`` adds the unproven findings under
the same code. Checked through the real ``flake8`` executable.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from test_flake8_cli import flake8, output_codes

SOURCE = textwrap.dedent(
    """\
    import torch


    class MaybeFallsOff(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x * y

        @staticmethod
        def backward(ctx, grad):
            x, y = ctx.saved_tensors
            if grad is not None:
                return grad * y, grad * x


    class AlwaysFallsOff(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x * y

        @staticmethod
        def backward(ctx, grad):
            x, y = ctx.saved_tensors
            grad_x, grad_y = grad * y, grad * x
    """
)
_BACKWARDS = [number for number, line in enumerate(SOURCE.splitlines(), start=1) if "def backward" in line]
UNPROVEN_LINE = _BACKWARDS[0]  # MaybeFallsOff.backward: falls off only when grad is None
PROVEN_LINE = _BACKWARDS[1]  # AlwaysFallsOff.backward: no return at all, every call ends with one None


def _lines(result: object) -> "set[int]":
    return {int(line.split(":")[1]) for line in getattr(result, "stdout").splitlines() if "AGF004" in line}


def test_a_code_run_without_preview_reports_only_what_it_proves(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(SOURCE, encoding="utf-8")
    selected = flake8("--isolated", "--select", "AGF004", "ops.py", cwd=tmp_path)
    assert output_codes(selected) == ["AGF004"]
    assert _lines(selected) == {PROVEN_LINE}
    previewed = flake8("--isolated", "--select", "AGF004", "--autograd-preview", "ops.py", cwd=tmp_path)
    assert _lines(previewed) == {PROVEN_LINE, UNPROVEN_LINE}


@pytest.mark.oracle
def test_the_unproven_finding_is_a_real_path_when_taken() -> None:
    """Under torch the unproven path is real only when taken: with materialized gradients (the default)
    grad is never None, so MaybeFallsOff works; AlwaysFallsOff fails on every backward."""
    torch = pytest.importorskip("torch")
    namespace: dict = {}
    exec(compile(SOURCE, "ops.py", "exec"), namespace)  # noqa: S102 - the test's own source
    x = torch.rand(3, dtype=torch.float64, requires_grad=True)
    y = torch.rand(3, dtype=torch.float64, requires_grad=True)
    namespace["MaybeFallsOff"].apply(x, y).sum().backward()
    torch.testing.assert_close(x.grad, y.detach())
    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        namespace["AlwaysFallsOff"].apply(x, y).sum().backward()
