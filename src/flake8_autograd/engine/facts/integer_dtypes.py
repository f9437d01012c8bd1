"""Which tensors of a method are integer or bool by construction: the dtypes autograd never differentiates.

An output of such a dtype gets no ``grad_fn`` however its inputs require grad, so a Function whose every
output is one never records a node and never reaches backward (:func:`.counting.backward_never_runs`).

The dtype is followed from evidence in the method itself, never from an annotation: an integer cast
(``x.long()``), an integer dtype (``dtype=torch.int64``), an op whose result is integer or bool whatever
its input (``argmax``, ``bincount``, ``searchsorted``, ``randint``, a comparison, ``isnan``), a value used
as an index, and from there through whatever keeps a tensor's dtype: views and copies, ``empty_like``,
``new_zeros``, ``dtype=x.dtype``, ``.to(x.dtype)``, ``.type_as(x)``, integer arithmetic. An input's dtype
is unknown, and so is whatever only copies it: unknown stays unknown (the answer is then no).
"""

from __future__ import annotations

import weakref
from typing import Callable, Dict, FrozenSet, Optional, Set

import libcst as cst

from ..models.body_facts import Binding, constant_index
from .tensor_kinds import Kind
from .tensors.inference import TensorInference
from ..syntax.walk import cst_dotted

# Past this many steps of one question the answer is no: the recursion stays far from Python's limit.
MAX_DEPTH = 50

