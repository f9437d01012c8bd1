"""Resolving names to dotted paths through a module's imports, without libcst's scope analysis.

libcst's QualifiedNameProvider costs about ten times the parse. A linter for one base class needs
only the import table: which local name stands for which module or object.
"""

from __future__ import annotations

import ast
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple


# A local name bound by something other than an import (a class, def or assignment): whatever it
# was imported as, it may no longer be that.
LOCAL_BINDING = "<local>"

# What ``from torch.autograd import *`` and ``from torch.autograd.function import *`` bring in.
STAR_EXPORTS: Dict[str, Sequence[str]] = {
    "torch.autograd": ("Function", "NestedIOFunction"),
    "torch.autograd.function": ("Function", "InplaceFunction", "NestedIOFunction", "once_differentiable"),
    "torch.nn.functional": (),
}


def module_of_file(filename: str) -> List[str]:
    """Path components of the file's module, used to resolve relative imports (``from .function``).

    Only the trailing components matter: a relative import inside ``.../torch/autograd/x.py`` that
    names ``.function`` resolves to ``...torch.autograd.function``, which ends in a known module.
    """
    parts = filename.replace("\\", "/").split("/")
    if not parts or not parts[-1].endswith(".py"):
        return []
    parts[-1] = parts[-1][: -len(".py")]  # a package's ``__init__`` stays: level 1 strips it
    return [part for part in parts if part and part != "."]


def resolve_relative(file_module: Sequence[str], level: int, module: Optional[str]) -> Optional[str]:
    if level > len(file_module):
        return None
    package = list(file_module[: len(file_module) - level])
    if module:
        package.extend(module.split("."))
    return ".".join(package) if package else None


# Public re-exports, so that two spellings of one class do not look like a conflict.
CANONICAL = {
    "torch.autograd.Function": "torch.autograd.function.Function",
    "torch.autograd.NestedIOFunction": "torch.autograd.function.NestedIOFunction",
}

MODULE, NESTED, FALLBACK = 0, 1, 2


class ImportTable:
    """Local name -> every dotted path it is bound to, by how binding it is.

    Module-level bindings decide; names bound only inside functions or classes come next (a class in
    a function may use the function's imports); bindings in ``except`` handlers are fallbacks, used
    only when nothing else binds the name. Within a level, every binding must agree.
    """

    def __init__(self) -> None:
        self._targets: Tuple[Dict[str, Set[str]], ...] = ({}, {}, {})
        self.level = MODULE

    def bind(self, name: str, target: str) -> None:
        self._targets[self.level].setdefault(name, set()).add(CANONICAL.get(target, target))

    def resolve_name(self, name: str) -> Optional[str]:
        """The one dotted path ``name`` stands for; None when unbound by imports, or ambiguous."""
        for level in self._targets:
            targets = level.get(name)
            if targets is not None:
                if len(targets) != 1:
                    return None
                (target,) = targets
                return None if target == LOCAL_BINDING else target
        return None

    def resolve_dotted(self, dotted: str) -> Optional[str]:
        head, _, rest = dotted.partition(".")
        target = self.resolve_name(head)
        if target is None:
            return None
        return f"{target}.{rest}" if rest else target

    @classmethod
    def from_ast(cls, statements: Iterable[Tuple[ast.stmt, bool, bool]], filename: str) -> "ImportTable":
        """From ``(statement, nested, in_except_handler)`` triples."""
        table = cls()
        file_module: Optional[List[str]] = None
        for node, nested, fallback in statements:
            table.level = FALLBACK if fallback else NESTED if nested else MODULE
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        table.bind(alias.asname, alias.name)
                    else:
                        head = alias.name.split(".", 1)[0]
                        table.bind(head, head)
            elif isinstance(node, ast.ImportFrom):
                module: Optional[str] = node.module
                if node.level:
                    if file_module is None:
                        file_module = module_of_file(filename)
                    module = resolve_relative(file_module, node.level, node.module)
                    module = _known_suffix(module)
                if module is None:
                    for alias in node.names:
                        table.bind(alias.asname or alias.name, LOCAL_BINDING)
                    continue
                for alias in node.names:
                    if alias.name == "*":
                        for exported in STAR_EXPORTS.get(module, ()):
                            table.bind(exported, f"{module}.{exported}")
                    else:
                        table.bind(alias.asname or alias.name, f"{module}.{alias.name}")
            elif isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                table.bind(node.name, LOCAL_BINDING)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for name in _assigned_names(target):
                        table.bind(name, LOCAL_BINDING)
        return table


def _known_suffix(module: Optional[str]) -> Optional[str]:
    """Shorten ``a.b.torch.autograd.function`` to ``torch.autograd.function`` for matching."""
    if module is None:
        return None
    parts = module.split(".")
    for index in range(len(parts) - 1, -1, -1):
        if parts[index] == "torch":
            return ".".join(parts[index:])
    return module


def _assigned_names(target: ast.expr) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _assigned_names(element)
    elif isinstance(target, ast.Starred):
        yield from _assigned_names(target.value)


def ast_dotted(node: ast.expr) -> Optional[str]:
    """``a.b.c`` for a chain of names and attributes, else None."""
    parts: List[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))
