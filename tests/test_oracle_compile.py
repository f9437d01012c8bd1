"""PyTorch as the oracle for the README's claim on ``torch.compile``: compiled, a backward returning too few
gradients raises nothing and leaves a weight's ``.grad`` as None, where eager raises; the linter reports
the class either way (AGF004, with preview)."""

from __future__ import annotations

from conftest import codes, require_torch

torch = require_torch()

TOO_FEW = """
import torch


class Mul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x * w

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        return grad * w
"""


def _mul() -> type:
    namespace: dict = {}
    exec(compile(TOO_FEW, "too_few.py", "exec"), namespace)
    return namespace["Mul"]


def test_eager_raises_the_count_error() -> None:
    mul = _mul()
    x, w = (torch.rand(3, requires_grad=True) for _ in range(2))
    try:
        mul.apply(x, w).sum().backward()
    except RuntimeError as error:
        assert "incorrect number of gradients (expected 2, got 1)" in str(error)
    else:
        raise AssertionError("eager accepted one gradient for two inputs")


def test_compiled_drops_the_weight_gradient_silently() -> None:
    mul = _mul()
    x, w = (torch.rand(3, requires_grad=True) for _ in range(2))
    torch._dynamo.reset()
    compiled = torch.compile(lambda a, b: mul.apply(a, b).sum(), backend="aot_eager", fullgraph=True)
    compiled(x, w).backward()
    assert x.grad is not None and w.grad is None


def test_the_linter_reports_it_before_any_run() -> None:
    # AGF004 on the count; AGF122 on the save of x, which only the forgotten gradient of w would read.
    assert codes(TOO_FEW, preview=True) == ["AGF122", "AGF004"]
