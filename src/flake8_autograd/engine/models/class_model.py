"""One model per autograd Function class: its methods, their signatures, forward's inputs.

Each method body is walked once, for the facts of body_facts.py; rules read the facts gathered and never
walk again.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections import Counter
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple, TypeVar

import libcst as cst

from ..discovery.functions import MAX_LOCAL_DEPTH, ClassSite
from .body_facts import BodyFacts, collect_facts
from ..syntax.source import Segment
from ..syntax.walk import SCOPE_TYPES, Settle, children, cst_dotted, walk, walk_scope, walk_scope_spans

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
        them (several facts each walked every body before); a branch the class's ``settle`` rules out
        is left out, so no fact counts code that never runs."""
        if self._body_nodes is None:
            if self.node is None:
                self._body_nodes = ()
            else:
                self._body_nodes, self._subtree_ends = walk_scope_spans(self.node.body, self.owner.settle)
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
        if start is None or type(node) in SCOPE_TYPES:
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
                nodes = [*outside, *(inner for each in outside for inner in walk(each)), *self.whole_body()]
                counts.update([node.value for node in nodes if type(node) is cst.Name])
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

    # What is certain of a condition in this class's methods, set by checking from the module's analysis
    # before any method is walked; a branch it rules out is left out of every method's facts. None (a
    # model built alone, a custom op's): nothing is certain.
    settle: Optional[Settle] = None

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

    def release(self) -> None:
        """Let go of everything this model and its methods hold, the class's libcst tree first: a method
        and its class refer to each other, so without this the tree (thousands of nodes) would wait for
        Python's cyclic collector, which walks all of it; with it, the tree goes as soon as the last
        reference does. The model is unusable afterwards: only for a class nothing will read again."""
        for method in self.own_methods.values():
            method.__dict__.clear()
        self.__dict__.clear()

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