# dtypes autograd never differentiates: an output of one of them gets no grad_fn.
_INTEGER_DTYPES = frozenset(
    "torch." + name
    for name in "bool uint8 uint16 uint32 uint64 int8 int16 int32 int64 short int long".split()
)
# The other dtypes: where one stands, the argument is a dtype, not a shape or a device.
_OTHER_DTYPES = frozenset(
    "torch." + name
    for name in "float half double float16 float32 float64 bfloat16 complex32 complex64 complex128 cfloat cdouble"
    " chalf".split()
)
# Tensor methods that return an integer or bool tensor whatever the input.
_INTEGER_CASTS = frozenset("long int short bool byte char".split())
_INDEX_RESULTS = frozenset("argsort argmax argmin bucketize searchsorted nonzero argwhere count_nonzero".split())
_INDEX_FACTORIES = frozenset(
    "torch." + name for name in "argsort argmax argmin bucketize searchsorted randperm randint nonzero argwhere".split()
) | {"torch.nn.functional.one_hot"}
# Methods and torch functions whose result is a bool tensor whatever the input (comparisons, tests).
_BOOL_RESULTS = frozenset(
    "eq ne lt le gt ge greater less greater_equal less_equal not_equal isnan isinf isfinite isposinf isneginf"
    " isclose isin signbit logical_and logical_or logical_xor logical_not".split()
)
# The legacy typed constructors of integer and bool tensors (``torch.cuda.IntTensor(B, n)``).
_INTEGER_CONSTRUCTORS = frozenset(
    f"{module}.{kind}Tensor" for module in ("torch", "torch.cuda") for kind in "Byte Char Short Int Long Bool".split()
)
# Tensor methods whose result keeps the receiver's dtype (a view, a copy, a move between devices); a name
# used as an index is also one through them (``x[inds.unsqueeze(1)]``).
_SAME_DTYPE_METHODS = frozenset(
    "view reshape flatten squeeze unsqueeze contiguous clone detach cpu cuda t transpose permute flip expand repeat"
    " zero_ fill_".split()
)
# Further ops whose result has the dtype of the tensor they are called on (or, as ``torch.<name>(x, ...)``,
# of their first argument), whatever their other arguments: selections, fills, reorderings, and sums of
# integers (an integer or bool tensor sums to int64).
_DTYPE_KEEPING = _SAME_DTYPE_METHODS | frozenset(
    "masked_fill index_fill scatter scatter_add index_add index_copy index_put gather index_select take"
    " take_along_dim masked_select narrow select roll repeat_interleave expand_as view_as reshape_as unflatten"
    " movedim moveaxis swapaxes swapdims tril triu diag diagonal flatten unique unique_consecutive sort msort"
    " topk kthvalue mode cummax cummin amax amin sum cumsum prod cumprod abs neg negative unbind chunk split"
    " tensor_split hsplit vsplit dsplit".split()
)
# Ops that may take a second tensor and promote to its dtype: kept only when every argument is integer.
_BINARY_KEEPING = frozenset(
    "max min median nanmedian maximum minimum remainder fmod add sub mul floor_divide bitwise_and bitwise_or"
    " bitwise_xor bitwise_not bitwise_left_shift bitwise_right_shift".split()
)
# torch factories whose result has the dtype of their first argument.
_LIKE_FACTORIES = frozenset(
    "torch." + name for name in "empty_like zeros_like ones_like full_like randint_like clone".split()
)
# Tensor methods that make a new tensor of the receiver's dtype.
_NEW_METHODS = frozenset("new_empty new_zeros new_ones new_full new_tensor new_empty_strided".split())
# torch functions that join a sequence of tensors (an integer result when every part is integer).
_JOINS = frozenset("torch." + name for name in "cat concat concatenate stack hstack vstack dstack column_stack".split())
# Ops returning (values, indices): the indices are int64; the values keep the receiver's dtype.
_VALUES_INDICES = frozenset("sort topk kthvalue mode cummax cummin".split())
# The same, only when a dimension is given (``x.max(1)``); ``x.max()`` is one tensor, ``x.max(y)`` promotes.
_VALUES_INDICES_WITH_DIM = frozenset("max min median nanmedian".split())
# Ops returning (values, inverse, counts) when asked: all but the values are int64.
_UNIQUE = frozenset("unique unique_consecutive".split())
# Attributes that keep the tensor's dtype.
_SAME_DTYPE_ATTRIBUTES = frozenset("T mT H mH data".split())
# Integer arithmetic on tensors: an integer tensor with integers stays integer (true division does not).
_INTEGER_OPERATORS = (
    cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo, cst.Power,
    cst.BitAnd, cst.BitOr, cst.BitXor, cst.LeftShift, cst.RightShift,
)
# Calls that take an index tensor, and where: (position in ``torch.<name>(...)``, in ``x.<name>(...)``).
_INDEX_ARGUMENTS = {
    "index_select": (2, 1),
    "gather": (2, 1),
    "take": (1, 0),
    "take_along_dim": (1, 0),
    "index_add": (2, 1),
    "index_copy": (2, 1),
    "index_fill": (2, 1),
    "scatter": (2, 1),
    "scatter_add": (2, 1),
}

# A test of one binding's value.
_Test = Callable[[cst.BaseExpression], bool]

# Keys of the per-question memo for the other questions about a name than "is it an integer tensor".
_DTYPE_KEY = "\0dtype "
_INT_KEY = "\0int "
_NODE_KEY = "\0node "  # an expression's verdict, by the node's identity


def is_integer_tensor(
    node: cst.BaseExpression, inference: TensorInference, depth: int = 0, names: Optional[Dict[str, bool]] = None
) -> bool:
    """An integer or bool tensor by construction: ``x.long()``, ``torch.argsort(x)``, ``dtype=torch.int32``,
    a legacy typed constructor (``torch.cuda.IntTensor(B, n)``, then ``.zero_()``), a comparison
    (``scores > 0``), a count (``torch.bincount(x)``), a part, view or copy of one (``inds[:k]``,
    ``valid[inds]``), a tensor made like one (``torch.empty_like(inds)``, ``inds.new_zeros(n)``,
    ``dtype=inds.dtype``, ``x.to(inds.dtype)``, ``x.type_as(inds)``), integer arithmetic on one
    (``inds + 1``), or a local name every binding of which is one. Each name is judged once per question
    (``names``), so chains of names bound several times each cost linear time.

    A name used as an index (``x[inds]``, ``torch.index_select(x, 0, inds)``, ``x.gather(1, inds)``) is an
    integer or bool tensor there, whatever produced it: one unknown call's result (``inds = kernel(...)``),
    re-bound only to parts of itself (``inds = inds[:k]``) or to other integer tensors, has that dtype on
    every path."""
    if depth > MAX_DEPTH:
        return False
    names = {} if names is None else names
    if isinstance(node, cst.Name):
        return _judged_once(node.value, "", inference, depth, names)
    return _judged_node_once(node, "", _integer_expression, inference, depth, names)


