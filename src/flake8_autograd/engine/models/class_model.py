"""One model per autograd Function class: its methods, signatures and what their bodies do.

Each method body is walked once, here; rules read the facts gathered and never walk again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from collections import Counter
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple, TypeVar

import libcst as cst

from ..discovery.functions import MAX_LOCAL_DEPTH, ClassSite
from ..syntax.source import Segment
from ..syntax.walk import SCOPE_NODES, children, cst_dotted, walk, walk_scope, walk_scope_spans

# The methods of the autograd contract, in the order a reader expects them.
CONTRACT_METHODS = ("forward", "setup_context", "backward", "vjp", "jvp", "vmap")

# Methods of the ctx object: a parameter that calls one of them is the ctx, whatever its name.
CTX_METHODS = frozenset(
    {"save_for_backward", "save_for_forward", "mark_dirty", "mark_non_differentiable", "set_materialize_grads"}
)

# What a ctx offers besides the methods above: reading one of these marks the name as a ctx.
CTX_ATTRIBUTES = CTX_METHODS | frozenset(
    {"needs_input_grad", "saved_tensors", "saved_variables", "materialize_grads", "to_save", "dirty_tensors",
     "non_differentiable", "mark_shared_storage"}
)

# Annotations that declare a parameter to be the ctx.
CTX_ANNOTATIONS = frozenset({"FunctionCtx", "Any", "BackwardCFunction", "NestedIOFunction", "Function"})

# Attributes and methods that exist only on tensors: a name used with one of them is a tensor.
# Not ``size``/``shape``: process groups have ``.size()``, numpy arrays and quantization states ``.shape``.
TENSOR_EVIDENCE_ATTRIBUTES = frozenset(
    {
        "contiguous",
        "view",
        "view_as",
        "new_zeros",
        "new_ones",
        "new_empty",
        "new_full",
        "new_tensor",
        "data_ptr",
        "is_contiguous",
        "stride",
        "storage_offset",
        "element_size",
        "type_as",
        "expand_as",
        "reshape_as",
        "grad_fn",
        "requires_grad_",
    }
)


@dataclass
class Param:
    name: str
    node: cst.Param
    annotation: Optional[cst.BaseExpression]
    default: Optional[cst.BaseExpression]

    @property
    def has_default(self) -> bool:
        return self.default is not None


@dataclass
class Signature:
    positional: List[Param]
    vararg: Optional[Param]
    keyword_only: List[Param]
    kwarg: Optional[Param]

    @classmethod
    def of(cls, node: cst.FunctionDef) -> "Signature":
        params = node.params
        star = params.star_arg if isinstance(params.star_arg, cst.Param) else None
        return cls(
            [_param(p) for p in list(params.posonly_params) + list(params.params)],
            _param(star) if star is not None else None,
            [_param(p) for p in params.kwonly_params],
            _param(params.star_kwarg) if params.star_kwarg is not None else None,
        )

    @property
    def first(self) -> Optional[Param]:
        return self.positional[0] if self.positional else None


def _takes_class_then_ctx(signature: Signature) -> bool:
    names = [param.name for param in signature.positional[:2]]
    return names == ["cls", "ctx"]


def _param(node: cst.Param) -> Param:
    annotation = node.annotation.annotation if node.annotation is not None else None
    return Param(node.name.value, node, annotation, node.default)


@dataclass
class Binding:
    """One way a local name gets a value: ``name = value`` or the ``index``-th of an unpacking.

    ``value`` is None for bindings the engine does not follow (loops, ``with``, imports, ...).
    """

    value: Optional[cst.BaseExpression]
    index: Optional[int] = None
    unpack_length: Optional[int] = None


@dataclass
class CtxStore:
    """``ctx.attr = value`` (or ``setattr(ctx, "attr", value)``) in a method body."""

    attribute: str
    value: cst.BaseExpression
    node: cst.CSTNode


@dataclass
class CtxSubscript:
    """``ctx.attribute[index]`` with a constant index (None when not constant)."""

    attribute: str
    index: Optional[int]
    node: cst.Subscript


@dataclass
class InPlace:
    """A local name modified in place: ``x.add_(...)``, ``x[i] = v``, ``x += v`` or ``out=x``.

    In ``BodyFacts.expression_writes`` the value written is an expression (``x.view(-1)[0] = v``,
    ``x.data += v``): ``name`` is empty and ``target`` is that expression (aliases.py follows it).
    """

    name: str
    node: cst.CSTNode
    how: str
    target: Optional[cst.BaseExpression] = None


# In-place methods that change a tensor's data (``requires_grad_`` only flips a flag).
_NOT_DATA_IN_PLACE = frozenset({"requires_grad_", "retain_grad", "share_memory_", "record_stream"})


@dataclass
class BodyFacts:
    """What one walk over a method body found (nested functions, classes and lambdas excluded)."""

    bindings: Dict[str, List[Binding]] = field(default_factory=dict)
    returns: List[cst.Return] = field(default_factory=list)
    ctx_stores: List[CtxStore] = field(default_factory=list)
    ctx_calls: Dict[str, List[cst.Call]] = field(default_factory=dict)  # ctx.<method>(...) calls
    tensor_uses: Set[str] = field(default_factory=set)  # names used as tensors
    reads_needs_input_grad: bool = False
    ctx_escapes: bool = False  # ctx handed to a call, which may do anything with it
    yields: bool = False
    ctx_reads: Dict[str, List[cst.Attribute]] = field(default_factory=dict)  # ctx.<attr> loads
    ctx_subscripts: List[CtxSubscript] = field(default_factory=list)  # ctx.<attr>[i]
    in_place: List[InPlace] = field(default_factory=list)  # name modified in place
    expression_writes: List[InPlace] = field(default_factory=list)  # ``x[0][i] = v``, ``x.data += v``
    calls: List[cst.Call] = field(default_factory=list)  # every call, for in-place writes through them
    ctx_references: int = 0  # every use of the ctx name, however it is used
    ctx_arguments: int = 0  # uses of the ctx name as a call argument
    # name -> calls that receive it as an argument: a kernel launch filling a preallocated buffer
    filled_by: Dict[str, List[cst.Call]] = field(default_factory=dict)

    def bind(self, name: str, binding: Binding) -> None:
        self.bindings.setdefault(name, []).append(binding)


_Derived = TypeVar("_Derived")


class Method:
    """A contract method as written in one class: a ``def``, or an assignment such as
    ``backward = staticmethod(impl)`` whose signature is unknown."""

    def __init__(
        self,
        name: str,
        owner: "ClassModel",
        node: Optional[cst.FunctionDef],
        statement: Optional[cst.CSTNode] = None,
    ) -> None:
        self.name = name
        self.owner = owner
        self.node = node
        self.statement = statement  # the class-level assignment that binds a method with no ``def``
        self.decorators: List[str] = []
        if node is not None:
            for decorator in node.decorators:
                expression = decorator.decorator
                if isinstance(expression, cst.Call):
                    expression = expression.func
                self.decorators.append(cst_dotted(expression) or "")
        self.signature = Signature.of(node) if node is not None else None
        if self.signature is not None and self.signature.positional and (
            self.is_classmethod or _takes_class_then_ctx(self.signature)
        ):
            # Python binds ``cls`` (or, for a base's ``forward(cls, ctx, ...)`` helper that subclasses
            # call as ``super().forward(cls=cls, ctx=ctx, ...)``, the caller passes it): the
            # parameters PyTorch passes start after it.
            self.signature.positional = self.signature.positional[1:]
        self._facts: Optional[BodyFacts] = None
        self._leftover_ctx: Optional[bool] = None
        self._body_nodes: Optional[Tuple[cst.CSTNode, ...]] = None
        self._subtree_ends: List[int] = []  # the nodes below body_nodes()[i] end at _subtree_ends[i]
        self._order: Optional[Dict[int, int]] = None  # id of a body node -> its place in body_nodes()
        self._name_counts: Optional[Counter[str]] = None
        self._whole_body: Optional[Tuple[cst.CSTNode, ...]] = None
        self._places_by_type: Optional[Dict[type, List[int]]] = None
        self._derived: Dict[Callable[["Method"], Any], Any] = {}

    def body_nodes(self) -> Tuple[cst.CSTNode, ...]:
        """Every node of the body as ``walk_scope`` yields them, walked once for all the facts that read
        them (several facts each walked every body before)."""
        if self._body_nodes is None:
            if self.node is None:
                self._body_nodes = ()
            else:
                self._body_nodes, self._subtree_ends = walk_scope_spans(self.node.body)
        return self._body_nodes

    def span(self, node: cst.CSTNode) -> Optional[Tuple[int, int]]:
        """Where ``node`` and what ``walk_scope(node)`` yields lie in :meth:`body_nodes`: ``node`` at
        ``start``, the nodes below it up to ``end``. None for a node the shared walk did not expand: one
        it never reached (after a ``return``, in a nested scope, built by the caller) or a nested function,
        class or lambda (``walk_scope`` enters its body, the walk of this body does not)."""
        nodes = self.body_nodes()
        if self._order is None:
            self._order = {id(each): index for index, each in enumerate(nodes)}
        start = self._order.get(id(node))
        if start is None or isinstance(node, SCOPE_NODES):
            return None
        return start, self._subtree_ends[start]

    def below(self, node: cst.CSTNode) -> Sequence[cst.CSTNode]:
        """What ``walk_scope(node)`` yields, a slice of the shared walk when ``node`` is in it."""
        span = self.span(node)
        if span is None:
            return tuple(walk_scope(node))
        return self.body_nodes()[span[0] + 1:span[1]]

    def nodes_of(self, *types: type) -> List[cst.CSTNode]:
        """The body nodes (as :meth:`body_nodes`) of exactly these node classes, in walk order. A parsed
        tree holds only concrete node classes, so this is ``isinstance`` without a scan of every node
        through libcst's abstract base classes (each test a call into them)."""
        if self._places_by_type is None:
            places: Dict[type, List[int]] = {}
            for index, node in enumerate(self.body_nodes()):
                places.setdefault(type(node), []).append(index)
            self._places_by_type = places
        nodes = self.body_nodes()
        wanted = [self._places_by_type.get(each, []) for each in types]
        ordered = wanted[0] if len(wanted) == 1 else sorted(place for each in wanted for place in each)
        return [nodes[place] for place in ordered]

    def names_in(self, node: cst.CSTNode) -> FrozenSet[str]:
        """The names ``node`` is or holds, in its own scope (``walk_scope``)."""
        return frozenset(each.value for each in (node, *self.below(node)) if type(each) is cst.Name)

    def whole_body(self) -> Tuple[cst.CSTNode, ...]:
        """Every node below the body as ``walk`` yields them: nested scopes and code after a ``return``
        included (:meth:`body_nodes` leaves both out)."""
        if self._whole_body is None:
            self._whole_body = tuple(walk(self.node.body)) if self.node is not None else ()
        return self._whole_body

    def name_count(self, name: str) -> int:
        """How many Name nodes of the whole ``def`` spell ``name``: parameters, decorators, nested
        functions and attribute names included (one walk for every name asked)."""
        if self._name_counts is None:
            counts: Counter[str] = Counter()
            if self.node is not None:
                outside = [each for each in children(self.node) if each is not self.node.body]
                for node in (*outside, *(inner for each in outside for inner in walk(each)), *self.whole_body()):
                    if type(node) is cst.Name:
                        counts[node.value] += 1
            self._name_counts = counts
        return self._name_counts[name]

    def derived(self, compute: Callable[["Method"], _Derived]) -> _Derived:
        """``compute(self)``, worked out once: a fact other modules derive from this method that several
        rules ask for (kept on the method, so it goes when the method's tree does)."""
        if compute not in self._derived:
            self._derived[compute] = compute(self)
        return self._derived[compute]  # type: ignore[no-any-return]

    def rebinds(self, name: str) -> bool:
        """Whether the body binds ``name`` again, other than by ``name += ...`` (which keeps the object)."""
        return self.definitions(name) > 0

    def definitions(self, name: str) -> int:
        """How many times the body binds ``name``, ``name += ...`` (which keeps the object) aside."""
        augmented = sum(
            1 for change in self.facts.in_place if change.name == name and change.how == "augmented assignment"
        )
        return len(self.facts.bindings.get(name, [])) - augmented

    @property
    def qualname(self) -> str:
        return f"{self.owner.name}.{self.name}"

    @property
    def is_static(self) -> bool:
        return any(name in ("staticmethod", "builtins.staticmethod") for name in self.decorators)

    @property
    def is_classmethod(self) -> bool:
        return any(name in ("classmethod", "builtins.classmethod") for name in self.decorators)

    @property
    def ctx_name(self) -> Optional[str]:
        """The name of the ctx parameter, when this method takes one first."""
        if self.signature is None or self.signature.first is None:
            return None
        if self.name == "vmap":
            return None
        if self.name == "forward" and self.owner.setup_context_style:
            return self.signature.first.name if self.keeps_leftover_ctx else None
        return self.signature.first.name

    @property
    def keeps_leftover_ctx(self) -> bool:
        """A setup_context-style forward whose first parameter is still the ctx of the combined style.

        PyTorch passes no ctx to such a forward, so the parameter takes the first input: the class is broken
        (AGF112). Only a ctx-like name used as a ctx, or not at all, counts: ``context: Tensor`` is an input.
        """
        if self._leftover_ctx is None:
            self._leftover_ctx = self._find_leftover_ctx()
        return self._leftover_ctx

    def _find_leftover_ctx(self) -> bool:
        first = self.signature.first if self.signature is not None else None
        if self.name != "forward" or first is None or self.node is None:
            return False
        name = first.name
        if name != "context" and "ctx" not in name:
            return False
        if first.annotation is not None:
            declared = cst_dotted(first.annotation) or ""
            return declared.rsplit(".", 1)[-1] in CTX_ANNOTATIONS
        facts = collect_facts(self.node, name, self.body_nodes())
        attributes = set(facts.ctx_reads)
        stored = {store.attribute for store in facts.ctx_stores}
        attribute_uses = sum(len(reads) for reads in facts.ctx_reads.values())
        if name in facts.tensor_uses or attributes - CTX_ATTRIBUTES - stored:
            return False  # ``context.transpose(...)``: a tensor
        if facts.ctx_references > attribute_uses + facts.ctx_arguments:
            return False  # ``query @ context``: used as a value
        if facts.ctx_arguments and "ctx" not in name:
            return False  # ``helper(context)``: a tensor or a ctx, unknown
        self._facts = facts
        return True

    @property
    def facts(self) -> BodyFacts:
        if self._facts is None:
            ctx_name = self.ctx_name  # may collect the facts itself
            if self._facts is None:
                self._facts = (
                    collect_facts(self.node, ctx_name, self.body_nodes()) if self.node is not None else BodyFacts()
                )
        return self._facts

    def position(self, node: Optional[cst.CSTNode] = None) -> Tuple[int, int]:
        """Where ``node`` is; by default the ``def``, or the assignment that binds the method."""
        target = node if node is not None else (self.node if self.node is not None else self.statement)
        if target is None:
            target = self.owner.node
        return self.owner.segment.position(target, self.node)  # placed by regenerating this method alone


