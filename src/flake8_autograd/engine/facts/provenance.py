"""Provenance: which computations in a method body produce a value, and which gradients are joint work.

A gradient that backward returns is *computed* when some work in backward produces it: a call, an
arithmetic operation, an indexing. The computations that produce it (its *producers*) are found by
walking back from the returned value through what does not compute:

- a change of layout (``.view()``, ``.to()``, ``.half()``, ``.contiguous()``, ``.T``, ...), a slice
  or view of a local result (``buf[:, :n]``);
- what follows a computed result without being work of its own: a reduction (``gw.sum(0)``,
  ``torch.sum(gw, 0)``: the partial sums of a kernel's workspace), a helper applied to one of the
  results of a fused call (``fit(grad_a, rows)``), a sum of computed results (``dq1 + dq2``);
- a preallocated buffer (``torch.empty_like``, ``x.new_zeros``, ..., or a module helper that only
  allocates): its producers are the calls it is handed to (a kernel launch, directly, as a slice
  ``dkv[:, 0]`` or a view ``buf.view(-1)``, in a tuple, list or dict display, maybe bound to a local
  first), the values
  accumulated into it (``dq += part``) and the in-place calls on it. A buffer nothing fills is a
  placeholder (zeros for an input that takes no gradient): no work;
- a gradient that forward computed with one fused call and saved, only rescaled here
  (``gh * grad``, ``gh.mul_(grad)``): the work was forward's, one computation for every gradient it
  yielded. Forward's fused call may be made on one branch after the names were set to None, or be one
  launch filling several saved buffers.

Each computation is keyed by its node: two textually equal computations are two, one value bound
once and returned in two slots is one.

Two gradients are *joint* when one's producer is in the other's backward slice (the producers, and
transitively what they consume): one call yields both (a fused kernel unpacked into two names, a
launch that fills two buffers, one ``torch.autograd.backward`` whose ``.grad`` results are read), or
a later kernel consumes an earlier one's result. Inputs, saved tensors, incoming gradients, ctx
attributes and shared preparations (``s = torch.sigmoid(gate)`` used by two separate products) may be
shared by separate gradients; a single-result step that a later step of the same gradient consumes
(``gx = g.clone()``, then ``gx = gx * w``) is compared through that later step only. Joint gradients
are one computation a ``needs_input_grad`` check cannot split.
"""

from __future__ import annotations

from typing import Dict, FrozenSet, Hashable, List, Optional, Sequence, Set, Tuple

import libcst as cst

from ..models.class_model import Method
from ..syntax.walk import children, cst_dotted, walk
from .fused_gradients import (
    MAX_STEPS,
    carrying_gradients,
    forward_gradients,
    incoming_gradients,
    is_ctx_read,
    mentions_any,
    results_used,
    unpacked_from_call,
)
from .memory_and_layout import (
    CONSTANT_FILLS,
    LAYOUT_ATTRIBUTES,
    display_values,
    handed_as_views,
    is_allocation,
    wrapped_value,
)

Computation = Tuple[Hashable, ...]

# Names of constants: handed to a launch, they are no buffer it writes.
_CONSTANT_NAMES = frozenset({"None", "True", "False"})

# Reductions that follow a computed result (the partial sums of a kernel's workspace).
REDUCTIONS = frozenset({"sum"})

# ``x.grad`` after one ``torch.autograd.backward``: every such read comes from that one call.
_GRAD_READ: Computation = ("grad attribute",)

# Gradients forward computed with one fused call, saved and only rescaled here: that one call's work.
_FORWARD_WORK: Computation = ("fused forward call",)

# Methods (and torch functions) that rescale a tensor by another: ``gh.mul_(grad)``, ``torch.mul(gh, grad)``.
_RESCALES = frozenset({"mul", "mul_", "div", "div_", "multiply", "multiply_", "divide", "divide_"})

# Budget against pathological code: nodes visited in one walk (MAX_STEPS, shared with the fused-call
# walks), nested walks for a follow-up.
MAX_DEPTH = 20


