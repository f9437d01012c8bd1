"""AGF111 reports (and ``--fix`` rewrites) a name only where it stands for the Function class.

A parameter, a local assignment or any other binding of the same name in the scope it is read from is
something else, and so is a module-level name bound again beside the class statement: those stay
silent, and ``Fn()(x)`` there is never rewritten to ``Fn.apply(x)`` (a different call). Also: columns
count characters, and the work for one function grows linearly with its calls.
"""

from __future__ import annotations

import ast
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import Callable, Iterator, List, Tuple

import pytest

from conftest import lint, source_lines
from flake8_autograd.checking.checker import check_module
from flake8_autograd.core.settings import Settings
from flake8_autograd.engine.syntax.scopes import ModuleScopes
from flake8_autograd.core.fixes import computing_fixes
from test_command import run, write
from test_robustness import flake8

FN = textwrap.dedent(
    """\
    import torch
    import torch.nn as nn


    class Fn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    """
)


def agf111_lines(source: str) -> List[int]:
    """The lines AGF111 reports in ``FN`` followed by ``source``."""
    return [finding.line for finding in lint(FN + textwrap.dedent(source), preview=True) if finding.code == "AGF111"]


def fixable_agf111_lines(source: str) -> List[int]:
    with computing_fixes():
        findings = lint(FN + textwrap.dedent(source), preview=True)
    return [finding.line for finding in findings if finding.code == "AGF111" and finding.fix is not None]


# Each case binds ``Fn`` to something else where ``Fn()(x)`` or ``Fn.forward(...)`` reads it.
SHADOWED = {
    "parameter": "def run(Fn, x):\n    return Fn()(x) + Fn.forward(None, x)",
    "keyword-only and star parameters": (
        "def run(x, *Fn):\n    return Fn()(x)\ndef go(x, *, Fn):\n    return Fn()(x)"
    ),
    "lambda parameter": "run = lambda Fn, x: Fn()(x)",
    "local assignment": "def run(x):\n    Fn = nn.Identity\n    return Fn()(x)",
    "assignment after the call": "def run(x):\n    y = Fn()(x)\n    Fn = None\n    return y",
    "augmented assignment": "def run(x):\n    y = Fn()(x)\n    Fn += 1\n    return y",
    "annotation without value": "def run(x):\n    Fn: type\n    return Fn()(x)",
    "tuple target": "def run(pair, x):\n    Fn, y = pair\n    return Fn()(x)",
    "for target": "def run(layers, x):\n    for Fn in layers:\n        x = Fn()(x)\n    return x",
    "with target": "def run(context, x):\n    with context as Fn:\n        return Fn()(x)",
    "except target": "def run(x):\n    try:\n        pass\n    except ValueError as Fn:\n        return Fn()(x)",
    "import": "def run(x):\n    from torch.nn import Identity as Fn\n    return Fn()(x)",
    "plain import": "def run(x):\n    import Fn\n    return Fn.forward(None, x)",
    "nested def": "def run(x):\n    def Fn():\n        return abs\n    return Fn()(x)",
    "nested class": "def run(x):\n    class Fn(nn.Identity):\n        pass\n    return Fn()(x)",
    "comprehension variable": "def run(layers, x):\n    return [Fn()(x) for Fn in layers]",
    "nested comprehension": "def run(groups, x):\n    return {k: [Fn()(x) for Fn in g] for k, g in groups}",
    "generator variable": "def run(layers, x):\n    return list(Fn.forward(None, x) for Fn in layers)",
    "walrus": "def run(make, x):\n    if (Fn := make()):\n        return Fn()(x)",
    "walrus in a comprehension": "def run(makes, x):\n    [(Fn := m) for m in makes]\n    return Fn()(x)",
    "del": "def run(x):\n    y = Fn()(x)\n    del Fn\n    return y",
    "closure": "def outer():\n    Fn = nn.Identity\n    def run(x):\n        return Fn()(x)\n    return run",
    "nonlocal": (
        "def outer():\n    Fn = None\n    def run(x):\n        nonlocal Fn\n        Fn = nn.Identity\n"
        "        return Fn()(x)\n    return run"
    ),
    "class body": "class Holder:\n    Fn = nn.Identity\n    made = Fn()",
    "method local": "class Model:\n    def go(self, x):\n        Fn = nn.Identity\n        return Fn()(x)",
    "module rebinding": "Fn = nn.Identity\ndef run(x):\n    return Fn()(x)",
    "conditional module rebinding": (
        "if torch.cuda.is_available():\n    Fn = nn.Identity\ndef run(x):\n    return Fn()(x)"
    ),
    "module for target": "def run(x):\n    return Fn()(x)\nfor Fn in []:\n    pass",
    "module import": "from torch.nn import Identity as Fn\ndef run(x):\n    return Fn()(x)",
    "module def": "def run(x):\n    return Fn()(x)\ndef Fn():\n    return abs",
    "module del": "def run(x):\n    return Fn()(x)\ndel Fn",
    "star import": "from torch.nn import *\ndef run(x):\n    return Fn()(x)",
    "global assignment": "def swap():\n    global Fn\n    Fn = nn.Identity\ndef run(x):\n    return Fn()(x)",
    "global in a class body": "class Swap:\n    global Fn\n    Fn = nn.Identity\ndef run(x):\n    return Fn()(x)",
}
if sys.version_info >= (3, 10):
    SHADOWED["match capture"] = "def run(value, x):\n    match value:\n        case Fn:\n            return Fn()(x)"
