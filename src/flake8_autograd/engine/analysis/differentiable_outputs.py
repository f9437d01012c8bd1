"""Which outputs of forward certainly carry a gradient back into backward.

PyTorch gives every floating tensor that forward returns a place in the graph (unless
``ctx.mark_non_differentiable`` names it), and backward receives one gradient per output. An output is
*certainly differentiable* here when, on every way out of forward, it is a floating tensor computed from
an input that backward gives a gradient (the author treats that input as differentiable, so it is
floating), through operations that keep both the dtype and the dependence:

- arithmetic (``+ - * / @ **``), a sign, a part or view (``x[i]``, ``x.T``), a conditional whose two
  branches qualify, a tensor method or ``torch`` function with a qualifying operand;
- an unpacking of ``torch.split``/``chunk``/``unbind`` (every part), or of ``torch.max``/``sort``/``topk``
  with a dim (the values only, not the indices);
- a memory allocation (``torch.empty_like(x)``) filled by a call that reads a qualifying value.

A call the engine cannot see into (a kernel, ``torch.ops.*``, a helper of the module) qualifies only when
forward or setup_context names some outputs in ``ctx.mark_non_differentiable``: the author sorted the
outputs, and the rest are meant to be differentiable.

What cuts the dependence (``.detach()``, ``.data``, a comparison, an integer cast or index, a rounding,
a fresh constant) makes the output not certain, and so does anything not followed: precision first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, FrozenSet, Optional, Set, Tuple

import libcst as cst

from ..facts.counting import _marked_non_differentiable, slot_is_none
from ..facts.integer_dtypes import is_integer_tensor
from ..models.class_model import ClassModel, Method
from ..facts.memory_and_layout import ALLOCATIONS
from ..facts.tensor_kinds import Kind
from ..facts.tensors.inference import TensorInference
from ..facts.tensors.torch_names import NON_TENSOR_BUILTINS, SPLITTING_METHODS
from ..syntax.walk import cst_dotted, walk

# Operators whose result keeps a floating operand's dtype and its derivative.
_DIFFERENTIABLE_OPERATORS = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.MatrixMultiply, cst.Power)
# Views and parts that keep the data.
_VIEW_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "real", "imag"})
# Methods and functions whose result carries no derivative of their operand: detached, constant,
# rounded (derivative zero), metadata, integers, or not a tensor.
_CUTTING_CALLS = frozenset(
    """
    detach detach_ requires_grad_ item tolist numpy size dim numel stride data_ptr element_size nelement
    new_empty new_zeros new_ones new_full new_tensor new zero_ fill_ sign floor ceil round trunc
    argmax argmin argsort nonzero argwhere bucketize searchsorted long int short bool byte char
    isnan isinf isfinite eq ne lt le gt ge logical_not logical_and logical_or logical_xor
    empty empty_like zeros zeros_like ones ones_like full full_like empty_strided rand rand_like randn
    randn_like randint randint_like randperm arange linspace logspace eye is_nonzero equal allclose
    one_hot
    """.split()
)
# Calls that return a (values, indices) pair when given a dim.
_VALUES_AND_INDICES = frozenset("max min sort topk kthvalue mode median cummax cummin nanmedian".split())
# Calls that return a tuple (never a single tensor) whatever their arguments.
_TUPLE_RESULTS = SPLITTING_METHODS | frozenset("var_mean std_mean aminmax frexp lu slogdet svd qr eig".split())

MAX_DEPTH = 40

if TYPE_CHECKING:  # pragma: no cover
    from .module_analysis import Analysis


@dataclass(frozen=True)
class ForwardOutputs:
    """Forward's outputs, when every way out returns the same number of values."""

    count: int
    certain: Dict[int, cst.BaseExpression]  # index -> the output (on the first way out), certainly differentiable


