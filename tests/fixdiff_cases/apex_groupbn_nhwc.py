"""Stand-in: apex ``apex/contrib/groupbn/batch_norm.py``, class ``bn_NHWC_impl``.

The ``bnp`` NHWC batch norm kernels are replaced by a plain batch norm over an NHWC tensor on CPU, which
fills the minibatch statistics and the running ones in place without bumping their version counters
(as the CUDA kernel does); the peer-memory handles are opaque objects. The class keeps the original's
ctx names, stores and returns; backward reads ``ctx.saved_variables`` (AGF119).
"""

import types

import torch

SOURCE = ("apex", "apex/contrib/groupbn/batch_norm.py", "bn_NHWC_impl")
FIXED = ("AGF119",)
UNSAFE = False


def _fwd_nhwc(x, s, b, rm, riv, mini_m, mini_riv, mom, epsilon, fuse_relu):
    mean = x.mean(dim=(0, 1, 2))
    var = x.var(dim=(0, 1, 2), unbiased=False)
    mini_m.data.copy_(mean)
    mini_riv.data.copy_(torch.rsqrt(var + epsilon))
    rm.data.mul_(1 - mom).add_(mom * mean)
    riv.data.mul_(1 - mom).add_(mom * var)
    y = (x - mean) * mini_riv * s + b
    return y.clamp(min=0) if fuse_relu else y


def _fwd_eval_nhwc(x, s, b, rm, riv, epsilon, fuse_relu):
    y = (x - rm) * torch.rsqrt(riv + epsilon) * s + b
    return y.clamp(min=0) if fuse_relu else y


def _bwd_nhwc(x, grad_y, s, b, mini_m, mini_riv, fuse_relu):
    xhat = (x - mini_m) * mini_riv
    if fuse_relu:
        grad_y = grad_y * (xhat * s + b > 0)
    count = x.numel() / x.size(-1)
    dbias = grad_y.sum(dim=(0, 1, 2))
    dscale = (grad_y * xhat).sum(dim=(0, 1, 2))
    dx = s * mini_riv / count * (count * grad_y - dbias - xhat * dscale)
    return dx, dscale, dbias


# The extension module the original imports, on CPU.
bnp = types.SimpleNamespace(
    bn_fwd_nhwc=_fwd_nhwc,
    bn_fwd_eval_nhwc=_fwd_eval_nhwc,
    bn_bwd_nhwc=_bwd_nhwc,
)


class bn_NHWC_impl(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx,
        x,
        s,
        b,
        rm,
        riv,
        mini_m,
        mini_riv,
        ret_cta,
        mom,
        epsilon,
        fuse_relu,
        is_train,
        bn_group,
        my_data,
        pair_data,
        magic,
        pair_data2,
        pair_data3,
        fwd_occup,
        fwd_grid_x,
        bwd_occup,
        bwd_grid_x,
        multi_stream,
    ):
        if is_train:
            ctx.save_for_backward(x, s, b, rm, riv, mini_m, mini_riv)
            ctx.epsilon = epsilon
            ctx.momentum = mom
            ctx.ret_cta = ret_cta
            ctx.fuse_relu = fuse_relu
            ctx.my_data = my_data
            ctx.pair_data = pair_data
            ctx.magic = magic
            ctx.pair_data2 = pair_data2
            ctx.pair_data3 = pair_data3
            ctx.bn_group = bn_group
            ctx.bwd_occup = bwd_occup
            ctx.bwd_grid_x = bwd_grid_x
            ctx.multi_stream = multi_stream

            res = bnp.bn_fwd_nhwc(x, s, b, rm, riv, mini_m, mini_riv, mom, epsilon, fuse_relu)
            return res
        else:
            return bnp.bn_fwd_eval_nhwc(x, s, b, rm, riv, epsilon, fuse_relu)

    @staticmethod
    def backward(ctx, grad_y):
        x, s, b, rm, riv, mini_m, mini_riv = ctx.saved_variables
        epsilon = ctx.epsilon
        mom = ctx.momentum
        ret_cta = ctx.ret_cta
        fuse_relu = ctx.fuse_relu
        my_data = ctx.my_data
        pair_data = ctx.pair_data
        magic = ctx.magic
        pair_data2 = ctx.pair_data2
        pair_data3 = ctx.pair_data3
        bn_group = ctx.bn_group
        bwd_occup = ctx.bwd_occup
        bwd_grid_x = ctx.bwd_grid_x
        multi_stream = ctx.multi_stream
        assert epsilon > 0 and 0 < mom < 1 and ret_cta is not None and bn_group == 1
        assert None not in (my_data, pair_data, magic, pair_data2, pair_data3, bwd_occup, bwd_grid_x, multi_stream)

        dx, dscale, dbias = bnp.bn_bwd_nhwc(x, grad_y, s, b, mini_m, mini_riv, fuse_relu)

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
    channels = 4
    handles = [object() for _ in range(5)]
    return [
        torch.randn(2, 3, 3, channels, requires_grad=True),
        (torch.rand(channels) + 0.5).requires_grad_(),
        torch.randn(channels, requires_grad=True),
        torch.zeros(channels),
        torch.ones(channels),
        torch.zeros(channels),
        torch.zeros(channels),
        object(),  # ret_cta
        0.1,
        1e-5,
        True,  # fuse_relu
        True,  # is_train
        1,
        *handles,  # my_data, pair_data, magic, pair_data2, pair_data3
        0,
        0,
        1,
        1,
        1,
    ]


def run(args):
    return bn_NHWC_impl.apply(*args)
