"""AGF003, held: backward also reads the attribute through ctx.__dict__, which a fix would break."""

import torch


class Weigh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v, weight: torch.Tensor):
        ctx.weight = weight
        return v * weight

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.__dict__["weight"] + 0 * ctx.weight, None


def check():
    v = torch.linspace(0.5, 1.5, 3, dtype=torch.float64, requires_grad=True)
    weight = torch.tensor([3.0, -2.0, 1.0], dtype=torch.float64)
    Weigh.apply(v, weight).sum().backward()
    return [v.grad]