def differentiable_outputs(model: ClassModel, analysis: "Analysis") -> Optional[ForwardOutputs]:
    """The outputs of ``model``'s forward that certainly carry a gradient; None when the count is unknown."""
    forward = model.method("forward")
    if forward is None or forward.node is None:
        return None
    inference = analysis.inference(forward)
    ways = [way for way in analysis.returns(forward) if not way.falls_off]
    if not ways or any(way.slots is None for way in ways):
        return None
    counts = {len(way.slots or ()) for way in ways}
    if len(counts) != 1:
        return None
    (count,) = counts
    marks = _output_marks(model, forward, count)
    if marks is None:
        return None
    marked_names, marked_indices, sorted_by_author = marks
    derivation = _Derivation(forward, inference, _inputs_given_gradients(model, analysis), sorted_by_author)
    certain: Dict[int, cst.BaseExpression] = {}
    for index in range(count):
        if index in marked_indices:
            continue
        outputs = [node for way in ways for node in (way.slots or [])[index]]
        if all(
            not (isinstance(node, cst.Name) and node.value in marked_names)
            and inference.kind(node) not in (Kind.NONE, Kind.NOT_TENSOR)
            and not is_integer_tensor(node, inference)
            and derivation.derived(node)
            for node in outputs
        ):
            certain[index] = outputs[0]
    return ForwardOutputs(count, certain)


def _output_marks(model: ClassModel, forward: Method, count: int) -> Optional[Tuple[Set[str], Set[int], bool]]:
    """The names forward marks non-differentiable, the output positions setup_context marks, and whether
    any mark was made; None when a mark is out of reach (an expression, a starred list, ctx handed on)."""
    names: Set[str] = set()
    indices: Set[int] = set()
    marked, whole = _marked_non_differentiable(model, forward)
    if whole or marked.starred:
        return None
    names |= marked.names
    for method, role in ((forward, "forward"), (model.method("setup_context"), "setup_context")):
        if method is None or method.node is None or method.ctx_name is None:
            continue
        if role == "setup_context" and not model.setup_context_style:
            continue
        if method.facts.ctx_escapes:
            return None  # a helper given ctx may mark outputs
        for call in method.facts.ctx_calls.get("mark_non_differentiable", []):
            for arg in call.args:
                if arg.star or arg.keyword is not None:
                    return None
                if role == "forward":
                    if not isinstance(arg.value, cst.Name):
                        return None
                    continue
                index = _setup_context_output_index(method, arg.value)
                if index is None:
                    return None
                indices.add(index)
    return names, indices, bool(names or indices)


def _setup_context_output_index(setup: Method, node: cst.BaseExpression) -> Optional[int]:
    """Which output ``node`` is in setup_context: ``output[1]``, or a name unpacked from ``output``."""
    signature = setup.signature
    if signature is None or len(signature.positional) < 3:
        return None
    output = signature.positional[2].name
    if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name) and node.value.value == output:
        element = node.slice[0].slice if len(node.slice) == 1 else None
        if isinstance(element, cst.Index) and isinstance(element.value, cst.Integer):
            return int(element.value.value)
        return None
    if isinstance(node, cst.Name):
        bindings = setup.facts.bindings.get(node.value, [])
        if len(bindings) == 1 and isinstance(bindings[0].value, cst.Name) and bindings[0].value.value == output:
            return bindings[0].index
    return None


def _inputs_given_gradients(model: ClassModel, analysis: "Analysis") -> FrozenSet[str]:
    """Forward's inputs to which some way out of backward returns a gradient that is not None."""
    inputs = model.forward_inputs()
    backward = model.method("backward")
    if inputs is None or backward is None or backward.node is None:
        return frozenset()
    ways = [way.slots for way in analysis.returns(backward) if way.slots is not None]
    return frozenset(
        param.name for index, param in enumerate(inputs.params)
        if any(index < len(slots) and not slot_is_none(slots[index]) for slots in ways)
    )


