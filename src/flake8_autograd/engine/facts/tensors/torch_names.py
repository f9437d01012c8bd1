"""What torch's and Python's names say of tensors.

Torch functions and tensor methods that return one tensor, names whose result is never a tensor, the
legacy constructors, methods that exist only on tensors (so that their receiver is one), and the argument
positions of torch functions that accept only a tensor.
"""

from __future__ import annotations

from typing import Dict, FrozenSet

from ...models.body_facts import TENSOR_EVIDENCE_ATTRIBUTES
from ..tensor_kinds import TENSOR_ANNOTATIONS

# torch functions that always return one tensor.
TORCH_TENSOR_FUNCTIONS: FrozenSet[str] = frozenset(
    """
    tensor as_tensor as_strided from_numpy zeros ones empty full zeros_like ones_like empty_like
    full_like rand randn randint rand_like randn_like randint_like randperm arange linspace logspace
    eye empty_strided scalar_tensor matmul mm bmm mv addmm addmv addbmm baddbmm addcmul addcdiv einsum
    cat concat concatenate stack hstack vstack dstack exp expm1 log log1p log2 log10 sigmoid tanh relu
    abs sqrt rsqrt pow mul multiply add sub subtract div divide true_divide floor_divide remainder fmod
    neg negative sum mean prod cumsum cumprod logsumexp softmax log_softmax clamp clip clamp_min
    clamp_max transpose swapaxes permute reshape flatten squeeze unsqueeze t outer dot inner cross
    gather scatter scatter_add index_select masked_fill masked_select narrow roll flip tril triu diag
    diag_embed diagonal sign erf erfc sin cos tan sinh cosh asin acos atan atan2 maximum minimum clone
    bernoulli multinomial reciprocal square floor ceil round trunc frac lerp where tile repeat_interleave
    broadcast_to expand_copy conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d
    layer_norm group_norm batch_norm dropout embedding bilinear nan_to_num isnan isinf isfinite logical_and
    logical_or logical_not logical_xor eq ne lt le gt ge bitwise_and bitwise_or bitwise_xor bitwise_not
    norm dist cdist var std argmax argmin count_nonzero bincount histc searchsorted bucketize
    index_add index_copy index_fill take take_along_dim masked_scatter kron trace tensordot
    """.split()
)

# torch attributes that are certainly not tensors.
TORCH_NON_TENSORS: FrozenSet[str] = frozenset(
    """
    Size device dtype finfo iinfo is_tensor is_storage is_grad_enabled is_inference_mode_enabled
    is_floating_point is_complex is_nonzero get_default_dtype numel result_type promote_types
    can_cast is_autocast_enabled get_autocast_gpu_dtype get_autocast_dtype get_num_threads
    broadcast_shapes Generator Stream Event
    """.split()
)

# nn.functional names that return a tuple, or are not ops at all.
FUNCTIONAL_NON_TENSOR: FrozenSet[str] = frozenset(
    """
    multi_head_attention_forward max_pool1d_with_indices max_pool2d_with_indices max_pool3d_with_indices
    fractional_max_pool2d_with_indices fractional_max_pool3d_with_indices adaptive_max_pool1d_with_indices
    adaptive_max_pool2d_with_indices adaptive_max_pool3d_with_indices Tensor Callable Optional List Tuple
    """.split()
)

# Tensor methods that return one tensor when called on a tensor.
TENSOR_METHODS: FrozenSet[str] = frozenset(
    """
    clone detach float double half bfloat16 long int short bool byte char to cpu cuda contiguous view
    view_as reshape reshape_as expand expand_as t transpose permute flatten squeeze unsqueeze sum mean
    prod exp log sigmoid tanh relu abs sqrt rsqrt pow mul add sub div neg matmul mm bmm clamp clamp_min
    clamp_max masked_fill narrow select index_select gather scatter new_zeros new_ones new_empty new_full
    new_tensor type_as repeat flip roll cumsum softmax log_softmax norm sign square reciprocal
    detach_ zero_ fill_ add_ sub_ mul_ div_ copy_ clamp_ masked_fill_ scatter_ index_add_ neg_ exp_
    """.split()
)

