"""AGF003 and composition in backward (robustness review, defect 1): Outer keeps its own tensor on ctx under
the name Inner's backward reads, and calls Inner.backward with its ctx. No fix may be offered."""

import torch


class Inner(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v, weight: torch.Tensor):
        ctx.weight = weight
        return v * weight

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.weight, None


class Outer(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v, weight):
        ctx.weight = weight * 4
        return v * weight * 4

    @staticmethod
    def backward(ctx, grad):
        return Inner.backward(ctx, grad)


def check():
    v = torch.linspace(0.5, 1.5, 3, dtype=torch.float64, requires_grad=True)
    weight = torch.tensor([1.0, 2.0, -3.0], dtype=torch.float64)
    Outer.apply(v, weight).sum().backward()
    return [v.grad]