class _Derivation:
    """Whether a value of forward is a floating tensor computed from an input given a gradient."""

    def __init__(
        self, forward: Method, inference: TensorInference, inputs: FrozenSet[str], kernels_count: bool
    ) -> None:
        self.forward = forward
        self.inference = inference
        self.inputs = inputs
        self.kernels_count = kernels_count  # the author sorted the outputs: an unseen call's results count
        self._names: Dict[str, bool] = {}

    def _dotted(self, node: cst.BaseExpression) -> str:
        dotted = cst_dotted(node) or ""
        return self.inference.imports.resolve_dotted(dotted) or dotted if dotted else ""

    def derived(self, node: cst.BaseExpression, depth: int = 0) -> bool:
        if depth > MAX_DEPTH:
            return False
        if isinstance(node, cst.Name):
            return self._name(node.value, depth)
        if isinstance(node, cst.BinaryOperation):
            return isinstance(node.operator, _DIFFERENTIABLE_OPERATORS) and (
                self.derived(node.left, depth + 1) or self.derived(node.right, depth + 1)
            )
        if isinstance(node, cst.UnaryOperation):
            return isinstance(node.operator, (cst.Minus, cst.Plus)) and self.derived(node.expression, depth + 1)
        if isinstance(node, cst.Subscript):
            return self.derived(node.value, depth + 1)
        if isinstance(node, cst.Attribute):
            return node.attr.value in _VIEW_ATTRIBUTES and self.derived(node.value, depth + 1)
        if isinstance(node, cst.IfExp):
            return self.derived(node.body, depth + 1) and self.derived(node.orelse, depth + 1)
        if isinstance(node, cst.Call):
            return self._call(node, depth)
        return False

    def _call(self, call: cst.Call, depth: int) -> bool:
        func = call.func
        dotted = self._dotted(func)
        short = dotted.rsplit(".", 1)[-1] if dotted else (func.attr.value if isinstance(func, cst.Attribute) else "")
        if short in _CUTTING_CALLS or short in _TUPLE_RESULTS:
            return False
        if short in _VALUES_AND_INDICES and len(call.args) > (1 if dotted.startswith("torch.") else 0):
            return False  # given a dim: a (values, indices) pair
        operands = [arg.value for arg in call.args if arg.keyword is None or arg.keyword.value not in ("out", "dtype")]
        if dotted.startswith("torch.") and not dotted.startswith("torch.ops."):
            return any(self.derived(operand, depth + 1) for operand in operands)
        if isinstance(func, cst.Attribute) and not dotted.startswith("torch."):
            if self.derived(func.value, depth + 1):
                return True  # a tensor method of a derived tensor
        if isinstance(func, cst.Name) and func.value in NON_TENSOR_BUILTINS:
            return False
        return self.kernels_count and any(self.derived(operand, depth + 1) for operand in operands)

    def _name(self, name: str, depth: int) -> bool:
        if name in self._names:
            return self._names[name]
        # While it is judged, a name stands for its value on entry: an input's own (``x = x.contiguous()``),
        # none for a local (a cycle proves nothing).
        self._names[name] = name in self.inputs
        verdict = self._judge_name(name, depth)
        self._names[name] = verdict
        return verdict

    def _judge_name(self, name: str, depth: int) -> bool:
        bindings = self.forward.facts.bindings.get(name, [])
        is_input = name in self.inputs
        if not bindings:
            return is_input
        for binding in bindings:
            value = binding.value
            if value is None:
                return False
            if binding.index is None:
                if self._filled_allocation(name, value, depth) or self.derived(value, depth + 1):
                    continue
                return False
            if not self._unpacked(value, binding.index, binding.unpack_length, depth):
                return False
        return True

    def _unpacked(self, value: cst.BaseExpression, index: int, length: Optional[int], depth: int) -> bool:
        """The ``index``-th name of an unpacking of ``value``."""
        if isinstance(value, cst.Tuple):
            elements = list(value.elements)
            if length != len(elements) or any(isinstance(element, cst.StarredElement) for element in elements):
                return False
            return self.derived(elements[index].value, depth + 1)
        if not isinstance(value, cst.Call):
            return False
        func = value.func
        dotted = self._dotted(func)
        short = dotted.rsplit(".", 1)[-1] if dotted else (func.attr.value if isinstance(func, cst.Attribute) else "")
        is_torch = dotted.startswith("torch.") and not dotted.startswith("torch.ops.")
        subject: Optional[cst.BaseExpression] = None
        if is_torch and value.args:
            subject = value.args[0].value
        elif isinstance(func, cst.Attribute) and not dotted.startswith("torch."):
            subject = func.value
        if short in SPLITTING_METHODS and subject is not None:
            return self.derived(subject, depth + 1)
        if short in _VALUES_AND_INDICES and subject is not None:
            return index == 0 and self.derived(subject, depth + 1)
        if is_torch or short in _CUTTING_CALLS or short in _TUPLE_RESULTS:
            return False
        operands = [arg.value for arg in value.args] + ([func.value] if isinstance(func, cst.Attribute) else [])
        return self.kernels_count and any(self.derived(operand, depth + 1) for operand in operands)

    def _filled_allocation(self, name: str, value: cst.BaseExpression, depth: int) -> bool:
        """``out = torch.empty_like(x)`` then filled by a call reading a derived value, where the memory is
        floating: the dtype of a derived tensor, a floating dtype, or the default one."""
        if not isinstance(value, cst.Call) or not self._floating_allocation(value, depth):
            return False
        for call in self.forward.facts.filled_by.get(name, []):
            operands = [arg.value for arg in call.args]
            if any(
                not (isinstance(operand, cst.Name) and operand.value == name) and self.derived(operand, depth + 1)
                for operand in operands
            ):
                return True
        return False

    def _floating_allocation(self, call: cst.Call, depth: int) -> bool:
        short = (cst_dotted(call.func) or "").rsplit(".", 1)[-1]
        if short not in ALLOCATIONS:
            return False
        dtype = next((arg.value for arg in call.args if arg.keyword is not None and arg.keyword.value == "dtype"), None)
        if dtype is not None:
            if isinstance(dtype, cst.Attribute) and dtype.attr.value == "dtype":
                return self.derived(dtype.value, depth + 1)  # ``dtype=x.dtype``
            return self._dotted(dtype) in _FLOATING_DTYPES
        if short.endswith("_like"):
            return bool(call.args) and call.args[0].keyword is None and self.derived(call.args[0].value, depth + 1)
        if short.startswith("new_"):
            return isinstance(call.func, cst.Attribute) and self.derived(call.func.value, depth + 1)
        return True  # ``torch.empty(n)``: the default dtype, floating


