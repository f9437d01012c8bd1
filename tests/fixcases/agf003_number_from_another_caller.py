"""AGF003 and a caller that passes a number (robustness review, defect 8): the input is annotated as a
tensor, but one call of the module passes a float, which save_for_backward refuses. The fix must be
withheld."""

import torch


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v, factor: torch.Tensor):
        ctx.factor = factor
        return v * factor

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.factor, None


def check():
    v = torch.linspace(0.5, 1.5, 3, dtype=torch.float64, requires_grad=True)
    by_tensor = Scale.apply(v, torch.full((3,), 4.0, dtype=torch.float64)).sum()
    by_number = Scale.apply(v, 0.5).sum()
    (by_tensor + by_number).backward()
    return [v.grad]