def _judged_node_once(
    node: cst.BaseExpression,
    question: str,
    judge: "Callable[[cst.BaseExpression, TensorInference, int, Dict[str, bool]], bool]",
    inference: TensorInference,
    depth: int,
    names: Dict[str, bool],
) -> bool:
    """``judge(node)``, asked once per question: several questions about one operand (is it an integer
    tensor, a Python int) would otherwise cost exponential time in deeply nested expressions."""
    key = f"{question}{_NODE_KEY}{id(node)}"
    if key not in names:
        names[key] = False  # a question asked again while answering it gets no
        names[key] = judge(node, inference, depth, names)
    return names[key]


def _integer_expression(
    node: cst.BaseExpression, inference: TensorInference, depth: int, names: Dict[str, bool]
) -> bool:
    if isinstance(node, cst.Comparison):
        return True  # a bool tensor (or a plain bool, which carries no gradient either)
    if isinstance(node, cst.Subscript):
        if is_integer_tensor(node.value, inference, depth + 1, names):
            return True
        index = constant_index(node)
        return index is not None and _integer_part(node.value, index, inference, depth + 1, names)
    if isinstance(node, cst.Attribute):
        return _integer_attribute(node, inference, depth + 1, names)
    if isinstance(node, cst.UnaryOperation):
        if isinstance(node.operator, cst.Not):
            return True  # a plain bool
        return is_integer_tensor(node.expression, inference, depth + 1, names)
    if isinstance(node, cst.BinaryOperation):
        return _integer_arithmetic(node, inference, depth + 1, names)
    if isinstance(node, cst.BooleanOperation):
        return all(is_integer_tensor(side, inference, depth + 1, names) for side in (node.left, node.right))
    if isinstance(node, cst.IfExp):
        return all(is_integer_tensor(side, inference, depth + 1, names) for side in (node.body, node.orelse))
    if isinstance(node, cst.Call):
        return _integer_call(node, inference, depth + 1, names)
    return False


def _judged_once(name: str, key: str, inference: TensorInference, depth: int, names: Dict[str, bool]) -> bool:
    """One question (``key``: tensor, dtype or Python int) about a local name, answered once per question."""
    if key + name in names:
        return names[key + name]
    names[key + name] = False  # while it is judged: a cycle proves nothing
    if key == _DTYPE_KEY:
        verdict = _all_bindings(name, inference, lambda value: _integer_dtype(value, inference, depth + 1, names))
    elif key == _INT_KEY:
        verdict = _all_bindings(name, inference, lambda value: _python_int(value, inference, depth + 1, names))
    else:
        verdict = _integer_name(name, inference, depth, names)
    names[key + name] = verdict
    return verdict


def _all_bindings(name: str, inference: TensorInference, test: "_Test") -> bool:
    bindings = inference.facts.bindings.get(name) or []
    if not bindings or name in inference.params:
        return False
    return all(binding.value is not None and binding.index is None and test(binding.value) for binding in bindings)