class ClassModel:
    """A local class: a Function class, or a local base that may supply contract methods."""

    def __init__(self, site: ClassSite, segment: Segment, bases: Sequence[Optional["ClassModel"]]) -> None:
        self.site = site
        self.segment = segment
        self.node = segment.class_node
        self.name = site.name
        self.bases: List[ClassModel] = [base for base in bases if base is not None]
        # Methods may come from somewhere this module cannot see.
        self.has_unknown_base: bool = (
            site.has_foreign_base
            or any(base is None for base in bases)
            or any(base.has_unknown_base for base in self.bases)
        )
        self.own_methods: Dict[str, Method] = {}
        self.class_attributes: Dict[str, cst.BaseExpression] = {}
        self.class_attribute_statements: Dict[str, cst.CSTNode] = {}  # where each was assigned
        body = self.node.body
        statements = body.body if isinstance(body, cst.IndentedBlock) else ()
        for statement in statements:
            if isinstance(statement, cst.FunctionDef):
                self.own_methods[statement.name.value] = Method(statement.name.value, self, statement)
            elif isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    self._read_class_assignment(small)
        if isinstance(body, cst.SimpleStatementSuite):
            for small in body.body:
                self._read_class_assignment(small)
        self._mro: Optional[List[ClassModel]] = None
        self._forward_inputs: Optional[Tuple[Optional[ForwardInputs]]] = None

    def _read_class_assignment(self, small: cst.BaseSmallStatement) -> None:
        if isinstance(small, cst.Assign):
            for target in small.targets:
                if isinstance(target.target, cst.Name):
                    name = target.target.value
                    self.class_attributes[name] = small.value
                    self.class_attribute_statements[name] = small
                    if name in CONTRACT_METHODS:
                        self.own_methods[name] = Method(name, self, None, small)
        elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.value is not None:
            self.class_attributes[small.target.value] = small.value
            self.class_attribute_statements[small.target.value] = small

    @property
    def mro(self) -> List["ClassModel"]:
        """This class then its local bases, depth first (enough for single-line hierarchies)."""
        if self._mro is None:
            order: List[ClassModel] = []
            stack: List[ClassModel] = [self]
            seen: Set[int] = set()
            while stack:
                model = stack.pop(0)
                if id(model) in seen:
                    continue
                if len(order) > MAX_LOCAL_DEPTH:
                    self.has_unknown_base = True  # too deep to follow: treat the rest as unseen
                    break
                seen.add(id(model))
                order.append(model)
                stack[0:0] = model.bases
            self._mro = order
        return self._mro

    def method(self, name: str) -> Optional[Method]:
        for model in self.mro:
            found = model.own_methods.get(name)
            if found is not None:
                return found
        return None

    def knows_method(self, name: str) -> bool:
        """True when the class certainly has (or certainly lacks) ``name``: no unseen base."""
        return self.method(name) is not None or not self.has_unknown_base

    @property
    def setup_context_style(self) -> bool:
        return self.method("setup_context") is not None

    def class_attribute(self, name: str) -> Optional[cst.BaseExpression]:
        owner = self.class_attribute_owner(name)
        return owner.class_attributes[name] if owner is not None else None

    def class_attribute_owner(self, name: str) -> Optional["ClassModel"]:
        """The class of the hierarchy whose assignment of ``name`` is in effect."""
        for model in self.mro:
            if name in model.class_attributes:
                return model
        return None

    def forward_inputs(self) -> Optional["ForwardInputs"]:
        """The inputs ``apply`` passes to forward, as the class means them; None when unknown.

        In the setup_context style every positional parameter of forward is an input, except a leftover
        ctx (the mixed style, AGF112), which is dropped so that input positions match what the author meant.
        """
        if self._forward_inputs is None:
            self._forward_inputs = (self._find_forward_inputs(),)
        return self._forward_inputs[0]

    def _find_forward_inputs(self) -> Optional["ForwardInputs"]:
        forward = self.method("forward")
        if forward is None or forward.signature is None or forward.signature.vararg is not None:
            return None
        params = list(forward.signature.positional)
        if forward.ctx_name is not None:
            # A leftover ctx is known as such; a forward inherited from a combined-style base must show it.
            if not forward.owner.setup_context_style and not uses_first_as_ctx(forward):
                return None  # ``forward(x)`` with no setup_context: is x the ctx or an input? Unknown.
            params = params[1:]
        return ForwardInputs(params, self.setup_context_style)