_FLOATING_DTYPES = frozenset(
    "torch." + name for name in "float float16 float32 float64 bfloat16 half double".split()
)


def describe(node: cst.BaseExpression) -> str:
    """A short source form of an output, for messages."""
    text = cst.Module([]).code_for_node(node)
    return text if len(text) <= 30 else text[:27] + "..."


def names_read(method: Method) -> FrozenSet[str]:
    """Every name ``method``'s body reads, nested functions and lambdas included (a closure may read a
    gradient); a name only deleted (``del grad_b``) or assigned is not read. ``locals()``/``vars()``/
    ``eval`` read everything: the answer is then every parameter's name. Walked without recursion, so
    any depth of nesting is fine."""
    if method.node is None:
        return frozenset()
    read: Set[str] = set()
    not_reads: Set[int] = set()
    reads_all = False
    for node in walk(method.node.body):  # a parent comes before its children
        kind = type(node)  # exact classes: a failing isinstance of a libcst class asks its ABC
        if kind is cst.Name:
            if id(node) not in not_reads:
                read.add(node.value)  # type: ignore[attr-defined]
        elif kind is cst.Del or kind is cst.AssignTarget:
            not_reads.update(_target_names(node.target))  # type: ignore[attr-defined]
        elif kind is cst.Call and type(node.func) is cst.Name:  # type: ignore[attr-defined]
            reads_all = reads_all or node.func.value in ("locals", "vars", "eval", "exec")  # type: ignore[attr-defined]
    if reads_all and method.signature is not None:
        params = method.signature.positional + [p for p in (method.signature.vararg, method.signature.kwarg) if p]
        return frozenset(read | {param.name for param in params})
    return frozenset(read)


def _target_names(target: cst.BaseExpression) -> Set[int]:
    """The ids of the plain names a ``del`` or an assignment binds (through tuple and list targets)."""
    found: Set[int] = set()
    stack = [target]
    while stack:
        item = stack.pop()
        if isinstance(item, cst.Name):
            found.add(id(item))
        elif isinstance(item, (cst.Tuple, cst.List)):
            stack.extend(element.value for element in item.elements)
    return found
