"""Tensor inference: is this expression a tensor? Three answers, and silence on the third.

Rules act only on ``TENSOR`` (or, where a rule says so, on ``NOT_TENSOR``); ``UNKNOWN`` is the
answer for anything the engine cannot see through — calls into user code or extensions, untyped
parameters with no tensor use, names bound in loops — so that unsure means silent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, FrozenSet, List, Optional, Set

import libcst as cst

from ...models.body_facts import TENSOR_EVIDENCE_ATTRIBUTES, Binding, constant_index as _constant_index
from ...models.class_model import ClassModel, Method, Param, forward_inputs
from ...syntax.names import ImportTable
from ...syntax.walk import SCOPE_TYPES, children
from .narrowing import narrowings, proven_by_test
from .reaching_bindings import (
    COMPREHENSIONS,
    NESTED_SCOPES,
    ReachingBindings,
    bound_names,
    mentions,
    rebinds_plainly,
    target_names,
)
from ..tensor_kinds import Kind, annotation_kind, join, resolved_dotted
from .torch_names import (
    FUNCTIONAL_NON_TENSOR,
    LEGACY_CONSTRUCTORS,
    NON_TENSOR_ATTRIBUTES,
    NON_TENSOR_BUILTINS,
    NON_TENSOR_METHODS,
    SIZED_TENSOR_ONLY_METHODS,
    SPLITTING_METHODS,
    TENSOR_ATTRIBUTES,
    TENSOR_EVIDENCE_METHODS,
    TENSOR_METHODS,
    TENSOR_ONLY_METHODS,
    TENSOR_POSITIONS,
    TENSOR_SEQUENCE_FUNCTIONS,
    TORCH_NON_TENSORS,
    TORCH_TENSOR_FUNCTIONS,
)

if TYPE_CHECKING:
    from ..module_facts import HelperSignature, ModuleFacts

# A budget against pathological code (deep nesting, long chains of names): past it, unknown. One
# level takes up to five Python frames, and setup_context's inference of forward runs on the same
# stack, so the depth is shared and stays far below Python's recursion limit (1000 frames).
MAX_STEPS = 20_000
MAX_DEPTH = 100

# Which of a class's forward inputs every way out of its own backward certainly gives a gradient (not
# None): :func:`.counting.inputs_certainly_given_gradients`, which counts backward's returns with an
# inference of its own. Counting builds on this module, so the reader is passed in.
GivenGradients = Callable[[ClassModel, ImportTable], FrozenSet[str]]


# Displays, comprehensions and lambdas: never a tensor themselves.
_CONTAINER_TYPES = frozenset(
    {cst.Tuple, cst.List, cst.Set, cst.Dict, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.Lambda}
)
_LITERAL_TYPES = frozenset(
    {cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString}
)


def _is_literal(node: cst.BaseExpression) -> bool:
    kind = type(node)
    if kind is cst.Name:
        return node.value in ("True", "False")  # type: ignore[attr-defined]
    return kind in _LITERAL_TYPES


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
        given_gradients: Optional[GivenGradients] = None,
    ) -> None:
        self.method = method
        self.model = model
        self.imports = imports
        self.module = module  # what the module's own functions and callers say (None: look inside the class only)
        self.given_gradients = given_gradients  # what backward's returns say of forward's inputs (None: not asked)
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
        self._reaching: Optional[ReachingBindings] = None
        self._given_gradients: Optional[FrozenSet[str]] = None

    @property
    def evidence(self) -> "_Evidence":
        """Which names the body uses as tensors (tensor-only methods, tensor positions of torch functions)."""
        if self._evidence is None:
            self._evidence = _Evidence(self)
        return self._evidence

    def _narrowed_kind(self, node: cst.Name) -> Optional[Kind]:
        if self._narrowed is None:
            self._narrowed = narrowings(self.method, self.imports, self._bound_here)
        return self._narrowed.get(id(node))

    def _reaching_value(self, node: cst.Name) -> Optional[cst.BaseExpression]:
        """For a name bound more than once, the value of the plain rebinding every path to this use passed last."""
        name = node.value
        if len(self.facts.bindings.get(name, ())) + (name in self.params) < 2 or self.method.node is None:
            return None
        if self._reaching is None:
            self._reaching = ReachingBindings(self.method)
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

    def element_kind(self, value: cst.BaseExpression, index: int, length: int) -> Kind:
        """The kind of the ``index``-th of ``length`` targets an unpacking of ``value`` binds, as for a name
        so bound (``out, lse = kernel(x)``): known for a helper's annotated elements, a torch split, or
        setup_context's ``inputs`` and ``output``; else unknown."""
        found = self._binding_kind(Binding(value, index, length))
        return Kind.UNKNOWN if found is None else found

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
        kind = type(node)  # exact classes (a parsed tree holds no others): no isinstance through libcst's ABCs
        if kind is cst.Name:
            assert isinstance(node, cst.Name)
            if node.value == "None":
                return Kind.NONE
            narrowed = self._narrowed_kind(node)
            if narrowed is not None:
                return narrowed
            reaching = self._reaching_value(node)
            return self._kind(reaching) if reaching is not None else self._name_kind(node.value)
        if kind in _CONTAINER_TYPES:
            return Kind.NOT_TENSOR
        if kind is cst.Attribute:
            return self._attribute_kind(node)  # type: ignore[arg-type]
        if kind is cst.Call:
            return self._call_kind(node)  # type: ignore[arg-type]
        if kind is cst.Subscript:
            return self._subscript_kind(node)  # type: ignore[arg-type]
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
            dotted = resolved_dotted(func, self.imports)
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
        if dotted in LEGACY_CONSTRUCTORS:
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
            if self._incoming_gradients(value.value):
                return Kind.TENSOR  # ``grad_outputs[0]``: one gradient, a tensor (or None)
        receiver = self._kind(value)
        if receiver is None:
            return None
        return Kind.TENSOR if receiver is Kind.TENSOR else Kind.UNKNOWN

    def _incoming_gradients(self, name: str) -> bool:
        """``name`` is the ``*grad_outputs`` parameter of backward, vjp or jvp, never rebound: its elements
        are the gradients (tangents) autograd passes, each a tensor or None."""
        signature = self.method.signature
        if self.role not in ("backward", "vjp", "jvp") or signature is None or signature.vararg is None:
            return False
        return signature.vararg.name == name and name not in self.facts.bindings

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
        first = next((statement for statement in body.body if mentions(statement, name)), None)
        if first is None:
            return False, None
        if rebinds_plainly(first, name):
            return True, None
        if isinstance(first, cst.If) and first.orelse is None and isinstance(first.body, cst.IndentedBlock):
            statements = first.body.body
            survivor = proven_by_test(first.test, self.imports, self._bound_here)[1].get(name)
            if survivor is not None and statements and rebinds_plainly(statements[-1], name):
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
            if self.given_gradients is not None:
                self._given_gradients = self.given_gradients(self.model, self.imports)
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
                dotted = resolved_dotted(value.func, self.imports)
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
                forward, forward.owner, self.imports, "forward", self._budget, self.module, self.given_gradients
            )
        return self._forward_inference

    def _setup_context_parameter(self, name: str, position: int) -> bool:
        """``name`` is setup_context's parameter at ``position`` (1: forward's inputs, 2: its output), never
        rebound."""
        signature = self.method.signature
        if self.role != "setup_context" or signature is None or len(signature.positional) <= position:
            return False
        return name == signature.positional[position].name and name not in self.facts.bindings

    def _setup_context_input(self, name: str, index: int) -> Optional[Kind]:
        if not self._setup_context_parameter(name, 1):
            return None
        forward = self._forward()
        # ``inputs[i]`` holds forward's i-th input as the class means them (a leftover ctx is not one).
        inputs = forward_inputs(self.model) if forward is not None else None
        if forward is None or inputs is None or not 0 <= index < inputs.total:
            return Kind.UNKNOWN
        return forward._name_kind(inputs.params[index].name) or Kind.UNKNOWN

    def _setup_context_output(self, name: str, index: int) -> Optional[Kind]:
        if not self._setup_context_parameter(name, 2):
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


