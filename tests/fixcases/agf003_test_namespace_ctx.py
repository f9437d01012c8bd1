"""AGF003 and a unit test's ctx (robustness review, defect 7): forward and backward are called directly
with a SimpleNamespace, which has no save_for_backward. No fix may be offered."""

from types import SimpleNamespace

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
    v = torch.linspace(0.5, 1.5, 3, dtype=torch.float64)
    weight = torch.tensor([1.0, -1.0, 2.0], dtype=torch.float64)
    fake = SimpleNamespace()
    out = Weigh.forward(fake, v, weight)
    grad_v, _ = Weigh.backward(fake, torch.full((3,), 2.0, dtype=torch.float64))
    return [out, grad_v]
