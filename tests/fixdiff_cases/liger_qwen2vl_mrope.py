"""Stand-in: liger-kernel ``src/liger_kernel/ops/qwen2vl_mrope.py``, class ``LigerQwen2VLMRopeFunction``.

The Triton multimodal rotary-embedding kernel is replaced by the same rotation in plain torch ops on CPU:
each of the three position sections (temporal, height, width) of the head dimension takes its angles
from its own row of ``cos``/``sin``. The class keeps the original's decorators, ctx names, stores and
returns: forward is a staticmethod, backward is not (AGF001; the module never makes an instance).
"""

import torch

SOURCE = ("liger-kernel", "src/liger_kernel/ops/qwen2vl_mrope.py", "LigerQwen2VLMRopeFunction")
FIXED = ("AGF001",)
UNSAFE = False


def _angles(table, mrope_section):
    """(3, bsz, seq_len, head_dim) -> (bsz, seq_len, 1, head_dim): each section from its own row."""
    parts = table.split(list(mrope_section) * 2, dim=-1)
    return torch.cat([part[index % 3] for index, part in enumerate(parts)], dim=-1).unsqueeze(2)


def _rotate(x, cos, sin, backward):
    half = x.shape[-1] // 2
    first, second = x[..., :half], x[..., half:]
    turned = torch.cat((second, -first), dim=-1) if backward else torch.cat((-second, first), dim=-1)
    return x * cos + turned * sin


def qwen2vl_mrope_forward(q, k, cos, sin, mrope_section):
    q = q.transpose(1, 2).contiguous()
    k = k.transpose(1, 2).contiguous()
    cos = cos.contiguous()
    sin = sin.contiguous()
    angle_cos, angle_sin = _angles(cos, mrope_section), _angles(sin, mrope_section)
    q = _rotate(q, angle_cos, angle_sin, backward=False)
    k = _rotate(k, angle_cos, angle_sin, backward=False)
    return q.transpose(1, 2), k.transpose(1, 2), cos, sin


def qwen2vl_mrope_backward(dq, dk, cos, sin, mrope_section):
    dq = dq.transpose(1, 2).contiguous()
    dk = dk.transpose(1, 2).contiguous()
    angle_cos, angle_sin = _angles(cos, mrope_section), _angles(sin, mrope_section)
    dq = _rotate(dq, angle_cos, angle_sin, backward=True)
    dk = _rotate(dk, angle_cos, angle_sin, backward=True)
    return dq.transpose(1, 2), dk.transpose(1, 2)


class LigerQwen2VLMRopeFunction(torch.autograd.Function):
    """Multimodal rotary positional embedding of q and k (the Qwen2-VL form)."""

    @staticmethod
    def forward(ctx, q, k, cos, sin, mrope_section, unsqueeze_dim=1):
        """
        q size: (bsz, n_q_head, seq_len, head_dim)
        k size: (bsz, n_kv_head, seq_len, head_dim)
        cos size: (3, bsz, seq_len, head_dim)
        sin size: (3, bsz, seq_len, head_dim)
        """
        q, k, cos, sin = qwen2vl_mrope_forward(q, k, cos, sin, mrope_section)
        ctx.save_for_backward(cos, sin)
        ctx.mrope_section = mrope_section
        return q, k

    def backward(ctx, dq, dk):
        """
        dq size: (bsz, n_q_head, seq_len, head_dim)
        dk size: (bsz, n_kv_head, seq_len, head_dim)
        """
        cos, sin = ctx.saved_tensors
        mrope_section = ctx.mrope_section
        dq, dk = qwen2vl_mrope_backward(dq, dk, cos, sin, mrope_section)
        return dq, dk, None, None, None, None


def inputs():
    angles = torch.rand(3, 2, 5, 4) * 3
    angles = torch.cat((angles, angles), dim=-1)
    return [
        torch.randn(2, 3, 5, 8, requires_grad=True),
        torch.randn(2, 1, 5, 8, requires_grad=True),
        angles.cos(),
        angles.sin(),
        [2, 1, 1],
    ]


def run(args):
    return LigerQwen2VLMRopeFunction.apply(*args)
