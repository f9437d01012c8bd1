"""AGF003 and a subclass made with type() (robustness review, defect 7): the subclass's backward, a module
function, reads the attribute the base's forward keeps on ctx. No fix may be offered."""

import torch


class Twice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v):
        ctx.v = v
        return v * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2 + 0 * ctx.v


def _thrice_backward(ctx, grad):
    return grad * 3 + 0 * ctx.v


Thrice = type("Thrice", (Twice,), {"backward": staticmethod(_thrice_backward)})


def check():
    v = torch.linspace(0.0, 1.0, 3, dtype=torch.float64, requires_grad=True)
    Thrice.apply(v).sum().backward()
    return [v.grad]
