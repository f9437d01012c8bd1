"""PyTorch as the oracle for AGF117 (ctx.saved_tensors read where nothing was saved, or used as a tensor).

Every class of tests/fixtures/agf117.py runs under torch: each flagged one fails at its first backward
(or jvp) with the error written below, each silent one computes a correct gradient (gradcheck) or, when
no output carries a gradient, builds no graph at all. The linter reports exactly the failing ones. The
contract's two reproductions (nothing saved; the tuple used as a tensor) are linted in our own words.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Dict, Tuple, Type

import pytest

from conftest import require_torch

torch = require_torch()

from conftest import codes, codes_inside, fixture_module  # noqa: E402

STEM = "agf117"


def _leaf(*shape: int) -> Any:
    values = torch.linspace(0.5, 1.5, steps=max(1, int(torch.tensor(shape).prod().item())), dtype=torch.float64)
    return values.reshape(shape).clone().requires_grad_(True)


def _function(name: str) -> Any:
    return getattr(fixture_module(STEM), name)


def _backward(name: str, *args: Any) -> Callable[[], object]:
    def run() -> object:
        _function(name).apply(*args).sum().backward()
        return None

    return run


def _jvp(name: str) -> Callable[[], object]:
    def run() -> object:
        import torch.autograd.forward_ad as forward_ad

        with forward_ad.dual_level():
            dual = forward_ad.make_dual(_leaf(3).detach(), torch.ones(3, dtype=torch.float64))
            return forward_ad.unpack_dual(_function(name).apply(dual)).tangent

    return run


# Flagged classes: what torch raises, and the run that shows it.
FAILING: Dict[str, Tuple[Type[BaseException], str, Callable[[], object]]] = {
    "CubeFunction": (
        ValueError, "not enough values to unpack (expected 1, got 0)", _backward("CubeFunction", _leaf(3))
    ),
    "ScaledSineFunction": (IndexError, "tuple index out of range", _backward("ScaledSineFunction", _leaf(3), 2.0)),
    "RowScaleFunction": (
        ValueError,
        "not enough values to unpack (expected 2, got 0)",
        _backward("RowScaleFunction", _leaf(2, 3), _leaf(3)),
    ),
    "ShiftFunction": (
        ValueError, "not enough values to unpack (expected 1, got 0)", _backward("ShiftFunction", _leaf(3), 1.0)
    ),
    "DoubleFunction": (
        TypeError,
        "only integer tensors of a single element can be converted to an index",
        _backward("DoubleFunction", _leaf(3)),
    ),
    "ProjectFunction": (
        AttributeError, "'tuple' object has no attribute 't'", _backward("ProjectFunction", _leaf(2, 3), _leaf(4, 3))
    ),
    "TanhFunction": (ValueError, "not enough values to unpack (expected 1, got 0)", _jvp("TanhFunction")),
    "FastRowScaleFunction": (
        ValueError,
        "not enough values to unpack (expected 2, got 0)",
        _backward("FastRowScaleFunction", _leaf(2, 3), _leaf(3), True),
    ),
}

# Silent classes: the inputs of a gradcheck that passes.
CORRECT: Dict[str, Callable[[], Tuple[Any, ...]]] = {
    "CubeSavedFunction": lambda: (_leaf(3),),
    "TrainingOnlySaveFunction": lambda: (_leaf(3), True),
    "GradOnlySaveFunction": lambda: (_leaf(3),),
    "HelperSavedFunction": lambda: (_leaf(3),),
    "ExtendedCubeFunction": lambda: (_leaf(3),),
    "ModeScaleFunction": lambda: (_leaf(3), True),
    "IndexedTupleFunction": lambda: (_leaf(3),),
    "MaybeSavedFunction": lambda: (_leaf(3),),
    "TupleConcatFunction": lambda: (_leaf(3), _leaf(3)),
    "SquareFunction": lambda: (_leaf(3),),
    "InferenceFlagFunction": lambda: (_leaf(3), False),
    "EvalModeFunction": lambda: (_leaf(3), "train"),
}


@pytest.mark.parametrize("name", sorted(FAILING))
def test_flagged_class_fails_under_torch(name: str) -> None:
    error, message, run = FAILING[name]
    with pytest.raises(error, match=re.escape(message)):
        run()
    assert "AGF117" in codes_inside(STEM, name)


@pytest.mark.parametrize("name", sorted(CORRECT))
def test_silent_class_computes_its_gradient(name: str) -> None:
    function = _function(name)
    assert torch.autograd.gradcheck(lambda *args: function.apply(*args), CORRECT[name]())
    assert "AGF117" not in codes_inside(STEM, name)


def test_the_other_arms_of_silent_classes_run_too() -> None:
    # The arm of ModeScaleFunction that saves nothing is the one whose backward reads nothing.
    assert torch.autograd.gradcheck(lambda x: _function("ModeScaleFunction").apply(x, False), (_leaf(3),))
    # RowScaleFunction's arm that saves is fine: only the other one is reported.
    assert torch.autograd.gradcheck(lambda x, w: _function("RowScaleFunction").apply(x, w), (_leaf(3), _leaf(3)))


def test_an_inference_arm_run_as_meant_leaves_no_backward_to_fail() -> None:
    """The unsaved arms chosen by a caller's flag: under no_grad (inference) no graph node is recorded,
    and an output marked non-differentiable has none; backward cannot run there. Only a caller who takes
    the arm with gradients on would see the empty tuple, which the module alone cannot tell."""
    with torch.no_grad():
        assert _function("InferenceFlagFunction").apply(_leaf(3), True).grad_fn is None
    marked = _function("EvalModeFunction").apply(_leaf(3), "eval")
    assert marked.grad_fn is None and not marked.requires_grad
    for name in ("InferenceFlagFunction", "EvalModeFunction"):
        assert "AGF117" not in codes_inside(STEM, name)
    # The flagged class's arm for 1-D data saves; the flag itself chooses nothing about saving.
    assert torch.autograd.gradcheck(
        lambda x, w: _function("FastRowScaleFunction").apply(x, w, False), (_leaf(3), _leaf(3))
    )


def test_a_stub_forward_gives_no_output_to_differentiate() -> None:
    assert _function("SquareBase").apply(_leaf(3)) is None
    assert "AGF117" not in codes_inside(STEM, "SquareBase")


def test_a_function_with_no_differentiable_output_never_runs_backward() -> None:
    result = _function("ArgmaxFunction").apply(_leaf(2, 3))
    assert result.grad_fn is None and not result.requires_grad
    assert "AGF117" not in codes_inside(STEM, "ArgmaxFunction")


# The contract's reproductions, in our own words: forward forgets the save (c01); backward keeps the
# whole tuple under one name and multiplies it (c23), and the same tuple indexed before use (c23b).
NOTHING_SAVED = """
import torch

