"""AGF003 and ctx rebound in backward (robustness review, defect 7): backward reads the attribute, then binds
the name ctx to another object and reads the attribute of that one. No fix may be offered."""

from types import SimpleNamespace

import torch


class Weigh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v, weight: torch.Tensor):
        ctx.weight = weight
        return v * weight

    @staticmethod
    def backward(ctx, grad):
        weight = ctx.weight
        ctx = SimpleNamespace(weight=weight * 3)
        return grad * ctx.weight / 3, None


def check():
    v = torch.linspace(0.5, 1.5, 3, dtype=torch.float64, requires_grad=True)
    weight = torch.tensor([1.5, -0.5, 2.5], dtype=torch.float64)
    Weigh.apply(v, weight).sum().backward()
    return [v.grad]
