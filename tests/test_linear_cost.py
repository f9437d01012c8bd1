"""Linear cost where generated inputs once showed super-linear growth, with the findings unchanged.

- A class's apply calls and those of its local subclasses: the subclasses are indexed once per module,
  not found by a scan of every class for each call (quadratic in the classes of a module).
- The module-wide facts AGF134 and AGF135 read are worked out once per module, not once per operator;
  so are the attributes AGF124 finds stored on graph nodes, not once per class or operator.
- The node around each node of a backward is mapped once per method, not once per ctx attribute traced.
- A method's nodes are placed by at most two passes over it (one that stops at the first node asked for,
  then one over the whole method), not one pass per finding; AGF004's and AGF116's fixes find the return
  of a finding through positions read once per method.

Each test checks the count of the work (no timings), and that the findings, their messages, positions
and fixes, and the fixed text, are those the earlier way of working them out gives.
"""

from __future__ import annotations

import ast
from typing import Callable, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

import libcst as cst
import pytest

from conftest import source_lines
from flake8_autograd.adapters.command import fixer
from flake8_autograd.adapters.command.runner import CheckOptions, lint_lines
from flake8_autograd.engine.analysis import module_analysis as analysis_module
from flake8_autograd.engine.analysis import buffers
from flake8_autograd.engine.facts.ctx import attributes as ctx_attributes
from flake8_autograd.engine.facts import module_facts, op_facts
from flake8_autograd.engine.syntax import source
from flake8_autograd.engine.models.class_model import Method
from flake8_autograd.engine.facts.module_facts import ApplyCall, ModuleFacts
from flake8_autograd.core.fixes import Fix
from flake8_autograd.rules import agf004_gradient_count, agf116_list_return

PREVIEW = CheckOptions(preview=True)
HEADER = "import contextvars\nimport threading\n\nimport torch\n"


# -- generated inputs ------------------------------------------------------------------------------------
def families(count: int) -> str:
    """Function classes with local subclasses (two levels, one of them with two local bases), applied with
    literals, scalar-annotated parameters and unknown values: AGF003 trusts or not each class's callers."""
    parts = [HEADER]
    for index in range(count):
        passed = ("x", "3", "scale")[index % 3]
        parts.append(f'''

class Base{index}(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, step: torch.Tensor):
        ctx.step = step
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.step, None


class Child{index}(Base{index}):
    pass


class Grandchild{index}(Child{index}, Base{index}):
    pass


def run{index}(x, scale: float):
    return Child{index}.apply(x, {passed}) + Grandchild{index}.apply(x, x) + Base{index}.apply(x, x)
''')
    return "".join(parts)


def stores(count: int) -> str:
    """One forward keeping many tensors on ctx, read in backward: some filled in place (buffers), some
    next to an attribute nobody sets (AGF124) or that the module sets on the graph node."""
    params = ", ".join(f"p{index}: torch.Tensor" for index in range(count))
    kept = "".join(f"        ctx.p{index} = p{index}\n" for index in range(count))
    grads = "".join(
        (
            f"            ctx.p{index}.zero_() if ctx.p{index} is not None else grad,\n",
            f"            grad * ctx.p{index} * ctx.unset{index},\n",
            f"            grad * ctx.p{index},\n",
        )[index % 3]
        for index in range(count)
    )
    return HEADER + (
        "\n\nclass Keep(torch.autograd.Function):\n"
        f"    @staticmethod\n    def forward(ctx, {params}):\n{kept}        return p0 * 2\n\n"
        f"    @staticmethod\n    def backward(ctx, grad):\n        return (\n{grads}        )\n"
        "\n\ndef run(x, y):\n    out = Keep.apply(x, y)\n    out.grad_fn.unset1 = 1\n    return out\n"
    )