class Provenance:
    """The producers of values in one method (backward) and the joint work among its gradients.

    ``allocating`` names the module's functions that only allocate memory; ``savers`` are the methods
    that fill ctx for this backward (forward, setup_context), to recognise gradients computed there."""

    def __init__(
        self, method: Method, allocating: FrozenSet[str] = frozenset(), savers: Sequence[Method] = ()
    ) -> None:
        self.method = method
        self.allocating = allocating
        self._bound: Dict[str, Tuple[List[cst.BaseExpression], FrozenSet[Computation]]] = {}
        self._upstream: Dict[Computation, FrozenSet[Computation]] = {}
        self._producers: Dict[Hashable, FrozenSet[Computation]] = {}
        # Computations that yield several results: a launch filling buffers, a call unpacked into names.
        self.several_results: Set[Computation] = {_GRAD_READ}
        self._walking: Set[Hashable] = set()
        self._containers: Optional[Dict[str, List[str]]] = None
        self._in_place_calls: Optional[Dict[str, List[cst.Call]]] = None
        self._carrying: Optional[FrozenSet[str]] = None
        self._used: Dict[cst.Call, int] = {}
        self._forward_gradients = forward_gradients(method, savers)
        # Pre-order (start, end) of each node of the body, and the outermost loop around a node: on demand.
        self._spans: Optional[Dict[cst.CSTNode, Tuple[int, int]]] = None
        self._outer_loops: Dict[cst.CSTNode, cst.CSTNode] = {}
        self._handed_calls: Dict[str, List[cst.Call]] = {}
        self._views: Optional[Dict[str, List[cst.Call]]] = None  # calls handed a view of a local
        self._dropped: Optional[Set[cst.Call]] = None
        # For a value nothing computes, the launches with dropped results that are handed it (or what it
        # passes on): keyed as producers() keys its values.
        self._launched: Dict[Hashable, FrozenSet[Computation]] = {}
        self._buffers_by_call: Optional[Dict[cst.Call, List[str]]] = None

    # -- producers -------------------------------------------------------------------------------
    def producers(self, node: cst.BaseExpression, depth: int = 0) -> FrozenSet[Computation]:
        """The computations that produce ``node``'s value (empty: none, or not followed).

        Memoised per name and per node, and empty for a value asked again while it is being walked
        (``g, h = v.chunk(2)`` after ``v = cat([g, ...])``): without both, the nested walks of
        follow-ups through such a cycle multiply at every level."""
        key = _key(node)
        known = self._producers.get(key)
        if known is not None:
            return known
        if key in self._walking:
            return frozenset()
        self._walking.add(key)
        try:
            found = self._walk(node, depth)
        finally:
            self._walking.discard(key)
        self._producers[key] = found
        return found

    def _walk(self, node: cst.BaseExpression, depth: int) -> FrozenSet[Computation]:
        found: Set[Computation] = set()
        launched: Set[Computation] = set()  # launches handed a value passed through (below)
        followed: Set[str] = set()
        pending: List[cst.CSTNode] = [node]
        steps = 0
        while pending:
            steps += 1
            if steps > MAX_STEPS:
                return frozenset()
            value = pending.pop()
            if isinstance(value, cst.Name):
                if value.value not in followed:
                    followed.add(value.value)
                    values, direct = self._bound_of(value.value)
                    found |= direct
                    pending.extend(values)
                    launched.update(("call", call) for call in self._launches_handed(value.value))
            elif isinstance(value, cst.Call):
                self._call_producers(value, depth, found, pending)
            elif isinstance(value, cst.Attribute):
                if value.attr.value == "grad":
                    found.add(_GRAD_READ)
                elif value.attr.value in LAYOUT_ATTRIBUTES:
                    pending.append(value.value)
                # any other attribute (ctx.x, obj.field) is read, not computed
            elif isinstance(value, cst.Subscript):
                self._subscript_producers(value, depth, found, pending)
            elif isinstance(value, cst.BinaryOperation):
                self._arithmetic_producers(value, depth, found, pending)
            elif isinstance(value, cst.IfExp):
                pending.extend((value.body, value.orelse))  # the test only chooses between them
            else:
                pending.extend(children(value))  # parentheses, unary operators, displays
        if not found and launched:
            self._launched[_key(node)] = frozenset(launched)
        return frozenset(found)

    def returned_producers(self, node: cst.BaseExpression) -> FrozenSet[Computation]:
        """The producers of a value backward returns. One that nothing computes (an incoming gradient,
        a clone or view of it) but that is handed to a launch whose result is dropped is written in place
        there: that launch computes it, one computation for all the buffers it is handed. (Only for a
        returned value: an operand handed to a launch is read there.)"""
        found = self.producers(node)
        if found:
            return found
        launched = self._launched.get(_key(node), frozenset())
        self.several_results |= launched
        return launched

    def _launches_handed(self, name: str) -> List[cst.Call]:
        """The calls handed ``name`` whose result is dropped (a statement of its own, or bound to
        ``_``): launches that write what they are handed, other than in-place methods of a receiver,
        which only read their arguments (``dq.copy_(dk)``). ``None`` handed to a launch is no buffer."""
        if name in _CONSTANT_NAMES:
            return []
        if self._dropped is None:
            dropped: Set[cst.Call] = set()
            for statement in self.method.nodes_of(cst.Expr, cst.Assign):
                value: Optional[cst.BaseExpression] = None
                if isinstance(statement, cst.Expr):
                    value = statement.value
                elif isinstance(statement, cst.Assign) and all(
                    isinstance(target.target, cst.Name) and target.target.value == "_" for target in statement.targets
                ):
                    value = statement.value
                if isinstance(value, cst.Call) and not (
                    isinstance(value.func, cst.Attribute) and value.func.attr.value.endswith("_")
                ):
                    dropped.add(value)
            self._dropped = dropped
        return [call for call in self._handed(name) if call in self._dropped]

    def _call_producers(
        self, call: cst.Call, depth: int, found: Set[Computation], pending: List[cst.CSTNode]
    ) -> None:
        wrapped = wrapped_value(call)
        if wrapped is not None:
            pending.append(wrapped)
            return
        if is_allocation(call, self.allocating):
            return  # memory only: a placeholder where it stands in a slot
        subject = self._followed_subject(call)
        if subject is not None and depth < MAX_DEPTH:
            made_of = self._joint_results(subject, depth)
            if made_of:
                found |= made_of  # a reduction or rework of a fused result is not work of its own
                return
        if self._rescales_forward_gradient_call(call, depth):
            found.add(_FORWARD_WORK)  # one fused forward call for every gradient it yielded
            return
        found.add(("call", call))

    def _subscript_producers(
        self, subscript: cst.Subscript, depth: int, found: Set[Computation], pending: List[cst.CSTNode]
    ) -> None:
        if is_ctx_read(subscript.value, self.method):
            return  # ctx.saved_tensors[0], ctx.sizes[1]
        base = subscript.value
        if isinstance(base, cst.Name) and base.value in self.method.facts.bindings:
            # A part of a local result comes from what made it. Followed in this walk, once per name: a
            # fresh walk per subscript would redo the name's whole history for every part taken of it.
            pending.append(base)
            return
        if isinstance(base, cst.Name) and base.value == self._incoming_vararg():
            return  # ``grad_outputs[1]``: an incoming gradient handed on unchanged, no work
        made_of = self.producers(base, depth + 1) if depth < MAX_DEPTH else frozenset()
        if made_of:
            found |= made_of  # a part of a call's result (``fused(...)[0]``)
        else:
            found.add(("subscript", subscript))  # indexing a parameter is work of its own

    def _incoming_vararg(self) -> Optional[str]:
        """The name of backward's ``*grad_outputs``: the gradients it receives, one per output."""
        signature = self.method.signature
        if self.method.name not in ("backward", "vjp") or signature is None or signature.vararg is None:
            return None
        return signature.vararg.name

    def _arithmetic_producers(
        self, operation: cst.BinaryOperation, depth: int, found: Set[Computation], pending: List[cst.CSTNode]
    ) -> None:
        if self._rescales_forward_gradient(operation, depth):
            found.add(_FORWARD_WORK)  # one fused forward call for every gradient it yielded
            return
        if isinstance(operation.operator, cst.Add) and depth < MAX_DEPTH:
            # The sum of fused results (the partial results of two launches) is what they made.
            left = self._joint_results(operation.left, depth)
            right = self._joint_results(operation.right, depth) if left else frozenset()
            if left and right:
                found |= left | right
                return
        found.add(("arithmetic", operation))

    def _joint_results(self, node: cst.BaseExpression, depth: int) -> FrozenSet[Computation]:
        """The producers of ``node`` when each yields several results (a launch filling buffers, a fused
        call unpacked into names), else empty: a reduction of such a result follows up on joint work,
        one of a prepared gradient (``grad_conv.sum(0)`` after ``grad_conv = mask(grad)``) is work."""
        made_of = self.producers(node, depth + 1)
        return made_of if made_of and made_of <= self.several_results else frozenset()

    def _bound_of(self, name: str) -> Tuple[List[cst.BaseExpression], FrozenSet[Computation]]:
        """The values to follow for a local name, and the computations it stands for directly."""
        known = self._bound.get(name)
        if known is None:
            known = _bound_values(name, self)
            self._bound[name] = known
        return known

    def _followed_subject(self, call: cst.Call) -> Optional[cst.BaseExpression]:
        """The value a call only follows up on, when it is computed: a reduction (``gw.sum(0)``,
        ``torch.sum(gw, 0)``) or a rework of a fused call's result (``fit(grad_a, rows)``)."""
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in REDUCTIONS:
            dotted = cst_dotted(func) or ""
            if dotted.startswith("torch."):
                return _first_argument(call)
            return func.value
        if self.reworks_fused_gradient(call):
            return _subject(call)
        return None

    def _rescales_forward_gradient(self, operation: cst.BinaryOperation, depth: int) -> bool:
        """``gh * grad`` where forward computed ``gh`` with a fused call and saved it: the work was forward's."""
        if not isinstance(operation.operator, (cst.Multiply, cst.Divide)):
            return False
        return self._scales_forward_gradient(operation.left, operation.right, depth)

    def _rescales_forward_gradient_call(self, call: cst.Call, depth: int) -> bool:
        """``gh.mul_(grad)``, ``gh.div(n)``, ``torch.mul(gh, grad)``: a rescale written as a call."""
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in _RESCALES:
            return False
        if any(arg.star or arg.keyword is not None for arg in call.args):
            return False
        operands = [arg.value for arg in call.args]
        if not (cst_dotted(func) or "").startswith("torch."):
            operands.insert(0, func.value)  # a method: the receiver is rescaled
        return len(operands) == 2 and self._scales_forward_gradient(operands[0], operands[1], depth)

    def _scales_forward_gradient(self, left: cst.BaseExpression, right: cst.BaseExpression, depth: int) -> bool:
        if not self._forward_gradients:
            return False
        for saved, scale in ((left, right), (right, left)):
            if self._is_forward_gradient(saved) and (depth >= MAX_DEPTH or not self.producers(scale, depth + 1)):
                return True
        return False

    def _is_forward_gradient(self, node: cst.BaseExpression) -> bool:
        while isinstance(node, cst.Call) and wrapped_value(node) is not None:
            node = wrapped_value(node)  # type: ignore[assignment]
        if isinstance(node, cst.Attribute) and is_ctx_read(node.value, self.method):
            return ("attribute", node.attr.value) in self._forward_gradients
        if not isinstance(node, cst.Name):
            return False
        for binding in self.method.facts.bindings.get(node.value, ()):
            if binding.index is not None and _is_saved_tensors(binding.value, self.method):
                if ("saved", binding.index) in self._forward_gradients:
                    return True
        return False

    def reworks_fused_gradient(self, call: cst.Call) -> bool:
        """``call`` takes as its first argument (or is a method of) one of the results of a fused call:
        one that consumes an incoming gradient and whose results, two or more of them used, go their own
        ways. What is made of such a result is not work of its own.

        Not a fused call: one that consumes no incoming gradient (``x, w = map(torch.Tensor.contiguous,
        ctx.saved_tensors)`` unpacks saved state), one with a single result used (``padded, _, _ =
        pad(grad)`` prepares the gradient that later, separate computations share), or one whose result
        re-binds the incoming gradient (``grad, x = prepare(grad, x)``: prepared, not computed).
        """
        subject = _subject(call)
        while isinstance(subject, cst.Call):
            subject = wrapped_value(subject)  # None for a call that computes
        method = self.method
        if not isinstance(subject, cst.Name) or not unpacked_from_call(subject.value, method):
            return False
        gradients = incoming_gradients(method)
        if subject.value in gradients:
            return False  # the incoming gradient re-bound (``grad, x = prepare(grad, x)``) is prepared, not computed
        sources = [binding.value for binding in method.facts.bindings[subject.value] if binding.index is not None]
        if self._carrying is None:
            self._carrying = carrying_gradients(method, gradients)
        carrying = self._carrying
        return all(
            isinstance(source, cst.Call) and mentions_any(source, carrying) and self._results_used(source) >= 2
            for source in sources
        )

    def _results_used(self, call: cst.Call) -> int:
        known = self._used.get(call)
        if known is None:
            known = results_used(call, self.method)
            self._used[call] = known
        return known

    # -- buffers ---------------------------------------------------------------------------------
    def fills(self, name: str) -> List[cst.Call]:
        """The calls that fill the buffer ``name``: those handed it (directly, as a slice, in a display,
        or in a local bound to a display), other than metadata reads beside a launch (``_stride(buf)``
        among the launch's own arguments), layout changes, reductions and allocations; and other than a
        launch that, once an earlier one filled ``name``, gets it beside a fresh buffer of its own
        (``d_x`` after ``d_hidden`` was prepared): that launch reads ``name`` to fill its own."""
        handed = self._handed(name)
        return [call for call in handed if not self._reads_to_fill_another(call, name, handed)]

    def _handed(self, name: str) -> List[cst.Call]:
        known = self._handed_calls.get(name)
        if known is not None:
            return known
        facts = self.method.facts
        if self._views is None:
            self._views = handed_as_views(self.method)
        calls: List[cst.Call] = [*facts.filled_by.get(name, ()), *self._views.get(name, ())]
        for container in self._containers_of(name):
            calls.extend(facts.filled_by.get(container, ()))
        calls = [
            call for call in calls
            if wrapped_value(call) is None
            and not is_allocation(call, self.allocating)
            and self._followed_subject(call) is None
        ]
        nested: Set[int] = set()
        for call in calls:
            for node in walk(call):
                if node is not call and type(node) is cst.Call:
                    nested.add(id(node))
        found = [call for call in calls if id(call) not in nested]
        self._handed_calls[name] = found
        return found

    def _reads_to_fill_another(self, call: cst.Call, name: str, handed: List[cst.Call]) -> bool:
        """Whether ``call`` gets ``name`` after another call filled it, and is the first call handed some
        other buffer (outside loops, where the order of the passes is not the order of the lines)."""
        spans, outer_loops = self._spans_of()
        span = spans.get(call)
        if span is None or call in outer_loops:
            return False
        if not any(other in spans and spans[other][1] <= span[0] for other in handed if other is not call):
            return False
        for buffer in self._buffers_handed_to().get(call, ()):
            if buffer == name:
                continue
            first = min(self._handed(buffer), key=lambda each: spans.get(each, (0, 0))[0], default=None)
            if first is call:
                return True
        return False

    def _buffers_handed_to(self) -> Dict[cst.Call, List[str]]:
        """For each call, the preallocated buffers it is handed."""
        if self._buffers_by_call is None:
            by_call: Dict[cst.Call, List[str]] = {}
            for local, bindings in self.method.facts.bindings.items():
                if any(
                    binding.index is None and binding.value is not None
                    and is_allocation(binding.value, self.allocating)
                    for binding in bindings
                ):
                    for call in self._handed(local):
                        by_call.setdefault(call, []).append(local)
            self._buffers_by_call = by_call
        return self._buffers_by_call

    def in_place_calls(self, name: str) -> List[cst.Call]:
        """In-place method calls on ``name`` or on a part of it (``buf[i].add_(x)``), other than
        setting it to a constant (``zero_()``)."""
        if self._in_place_calls is None:
            calls: Dict[str, List[cst.Call]] = {}
            for node in self.method.nodes_of(cst.Call):
                assert isinstance(node, cst.Call)
                if type(node.func) is not cst.Attribute:
                    continue
                assert isinstance(node.func, cst.Attribute)
                method = node.func.attr.value
                if not method.endswith("_") or method.endswith("__") or method in CONSTANT_FILLS:
                    continue
                receiver = _base_name(node.func.value)
                if receiver is not None:
                    calls.setdefault(receiver, []).append(node)
            self._in_place_calls = calls
        return self._in_place_calls.get(name, [])

    def _containers_of(self, name: str) -> List[str]:
        """Locals bound to a display holding ``name`` (``pack = {key: dq, ...}``)."""
        if self._containers is None:
            containers: Dict[str, List[str]] = {}
            for local, bindings in self.method.facts.bindings.items():
                for binding in bindings:
                    if binding.index is None and isinstance(binding.value, (cst.Tuple, cst.List, cst.Dict)):
                        for element in display_values(binding.value):
                            held = _base_name(element)
                            if held is not None:
                                containers.setdefault(held, []).append(local)
            self._containers = containers
        return self._containers.get(name, [])

    # -- joint work ------------------------------------------------------------------------------
    def upstream(self, computation: Computation) -> FrozenSet[Computation]:
        """The computation and, transitively, the computations whose results it consumes."""
        known = self._upstream.get(computation)
        if known is not None:
            return known
        seen: Set[Computation] = {computation}
        pending: List[Computation] = [computation]
        while pending and len(seen) < MAX_STEPS:
            current = pending.pop()
            cached = self._upstream.get(current)
            if cached is not None and current is not computation:
                new = cached - seen
                seen |= new
                continue
            for consumed in self._inputs(current):
                if consumed not in seen:
                    seen.add(consumed)
                    pending.append(consumed)
        found = frozenset(seen)
        self._upstream[computation] = found
        return found

    def _inputs(self, computation: Computation) -> FrozenSet[Computation]:
        node = computation[1] if len(computation) > 1 else None
        if not isinstance(node, cst.CSTNode):
            return frozenset()
        if isinstance(node, cst.Call):
            operands: List[cst.BaseExpression] = [arg.value for arg in node.args]
            if isinstance(node.func, cst.Attribute):
                operands.append(node.func.value)
        elif isinstance(node, cst.Subscript):
            operands = [node.value]
        elif isinstance(node, cst.BinaryOperation):
            operands = [node.left, node.right]
        else:
            return frozenset()
        found: Set[Computation] = set()
        for operand in operands:
            found |= self.producers(operand)
        found.discard(computation)
        # A buffer's producers are every call it is handed to, the ones that read it after this one
        # included: only those that run before this computation can have made what it consumes.
        return frozenset(producer for producer in found if not self._runs_after(producer, node))

    def _runs_after(self, producer: Computation, consumer: cst.CSTNode) -> bool:
        """Whether ``producer`` starts after ``consumer`` ends in the body, and not in a loop around the
        consumer (there a later statement feeds an earlier one on the next pass)."""
        spans, outer_loops = self._spans_of()
        node = producer[1] if len(producer) > 1 else None
        if not isinstance(node, cst.CSTNode):
            return False
        consumer_span = spans.get(consumer)
        producer_span = spans.get(node)
        if consumer_span is None or producer_span is None or producer_span[0] < consumer_span[1]:
            return False
        loop = outer_loops.get(consumer)
        return loop is None or producer_span[0] >= spans[loop][1]

    def _spans_of(self) -> Tuple[Dict[cst.CSTNode, Tuple[int, int]], Dict[cst.CSTNode, cst.CSTNode]]:
        if self._spans is None:
            self._spans, self._outer_loops = _spans(self.method)
        return self._spans, self._outer_loops

    def separate_groups(self, slots: Sequence[FrozenSet[Computation]]) -> List[List[int]]:
        """The computed slots (by position in ``slots``) grouped into joint work: two slots are in one
        group when a producer of one is in the other's backward slice, directly or through others.

        A slot whose whole work is a shared intermediate (every producer of it in the slices of the slots
        it is joint with) that feeds two slots not joint with each other links no group to another: the
        later work of each of those is its own (separate products of one prepared gradient), and only the
        shared part is needed whichever gradient is wanted. It joins the group of one slot it feeds.

        A producer of a slot that another producer of the same slot consumes (``grad_x = g.clone()``,
        then ``grad_x = grad_x * w``: the names' bindings are merged) is a step on the way, not a result
        of its own: only the last steps of a slot are compared with the other slots' slices, so a cheap
        preparation (``g = grad.mean(0) * n``) both gradients start from does not join them."""
        slots = [self._last_steps(producers) for producers in slots]
        computed = [index for index, producers in enumerate(slots) if producers]
        parent = {index: index for index in computed}

        def root(index: int) -> int:
            while parent[index] != index:
                parent[index] = parent[parent[index]]
                index = parent[index]
            return index

        slices = {index: frozenset().union(*(self.upstream(p) for p in slots[index])) for index in computed}
        joint: Dict[int, List[int]] = {index: [] for index in computed}
        for position, first in enumerate(computed):
            for second in computed[position + 1:]:
                if slots[first] & slices[second] or slots[second] & slices[first]:
                    joint[first].append(second)
                    joint[second].append(first)
        shared = {index for index in computed if self._only_shared_work(index, slots, slices, joint)}
        for index in computed:
            for other in joint[index]:
                if index not in shared and other not in shared:
                    parent[root(index)] = root(other)
        for index in sorted(shared):
            fed = [other for other in joint[index] if other not in shared]
            if fed:
                parent[root(index)] = root(fed[0])
        groups: Dict[int, List[int]] = {}
        for index in computed:
            groups.setdefault(root(index), []).append(index)
        return list(groups.values())

    def _last_steps(self, producers: FrozenSet[Computation]) -> FrozenSet[Computation]:
        """``producers`` without those of a single result that another of them consumes (and that do not
        consume it in turn, as the steps of a loop do). A call yielding several results stays: the
        gradients it yields are joint however each is finished."""
        upstream = {producer: self.upstream(producer) for producer in producers}
        last = frozenset(
            producer for producer in producers
            if producer in self.several_results or not any(
                other != producer and producer in upstream[other] and other not in upstream[producer]
                for other in producers
            )
        )
        return last or producers

    @staticmethod
    def _only_shared_work(
        index: int,
        slots: Sequence[FrozenSet[Computation]],
        slices: Dict[int, FrozenSet[Computation]],
        joint: Dict[int, List[int]],
    ) -> bool:
        """Whether every producer of slot ``index`` is in the slices of the slots it is joint with, two of
        which are not joint with each other (``ds`` filled by the launch whose other buffers feed the
        separate products of two weights' gradients)."""
        partners = joint[index]
        if len(partners) < 2:
            return False
        if not slots[index] <= frozenset().union(*(slices[other] for other in partners)):
            return False
        return any(
            second not in joint[first]
            for position, first in enumerate(partners)
            for second in partners[position + 1:]
        )


