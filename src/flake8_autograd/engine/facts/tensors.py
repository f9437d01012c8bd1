"""Tensor inference: is this expression a tensor? Three answers, and silence on the third.

Rules act only on ``TENSOR`` (or, where a rule says so, on ``NOT_TENSOR``); ``UNKNOWN`` is the
answer for anything the engine cannot see through — calls into user code or extensions, untyped
parameters with no tensor use, names bound in loops — so that unsure means silent.
"""

from __future__ import annotations

import bisect
import enum
import itertools
from typing import TYPE_CHECKING, Dict, FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple

import libcst as cst

from ..models.body_facts import TENSOR_EVIDENCE_ATTRIBUTES, Binding, constant_index as _constant_index
from ..models.class_model import ClassModel, Method, Param, forward_inputs
from ..syntax.names import ImportTable
from ..syntax.walk import children, cst_dotted, walk_scope

if TYPE_CHECKING:
    from .module_facts import HelperSignature, ModuleFacts

# A budget against pathological code (deep nesting, long chains of names): past it, unknown. One
# level takes up to five Python frames, and setup_context's inference of forward runs on the same
# stack, so the depth is shared and stays far below Python's recursion limit (1000 frames).
MAX_STEPS = 20_000
MAX_DEPTH = 100

# String annotations longer than this are not parsed (no real one comes close): libcst's parser
# overflows the C stack on deeply nested text.
MAX_ANNOTATION_LENGTH = 500
# Levels of ``X | Y``, ``Optional[...]`` and string annotations followed.
MAX_ANNOTATION_DEPTH = 20


class Kind(enum.Enum):
    TENSOR = "tensor"  # a tensor, possibly None on some paths (``Optional[Tensor]``)
    NONE = "None"  # the literal None
    NOT_TENSOR = "not a tensor"
    UNKNOWN = "unknown"