# Methods that exist only on tensors and return a tensor, whatever we know of the receiver. Not the casts
# ``float``/``half``/``double``/``type``/``to``/``cuda``, which modules have too, nor numpy's ``transpose``,
# ``reshape``, ``copy`` or ``T``; ``expand`` only with sizes (sympy expressions have a bare ``expand()``).
TENSOR_ONLY_METHODS: FrozenSet[str] = frozenset(
    "contiguous view view_as new_zeros new_ones new_empty new_full new_tensor type_as expand_as reshape_as t permute"
    " detach".split()
)
SIZED_TENSOR_ONLY_METHODS: FrozenSet[str] = frozenset({"expand"})

# Receivers of these are tensors (``x.is_contiguous()`` answers no tensor, but proves x one). Not ``numel``:
# ``torch.Size`` has one.
TENSOR_EVIDENCE_METHODS: FrozenSet[str] = TENSOR_EVIDENCE_ATTRIBUTES | TENSOR_ONLY_METHODS

# Argument positions of torch functions that accept only a tensor (a Python number is a TypeError there).
# ``None`` marks "every position from here on" (einsum's operands). A bias may be None: Kind.TENSOR allows it.
_FIRST = (0,)
TENSOR_POSITIONS: Dict[str, "tuple[int, ...]"] = {
    **{f"torch.{name}": _FIRST for name in (
        "exp expm1 log log1p log2 log10 sigmoid tanh relu abs sqrt rsqrt neg negative sign erf erfc sin cos tan"
        " sinh cosh asin acos atan reciprocal square floor ceil round trunc frac sum mean prod cumsum cumprod"
        " logsumexp softmax log_softmax transpose permute reshape flatten squeeze unsqueeze t clone tril triu"
        " flip roll narrow isnan isinf isfinite nan_to_num argmax argmin var std diagonal masked_fill"
        " index_select gather zeros_like ones_like empty_like rand_like randn_like"
    ).split()},
    **{f"torch.{name}": (0, 1) for name in "matmul mm bmm mv dot inner outer kron".split()},
    **{f"torch.nn.functional.{name}": (0, 1, 2) for name in "linear conv1d conv2d conv3d".split()},
    "torch.nn.functional.embedding": (0, 1),
}
# Functions whose first argument is a sequence of tensors.
TENSOR_SEQUENCE_FUNCTIONS: FrozenSet[str] = frozenset({"torch.cat", "torch.concat", "torch.stack"})

# Methods and attributes whose result is never a tensor.
NON_TENSOR_METHODS: FrozenSet[str] = frozenset(
    """
    size dim numel item tolist stride is_contiguous data_ptr element_size storage_offset nelement
    ndimension get_device is_floating_point is_complex is_pinned is_shared untyped_storage
    """.split()
)
NON_TENSOR_ATTRIBUTES: FrozenSet[str] = frozenset(
    "shape dtype device requires_grad is_cuda ndim layout is_leaf is_sparse is_quantized is_meta".split()
)
TENSOR_ATTRIBUTES: FrozenSet[str] = frozenset("T mT H mH data grad real imag".split())

SPLITTING_METHODS: FrozenSet[str] = frozenset("chunk split unbind tensor_split".split())

NON_TENSOR_BUILTINS: FrozenSet[str] = frozenset(
    "len int float bool str isinstance issubclass hasattr callable range tuple list dict set type id repr"
    " enumerate zip sorted reversed frozenset bytes format".split()
)

# Called, ``torch.Tensor`` and the typed ones are the legacy constructors (``torch.Tensor(array)``,
# ``torch.cuda.IntTensor(B, n)``): each returns a new tensor.
LEGACY_CONSTRUCTORS = TENSOR_ANNOTATIONS - {"torch.nn.Parameter", "torch.nn.parameter.Parameter"}
