"""Stand-in: apex ``apex/contrib/groupbn/batch_norm.py``, class ``bn_addrelu_NHWC_impl``.

Batch norm of an NHWC tensor, plus a residual ``z``, then ReLU. The ``bnp`` kernels are replaced by plain
torch ops on CPU, which write the statistics and the ReLU bitmask in place without bumping their version
counters (as the CUDA kernel does); the bitmask is a CPU int tensor where the original allocates
``torch.cuda.IntTensor``. The class keeps the original's ctx names, stores and returns; backward reads
``ctx.saved_variables`` (AGF119).
"""

import types

import torch

SOURCE = ("apex", "apex/contrib/groupbn/batch_norm.py", "bn_addrelu_NHWC_impl")
FIXED = ("AGF119",)
UNSAFE = False


def _addrelu_fwd_nhwc(x, z, s, b, rm, riv, mini_m, mini_riv, bitmask, mom, epsilon):
    mean = x.mean(dim=(0, 1, 2))
    var = x.var(dim=(0, 1, 2), unbiased=False)
    mini_m.data.copy_(mean)
    mini_riv.data.copy_(torch.rsqrt(var + epsilon))
    rm.data.mul_(1 - mom).add_(mom * mean)
    riv.data.mul_(1 - mom).add_(mom * var)
    y = (x - mean) * mini_riv * s + b + z
    bitmask.data[: y.numel()].copy_((y > 0).flatten())
    return y.clamp(min=0)


def _addrelu_fwd_eval_nhwc(x, z, s, b, rm, riv, epsilon):
    return ((x - rm) * torch.rsqrt(riv + epsilon) * s + b + z).clamp(min=0)


def _addrelu_bwd_nhwc(x, grad_y, s, mini_m, mini_riv, bitmask):
    grad_y = grad_y * bitmask[: x.numel()].view_as(x)
    xhat = (x - mini_m) * mini_riv
    count = x.numel() / x.size(-1)
    dbias = grad_y.sum(dim=(0, 1, 2))
    dscale = (grad_y * xhat).sum(dim=(0, 1, 2))
    dx = s * mini_riv / count * (count * grad_y - dbias - xhat * dscale)
    return dx, grad_y, dscale, dbias


# The extension module the original imports, on CPU.
bnp = types.SimpleNamespace(
    bn_addrelu_fwd_nhwc=_addrelu_fwd_nhwc,
    bn_addrelu_fwd_eval_nhwc=_addrelu_fwd_eval_nhwc,
    bn_addrelu_bwd_nhwc=_addrelu_bwd_nhwc,
)


class bn_addrelu_NHWC_impl(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx,
        x,
        z,
        s,
        b,
        rm,
        riv,
        mini_m,
        mini_riv,
        grid_dim_y,
        ret_cta,
        mom,
        epsilon,
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
            bitmask = torch.zeros(((x.numel() + 31) // 32) * 32 * grid_dim_y, dtype=torch.int32)
            ctx.save_for_backward(x, s, b, rm, riv, mini_m, mini_riv, bitmask)
            ctx.epsilon = epsilon
            ctx.momentum = mom
            ctx.ret_cta = ret_cta
            ctx.my_data = my_data
            ctx.pair_data = pair_data
            ctx.magic = magic
            ctx.pair_data2 = pair_data2
            ctx.pair_data3 = pair_data3
            ctx.bn_group = bn_group
            ctx.bwd_occup = bwd_occup
            ctx.bwd_grid_x = bwd_grid_x
            ctx.multi_stream = multi_stream

            res = bnp.bn_addrelu_fwd_nhwc(x, z, s, b, rm, riv, mini_m, mini_riv, bitmask, mom, epsilon)
            return res
        else:
            return bnp.bn_addrelu_fwd_eval_nhwc(x, z, s, b, rm, riv, epsilon)

    @staticmethod
    def backward(ctx, grad_y):
        x, s, b, rm, riv, mini_m, mini_riv, bitmask = ctx.saved_variables
        epsilon = ctx.epsilon
        mom = ctx.momentum
        ret_cta = ctx.ret_cta
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

        dx, dz, dscale, dbias = bnp.bn_addrelu_bwd_nhwc(x, grad_y, s, mini_m, mini_riv, bitmask)

        return (
            dx,
            dz,
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
        torch.randn(2, 3, 3, channels, requires_grad=True),
        (torch.rand(channels) + 0.5).requires_grad_(),
        torch.randn(channels, requires_grad=True),
        torch.zeros(channels),
        torch.ones(channels),
        torch.zeros(channels),
        torch.zeros(channels),
        1,  # grid_dim_y
        object(),  # ret_cta
        0.1,
        1e-5,
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
    return bn_addrelu_NHWC_impl.apply(*args)