@dataclass
class ForwardInputs:
    """The inputs ``apply`` passes to forward: positional parameters after ctx."""

    params: List[Param]
    style_binds_defaults: bool  # setup_context style: apply binds defaults, so every slot counts

    @property
    def total(self) -> int:
        return len(self.params)

    @property
    def required(self) -> int:
        if self.style_binds_defaults:
            return self.total
        return sum(1 for param in self.params if not param.has_default)

    @property
    def names(self) -> List[str]:
        return [param.name for param in self.params]


def forward_inputs(model: ClassModel) -> Optional[ForwardInputs]:
    """The inputs of the class's forward; None when they cannot be known (``*args``, no def)."""
    return model.forward_inputs()


def return_index(method: Method, position: Tuple[int, int]) -> Optional[int]:
    """The index in ``method.facts.returns`` of the ``return`` that starts at ``position`` (line, column).

    The positions of all the method's returns are worked out once (kept on the method): a fix looking up
    the return of each of many findings would otherwise place every return again for each finding."""
    return method.derived(_return_positions).get(position)


def _return_positions(method: Method) -> Dict[Tuple[int, int], int]:
    positions: Dict[Tuple[int, int], int] = {}
    for index, ret in enumerate(method.facts.returns):
        positions.setdefault(method.position(ret), index)
    return positions