class Squared(torch.autograd.Function):
    @staticmethod
    def forward(ctx, value):
        return value * value

    @staticmethod
    def backward(ctx, grad):
        (value,) = ctx.saved_tensors
        return 2 * value * grad
"""

TUPLE_AS_TENSOR = """
import torch

class Twice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, value):
        ctx.save_for_backward(value)
        return value * 2

    @staticmethod
    def backward(ctx, grad):
        value = ctx.saved_tensors
        return value * grad
"""

TUPLE_INDEXED = """
import torch

class Twice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, value):
        ctx.save_for_backward(value)
        return value * 2

    @staticmethod
    def backward(ctx, grad):
        value = ctx.saved_tensors
        return grad * 2 * (value[0] > 0)
"""


@pytest.mark.parametrize(
    "source, reported",
    [(NOTHING_SAVED, True), (TUPLE_AS_TENSOR, True), (TUPLE_INDEXED, False)],
    ids=["c01-nothing-saved", "c23-tuple-as-tensor", "c23b-tuple-indexed"],
)
def test_contract_cases(source: str, reported: bool) -> None:
    assert ("AGF117" in codes(source, preview=True)) is reported


@pytest.mark.parametrize("source", [NOTHING_SAVED, TUPLE_AS_TENSOR, TUPLE_INDEXED])
def test_contract_cases_behave_as_the_contract_says(source: str) -> None:
    namespace: Dict[str, Any] = {}
    exec(compile(source, "<contract case>", "exec"), namespace)
    function = next(value for key, value in namespace.items() if key in ("Squared", "Twice"))
    run = _backward_of(function)
    if source is TUPLE_INDEXED:
        run()
    elif source is NOTHING_SAVED:
        with pytest.raises(ValueError, match=re.escape("not enough values to unpack (expected 1, got 0)")):
            run()
    else:
        with pytest.raises(TypeError, match="only integer tensors of a single element"):
            run()


def _backward_of(function: Any) -> Callable[[], None]:
    def run() -> None:
        function.apply(_leaf(3)).sum().backward()

    return run
