"""How a module names things: what a fix must know to be sure it has seen every reader of what it changes.

A fix that moves a tensor from ``ctx.x`` into ``save_for_backward`` is only sound when nothing else reads
``x`` off the ctx (``out.grad_fn.x``, a helper handed the ctx, ``getattr(ctx, "x")``) and nothing else
drives the class's methods with a ctx of its own (``Inner.forward(ctx, ...)`` inside another Function, a
test calling ``Fn.forward(SimpleNamespace(), ...)``, a subclass made with ``type(...)``). One walk of the
module's ``ast`` tree answers all of these, for every class and attribute, in time linear in the module.
"""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass
from typing import FrozenSet, List, Set


@dataclass(frozen=True)
class NameUses:
    """Counts over the whole module (nested scopes, every statement)."""

    attributes: "Counter[str]"  # ``<anything>.name``: how many times each attribute name is written
    identifier_strings: FrozenSet[str]  # string constants that could name an attribute (getattr, setattr)
    besides_apply: "Counter[str]"  # a name read or bound other than as ``Name.apply``
    keywords: "Counter[str]"  # ``f(name=...)``: how many calls pass each keyword

    def attribute_count(self, attribute: str) -> int:
        return self.attributes[attribute]

    def named_as_string(self, attribute: str) -> bool:
        return attribute in self.identifier_strings

    def only_applied(self, name: str) -> bool:
        """Whether the module names ``name`` only as ``name.apply`` (its ``class`` statement aside)."""
        return self.besides_apply[name] == 0


def name_uses(tree: ast.AST) -> NameUses:
    attributes: "Counter[str]" = Counter()
    strings: Set[str] = set()
    names: "Counter[str]" = Counter()
    applied: Set[int] = set()  # the ``Name`` nodes read as ``Name.apply``
    keywords: "Counter[str]" = Counter()
    all_names: List[ast.Name] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword):
            if node.arg is not None:
                keywords[node.arg] += 1
        elif isinstance(node, ast.Attribute):
            attributes[node.attr] += 1
            if node.attr == "apply" and isinstance(node.value, ast.Name):
                applied.add(id(node.value))
        elif isinstance(node, ast.Name):
            all_names.append(node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            strings.add(node.value)
    for name in all_names:
        if id(name) not in applied:
            names[name.id] += 1
    return NameUses(attributes, frozenset(strings), names, keywords)
