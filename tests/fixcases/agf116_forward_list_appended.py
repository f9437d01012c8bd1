"""AGF116 on forward, by design unsafe (robustness review, defect 10): forward returns a list and the caller
appends to what apply gives; after [...] becomes (...) the caller gets a tuple, which has no append."""

import torch


class Halves(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v):
        return [v[:3] * 1, v[3:] * 1]

    @staticmethod
    def backward(ctx, grad_head, grad_tail):
        return torch.cat([grad_head, grad_tail])


def check():
    v = torch.linspace(0.0, 1.0, 6, dtype=torch.float64, requires_grad=True)
    pieces = Halves.apply(v)
    pieces.append(v * 0)
    return [piece.detach() for piece in pieces]
