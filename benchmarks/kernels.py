"""A generated Function-dense module in the style of an attention-kernel library: several Function classes
(fused attention in packed and variable-length layouts, rotary embedding, a fused norm + linear, a fused
cross-entropy) with their shape checks, kernel launches into preallocated buffers, saved tensors and
gradient slots, between the module-level wrappers and helpers such libraries have. Deterministic: the same
text on every machine, so that the editor-latency row measures the same file everywhere."""

from __future__ import annotations

from typing import Dict, List

HEADER = '''"""Fused attention kernels and their autograd wrappers (generated for benchmarking)."""

from typing import Optional, Tuple

import torch
from torch.autograd import Function


def _ceil_div(a: int, b: int) -> int:
    return (a + b - 1) // b


def _maybe_contiguous(x: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
    if x is not None and x.stride(-1) != 1:
        return x.contiguous()
    return x


def _launch(kernel_name: str, *args, **kwargs) -> None:
    """Stands for a compiled kernel launch: fills the output buffers it is given."""
    for value in list(args) + list(kwargs.values()):
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            value.add_(0)


def _check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    if q.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise TypeError(f"unsupported dtype {q.dtype}")
    if q.shape[-1] != k.shape[-1] or k.shape[:-1] != v.shape[:-1]:
        raise ValueError("q, k and v shapes do not match")
    if q.shape[-1] % 8 != 0:
        raise ValueError("the head dimension must be a multiple of 8")
'''

ATTENTION = '''

class FlashAttn{suffix}Func(Function):
    """Fused scaled-dot-product attention, {layout} layout."""

    @staticmethod
    def forward(
        ctx,
        {inputs},
        dropout_p: float,
        softmax_scale: Optional[float],
        causal: bool,
        window_size: Tuple[int, int] = (-1, -1),
        softcap: float = 0.0,
        deterministic: bool = False,
        return_softmax: bool = False,
    ):
        {unpack}
        if softmax_scale is None:
            softmax_scale = q.shape[-1] ** (-0.5)
        _check_qkv(q, k, v)
        q, k, v = [_maybe_contiguous(x) for x in (q, k, v)]
        batch, seqlen_q, heads, head_dim = q.shape
        seqlen_k = k.shape[1]
        out = torch.empty_like(q)
        softmax_lse = torch.empty(
            (batch, heads, seqlen_q), dtype=torch.float32, device=q.device
        )
        rng_state = torch.empty((2,), dtype=torch.int64, device=q.device)
        blocks = _ceil_div(seqlen_k, 128)
        _launch(
            "attn_fwd",
            q,
            k,
            v,
            out,
            softmax_lse,
            rng_state,
            dropout_p=dropout_p,
            scale=softmax_scale,
            causal=causal,
            blocks=blocks,
        )
        ctx.save_for_backward(q, k, v, out, softmax_lse, rng_state)
        ctx.dropout_p = dropout_p
        ctx.softmax_scale = softmax_scale
        ctx.causal = causal
        ctx.window_size = window_size
        ctx.softcap = softcap
        ctx.deterministic = deterministic
        if return_softmax:
            return out, softmax_lse
        return out

    @staticmethod
    def backward(ctx, dout, *args):
        q, k, v, out, softmax_lse, rng_state = ctx.saved_tensors
        dq = torch.empty_like(q)
        dk = torch.empty_like(k)
        dv = torch.empty_like(v)
        dout = _maybe_contiguous(dout)
        _launch(
            "attn_bwd",
            dout,
            q,
            k,
            v,
            out,
            softmax_lse,
            dq,
            dk,
            dv,
            rng_state,
            dropout_p=ctx.dropout_p,
            scale=ctx.softmax_scale,
            causal=ctx.causal,
            deterministic=ctx.deterministic,
        )
        dq = dq[..., : dout.shape[-1]]
        dk = dk[..., : dout.shape[-1]]
        dv = dv[..., : dout.shape[-1]]
        return {grads}, None, None, None, None, None, None, None


def flash_attn{wrapper}(
    {inputs},
    dropout_p: float = 0.0,
    softmax_scale: Optional[float] = None,
    causal: bool = False,
    window_size: Tuple[int, int] = (-1, -1),
    softcap: float = 0.0,
    deterministic: bool = False,
    return_attn_probs: bool = False,
):
    """Attention over the {layout} layout.

    Arguments:
        dropout_p: the dropout probability; 0.0 when evaluating.
        softmax_scale: the scaling of QK^T before the softmax; 1 / sqrt(head_dim) by default.
        causal: whether to apply a causal mask.
        window_size: (left, right); (-1, -1) for no sliding window.
        softcap: a soft cap on the attention scores; 0.0 for none.
        deterministic: whether the backward pass is deterministic.
        return_attn_probs: whether to also return the softmax statistics.
    """
    return FlashAttn{suffix}Func.apply(
        {inputs},
        dropout_p,
        softmax_scale,
        causal,
        window_size,
        softcap,
        deterministic,
        return_attn_probs,
    )
'''

