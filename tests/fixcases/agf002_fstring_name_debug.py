"""AGF002 and an f-string's = specifier on the bare name (robustness review, defect 11): f"{self=}" starts
with the parameter's name, so the rename would change what is logged."""

import torch

LOGGED = []


class Double(torch.autograd.Function):
    @staticmethod
    def forward(self, v):
        self.save_for_backward(v)
        LOGGED.append(f"{self=}".split("=")[0])
        return v * 2

    @staticmethod
    def backward(self, grad):
        return grad * 2


def check():
    v = torch.linspace(0.0, 1.0, 3, dtype=torch.float64, requires_grad=True)
    Double.apply(v).sum().backward()
    return [v.grad, LOGGED]
