"""Stand-in: optimum-quanto ``optimum/quanto/tensor/function.py``, class ``QuantizedLinearFunction``.

The original is plain torch (its tensors are quanto's quantized subclasses on a GPU in practice); here
they are ordinary CPU tensors. The class keeps the original's decorators, ctx names, stores and returns:
forward is a staticmethod, backward is not (AGF001; the module never makes an instance).
"""

import torch

SOURCE = ("optimum-quanto", "optimum/quanto/tensor/function.py", "QuantizedLinearFunction")
FIXED = ("AGF001",)
UNSAFE = False


class QuantizedLinearFunction(torch.autograd.Function):
    """A linear layer whose backward is written out (no graph through the quantization ops)."""

    @staticmethod
    def forward(ctx, input, other, bias=None):
        ctx.save_for_backward(input, other)
        output = torch.matmul(input, other.t())
        if bias is not None:
            output = output + bias
        return output

    def backward(ctx, gO):
        input_gO = other_gO = bias_gO = None
        input, other = ctx.saved_tensors
        out_features, in_features = other.shape
        if ctx.needs_input_grad[0]:
            input_gO = torch.matmul(gO, other)
        if ctx.needs_input_grad[1]:
            other_gO = torch.matmul(gO.view(-1, out_features).t(), input.view(-1, in_features))
        if ctx.needs_input_grad[2]:
            dim = tuple(range(gO.ndim - 1))
            bias_gO = gO.sum(dim)
        return input_gO, other_gO, bias_gO


def inputs():
    return [
        torch.randn(2, 3, 5, requires_grad=True),
        torch.randn(4, 5, requires_grad=True),
        torch.randn(4, requires_grad=True),
    ]


def run(args):
    return QuantizedLinearFunction.apply(*args)