def join(kinds: List[Kind]) -> Kind:
    """The kind of a value that may be any of ``kinds`` (one per path)."""
    distinct = set(kinds)
    if not distinct:
        return Kind.UNKNOWN
    if len(distinct) == 1:
        return kinds[0]
    if distinct == {Kind.TENSOR, Kind.NONE}:
        return Kind.TENSOR
    if distinct == {Kind.NOT_TENSOR, Kind.NONE}:
        return Kind.NOT_TENSOR
    return Kind.UNKNOWN


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
_TENSOR_POSITIONS: Dict[str, "tuple[int, ...]"] = {
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
_TENSOR_SEQUENCE_FUNCTIONS: FrozenSet[str] = frozenset({"torch.cat", "torch.concat", "torch.stack"})

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

# The legacy typed tensors (``torch.LongTensor``, ``torch.cuda.HalfTensor``, ...) are tensor types too.
_TYPED_TENSORS = ("Float Double Half BFloat16 Byte Char Short Int Long Bool").split()
_TENSOR_ANNOTATIONS = frozenset(
    {"torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter"}
    | {f"torch.{kind}Tensor" for kind in _TYPED_TENSORS}
    | {f"torch.cuda.{kind}Tensor" for kind in _TYPED_TENSORS}
)
# Called, ``torch.Tensor`` and the typed ones are the legacy constructors (``torch.Tensor(array)``,
# ``torch.cuda.IntTensor(B, n)``): each returns a new tensor.
_LEGACY_CONSTRUCTORS = _TENSOR_ANNOTATIONS - {"torch.nn.Parameter", "torch.nn.parameter.Parameter"}
_NON_TENSOR_ANNOTATIONS = frozenset(
    {"int", "float", "bool", "str", "bytes", "complex", "list", "tuple", "dict", "set", "List", "Tuple",
     "Dict", "Set", "Sequence", "typing.List", "typing.Tuple", "typing.Dict", "typing.Sequence",
     "torch.dtype", "torch.device", "torch.Size"}
)


def annotation_kind(annotation: Optional[cst.BaseExpression], imports: ImportTable, depth: int = 0) -> Kind:
    if annotation is None or depth > MAX_ANNOTATION_DEPTH:
        return Kind.UNKNOWN
    if isinstance(annotation, cst.SimpleString):
        text = annotation.evaluated_value
        if not isinstance(text, str) or len(text) > MAX_ANNOTATION_LENGTH:
            return Kind.UNKNOWN
        try:
            annotation = cst.parse_expression(text)
        except Exception:
            return Kind.UNKNOWN
        depth += 1
    if isinstance(annotation, cst.BinaryOperation) and isinstance(annotation.operator, cst.BitOr):
        return join([annotation_kind(annotation.left, imports, depth + 1),
                     annotation_kind(annotation.right, imports, depth + 1)])
    if isinstance(annotation, cst.Name) and annotation.value == "None":
        return Kind.NONE
    if isinstance(annotation, cst.Subscript):
        base = _resolved(annotation.value, imports)
        if base in ("Optional", "typing.Optional", "Union", "typing.Union"):
            kinds = [
                annotation_kind(element.slice.value, imports, depth + 1)
                for element in annotation.slice
                if isinstance(element.slice, cst.Index)
            ]
            if base.endswith("Optional"):
                kinds.append(Kind.NONE)
            return join(kinds)
        return Kind.NOT_TENSOR if base in _NON_TENSOR_ANNOTATIONS else Kind.UNKNOWN
    name = _resolved(annotation, imports)
    if name is None:
        return Kind.UNKNOWN
    if name in _TENSOR_ANNOTATIONS or name == "Tensor":
        return Kind.TENSOR
    if name in _NON_TENSOR_ANNOTATIONS:
        return Kind.NOT_TENSOR
    return Kind.UNKNOWN


def _resolved(node: cst.BaseExpression, imports: ImportTable) -> Optional[str]:
    dotted = cst_dotted(node)
    if dotted is None:
        return None
    return imports.resolve_dotted(dotted) or dotted


def _is_literal(node: cst.BaseExpression) -> bool:
    return isinstance(
        node,
        (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString),
    ) or (isinstance(node, cst.Name) and node.value in ("True", "False"))


class _Budget:
    """Steps and depth of one inference, shared with the inference of forward that setup_context starts."""

    def __init__(self) -> None:
        self.steps = 0
        self.depth = 0
        self.cuts = 0  # how often an answer was cut short


class TensorInference:
    """Answers ``kind(expression)`` inside one method of one Function class."""

    def __init__(
        self,
        method: Method,
        model: ClassModel,
        imports: ImportTable,
        role: str,
        budget: Optional[_Budget] = None,
        module: Optional["ModuleFacts"] = None,
    ) -> None:
        self.method = method
        self.model = model
        self.imports = imports
        self.module = module  # what the module's own functions and callers say (None: look inside the class only)
        self.role = role  # which contract method's body this is: "forward", "setup_context", ...
        self.facts = method.facts
        signature = method.signature
        self.params: Dict[str, Param] = {}
        if signature is not None:
            for param in signature.positional + signature.keyword_only:
                self.params[param.name] = param
            if signature.vararg is not None:
                self.params[signature.vararg.name] = signature.vararg
            if signature.kwarg is not None:
                self.params[signature.kwarg.name] = signature.kwarg
        self._names: Dict[str, Kind] = {}
        self._in_progress: Set[str] = set()
        self._forward_inference: Optional[TensorInference] = None
        self._budget = budget if budget is not None else _Budget()
        self._evidence: Optional[_Evidence] = None
        self._narrowed: Optional[Dict[int, Kind]] = None
        self._reaching: Optional[_ReachingBindings] = None
        self._given_gradients: Optional[FrozenSet[str]] = None

    @property
    def evidence(self) -> "_Evidence":
        """Which names the body uses as tensors (tensor-only methods, tensor positions of torch functions)."""
        if self._evidence is None:
            self._evidence = _Evidence(self)
        return self._evidence

    def _narrowed_kind(self, node: cst.Name) -> Optional[Kind]:
        if self._narrowed is None:
            self._narrowed = narrowings(self)
        return self._narrowed.get(id(node))

    def _reaching_value(self, node: cst.Name) -> Optional[cst.BaseExpression]:
        """For a name bound more than once, the value of the plain rebinding every path to this use passed last."""
        name = node.value
        if len(self.facts.bindings.get(name, ())) + (name in self.params) < 2 or self.method.node is None:
            return None
        if self._reaching is None:
            self._reaching = _ReachingBindings(self.method)
        return self._reaching.value(node)

    # -- public --------------------------------------------------------------------------------
    @property
    def cuts(self) -> int:
        """How often the step budget has cut an answer short so far (shared with forward's, for setup_context)."""
        return self._budget.cuts

    def kind(self, node: cst.BaseExpression) -> Kind:
        found = self._kind(node)
        return Kind.UNKNOWN if found is None else found

    def _kind(self, node: cst.BaseExpression) -> Optional[Kind]:
        budget = self._budget
        budget.steps += 1
        if budget.steps > MAX_STEPS or budget.depth >= MAX_DEPTH:
            budget.cuts += 1
            return Kind.UNKNOWN
        budget.depth += 1
        try:
            return self._expression_kind(node)
        finally:
            budget.depth -= 1

    def element_kinds(self, node: cst.BaseExpression) -> Optional[List[Kind]]:
        """Per-element kinds of a tuple or list value (a display, or a name bound to one)."""
        if isinstance(node, (cst.Tuple, cst.List)):
            if any(isinstance(element, cst.StarredElement) for element in node.elements):
                return None
            return [self.kind(element.value) for element in node.elements]
        return None

    def origin(self, node: cst.BaseExpression) -> Optional[str]:
        """"input" or "output" (see :meth:`name_origin`) for a name or ``inputs[i]``/``output[i]``."""
        if isinstance(node, cst.Name):
            return self.name_origin(node.value)
        if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name) and self.role == "setup_context":
            signature = self.method.signature
            positional = signature.positional if signature is not None else []
            name = node.value.value
            if name in self.facts.bindings:
                return None
            if len(positional) > 1 and name == positional[1].name:
                return "input"
            if len(positional) > 2 and name == positional[2].name:
                return "output"
        return None

    def name_origin(self, name: str) -> Optional[str]:
        """"input" for a forward input (or an element of setup_context's ``inputs``), "output"
        for what forward returns; None otherwise."""
        ctx = self.method.ctx_name
        if self.role == "forward" and name in self.params and name != ctx and name not in self.facts.bindings:
            return "input"
        if self.role == "setup_context" and self.method.signature is not None:
            positional = self.method.signature.positional
            inputs_name = positional[1].name if len(positional) > 1 else None
            output_name = positional[2].name if len(positional) > 2 else None
            if name == output_name and name not in self.facts.bindings:
                return "output"
            bindings = self.facts.bindings.get(name, [])
            if len(bindings) == 1 and isinstance(bindings[0].value, cst.Name):
                source = bindings[0].value.value
                if source == inputs_name and bindings[0].index is not None:
                    return "input"
                if source == output_name:
                    return "output"
            if len(bindings) == 1 and isinstance(bindings[0].value, cst.Subscript):
                subscripted = bindings[0].value.value
                if isinstance(subscripted, cst.Name) and subscripted.value == inputs_name:
                    return "input"
        return None

    # -- expressions ---------------------------------------------------------------------------
    def _expression_kind(self, node: cst.BaseExpression) -> Optional[Kind]:  # noqa: C901 - one dispatch table
        if _is_literal(node):
            return Kind.NOT_TENSOR
        if isinstance(node, cst.Name):
            if node.value == "None":
                return Kind.NONE
            narrowed = self._narrowed_kind(node)
            if narrowed is not None:
                return narrowed
            reaching = self._reaching_value(node)
            return self._kind(reaching) if reaching is not None else self._name_kind(node.value)
        if isinstance(node, (cst.Tuple, cst.List, cst.Set, cst.Dict, cst.ListComp, cst.SetComp, cst.DictComp,
                             cst.GeneratorExp, cst.Lambda)):
            return Kind.NOT_TENSOR
        if isinstance(node, cst.Attribute):
            return self._attribute_kind(node)
        if isinstance(node, cst.Call):
            return self._call_kind(node)
        if isinstance(node, cst.Subscript):
            return self._subscript_kind(node)
        if isinstance(node, cst.BinaryOperation):
            return self._operands_kind([node.left, node.right])
        if isinstance(node, cst.Comparison):
            if all(isinstance(target.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn))
                   for target in node.comparisons):
                return Kind.NOT_TENSOR
            return self._operands_kind([node.left] + [target.comparator for target in node.comparisons])
        if isinstance(node, cst.UnaryOperation):
            if isinstance(node.operator, cst.Not):
                return Kind.NOT_TENSOR
            return self._kind(node.expression)
        if isinstance(node, cst.BooleanOperation):
            return self._join_optional([self._kind(node.left), self._kind(node.right)])
        if isinstance(node, cst.IfExp):
            return self._join_optional([self._kind(node.body), self._kind(node.orelse)])
        if isinstance(node, cst.NamedExpr):
            return self._kind(node.value)
        return Kind.UNKNOWN

    @staticmethod
    def _join_optional(kinds: List[Optional[Kind]]) -> Optional[Kind]:
        known = [kind for kind in kinds if kind is not None]
        if len(known) < len(kinds) and not known:
            return None
        return join(known)

    def _operands_kind(self, operands: List[cst.BaseExpression]) -> Optional[Kind]:
        kinds = [self._kind(operand) for operand in operands]
        if Kind.TENSOR in kinds:
            return Kind.TENSOR
        if all(kind in (Kind.NOT_TENSOR, Kind.NONE) for kind in kinds):
            return Kind.NOT_TENSOR
        if any(kind is None for kind in kinds) and all(kind in (None, Kind.NOT_TENSOR) for kind in kinds):
            return None
        return Kind.UNKNOWN

    def _attribute_kind(self, node: cst.Attribute) -> Optional[Kind]:
        attribute = node.attr.value
        if attribute in NON_TENSOR_ATTRIBUTES:
            return Kind.NOT_TENSOR
        if self._is_ctx(node.value):
            return Kind.NOT_TENSOR if attribute == "needs_input_grad" else Kind.UNKNOWN
        if attribute in TENSOR_ATTRIBUTES and self._kind(node.value) is Kind.TENSOR:
            return Kind.TENSOR
        return Kind.UNKNOWN

    def _call_kind(self, node: cst.Call) -> Optional[Kind]:
        func = node.func
        helper = self.helper(func)
        if helper is not None and helper.returns is not Kind.UNKNOWN:
            return helper.returns  # ``-> torch.Tensor``, ``-> int``: what the module's own function declares
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            dotted = _resolved(func, self.imports)
            if dotted is not None and dotted.startswith("torch."):
                return self._torch_call_kind(dotted, node)
            if method in NON_TENSOR_METHODS:
                return Kind.NOT_TENSOR
            if method in TENSOR_ONLY_METHODS or (method in SIZED_TENSOR_ONLY_METHODS and node.args):
                return Kind.TENSOR
            if method in TENSOR_METHODS:
                receiver = self._kind(func.value)
                if receiver is None:
                    return None
                return Kind.TENSOR if receiver is Kind.TENSOR else Kind.UNKNOWN
            return Kind.UNKNOWN
        if isinstance(func, cst.Name):
            name = func.value
            resolved = self.imports.resolve_name(name)
            if resolved is not None and resolved.startswith("torch."):
                return self._torch_call_kind(resolved, node)
            if name in NON_TENSOR_BUILTINS and resolved is None and not self._bound_here(name):
                return Kind.NOT_TENSOR
        return Kind.UNKNOWN

    def _torch_call_kind(self, dotted: str, node: cst.Call) -> Kind:
        module, _, name = dotted.rpartition(".")
        if dotted in _LEGACY_CONSTRUCTORS:
            return Kind.TENSOR  # whatever its arguments: ``torch.Tensor(*sizes)`` too
        if any(arg.star for arg in node.args):
            return Kind.UNKNOWN
        if module == "torch":
            if name in TORCH_NON_TENSORS:
                return Kind.NOT_TENSOR
            if name == "where" and len(node.args) < 3:
                return Kind.UNKNOWN  # torch.where(cond) returns a tuple
            if name in TORCH_TENSOR_FUNCTIONS:
                return Kind.TENSOR
            return Kind.UNKNOWN
        if module == "torch.nn.functional":
            if name.startswith("_") or name in FUNCTIONAL_NON_TENSOR:
                return Kind.UNKNOWN
            if any(arg.keyword is not None and arg.keyword.value == "return_indices" for arg in node.args):
                return Kind.UNKNOWN
            return Kind.TENSOR
        return Kind.UNKNOWN

    def _subscript_kind(self, node: cst.Subscript) -> Optional[Kind]:
        value = node.value
        if isinstance(value, cst.Attribute) and value.attr.value in ("shape", "stride"):
            return Kind.NOT_TENSOR
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in (
            "size",
            "stride",
        ):
            return Kind.NOT_TENSOR
        if isinstance(value, cst.Attribute) and self._is_ctx(value.value):
            if value.attr.value == "saved_tensors":
                return Kind.TENSOR
            if value.attr.value == "needs_input_grad":
                return Kind.NOT_TENSOR
            return Kind.UNKNOWN
        index = _constant_index(node)
        if index is not None and isinstance(value, cst.Name):
            from_inputs = self._setup_context_input(value.value, index)
            if from_inputs is not None:
                return from_inputs
        receiver = self._kind(value)
        if receiver is None:
            return None
        return Kind.TENSOR if receiver is Kind.TENSOR else Kind.UNKNOWN

    def helper(self, func: cst.BaseExpression) -> Optional["HelperSignature"]:
        """The signature of the same-module function ``func`` names: ``helper`` or ``Cls.helper`` (a
        staticmethod), read where this body does not bind the name itself."""
        if self.module is None:
            return None
        if isinstance(func, cst.Name):
            if self._bound_here(func.value) or self.imports.resolve_name(func.value) is not None:
                return None
            return self.module.helper(func.value, self.model.site)
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            owner = func.value.value
            if self._bound_here(owner) or self.imports.resolve_name(owner) is not None:
                return None
            return self.module.static_helper(owner, func.attr.value, self.model.site)
        return None

    # -- names ---------------------------------------------------------------------------------
    def _bound_here(self, name: str) -> bool:
        return name in self.facts.bindings or name in self.params

    def _is_ctx(self, node: cst.BaseExpression) -> bool:
        ctx = self.method.ctx_name
        return ctx is not None and isinstance(node, cst.Name) and node.value == ctx

    def _name_kind(self, name: str) -> Optional[Kind]:
        if name in self._names:
            return self._names[name]
        if name in self._in_progress:
            return None  # a cycle through this name: no information from this path
        cuts = self._budget.cuts
        self._in_progress.add(name)
        try:
            kinds: List[Optional[Kind]] = []
            bindings = self.facts.bindings.get(name, [])
            if name in self.params:
                overwritten, survivor = self._first_statement_rebinds(name) if bindings else (False, None)
                if not overwritten:
                    kinds.append(self._param_kind(self.params[name], rebound=bool(bindings)))
                elif survivor is not None:
                    kinds.append(survivor)
            for binding in bindings:
                kinds.append(self._binding_kind(binding))
        finally:
            self._in_progress.discard(name)
        known = [kind for kind in kinds if kind is not None]
        if not kinds:
            result: Kind = Kind.UNKNOWN  # a global, a closure variable or a builtin
        elif not known:
            return None
        else:
            result = join(known)
        if result is Kind.UNKNOWN and self._single_local_used_as_tensor(name, bindings):
            result = Kind.TENSOR
        if cuts == self._budget.cuts:  # an answer the budget cut short may be known on another path: not kept
            self._names[name] = result  # known answers are final: each name is evaluated once
        return result

    def _first_statement_rebinds(self, name: str) -> "tuple[bool, Optional[Kind]]":
        """Whether the first statement of the body to mention parameter ``name`` rebinds it, so that the
        caller's value is seen nowhere after it; and what of that value can survive it.

        ``x = x if isinstance(x, torch.Tensor) else torch.tensor(x)`` leaves nothing of it;
        ``if not torch.is_tensor(x): x = torch.tensor(x)`` leaves it only where it was a tensor.
        """
        function = self.method.node
        body = function.body if function is not None else None
        if not isinstance(body, cst.IndentedBlock):
            return False, None
        first = next((statement for statement in body.body if _mentions(statement, name)), None)
        if first is None:
            return False, None
        if _rebinds_plainly(first, name):
            return True, None
        if isinstance(first, cst.If) and first.orelse is None and isinstance(first.body, cst.IndentedBlock):
            statements = first.body.body
            survivor = _test_narrowings(first.test, self)[1].get(name)
            if survivor is not None and statements and _rebinds_plainly(statements[-1], name):
                return True, survivor
        return False, None

    def _single_local_used_as_tensor(self, name: str, bindings: List[Binding]) -> bool:
        """A local bound once (every use reads that one value) and used as a tensor."""
        if name in self.params or len(bindings) != 1 or bindings[0].value is None:
            return False
        return name in self.evidence.anywhere and name not in self.evidence.type_tested

    def _used_as_tensor(self, name: str, rebound: bool) -> bool:
        """The caller's value of parameter ``name`` is used as a tensor: before any rebinding, or anywhere
        when nothing rebinds it."""
        evidence = self.evidence
        if name in evidence.type_tested:
            return False
        return name in evidence.before_binding or (not rebound and name in self.facts.tensor_uses)

    def _param_kind(self, param: Param, rebound: bool) -> Kind:
        signature = self.method.signature
        assert signature is not None
        if param is signature.vararg or param is signature.kwarg:
            return Kind.NOT_TENSOR
        if param.name == self.method.ctx_name:
            return Kind.NOT_TENSOR
        declared = annotation_kind(param.annotation, self.imports)
        if declared is Kind.NOT_TENSOR and self._used_as_tensor(param.name, rebound):
            return Kind.UNKNOWN  # ``threshold: float`` given to torch.sigmoid: the use outweighs the annotation
        if declared is Kind.TENSOR and self._callers_pass_non_tensors(param):
            return Kind.UNKNOWN  # ``step: torch.Tensor`` that every caller gives an int: the two disagree
        if declared is not Kind.UNKNOWN:
            return declared
        if self.role in ("backward", "vjp", "jvp") and param in signature.positional:
            return Kind.TENSOR  # gradients and tangents: tensors, or None for non-tensor outputs
        if self.role == "setup_context":
            positional = signature.positional
            if len(positional) > 2 and param is positional[2]:
                return self._forward_output_kind()
            return Kind.UNKNOWN
        if self._used_as_tensor(param.name, rebound):
            return Kind.TENSOR
        if param.default is not None and _is_literal(param.default):
            return Kind.NOT_TENSOR  # ``scale=1.0``, ``inplace=False``
        if self.role == "forward" and param.name in self._inputs_given_gradients():
            return Kind.TENSOR
        return Kind.UNKNOWN

    def _inputs_given_gradients(self) -> FrozenSet[str]:
        """Forward's inputs for which every way out of the class's own backward returns a gradient that is
        certainly not None. PyTorch raises for a non-None gradient of an input that is not a tensor
        ("returned a gradient different than None at position i, but the corresponding forward input was
        not a Variable"), so in working code those inputs are tensors."""
        if self._given_gradients is None:
            self._given_gradients = frozenset()  # a question asked while answering this one gets no answer
            self._given_gradients = _inputs_given_gradients(self.model, self.imports)
        return self._given_gradients

    def _callers_pass_non_tensors(self, param: Param) -> bool:
        """Every same-module ``apply`` call gives forward's input ``param`` a certain non-tensor (or leaves
        it to a literal default), and there is at least one such call."""
        if self.module is None or self.role != "forward":
            return False
        inputs = forward_inputs(self.model)
        if inputs is None or param.name not in inputs.names:
            return False
        kinds = self.module.argument_kinds(self.model.name, inputs.names.index(param.name))
        default_is_literal = param.default is not None and _is_literal(param.default)
        return bool(kinds) and all(
            kind is Kind.NOT_TENSOR or (kind is None and default_is_literal) for kind in kinds or ()
        )

    def input_kind(self, param: Param) -> Kind:
        """What a forward input is, from its annotation, default and use in this body.

        ``x += 1`` keeps the object (a tensor is changed in place): only a real rebinding hides what x was.
        """
        return self._param_kind(param, rebound=self.method.rebinds(param.name))

    def _binding_kind(self, binding: Binding) -> Optional[Kind]:
        value = binding.value
        if value is None:
            return Kind.UNKNOWN
        if binding.index is None:
            return self._kind(value)
        # The index-th name of an unpacking of ``value``.
        if isinstance(value, cst.Attribute) and self._is_ctx(value.value) and value.attr.value == "saved_tensors":
            return Kind.TENSOR
        if isinstance(value, cst.Call):
            helper = self.helper(value.func)
            elements = helper.return_elements if helper is not None else None
            if elements is not None and binding.unpack_length == len(elements):
                return elements[binding.index]  # ``out, lse = helper(...)`` with ``-> Tuple[Tensor, Tensor]``
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            if value.func.attr.value in SPLITTING_METHODS:
                dotted = _resolved(value.func, self.imports)
                if (dotted or "").startswith("torch.") or self._kind(value.func.value) is Kind.TENSOR:
                    return Kind.TENSOR
        if isinstance(value, cst.Name):
            from_inputs = self._setup_context_input(value.value, binding.index)
            if from_inputs is not None:
                return from_inputs
            from_output = self._setup_context_output(value.value, binding.index)
            if from_output is not None:
                return from_output
        return Kind.UNKNOWN

    # -- setup_context: inputs and output mirror forward -------------------------------------
    def _forward(self) -> Optional["TensorInference"]:
        if self._forward_inference is None:
            forward = self.model.method("forward")
            if forward is None or forward.node is None or forward is self.method:
                return None
            self._forward_inference = TensorInference(
                forward, forward.owner, self.imports, "forward", self._budget, self.module
            )
        return self._forward_inference

    def _setup_context_input(self, name: str, index: int) -> Optional[Kind]:
        signature = self.method.signature
        if self.role != "setup_context" or signature is None or len(signature.positional) < 2:
            return None
        if name != signature.positional[1].name or name in self.facts.bindings:
            return None
        forward = self._forward()
        # ``inputs[i]`` holds forward's i-th input as the class means them (a leftover ctx is not one).
        inputs = forward_inputs(self.model) if forward is not None else None
        if forward is None or inputs is None or not 0 <= index < inputs.total:
            return Kind.UNKNOWN
        return forward._name_kind(inputs.params[index].name) or Kind.UNKNOWN

    def _setup_context_output(self, name: str, index: int) -> Optional[Kind]:
        signature = self.method.signature
        if self.role != "setup_context" or signature is None or len(signature.positional) < 3:
            return None
        if name != signature.positional[2].name or name in self.facts.bindings:
            return None
        elements = self._forward_return_elements()
        if elements is None or index >= len(elements):
            return Kind.UNKNOWN
        return elements[index]

    def _forward_output_kind(self) -> Kind:
        forward = self._forward()
        if forward is None or not forward.facts.returns:
            return Kind.UNKNOWN
        kinds = [forward.kind(ret.value) if ret.value is not None else Kind.NONE for ret in forward.facts.returns]
        return join(kinds)

    def _forward_return_elements(self) -> Optional[List[Kind]]:
        forward = self._forward()
        if forward is None or not forward.facts.returns:
            return None
        shapes = []
        for ret in forward.facts.returns:
            if ret.value is None:
                return None
            elements = forward.element_kinds(ret.value)
            if elements is None:
                return None
            shapes.append(elements)
        if any(len(shape) != len(shapes[0]) for shape in shapes):
            return None
        return [join([shape[i] for shape in shapes]) for i in range(len(shapes[0]))]