if sys.version_info >= (3, 12):
    SHADOWED["type parameter"] = "def run[Fn](x):\n    return Fn()(x)"
    # A method sees its class's type parameters (they live in a scope around the class body).
    SHADOWED["class type parameter read in a method"] = "class Other[Fn]:\n    def m(self, x):\n        return Fn()(x)"
    SHADOWED["class type parameter read in a nested function"] = (
        "class Other[Fn]:\n    def m(self, x):\n        def go():\n            return Fn()(x)\n        return go()"
    )
    SHADOWED["class type parameter read in the body"] = "class Other[Fn]:\n    made = Fn()"


@pytest.mark.parametrize("source", SHADOWED.values(), ids=SHADOWED.keys())
def test_a_name_bound_to_something_else_is_neither_reported_nor_fixed(source: str) -> None:
    assert agf111_lines(source) == []


@pytest.mark.skipif(sys.version_info < (3, 12), reason="PEP 695 type parameters parse from Python 3.12 on")
def test_another_class_type_parameter_leaves_the_module_name_reported() -> None:
    assert agf111_lines("class Other[T]:\n    def m(self, x):\n        return Fn()(x)\n") == [FN.count("\n") + 3]


def _as_if_generic(tree: ast.Module, name: str, parameter: str) -> None:
    """Give the class ``name`` of ``tree`` the type parameter ``parameter`` as Python 3.12's parser gives
    ``class name[parameter]`` one (on any version: the scopes read the attribute)."""
    node = next(node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == name)
    type_var = getattr(ast, "TypeVar", None)
    setattr(node, "type_params", [type_var(name=parameter) if type_var else SimpleNamespace(name=parameter)])


@pytest.mark.parametrize("parameter, reported", [("Fn", False), ("T", True)])
def test_a_class_type_parameter_is_seen_from_its_methods(parameter: str, reported: bool) -> None:
    """``class Other[Fn]: def m(self, x): return Fn()(x)``: ``Fn`` is the type parameter, not the module's
    Function (``class Other[T]`` leaves it the module's), read from the tree 3.12 would give."""
    source = FN + "class Other:\n    def m(self, x):\n        return Fn()(x)\n"
    tree = ast.parse(source)
    _as_if_generic(tree, "Other", parameter)
    scopes = ModuleScopes(tree, frozenset({ast.Call}))
    ((_call, scope),) = [(node, scope) for node, scope in scopes.found if isinstance(node.func, ast.Call)]
    assert (scopes.resolve(scope, "Fn") is scopes.module) is reported
    lines = source_lines(source)
    found = check_module(tree, lines, "example.py", Settings(preview=True))
    assert [finding.code for finding in found if finding.code == "AGF111"] == (["AGF111"] if reported else [])


# Each case reads the module's ``Fn`` (the line of each expected finding is marked ``# here``).
RESOLVED = {
    "unrelated local": "def run(x):\n    y = x\n    return Fn()(y)  # here",
    "comprehension variable elsewhere": "def run(xs):\n    names = [Fn for Fn in xs]\n    return Fn()(xs[0])  # here",
    "class body binding does not reach methods": (
        "class Holder:\n    Fn = nn.Identity\n    def go(self, x):\n        return Fn()(x)  # here"
    ),
    "global declaration alone": "def run(x):\n    global Fn\n    return Fn()(x)  # here",
    "closure over the module name": (
        "def outer():\n    def run(ctx, x):\n        return Fn.forward(ctx, x)  # here\n    return run"
    ),
    "default evaluated outside the function": "def run(x, Fn=Fn()):  # here\n    return Fn(x)",
    "first iterable evaluated outside the comprehension": "made = [f for Fn in [Fn()] for f in [Fn]]  # here",
    "function-local Function class": (
        "def run(x):\n    class Local(torch.autograd.Function):\n        @staticmethod\n        def forward(ctx, y):\n"
        "            return y\n    return Local()(x)  # here"
    ),
}


@pytest.mark.parametrize("source", RESOLVED.values(), ids=RESOLVED.keys())
def test_a_name_that_resolves_to_the_function_class_is_reported(source: str) -> None:
    offset = FN.count("\n")
    expected = [offset + number for number, line in enumerate(source.splitlines(), 1) if line.endswith("# here")]
    assert agf111_lines(source) == expected


