"""AGF003 and a silenced store (robustness review, defect 6): of two tensors kept on ctx, the user silenced
the second with noqa. A fix may move the first into save_for_backward, never the silenced one."""

import torch


class Product(torch.autograd.Function):
    @staticmethod
    def forward(ctx, left: torch.Tensor, right: torch.Tensor):
        ctx.left = left
        ctx.right = right  # noqa: AGF003 - kept on ctx on purpose
        return left * right

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.right, grad * ctx.left


def check():
    left = torch.linspace(0.5, 1.5, 3, dtype=torch.float64, requires_grad=True)
    right = torch.linspace(-1.5, -0.5, 3, dtype=torch.float64, requires_grad=True)
    Product.apply(left, right).sum().backward()
    return [left.grad, right.grad]
