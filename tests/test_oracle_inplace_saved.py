"""PyTorch is the oracle for AGF123: backward writing in place into a saved tensor that is a forward input
or the output forward returned changes the caller's tensor, and a second backward over the same graph
(retain_graph=True) fails the saved-tensor version check."""

from typing import Any, Callable, List, Tuple

import pytest

from conftest import codes_inside, fixture_module, lint, require_torch

torch = require_torch()

STEM = "agf123"
VERSION_ERROR = "one of the variables needed for gradient computation has been modified by an inplace operation"


def _cls(name: str) -> Any:
    return getattr(fixture_module(STEM), name)


def _inputs(count: int) -> List[Any]:
    """Non-leaf inputs (as layers pass them), so the caller's own tensors can be inspected after backward."""
    leaves = [torch.linspace(-0.9 + index, 0.8 + index, 6, dtype=torch.float64, requires_grad=True)
              for index in range(count)]
    return [leaf * 1.0 for leaf in leaves]


def _two_backwards(apply: Callable[..., Any], inputs: List[Any]) -> Tuple[bool, bool, str]:
    """(an input changed, the output changed, what the second backward did) across one backward."""
    before = [tensor.detach().clone() for tensor in inputs]
    output = apply(*inputs)
    output_before = output.detach().clone()
    output.sum().backward(retain_graph=True)
    inputs_changed = any(not torch.equal(b, t.detach()) for b, t in zip(before, inputs))
    output_changed = not torch.equal(output_before, output.detach())
    try:
        output.sum().backward()
        second = "ok"
    except RuntimeError as error:
        second = str(error)
    return inputs_changed, output_changed, second


# (class, number of inputs, what backward overwrites)
FLAGGED = [
    ("SigmoidReuseOutput", 1, "output"),
    ("ReluMaskOnInput", 1, "input"),
    ("ScaledSquare", 2, "input"),
    ("TanhDerivativeByIndex", 2, "output"),
    ("SquareOutArgument", 1, "input"),
    ("FlatClampOutput", 1, "output"),
    ("CubeSetupContext", 1, "input"),
    ("RowsOfNormThree", 1, "output"),
]


@pytest.mark.parametrize("name, count, overwritten", FLAGGED)
def test_flagged_overwrite_the_callers_tensor(name: str, count: int, overwritten: str) -> None:
    inputs = _inputs(count)
    if name == "FlatClampOutput":
        inputs = [inputs[0] * 12]  # exp(x) above the clamp's bound
    if name == "RowsOfNormThree":
        inputs = [torch.arange(1.0, 13.0, dtype=torch.float64, requires_grad=True).reshape(3, 4)]
    inputs_changed, output_changed, second = _two_backwards(_cls(name).apply, inputs)
    assert (inputs_changed, output_changed) == (overwritten == "input", overwritten == "output")
    assert VERSION_ERROR in second
    assert "AGF123" in codes_inside(STEM, name)


def test_overwritten_output_gives_a_wrong_gradient_downstream() -> None:
    """The caller's output is read again after backward: a second loss on it sees the derivative, not y."""
    x = torch.tensor([0.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = _cls("SigmoidReuseOutput").apply(x)
    y.sum().backward()
    assert torch.allclose(y.detach(), torch.sigmoid(x.detach()) * (1 - torch.sigmoid(x.detach())))
    assert torch.allclose(x.grad, torch.sigmoid(x.detach()) * (1 - torch.sigmoid(x.detach())))


def test_saved_leaf_weight_is_overwritten_without_an_error() -> None:
    """Backward runs with gradients off, so the leaf in-place check does not fire: a saved weight is changed."""
    weight = torch.tensor([-1.0, 0.5, 2.0], requires_grad=True)
    _cls("ReluMaskOnInput").apply(weight).sum().backward()
    assert torch.equal(weight.detach(), torch.tensor([0.0, 1.0, 1.0]))  # the parameter now holds the mask
    assert torch.equal(weight.grad, torch.tensor([0.0, 1.0, 1.0]))


# Silent and correct: gradients check, nothing the caller holds changes, a second backward works.
SILENT = [("SigmoidOutOfPlace", 1), ("ReluMaskOnCopy", 1), ("ScaledSquareFresh", 2), ("SoftClipOutOfPlace", 1)]


@pytest.mark.parametrize("name, count", SILENT)
def test_silent_cases_leave_the_caller_alone(name: str, count: int) -> None:
    apply = _cls(name).apply
    if name != "ReluMaskOnCopy":  # a step function: finite differences disagree at nothing but its kink
        # The first input takes the gradient; the others (``scale``) get None from backward.
        leaves = [tensor.detach().requires_grad_(index == 0) for index, tensor in enumerate(_inputs(count))]
        assert torch.autograd.gradcheck(apply, tuple(leaves))
    assert _two_backwards(apply, _inputs(count)) == (False, False, "ok")
    assert "AGF123" not in codes_inside(STEM, name)


def test_scratch_intermediate_is_backwards_own() -> None:
    """A saved intermediate forward does not return: the caller's tensors stay as they were and the first
    gradient is right; only a second backward over the same graph notices (a known limit, not reported)."""
    inputs = _inputs(1)
    leaf = inputs[0].detach().requires_grad_()
    _cls("TanhScratch").apply(leaf).sum().backward()
    assert torch.allclose(leaf.grad, 2 * (1 - torch.tanh(leaf.detach()) ** 2))
    inputs_changed, output_changed, second = _two_backwards(_cls("TanhScratch").apply, inputs)
    assert (inputs_changed, output_changed) == (False, False)
    assert VERSION_ERROR in second
    assert "AGF123" not in codes_inside(STEM, "TanhScratch")


def test_rebound_input_is_not_followed() -> None:
    """``x = x.contiguous()`` returns the caller's very tensor when it is contiguous already: the write still
    reaches the caller. The rule stays silent on a rebound name (a known limit)."""
    inputs_changed, _, second = _two_backwards(_cls("ContiguousBeforeSave").apply, _inputs(1))
    assert inputs_changed and VERSION_ERROR in second
    assert "AGF123" not in codes_inside(STEM, "ContiguousBeforeSave")


def test_incoming_gradient_is_agf110s_finding() -> None:
    """In place on the incoming gradient, not on a saved tensor: AGF110 reports it (its oracle shows why)."""
    assert codes_inside(STEM, "ClipIncomingGradient") == {"AGF110"}


# The contract case in our own words: backward turns the saved output into its derivative and clears the
# saved input, both in place.
SIGMOID = """
import torch


class Sigmoid(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.sigmoid(x)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        y.mul_(1 - y)
        x.zero_()
        return grad_output * y
"""


def test_contract_case_inplace_on_saved_tensors() -> None:
    namespace: dict = {}
    exec(compile(SIGMOID, "sigmoid.py", "exec"), namespace)
    inputs = [torch.tensor([0.0, 1.0], requires_grad=True) * 1]
    inputs_changed, output_changed, second = _two_backwards(namespace["Sigmoid"].apply, inputs)
    assert inputs_changed and output_changed
    assert torch.equal(inputs[0].detach(), torch.zeros(2))  # the caller's tensor was cleared
    assert VERSION_ERROR in second
    assert [(f.line, f.code) for f in lint(SIGMOID, preview=True)] == [(15, "AGF123"), (16, "AGF123")]
