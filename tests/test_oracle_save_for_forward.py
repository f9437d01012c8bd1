"""PyTorch is the oracle for AGF130: ctx.save_for_forward rejects non-tensors at every call, a second call
replaces the first, jvp's ctx.saved_tensors holds only what save_for_forward saved (and backward's only
what save_for_backward saved), and a class without jvp cannot run under forward-mode AD at all."""

from typing import Any

import pytest

from conftest import codes_inside, fixture_module, lint, require_torch

torch = require_torch()

import torch.autograd.forward_ad as forward_ad  # noqa: E402

STEM = "agf130"
NOT_TENSOR = "save_for_forward expects all arguments to be tensors"


def _cls(name: str) -> Any:
    return getattr(fixture_module(STEM), name)


def _input() -> Any:
    return torch.linspace(0.5, 1.5, 5, dtype=torch.float64, requires_grad=True)


def _tangent(function: Any, *extra: Any) -> Any:
    x = _input().detach()
    with forward_ad.dual_level():
        dual = forward_ad.make_dual(x, torch.ones_like(x))
        return forward_ad.unpack_dual(function.apply(dual, *extra)).tangent


@pytest.mark.parametrize("name, extra", [("ExpShapeFunction", ()), ("ScaleInputsFunction", (2.0,))])
def test_non_tensor_fails_at_every_call(name: str, extra: Any) -> None:
    """The assertion runs in forward itself: no forward-mode AD is needed to hit it."""
    with pytest.raises(AssertionError, match=NOT_TENSOR):
        _cls(name).apply(_input(), *extra)
    assert "AGF130" in codes_inside(STEM, name)


def test_second_call_replaces_the_first() -> None:
    a, b = _input(), _input().detach() + 1
    with forward_ad.dual_level():
        dual = forward_ad.make_dual(a.detach(), torch.ones_like(a))
        with pytest.raises(ValueError, match=r"expected 2, got 1"):
            _cls("MulTwiceFunction").apply(dual, b)
    assert "AGF130" in codes_inside(STEM, "MulTwiceFunction")


def test_jvp_sees_only_save_for_forward() -> None:
    """Backward works; jvp finds ctx.saved_tensors empty although forward saved for backward."""
    function = _cls("TanhBackwardOnlyFunction")
    assert torch.autograd.gradcheck(function.apply, (_input(),))
    with pytest.raises(ValueError, match=r"expected 1, got 0"):
        _tangent(function)
    assert "AGF130" in codes_inside(STEM, "TanhBackwardOnlyFunction")


def test_backward_sees_only_save_for_backward() -> None:
    """The mirror: jvp works; backward finds ctx.saved_tensors empty although setup_context saved for forward."""
    function = _cls("SigmoidForwardOnlyFunction")
    x = _input().detach()
    assert torch.allclose(_tangent(function), x.sigmoid() * (1 - x.sigmoid()))
    with pytest.raises(IndexError, match="tuple index out of range"):
        function.apply(_input()).sum().backward()
    assert "AGF130" in codes_inside(STEM, "SigmoidForwardOnlyFunction")


def test_saved_for_forward_without_jvp() -> None:
    function = _cls("CubeNoJvpFunction")
    assert torch.autograd.gradcheck(function.apply, (_input(),))
    with pytest.raises(NotImplementedError, match="You must implement the jvp function"):
        _tangent(function)
    assert "AGF130" in codes_inside(STEM, "CubeNoJvpFunction")


@pytest.mark.parametrize(
    "name, extra",
    [
        ("ExpFunction", ()),
        ("SigmoidFunction", ()),
        ("ExpHelperFunction", ()),
        ("CubeFunction", ()),
        ("MulBranchFunction", (True,)),
        ("MulBranchFunction", (False,)),
        ("WeightedFunction", ()),
    ],
)
def test_silent_cases_pass_forward_and_backward_checks(name: str, extra: Any) -> None:
    second = (_input().detach() + 1).requires_grad_()
    inputs = (_input(), second) if name in ("MulBranchFunction", "WeightedFunction") else (_input(),)
    assert torch.autograd.gradcheck(_cls(name).apply, inputs + extra, check_forward_ad=True)
    assert "AGF130" not in codes_inside(STEM, name)


# The contract case in our own words: only save_for_backward, and jvp reads ctx.saved_tensors.
BACKWARD_ONLY_SAVE = """
import torch


class Softplus(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.nn.functional.softplus(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * torch.sigmoid(x)

    @staticmethod
    def jvp(ctx, tangent):
        (x,) = ctx.saved_tensors
        return tangent * torch.sigmoid(x)
"""


def test_contract_case_jvp_reads_backward_saves() -> None:
    namespace: dict = {}
    exec(compile(BACKWARD_ONLY_SAVE, "backward_only_save.py", "exec"), namespace)
    with pytest.raises(ValueError, match=r"expected 1, got 0"):
        _tangent(namespace["Softplus"])
    findings = [(f.line, f.code) for f in lint(BACKWARD_ONLY_SAVE, preview=True) if f.code == "AGF130"]
    assert findings == [(18, "AGF130")]
