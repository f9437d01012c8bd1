"""Stand-in: liger-kernel ``src/liger_kernel/ops/rope.py``, class ``LigerRopeFunction``.

The Triton rotary-embedding kernel is replaced by the same rotation in plain torch ops on CPU (forward
by the angle, backward by its opposite). The class keeps the original's decorators, ctx names, stores and
returns: forward is a staticmethod, backward is not (AGF001; the module never makes an instance).
"""

import torch

SOURCE = ("liger-kernel", "src/liger_kernel/ops/rope.py", "LigerRopeFunction")
FIXED = ("AGF001",)
UNSAFE = False


def _rotate(x, cos, sin, backward):
    half = x.shape[-1] // 2
    first, second = x[..., :half], x[..., half:]
    turned = torch.cat((second, -first), dim=-1) if backward else torch.cat((-second, first), dim=-1)
    return x * cos + turned * sin


def rope_forward(q, k, cos, sin):
    q = q.transpose(1, 2).contiguous()
    k = k.transpose(1, 2).contiguous()
    cos = cos.contiguous()
    sin = sin.contiguous()
    angle_cos, angle_sin = cos.unsqueeze(2), sin.unsqueeze(2)
    q = _rotate(q, angle_cos, angle_sin, backward=False)
    k = _rotate(k, angle_cos, angle_sin, backward=False)
    return q.transpose(1, 2), k.transpose(1, 2), cos, sin


def rope_backward(dq, dk, cos, sin):
    dq = dq.transpose(1, 2).contiguous()
    dk = dk.transpose(1, 2).contiguous()
    angle_cos, angle_sin = cos.unsqueeze(2), sin.unsqueeze(2)
    dq = _rotate(dq, angle_cos, angle_sin, backward=True)
    dk = _rotate(dk, angle_cos, angle_sin, backward=True)
    return dq.transpose(1, 2), dk.transpose(1, 2)


class LigerRopeFunction(torch.autograd.Function):
    """Rotary positional embedding of q and k (the HuggingFace Llama form)."""

    @staticmethod
    def forward(ctx, q, k, cos, sin, position_ids=None, unsqueeze_dim=1):
        """
        q size: (bsz, n_q_head, seq_len, head_dim)
        k size: (bsz, n_kv_head, seq_len, head_dim)
        cos size: (1, seq_len, head_dim) or (bsz, seq_len, head_dim)
        sin size: (1, seq_len, head_dim) or (bsz, seq_len, head_dim)
        """
        q, k, cos, sin = rope_forward(q, k, cos, sin)
        ctx.save_for_backward(cos, sin)
        return q, k

    def backward(ctx, dq, dk):
        """
        dq size: (bsz, n_q_head, seq_len, head_dim)
        dk size: (bsz, n_kv_head, seq_len, head_dim)
        """

        cos, sin = ctx.saved_tensors
        dq, dk = rope_backward(dq, dk, cos, sin)
        return dq, dk, None, None, None, None


def inputs():
    angles = torch.rand(1, 5, 4) * 3
    angles = torch.cat((angles, angles), dim=-1)
    return [
        torch.randn(2, 3, 5, 8, requires_grad=True),
        torch.randn(2, 1, 5, 8, requires_grad=True),
        angles.cos(),
        angles.sin(),
    ]


def run(args):
    return LigerRopeFunction.apply(*args)