def _integer_call(node: cst.Call, inference: TensorInference, depth: int, names: Dict[str, bool]) -> bool:
    func = node.func
    dotted = _dotted(func, inference)
    for arg in node.args:
        if arg.keyword is not None and arg.keyword.value == "dtype":
            return _integer_dtype(arg.value, inference, depth, names)
    if dotted in _INTEGER_CONSTRUCTORS or dotted in _INDEX_FACTORIES:
        return True
    if dotted in _LIKE_FACTORIES or dotted in _JOINS or dotted in ("torch.where", "torch.full", "torch.arange"):
        return _integer_factory(node, dotted, inference, depth, names)
    if dotted in ("torch.tensor", "torch.as_tensor"):
        data = _positional(node, 0)
        return data is not None and _integer_data(data, inference, depth, names)
    if isinstance(func, cst.Attribute):
        method = func.attr.value
        torch_form = dotted == f"torch.{method}"
    elif dotted is not None and dotted.startswith("torch.") and dotted.count(".") == 1:
        method, torch_form = dotted[len("torch."):], True  # ``from torch import eq``
    else:
        return False
    receiver = _positional(node, 0) if torch_form else _receiver(node)
    if method in _INTEGER_CASTS and not node.args and not torch_form:
        return True
    if method in _INDEX_RESULTS or method in _BOOL_RESULTS or method in ("any", "all"):
        return True
    if method == "bincount":  # int64 counts, or the dtype of the weights when given
        return _positional(node, 1 if torch_form else 0) is None and _keyword(node, "weights") is None
    if receiver is None:
        return False
    if torch_form and method in _DTYPE_KEEPING | _BINARY_KEEPING and _is_integer(receiver, inference, depth, names):
        return method in _DTYPE_KEEPING or _arguments_integer(node, inference, depth, names)
    if torch_form:
        return False
    if method == "view" and len(node.args) == 1 and _names_a_dtype(node.args[0].value, inference):
        return _integer_dtype(node.args[0].value, inference, depth, names)
    if method in ("to", "type"):
        return _integer_conversion(node, method, inference, depth, names)
    if method == "type_as":
        other = _positional(node, 0)
        return other is not None and _is_integer(other, inference, depth, names)
    if not _is_integer(receiver, inference, depth, names):
        return False
    if method in _DTYPE_KEEPING or method in _NEW_METHODS:
        return True
    if method in _BINARY_KEEPING:
        return _arguments_integer(node, inference, depth, names)
    # An in-place method returns the tensor it changed, with its dtype (``out.copy_(src)``).
    return method.endswith("_") and not method.startswith("_") and method != "requires_grad_"


def _integer_factory(
    node: cst.Call, dotted: Optional[str], inference: TensorInference, depth: int, names: Dict[str, bool]
) -> bool:
    """``torch.empty_like(x)`` and the like (x's dtype), ``torch.cat([...])`` (every part's), ``torch.where``
    (one argument: indices; three: both values'), ``torch.full(size, fill)`` and ``torch.arange(...)``
    (the Python numbers' dtype: int64 for ints)."""
    first = _positional(node, 0)
    if dotted in _LIKE_FACTORIES:
        first = first if first is not None else _keyword(node, "input")
        return first is not None and _is_integer(first, inference, depth, names)
    if dotted in _JOINS:
        if not isinstance(first, (cst.List, cst.Tuple)) or not first.elements:
            return False
        return all(
            not isinstance(element, cst.StarredElement) and _is_integer(element.value, inference, depth, names)
            for element in first.elements
        )
    if dotted == "torch.where":
        if len(node.args) == 1 and node.args[0].keyword is None and not node.args[0].star:
            return True  # torch.where(condition): a tuple of int64 index tensors
        return len(node.args) == 3 and _arguments_integer(node, inference, depth, names, skip=1)
    if dotted == "torch.full":
        fill = _positional(node, 1) or _keyword(node, "fill_value")
        return fill is not None and _integer_scalar(fill, inference, depth, names)
    # torch.arange: int64 when start, end and step are all ints
    bounds = [arg.value for arg in node.args if arg.keyword is None or arg.keyword.value in ("start", "end", "step")]
    return bool(bounds) and not any(arg.star for arg in node.args) and all(
        _python_int(bound, inference, depth, names) for bound in bounds
    )