# -- evidence in evaluation order, and narrowing by tests -----------------------------------------

_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
_NESTED_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
_EVIDENCE_CTX_METHODS = frozenset({"save_for_backward", "save_for_forward", "mark_dirty"})
# The node classes whose evaluation order is not simply their children's: every other node is looked up
# by its exact type, since an isinstance chain against libcst's classes is slow (ABC checks).
_ORDERED_KINDS = frozenset(
    _COMPREHENSIONS
    + _NESTED_SCOPES
    + (cst.Assign, cst.AnnAssign, cst.NamedExpr, cst.For, cst.WithItem, cst.ExceptHandler, cst.Del, cst.Import,
       cst.ImportFrom, cst.Global, cst.Nonlocal, cst.MatchAs, cst.MatchStar)
)


# Models whose backward is being read for the gradients it returns: a forward input asked about meanwhile
# (backward reading what forward saved) is answered without this fact, so the question does not recur.
_READING_GRADIENTS: Set[int] = set()


def _inputs_given_gradients(model: ClassModel, imports: ImportTable) -> FrozenSet[str]:
    from .counting import counted_returns  # counting builds on this module

    inputs = model.forward_inputs()
    backward = model.own_methods.get("backward")
    if inputs is None or backward is None or backward.node is None or id(model) in _READING_GRADIENTS:
        return frozenset()
    _READING_GRADIENTS.add(id(model))
    try:
        inference = TensorInference(backward, model, imports, "backward")
        returns = counted_returns(backward, inference)
        if not returns or any(way.slots is None or len(way.slots) != len(inputs.params) for way in returns):
            return frozenset()
        return frozenset(
            param.name for index, param in enumerate(inputs.params)
            if all(_certainly_a_value(value, inference) for way in returns for value in (way.slots or [])[index])
        )
    finally:
        _READING_GRADIENTS.discard(id(model))


