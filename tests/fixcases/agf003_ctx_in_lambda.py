"""AGF003 and ctx handed on inside a lambda (robustness review, defect 7): a module helper called from a
lambda in backward reads the attribute. No fix may be offered."""

import torch


def weighted(ctx, grad):
    return grad * ctx.weight


class Weigh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v, weight: torch.Tensor):
        ctx.weight = weight
        return v * weight

    @staticmethod
    def backward(ctx, grad):
        later = lambda: weighted(ctx, grad)  # noqa: E731
        return later() + 0 * ctx.weight, None


def check():
    v = torch.linspace(0.5, 1.5, 3, dtype=torch.float64, requires_grad=True)
    weight = torch.tensor([2.0, 4.0, 8.0], dtype=torch.float64)
    Weigh.apply(v, weight).sum().backward()
    return [v.grad]
