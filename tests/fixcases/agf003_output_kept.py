"""AGF003, held: the input and the output of forward both kept on ctx, the output read by backward."""

import torch


class Expo(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v):
        result = v.exp()
        ctx.v = v
        ctx.result = result
        return result

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.result + 0 * ctx.v


def check():
    v = torch.linspace(-1.0, 1.0, 5, dtype=torch.float64, requires_grad=True)
    Expo.apply(v).sum().backward()
    return [v.grad]
