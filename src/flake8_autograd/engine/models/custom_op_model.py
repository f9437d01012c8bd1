"""A custom op's autograd registration, seen as a Function class in the setup_context style.

``op.register_autograd(backward, setup_context=sc)`` gives the operator the contract of a Function:
PyTorch wraps the three functions in a generated Function whose ``forward`` runs the operator, and
calls ``sc`` and ``backward`` as that class would call its own. So the Function rules that carry over
read the registration through a :class:`.model.ClassModel` built here:

* ``forward`` is the operator's function: its positional parameters are the inputs (PyTorch binds their
  defaults, so every one counts); keyword-only parameters are not inputs and get no gradient;
* ``setup_context`` and ``backward`` are the registered defs, plain functions called as a Function's
  staticmethods are;
* the number of outputs is the return annotation's (``Tensor``: one; ``tuple[Tensor, Tensor]``: two;
  ``list[Tensor]``: one value, a list), which PyTorch reads to build the operator's schema.

PyTorch calls setup_context by keyword (``ctx=``, ``inputs=``, ``output=``, and ``keyword_only_inputs=``
when the operator has keyword-only arguments), so its parameters are matched by name, not by place:
the model lists them in the order the Function rules expect (ctx, inputs, output). A setup_context that
cannot take that call (AGF128 says so) leaves the other rules nothing certain to read.

The functions are module-level defs, anywhere in the file: only their lines are given to libcst, in one
parse per registration, and positions map back to the file's lines (the columns are the file's, since
a top-level def starts at column 0).
"""

from __future__ import annotations

import ast
from typing import Dict, List, Optional, Sequence, Tuple

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from ..discovery.custom_ops import CustomOpSite, Registration
from ..discovery.functions import ClassSite
from .class_model import ClassModel, ForwardInputs, Method
from .setup_context_shape import keyword_mismatch
from ..syntax.source import normalized_names, syntax_depth_exceeds

Position = Tuple[int, int]

# What register_autograd passes to setup_context, by keyword, for an operator without (with)
# keyword-only arguments.
OP_SETUP_CONTEXT_ARGUMENTS = ("ctx", "inputs", "output")
OP_SETUP_CONTEXT_KEYWORD_ARGUMENTS = ("ctx", "inputs", "keyword_only_inputs", "output")

# The Function the generated one derives from: the rules that ask for the class's base read this.
_GENERATED_BASE = "torch.autograd.Function"


class FunctionsSegment:
    """Some top-level defs of one file, parsed together with libcst; positions map back to the file.

    Stands where a class's :class:`.source.Segment` does for the rules (``position``, ``lines``). The
    defs' lines are joined in file order; each line of that text remembers its file line. No repair
    (``--fix``) is offered on it: the fix locator maps the contiguous lines of a class, which it is not.
    """

    def __init__(self, module: cst.Module, file_lines: List[int], lines: Sequence[str], fallback: Position) -> None:
        self.module = module
        self.lines = lines
        self._file_lines = file_lines  # text line (0-based) -> file line (1-based)
        self._fallback = fallback  # where a node that has no position of its own is reported
        self._positions: Optional[Dict[cst.CSTNode, Position]] = None

    def position(self, node: cst.CSTNode, method: Optional[cst.FunctionDef] = None) -> Position:
        if self._positions is None:
            self._positions = self._resolve()
        return self._positions.get(node, self._fallback)

    def _resolve(self) -> Dict[cst.CSTNode, Position]:
        try:
            ranges = MetadataWrapper(self.module, unsafe_skip_copy=True).resolve(PositionProvider)
        except Exception:  # noqa: BLE001 - RecursionError some hundred levels deep: every node at the fallback
            return {}
        file_lines = self._file_lines
        return {
            node: (file_lines[code_range.start.line - 1], code_range.start.column)
            for node, code_range in ranges.items()
            if 0 < code_range.start.line <= len(file_lines)
        }


