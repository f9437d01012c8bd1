"""AGF002 and an f-string's = specifier (robustness review, defect 11): f"{self.factor=}" writes the
parameter's name into the text, so the rename would change what is logged."""

import torch

LOGGED = []


class Triple(torch.autograd.Function):
    @staticmethod
    def forward(self, v):
        self.factor = 3
        LOGGED.append(f"{self.factor=}")
        return v * self.factor

    @staticmethod
    def backward(self, grad):
        return grad * self.factor


def check():
    v = torch.linspace(0.0, 1.0, 3, dtype=torch.float64, requires_grad=True)
    Triple.apply(v).sum().backward()
    return [v.grad, LOGGED]
