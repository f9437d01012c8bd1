"""AGF003 and a reader outside the class (robustness review, defect 7): the caller reads the attribute from
the output's grad_fn. No fix may be offered."""

import torch


class Weigh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v, weight: torch.Tensor):
        ctx.weight = weight
        return v * weight

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.weight, None


def check():
    v = torch.linspace(0.5, 1.5, 3, dtype=torch.float64, requires_grad=True)
    weight = torch.tensor([4.0, 5.0, 6.0], dtype=torch.float64)
    out = Weigh.apply(v, weight)
    return [out.grad_fn.weight]