ROTARY = '''

class ApplyRotaryEmb{suffix}(Function):
    """Rotary position embedding, {layout}."""

    @staticmethod
    def forward(ctx, x, cos, sin, interleaved: bool = False, seqlen_offset: int = 0):
        rotary_dim = cos.shape[-1] * 2
        if rotary_dim > x.shape[-1]:
            raise ValueError("rotary_dim must be <= the head dimension")
        out = torch.empty_like(x)
        _launch("rotary", x, cos, sin, out, interleaved=interleaved, offset=seqlen_offset)
        ctx.save_for_backward(cos, sin)
        ctx.interleaved = interleaved
        ctx.seqlen_offset = seqlen_offset
        return out

    @staticmethod
    def backward(ctx, grad_output):
        cos, sin = ctx.saved_tensors
        grad_input = torch.empty_like(grad_output)
        _launch(
            "rotary",
            grad_output,
            cos,
            -sin,
            grad_input,
            interleaved=ctx.interleaved,
            offset=ctx.seqlen_offset,
        )
        return grad_input, None, None, None, None


def apply_rotary_emb{wrapper}(x, cos, sin, interleaved=False, seqlen_offset=0):
    """Apply rotary embedding to the first rotary_dim of x ({layout})."""
    return ApplyRotaryEmb{suffix}.apply(x, cos, sin, interleaved, seqlen_offset)
'''

NORM_LINEAR = '''

class LayerNormLinear{suffix}Fn(Function):
    """Layer norm fused with the linear layer that follows it ({layout})."""

    @staticmethod
    def forward(ctx, x, norm_weight, norm_bias, linear_weight, linear_bias, eps=1e-6):
        x_shape_og = x.shape
        x = x.reshape(-1, x.shape[-1])
        mean = x.mean(dim=-1, keepdim=True)
        rstd = torch.rsqrt(x.var(dim=-1, unbiased=False, keepdim=True) + eps)
        y = (x - mean) * rstd * norm_weight + norm_bias
        out = torch.nn.functional.linear(y.to(linear_weight.dtype), linear_weight, linear_bias)
        ctx.save_for_backward(x, norm_weight, norm_bias, linear_weight, mean, rstd)
        ctx.x_shape_og = x_shape_og
        ctx.eps = eps
        ctx.linear_bias_is_none = linear_bias is None
        return out.reshape(*x_shape_og[:-1], out.shape[-1])

    @staticmethod
    def backward(ctx, dout):
        x, norm_weight, norm_bias, linear_weight, mean, rstd = ctx.saved_tensors
        dout = dout.reshape(-1, dout.shape[-1])
        xhat = (x - mean) * rstd
        y = xhat * norm_weight + norm_bias
        dy = dout @ linear_weight.to(dout.dtype)
        dlinear_weight = None
        dlinear_bias = None
        if ctx.needs_input_grad[3]:
            dlinear_weight = torch.einsum("bo,bi->oi", dout, y.to(dout.dtype))
        if ctx.needs_input_grad[4] and not ctx.linear_bias_is_none:
            dlinear_bias = dout.sum(0)
        dxhat = dy * norm_weight
        dnorm_weight = (dy * xhat).sum(0) if ctx.needs_input_grad[1] else None
        dnorm_bias = dy.sum(0) if ctx.needs_input_grad[2] else None
        dx = None
        if ctx.needs_input_grad[0]:
            width = x.shape[-1]
            dx = rstd * (
                dxhat
                - dxhat.mean(dim=-1, keepdim=True)
                - xhat * (dxhat * xhat).sum(dim=-1, keepdim=True) / width
            )
            dx = dx.reshape(ctx.x_shape_og)
        return dx, dnorm_weight, dnorm_bias, dlinear_weight, dlinear_bias, None
'''

