"""AGF003, held: between the two stores, forward rebinds the name of the first stored input (an import of
a module by that name). A merged save_for_backward would save the module: the fix must be withheld for it."""

import torch


class Pair(torch.autograd.Function):
    @staticmethod
    def forward(ctx, math: torch.Tensor, second: torch.Tensor):
        ctx.math = math
        import math
        ctx.second = second
        return second * math.e

    @staticmethod
    def backward(ctx, grad):
        return 0 * ctx.math, grad * 2.718281828459045 + 0 * ctx.second


def check():
    first = torch.linspace(0.5, 1.5, 3, dtype=torch.float64, requires_grad=True)
    second = torch.linspace(2.0, 3.0, 3, dtype=torch.float64, requires_grad=True)
    Pair.apply(first, second).sum().backward()
    return [first.grad, second.grad]
