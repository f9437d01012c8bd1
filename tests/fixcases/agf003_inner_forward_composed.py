"""AGF003 and Function composition (robustness review, defect 1): Outer runs Inner's forward and backward
on its own ctx and saves a tensor of its own. Moving Inner's attribute into save_for_backward lets
Outer's call replace it, and Inner's backward reads the wrong tensor: no fix may be offered."""

import torch


class Inner(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v):
        ctx.v = v
        return v * v

    @staticmethod
    def backward(ctx, grad):
        return 2 * grad * ctx.v


class Outer(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v, scale):
        result = Inner.forward(ctx, v) * scale
        ctx.save_for_backward(scale)
        return result

    @staticmethod
    def backward(ctx, grad):
        (scale,) = ctx.saved_tensors
        return Inner.backward(ctx, grad * scale), None


def check():
    v = torch.linspace(1.0, 3.0, 3, dtype=torch.float64, requires_grad=True)
    scale = torch.tensor([10.0, 20.0, 30.0], dtype=torch.float64)
    Outer.apply(v, scale).sum().backward()
    return [v.grad]
