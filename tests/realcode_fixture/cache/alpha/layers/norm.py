"""Fixture project "alpha" (dev split): a preview finding and an unlabelled class."""

from torch.autograd import Function


class SavesTwice(Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x)
        ctx.save_for_backward(w)
        return x * w

    @staticmethod
    def backward(ctx, grad):
        (w,) = ctx.saved_tensors
        return grad * w, None


class Unlabelled(Function):
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad
