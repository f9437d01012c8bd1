"""AGF003, held: an optional input that the call leaves None, kept on ctx next to a tensor."""

from typing import Optional

import torch


class Shift(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v: torch.Tensor, offset: Optional[torch.Tensor] = None):
        ctx.offset = offset
        ctx.v = v
        return v * 3 if offset is None else v * 3 + offset

    @staticmethod
    def backward(ctx, grad):
        grad_offset = None if ctx.offset is None else grad
        return 3 * grad + 0 * ctx.v, grad_offset


def check():
    v = torch.linspace(-1.0, 1.0, 3, dtype=torch.float64, requires_grad=True)
    Shift.apply(v, None).sum().backward()
    return [v.grad]