def _key(node: cst.BaseExpression) -> Hashable:
    """How producers() memoises a value: a name by its text (one history per local), else the node."""
    return ("name", node.value) if isinstance(node, cst.Name) else node


def _spans(method: Method) -> Tuple[Dict[cst.CSTNode, Tuple[int, int]], Dict[cst.CSTNode, cst.CSTNode]]:
    """Each node of the method body (nested scopes excluded) with its pre-order span: its own index and
    the index after its last descendant; and for the nodes inside a ``for`` or ``while``, the outermost."""
    spans: Dict[cst.CSTNode, Tuple[int, int]] = {}
    outer_loops: Dict[cst.CSTNode, cst.CSTNode] = {}
    if method.node is None:
        return spans, outer_loops
    counter = 0
    # (node, the outermost loop around it, whether its children were pushed): a stack, not recursion.
    stack: List[Tuple[cst.CSTNode, Optional[cst.CSTNode], bool]] = [(method.node.body, None, False)]
    starts: Dict[cst.CSTNode, int] = {}
    while stack:
        node, loop, expanded = stack.pop()
        if expanded:
            spans[node] = (starts.pop(node), counter)
            continue
        starts[node] = counter
        counter += 1
        if loop is not None:
            outer_loops[node] = loop
        stack.append((node, loop, True))
        if type(node) in _NESTED_SCOPES:
            continue
        if loop is None and (type(node) is cst.For or type(node) is cst.While):
            loop = node
        stack.extend((child, loop, False) for child in reversed(children(node)))
    return spans, outer_loops