def _certainly_a_value(node: cst.BaseExpression, inference: "TensorInference") -> bool:
    """Arithmetic, or a call known to give a tensor: never None, whatever the operands are."""
    if isinstance(node, cst.BinaryOperation):
        return True
    if isinstance(node, cst.UnaryOperation):
        return not isinstance(node.operator, cst.Not)
    return isinstance(node, cst.Call) and inference.kind(node) is Kind.TENSOR


class _Evidence:
    """Names used as tensors in one body: anywhere, and before the body first binds them.

    The body is read in evaluation order (an assignment's value before its targets), so in
    ``if not w.is_contiguous(): w = w.contiguous()`` both uses of ``w`` come before its binding: they
    are uses of what the caller passed. Comprehensions are not entered (their names are their own).
    """

    def __init__(self, inference: "TensorInference") -> None:
        self.anywhere: Set[str] = set()
        self.before_binding: Set[str] = set()
        # Names whose type the body tests (``isinstance(b, torch.Tensor)``): the body expects more than one
        # kind, so a tensor use on one path proves nothing of another.
        self.type_tested: Set[str] = set()
        self._bound: Set[str] = set()
        self._inference = inference
        node = inference.method.node
        if node is not None:
            self._walk(node.body)

    def _walk(self, root: cst.CSTNode) -> None:
        stack: List["cst.CSTNode | str"] = [root]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                self._bound.add(item)  # a binding, reached once its value has been evaluated
                continue
            first, then = self._order(item)
            stack.extend(reversed(then))
            stack.extend(reversed(first))

    def _order(self, node: cst.CSTNode) -> "tuple[List[cst.CSTNode | str], List[cst.CSTNode | str]]":
        """What ``node`` evaluates (in order), then what it does afterwards; bindings are names."""
        kind = type(node)
        if kind not in _ORDERED_KINDS:
            if kind is cst.Call:
                self._call(node)  # type: ignore[arg-type]
            elif kind is cst.Attribute and type(node.value) is cst.Name:  # type: ignore[attr-defined]
                if node.attr.value in TENSOR_EVIDENCE_ATTRIBUTES:  # type: ignore[attr-defined]
                    self._use(node.value.value)  # type: ignore[attr-defined]
            return list(children(node)), []
        if isinstance(node, _COMPREHENSIONS):
            return [], []
        if isinstance(node, _NESTED_SCOPES):
            return [], ([node.name.value] if isinstance(node, (cst.FunctionDef, cst.ClassDef)) else [])
        if isinstance(node, cst.Assign):
            return [node.value], [name for target in node.targets for name in _target_names(target.target)]
        if isinstance(node, cst.AnnAssign):
            return ([node.value], _target_names(node.target)) if node.value is not None else ([], [])
        if isinstance(node, cst.NamedExpr):
            return [node.value], _target_names(node.target)
        if isinstance(node, cst.For):
            after: List["cst.CSTNode | str"] = list(_target_names(node.target))
            return [node.iter], after + [node.body] + ([node.orelse] if node.orelse is not None else [])
        if isinstance(node, cst.WithItem):
            return [node.item], _target_names(node.asname.name) if node.asname is not None else []
        if isinstance(node, cst.ExceptHandler):
            names = _target_names(node.name.name) if node.name is not None else []
            return ([node.type] if node.type is not None else []), names + [node.body]
        if isinstance(node, (cst.Del, cst.Import, cst.ImportFrom, cst.Global, cst.Nonlocal, cst.MatchAs,
                             cst.MatchStar)):
            return [], _bound_names(node)
        return list(children(node)), []

    def _use(self, name: str) -> None:
        self.anywhere.add(name)
        if name not in self._bound:
            self.before_binding.add(name)

    def _call(self, node: cst.Call) -> None:
        func = node.func
        if any(arg.star for arg in node.args):
            return
        tested = _type_test_subject(node, self._inference)
        if tested is not None:
            self.type_tested.add(tested)
        positional = [arg.value for arg in node.args if arg.keyword is None]
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            receiver, method = func.value.value, func.attr.value
            if receiver == self._inference.method.ctx_name:
                if method in _EVIDENCE_CTX_METHODS:
                    for value in positional:
                        if isinstance(value, cst.Name):
                            self._use(value.value)
                return
            if method in TENSOR_EVIDENCE_METHODS or (method in SIZED_TENSOR_ONLY_METHODS and positional):
                self._use(receiver)
        helper = self._inference.helper(func)
        if helper is not None:
            for index, value in enumerate(positional[:len(helper.positional)]):
                if isinstance(value, cst.Name) and helper.positional[index] is Kind.TENSOR:
                    self._use(value.value)  # passed to ``def helper(x: torch.Tensor)``
            for arg in node.args:
                if arg.keyword is not None and isinstance(arg.value, cst.Name):
                    if helper.keywords.get(arg.keyword.value) is Kind.TENSOR:
                        self._use(arg.value.value)
            return
        dotted = _resolved(func, self._inference.imports)
        if dotted is None:
            return
        positions = _TENSOR_POSITIONS.get(dotted, ())
        for index in positions:
            argument = positional[index] if index < len(positional) else None
            if isinstance(argument, cst.Name):
                self._use(argument.value)
        if dotted in _TENSOR_SEQUENCE_FUNCTIONS and positional and isinstance(positional[0], (cst.Tuple, cst.List)):
            for element in positional[0].elements:
                if isinstance(element, cst.Element) and isinstance(element.value, cst.Name):
                    self._use(element.value.value)


