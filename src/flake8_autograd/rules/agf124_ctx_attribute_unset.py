"""AGF124: a ctx attribute read in backward (or vjp, jvp) that forward / setup_context never sets."""

from __future__ import annotations

import difflib
from typing import Dict, Iterator, List, Optional, Set, Tuple

import libcst as cst

from ..engine.analysis.module_analysis import Analysis
from ..engine.facts.ctx.attributes import (
    TORCH_CTX_ATTRIBUTES, CtxAttributes, ctx_attributes, guarded_nodes, unset_exit,
)
from ..engine.models.custom_op_model import is_custom_op
from ..engine.models.class_model import ClassModel, Method
from ..engine.facts.ctx.saved_paths import SAVING_CALLS, returns_a_value, unconditional
from .base import Finding, Rule, beside

# The methods whose ctx is the graph node forward's ctx became.
_READERS = ("backward", "vjp", "jvp")
# Decorators known to call the method with the same ctx and to store nothing on it but what
# TORCH_CTX_ATTRIBUTES lists (custom_fwd stores _dtype and _fwd_used_autocast). Any other may store.
_PLAIN_DECORATORS = frozenset({"staticmethod", "classmethod", "once_differentiable", "custom_fwd", "custom_bwd"})
# The one base a class may have: any other (a project base, a mixin) may supply a forward that stores.
_FUNCTION_BASES = frozenset({"torch.autograd.Function", "torch.autograd.function.Function"})


