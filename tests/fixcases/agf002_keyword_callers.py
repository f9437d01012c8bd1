"""AGF002 and callers that name the parameter (robustness review, defect 11): forward and backward are
called with self= as a keyword; renaming the parameter to ctx breaks those calls. No fix may be offered."""

from types import SimpleNamespace

import torch


class Triple(torch.autograd.Function):
    @staticmethod
    def forward(self, v):
        self.factor = 3
        return v * self.factor

    @staticmethod
    def backward(self, grad):
        return grad * self.factor


def check():
    v = torch.linspace(0.0, 1.0, 3, dtype=torch.float64)
    state = SimpleNamespace()
    return [Triple.forward(self=state, v=v), Triple.backward(self=state, grad=v)]
