"""Stand-in: flash-linear-attention ``fla/modules/token_shift.py``, class ``TokenShift``.

Token shift: each position's output is the previous token minus the current one (the cache, or zero,
before the first token of a sequence); with ``cu_seqlens`` the sequences are packed in one row. The
Triton kernels are replaced by plain torch loops on CPU, and the "long" kernel is taken for sequences
longer than ``SHORT_KERNEL_MAX_T`` tokens (4096 in the original) so that backward walks ``chunk_indices``
as the original's long kernel does. ``input_guard`` makes tensor inputs contiguous, as fla's does. The
class keeps the original's decorators, ctx names, stores and returns; forward stores the ``chunk_indices``
tensor on ctx (AGF003, whose fix is unsafe).
"""

import functools

import torch

SOURCE = ("flash-linear-attention", "fla/modules/token_shift.py", "TokenShift")
FIXED = ("AGF003",)
UNSAFE = True
# chunk_indices becomes a saved tensor: freed by the first backward, so a second one raises.
SECOND_BACKWARD_DIFFERS = True
SHORT_KERNEL_MAX_T = 4
CHUNK = 2


# What the original's kernels are specialised on (its triton.heuristics): the module names 'cu_seqlens' as a
# string, so AGF003 leaves that store alone and its fix saves chunk_indices only, as on the original.
HEURISTICS = {
    'IS_VARLEN': lambda args: args['cu_seqlens'] is not None,
    'USE_INITIAL_STATE': lambda args: args['cache'] is not None,
}


def input_guard(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        args = [arg.contiguous() if isinstance(arg, torch.Tensor) else arg for arg in args]
        kwargs = {k: v.contiguous() if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
        return fn(*args, **kwargs)
    return wrapper


def prepare_chunk_indices(cu_seqlens, chunk_size):
    lengths = (cu_seqlens[1:] - cu_seqlens[:-1]).tolist()
    rows = [[n, t] for n, length in enumerate(lengths) for t in range(-(-length // chunk_size))]
    return torch.tensor(rows, dtype=torch.long)


def _bounds(B, T, cu_seqlens):
    if cu_seqlens is None:
        return [(b, 0, T) for b in range(B)]
    return [(0, int(cu_seqlens[n]), int(cu_seqlens[n + 1])) for n in range(len(cu_seqlens) - 1)]


def token_shift_fwd(x, cu_seqlens=None, cache=None, output_cache=False, chunk_indices=None):
    B, T, D = x.shape
    y = torch.empty_like(x)
    assert HEURISTICS['IS_VARLEN']({'cu_seqlens': cu_seqlens}) == (cu_seqlens is not None)
    bounds = _bounds(B, T, cu_seqlens)
    N = len(bounds)
    if cu_seqlens is not None:
        T = max(end - start for _, start, end in bounds)
    use_short_kernel = T <= SHORT_KERNEL_MAX_T
    cache_out = torch.empty((N, D), dtype=x.dtype) if output_cache else None
    for n, (row, start, end) in enumerate(bounds):
        for t in range(start, end):
            before = x[row, t - 1] if t > start else (cache[n] if cache is not None else torch.zeros(D))
            y[row, t] = before - x[row, t]
        if cache_out is not None:
            cache_out[n] = x[row, end - 1]
    return y, N, T, use_short_kernel, cache_out


def token_shift_bwd(dy, N, T, dcache=None, cu_seqlens=None, use_short_kernel=True, has_init_cache=False,
                    chunk_indices=None):
    B, _, D = dy.shape
    dx = torch.empty_like(dy)
    grad_cache_out = torch.empty((N, D), dtype=dy.dtype) if has_init_cache else None
    bounds = _bounds(B, dy.shape[1], cu_seqlens)
    if use_short_kernel or cu_seqlens is None:
        steps = [(n, t) for n, (_, start, end) in enumerate(bounds) for t in range(end - start)]
    else:
        if chunk_indices is None:
            chunk_indices = prepare_chunk_indices(cu_seqlens, CHUNK)
        steps = [(int(n), t) for n, chunk in chunk_indices.tolist() for t in range(chunk * CHUNK, (chunk + 1) * CHUNK)]
    for n, t in steps:
        row, start, end = bounds[n]
        if start + t >= end:
            continue
        after = dy[row, start + t + 1] if start + t + 1 < end else torch.zeros(D)
        dx[row, start + t] = after - dy[row, start + t]
        if t == 0 and grad_cache_out is not None:
            grad_cache_out[n] = dy[row, start]
    if dcache is not None:
        for n, (row, start, end) in enumerate(bounds):
            dx[row, end - 1] += dcache[n]
    return dx, grad_cache_out


class TokenShift(torch.autograd.Function):

    @staticmethod
    @input_guard
    def forward(ctx, x: torch.Tensor, cu_seqlens: torch.Tensor | None = None,
                cache: torch.Tensor | None = None, output_cache: bool = False,
                chunk_indices: torch.LongTensor | None = None):
        output, N, T, use_short_kernel, cache_out = token_shift_fwd(x, cu_seqlens, cache, output_cache, chunk_indices)
        ctx.cu_seqlens = cu_seqlens
        ctx.chunk_indices = chunk_indices
        ctx.N = N
        ctx.T = T
        ctx.use_short_kernel = use_short_kernel
        ctx.has_cache = cache is not None
        return output, cache_out

    @staticmethod
    @input_guard
    def backward(ctx, dy: torch.Tensor, dcache: torch.Tensor | None = None):
        dx, grad_cache = token_shift_bwd(dy, ctx.N, ctx.T, dcache, ctx.cu_seqlens,
                                         ctx.use_short_kernel, ctx.has_cache, ctx.chunk_indices)
        return dx, None, grad_cache, None, None


def token_shift(x, cu_seqlens=None, cache=None, output_cache=False, chunk_indices=None):
    output, cache_out = TokenShift.apply(x, cu_seqlens, cache, output_cache, chunk_indices)
    if output_cache:
        return output, cache_out
    else:
        return output


def inputs():
    cu_seqlens = torch.tensor([0, 5, 11], dtype=torch.long)
    return [
        torch.randn(1, 11, 3, requires_grad=True),
        cu_seqlens,
        torch.randn(2, 3, requires_grad=True),
        False,
        prepare_chunk_indices(cu_seqlens, CHUNK),
    ]


def run(args):
    return token_shift(*args)


def mutate(args):
    """An in-place change of the stored tensor between forward and backward: the two chunks of the second
    sequence listed in the other order (the same steps, so the original's gradient does not change)."""
    args[4][3:].copy_(args[4][3:].flip(0).clone())
