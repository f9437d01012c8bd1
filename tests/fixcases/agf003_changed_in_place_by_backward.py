"""AGF003 and a tensor backward changes in place (robustness review, defect 9): backward scales the kept
tensor in place and reads it again. Saved through save_for_backward, the second read fails torch's
version check, so the fix must be withheld."""

import torch


class Halve(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v):
        doubled = v * 2
        ctx.doubled = doubled
        return doubled

    @staticmethod
    def backward(ctx, grad):
        ctx.doubled.div_(2.0)
        return grad * ctx.doubled


def check():
    v = torch.linspace(-0.5, 0.5, 4, dtype=torch.float64, requires_grad=True)
    Halve.apply(v).sum().backward()
    return [v.grad]
