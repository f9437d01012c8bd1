"""AGF111 and a class that defines __call__ (robustness review, defect 3): Double()(v) runs the class's
own __call__, not Function's; Double.apply(v) would silently drop its + 1. No fix may be offered."""

import torch


class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v):
        return v * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2

    def __call__(self, v):
        return self.apply(v) + 1


def check():
    v = torch.linspace(0.0, 1.0, 3, dtype=torch.float64)
    return [Double()(v)]
