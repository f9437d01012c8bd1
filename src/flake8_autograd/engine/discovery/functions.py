"""Finding the autograd Function classes of a module from flake8's ``ast`` tree.

flake8 has already built the ``ast`` tree, so everything here is free of parsing. Only statements
are walked (classes and imports are statements), never expressions, which keeps the cost on files
without any Function class next to nothing.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple, Union

from ...core.settings import DEFAULT_SETTINGS, Settings
from ..syntax.names import ImportTable, ast_dotted

TORCH_FUNCTION_BASES: FrozenSet[str] = frozenset(
    {
        "torch.autograd.Function",
        "torch.autograd.NestedIOFunction",
        "torch.autograd.function.Function",
        "torch.autograd.function.InplaceFunction",
        "torch.autograd.function.NestedIOFunction",
    }
)

# How many levels of local inheritance are followed.
MAX_LOCAL_DEPTH = 100

_BODY_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


@dataclass(frozen=True)
class Place:
    """Where a statement sits."""

    classes: Tuple[ast.ClassDef, ...] = ()  # the classes it is nested in (innermost last)
    nested: bool = False  # inside a function or class body, not at module level
    fallback: bool = False  # inside an ``except`` handler (``except ImportError: Function = object``)
    in_function: bool = False  # inside a function, at any depth


def iter_statements(statements: Sequence[ast.AST]) -> Iterator[Tuple[ast.AST, Place]]:
    """Every statement at any depth, with where it sits."""
    stack: List[Tuple[ast.AST, Place]] = [(node, Place()) for node in reversed(statements)]
    while stack:
        node, place = stack.pop()
        yield node, place
        inner = place
        if isinstance(node, ast.ClassDef):
            inner = Place(place.classes + (node,), True, place.fallback, place.in_function)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner = Place((), True, place.fallback, True)  # a class in a function is not reachable as Outer.Inner
        elif isinstance(node, ast.ExceptHandler):
            inner = Place(place.classes, place.nested, True, place.in_function)
        for name in _BODY_FIELDS:
            block = getattr(node, name, None)
            if block:
                for child in reversed(block):
                    stack.append((child, inner))


@dataclass
class ClassSite:
    """A class statement found in the module, before any libcst parsing."""

    node: ast.ClassDef
    qualname: str
    base_names: List[Optional[str]]  # dotted spelling of each base; None for anything else
    is_function: bool = False
    local_bases: List["ClassSite"] = field(default_factory=list)
    has_foreign_base: bool = False  # a base that is neither local nor torch's Function
    in_function: bool = False  # defined inside a function (at any depth): its bare names are read there first

    @property
    def name(self) -> str:
        return self.node.name


class Discovery:
    """The classes of one module and which of them are autograd Functions."""

    def __init__(self, tree: ast.Module, filename: str, settings: Settings = DEFAULT_SETTINGS) -> None:
        statements = list(iter_statements(tree.body))
        self.imports = ImportTable.from_ast(
            ((node, place.nested, place.fallback) for node, place in statements if isinstance(node, ast.stmt)),
            filename,
        )
        self._extra_bases = settings.function_bases  # the project's own bases, besides torch's
        self.classes: List[ClassSite] = []
        self._by_name: Dict[str, List[ClassSite]] = {}
        self._subclassed: Optional[Set[int]] = None
        for node, place in statements:
            if isinstance(node, ast.ClassDef):
                qualname = ".".join([c.name for c in place.classes] + [node.name])
                site = ClassSite(
                    node, qualname, [ast_dotted(base) for base in node.bases], in_function=place.in_function
                )
                self.classes.append(site)
                self._by_name.setdefault(node.name, []).append(site)
                if qualname != node.name:
                    self._by_name.setdefault(qualname, []).append(site)
        self._resolve_all()

    @property
    def function_classes(self) -> List[ClassSite]:
        return [site for site in self.classes if site.is_function]

    def has_local_subclass(self, site: ClassSite) -> bool:
        if self._subclassed is None:
            self._subclassed = {id(base) for other in self.classes for base in other.local_bases}
        return id(site) in self._subclassed

    def local_class(self, dotted: str) -> Optional[ClassSite]:
        """The one local class this name refers to; None when there is none or several."""
        candidates = self._by_name.get(dotted)
        if candidates and len(candidates) == 1:
            return candidates[0]
        return None

    def is_framework_base(self, dotted: str) -> bool:
        resolved = self.imports.resolve_dotted(dotted)
        if resolved is not None and resolved in TORCH_FUNCTION_BASES:
            return True
        for extra in self._extra_bases:
            if "." not in extra:
                if dotted == extra:
                    return True
            elif resolved is not None and (resolved == extra or resolved.endswith("." + extra)):
                return True
        return False

    def _resolve_all(self) -> None:
        state: Dict[int, Union[bool, None]] = {}  # id(site) -> verdict; None while in progress

        def resolve(site: ClassSite, depth: int = 0) -> bool:
            key = id(site)
            if key in state:
                return bool(state[key])  # a cycle of local bases: not a Function through it
            if depth > MAX_LOCAL_DEPTH:
                return False  # generated hierarchies this deep are not worth a stack overflow
            state[key] = None
            verdict = False
            for dotted in site.base_names:
                if dotted is None:
                    site.has_foreign_base = True
                    continue
                if dotted == "object":
                    continue
                if self.is_framework_base(dotted):
                    verdict = True
                    continue
                candidates = self._by_name.get(dotted)
                if candidates and self.imports.resolve_dotted(dotted) is None:
                    if len(candidates) == 1:
                        site.local_bases.append(candidates[0])
                        if resolve(candidates[0], depth + 1):
                            verdict = True
                        continue
                    if all(resolve(candidate, depth + 1) for candidate in candidates):
                        verdict = True
                site.has_foreign_base = True
            state[key] = verdict
            site.is_function = verdict
            return verdict

        for site in self.classes:
            resolve(site)
