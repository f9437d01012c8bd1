"""Stand-in: apex ``apex/contrib/cudnn_gbn/batch_norm.py``, class ``_GroupBatchNorm2d``.

The cuDNN group batch norm kernels (``cudnn_gbn_lib``) are replaced by a plain batch norm on CPU that
fills the minibatch statistics in place, as the kernel does; the peer buffers are opaque objects. The
class keeps the original's decorators, ctx names, stores and returns; backward reads
``ctx.saved_variables`` (AGF119).
"""

import types

import torch
from torch.cuda.amp import custom_bwd, custom_fwd

SOURCE = ("apex", "apex/contrib/cudnn_gbn/batch_norm.py", "_GroupBatchNorm2d")
FIXED = ("AGF119",)
UNSAFE = False


def _forward_kernel(input, weight, bias, running_mean, running_variance, minibatch_mean, minibatch_inv_var,
                    momentum, eps):
    mean = input.mean(dim=(0, 2, 3))
    var = input.var(dim=(0, 2, 3), unbiased=False)
    minibatch_mean.data.copy_(mean)  # a kernel writes without bumping the version counter
    minibatch_inv_var.data.copy_(torch.rsqrt(var + eps))
    running_mean.data.mul_(1 - momentum).add_(momentum * mean)
    running_variance.data.mul_(1 - momentum).add_(momentum * var)
    shape = (1, -1, 1, 1)
    return (input - mean.view(shape)) * minibatch_inv_var.view(shape) * weight.view(shape) + bias.view(shape)


def _backward_kernel(x, grad_output, scale, minibatch_mean, minibatch_inv_var):
    shape = (1, -1, 1, 1)
    xhat = (x - minibatch_mean.view(shape)) * minibatch_inv_var.view(shape)
    count = x.numel() / x.size(1)
    dbias = grad_output.sum(dim=(0, 2, 3))
    dscale = (grad_output * xhat).sum(dim=(0, 2, 3))
    dx = (scale * minibatch_inv_var).view(shape) / count * (
        count * grad_output - dbias.view(shape) - xhat * dscale.view(shape)
    )
    return dx, dscale, dbias


# The extension module the original imports, on CPU.
cudnn_gbn_lib = types.SimpleNamespace(
    forward=_forward_kernel,
    backward=_backward_kernel,
)


class _GroupBatchNorm2d(torch.autograd.Function):
    @staticmethod
    @custom_fwd
    def forward(
        ctx,
        input,
        weight,
        bias,
        running_mean,
        running_variance,
        minibatch_mean,
        minibatch_inv_var,
        momentum,
        eps,
        group_size,
        group_rank,
        fwd_buffers,
        bwd_buffers,
    ):
        ctx.save_for_backward(input, weight, minibatch_mean, minibatch_inv_var)
        ctx.eps = eps
        ctx.bn_group = group_size
        ctx.rank_id = group_rank
        ctx.peer_buffers = bwd_buffers
        return cudnn_gbn_lib.forward(
            input, weight, bias, running_mean, running_variance, minibatch_mean, minibatch_inv_var, momentum, eps
        )

    @staticmethod
    @custom_bwd
    def backward(ctx, grad_output):
        x, scale, minibatch_mean, minibatch_inv_var = ctx.saved_variables
        eps = ctx.eps
        bn_group = ctx.bn_group
        rank_id = ctx.rank_id
        peer_buffers = ctx.peer_buffers
        assert eps > 0 and bn_group == 1 and rank_id == 0 and peer_buffers is not None
        dx, dscale, dbias = cudnn_gbn_lib.backward(x, grad_output, scale, minibatch_mean, minibatch_inv_var)
        return (
            dx,
            dscale,
            dbias,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
        )


def inputs():
    channels = 3
    return [
        torch.randn(4, channels, 5, 5, requires_grad=True),
        (torch.rand(channels) + 0.5).requires_grad_(),
        torch.randn(channels, requires_grad=True),
        torch.zeros(channels),
        torch.ones(channels),
        torch.zeros(channels),
        torch.zeros(channels),
        0.1,
        1e-5,
        1,
        0,
        object(),
        object(),
    ]


def run(args):
    return _GroupBatchNorm2d.apply(*args)