def test_a_shadowed_name_beside_a_resolved_one_keeps_only_the_resolved_fix() -> None:
    source = "def run(Fn, x):\n    return Fn()(x)\ndef go(x):\n    return Fn()(x)\n"
    assert fixable_agf111_lines(source) == [FN.count("\n") + 4]


# -- through the executables ------------------------------------------------------------------------
SHADOW_FILE = FN + textwrap.dedent(
    """\

    def run(Fn, x):  # a parameter, e.g. an nn.Module class
        return Fn()(x)


    class Model:
        def go(self, x):
            Fn = torch.nn.Identity
            return Fn()(x) + Fn.forward(None, x)


    def use(x):
        return Fn()(x)
    """
)
USE_LINE = SHADOW_FILE.splitlines().index("    return Fn()(x)", SHADOW_FILE.count("\n") - 2) + 1


def test_flake8_reports_only_the_call_that_reads_the_function_class(tmp_path: Path) -> None:
    write(tmp_path, {"shadow.py": SHADOW_FILE})
    result = flake8(tmp_path, "--autograd-preview", "shadow.py")
    result.assert_clean()
    assert result.findings == [(USE_LINE, "AGF111")]


def test_diff_rewrites_only_the_call_that_reads_the_function_class(tmp_path: Path) -> None:
    write(tmp_path, {"shadow.py": SHADOW_FILE})
    result = run("--preview", "--diff", "shadow.py", cwd=tmp_path)
    removed = [line for line in result.stdout.splitlines() if line.startswith("-") and not line.startswith("---")]
    added = [line for line in result.stdout.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert removed == ["-    return Fn()(x)"] and added == ["+    return Fn.apply(x)"], result.stdout
    assert f"@@ -{USE_LINE - 3}," in result.stdout  # the hunk of the last function, not of the others


# -- columns ----------------------------------------------------------------------------------------
UNICODE_LINE = '    größe = "héllo wörld"; return Fn()(größe) + Fn.forward(object(), größe)'
UNICODE_FILE = FN + "\ndef use(x):\n" + UNICODE_LINE + "\n"


def test_columns_count_characters_not_bytes(tmp_path: Path) -> None:
    write(tmp_path, {"unicode.py": UNICODE_FILE})
    line = UNICODE_FILE.count("\n")
    columns = [UNICODE_LINE.index("Fn()") + 1, UNICODE_LINE.index("Fn.forward") + 1]  # 1-based, as reported
    expected = [f"unicode.py:{line}:{column}: AGF111" for column in columns]
    flake8_report = flake8(tmp_path, "--autograd-preview", "unicode.py").stdout.splitlines()
    command_report = run("--preview", "unicode.py", cwd=tmp_path).stdout.splitlines()
    for report in (flake8_report, command_report):
        assert [" ".join(entry.split()[:2]) for entry in report] == expected


def test_a_call_after_non_ascii_text_is_still_fixed(tmp_path: Path) -> None:
    write(tmp_path, {"unicode.py": UNICODE_FILE})
    result = run("--preview", "--diff", "unicode.py", cwd=tmp_path)
    assert "+" + UNICODE_LINE.replace("Fn()(", "Fn.apply(") in result.stdout.splitlines()


# -- size: one function holding many calls ----------------------------------------------------------
def many_calls(count: int) -> str:
    """One function with ``count`` direct forward calls, ``count`` instantiations, and a grad-state test."""
    body = ["def run(x):", "    if torch.is_grad_enabled():", "        x = Fn.apply(x)"]
    body += ["    x = Fn.forward(None, x)"] * count + ["    x = Fn()(x)"] * count + ["    return x"]
    return "\n".join(body) + "\n"


@pytest.fixture
def count_walks(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], Tuple[int, int]]:
    """(findings with a fix, ``ast.walk`` calls) while AGF111's findings and fixes are computed for a source."""

    def counted(source: str) -> Tuple[int, int]:
        calls = [0]
        original = ast.walk

        def walk(node: ast.AST) -> Iterator[ast.AST]:
            calls[0] += 1
            return original(node)

        monkeypatch.setattr(ast, "walk", walk)
        try:
            fixable = len(fixable_agf111_lines(source))
        finally:
            monkeypatch.setattr(ast, "walk", original)
        return fixable, calls[0]

    return counted


def test_the_walks_do_not_grow_with_the_calls_in_one_function(
    count_walks: Callable[[str], Tuple[int, int]],
) -> None:
    fixable_small, walks_small = count_walks(many_calls(20))
    fixable_large, walks_large = count_walks(many_calls(40))
    assert (fixable_small, fixable_large) == (20, 40)
    assert walks_small == walks_large