def uses_first_as_ctx(method: Method) -> bool:
    """The first parameter is named ctx, or the body uses it as one (``self.save_for_backward``)."""
    name = method.ctx_name
    if name is None:
        return False
    if name == "self" or "ctx" in name or "context" in name:
        return True
    facts = method.facts
    return bool(CTX_METHODS.intersection(facts.ctx_calls))


def collect_facts(
    function: cst.FunctionDef, ctx_name: Optional[str], nodes: Optional[Sequence[cst.CSTNode]] = None
) -> BodyFacts:
    """The facts of ``function``'s body; ``nodes``, when given, are that body's nodes already walked."""
    facts = BodyFacts()
    readers = _FACT_READERS
    for node in nodes if nodes is not None else walk_scope(function.body):
        reader = readers.get(type(node))
        if reader is not None:
            reader(facts, node, ctx_name)
    return facts


# One reader per node type, found by the node's exact type: an ``isinstance`` chain costs a call into
# libcst's abstract base classes per test, and most nodes fall through every test. Parsed trees hold
# only the concrete node classes named here, none of which has a subclass.
def _read_assign(facts: BodyFacts, node: cst.Assign, ctx_name: Optional[str]) -> None:
    for target in node.targets:
        _bind_target(facts, target.target, node.value, ctx_name, node)


