"""Fixture project "alpha" (dev split): Function classes with known findings."""

import torch
from torch.autograd import Function


class MissingStatic(Function):
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


class CtxTensor(Function):
    @staticmethod
    def forward(ctx, x):
        result = torch.sin(x)
        ctx.result = result
        return result

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.result


class Correct(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.exp()

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return grad * result


class TwoGradients(Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * y


class HiddenTensor(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.cache = make_cache(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad + ctx.cache


def make_cache(x):
    return torch.zeros_like(x)


class Instantiated(Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad


# A finding outside the class that names it: counted for the class.
instance = Instantiated()