def parse_functions(
    lines: Sequence[str], functions: Sequence[ast.FunctionDef]
) -> Optional[Tuple[FunctionsSegment, Dict[int, cst.FunctionDef]]]:
    """The defs ``functions`` (top-level, of the file ``lines``) parsed with libcst in one go: the
    segment, and each def's libcst node by the ``id`` of its ast node; None when libcst cannot (or
    should not) parse them."""
    unique: Dict[int, ast.FunctionDef] = {id(function): function for function in functions}
    ordered = sorted(unique.values(), key=lambda function: function.lineno)
    text_lines: List[str] = []
    file_lines: List[int] = []
    for function in ordered:
        first = min([function.lineno] + [decorator.lineno for decorator in function.decorator_list])
        last = getattr(function, "end_lineno", None)
        if last is None or function.col_offset != 0 or syntax_depth_exceeds(function):
            return None
        for number in range(first, last + 1):
            line = lines[number - 1] if number <= len(lines) else ""
            if number == 1 and line.startswith("\ufeff"):
                line = line[1:]
            if not line.endswith(("\n", "\r")):
                line += "\n"
            text_lines.append(line)
            file_lines.append(number)
    text = "".join(text_lines)
    if "\x0c" in text:
        return None  # a form feed in the indentation would shift libcst's columns: not worth the care here
    try:
        module = normalized_names(cst.parse_module(text), text)
    except Exception:  # noqa: BLE001 - syntax libcst does not know: stay silent
        return None
    defs = [statement for statement in module.body if isinstance(statement, cst.FunctionDef)]
    if len(defs) != len(ordered):
        return None
    fallback = (ordered[0].lineno, 0)
    return FunctionsSegment(module, file_lines, lines, fallback), {
        id(function): node for function, node in zip(ordered, defs)
    }


class OpFunction(Method):
    """One def of a registration in the role of a Function's method."""

    def __init__(self, role: str, owner: "CustomOpModel", node: cst.FunctionDef) -> None:
        super().__init__(role, owner, node)
        self.function_name = node.name.value
        # PyTorch calls each as a plain function, as it calls a Function's staticmethods: the operator's
        # own decorator (custom_op) does not change how its body is read.
        self.decorators = ["staticmethod"]
        self.is_operator = role == "forward"

    @property
    def qualname(self) -> str:
        return self.function_name

    @property
    def ctx_name(self) -> Optional[str]:
        if self.is_operator:
            return None  # the operator takes its inputs only
        return super().ctx_name

    @property
    def keeps_leftover_ctx(self) -> bool:
        return False


class CustomOpModel(ClassModel):
    """The Function PyTorch generates for one ``register_autograd`` of an operator of this module."""

    def __init__(
        self,
        op: CustomOpSite,
        registration: Registration,
        segment: FunctionsSegment,
        nodes: Dict[str, cst.FunctionDef],
    ) -> None:
        # Not ClassModel.__init__: there is no class statement; the same attributes, filled from the op.
        self.op = op
        self.registration = registration
        function = op.function
        synthetic = ast.ClassDef(
            name=op.binding, bases=[], keywords=[], body=[], decorator_list=[],
            lineno=function.lineno, col_offset=function.col_offset,
        )
        self.site = ClassSite(synthetic, op.binding, [_GENERATED_BASE], is_function=True)
        self.segment = segment  # type: ignore[assignment] # a segment of functions, not of a class
        self.node = cst.ClassDef(name=cst.Name(op.binding), body=cst.IndentedBlock(body=list(nodes.values())))
        self.name = op.binding
        self.bases = []
        self.has_unknown_base = False
        self.class_attributes = {}
        self.class_attribute_statements = {}
        self.own_methods = {role: OpFunction(role, self, node) for role, node in nodes.items()}
        _untype_tensor_lists(self.own_methods["forward"], op.function)
        self._mro = None
        self._forward_inputs = None
        self.keyword_only = [param.arg for param in op.function.args.kwonlyargs]
        self.setup_context_arguments = (
            OP_SETUP_CONTEXT_KEYWORD_ARGUMENTS if self.keyword_only else OP_SETUP_CONTEXT_ARGUMENTS
        )
        self.output_count = declared_output_count(op.function)
        setup = self.own_methods.get("setup_context")
        # Whether setup_context takes the call register_autograd makes; if it does, its parameters are put
        # in the order the Function rules read them (ctx, inputs, output), whatever order they are written in.
        self.setup_context_callable = setup is None or _order_by_keyword(setup, self.setup_context_arguments)

    @property
    def setup_context_style(self) -> bool:
        return True  # the operator never takes a ctx, with or without a setup_context

    def _find_forward_inputs(self) -> Optional[ForwardInputs]:
        forward = self.own_methods.get("forward")
        if forward is None or forward.signature is None or forward.signature.vararg is not None:
            return None
        return ForwardInputs(list(forward.signature.positional), True)  # PyTorch fills the defaults in


