"""AGF003, by design: after the fix a second backward through the same graph without retain_graph=True
raises "Trying to backward through the graph a second time" (save_for_backward frees what it saved);
before it the attribute kept the tensor alive and the second backward ran."""

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
    weight = torch.tensor([2.0, -1.0, 0.5], dtype=torch.float64)
    total = Weigh.apply(v, weight).sum()
    total.backward()
    total.backward()  # again, without retain_graph=True
    return [v.grad]
