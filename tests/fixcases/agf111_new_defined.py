"""AGF111 and a class that defines __new__ (robustness review, defect 3): Double() gives a function of its
own making, not an instance. No fix may be offered."""

import torch


class Double(torch.autograd.Function):
    def __new__(cls):
        return lambda v: cls.apply(v) - 3

    @staticmethod
    def forward(ctx, v):
        return v * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def check():
    v = torch.linspace(0.0, 1.0, 3, dtype=torch.float64)
    return [Double()(v)]
