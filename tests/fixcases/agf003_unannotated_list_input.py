"""AGF003, held: an unannotated input, here a list of indices, kept on ctx; nothing says it is a tensor."""

import torch


class Pick(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v, where):
        ctx.where = where
        return v[where]

    @staticmethod
    def backward(ctx, grad):
        full = torch.zeros(5, dtype=grad.dtype)
        full[ctx.where] = grad
        return full, None


def check():
    v = torch.linspace(0.0, 1.0, 5, dtype=torch.float64, requires_grad=True)
    Pick.apply(v, [1, 3]).sum().backward()
    return [v.grad]
