"""AGF003 and an alias of ctx (robustness review, defect 7): backward reads the attribute through another
name bound to ctx as well. No fix may be offered."""

import torch


class Weigh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v, weight: torch.Tensor):
        ctx.weight = weight
        return v * weight

    @staticmethod
    def backward(ctx, grad):
        same = ctx
        return grad * ctx.weight + 0 * same.weight, None


def check():
    v = torch.linspace(0.5, 1.5, 3, dtype=torch.float64, requires_grad=True)
    weight = torch.tensor([0.5, 1.0, 1.5], dtype=torch.float64)
    Weigh.apply(v, weight).sum().backward()
    return [v.grad]
