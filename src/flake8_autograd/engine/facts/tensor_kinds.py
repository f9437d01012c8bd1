"""Tensor kinds and what annotations say of them.

A value is a ``TENSOR``, ``NONE``, ``NOT_TENSOR`` or ``UNKNOWN`` (:class:`Kind`); :func:`join` merges the
kinds of several paths, and :func:`annotation_kind` reads the kind an annotation declares (``Tensor``,
``Optional[torch.Tensor]``, ``int``, a string annotation), within limits against pathological text.
"""

from __future__ import annotations

import enum
from typing import List, Optional

import libcst as cst

from ..syntax.names import ImportTable
from ..syntax.walk import cst_dotted

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


# The legacy typed tensors (``torch.LongTensor``, ``torch.cuda.HalfTensor``, ...) are tensor types too.
_TYPED_TENSORS = ("Float Double Half BFloat16 Byte Char Short Int Long Bool").split()
TENSOR_ANNOTATIONS = frozenset(
    {"torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter"}
    | {f"torch.{kind}Tensor" for kind in _TYPED_TENSORS}
    | {f"torch.cuda.{kind}Tensor" for kind in _TYPED_TENSORS}
)
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
        base = resolved_dotted(annotation.value, imports)
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
    name = resolved_dotted(annotation, imports)
    if name is None:
        return Kind.UNKNOWN
    if name in TENSOR_ANNOTATIONS or name == "Tensor":
        return Kind.TENSOR
    if name in _NON_TENSOR_ANNOTATIONS:
        return Kind.NOT_TENSOR
    return Kind.UNKNOWN


def resolved_dotted(node: cst.BaseExpression, imports: ImportTable) -> Optional[str]:
    """The dotted name ``node`` spells, through the module's imports (as written if they do not bind it)."""
    dotted = cst_dotted(node)
    if dotted is None:
        return None
    return imports.resolve_dotted(dotted) or dotted
