"""PyTorch as the oracle for AGF120 (a per-call tensor kept on the class or in a module global).

The fixture's flagged classes run under torch 2.13: two calls made before the first backward give the
first call a wrong gradient (the second forward replaced the shared tensor), and the tensor stays alive
after its graph is freed. The silent classes give the right gradient in the same overlap and pass
gradcheck; the linter reports the flagged classes and not the silent ones. A class in the shape of the
contract case (class attribute and module dict, inputs not annotated: backward's gradients for them say
they are tensors) is linted too.
"""

from __future__ import annotations

import gc
import textwrap
import weakref
from typing import Any, Callable, Dict, Tuple

import pytest

from conftest import codes, codes_inside, fixture_module, require_torch

torch = require_torch()

STEM = "agf120"


def _pair(fill: float) -> Tuple[Any, Any]:
    return torch.ones(3, dtype=torch.double, requires_grad=True), torch.full((3,), fill, dtype=torch.double)


def _overlapped_grad(apply: Callable[..., Any], with_weight: bool) -> Tuple[Any, Any]:
    """x1.grad after forward(x1), forward(x2), then backward of the first call only; and the expected
    gradient, from the first call run alone."""
    def run(first_only: bool) -> Any:
        x1, w1 = _pair(2.0)
        x2, w2 = _pair(5.0)
        x1 = (x1 * 2.0).detach().requires_grad_()
        x2 = (x2 * 3.0).detach().requires_grad_()
        args1 = (x1, w1) if with_weight else (x1,)
        args2 = (x2, w2) if with_weight else (x2,)
        y1 = apply(*args1)
        if not first_only:
            apply(*args2)
        y1.sum().backward()
        return x1.grad

    return run(first_only=False), run(first_only=True)


# Flagged classes: (name, takes a weight).
FLAGGED: Dict[str, bool] = {
    "ClassAttrScale": True,
    "DictCachedSquare": False,
    "GlobalExp": False,
    "SetupContextCube": False,
    "ClassAttrMul": True,
    "UnannotatedSquare": False,
}
SILENT: Dict[str, bool] = {
    "CountedSquare": False,
    "ConstantTableScale": False,
    "FloatOnClass": True,
    "RecordedSquare": False,
    "SettingsDouble": False,
    "LocalDictSquare": False,
}


@pytest.mark.parametrize("name", sorted(FLAGGED))
def test_flagged_class_gives_wrong_gradient_when_calls_overlap(name: str) -> None:
    function = getattr(fixture_module(STEM), name)
    got, expected = _overlapped_grad(function.apply, FLAGGED[name])
    assert not torch.allclose(got, expected), f"{name}: the second call should have replaced the first's tensor"
    assert "AGF120" in codes_inside(STEM, name)


@pytest.mark.parametrize("name", sorted(SILENT))
def test_silent_class_gives_right_gradient_when_calls_overlap(name: str) -> None:
    module = fixture_module(STEM)
    function = getattr(module, name)
    if name == "FloatOnClass":
        apply: Callable[..., Any] = lambda x, w: function.apply(x, 2.0)  # noqa: E731 - alpha is a number here
    else:
        apply = function.apply
    got, expected = _overlapped_grad(apply, SILENT[name])
    assert torch.allclose(got, expected)
    x = torch.rand(3, dtype=torch.double, requires_grad=True) + 0.5
    args = (x.detach().requires_grad_(), 2.0) if name == "FloatOnClass" else (x.detach().requires_grad_(),)
    assert torch.autograd.gradcheck(function.apply, args)
    assert "AGF120" not in codes_inside(STEM, name)


def test_unannotated_factor_stays_silent_and_is_a_number_there() -> None:
    function = fixture_module(STEM).UnannotatedFactor
    x = torch.rand(3, dtype=torch.double, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: function.apply(t, 2.0), (x,))
    assert "AGF120" not in codes_inside(STEM, "UnannotatedFactor")


def test_holder_square_stays_silent_and_correct() -> None:
    function = fixture_module(STEM).HolderSquare
    x = torch.rand(3, dtype=torch.double, requires_grad=True)
    holder = type("Holder", (), {})()
    assert torch.autograd.gradcheck(lambda t: function.apply(t, holder), (x,))
    assert "AGF120" not in codes_inside(STEM, "HolderSquare")


def test_class_attribute_keeps_the_tensor_alive_after_the_graph_is_freed() -> None:
    function = fixture_module(STEM).ClassAttrScale
    x, w = _pair(2.0)
    y = function.apply(x, w)
    alive = weakref.ref(w)
    del y, w
    gc.collect()
    assert alive() is not None


CONTRACT_SHAPE = """
import torch

_STORE = {}


class Multiply(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        Multiply.kept_b = b
        _STORE["a"] = a
        return a * b

    @staticmethod
    def backward(ctx, grad):
        b = Multiply.kept_b
        a = _STORE["a"]
        return grad * b, grad * a


def overlapping_calls():
    first = Multiply.apply(torch.ones(2, requires_grad=True), torch.full((2,), 2.0))
    second = Multiply.apply(torch.ones(2, requires_grad=True), torch.full((2,), 5.0))
    return first, second
"""


def test_contract_case_class_and_global_storage_is_reported() -> None:
    assert codes(textwrap.dedent(CONTRACT_SHAPE), preview=True).count("AGF120") == 2
    namespace: Dict[str, Any] = {}
    exec(compile(textwrap.dedent(CONTRACT_SHAPE), "contract_shape", "exec"), namespace)  # noqa: S102
    a1 = torch.ones(2, requires_grad=True)
    first = namespace["Multiply"].apply(a1, torch.full((2,), 2.0))
    namespace["Multiply"].apply(torch.ones(2, requires_grad=True), torch.full((2,), 5.0))
    first.sum().backward()
    assert a1.grad.tolist() == [5.0, 5.0]  # the right gradient is [2.0, 2.0]
