"""Runtime claims of the AGF003 flow fixture, checked under PyTorch.

* An input kept on ctx and changed in place after forward gives a silently wrong gradient; the same
  input passed to save_for_backward makes backward raise instead.
* The store the fixture leaves silent under ``isinstance(scale, int)`` keeps an int, and the class runs
  with an int scale and with a tensor one.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

import pytest

if os.environ.get("AGF_REQUIRE_TORCH"):
    torch = importlib.import_module("torch")
else:
    torch = pytest.importorskip(
        "torch", reason="the oracle layer runs fixture Functions under PyTorch, which is not installed"
    )

from conftest import codes_inside, fixture_module  # noqa: E402

STEM = "agf003_flow"


def _cls(name: str) -> Any:
    return getattr(fixture_module(STEM), name)


def _leaf(*values: float) -> Any:
    return torch.tensor(values, dtype=torch.float64, requires_grad=True)


class _SavedExpScale(torch.autograd.Function):
    """ExpScaleFunction with scale passed to save_for_backward."""

    @staticmethod
    def forward(ctx: Any, x: Any, scale: Any) -> Any:
        ctx.save_for_backward(scale)
        return x * torch.exp(scale)

    @staticmethod
    def backward(ctx: Any, grad_output: Any) -> Any:
        (scale,) = ctx.saved_tensors
        return grad_output * torch.exp(scale), None


def test_input_on_ctx_changed_after_forward_gives_a_silently_wrong_gradient() -> None:
    x = _leaf(1.0, 2.0)
    scale = torch.tensor([0.5, 0.25], dtype=torch.float64)
    expected = torch.exp(scale.clone())
    out = _cls("ExpScaleFunction").apply(x, scale)
    scale.mul_(4)  # the caller reuses its tensor
    (grad,) = torch.autograd.grad(out.sum(), x)
    assert not torch.allclose(grad, expected)  # no error, wrong numbers
    assert torch.allclose(grad, torch.exp(scale))


def test_an_unpacked_tensor_on_ctx_goes_unchecked_and_an_unpacked_number_is_fine() -> None:
    """The element of an unpacking kept on ctx is the caller's tensor itself: a change of it after
    forward goes unnoticed (a wrong gradient, no error); the silent class keeps numbers and runs."""
    x = _leaf(1.0, 2.0)
    scale = torch.tensor([0.5, 0.25], dtype=torch.float64)
    out = _cls("UnpackedScaleFunction").apply(x, scale)
    scale.mul_(4)
    (grad,) = torch.autograd.grad(out.sum(), x)
    assert torch.allclose(grad, torch.tensor([2.0, 1.0], dtype=torch.float64))  # not [0.5, 0.25]
    assert "AGF003" in codes_inside(STEM, "UnpackedScaleFunction")
    y = _leaf(1.0, 2.0)
    _cls("UnpackedCountFunction").apply(y).sum().backward()
    assert torch.equal(y.grad, torch.tensor([2.0, 2.0], dtype=torch.float64))
    assert "AGF003" not in codes_inside(STEM, "UnpackedCountFunction")


def test_saved_input_changed_after_forward_raises_at_backward() -> None:
    x = _leaf(1.0, 2.0)
    scale = torch.tensor([0.5, 0.25], dtype=torch.float64)
    out = _SavedExpScale.apply(x, scale)
    scale.mul_(4)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        torch.autograd.grad(out.sum(), x)


def test_int_branch_stores_an_int_and_both_kinds_of_scale_run() -> None:
    cls = _cls("IntOrTensorScaleFunction")
    x = _leaf(1.0, 2.0)
    out = cls.apply(x, 3)
    (grad,) = torch.autograd.grad(out.sum(), x)
    assert torch.equal(grad, torch.full((2,), 3.0, dtype=torch.float64))
    assert isinstance(out.grad_fn.scale, int)  # the ctx attribute the fixture leaves silent
    scale = _leaf(2.0, 5.0)
    out = cls.apply(x, scale)
    grad_x, grad_scale = torch.autograd.grad(out.sum(), (x, scale))
    assert torch.equal(grad_x, scale.detach()) and torch.equal(grad_scale, x.detach())


def test_output_buffers_are_only_written_by_backward() -> None:
    x = _leaf(1.0, 2.0)
    out = _cls("OutputBufferFunction").apply(x)
    (grad,) = torch.autograd.grad(out.sum(), x)
    assert torch.equal(grad, torch.full((2,), 2.0, dtype=torch.float64))
