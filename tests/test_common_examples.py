"""The three mistakes most often shown when custom Functions are taught, each reported, each shown
under torch 2.13: backward unpacks ctx.saved_tensors though forward saved nothing; a per-call input kept
on the Function class ("a global, a memory leak"); and tensors saved that backward never reads ("save only
what you need"). Written in our own words; the corrected forms stay silent."""

from __future__ import annotations

import gc
import textwrap
import weakref
from typing import Any, Dict, List

import pytest

from conftest import lint, require_torch

torch = require_torch()

NOTHING_SAVED = """
import torch

class ClampFunction(torch.autograd.Function):
    def forward(ctx, input):
        return input.clamp(min=0)

    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input
"""

KEPT_ON_CLASS = """
import torch

class LeakySquare(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        LeakySquare.saved_input = input  # shared by every call
        return input ** 2

    @staticmethod
    def backward(ctx, grad_output):
        input = LeakySquare.saved_input
        return 2 * input * grad_output
"""

SAVES_TOO_MUCH = """
import torch

class DoubledExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        intermediate = input.exp()
        output = intermediate * 2
        ctx.save_for_backward(input, intermediate, output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, intermediate, output = ctx.saved_tensors
        return grad_output * output
"""

CORRECTED = {
    "nothing-saved": NOTHING_SAVED.replace("    def ", "    @staticmethod\n    def ").replace(
        "        return input.clamp(min=0)", "        ctx.save_for_backward(input)\n        return input.clamp(min=0)"
    ),
    "kept-on-class": KEPT_ON_CLASS.replace(
        "LeakySquare.saved_input = input  # shared by every call", "ctx.save_for_backward(input)"
    ).replace("input = LeakySquare.saved_input", "(input,) = ctx.saved_tensors"),
    "saves-too-much": SAVES_TOO_MUCH.replace(
        "ctx.save_for_backward(input, intermediate, output)", "ctx.save_for_backward(output)"
    ).replace("input, intermediate, output = ctx.saved_tensors", "(output,) = ctx.saved_tensors"),
}


def _findings(source: str) -> List[tuple[int, str]]:
    return [(finding.line, finding.code) for finding in lint(textwrap.dedent(source), preview=True)]


def _load(source: str, name: str) -> Any:
    namespace: Dict[str, Any] = {}
    exec(compile(source, f"<{name}>", "exec"), namespace)  # noqa: S102 - our own example source
    return namespace[name]


def test_nothing_saved_is_reported_and_fails_at_the_first_backward() -> None:
    assert _findings(NOTHING_SAVED) == [(5, "AGF001"), (8, "AGF001"), (9, "AGF117")]
    x = torch.randn(4, requires_grad=True)
    with pytest.raises(ValueError, match=r"not enough values to unpack \(expected 1, got 0\)"):
        _load(NOTHING_SAVED, "ClampFunction").apply(x).sum().backward()


def test_input_kept_on_the_class_is_reported_and_gives_a_wrong_gradient_when_calls_overlap() -> None:
    assert _findings(KEPT_ON_CLASS) == [(7, "AGF120")]
    function = _load(KEPT_ON_CLASS, "LeakySquare")
    first = torch.full((2,), 1.0, requires_grad=True)
    second = torch.full((2,), 5.0, requires_grad=True)
    out_first = function.apply(first)
    function.apply(second)  # overwrites the class attribute before the first backward
    out_first.sum().backward()
    assert first.grad.tolist() == [10.0, 10.0]  # 2 * 5, not 2 * 1
    alive = weakref.ref(second)
    del second
    gc.collect()
    assert alive() is not None  # the class keeps the last input alive


def test_tensors_saved_and_never_read_are_reported_and_kept_alive() -> None:
    findings = lint(textwrap.dedent(SAVES_TOO_MUCH), preview=True)
    assert [(finding.line, finding.code) for finding in findings] == [(9, "AGF122")]
    assert "never reads saved input and intermediate" in findings[0].message
    function = _load(SAVES_TOO_MUCH, "DoubledExp")
    x = torch.randn(3, requires_grad=True)
    out = function.apply(x)
    saved = out.grad_fn.saved_tensors  # what the graph holds until backward
    assert len(saved) == 3
    out.sum().backward()
    assert torch.allclose(x.grad, 2 * x.exp())


@pytest.mark.parametrize("name", sorted(CORRECTED))
def test_corrected_forms_are_silent_and_right(name: str) -> None:
    source = CORRECTED[name]
    assert _findings(source) == [], source
    namespace: Dict[str, Any] = {}
    exec(compile(source, f"<{name}>", "exec"), namespace)  # noqa: S102 - our own example source
    function: Any = next(
        value for value in namespace.values()
        if isinstance(value, type) and issubclass(value, torch.autograd.Function)
        and value is not torch.autograd.Function
    )
    x = torch.rand(3, dtype=torch.double, requires_grad=True) + 0.1
    assert torch.autograd.gradcheck(function.apply, (x,))
