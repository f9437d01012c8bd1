"""AGF003, held: three inputs kept on ctx in one order and read by backward in another; the merged
save_for_backward must index each read correctly."""

import torch


class Blend(torch.autograd.Function):
    @staticmethod
    def forward(ctx, p, q, r):
        ctx.r = r
        ctx.p = p
        ctx.q = q
        return p * q + r * p

    @staticmethod
    def backward(ctx, grad):
        return grad * (ctx.q + ctx.r), grad * ctx.p, grad * ctx.p


def check():
    p, q, r = (torch.linspace(0.2 * k, 1.0 + k, 4, dtype=torch.float64, requires_grad=True) for k in range(3))
    Blend.apply(p, q, r).sum().backward()
    return [p.grad, q.grad, r.grad]
