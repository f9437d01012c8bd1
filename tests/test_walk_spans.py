"""The shared walk of a method body answers "what is below this node" as ``walk_scope`` does.

Rules ask which statements hold a save, a store, a binding or a gradient test; the engine answers from
one walk per method (``walk_scope_spans``, ``Method.span``/``below``) instead of walking each statement
again. These tests hold that answer to ``walk_scope`` itself, node by node, over every fixture.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator, List

import libcst as cst
import pytest

from flake8_autograd.engine.models.class_model import ClassModel, Method
from flake8_autograd.engine.syntax.walk import SCOPE_NODES, walk, walk_scope, walk_scope_spans

FIXTURES = Path(__file__).parent / "fixtures"


def _functions(module: cst.Module) -> Iterator[cst.FunctionDef]:
    for node in walk(module):
        if isinstance(node, cst.FunctionDef):
            yield node


def _fixture_functions() -> List[cst.FunctionDef]:
    found: List[cst.FunctionDef] = []
    for path in sorted(FIXTURES.rglob("*.py")):
        found.extend(_functions(cst.parse_module(path.read_text())))
    return found


def test_spans_match_walk_scope_on_every_fixture_function() -> None:
    functions = _fixture_functions()
    assert len(functions) > 500  # the fixtures hold many bodies of every shape
    for function in functions:
        nodes, ends = walk_scope_spans(function.body)
        assert nodes == tuple(walk_scope(function.body))
        for index, node in enumerate(nodes):
            if isinstance(node, SCOPE_NODES):
                assert ends[index] == index + 1  # the walk does not enter a nested scope
            else:
                assert nodes[index + 1:ends[index]] == tuple(walk_scope(node))


SOURCE = """
class Scale(Function):
    @staticmethod
    def forward(ctx, x, flag):
        if flag:
            ctx.save_for_backward(x)
        else:
            y = [v * 2 for v in x]
            return y
        def helper(z):
            return z + 1
        return x
        ctx.save_for_backward(x)
"""


def _method() -> Method:
    module = cst.parse_module(SOURCE)
    forward = next(node for node in _functions(module) if node.name.value == "forward")
    model = ClassModel.__new__(ClassModel)  # the method reads nothing of its class here
    return Method("forward", model, forward)


def test_below_is_walk_scope_for_body_nodes_nested_scopes_and_unreached_code() -> None:
    method = _method()
    assert method.node is not None
    statements = list(method.node.body.body)  # type: ignore[attr-defined]
    unreached = statements[-1]  # after the return: not in the shared walk
    helper = statements[1]
    assert isinstance(helper, cst.FunctionDef)
    for node in [*method.body_nodes(), helper, unreached, *walk_scope(unreached)]:
        assert tuple(method.below(node)) == tuple(walk_scope(node))
    assert method.span(helper) is None  # walk_scope enters a nested function's body; the shared walk does not
    assert method.span(unreached) is None
    test = statements[0].test  # type: ignore[attr-defined]
    assert method.names_in(test) == {"flag"}
    assert method.name_count("ctx") == 3  # the parameter and both saves, the unreached one too
    assert method.name_count("z") == 2


@pytest.mark.parametrize("depth", [2000])
def test_spans_take_no_stack_on_deep_code(depth: int) -> None:
    expression = "x" + " + x" * depth
    function = cst.parse_module(f"def f(x):\n    return {expression}\n").body[0]
    assert isinstance(function, cst.FunctionDef)
    nodes, ends = walk_scope_spans(function.body)
    assert ends[0] == len(nodes)  # the one line holds everything


def test_the_scope_walk_finds_every_call_and_assignment_of_the_module() -> None:
    """The module's apply call sites are read from the scope walk's calls and assignments: it must find every
    one an ``ast.walk`` finds, nested functions, classes, lambdas and comprehensions included."""
    from flake8_autograd.engine.analysis.module_analysis import _SCOPE_WALK_KEEPS
    from flake8_autograd.engine.syntax.scopes import ModuleScopes

    for path in sorted(FIXTURES.rglob("*.py")):
        tree = ast.parse(path.read_text())
        walked = {id(node) for node in ast.walk(tree) if isinstance(node, (ast.Call, ast.Assign))}
        found = {id(node) for node, _scope in ModuleScopes(tree, _SCOPE_WALK_KEEPS).found
                 if isinstance(node, (ast.Call, ast.Assign))}
        assert found == walked, path.name
