"""AGF111 and a class decorator that replaces the class (robustness review, defect 3): the name is bound to
a factory, which has no apply. No fix may be offered."""

import torch


def as_factory(cls):
    return lambda: cls.apply


@as_factory
class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v):
        return v * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def check():
    v = torch.linspace(0.0, 1.0, 3, dtype=torch.float64)
    return [Double()(v)]