def _integer_conversion(
    node: cst.Call, method: str, inference: TensorInference, depth: int, names: Dict[str, bool]
) -> bool:
    """``x.to(...)``/``x.type(...)``: the dtype asked for (``torch.int64``, ``inds.dtype``), that of another
    tensor (``x.to(inds)``), or the receiver's own when only a device moves (``inds.to("cuda")``,
    ``inds.to(x.device)``). Anything else may be a dtype: unknown."""
    if any(arg.star for arg in node.args):
        return False
    positional = [arg.value for arg in node.args if arg.keyword is None]
    if not positional:  # ``inds.to(device=x.device, non_blocking=True)``; ``x.type()`` is a string
        return method == "to" and _only_device_keywords(node) and _is_integer(_receiver(node), inference, depth, names)
    if method == "type":
        if len(positional) != 1:
            return False
        wanted = positional[0]
        if _dotted(wanted, inference) in _INTEGER_CONSTRUCTORS:
            return True  # ``x.type(torch.cuda.LongTensor)``
        return _integer_dtype(wanted, inference, depth, names)
    for value in positional:
        if _names_a_dtype(value, inference):
            return _integer_dtype(value, inference, depth, names)
    first = positional[0]
    if _names_a_device(first, inference) or _names_a_device(_sole_value(first, inference), inference):
        return _is_integer(_receiver(node), inference, depth, names)
    return _is_integer(first, inference, depth, names)  # x.to(other): other's dtype (and device)


def _only_device_keywords(node: cst.Call) -> bool:
    return all(
        arg.keyword is not None and arg.keyword.value in ("device", "non_blocking", "copy", "memory_format")
        for arg in node.args
    )


def _receiver(node: cst.Call) -> cst.BaseExpression:
    assert isinstance(node.func, cst.Attribute)
    return node.func.value


def _names_a_dtype(node: cst.BaseExpression, inference: TensorInference) -> bool:
    """A torch dtype spelled out, or ``something.dtype``."""
    if isinstance(node, cst.Attribute) and node.attr.value == "dtype":
        return True
    dotted = _dotted(node, inference)
    return dotted in _INTEGER_DTYPES or dotted in _OTHER_DTYPES


def _names_a_device(node: Optional[cst.BaseExpression], inference: TensorInference) -> bool:
    """A device spelled out: a string, ``something.device``, ``torch.device(...)``."""
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
        return True
    if isinstance(node, cst.Attribute) and node.attr.value == "device":
        return True
    return isinstance(node, cst.Call) and _dotted(node.func, inference) == "torch.device"


def _integer_dtype(node: cst.BaseExpression, inference: TensorInference, depth: int, names: Dict[str, bool]) -> bool:
    """An integer or bool dtype: ``torch.int64``, the dtype of an integer tensor (``inds.dtype``), or a
    local name bound only to such."""
    if depth > MAX_DEPTH:
        return False
    if _dotted(node, inference) in _INTEGER_DTYPES:
        return True
    if isinstance(node, cst.Attribute) and node.attr.value == "dtype":
        return _is_integer(node.value, inference, depth, names)
    if isinstance(node, cst.Name):
        return _judged_once(node.value, _DTYPE_KEY, inference, depth, names)
    return False


def _integer_attribute(node: cst.Attribute, inference: TensorInference, depth: int, names: Dict[str, bool]) -> bool:
    """``inds.T``, ``inds.data`` (the tensor's dtype), ``x.sort().indices`` (int64), ``inds.sort().values``."""
    attribute = node.attr.value
    if attribute in _SAME_DTYPE_ATTRIBUTES:
        return _is_integer(node.value, inference, depth, names)
    if attribute not in ("indices", "values"):
        return False
    call = _sole_value(node.value, inference)
    if not isinstance(call, cst.Call) or _values_indices(call, inference, depth, names) is None:
        return False
    return _integer_part(call, 1 if attribute == "indices" else 0, inference, depth, names)


