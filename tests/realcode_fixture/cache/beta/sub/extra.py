"""Fixture project "beta" (test split): a file no label names."""

from torch.autograd import Function


class Twice(Function):
    def forward(ctx, x):
        return x

    def backward(ctx, grad):
        return grad
