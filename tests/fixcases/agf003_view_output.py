"""AGF003, held: the output is a view of the input and is kept on ctx."""

import torch


class Flatten(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v):
        flat = v.view(-1)
        ctx.flat = flat
        return flat

    @staticmethod
    def backward(ctx, grad):
        return grad.view(3, 2) + 0 * ctx.flat.view(3, 2)


def check():
    v = torch.arange(6, dtype=torch.float64).reshape(3, 2).requires_grad_()
    Flatten.apply(v).sum().backward()
    return [v.grad]
