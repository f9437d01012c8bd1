"""AGF116 on forward, by design unsafe (robustness review, defect 10): the caller adds a list to what apply
gives and reports its type; after the fix the result is a tuple and list + tuple fails."""

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
    return [type(pieces).__name__, pieces[1].requires_grad, torch.cat(pieces + [v]).detach()]