def _type_test_subject(call: cst.Call, inference: "TensorInference") -> Optional[str]:
    """The name ``isinstance(name, ...)``, ``torch.is_tensor(name)`` or ``type(name)`` asks the type of."""
    subject = call.args[0].value if call.args else None
    if not isinstance(subject, cst.Name):
        return None
    func = call.func
    resolved = _resolved(func, inference.imports)
    builtin = (
        isinstance(func, cst.Name) and func.value in ("isinstance", "type") and resolved == func.value
        and not inference._bound_here(func.value)
    )
    if builtin or resolved == "torch.is_tensor":
        return subject.value
    return None


def _target_names(target: cst.BaseExpression) -> List["cst.CSTNode | str"]:
    """The names an assignment target binds (a subscript or attribute target binds none)."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in _target_names(element.value)]
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return []


def _bound_names(node: cst.CSTNode) -> List["cst.CSTNode | str"]:
    if isinstance(node, cst.Del):
        return _target_names(node.target)
    if isinstance(node, (cst.Import, cst.ImportFrom)) and isinstance(node.names, (list, tuple)):
        names: List["cst.CSTNode | str"] = []
        for alias in node.names:
            bound = alias.asname.name if alias.asname is not None else alias.name
            if isinstance(bound, cst.Name):
                names.append(bound.value)
            elif isinstance(bound, cst.Attribute):
                dotted = cst_dotted(bound)
                names.append((dotted or "").split(".")[0])
        return names
    if isinstance(node, (cst.Global, cst.Nonlocal)):
        return [item.name.value for item in node.names]
    if isinstance(node, (cst.MatchAs, cst.MatchStar)) and node.name is not None:
        return [node.name.value]
    return []


def _binds_in(root: cst.CSTNode, name: str) -> bool:
    """Whether anything below ``root`` (in its scope) may bind ``name``: an assignment, ``+=``, a loop or
    comprehension variable, ``with ... as``, ``del``, an import, a definition."""
    return next(_binding_nodes(root, name), None) is not None


def _binding_nodes(root: cst.CSTNode, name: str, include_root: bool = False) -> Iterator[cst.CSTNode]:
    """The nodes below ``root`` (in its scope; ``root`` too if asked) that may bind ``name`` (see :func:`_binds_in`)."""
    for node in itertools.chain([root] if include_root else [], walk_scope(root)):
        if type(node) in _BINDING_NODES and name in _names_bound_by(node):
            yield node


# The only nodes that may bind a name (see :func:`_names_bound_by`).
_BINDING_NODES = frozenset(
    {
        cst.Assign, cst.AnnAssign, cst.AugAssign, cst.NamedExpr, cst.For, cst.CompFor, cst.Del, cst.WithItem,
        cst.ExceptHandler, cst.FunctionDef, cst.ClassDef, cst.Import, cst.ImportFrom, cst.Global, cst.Nonlocal,
        cst.MatchAs, cst.MatchStar,
    }
)


def _names_bound_by(node: cst.CSTNode) -> List["cst.CSTNode | str"]:
    """The names ``node`` itself may bind (not the nodes below it)."""
    targets: List[cst.CSTNode] = []
    if isinstance(node, cst.Assign):
        targets = [target.target for target in node.targets]
    elif isinstance(node, (cst.AnnAssign, cst.AugAssign, cst.NamedExpr, cst.For, cst.CompFor, cst.Del)):
        targets = [node.target]
    elif isinstance(node, cst.WithItem) and node.asname is not None:
        targets = [node.asname.name]
    elif isinstance(node, cst.ExceptHandler) and node.name is not None:
        targets = [node.name.name]
    elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        targets = [node.name]
    else:
        return _bound_names(node)
    return [bound for target in targets if isinstance(target, cst.BaseExpression) for bound in _target_names(target)]


# Nodes whose children run in sequence, one after the other: statements of a block, small statements of a line.
_SEQUENCES = (cst.IndentedBlock, cst.SimpleStatementLine, cst.SimpleStatementSuite)
_LOOPS = (cst.For, cst.While)


# Nodes inside an expression, which bind no name but by a walrus.
_EXPRESSION_PARTS = (
    cst.BaseExpression, cst.Arg, cst.BaseElement, cst.BaseDictElement, cst.SubscriptElement, cst.BaseSlice,
    cst.ComparisonTarget, cst.FormattedStringExpression,
)


class _ReachingBindings:
    """Which plain rebinding (``name = value``) a use of a name reads, found on straight-line code only.

    From the use, the statements before it are read backwards, climbing out of ``if``/``with``/``try``
    blocks and loops: the first one that binds the name decides, if it is a plain rebinding. Any other
    binding on the way (in a branch, by a loop back edge, ``as name``, a walrus) leaves the answer open,
    and so does a use in a nested scope or a comprehension.
    """

    def __init__(self, method: Method) -> None:
        assert method.node is not None
        function, nodes = method.node, method.body_nodes()
        self._method = method
        self._function = function
        self._parents: Dict[int, cst.CSTNode] = {}
        self._walrus = False  # whether an expression of the body binds a name (``(x := ...)``)
        for node in [function.body, *nodes]:
            if type(node) is cst.NamedExpr:
                self._walrus = True
            if type(node) not in _NESTED_SCOPES:
                for child in children(node):
                    self._parents[id(child)] = node
        self._parents[id(function.body)] = function
        self._found: Dict[int, Optional[cst.BaseExpression]] = {}
        self._binding: Dict[Tuple[int, str], bool] = {}  # whether a statement binds a name, asked once
        # name -> the places in the method's shared walk of the nodes that may bind it, in order
        self._binders: Optional[Dict["cst.CSTNode | str", List[int]]] = None

    def _binds(self, node: cst.CSTNode, name: str) -> bool:
        key = (id(node), name)
        if key not in self._binding:
            span = self._method.span(node)
            self._binding[key] = (
                _binds_anywhere(node, name) if span is None else self._binds_between(name, span[0], span[1])
            )
        return self._binding[key]

    def _binds_between(self, name: str, start: int, end: int, skipped: Tuple[int, int] = (0, 0)) -> bool:
        """Whether a node at a place from ``start`` to ``end`` of the shared walk, outside the ``skipped``
        places, may bind ``name``: a look at a sorted list, where a walk of each statement asked about
        costs its size (a use's search asks of every statement before it)."""
        if self._binders is None:
            self._binders = {}
            for index, node in enumerate(self._method.body_nodes()):
                if type(node) in _BINDING_NODES:
                    for bound in set(_names_bound_by(node)):
                        self._binders.setdefault(bound, []).append(index)
        places = self._binders.get(name, [])
        for place in places[bisect.bisect_left(places, start):]:
            if place >= end:
                return False
            if not skipped[0] <= place < skipped[1]:
                return True
        return False

    def value(self, use: cst.Name) -> Optional[cst.BaseExpression]:
        if id(use) not in self._found:
            self._found[id(use)] = self._search(use)
        return self._found[id(use)]

    def _search(self, use: cst.Name) -> Optional[cst.BaseExpression]:
        name = use.value
        current: cst.CSTNode = use
        while True:
            parent = self._parents.get(id(current))
            if parent is None or parent is self._function or isinstance(parent, _COMPREHENSIONS + _NESTED_SCOPES):
                return None
            if isinstance(parent, _SEQUENCES):
                items: Sequence[cst.CSTNode] = parent.body
                position = next((index for index, item in enumerate(items) if item is current), None)
                if position is None:
                    return None
                for earlier in reversed(items[:position]):
                    rebound = _plain_rebinding(earlier, name)
                    if rebound is not None:
                        return rebound
                    if self._binds(earlier, name):
                        return None
            elif isinstance(parent, (cst.Assign, cst.AnnAssign, cst.NamedExpr)) and current is parent.value:
                pass  # the value is read before the targets are bound
            elif isinstance(parent, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.NamedExpr, cst.AssignTarget)):
                return None  # the use is (in) a target
            elif isinstance(parent, _LOOPS):
                if self._binds(parent, name):
                    return None  # a binding later in the loop reaches this use on the next iteration
            elif isinstance(parent, _EXPRESSION_PARTS) and not self._walrus:
                pass  # an expression binds nothing without a walrus: climb on
            else:
                if self._binds_beside(parent, current, name):
                    return None  # another part of the statement (a test, ``as name``, a handler) binds it
            current = parent

    def _binds_beside(self, parent: cst.CSTNode, part: cst.CSTNode, name: str) -> bool:
        """Whether ``parent`` or a node below it that is not in ``part`` may bind ``name``."""
        outer, inner = self._method.span(parent), self._method.span(part)
        if outer is None or inner is None:
            inside = {id(part), *(id(node) for node in walk_scope(part))}
            return any(id(node) not in inside for node in _binding_nodes(parent, name, include_root=True))
        return self._binds_between(name, outer[0], outer[1], skipped=inner)