def _read_annotated_assign(facts: BodyFacts, node: cst.AnnAssign, ctx_name: Optional[str]) -> None:
    if node.value is not None:
        _bind_target(facts, node.target, node.value, ctx_name, node)


def _read_augmented_assign(facts: BodyFacts, node: cst.AugAssign, ctx_name: Optional[str]) -> None:
    if isinstance(node.target, cst.Name):
        facts.bind(node.target.value, Binding(None))
        facts.in_place.append(InPlace(node.target.value, node, "augmented assignment"))
    elif isinstance(node.target, cst.Subscript) and isinstance(node.target.value, cst.Name):
        facts.in_place.append(InPlace(node.target.value.value, node, "indexed assignment"))
    elif isinstance(node.target, cst.Subscript):
        facts.expression_writes.append(InPlace("", node, "indexed assignment", node.target.value))
    elif isinstance(node.target, cst.Attribute):
        facts.expression_writes.append(InPlace("", node, "augmented assignment", node.target))


def _read_named_expression(facts: BodyFacts, node: cst.NamedExpr, ctx_name: Optional[str]) -> None:
    if isinstance(node.target, cst.Name):
        facts.bind(node.target.value, Binding(node.value))


def _read_for(facts: BodyFacts, node: cst.For, ctx_name: Optional[str]) -> None:
    _bind_opaque(facts, node.target)


