"""AGF003, by design: a caller changes an input in place between forward and backward. Before the fix
backward silently used the changed values; after it torch's version check raises "modified by an inplace
operation" (which is the rule's purpose)."""

import torch


class Weigh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v, weight: torch.Tensor):
        ctx.weight = weight
        return v * weight

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.weight, None


def check():
    v = torch.linspace(0.5, 1.5, 3, dtype=torch.float64, requires_grad=True)
    weight = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    total = Weigh.apply(v, weight).sum()
    weight.mul_(4.0)  # between forward and backward
    total.backward()
    return [v.grad]