_NESTED_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def _bound_values(name: str, provenance: Provenance) -> Tuple[List[cst.BaseExpression], FrozenSet[Computation]]:
    """The values to follow for a local name, and the computations it stands for directly."""
    method = provenance.method
    facts = method.facts
    bindings = facts.bindings.get(name, ())  # none: a parameter passed through, a global, a builtin
    values: List[cst.BaseExpression] = []
    direct: Set[Computation] = set()
    changes = [change for change in facts.in_place if change.name == name]
    for change in changes:
        if change.how == "augmented assignment" and isinstance(change.node, cst.AugAssign):
            values.append(change.node.value)  # ``dq += part``: what is accumulated into it
    for binding in bindings:
        value = binding.value
        if value is None:
            continue  # bound in a loop, a with, ``+=`` (above), ...: not followed
        if binding.index is not None:
            if isinstance(value, cst.Call) and not _is_saved_tensors(value, method):
                # One of several results of one call (a fused kernel): that call, one for all its results.
                direct.add(("call", value))
                provenance.several_results.add(("call", value))
            elif isinstance(value, cst.Name):
                values.append(value)  # ``dq, dk = grads``: a part of a local result
            continue  # unpacked from ctx.saved_tensors, a display, ...: not computed here
        if is_allocation(value, provenance.allocating):
            # A buffer: its value comes from what fills it. Nothing filling it: a placeholder, no work.
            filling = {("call", call) for call in provenance.fills(name)}
            direct |= filling
            provenance.several_results |= filling
            for change in changes:
                if change.how == "indexed assignment":
                    direct.add(("call", value))  # the buffer written part by part is allocated for this
                    if isinstance(change.node, (cst.Assign, cst.AugAssign)):
                        values.append(change.node.value)
            # ``buf.index_add_(...)``, ``buf[rows].add_(part)``: written in place, whole or in part.
            for call in provenance.in_place_calls(name):
                accumulated = _accumulated(call)
                if accumulated is not None:
                    values.append(accumulated)  # ``dq.add_(part)``: as ``dq += part``, the part's work
                else:
                    direct.add(("call", call))
            continue
        values.append(value)
    return values, frozenset(direct)


