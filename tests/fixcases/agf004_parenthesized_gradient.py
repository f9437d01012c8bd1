"""AGF004 and a parenthesized last gradient (robustness review, defect 5): backward returns two gradients for
three inputs, the last one in parentheses. The missing None goes after the closing parenthesis (not inside
it, which would make the gradient a tuple), once: a second fix changes nothing."""

import torch


class ScaledProduct(torch.autograd.Function):
    @staticmethod
    def forward(ctx, left, right, factor: float):
        ctx.save_for_backward(left, right)
        ctx.factor = factor
        return left * right * factor

    @staticmethod
    def backward(ctx, grad):
        left, right = ctx.saved_tensors
        return grad * right * ctx.factor, (grad * left * ctx.factor)


def check():
    left = torch.linspace(0.5, 1.5, 3, dtype=torch.float64, requires_grad=True)
    right = torch.linspace(-1.0, 1.0, 3, dtype=torch.float64, requires_grad=True)
    ScaledProduct.apply(left, right, 0.25).sum().backward()
    return [left.grad, right.grad]