def _untype_tensor_lists(forward: Method, function: ast.FunctionDef) -> None:
    """Forget the annotation of each operator parameter that is a list of tensors (``list[Tensor]``,
    ``Optional[List[Tensor]]``...): to a Function a list is not a tensor and takes no gradient, but an
    operator's ``Tensor[]`` argument takes one (a list of tensors). Left unknown, it is neither."""
    if forward.signature is None:
        return
    lists = {arg.arg for arg in function.args.posonlyargs + function.args.args if _is_tensor_list(arg.annotation)}
    for param in forward.signature.positional:
        if param.name in lists:
            param.annotation = None


def _is_tensor_list(annotation: Optional[ast.expr]) -> bool:
    if isinstance(annotation, ast.Subscript):
        base = _last_name(annotation.value)
        if base == "Optional":
            return _is_tensor_list(annotation.slice)
        return base in ("list", "List", "Sequence") and _last_name(annotation.slice) == "Tensor"
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _is_tensor_list(annotation.left) or _is_tensor_list(annotation.right)
    return False


def _order_by_keyword(setup: Method, arguments: Sequence[str]) -> bool:
    """Put ``setup``'s parameters named as ``arguments`` first, in the order a Function's setup_context
    takes them (ctx, inputs, output; keyword_only_inputs among the keyword-only ones). False when the
    keyword call cannot bind (a name missing, positional-only, a required parameter left over)."""
    signature = setup.signature
    if signature is None or setup.node is None or keyword_mismatch(setup.node, arguments) is not None:
        return False
    by_name = {param.name: param for param in signature.positional}
    if not all(name in by_name for name in OP_SETUP_CONTEXT_ARGUMENTS):
        return False  # an argument taken by ``**kwargs``: where it goes is not followed
    order = [by_name[name] for name in OP_SETUP_CONTEXT_ARGUMENTS]
    rest = [param for param in signature.positional if param.name not in OP_SETUP_CONTEXT_ARGUMENTS]
    signature.positional = order
    signature.keyword_only = rest + signature.keyword_only
    return True


def declared_output_count(function: ast.FunctionDef) -> Optional[int]:
    """How many outputs the operator's return annotation declares: ``Tensor`` one, ``tuple[Tensor, ...]``
    (each element written out) as many as written, ``list[Tensor]`` one (a list); None for anything else."""
    annotation = function.returns
    if annotation is None:
        return None
    if isinstance(annotation, ast.Subscript):
        base = _last_name(annotation.value)
        elements = annotation.slice
        if base in ("tuple", "Tuple"):
            items = elements.elts if isinstance(elements, ast.Tuple) else [elements]
            if any(_last_name(item) != "Tensor" for item in items):
                return None  # a scalar output, ``...``, a nested list: not counted here
            return len(items)
        if base in ("list", "List", "Sequence") and _last_name(elements) == "Tensor":
            return 1
        return None
    return 1 if _last_name(annotation) == "Tensor" else None


def _last_name(node: ast.expr) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def op_models(op: CustomOpSite, lines: Sequence[str]) -> List[CustomOpModel]:
    """A model for each ``register_autograd`` of ``op`` whose backward (and setup_context, when one is
    named) are same-module defs."""
    models: List[CustomOpModel] = []
    for registration in op.registrations:
        backward, setup = registration.backward, registration.setup_context
        if backward is None or (registration.setup_context_named and setup is None):
            continue
        roles = [("forward", op.function), ("backward", backward)]
        if setup is not None:
            roles.append(("setup_context", setup))
        if len({id(function) for _, function in roles}) != len(roles):
            continue  # one def in two roles: not a registration the rules can read
        parsed = parse_functions(lines, [function for _, function in roles])
        if parsed is None:
            continue
        segment, nodes = parsed
        models.append(CustomOpModel(op, registration, segment, {role: nodes[id(function)] for role, function in roles}))
    return models


def is_custom_op(model: ClassModel) -> bool:
    """Whether ``model`` is an operator's registration rather than a Function class."""
    return isinstance(model, CustomOpModel)


def op_output_count(model: ClassModel) -> Optional[int]:
    """The operator's declared number of outputs, for an operator's registration; None otherwise."""
    return model.output_count if isinstance(model, CustomOpModel) else None


__all__ = [
    "CustomOpModel",
    "FunctionsSegment",
    "OP_SETUP_CONTEXT_ARGUMENTS",
    "OP_SETUP_CONTEXT_KEYWORD_ARGUMENTS",
    "declared_output_count",
    "is_custom_op",
    "op_models",
    "op_output_count",
    "parse_functions",
]