def operators(count: int) -> str:
    """Custom ops whose backward or setup_context read module state: a global some function assigns,
    a ContextVar, a threading.local, and annotations naming a builtin type the module rebinds."""
    parts = [HEADER, '''
SCALE = 1.0
current = contextvars.ContextVar("current")
local_state = threading.local()


def set_scale(value):
    global SCALE
    SCALE = value
''']
    for index in range(count):
        read = ("SCALE", "current.get()", "local_state.factor")[index % 3]
        annotation = ("float", "list", "int")[index % 3]
        mutates = ", mutates_args=()" if index % 2 else ""
        parts.append(f'''

@torch.library.custom_op("linear::op{index}"{mutates})
def op{index}(x: torch.Tensor, factor: {annotation}) -> torch.Tensor:
    return x * factor


def op{index}_setup(ctx, inputs, output):
    x, factor = inputs
    ctx.save_for_backward(x)
    ctx.factor = {read}


def op{index}_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return grad * ctx.factor * x.data_ptr(), None


op{index}.register_autograd(op{index}_backward, setup_context=op{index}_setup)
''')
    parts.append("\n\nlist = tuple\n")
    return "".join(parts)


def returns(count: int) -> str:
    """One backward with many returns: lists (AGF116) one gradient short (AGF004), a tuple one short, and
    one right."""
    branches = "".join(
        f"        if ctx.branch == {index}:\n"
        + ("            return [grad * 2]\n", "            return grad * 3,\n", "            return grad, None\n")[
            index % 3
        ]
        for index in range(count)
    )
    return HEADER + (
        "\n\nclass Branches(torch.autograd.Function):\n"
        "    @staticmethod\n    def forward(ctx, x, branch: int):\n"
        "        ctx.branch = branch\n        return x * 2\n\n"
        f"    @staticmethod\n    def backward(ctx, grad):\n{branches}        return [grad]\n"
    )


Result = Tuple[List[Tuple[int, int, str, str, Optional[Fix]]], str, int]


def results(text: str) -> Result:
    """Every finding with its fix (as the command computes them), and the text ``--fix`` leaves."""
    findings, _ = lint_lines(source_lines(text), "generated.py", PREVIEW)
    fixed, count, _, _ = fixer.fix_text(text, "generated.py", PREVIEW)
    found = [(finding.line, finding.column, finding.code, finding.message, finding.fix) for finding in findings]
    return found, fixed, count


# -- the earlier ways, for comparison -----------------------------------------------------------------------
def _scanning_family_calls(self: ModuleFacts, class_name: str) -> List[ApplyCall]:
    """The subclasses found by a scan of every class of the module, for each call."""
    names = [class_name]
    seen = {class_name}
    for name in names:
        for site in self.discovery.classes:
            if site.name not in seen and any(base.name == name for base in site.local_bases):
                seen.add(site.name)
                names.append(site.name)
    return [call for name in names for call in self._apply_calls(name)]


def _scanning_walk(self: ModuleFacts) -> module_facts._Walked:
    if self._walked is None:
        calls = {id(call.node) for site in self.discovery.function_classes
                 for call in self._family_calls(site.name) if call.node is not None}
        self._walked = module_facts._walk_module(self.tree, calls)
    return self._walked


Place = Callable[[source.Segment, cst.CSTNode, cst.FunctionDef], Optional[Tuple[int, int]]]


def _one_pass_a_node(place: Place) -> Place:
    """Each node placed by a pass of its own over its method, stopping at it, nothing else kept."""

    def placing(self: source.Segment, node: cst.CSTNode, method: cst.FunctionDef) -> Optional[Tuple[int, int]]:
        self._placed.clear()
        self._passes.clear()
        return place(self, node, method)

    return placing


def _scanning_return_index(method: Method, position: Tuple[int, int]) -> Optional[int]:
    """Every return placed again for each finding."""
    for index, ret in enumerate(method.facts.returns):
        if method.position(ret) == position:
            return index
    return None


def _earlier(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ModuleFacts, "_family_calls", _scanning_family_calls)
    monkeypatch.setattr(ModuleFacts, "_walk", _scanning_walk)
    monkeypatch.setattr(
        analysis_module.Analysis, "mutable_globals", lambda self: op_facts.globals_assigned_in_functions(self.tree)
    )
    monkeypatch.setattr(
        analysis_module.Analysis, "state_holders", lambda self: op_facts.module_state_holders(self.tree, self.imports)
    )
    monkeypatch.setattr(analysis_module.Analysis, "bound_names", lambda self: op_facts.module_bound_names(self.tree))
    monkeypatch.setattr(
        analysis_module.Analysis, "graph_node_stores",
        lambda self: ctx_attributes.stored_through_graph_nodes(self.tree, self.lines),
    )
    monkeypatch.setattr(buffers._Trace, "_parent_map", lambda self: buffers._parent_map(self.backward))
    monkeypatch.setattr(source.Segment, "_place_in_method", _one_pass_a_node(source.Segment._place_in_method))
    monkeypatch.setattr(agf004_gradient_count, "return_index", _scanning_return_index)
    monkeypatch.setattr(agf116_list_return, "return_index", _scanning_return_index)