def _sole_value(node: cst.BaseExpression, inference: TensorInference) -> Optional[cst.BaseExpression]:
    """The expression itself, or what a local name's only binding gives it."""
    if not isinstance(node, cst.Name):
        return node
    bindings = inference.facts.bindings.get(node.value) or []
    if len(bindings) != 1 or node.value in inference.params or bindings[0].index is not None:
        return None
    return bindings[0].value


def _values_indices(call: cst.Call, inference: TensorInference, depth: int, names: Dict[str, bool]) -> Optional[str]:
    """The name of an op returning (values, indices), or (values, inverse, counts), when ``call`` is one."""
    func = call.func
    if not isinstance(func, cst.Attribute):
        return None
    method = func.attr.value
    torch_form = _dotted(func, inference) == f"torch.{method}"
    if method in _VALUES_INDICES:
        return method
    if method in _VALUES_INDICES_WITH_DIM:
        dim = _positional(call, 1 if torch_form else 0) or _keyword(call, "dim")
        return method if dim is not None and _python_int(dim, inference, depth + 1, names) else None
    if method in _UNIQUE and (_flag_set(call, "return_inverse") or _flag_set(call, "return_counts")):
        return method
    return None


def _flag_set(call: cst.Call, keyword: str) -> bool:
    value = _keyword(call, keyword)
    return isinstance(value, cst.Name) and value.value == "True"


def _integer_element(
    value: cst.BaseExpression, index: int, inference: TensorInference, depth: int, names: Dict[str, bool]
) -> bool:
    """The ``index``-th value of ``value`` (an unpacking, ``value[index]``): the indices, inverse or counts
    of ``sort``, ``topk``, ``max(dim)``, ``unique(..., return_counts=True)``, any part of
    ``torch.where(condition)`` or ``nonzero(as_tuple=True)``, or a part of an integer whole."""
    if is_integer_tensor(value, inference, depth + 1, names):
        return True  # every part of an integer whole (a tuple of integer tensors, a row of an integer tensor)
    return _integer_part(value, index, inference, depth, names)


def _integer_part(
    value: cst.BaseExpression, index: int, inference: TensorInference, depth: int, names: Dict[str, bool]
) -> bool:
    """:func:`_integer_element` but for the whole: the parts of an op that returns several tensors."""
    if depth > MAX_DEPTH:
        return False
    if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Attribute):
        return False
    dotted = _dotted(value.func, inference)
    if dotted == "torch.where":
        return len(value.args) == 1 and value.args[0].keyword is None and not value.args[0].star
    method = _values_indices(value, inference, depth, names)
    if method is None:
        return False
    if index > 0:
        return True
    torch_form = dotted == f"torch.{method}"
    receiver = _positional(value, 0) if torch_form else value.func.value
    return receiver is not None and _is_integer(receiver, inference, depth, names)


def _integer_arithmetic(
    node: cst.BinaryOperation, inference: TensorInference, depth: int, names: Dict[str, bool]
) -> bool:
    """An integer tensor with an integer tensor or a Python int, by an operator that keeps integers."""
    if not isinstance(node.operator, _INTEGER_OPERATORS):
        return False
    sides = (node.left, node.right)
    tensors = {id(side) for side in sides if is_integer_tensor(side, inference, depth, names)}
    return bool(tensors) and all(
        id(side) in tensors or _integer_scalar(side, inference, depth, names) for side in sides
    )


def _arguments_integer(
    node: cst.Call, inference: TensorInference, depth: int, names: Dict[str, bool], skip: int = 0
) -> bool:
    """Every argument after the first ``skip`` is an integer tensor, a Python int or bool, or None: none
    can promote the result to a floating dtype."""
    return all(
        not arg.star and _integer_scalar_or_tensor(arg.value, inference, depth, names) for arg in node.args[skip:]
    )


