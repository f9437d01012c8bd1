"""AGF111 and a __call__ assigned to the class after it (robustness review, defect 3): Passthrough()(v) runs
the patched __call__. No fix may be offered."""

import torch


class Passthrough(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v):
        return v * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


Passthrough.__call__ = lambda self, v: v + 0.25


def check():
    v = torch.linspace(0.0, 1.0, 3, dtype=torch.float64)
    return [Passthrough()(v)]