def _binds_anywhere(node: cst.CSTNode, name: str) -> bool:
    return next(_binding_nodes(node, name, include_root=True), None) is not None


def _plain_rebinding(node: cst.CSTNode, name: str) -> Optional[cst.BaseExpression]:
    """The value of ``name = value`` (a line of its own or a small statement), else None."""
    if isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1:
        node = node.body[0]
    if isinstance(node, cst.Assign) and len(node.targets) == 1:
        target = node.targets[0].target
        if isinstance(target, cst.Name) and target.value == name and not _binds_in(node.value, name):
            return node.value
    if isinstance(node, cst.AnnAssign) and node.value is not None:
        if isinstance(node.target, cst.Name) and node.target.value == name and not _binds_in(node.value, name):
            return node.value
    return None


Narrowing = Dict[str, Kind]


# How deep a test's ``not``/``and``/``or`` nesting is read: libcst nests one level per operand, and a test
# deeper than this proves nothing here rather than exhausting the interpreter's stack.
MAX_TEST_DEPTH = 100


def _test_narrowings(
    test: cst.BaseExpression, inference: "TensorInference", depth: int = 0
) -> "tuple[Narrowing, Narrowing]":
    """What a test proves of plain names: (where it holds, where it fails)."""
    if depth > MAX_TEST_DEPTH:
        return {}, {}
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        negated_holds, negated_fails = _test_narrowings(test.expression, inference, depth + 1)
        return negated_fails, negated_holds
    if isinstance(test, cst.BooleanOperation):
        left = _test_narrowings(test.left, inference, depth + 1)
        right = _test_narrowings(test.right, inference, depth + 1)
        if isinstance(test.operator, cst.And):
            return {**left[0], **right[0]}, {}
        return {}, {**left[1], **right[1]}
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.left, cst.Name):
        target = test.comparisons[0]
        if isinstance(target.comparator, cst.Name) and target.comparator.value == "None":
            if isinstance(target.operator, cst.Is):
                return {test.left.value: Kind.NONE}, {}
            if isinstance(target.operator, cst.IsNot):
                return {}, {test.left.value: Kind.NONE}
        return {}, {}
    if not isinstance(test, cst.Call) or any(arg.star or arg.keyword is not None for arg in test.args):
        return {}, {}
    args = [arg.value for arg in test.args]
    if not args or not isinstance(args[0], cst.Name):
        return {}, {}
    name = args[0].value
    if _resolved(test.func, inference.imports) == "torch.is_tensor" and len(args) == 1:
        return {name: Kind.TENSOR}, {name: Kind.NOT_TENSOR}
    is_builtin = isinstance(test.func, cst.Name) and test.func.value == "isinstance"
    if not is_builtin or len(args) != 2 or inference.imports.resolve_name("isinstance") is not None:
        return {}, {}
    if inference._bound_here("isinstance"):
        return {}, {}
    types = [element.value for element in args[1].elements] if isinstance(args[1], cst.Tuple) else [args[1]]
    exact = ["torch.Tensor" == (_resolved(kind, inference.imports) or "") for kind in types]
    declared = [annotation_kind(kind, inference.imports) for kind in types]
    holds: Narrowing = {}
    fails: Narrowing = {}
    if all(kind is Kind.NOT_TENSOR for kind in declared):
        holds[name] = Kind.NOT_TENSOR
    elif all(kind is Kind.TENSOR for kind in declared):
        holds[name] = Kind.TENSOR
    if any(exact):
        fails[name] = Kind.NOT_TENSOR  # not a tensor, of any subclass
    return holds, fails


