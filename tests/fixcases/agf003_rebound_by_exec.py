"""AGF003, held: between the two stores, forward rebinds the name of the first stored input (exec of an assignment). A merged
save_for_backward would save what the name holds then: the fix must be withheld for it."""

import torch


class Pair(torch.autograd.Function):
    @staticmethod
    def forward(ctx, first: torch.Tensor, second: torch.Tensor):
        ctx.first = first
        exec("first = second")
        ctx.second = second
        return first * second

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.second, grad * ctx.first


def check():
    first = torch.linspace(0.5, 1.5, 3, dtype=torch.float64, requires_grad=True)
    second = torch.linspace(2.0, 3.0, 3, dtype=torch.float64, requires_grad=True)
    Pair.apply(first, second).sum().backward()
    return [first.grad, second.grad]