# In-place methods that add a value into the whole of their receiver (or copy it there): the receiver then
# holds that value's work, as with ``+=``, and no work of its own.
_ACCUMULATING_METHODS = frozenset({"add_", "sub_", "copy_"})


def _accumulated(call: cst.Call) -> Optional[cst.BaseExpression]:
    """What ``buf.add_(part)`` (``sub_``, ``copy_``) puts into the whole of ``buf``: ``part``."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in _ACCUMULATING_METHODS:
        return None
    if not isinstance(func.value, cst.Name):
        return None  # ``buf[rows].add_(part)``: a part written, the buffer assembled here
    return _first_argument(call)


def _base_name(node: cst.BaseExpression) -> Optional[str]:
    """The local a value is a part of: ``buf`` for ``buf``, ``buf[i]``, ``buf[i][:, 0]``."""
    while isinstance(node, cst.Subscript):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def _first_argument(call: cst.Call) -> Optional[cst.BaseExpression]:
    if call.args and not call.args[0].star and call.args[0].keyword is None:
        return call.args[0].value
    return None


def _subject(call: cst.Call) -> Optional[cst.BaseExpression]:
    """The receiver of a method call, else the first positional argument."""
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.value
    return _first_argument(call)


def _is_saved_tensors(value: Optional[cst.BaseExpression], method: Method) -> bool:
    """``ctx.saved_tensors`` (or a call over it, such as ``map(f, ctx.saved_tensors)``): saved state."""
    if isinstance(value, cst.Attribute):
        return value.attr.value in ("saved_tensors", "saved_variables") and is_ctx_read(value.value, method)
    if isinstance(value, cst.Call):
        return any(_is_saved_tensors(arg.value, method) for arg in value.args)
    return False
