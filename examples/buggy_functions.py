"""Custom autograd Functions with one mistake per rule.

Only AGF001 is on by default, so plain ``flake8 --select AGF`` shows one finding here; the other codes
are preview codes. AGF002-AGF005 stay in preview until they show 0.95 judged precision over 10 findings
and 0.80 recall on projects held out from the rules' authors (on the 2026-11-27 holdout none did; the
README's rule table has each code's figure). To see them all:

    flake8 --select AGF --autograd-preview examples/buggy_functions.py
"""

import torch


class ScaledLinear(torch.autograd.Function):
    """AGF003 and AGF004: a tensor kept on ctx, and too few gradients for three inputs."""

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        ctx.bias = bias.contiguous()  # should go through save_for_backward
        return x @ weight.t() + bias

    @staticmethod
    def backward(ctx, grad_output):
        x, weight = ctx.saved_tensors
        grad_x = grad_output @ weight
        grad_weight = grad_output.t() @ x
        return grad_x, grad_weight  # bias gets no gradient slot


class LegacyRelu(torch.autograd.Function):
    """AGF001: the pre-1.3 instance-method style (not static: self is an instance, which torch refuses)."""

    def forward(self, x):
        self.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * (x > 0)


class Halve(torch.autograd.Function):
    """AGF002: the context named as if it were an instance."""

    @staticmethod
    def forward(self, x):
        return x / 2

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output / 2


class Multiply(torch.autograd.Function):
    """AGF005: both gradients are always computed, even when only one is needed."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, grad_output):
        a, b = ctx.saved_tensors
        return grad_output * b, grad_output * a