# -- evidence in evaluation order -----------------------------------------------------------------

_EVIDENCE_CTX_METHODS = frozenset({"save_for_backward", "save_for_forward", "mark_dirty"})
# The node classes whose evaluation order is not simply their children's: every other node is looked up
# by its exact type, since an isinstance chain against libcst's classes is slow (ABC checks).
_COMPREHENSION_TYPES = frozenset(COMPREHENSIONS)
_ORDERED_KINDS = frozenset(
    COMPREHENSIONS
    + NESTED_SCOPES
    + (cst.Assign, cst.AnnAssign, cst.NamedExpr, cst.For, cst.WithItem, cst.ExceptHandler, cst.Del, cst.Import,
       cst.ImportFrom, cst.Global, cst.Nonlocal, cst.MatchAs, cst.MatchStar)
)


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
        del self._inference  # read only by the walk: kept, it would tie the inference to itself in a cycle

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
        if kind in _COMPREHENSION_TYPES:
            return [], []
        if kind in SCOPE_TYPES:
            return [], ([node.name.value] if isinstance(node, (cst.FunctionDef, cst.ClassDef)) else [])
        if kind is cst.Assign:
            assert isinstance(node, cst.Assign)
            return [node.value], [name for target in node.targets for name in target_names(target.target)]
        if isinstance(node, cst.AnnAssign):
            return ([node.value], target_names(node.target)) if node.value is not None else ([], [])
        if isinstance(node, cst.NamedExpr):
            return [node.value], target_names(node.target)
        if isinstance(node, cst.For):
            after: List["cst.CSTNode | str"] = list(target_names(node.target))
            return [node.iter], after + [node.body] + ([node.orelse] if node.orelse is not None else [])
        if isinstance(node, cst.WithItem):
            return [node.item], target_names(node.asname.name) if node.asname is not None else []
        if isinstance(node, cst.ExceptHandler):
            names = target_names(node.name.name) if node.name is not None else []
            return ([node.type] if node.type is not None else []), names + [node.body]
        if isinstance(node, (cst.Del, cst.Import, cst.ImportFrom, cst.Global, cst.Nonlocal, cst.MatchAs,
                             cst.MatchStar)):
            return [], bound_names(node)
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
        dotted = resolved_dotted(func, self._inference.imports)
        if dotted is None:
            return
        positions = TENSOR_POSITIONS.get(dotted, ())
        for index in positions:
            argument = positional[index] if index < len(positional) else None
            if isinstance(argument, cst.Name):
                self._use(argument.value)
        if dotted in TENSOR_SEQUENCE_FUNCTIONS and positional and isinstance(positional[0], (cst.Tuple, cst.List)):
            for element in positional[0].elements:
                if isinstance(element, cst.Element) and isinstance(element.value, cst.Name):
                    self._use(element.value.value)


def _type_test_subject(call: cst.Call, inference: "TensorInference") -> Optional[str]:
    """The name ``isinstance(name, ...)``, ``torch.is_tensor(name)`` or ``type(name)`` asks the type of."""
    subject = call.args[0].value if call.args else None
    if not isinstance(subject, cst.Name):
        return None
    func = call.func
    resolved = resolved_dotted(func, inference.imports)
    builtin = (
        isinstance(func, cst.Name) and func.value in ("isinstance", "type") and resolved == func.value
        and not inference._bound_here(func.value)
    )
    if builtin or resolved == "torch.is_tensor":
        return subject.value
    return None