def _narrow(branch: cst.CSTNode, narrowing: Narrowing, into: Dict[int, Kind]) -> None:
    """Record the narrowed kind of each use of a narrowed name in ``branch``, unless the branch rebinds it."""
    for name, kind in narrowing.items():
        if _binds_in(branch, name):
            continue
        for node in [branch, *walk_scope(branch)]:
            if isinstance(node, cst.Name) and node.value == name:
                into[id(node)] = kind  # walked outside in: an inner test overrides an outer one


def narrowings(inference: "TensorInference") -> Dict[int, Kind]:
    """The kind of each name use that an enclosing ``if`` test (or conditional expression) decides."""
    found: Dict[int, Kind] = {}
    if inference.method.node is None:
        return found
    for node in inference.method.nodes_of(cst.If, cst.IfExp):
        if isinstance(node, (cst.If, cst.IfExp)):
            holds, fails = _test_narrowings(node.test, inference)
            if holds:
                _narrow(node.body, holds, found)
            if fails and node.orelse is not None:
                _narrow(node.orelse, fails, found)
    return found


def _mentions(statement: cst.CSTNode, name: str) -> bool:
    """Whether ``name`` is read or bound in ``statement`` (attribute names and keywords are not names)."""
    skipped: Set[int] = set()
    for node in walk_scope(statement):
        if isinstance(node, cst.Attribute):
            skipped.add(id(node.attr))
        elif isinstance(node, cst.Arg) and node.keyword is not None:
            skipped.add(id(node.keyword))
        elif isinstance(node, cst.Name) and node.value == name and id(node) not in skipped:
            return True
    return False


def _rebinds_plainly(statement: cst.CSTNode, name: str) -> bool:
    """``name = value`` alone on its line."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return False
    small = statement.body[0]
    if isinstance(small, cst.Assign):
        return len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name) and (
            small.targets[0].target.value == name
        )
    return (
        isinstance(small, cst.AnnAssign) and small.value is not None
        and isinstance(small.target, cst.Name) and small.target.value == name
    )
