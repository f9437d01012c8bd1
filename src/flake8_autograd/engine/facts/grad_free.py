"""Whether the arguments of a call can carry no tensor that requires grad, read from flake8's ``ast`` tree.

``Cls.apply`` records a graph node only when some input is a tensor that requires grad; given none, its
output has no ``grad_fn`` and the Function's backward can never run. A direct ``Cls.forward(None, ...)``
call given such arguments therefore bypasses nothing apply would have done (AGF111).

An argument counts only when what it holds is certain: a literal (``None``, ``3``, ``"nearest"``, a tuple
of them), a dtype of torch (``torch.float16``), a parameter annotated with a type that is not a tensor
(``dtype: torch.dtype``, ``scale: Optional[float]``) and bound nowhere else, or the ``self`` of a method
of a class that cannot be a tensor: a class whose bases, followed through the module, are ``object`` or
``abc.ABC`` only (its instance is not a torch.Tensor, whatever tensors its attributes hold: apply looks
at the arguments themselves, never into them). A ``cls`` of a classmethod is a class, never a tensor.
"""

from __future__ import annotations

import ast
from typing import Optional, Set

from ..discovery.functions import MAX_LOCAL_DEPTH, ClassSite, Discovery
from ..syntax.names import ast_dotted
from ..syntax.scopes import CLASS, FUNCTION, ModuleScopes, Scope
from .tensor_kinds import MAX_ANNOTATION_DEPTH

# torch's dtypes, by the names ``torch`` exports them under.
TORCH_DTYPES = frozenset(
    """
    float float16 float32 float64 half double bfloat16 complex32 complex64 complex128 cfloat cdouble chalf
    uint8 uint16 uint32 uint64 int8 int16 int32 int64 short int long bool
    qint8 quint8 qint32 quint4x2 quint2x4
    float8_e4m3fn float8_e4m3fnuz float8_e5m2 float8_e5m2fnuz float8_e8m0fnu float4_e2m1fn_x2
    """.split()
)
# Bases that say nothing of tensors: a class made of these alone is not a torch.Tensor subclass.
_PLAIN_BASES = frozenset({"object", "abc.ABC"})
# Decorators under which a method still receives the instance (or, for classmethod, the class) first.
_INSTANCE_DECORATORS = frozenset({"property", "functools.cached_property", "cached_property"})
_CLASS_DECORATORS = frozenset({"classmethod", "builtins.classmethod"})
# Annotations of values that are not tensors (containers are left out: they may hold one).
_SCALAR_ANNOTATIONS = frozenset(
    {"None", "int", "float", "bool", "str", "bytes", "complex", "torch.dtype", "torch.device", "torch.Size"}
)
_OPTIONAL = frozenset({"Optional", "typing.Optional", "Union", "typing.Union"})


def grad_free_arguments(call: ast.Call, scope: Scope, scopes: ModuleScopes, discovery: Discovery) -> bool:
    """Whether no argument of ``call``, read in ``scope``, can be a tensor that requires grad."""
    reader = _ArgumentReader(scope, scopes, discovery)
    if any(keyword.arg is None for keyword in call.keywords):
        return False  # ``**kwargs``: unknown values
    return all(reader.grad_free(argument) for argument in [*call.args, *(kw.value for kw in call.keywords)])


class _ArgumentReader:
    def __init__(self, scope: Scope, scopes: ModuleScopes, discovery: Discovery) -> None:
        self.scope = scope
        self.scopes = scopes
        self.discovery = discovery

    def grad_free(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Constant):
            return True
        if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
            return True
        if isinstance(node, (ast.Tuple, ast.List)):
            return all(self.grad_free(element) for element in node.elts)
        if isinstance(node, ast.Name):
            return self._instance_or_class_of_plain_class(node.id) or self._scalar_parameter(node.id)
        return self._torch_dtype(node)

    def _scalar_parameter(self, name: str) -> bool:
        """``name`` is a parameter of the function it is read in, bound nowhere else, annotated as a scalar."""
        binder = self.scopes.resolve(self.scope, name)
        parameter = self.scopes.sole_binding(binder, name) if binder.kind == FUNCTION else None
        return isinstance(parameter, ast.arg) and parameter.annotation is not None and self._scalar(
            parameter.annotation
        )

    def _scalar(self, annotation: ast.expr, depth: int = 0) -> bool:
        if depth > MAX_ANNOTATION_DEPTH:
            return False  # too deep to read: not known to be a scalar
        if isinstance(annotation, ast.Constant) and annotation.value is None:
            return True
        if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):  # ``float | None``
            return self._scalar(annotation.left, depth + 1) and self._scalar(annotation.right, depth + 1)
        if isinstance(annotation, ast.Subscript) and self._resolved(annotation.value) in _OPTIONAL:
            inner = annotation.slice
            members = inner.elts if isinstance(inner, ast.Tuple) else [inner]
            return all(self._scalar(member, depth + 1) for member in members)
        return self._resolved(annotation) in _SCALAR_ANNOTATIONS

    def _resolved(self, node: ast.expr) -> Optional[str]:
        dotted = ast_dotted(node)
        if dotted is None:
            return None
        return self.discovery.imports.resolve_dotted(dotted) or dotted

    def _torch_dtype(self, node: ast.expr) -> bool:
        dotted = ast_dotted(node)
        resolved = self.discovery.imports.resolve_dotted(dotted) if dotted is not None and "." in dotted else None
        if resolved is None:
            return False
        module, _, name = resolved.rpartition(".")
        return module == "torch" and name in TORCH_DTYPES

    def _instance_or_class_of_plain_class(self, name: str) -> bool:
        """``name`` is the first parameter of the method it is read in (the instance, or the class of a
        classmethod), bound nowhere else, and the method's class is not a tensor."""
        binder = self.scopes.resolve(self.scope, name)
        method = binder.node
        if binder.kind != FUNCTION or not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        if binder.parent is None or binder.parent.kind != CLASS:
            return False
        positional = [*method.args.posonlyargs, *method.args.args]
        if not positional or positional[0].arg != name or self.scopes.sole_binding(binder, name) is not positional[0]:
            return False
        decorators = {ast_dotted(decorator) for decorator in method.decorator_list}
        if decorators and decorators <= _CLASS_DECORATORS:
            return True  # a class object
        if not decorators <= _INSTANCE_DECORATORS:
            return False  # staticmethod, or a decorator that may pass anything first
        site = next((site for site in self.discovery.classes if site.node is binder.parent.node), None)
        return site is not None and self._plain_class(site, set())

    def _plain_class(self, site: ClassSite, seen: Set[int]) -> bool:
        """No base of ``site``, followed through the module's own classes, can make it a tensor."""
        if id(site) in seen or site.is_function or len(seen) > MAX_LOCAL_DEPTH:
            return False
        seen.add(id(site))
        for dotted in site.base_names:
            if dotted is None:
                return False
            local = self._local_base(dotted)
            if local is not None:
                if not self._plain_class(local, seen):
                    return False
            elif dotted not in _PLAIN_BASES and self.discovery.imports.resolve_dotted(dotted) not in _PLAIN_BASES:
                return False
        return True

    def _local_base(self, dotted: str) -> Optional[ClassSite]:
        if self.discovery.imports.resolve_dotted(dotted) is not None:
            return None  # imported, not the module's own class
        return self.discovery.local_class(dotted)