def _integer_scalar_or_tensor(
    node: cst.BaseExpression, inference: TensorInference, depth: int, names: Dict[str, bool]
) -> bool:
    return _integer_scalar(node, inference, depth, names) or is_integer_tensor(node, inference, depth, names)


def _integer_scalar(node: cst.BaseExpression, inference: TensorInference, depth: int, names: Dict[str, bool]) -> bool:
    """A Python int, or ``True``/``False``/``None``."""
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return True
    return _python_int(node, inference, depth, names)


def _python_int(node: cst.BaseExpression, inference: TensorInference, depth: int, names: Dict[str, bool]) -> bool:
    """A Python int for certain: a literal, ``len(...)``, ``int(...)``, a size (``x.size(0)``,
    ``x.shape[1]``, ``x.numel()``, ``x.dim()``, ``x.ndim``), integer arithmetic on those, or a local
    name bound only to such."""
    if depth > MAX_DEPTH:
        return False
    if isinstance(node, cst.Name):
        return _judged_once(node.value, _INT_KEY, inference, depth, names)
    return _judged_node_once(node, _INT_KEY, _python_int_expression, inference, depth, names)


def _python_int_expression(
    node: cst.BaseExpression, inference: TensorInference, depth: int, names: Dict[str, bool]
) -> bool:
    if isinstance(node, cst.Integer):
        return True
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        return _python_int(node.expression, inference, depth + 1, names)
    if isinstance(node, cst.BinaryOperation):
        return isinstance(node.operator, _INTEGER_OPERATORS) and not isinstance(node.operator, cst.Power) and all(
            _python_int(side, inference, depth + 1, names) for side in (node.left, node.right)
        )
    if isinstance(node, cst.Attribute):
        return node.attr.value == "ndim"
    if isinstance(node, cst.Subscript):
        inner = node.value
        return (
            isinstance(inner, cst.Attribute) and inner.attr.value == "shape"
            and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index)
        )
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Name):
            return func.value in ("len", "int") and len(node.args) == 1 and func.value not in inference.params
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method == "size":
                return len(node.args) == 1 and node.args[0].keyword is None
            return method in ("numel", "dim", "ndimension") and not node.args
    return False


def _integer_data(node: cst.BaseExpression, inference: TensorInference, depth: int, names: Dict[str, bool]) -> bool:
    """The data of ``torch.tensor(data)``: Python ints (a list or tuple of them, however nested), or an
    integer tensor."""
    if isinstance(node, (cst.List, cst.Tuple)):
        return bool(node.elements) and all(
            not isinstance(element, cst.StarredElement) and _integer_data(element.value, inference, depth + 1, names)
            for element in node.elements
        )
    return _integer_scalar(node, inference, depth, names) or is_integer_tensor(node, inference, depth, names)


def _is_integer(node: cst.BaseExpression, inference: TensorInference, depth: int, names: Dict[str, bool]) -> bool:
    return is_integer_tensor(node, inference, depth + 1, names)


def _positional(node: cst.Call, index: int) -> Optional[cst.BaseExpression]:
    """The ``index``-th positional argument, when the ones before it are written out (no ``*args``)."""
    positional = []
    for arg in node.args:
        if arg.keyword is not None:
            continue
        if arg.star:
            return None
        positional.append(arg.value)
    return positional[index] if index < len(positional) else None