class CtxAttributeUnsetRule(Rule):
    code = "AGF124"
    applies_to_custom_ops = True
    name = "ctx attribute read in backward that forward never sets"
    message = "{method} reads ctx.{attribute}, which {setter} never sets; set ctx.{attribute} in {setter}{hint}"
    class_attribute = "{method} reads ctx.{attribute}, a class attribute; read {cls}.{attribute}"
    partial = "{method} reads ctx.{attribute}, unset if {setter} returns at line {line}; set it on every path"
    invalid = (
        """
        class Scale(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, factor):
                ctx.scal = factor
                return x * factor

            @staticmethod
            def backward(ctx, grad_output):
                return grad_output * ctx.scale, None
        """,
        """
        class Triple(torch.autograd.Function):
            FACTOR = 3.0

            @staticmethod
            def forward(ctx, x):
                return x * Triple.FACTOR

            @staticmethod
            def backward(ctx, grad_output):
                return grad_output * ctx.FACTOR
        """,
    )
    valid = (
        """
        class Scale(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, factor):
                ctx.scale = factor
                return x * factor

            @staticmethod
            def backward(ctx, grad_output):
                return grad_output * ctx.scale, None
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        setter = _setter(model, analysis)
        if setter is None:
            return
        readers = [
            method for name in _READERS for method in [model.own_methods.get(name)]
            if method is not None and method.node is not None and method.ctx_name is not None
        ]
        uses: Dict[Method, Optional[CtxAttributes]] = {method: ctx_attributes(method) for method in [setter, *readers]}
        if any(use is None or use.opaque for use in uses.values()):
            return
        if any(not _plain_decorators(method) for method in uses):
            return
        if not returns_a_value(setter if setter.name == "forward" else model.own_methods["forward"]):
            return
        if analysis.backward_never_runs(model):
            return
        probed, stored_by_readers = _other_uses(uses)
        outside: Optional[Set[str]] = None  # what the module stores on graph nodes, asked before a report
        set_by_setter = uses[setter].stores  # type: ignore[union-attr]
        prepares_nothing: Optional[bool] = None
        for reader in readers:
            reader_use = uses[reader]
            assert reader_use is not None
            guarded: Optional[Set[int]] = None
            for attribute, loads in reader_use.loads.items():
                if attribute in TORCH_CTX_ATTRIBUTES or attribute.startswith("__") or attribute in probed:
                    continue
                if attribute in stored_by_readers:
                    continue  # backward sets it itself (or jvp does): the order is not followed here
                if outside is None:
                    found = analysis.graph_node_stores()
                    outside = set(found) if found is not None else None
                    if outside is None:
                        return  # a graph node gets attributes by computed names: any may be set
                if attribute in outside:
                    continue  # ``out.grad_fn.attr = v``: set on the node backward receives, from outside
                if guarded is None:
                    guarded = guarded_nodes(reader)
                reached = [load for load in loads if id(load) not in guarded]
                if attribute not in set_by_setter:
                    if not reached:
                        continue  # inside a try: a handler may expect the AttributeError
                    yield self._never_set(model, setter, reader, attribute, reached[0], sorted(set_by_setter))
                    continue
                if prepares_nothing is None:
                    prepares_nothing = _inference_path(setter, uses[setter])  # type: ignore[arg-type]
                exit_ = None if prepares_nothing else unset_exit(setter, set_by_setter[attribute])
                if exit_ is None:
                    continue
                for load in unconditional(reader, reached)[:1]:
                    line, _ = setter.position(exit_)
                    yield self.report(reader, load, self.partial, method=reader.qualname, attribute=attribute,
                                      setter=beside(setter, reader), line=line)

    def _never_set(
        self, model: ClassModel, setter: Method, reader: Method, attribute: str, load: cst.Attribute,
        stored: List[str],
    ) -> Finding:
        if attribute in model.class_attributes or attribute in model.own_methods:
            return self.report(reader, load, self.class_attribute, method=reader.qualname, attribute=attribute,
                               cls=model.name)
        close = difflib.get_close_matches(attribute, stored, n=1, cutoff=0.75)
        hint = f", or read ctx.{close[0]}" if close else ""
        return self.report(reader, load, method=reader.qualname, attribute=attribute, setter=beside(setter, reader),
                           hint=hint)


def _other_uses(uses: Dict[Method, Optional[CtxAttributes]]) -> Tuple[Set[str], Set[str]]:
    """Attributes probed by name in any method, and those stored by a method other than the setter."""
    probed: Set[str] = set()
    stored_by_readers: Set[str] = set()
    for method, use in uses.items():
        assert use is not None
        probed |= use.probed
        if method.name in _READERS:
            stored_by_readers |= set(use.stores)
    return probed, stored_by_readers


def _inference_path(setter: Method, use: CtxAttributes) -> bool:
    """Whether ``setter`` has a path that stores nothing on ctx and saves nothing (``if training: ...`` around
    all of it, an early ``return`` for inference before any of it): a mode the author runs without backward,
    where a missing attribute is a choice, not a slip."""
    preparations: List[cst.CSTNode] = [node for nodes in use.stores.values() for node in nodes]
    preparations += [call for name in SAVING_CALLS for call in setter.facts.ctx_calls.get(name, [])]
    return unset_exit(setter, preparations) is not None


def _setter(model: ClassModel, analysis: Analysis) -> Optional[Method]:
    """The method that stores on the ctx backward receives (forward, or setup_context in that style),
    when it is certainly the only code that can: the class's one base is torch's Function, no class
    decorator or local subclass, and the method is a static or class method of the class itself."""
    if model.has_unknown_base or model.bases or model.site.node.decorator_list:
        return None
    if analysis.discovery.has_local_subclass(model.site):
        return None
    bases = model.site.base_names
    # An operator's registration: the Function torch.library generates, whose base is torch's whatever is imported.
    if not is_custom_op(model) and (
        not bases or any(base is None or analysis.imports.resolve_dotted(base) not in _FUNCTION_BASES for base in bases)
    ):
        return None
    forward = model.own_methods.get("forward")
    if forward is None or forward.node is None:
        return None
    if model.setup_context_style:
        if forward.ctx_name is not None:
            return None  # a leftover ctx in forward (AGF112): which one stores is not clear
        setter = model.own_methods.get("setup_context")
    else:
        setter = forward
    if setter is None or setter.node is None or setter.ctx_name is None:
        return None
    if not (setter.is_static or setter.is_classmethod) or not (forward.is_static or forward.is_classmethod):
        return None  # torch refuses the class before any backward (AGF001)
    return setter


def _plain_decorators(method: Method) -> bool:
    return all(decorator.rsplit(".", 1)[-1] in _PLAIN_DECORATORS for decorator in method.decorators)
