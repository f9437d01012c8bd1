"""PyTorch is the oracle for AGF121: ctx.save_for_backward called in backward, vjp or jvp is accepted and
then ignored, so what backward reads from ctx.saved_tensors is only what forward saved."""

from typing import Any, Callable

from conftest import codes_inside, fixture_module, lint, require_torch

torch = require_torch()

import torch.autograd.forward_ad as forward_ad  # noqa: E402

STEM = "agf121"


def _cls(name: str) -> Any:
    return getattr(fixture_module(STEM), name)


def _input() -> Any:
    return torch.linspace(-1.0, 1.0, 5, dtype=torch.float64, requires_grad=True)


def _gradient(apply: Callable[..., Any], *extra: Any) -> Any:
    x = _input()
    apply(x, *extra).sum().backward()
    return x.grad


def test_save_in_backward_keeps_nothing() -> None:
    """Backward saves the gradient and reads it back: saved_tensors is still empty, the gradient is 0."""
    grad = _gradient(_cls("ExpLateSaveFunction").apply)
    assert torch.equal(grad, torch.zeros(5, dtype=torch.float64))  # the true gradient is exp(x)
    assert "AGF121" in codes_inside(STEM, "ExpLateSaveFunction")


def test_save_in_backward_does_not_replace_forward_saves() -> None:
    """A second save in backward does not change saved_tensors: it is dropped, not applied."""
    grad = _gradient(_cls("SquareResaveFunction").apply)
    assert torch.allclose(grad, 2 * _input().detach())
    assert "AGF121" in codes_inside(STEM, "SquareResaveFunction")


def test_save_in_jvp_and_vjp_is_ignored() -> None:
    x = _input().detach()
    with forward_ad.dual_level():
        dual = forward_ad.make_dual(x, torch.ones_like(x))
        tangent = forward_ad.unpack_dual(_cls("SinForwardFunction").apply(dual)).tangent
    assert torch.allclose(tangent, x.cos())  # jvp still reads x: the tangent it saved was dropped
    grad = _gradient(_cls("ScaleVjpFunction").apply, 2.0)
    assert torch.allclose(grad, torch.full((5,), 2.0, dtype=torch.float64))
    assert "AGF121" in codes_inside(STEM, "SinForwardFunction")
    assert "AGF121" in codes_inside(STEM, "ScaleVjpFunction")


def test_silent_cases_run_fine() -> None:
    for name in ("ExpFunction", "ExpHelperFunction", "CubeFunction", "RecorderFunction", "IdentityNestedFunction",
                 "TanhForwardSaveFunction"):
        assert torch.autograd.gradcheck(_cls(name).apply, (_input(),)), name
        assert "AGF121" not in codes_inside(STEM, name), name
    assert torch.autograd.gradgradcheck(_cls("CubeFunction").apply, (_input(),))
    x = _input().detach()
    with forward_ad.dual_level():
        dual = forward_ad.make_dual(x, torch.ones_like(x))
        tangent = forward_ad.unpack_dual(_cls("CosFunction").apply(dual)).tangent
    assert torch.allclose(tangent, -x.sin())


# The contract case in our own words: backward saves the incoming gradient, forward saved nothing.
LATE_SAVE = """
import torch


class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        ctx.save_for_backward(grad_output)
        return grad_output * 2 * len(ctx.saved_tensors)
"""


def test_contract_case_save_in_backward() -> None:
    namespace: dict = {}
    exec(compile(LATE_SAVE, "late_save.py", "exec"), namespace)
    grad = _gradient(namespace["Double"].apply)
    assert torch.equal(grad, torch.zeros(5, dtype=torch.float64))  # no error, no warning, wrong gradient
    assert [(f.line, f.code) for f in lint(LATE_SAVE, preview=True)] == [(12, "AGF121")]