def _keyword(node: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    for arg in node.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def _integer_name(name: str, inference: TensorInference, depth: int, names: Dict[str, bool]) -> bool:
    bindings = inference.facts.bindings.get(name) or []
    if not bindings or name in inference.params:
        return False
    if any(binding.value is None for binding in bindings):
        return False
    witnessed = name in _index_names(inference)
    unknown = 0  # bindings whose dtype only the use as an index shows
    judged = 0  # bindings other than parts of the name itself
    for binding in bindings:
        assert binding.value is not None
        if binding.index is not None:
            if not _integer_unpacked(binding, inference, depth, names):
                return False
            judged += 1
            continue
        if _part_of(binding.value, name):
            continue  # ``inds = inds[:k]``: the dtype of the name's other bindings
        judged += 1
        if is_integer_tensor(binding.value, inference, depth + 1, names):
            continue
        if not witnessed or not _unknown_call(binding.value, inference):
            return False
        unknown += 1
    return judged > 0 and unknown <= 1  # two unknown calls: the index use may see only one of them


def _integer_unpacked(binding: Binding, inference: TensorInference, depth: int, names: Dict[str, bool]) -> bool:
    """``values, order = x.sort()``: the binding's element of what is unpacked."""
    assert binding.value is not None and binding.index is not None
    return _integer_element(binding.value, binding.index, inference, depth + 1, names)


def _part_of(node: cst.BaseExpression, name: str) -> bool:
    """``name`` itself, or a part, view or copy of it (same dtype)."""
    return _root_name(node) == name


def _unknown_call(node: cst.BaseExpression, inference: TensorInference) -> bool:
    """A call whose result's dtype nothing here tells: not a ``torch`` function, not a tensor method."""
    if not isinstance(node, cst.Call):
        return False
    dotted = _dotted(node.func, inference) or ""
    return not dotted.startswith("torch.") and inference.kind(node) is not Kind.NOT_TENSOR


# The names each method uses as an index, found once per method.
_INDEX_NAMES: "weakref.WeakKeyDictionary[TensorInference, FrozenSet[str]]" = weakref.WeakKeyDictionary()


def _index_names(inference: TensorInference) -> FrozenSet[str]:
    found = _INDEX_NAMES.get(inference)
    if found is None:
        found = frozenset(_find_index_names(inference))
        _INDEX_NAMES[inference] = found
    return found


def _find_index_names(inference: TensorInference) -> Set[str]:
    """Names the method's body uses as an index: ``x[name]``, ``x[name, :]``, or the index argument of
    ``index_select``, ``gather``, ``take``, ``scatter``, ... (bare, by keyword, or as a tensor method)."""
    found: Set[str] = set()
    for child in inference.method.nodes_of(cst.Subscript, cst.Call):
        if type(child) is cst.Subscript:
            for element in child.slice:
                index = element.slice
                root = _root_name(index.value) if isinstance(index, cst.Index) and index.star is None else None
                if root is not None:
                    found.add(root)
        else:
            name = _index_argument_name(child, inference)  # type: ignore[arg-type]
            if name is not None:
                found.add(name)
    return found


def _index_argument_name(call: cst.Call, inference: TensorInference) -> Optional[str]:
    func = call.func
    if not isinstance(func, cst.Attribute):
        return None
    positions = _INDEX_ARGUMENTS.get(func.attr.value)
    if positions is None:
        return None
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "index":
            return _root_name(arg.value)
    if any(arg.star for arg in call.args):
        return None
    is_torch_function = _dotted(func, inference) == f"torch.{func.attr.value}"
    position = positions[0] if is_torch_function else positions[1]
    positional = [arg for arg in call.args if arg.keyword is None]
    return _root_name(positional[position].value) if position < len(positional) else None


def _root_name(node: cst.BaseExpression) -> Optional[str]:
    """The name an index is a part, view or copy of (``inds``, ``inds[:k]``, ``inds.unsqueeze(1)``)."""
    while True:
        if isinstance(node, cst.Subscript):
            node = node.value
        elif (
            isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in _SAME_DTYPE_METHODS
        ):
            node = node.func.value
        else:
            return node.value if isinstance(node, cst.Name) and node.value != "None" else None


def _dotted(node: cst.BaseExpression, inference: TensorInference) -> Optional[str]:
    dotted = cst_dotted(node)
    if dotted is None:
        return None
    return inference.imports.resolve_dotted(dotted) or dotted
