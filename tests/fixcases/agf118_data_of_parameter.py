"""AGF118, held: forward saves .data of a Parameter that an optimiser-like step then changes through .data
between forward and backward."""

import torch


class Product(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v, weight):
        ctx.save_for_backward(v, weight.data)
        return v * weight

    @staticmethod
    def backward(ctx, grad):
        v, weight = ctx.saved_tensors
        return grad * weight, grad * v


def check():
    v = torch.linspace(0.5, 1.5, 3, dtype=torch.float64, requires_grad=True)
    weight = torch.nn.Parameter(torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64))
    total = Product.apply(v, weight).sum()
    with torch.no_grad():
        weight.data.mul_(0.5)
    total.backward()
    return [v.grad, weight.grad]
