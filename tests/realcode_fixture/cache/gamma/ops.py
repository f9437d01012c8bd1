"""Fixture project "gamma" (holdout split)."""

from torch.autograd import Function


class Halve(Function):
    @staticmethod
    def forward(ctx, x):
        return x / 2

    def backward(ctx, grad):
        return grad / 2


class Double(Function):
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2