def _read_with_item(facts: BodyFacts, node: cst.WithItem, ctx_name: Optional[str]) -> None:
    if node.asname is not None:
        _bind_opaque(facts, node.asname.name)


def _read_except_handler(facts: BodyFacts, node: cst.ExceptHandler, ctx_name: Optional[str]) -> None:
    if node.name is not None:
        _bind_opaque(facts, node.name.name)


def _read_import(facts: BodyFacts, node: "cst.Import | cst.ImportFrom", ctx_name: Optional[str]) -> None:
    names = node.names
    if isinstance(names, (list, tuple)):
        for alias in names:
            bound = alias.asname.name if alias.asname is not None else alias.name
            _bind_opaque(facts, bound)


def _read_nested_definition(facts: BodyFacts, node: "cst.FunctionDef | cst.ClassDef", ctx_name: Optional[str]) -> None:
    facts.bind(node.name.value, Binding(None))


def _read_global(facts: BodyFacts, node: "cst.Global | cst.Nonlocal", ctx_name: Optional[str]) -> None:
    for name_item in node.names:
        facts.bind(name_item.name.value, Binding(None))


def _read_match_capture(facts: BodyFacts, node: "cst.MatchAs | cst.MatchStar", ctx_name: Optional[str]) -> None:
    if node.name is not None:
        facts.bind(node.name.value, Binding(None))


