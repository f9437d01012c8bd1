"""AGF111 and a local base class that defines __call__ (robustness review, defect 3): instantiating the
subclass and calling it goes through the base's __call__, which scales the result. No fix may be offered."""

import torch


class ScaledCall(torch.autograd.Function):
    def __call__(self, *args):
        return type(self).apply(*args) * 100


class Double(ScaledCall):
    @staticmethod
    def forward(ctx, v):
        return v * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def check():
    v = torch.linspace(0.0, 1.0, 3, dtype=torch.float64)
    return [Double()(v)]