CROSS_ENTROPY = '''

class CrossEntropyLoss{suffix}(Function):
    """Cross-entropy with label smoothing over a {layout} vocabulary."""

    @staticmethod
    def forward(ctx, logits, labels, smoothing=0.0, ignore_index=-100):
        n_rows, n_cols = logits.shape
        losses = torch.empty(n_rows, dtype=torch.float32, device=logits.device)
        lse = torch.empty(n_rows, dtype=torch.float32, device=logits.device)
        _launch("xent_fwd", logits, labels, losses, lse, smoothing=smoothing, ignore=ignore_index)
        losses.masked_fill_(labels == ignore_index, 0.0)
        ctx.save_for_backward(logits, lse, labels)
        ctx.mark_non_differentiable(lse)
        ctx.smoothing = smoothing
        ctx.ignore_index = ignore_index
        return losses, lse

    @staticmethod
    def backward(ctx, grad_losses, grad_lse):
        logits, lse, labels = ctx.saved_tensors
        dlogits = torch.empty_like(logits)
        grad_losses = grad_losses.masked_fill(labels == ctx.ignore_index, 0.0)
        _launch(
            "xent_bwd",
            grad_losses,
            logits,
            lse,
            labels,
            dlogits,
            smoothing=ctx.smoothing,
            ignore=ctx.ignore_index,
        )
        return dlogits, None, None, None


def cross_entropy_loss{wrapper}(logits, labels, smoothing=0.0, ignore_index=-100):
    """The per-row loss and the log-sum-exp of each row ({layout})."""
    losses, lse = CrossEntropyLoss{suffix}.apply(logits, labels, smoothing, ignore_index)
    return losses, lse
'''

CHECK_RANK = 'assert q.dim() == 4, "q must be (batch, seqlen, heads, head_dim)"'
# Each variant: the layout's name and the attention inputs it takes.
VARIANTS: List[Dict[str, str]] = [
    {"suffix": "", "wrapper": "_func", "layout": "separate q, k, v",
     "inputs": "q, k, v", "unpack": CHECK_RANK, "grads": "dq, dk, dv"},
    {"suffix": "QKVPacked", "wrapper": "_qkvpacked_func", "layout": "packed qkv",
     "inputs": "qkv", "unpack": "q, k, v = qkv.unbind(dim=2)", "grads": "torch.stack([dq, dk, dv], dim=2)"},
    {"suffix": "KVPacked", "wrapper": "_kvpacked_func", "layout": "q with packed kv",
     "inputs": "q, kv", "unpack": "k, v = kv.unbind(dim=2)", "grads": "dq, torch.stack([dk, dv], dim=2)"},
    {"suffix": "Varlen", "wrapper": "_varlen_func", "layout": "variable-length",
     "inputs": "q, k, v", "unpack": CHECK_RANK, "grads": "dq, dk, dv"},
]
TEMPLATES = (ATTENTION, ROTARY, NORM_LINEAR, CROSS_ENTROPY)
TARGET_LINES = 1600


def attention_module(target_lines: int = TARGET_LINES) -> str:
    """The module's text: the header, then each template for each variant in turn, to ``target_lines``."""
    parts = [HEADER]
    lines = HEADER.count("\n")
    round_number = 0
    while lines < target_lines:
        for variant in VARIANTS:
            for template in TEMPLATES:
                fields = dict(variant)
                if round_number:  # later rounds: the same shapes under new names
                    fields["suffix"] += f"V{round_number + 1}"
                    fields["wrapper"] += f"_v{round_number + 1}"
                chunk = template.format(**fields)
                if lines + chunk.count("\n") > target_lines and lines >= target_lines * 0.9:
                    return "".join(parts)
                parts.append(chunk)
                lines += chunk.count("\n")
        round_number += 1
    return "".join(parts)
