"""AGF003, held: a gradient of a gradient (create_graph=True) through a tensor kept on ctx."""

import torch


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v):
        ctx.v = v
        return v * v

    @staticmethod
    def backward(ctx, grad):
        return 2 * grad * ctx.v


def check():
    v = torch.linspace(0.5, 2.0, 4, dtype=torch.float64, requires_grad=True)
    (first,) = torch.autograd.grad(Square.apply(v).sum(), v, create_graph=True)
    (second,) = torch.autograd.grad(first.sum(), v)
    return [first.detach(), second]
