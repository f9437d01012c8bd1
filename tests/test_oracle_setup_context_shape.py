"""PyTorch is the oracle for AGF128: apply binds forward's defaults and calls setup_context(ctx, inputs,
output) with three positional arguments, so a setup_context that cannot take them, or unpacks inputs into
another number of names, fails at every call; the parameter that receives inputs is a tuple, never a tensor."""

from typing import Any, Tuple

from conftest import codes, codes_inside, fixture_module, require_torch

torch = require_torch()

import pytest  # noqa: E402

STEM = "agf128"


def _cls(name: str) -> Any:
    return getattr(fixture_module(STEM), name)


def _t(index: int = 0) -> Any:
    return torch.linspace(0.5, 2.0, 4, dtype=torch.float64).add(0.1 * index).requires_grad_()


FAILING = [
    ("BiasedMulFunction", lambda: (_t(), _t(1)), ValueError, r"too many values to unpack \(expected 2"),
    ("SoftplusFunction", lambda: (_t(), 2.0), ValueError, r"not enough values to unpack \(expected 3, got 2\)"),
    ("BlendFunction", lambda: (_t(), _t(1)), ValueError, r"not enough values to unpack \(expected at least 3, got 2\)"),
    ("SineFunction", lambda: (_t(),), AttributeError, "'tuple' object has no attribute 'contiguous'"),
    (
        "SquareFunction",
        lambda: (_t(),),
        TypeError,
        "save_for_backward can only save variables, but argument 0 is of type tuple",
    ),
    ("NegateFunction", lambda: (_t(),), TypeError, r"setup_context\(\) takes 2 positional arguments but 3 were given"),
    ("ShiftFunction", lambda: (_t(), 1.0), TypeError, "missing 1 required positional argument: 'shift'"),
    (
        "ClampFunction",
        lambda: (_t(), 0.7, 1.5),
        TypeError,
        "missing 1 required keyword-only argument: 'inclusive'",
    ),
]


@pytest.mark.parametrize(("name", "args", "error", "pattern"), FAILING, ids=[case[0] for case in FAILING])
def test_flagged_setup_context_fails_at_apply(name: str, args: Any, error: type, pattern: str) -> None:
    with pytest.raises(error, match=pattern):
        _cls(name).apply(*args())
    assert "AGF128" in codes_inside(STEM, name)


def test_inputs_holds_the_defaults_apply_binds() -> None:
    """The call passes two tensors, but inputs holds three values: the default bias is bound."""
    seen = []

    class Probe(torch.autograd.Function):
        @staticmethod
        def forward(x: Any, weight: Any, bias: Any = None) -> Any:
            return x * weight

        @staticmethod
        def setup_context(ctx: Any, inputs: Tuple[Any, ...], output: Any) -> None:
            seen.append(len(inputs))

        @staticmethod
        def backward(ctx: Any, grad_output: Any) -> Any:
            return grad_output, grad_output, None

    Probe.apply(_t(), _t(1))
    Probe.apply(_t(), weight=_t(1))
    assert seen == [3, 3]


SILENT = [
    ("BiasedMulTupleFunction", lambda: (_t(), _t(1))),
    ("BlendRestFunction", lambda: (_t(), _t(1))),
    ("ScaleFunction", lambda: (_t(), 3.0)),
    ("CubeFunction", lambda: (_t(),)),
    ("SumAllFunction", lambda: (_t(), _t(1))),
    ("MaskedFillFunction", lambda: (_t(), torch.tensor([True, False, True, False]), 0.0)),
    ("ExpFunction", lambda: (_t(),)),
]


@pytest.mark.parametrize(("name", "args"), SILENT, ids=[case[0] for case in SILENT])
def test_silent_setup_context_runs_fine(name: str, args: Any) -> None:
    arguments = args()
    positions = [i for i, arg in enumerate(arguments) if isinstance(arg, torch.Tensor) and arg.requires_grad]

    def call(*tensors: Any) -> Any:
        concrete = list(arguments)
        for position, tensor in zip(positions, tensors):
            concrete[position] = tensor
        return _cls(name).apply(*concrete)

    assert torch.autograd.gradcheck(call, tuple(arguments[i] for i in positions))
    assert "AGF128" not in codes_inside(STEM, name)


def test_contract_cases_are_reported() -> None:
    """The contract's reproductions in our words: too few names for a forward with a default, a parameter
    named after the input, and a setup_context without its output parameter."""
    source = """
import torch

class AddScaled(torch.autograd.Function):
    @staticmethod
    def forward(a, b, alpha=1.0):
        return a + alpha * b

    @staticmethod
    def setup_context(ctx, inputs, output):
        a, b = inputs
        ctx.alpha = 1.0

    @staticmethod
    def backward(ctx, grad):
        return grad, grad * ctx.alpha, None


class Twice(torch.autograd.Function):
    @staticmethod
    def forward(a):
        return a * 2

    @staticmethod
    def setup_context(ctx, a, output):
        ctx.save_for_backward(a)

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


class TwiceNoOutput(Twice):
    @staticmethod
    def setup_context(ctx, inputs):
        pass
"""
    found = codes(source, preview=True)
    assert found.count("AGF128") == 3