@pytest.mark.parametrize("make, codes", [
    (families, {"AGF003"}),
    (stores, {"AGF003", "AGF124"}),
    (operators, {"AGF134", "AGF135"}),
    (returns, {"AGF004", "AGF116"}),
], ids=["subclasses", "stores", "custom-ops", "returns"])
def test_the_findings_and_fixes_are_those_of_the_earlier_way(
    make: Callable[[int], str], codes: Set[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = make(9)
    ast.parse(text)
    now = results(text)
    found = {code for _, _, code, _, _ in now[0]}
    assert codes <= found and "AGF000" not in found
    _earlier(monkeypatch)
    assert results(text) == now


def test_the_returns_of_the_findings_are_found_and_fixed() -> None:
    findings, fixed, count = results(returns(9))
    fixes = {code: sum(1 for _, _, each, _, fix in findings if each == code and fix is not None) for code in
             ("AGF004", "AGF116")}
    assert fixes["AGF004"] >= 3 and fixes["AGF116"] >= 3
    assert count >= 6 and "return [" not in fixed


# -- the work counted -------------------------------------------------------------------------------------
def test_the_subclasses_are_indexed_once_per_module(monkeypatch: pytest.MonkeyPatch) -> None:
    scans: List[int] = []
    original = ModuleFacts._family

    def counting(self: ModuleFacts, names: List[str]) -> List[str]:
        scans.append(int(self._subclass_names is None))
        return original(self, names)

    monkeypatch.setattr(ModuleFacts, "_family", counting)
    results(families(12))
    assert scans and sum(scans) <= 3  # once per module checked: the check, and each pass of the fixer


def test_the_module_facts_of_the_custom_op_rules_are_read_once_per_module(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: List[str] = []
    for name in ("globals_assigned_in_functions", "module_state_holders", "module_bound_names"):
        original = getattr(analysis_module, name)

        def counting(*args: object, _name: str = name, _original: Callable[..., object] = original) -> object:
            calls.append(_name)
            return _original(*args)

        monkeypatch.setattr(analysis_module, name, counting)
    text = operators(12)
    lint_lines(source_lines(text), "generated.py", PREVIEW)
    assert sorted(calls) == ["globals_assigned_in_functions", "module_bound_names", "module_state_holders"]


def test_the_graph_node_stores_are_read_once_per_module_and_the_parents_once_per_method(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: List[str] = []
    read_stores = analysis_module.stored_through_graph_nodes
    map_parents = buffers._parent_map

    def reading(tree: ast.Module, lines: Optional[Sequence[str]]) -> Optional[FrozenSet[str]]:
        calls.append("graph node stores")
        return read_stores(tree, lines)

    def mapping(backward: Method) -> Dict[int, cst.CSTNode]:
        calls.append("parents")
        return map_parents(backward)

    monkeypatch.setattr(analysis_module, "stored_through_graph_nodes", reading)
    monkeypatch.setattr(buffers, "_parent_map", mapping)
    findings, _ = lint_lines(source_lines(stores(12) + operators(6).replace(HEADER, "")), "generated.py", PREVIEW)
    assert {"AGF003", "AGF124"} <= {finding.code for finding in findings}
    assert sorted(calls) == ["graph node stores", "parents"]


def test_a_method_with_many_findings_is_generated_at_most_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    passes: List[object] = []
    original = source.Segment._generate

    def counting(
        self: source.Segment, node: Optional[cst.CSTNode], method: cst.FunctionDef, anchor: Tuple[int, int]
    ) -> Optional[str]:
        passes.append(method)
        return original(self, node, method, anchor)

    monkeypatch.setattr(source.Segment, "_generate", counting)
    findings, _ = lint_lines(source_lines(returns(30)), "generated.py", PREVIEW)
    assert len(findings) >= 30
    assert len(passes) <= 2 * len(set(map(id, passes)))
