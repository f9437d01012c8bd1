"""AGF003 and composition (robustness review, defect 1): Batched saves a tensor with save_for_backward and
runs Piece's forward and backward on its own ctx. No fix may be offered for Piece."""

import torch


class Piece(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v, weight: torch.Tensor):
        ctx.weight = weight
        return v * weight

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.weight, None


class Batched(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v, weight):
        ctx.save_for_backward(weight)
        return Piece.forward(ctx, v, weight * 2)

    @staticmethod
    def backward(ctx, grad):
        (weight,) = ctx.saved_tensors
        grad_v, _ = Piece.backward(ctx, grad)
        return grad_v, None


def check():
    v = torch.linspace(0.5, 1.5, 3, dtype=torch.float64, requires_grad=True)
    weight = torch.tensor([1.0, 3.0, 5.0], dtype=torch.float64)
    Batched.apply(v, weight).sum().backward()
    return [v.grad]