def _read_match_mapping(facts: BodyFacts, node: cst.MatchMapping, ctx_name: Optional[str]) -> None:
    if node.rest is not None:
        facts.bind(node.rest.value, Binding(None))


def _read_del(facts: BodyFacts, node: cst.Del, ctx_name: Optional[str]) -> None:
    _bind_opaque(facts, node.target)


def _read_return(facts: BodyFacts, node: cst.Return, ctx_name: Optional[str]) -> None:
    facts.returns.append(node)


def _read_yield(facts: BodyFacts, node: cst.Yield, ctx_name: Optional[str]) -> None:
    facts.yields = True


def _read_subscript(facts: BodyFacts, node: cst.Subscript, ctx_name: Optional[str]) -> None:
    value = node.value
    if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == ctx_name:
        facts.ctx_subscripts.append(CtxSubscript(value.attr.value, constant_index(node), node))


def _read_attribute(facts: BodyFacts, node: cst.Attribute, ctx_name: Optional[str]) -> None:
    if isinstance(node.value, cst.Name) and node.value.value == ctx_name and ctx_name is not None:
        facts.ctx_reads.setdefault(node.attr.value, []).append(node)
    if node.attr.value == "needs_input_grad":
        facts.reads_needs_input_grad = True
    if node.attr.value in TENSOR_EVIDENCE_ATTRIBUTES and isinstance(node.value, cst.Name):
        facts.tensor_uses.add(node.value.value)


def _read_name(facts: BodyFacts, node: cst.Name, ctx_name: Optional[str]) -> None:
    if ctx_name is not None and node.value == ctx_name:
        facts.ctx_references += 1


def _bind_target(
    facts: BodyFacts,
    target: cst.BaseExpression,
    value: cst.BaseExpression,
    ctx_name: Optional[str],
    statement: cst.CSTNode,
) -> None:
    if isinstance(target, cst.Name):
        facts.bind(target.value, Binding(value))
    elif isinstance(target, cst.Subscript):
        if isinstance(target.value, cst.Name):
            facts.in_place.append(InPlace(target.value.value, statement, "indexed assignment"))
        else:
            facts.expression_writes.append(InPlace("", statement, "indexed assignment", target.value))
    elif isinstance(target, cst.Attribute):
        if ctx_name is not None and isinstance(target.value, cst.Name) and target.value.value == ctx_name:
            facts.ctx_stores.append(CtxStore(target.attr.value, value, target))
    elif isinstance(target, (cst.Tuple, cst.List)):
        elements = target.elements
        starred = any(isinstance(element, cst.StarredElement) for element in elements)
        value_elements = _display_elements(value)
        for index, element in enumerate(elements):
            if starred:
                _bind_opaque(facts, element.value)
                continue
            if value_elements is not None and len(value_elements) == len(elements):
                _bind_target(facts, element.value, value_elements[index], ctx_name, statement)
            elif isinstance(element.value, cst.Name):
                facts.bind(element.value.value, Binding(value, index, len(elements)))
            else:
                _bind_opaque(facts, element.value)


def constant_index(node: cst.Subscript) -> Optional[int]:
    if len(node.slice) != 1:
        return None
    element = node.slice[0].slice
    if isinstance(element, cst.Index) and isinstance(element.value, cst.Integer):
        value = element.value.evaluated_value
        return value if isinstance(value, int) else None
    return None


def _display_elements(value: cst.BaseExpression) -> Optional[List[cst.BaseExpression]]:
    """The elements of a tuple or list display without starred parts, else None."""
    if isinstance(value, (cst.Tuple, cst.List)):
        if any(isinstance(element, cst.StarredElement) for element in value.elements):
            return None
        return [element.value for element in value.elements]
    return None


def _bind_opaque(facts: BodyFacts, target: cst.CSTNode) -> None:
    if isinstance(target, cst.Name):
        facts.bind(target.value, Binding(None))
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            _bind_opaque(facts, element.value)
    elif isinstance(target, cst.StarredElement):
        _bind_opaque(facts, target.value)


