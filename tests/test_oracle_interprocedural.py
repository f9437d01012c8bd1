"""Runtime claims of the interprocedural fixtures, checked under PyTorch.

* AGF003: what a same-module helper annotated ``-> torch.Tensor`` returns is a tensor, and kept on ctx it
  escapes saved-tensor hooks; an untyped input handed to a helper's tensor parameter is a tensor, and
  kept on ctx a later in-place change of it silently changes the gradient.
* AGF003 silent: a ``torch.Tensor`` annotation that the module's only caller contradicts with an int
  ``self`` attribute leaves an int on ctx.
* AGF102: a helper annotated ``-> int`` (or ``-> Tuple[int, int]``) gives save_for_backward a value it
  rejects with a TypeError.
* AGF105: a gradient for ``alpha``, which the module's caller passes as a float attribute, fails at backward.
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

from conftest import fixture_module  # noqa: E402


def _agf003(name: str) -> Any:
    return getattr(fixture_module("agf003_interprocedural"), name)


def _leaf(*values: float) -> Any:
    return torch.tensor(values, dtype=torch.float64, requires_grad=True)


def _packed_count(run: Any) -> int:
    """How many tensors saved-tensor hooks see while ``run`` builds its graph."""
    packed = []

    def pack(tensor: Any) -> Any:
        packed.append(tensor)
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        run()
    return len(packed)


def test_helper_result_on_ctx_is_a_tensor_that_saved_tensor_hooks_never_see() -> None:
    cls = _agf003("NormalizedScaleFunction")
    x = _leaf(3.0, 4.0)
    out = cls.apply(x)
    assert isinstance(out.grad_fn.y, torch.Tensor)  # what the helper annotated `-> torch.Tensor` gave
    assert _packed_count(lambda: cls.apply(_leaf(3.0, 4.0))) == 0


def test_helper_tuple_element_on_ctx_is_a_tensor() -> None:
    out = _agf003("HalvesFunction").apply(_leaf(1.0, 2.0, 3.0, 4.0))
    assert isinstance(out.grad_fn.high, torch.Tensor)


def test_input_handed_to_a_tensor_parameter_and_kept_on_ctx_gives_a_silently_wrong_gradient() -> None:
    cls = _agf003("ScaledWeightFunction")
    x = _leaf(1.0, 2.0)
    weight = torch.tensor([3.0, 5.0], dtype=torch.float64)
    out = cls.apply(x, weight)
    expected = 2 * weight.clone()  # the gradient for the weight forward was given
    weight.mul_(10)  # the caller reuses its tensor
    (grad,) = torch.autograd.grad(out.sum(), x)
    assert not torch.allclose(grad, expected)  # no error, wrong numbers
    assert torch.allclose(grad, 2 * weight)


def test_tensor_annotation_every_caller_contradicts_leaves_an_int_on_ctx() -> None:
    module = _agf003("ColumnStep")(im2col=16)
    x = _leaf(1.0, 2.0)
    out = module(x)
    assert type(out.grad_fn.im2col) is int
    (grad,) = torch.autograd.grad(out.sum(), x)
    assert torch.equal(grad, torch.full((2,), 2.0, dtype=torch.float64))


@pytest.mark.parametrize("name", ["BlockCountFunction", "TileFunction", "StaticCountFunction"])
def test_helper_declared_to_return_numbers_makes_save_for_backward_raise(name: str) -> None:
    cls = getattr(fixture_module("agf102_interprocedural"), name)
    with pytest.raises(TypeError, match="save_for_backward can only save variables"):
        cls.apply(_leaf(1.0, 2.0))


def test_helper_declared_to_return_a_tensor_is_saved_fine() -> None:
    cls = fixture_module("agf102_interprocedural").NormalizedFunction
    x = _leaf(3.0, 4.0)
    (grad,) = torch.autograd.grad(cls.apply(x).sum(), x)
    assert grad.shape == x.shape


def test_gradient_for_an_input_the_module_passes_as_a_float_attribute_fails_at_backward() -> None:
    module = fixture_module("agf105_interprocedural").Mix(alpha=0.25)
    x = _leaf(1.0, 2.0)
    out = module(x)
    with pytest.raises(RuntimeError, match="returned a gradient different than None"):
        torch.autograd.grad(out.sum(), x)


def test_gradient_for_a_caller_float_parameter_fails_at_backward() -> None:
    fixture = fixture_module("agf105_interprocedural")
    x = _leaf(1.0, 2.0)
    with pytest.raises(RuntimeError, match="returned a gradient different than None"):
        torch.autograd.grad(fixture.with_gamma(x, 3.0).sum(), x)
    # Where the default is left, apply has one input: the second gradient is one too many.
    x = _leaf(1.0, 2.0)
    with pytest.raises(RuntimeError, match="returned an incorrect number of gradients"):
        torch.autograd.grad(fixture.with_default_gamma(x).sum(), x)


def test_learnable_attribute_reaches_forward_as_a_tensor_with_a_gradient() -> None:
    """Why AGF105 stays silent on BetaFunction: ``self.beta`` may be a parameter, whose gradient is due."""
    module = fixture_module("agf105_interprocedural").Beta(beta=0.5, learnable=True)
    x = _leaf(1.0, 2.0)
    out = module(x)
    grad_x, grad_beta = torch.autograd.grad(out.sum(), (x, module.beta))
    assert torch.equal(grad_beta, (x * 1).sum().detach().to(grad_beta.dtype))
