"""PyTorch as the oracle for the fact "an input backward returns a gradient for is a tensor".

torch 2.13 raises when backward returns a gradient that is not None for an input that is not a tensor, so
an unannotated input given an arithmetic gradient on every way out of backward must be a tensor: the
fixture's flagged classes fail with a number in that slot, and with a tensor there, keeping it on ctx
hides an in-place change from autograd (the gradient is silently wrong, where save_for_backward raises).
The silent classes run with a number in that slot, so nothing says the input is a tensor.
"""

from __future__ import annotations

from typing import Any

import pytest

from conftest import codes_inside, fixture_module, require_torch

torch = require_torch()

STEM = "agf003_gradient_implied"
FLAGGED = ("KeptWeight", "KeptShift")
SILENT_WITH_A_NUMBER = ("KeptFactor", "MaybeTensorWeight", "HelperGradient", "StarredGradients", "DefaultScale")


def _function(name: str) -> Any:
    return getattr(fixture_module(STEM), name)


@pytest.mark.parametrize("name", FLAGGED)
def test_a_number_where_backward_returns_a_gradient_raises(name: str) -> None:
    x = torch.rand(4, 3, dtype=torch.double, requires_grad=True)
    with pytest.raises(RuntimeError, match="returned a gradient different than None at position 2"):
        _function(name).apply(x, 2.0).sum().backward()
    assert "AGF003" in codes_inside(STEM, name)


def test_the_tensor_kept_on_ctx_hides_an_in_place_change() -> None:
    x = torch.rand(4, 3, dtype=torch.double, requires_grad=True)
    weight = torch.rand(3, dtype=torch.double, requires_grad=True)
    expected = torch.autograd.grad((x * weight).sum(), x)[0]
    out = _function("KeptWeight").apply(x, weight)
    with torch.no_grad():
        weight.mul_(10.0)  # the caller updates the weight before backward
    (got,) = torch.autograd.grad(out.sum(), x)
    assert not torch.allclose(got, expected)  # silently wrong: no version check on ctx.weight


def test_two_ways_out_class_needs_a_tensor_on_both() -> None:
    function = _function("KeptWeightTwoWays")
    x = torch.rand(4, 3, dtype=torch.double, requires_grad=True)
    for scale in (1.0, 3.0):
        with pytest.raises(RuntimeError, match="not a Variable"):
            function.apply(x, 2.0, scale).sum().backward()
    assert "AGF003" in codes_inside(STEM, "KeptWeightTwoWays")


@pytest.mark.parametrize("name", SILENT_WITH_A_NUMBER)
def test_silent_classes_run_with_a_number_in_that_slot(name: str) -> None:
    x = torch.rand(4, 3, dtype=torch.double, requires_grad=True)
    function = _function(name)
    out = function.apply(x) if name == "DefaultScale" else function.apply(x, 2.0)
    out.sum().backward()
    assert torch.allclose(x.grad, torch.full_like(x, 2.0))
    assert "AGF003" not in codes_inside(STEM, name)


def test_named_gradient_class_stays_silent() -> None:
    assert "AGF003" not in codes_inside(STEM, "NamedGradient")
