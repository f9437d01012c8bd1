"""PyTorch is the oracle for AGF129: a Function without setup_context that asks for vmap support
(generate_vmap_rule = True, or a vmap staticmethod) fails under every torch.func transform, and a vmap
staticmethod that does not return the pair (output, out_dims) fails under torch.vmap."""

from typing import Any

import pytest

from conftest import codes_inside, fixture_module, lint, require_torch

torch = require_torch()

STEM = "agf129"
SETUP_CONTEXT_NEEDED = "it must override the setup_context staticmethod"
TWO_RETURNS = "Expected the vmap staticmethod to have two returns"


def _cls(name: str) -> Any:
    return getattr(fixture_module(STEM), name)


def _batch() -> Any:
    return torch.linspace(-1.0, 1.0, 12, dtype=torch.float64).reshape(3, 4)


@pytest.mark.parametrize("name", ["ExpGeneratedFunction", "SoftsignFunction"])
def test_combined_style_fails_under_transforms(name: str) -> None:
    """The flag or the vmap staticmethod is dead: apply raises under vmap and grad before reading either,
    while plain apply and backward work, which hides it."""
    function = _cls(name)
    with pytest.raises(RuntimeError, match=SETUP_CONTEXT_NEEDED):
        torch.vmap(function.apply)(_batch())
    with pytest.raises(RuntimeError, match=SETUP_CONTEXT_NEEDED):
        torch.func.grad(lambda x: function.apply(x).sum())(_batch()[0])
    x = _batch()[0].requires_grad_()
    assert torch.autograd.gradcheck(function.apply, (x,))
    assert "AGF129" in codes_inside(STEM, name)


@pytest.mark.parametrize("name", ["SinNoOutDimsFunction", "SinOneTupleFunction", "SinThreeFunction"])
def test_vmap_without_out_dims_fails(name: str) -> None:
    with pytest.raises(RuntimeError, match=TWO_RETURNS):
        torch.vmap(_cls(name).apply)(_batch())
    assert "AGF129" in codes_inside(STEM, name)


def test_vmap_returning_arithmetic_fails() -> None:
    with pytest.raises(RuntimeError, match=TWO_RETURNS + r".*Tensor"):
        torch.vmap(lambda x: _cls("ShiftNoOutDimsFunction").apply(x, 0.5))(_batch())
    assert "AGF129" in codes_inside(STEM, "ShiftNoOutDimsFunction")


@pytest.mark.parametrize(
    "name, expected",
    [
        ("ExpSeparateFunction", torch.exp),
        ("ExpAssignedSetupFunction", torch.exp),
        ("SinGeneratedFunction", torch.sin),
        ("SinPairFunction", torch.sin),
        ("SinNamedPairFunction", torch.sin),
        ("SinHelperFunction", torch.sin),
    ],
)
def test_silent_cases_work_under_vmap(name: str, expected: Any) -> None:
    function = _cls(name)
    assert torch.allclose(torch.vmap(function.apply)(_batch()), expected(_batch()))
    x = _batch()[0].requires_grad_()
    assert torch.autograd.gradcheck(function.apply, (x,))
    assert "AGF129" not in codes_inside(STEM, name)


def test_combined_style_without_flag_is_silent() -> None:
    x = _batch()[0].requires_grad_()
    assert torch.autograd.gradcheck(_cls("SquareFunction").apply, (x,))
    assert "AGF129" not in codes_inside(STEM, "SquareFunction")


# The contract cases in our own words: the generated rule on the combined style, and a vmap staticmethod
# that forgets its out_dims.
GENERATED_ON_COMBINED = """
import torch


class Softplus(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.nn.functional.softplus(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * torch.sigmoid(x)


class Cosine(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return x.cos()

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return -grad_output * x.sin()

    @staticmethod
    def vmap(info, in_dims, x):
        return x.cos()
"""


def test_contract_cases() -> None:
    namespace: dict = {}
    exec(compile(GENERATED_ON_COMBINED, "vmap_cases.py", "exec"), namespace)
    with pytest.raises(RuntimeError, match=SETUP_CONTEXT_NEEDED):
        torch.vmap(namespace["Softplus"].apply)(_batch())
    with pytest.raises(RuntimeError, match=TWO_RETURNS):
        torch.vmap(namespace["Cosine"].apply)(_batch())
    findings = [(f.line, f.code) for f in lint(GENERATED_ON_COMBINED, preview=True) if f.code == "AGF129"]
    assert findings == [(6, "AGF129"), (35, "AGF129")]
