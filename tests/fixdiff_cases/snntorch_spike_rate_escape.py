"""Stand-in: snntorch ``snntorch/surrogate.py``, class ``SpikeRateEscape``.

The original is plain torch and runs on CPU as it is; the stand-in keeps its forward, backward and the
closure the library hands out. Forward is a staticmethod, backward is not (AGF001; the module never
makes an instance).
"""

import torch

SOURCE = ("snntorch", "snntorch/surrogate.py", "SpikeRateEscape")
FIXED = ("AGF001",)
UNSAFE = False


class SpikeRateEscape(torch.autograd.Function):
    """Heaviside step forward; the gradient of a Boltzmann distribution backward."""

    @staticmethod
    def forward(ctx, input_, beta, slope):
        ctx.save_for_backward(input_)
        ctx.beta = beta
        ctx.slope = slope
        out = (input_ > 0).float()
        return out

    def backward(ctx, grad_output):
        (input_,) = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad = (
            grad_input
            * ctx.slope
            * torch.exp(-ctx.beta * torch.abs(input_ - 1))
        )
        return grad, None, None


def spike_rate_escape(beta=1, slope=25):
    def inner(x):
        return SpikeRateEscape.apply(x, beta, slope)

    return inner


def inputs():
    return [torch.randn(3, 7, requires_grad=True)]


def run(args):
    return spike_rate_escape(beta=0.5, slope=10)(*args)