def _buffers_handed_over(value: cst.BaseExpression) -> List[str]:
    """Local names a call receives other than as a bare argument: a part of one (``dkv[:, 0]``, a
    slice of one allocation), or an element of a tuple, list or dict display (``(x, out)``,
    ``{key: dq}``), itself whole or a part."""
    elements: List[cst.BaseExpression] = [value]
    if isinstance(value, cst.Dict):
        elements = [element.value for element in value.elements if isinstance(element, cst.DictElement)]
    elif isinstance(value, (cst.Tuple, cst.List)):
        elements = [element.value for element in value.elements if not isinstance(element, cst.StarredElement)]
    names = []
    for element in elements:
        if isinstance(element, cst.Subscript):
            element = element.value
            if not isinstance(element, cst.Name):
                continue
        elif element is value or not isinstance(element, cst.Name):
            continue  # a bare argument is recorded by the caller
        names.append(element.value)
    return names


def _read_call(facts: BodyFacts, call: cst.Call, ctx_name: Optional[str]) -> None:
    facts.calls.append(call)
    func = call.func
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
        method = func.attr.value
        if method.endswith("_") and not method.endswith("__") and method not in _NOT_DATA_IN_PLACE:
            facts.in_place.append(InPlace(func.value.value, call, f".{method}()"))
    for arg in call.args:
        if arg.star:
            continue
        if isinstance(arg.value, cst.Name):
            facts.filled_by.setdefault(arg.value.value, []).append(call)
            if arg.keyword is not None and arg.keyword.value == "out":
                facts.in_place.append(InPlace(arg.value.value, call, "out="))
        for buffer in _buffers_handed_over(arg.value):  # launch(grid, (x, out)), run(dkv[:, 0]), run({k: dq})
            facts.filled_by.setdefault(buffer, []).append(call)
    if ctx_name is None:
        return
    facts.ctx_arguments += sum(
        1 for arg in call.args if isinstance(arg.value, cst.Name) and arg.value.value == ctx_name
    )
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == ctx_name:
        facts.ctx_calls.setdefault(func.attr.value, []).append(call)
        if func.attr.value in ("save_for_backward", "mark_dirty", "save_for_forward", "mark_non_differentiable"):
            for arg in call.args:
                if isinstance(arg.value, cst.Name) and not arg.star and func.attr.value != "mark_non_differentiable":
                    facts.tensor_uses.add(arg.value.value)
        return
    if isinstance(func, cst.Name) and func.value == "setattr" and len(call.args) == 3:
        owner, attribute, value = (arg.value for arg in call.args)
        if (
            isinstance(owner, cst.Name)
            and owner.value == ctx_name
            and isinstance(attribute, cst.SimpleString)
            and not any(arg.star for arg in call.args)
        ):
            name = attribute.evaluated_value
            facts.ctx_stores.append(CtxStore(name if isinstance(name, str) else "?", value, call))
            return
    for arg in call.args:
        if isinstance(arg.value, cst.Name) and arg.value.value == ctx_name:
            facts.ctx_escapes = True


_FACT_READERS: Dict[type, Callable[[BodyFacts, Any, Optional[str]], None]] = {
    cst.Assign: _read_assign,
    cst.AnnAssign: _read_annotated_assign,
    cst.AugAssign: _read_augmented_assign,
    cst.NamedExpr: _read_named_expression,
    cst.For: _read_for,  # a comprehension's ``for`` binds in the comprehension's own scope: not read
    cst.WithItem: _read_with_item,
    cst.ExceptHandler: _read_except_handler,
    cst.Import: _read_import,
    cst.ImportFrom: _read_import,
    cst.FunctionDef: _read_nested_definition,  # walk_scope yields a nested scope, not its body
    cst.ClassDef: _read_nested_definition,
    cst.Global: _read_global,
    cst.Nonlocal: _read_global,
    cst.MatchAs: _read_match_capture,
    cst.MatchStar: _read_match_capture,
    cst.MatchMapping: _read_match_mapping,
    cst.Del: _read_del,
    cst.Return: _read_return,
    cst.Yield: _read_yield,
    cst.Subscript: _read_subscript,
    cst.Attribute: _read_attribute,
    cst.Call: _read_call,
    cst.Name: _read_name,
}
