"""Structural guarantees the performance work relies on (no timings here: see the benchmarks/ package).

- Loading the flake8 plugin imports neither libcst nor the engine: a run meeting no file that could
  hold a Function class never pays for them, and a run meeting no file that does hold one never
  imports libcst or the rules.
- A node placed by regenerating only its method is where libcst's pass over the whole class puts it.
- A class is dropped once checked, unless another class of the module builds on it, and the
  cyclic garbage collector is left as the host had it.
"""

from __future__ import annotations

import ast
import gc
import json
import subprocess
import sys
import textwrap
from typing import Iterator, List, Optional, Set, Tuple

import libcst as cst
import pytest

from conftest import ROOT, fixture_paths, lint, parseable_fixture_sources, source_lines
from flake8_autograd.adapters import flake8_plugin as plugin
from flake8_autograd.checking import checker, class_checks
from flake8_autograd.engine.analysis.module_analysis import Analysis
from flake8_autograd.checking.class_checks import _ModelBuilder
from flake8_autograd.core.settings import Settings
from flake8_autograd.engine.discovery.functions import ClassSite, Discovery
from flake8_autograd.engine.models import body_facts as body_facts_module
from flake8_autograd.engine.models.class_model import ClassModel
from flake8_autograd.engine.facts.tensors.inference import TensorInference
from flake8_autograd.engine.syntax.source import Segment, parse_class
from flake8_autograd.engine.syntax.walk import walk


# -- start-up: the plugin module is light ---------------------------------------------------------
def _modules_after(code: str) -> Set[str]:
    """The modules loaded by a fresh interpreter after running ``code``."""
    probe = code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(json.loads(result.stdout.splitlines()[-1]))


RUN_ON = """\
import argparse, ast
from flake8_autograd.adapters.flake8_plugin import AutogradChecker
AutogradChecker.parse_options(argparse.Namespace(autograd_preview=True, autograd_function_bases=[]))
source = {source!r}
list(AutogradChecker(ast.parse(source), source.splitlines(keepends=True), "x.py").run())
"""


def test_loading_the_plugin_imports_neither_libcst_nor_the_engine() -> None:
    loaded = _modules_after("import flake8_autograd.adapters.flake8_plugin")
    assert "libcst" not in loaded
    assert not {name for name in loaded if name.startswith(("flake8_autograd.engine", "flake8_autograd.rules"))}


def test_a_file_without_function_classes_is_checked_without_importing_libcst() -> None:
    loaded = _modules_after(RUN_ON.format(source="import torch\n\nclass Net(torch.nn.Module):\n    pass\n"))
    assert "libcst" not in loaded and "flake8_autograd.checking.checker" not in loaded


def test_a_file_that_only_mentions_function_is_checked_without_importing_libcst() -> None:
    source = "import types\n\ndef f(x):\n    return isinstance(x, types.FunctionType)\n"
    loaded = _modules_after(RUN_ON.format(source=source))
    assert "flake8_autograd.engine.discovery.functions" in loaded
    assert "libcst" not in loaded and not {name for name in loaded if name.startswith("flake8_autograd.rules")}


def test_a_file_that_holds_a_function_class_loads_libcst_and_the_rules() -> None:
    source = "import torch\n\nclass Fn(torch.autograd.Function):\n    def forward(ctx, x):\n        return x\n"
    loaded = _modules_after(RUN_ON.format(source=source))
    assert {"flake8_autograd.checking.class_checks", "flake8_autograd.rules", "libcst"} <= loaded


def test_the_engines_import_is_frozen_once_a_file_needs_it() -> None:
    """The objects alive after the engine's first import are frozen, once, and only then."""
    probe = "\nimport gc\nprint(gc.get_freeze_count())\n"
    sources = ["x = 1\n", "x = 'Function'\n", "from torch.autograd import Function\nclass Fn(Function):\n    pass\n"]
    outputs = [
        subprocess.run(
            [sys.executable, "-c", RUN_ON.format(source=source) + probe], capture_output=True, text=True, check=True
        ).stdout.split()
        for source in sources
    ]
    assert int(outputs[0][-1]) == 0 and int(outputs[1][-1]) == 0
    assert int(outputs[2][-1]) > 10_000  # libcst's modules, the engine's and the rules'


@pytest.mark.parametrize(
    "text, bases",
    [
        ("class A(Function): pass", ()),
        ("import torch\nx = 1\n", ()),
        ("class A(Base): pass", ("mypkg.ops.Base",)),
        ("class A(Base): pass", ("Base",)),
        ("class A(Other): pass", ("mypkg.Base",)),
        ("", ("a.b",)),
        ("functions", ()),
    ],
)
def test_the_plugins_text_test_is_the_engines(text: str, bases: Tuple[str, ...]) -> None:
    assert plugin.might_define_function(text, bases) == checker.might_define_function(text, bases)


# -- positions: one method regenerated gives libcst's whole-class positions -------------------------
def _segments(source: str) -> Iterator[Segment]:
    lines = source_lines(source)
    for node in ast.walk(ast.parse("".join(lines))):
        if isinstance(node, ast.ClassDef):
            segment = parse_class(lines, node)
            if segment is not None:
                yield segment


def _methods(segment: Segment) -> List[cst.FunctionDef]:
    body = segment.class_node.body
    statements = body.body if isinstance(body, cst.IndentedBlock) else ()
    return [statement for statement in statements if isinstance(statement, cst.FunctionDef)]


def _placements_agree(source: str, every: int = 1) -> Tuple[int, int]:
    """Place every ``every``-th node of each method (and each def and parameter) both ways.

    Returns how many nodes the method pass placed, and how many it left to the whole-class pass.
    """
    placed = left = 0
    for segment in _segments(source):
        exact = segment._resolve()
        for method in _methods(segment):
            nodes = [method, *walk(method)]
            sample = nodes[::every] + [node for node in nodes if isinstance(node, cst.Param)] + nodes[-1:]
            for node in sample:
                found = segment._place_in_method(node, method)
                if found is None:
                    left += 1
                    continue
                assert found == exact[node], (type(node).__name__, libcst_code(node))
                placed += 1
    return placed, left


def libcst_code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


EDGE_SOURCES = {
    "decorators-comments-and-blank-lines": '''\
        import torch


        class Fn(torch.autograd.Function):
            """Doc."""

            # a comment above the method

            @staticmethod  # trailing
            @some.decorator(
                1,
                2,
            )
            def forward(ctx, x, *args, y=(1,
                                         2), **kwargs):
                # leading comment
                ctx.save_for_backward(x)
                return x, [
                    x * 2,
                ]

            @staticmethod
            async def backward(ctx, grad): return grad; pass
        ''',
    "tabs-and-unicode": (
        "import torch\n\nclass Fn(torch.autograd.Function):\n"
        "\t@staticmethod\n\tdef forward(ctx, x):\n\t\ts = 'ünïcode ✓'; y = x\n\t\treturn y + len(s)\n"
        "\tdef backward(ctx, g):\n\t\treturn g\n"
    ),
    "nested-in-a-function-and-a-class": '''\
        import torch


        def make():
            class Outer:
                class Fn(torch.autograd.Function):
                    @staticmethod
                    def forward(ctx, x):
                        if x:
                            return x
                        return -x

            return Outer
        ''',
    "backslash-continuations-and-semicolons": '''\
        import torch


        class Fn(torch.autograd.Function):
            x = 1; y = 2
            @staticmethod
            def forward(ctx, \\
                        x):
                a = x + \\
                    1; b = a
                return b
        ''',
    "crlf-and-a-form-feed-inside-a-line": (
        "import torch\r\n\r\nclass Fn(torch.autograd.Function):\r\n"
        "    @staticmethod\r\n    def forward(ctx, x):\r\n        y = x \x0c+ 1\r\n        return y\r\n"
    ),
    "two-space-indents-and-a-redefined-method": '''\
        import torch


        class Fn(torch.autograd.Function):
          @staticmethod
          def forward(ctx, x):
            return x
          @staticmethod
          def forward(ctx, x, y):
            return x, y
        ''',
}


@pytest.mark.parametrize("source", list(EDGE_SOURCES.values()), ids=list(EDGE_SOURCES))
def test_a_method_pass_places_every_node_as_the_whole_class_pass_does(source: str) -> None:
    placed, left = _placements_agree(textwrap.dedent(source))
    assert placed > 10 and left == 0


def test_where_a_form_feed_opens_an_indented_line_both_passes_give_the_files_columns() -> None:
    """libcst would take a form feed that opens an indented line into the indentation, a column off
    from the text: it is given those lines without it, and the columns there are shifted back."""
    source = (
        "import torch\r\n\r\nclass Fn(torch.autograd.Function):\r\n"
        "\x0c    @staticmethod\r\n    def forward(ctx, x):\r\n\x0c        return x\r\n"
    )
    placed, left = _placements_agree(source)
    assert placed > 0 and left == 0
    (segment,) = list(_segments(source))
    (forward,) = _methods(segment)
    assert segment.position(forward, forward) == (5, 4)  # where ast has it
    (statement,) = forward.body.body
    assert segment.position(statement, forward) == (6, 9)  # after the form feed, as ast counts


def test_a_method_pass_places_nodes_of_the_fixtures_as_the_whole_class_pass_does() -> None:
    compared = 0
    for path, source in parseable_fixture_sources():
        placed, left = _placements_agree(source, every=7)
        assert left == 0, path.name
        compared += placed
    assert compared > 1000


def _only_segment(source: str) -> Segment:
    (segment,) = list(_segments(textwrap.dedent(source)))
    return segment


def test_a_node_outside_the_method_named_is_placed_by_the_whole_class_pass() -> None:
    segment = _only_segment(
        """\
        class Fn(Function):
            scale = 2

            def forward(ctx, x):
                return x

            def backward(ctx, grad):
                return grad
        """
    )
    forward, backward = _methods(segment)
    returned = next(node for node in walk(backward) if isinstance(node, cst.Return))
    assert segment._place_in_method(returned, forward) is None
    assert segment.position(returned, forward) == (8, 8)
    assignment = segment.class_node.body.body[0]
    assert segment.position(assignment, forward) == (2, 4)


def test_a_node_before_a_deep_expression_is_placed_exactly() -> None:
    """Generation stops once the node is placed: an expression too deep for libcst's pass comes later."""
    segment = _only_segment(
        "class Fn(Function):\n"
        "    def backward(ctx, grad):\n"
        "        return grad if " + " or ".join(["grad"] * 600) + " else grad\n"
    )
    (backward,) = _methods(segment)
    grad = backward.params.params[1]
    assert segment.position(grad, backward) == (2, 22)
    assert segment.position(backward, backward) == (2, 4)


# -- memory: a class is dropped once checked --------------------------------------------------------
MODULE = """\
import torch


class Base(torch.autograd.Function):
    @staticmethod
    def backward(ctx, grad):
        return grad


class Child(Base):
    @staticmethod
    def forward(ctx, x, y):
        return x * y


class Alone(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x

    def backward(ctx, grad):
        return grad
"""


def test_checked_classes_are_dropped_unless_a_local_class_builds_on_them(monkeypatch: pytest.MonkeyPatch) -> None:
    dropped: List[str] = []
    forget = _ModelBuilder.forget

    def recording(self: _ModelBuilder, site: ClassSite) -> Optional[ClassModel]:
        model = forget(self, site)
        dropped.append(site.name if model is not None else "?" + site.name)
        return model

    monkeypatch.setattr(_ModelBuilder, "forget", recording)
    # Every rule on: AGF004 (a preview rule) on Child reads the backward it inherits from Base.
    findings = [(finding.line, finding.code) for finding in lint(MODULE, preview=True)]
    assert dropped == ["Child", "Alone"]
    assert findings == [(12, "AGF004"), (21, "AGF001")]


def test_forgetting_a_class_empties_its_caches_and_keeps_its_bases() -> None:
    lines = source_lines(MODULE)
    tree = ast.parse("".join(lines))
    discovery = Discovery(tree, "example.py")
    base, child, alone = discovery.function_classes
    builder = _ModelBuilder(lines)
    analysis = Analysis(tree, discovery)
    models = [builder.build(site) for site in (child, alone)]
    assert all(model is not None for model in models)
    for model in models:
        assert model is not None
        for name in ("forward", "backward"):
            method = model.method(name)
            assert method is not None
            analysis.returns(method)
    child_model, alone_model = models
    assert child_model is not None and alone_model is not None
    analysis.forget(alone_model)
    owners = {key[0].owner.name for key in analysis._inference} | {key.owner.name for key in analysis._returns}
    assert owners == {"Child", "Base"}
    assert builder.forget(alone) is alone_model and builder.forget(alone) is None
    assert builder.build(base) is child_model.bases[0]  # the base is still the one the child was built with


@pytest.mark.parametrize("enabled", [True, False], ids=["collector-on", "collector-off"])
def test_checking_leaves_the_garbage_collector_as_it_found_it(enabled: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    was = gc.isenabled()
    try:
        if not enabled:
            gc.disable()
        assert [finding.code for finding in lint(MODULE, preview=True)] == ["AGF004", "AGF001"]
        assert gc.isenabled() is enabled

        def broken(*args: object, **kwargs: object) -> None:
            raise RuntimeError("a bug")

        monkeypatch.setattr(class_checks, "_drop", broken)  # raises while the collector is off
        assert [finding.code for finding in lint(MODULE, preview=True)] == [checker.INTERNAL_ERROR]
        assert gc.isenabled() is enabled
    finally:
        if was:
            gc.enable()
        else:
            gc.disable()


# -- dispatch on a node's exact type ---------------------------------------------------------------
def test_the_fact_readers_and_scope_tests_see_every_node_an_isinstance_test_would() -> None:
    """``collect_facts`` and ``walk_scope`` look a node's type up instead of asking ``isinstance``: the
    same answers only while none of the classes looked up has a subclass, and while every node
    class a parse yields is known to be a node."""
    from flake8_autograd.engine.syntax import walk as walk_module

    from flake8_autograd.engine.facts.tensors import inference as inference_module

    from flake8_autograd.engine.facts import memory_and_layout
    from flake8_autograd.engine.facts.tensors import reaching_bindings

    looked_up = (
        set(body_facts_module._FACT_READERS) | set(walk_module.SCOPE_TYPES) | set(walk_module._ENDING_TYPES)
        | set(inference_module._LITERAL_TYPES) | set(inference_module._CONTAINER_TYPES)
        | set(inference_module._COMPREHENSION_TYPES) | set(memory_and_layout._DISPLAY_TYPES)
        | reaching_bindings._OWN_SCOPE_TYPES | reaching_bindings._SEQUENCE_TYPES | reaching_bindings._LOOP_TYPES
        | reaching_bindings._TARGET_HOLDER_TYPES
        | {cst.IndentedBlock, cst.SimpleStatementLine, cst.Assert, cst.Subscript, cst.Call, cst.Expr, cst.Assign,
           cst.Attribute, cst.Name, cst.Dict, cst.Tuple, cst.List, cst.For, cst.While, cst.Return, cst.Raise,
           cst.Break, cst.Continue, cst.Del, cst.AssignTarget, cst.BooleanOperation, cst.UnaryOperation}
    )
    assert {cls.__name__ for cls in looked_up if cls.__subclasses__()} == set()
    for path in fixture_paths():
        module = cst.parse_module(path.read_text(encoding="utf-8"))
        assert {type(node) for node in walk(module)} <= walk_module.NODE_TYPES


def test_children_leave_out_only_fields_that_never_hold_a_node() -> None:
    """``children`` reads each node type's fields through a reader built once, without the fields declared as
    text or flags: on every node of every fixture it gives what reading every child field gives."""
    from flake8_autograd.engine.syntax import walk as walk_module

    def every_field(node: cst.CSTNode) -> List[cst.CSTNode]:
        found: List[cst.CSTNode] = []
        for name in walk_module._child_fields(type(node)):
            value = getattr(node, name)
            if isinstance(value, cst.CSTNode):
                found.append(value)
            elif isinstance(value, (tuple, list)):
                found.extend(item for item in value if isinstance(item, cst.CSTNode))
        return found

    checked = 0
    for path in fixture_paths():
        module = cst.parse_module(path.read_text(encoding="utf-8"))
        for node in walk(module):
            assert walk_module.children(node) == every_field(node), type(node).__name__
            checked += 1
    assert checked > 10_000


def test_the_facts_of_a_body_are_read_from_every_kind_of_statement() -> None:
    source = textwrap.dedent(
        """\
        def forward(ctx, x, w):
            a = b = x * 2
            c: int = 3
            a += 1
            w[0] = 1
            if (d := x.sum()) > 0:
                pass
            for e in range(3):
                pass
            with open("f") as f:
                pass
            try:
                pass
            except Exception as g:
                pass
            import os.path as h
            def inner(): pass
            class Inner: pass
            global k
            match x:
                case [m, *n]: pass
                case {"a": 1, **o}: pass
            del a
            ctx.saved = x
            ctx.save_for_backward(x)
            ctx.needs_input_grad[0]
            y = ctx.scale
            x.mul_(2)
            return x
        """
    )
    function = cst.parse_module(source).body[0]
    assert isinstance(function, cst.FunctionDef)
    facts = body_facts_module.collect_facts(function, "ctx")
    assert set(facts.bindings) == {"a", "b", "c", "d", "e", "f", "g", "h", "inner", "Inner", "k", "m", "n", "o", "y"}
    assert [store.attribute for store in facts.ctx_stores] == ["saved"]
    assert set(facts.ctx_calls) == {"save_for_backward"} and set(facts.ctx_reads) >= {"scale", "needs_input_grad"}
    assert [(change.name, change.how) for change in facts.in_place] == [
        ("a", "augmented assignment"), ("w", "indexed assignment"), ("x", ".mul_()")
    ]
    assert facts.reads_needs_input_grad and len(facts.returns) == 1 and not facts.yields
    assert [subscript.attribute for subscript in facts.ctx_subscripts] == ["needs_input_grad"]
    assert facts.ctx_references == 4


# -- gradient provenance: linear in the locals of backward ----------------------------------------------
def test_provenance_follows_each_local_once_however_often_it_is_indexed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each local made of three parts of the previous one: a walk that started afresh for every part
    followed the first local 3**n times (a file of this shape held a run for minutes)."""
    from flake8_autograd.engine.facts import provenance

    levels = 8
    chain = "".join(f"    x{i} = (x{i - 1}[0], x{i - 1}[1], x{i - 1}[2])\n" for i in range(1, levels + 1))
    source = (
        "import torch\n\n\nclass Chain(torch.autograd.Function):\n"
        "    @staticmethod\n    def forward(ctx, a, b):\n        return a * b\n\n"
        "    @staticmethod\n    def backward(ctx, grad):\n        x0 = grad * 2\n"
        + textwrap.indent(chain, "    ")
        + f"        return x{levels}[0], x{levels}[1]\n"
    )
    followed: List[str] = []
    original = provenance._bound_values

    def counting(name: str, *args: object) -> object:
        followed.append(name)
        return original(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(provenance, "_bound_values", counting)
    assert lint(source, preview=True) == []  # every gradient is one computation (grad * 2), returned in two slots
    assert followed and len(followed) <= 2 * (levels + 1)


# -- direct uses: the module is walked for them only when the code names a Function class ------------
_APPLIED_ONLY = '''
import torch


class Scale(torch.autograd.Function):
    """Scale: no direct use here."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def scale(x):
    # Scale() would be the legacy style; the module only applies it.
    message = f"Scale: {x.dim()}D"
    return Scale.apply(x)
'''


def test_a_module_naming_its_functions_only_in_apply_strings_and_comments_is_not_walked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from flake8_autograd.engine.analysis import module_analysis as analysis_module

    def refuse(self: object) -> None:
        raise AssertionError("the module was walked for direct uses")

    monkeypatch.setattr(analysis_module._DirectUseReader, "read", refuse)
    assert "AGF000" not in [finding.code for finding in lint(_APPLIED_ONLY, preview=True)]


@pytest.mark.parametrize(
    "line",
    ["    return Scale()(x)", "    return Scale.forward(None, x) if x else Scale()(x)", '    y = "a"; Scale()(x)'],
)
def test_a_direct_use_among_strings_is_still_found(line: str) -> None:
    source = _APPLIED_ONLY.replace("    return Scale.apply(x)", line)
    assert "AGF111" in [finding.code for finding in lint(source, preview=True)]


def test_a_module_that_never_applies_its_functions_is_not_walked_for_call_sites(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from flake8_autograd.engine.analysis import module_analysis as analysis_module

    def refuse(self: object) -> None:
        raise AssertionError("the module was walked for call sites")

    monkeypatch.setattr(analysis_module.Analysis, "_collect_calls", refuse)
    source = _APPLIED_ONLY.replace("    return Scale.apply(x)", "    return x")
    assert "AGF000" not in [finding.code for finding in lint(source, preview=True)]


def test_an_apply_split_over_two_lines_is_still_a_call_site() -> None:
    """``Keep\\n.apply(x, 4)``: the only caller passes a number where forward's annotation says tensor, so
    AGF003 trusts the caller and stays silent on ``ctx.step`` (it reports it with no caller)."""
    source = """
import torch


class Keep(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, step: torch.Tensor):
        ctx.step = step
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2, None


def keep(x):
    return (Keep
            .apply(x, 4))
"""
    assert "AGF003" not in [finding.code for finding in lint(source, preview=True)]
    uncalled = source.replace("    return (Keep\n            .apply(x, 4))", "    return x")
    assert "AGF003" in [finding.code for finding in lint(uncalled, preview=True)]


@pytest.mark.parametrize(
    "source, named",
    [
        ("y = Scale.apply(\n    x,\n    2.0,\n)\n", False),  # a call over several lines: read up to its end
        ("y = (x\n) + Scale.apply(x, 2.0)\n", False),  # the last line of an expression opened above
        ("y = Scale()(\n    x,\n)\n", True),  # instantiated: a direct use
        ("fns = (Scale,\n        Scale.apply)\n", True),
        ('doc = """\nScale\n"""\n', True),  # inside a string, tokenized alone: cannot tell, counted
    ],
)
def test_the_walk_for_direct_uses_is_skipped_only_when_every_mention_is_an_apply(source: str, named: bool) -> None:
    from flake8_autograd.engine.analysis.module_analysis import _named_besides_apply
    from flake8_autograd.engine.discovery.functions import Discovery

    text = "import torch\n\nclass Scale(torch.autograd.Function):\n    pass\n\n" + source
    discovery = Discovery(ast.parse(text), "m.py")
    assert _named_besides_apply(text.splitlines(keepends=True), discovery) is named


def test_a_checked_class_is_freed_by_reference_counting_not_the_cyclic_collector() -> None:
    """Every class of the bundled example, checked with every rule: what the check of a class leaves behind
    (its libcst tree, its model, the inferences of its methods) is freed as soon as the check drops it. A
    reference cycle through them would leave the class's thousands of nodes to the cyclic collector, which
    walks every one (a fifth of the cost of parsing them). A class that another class of the module
    extends is kept for the file, and so are the module's own facts: neither is asked of here."""
    text = (ROOT / "examples" / "buggy_functions.py").read_text(encoding="utf-8")
    tree = ast.parse(text)
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        findings = checker.check_tree(tree, source_lines(text), "buggy_functions.py", Settings(preview=True))
        gc.collect()
        left = sorted({type(each).__qualname__ for each in gc.garbage if type(each).__module__.startswith("libcst")})
        models = [each for each in gc.garbage if isinstance(each, (ClassModel, TensorInference))]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was_enabled:
            gc.enable()
    assert findings and left == [] and models == []


@pytest.mark.parametrize(
    "text, not_after, found",
    [
        ("y = Mul.apply(x)", r"\w", True),
        ("y = NumpyMul.apply(x)", r"\w", False),  # a longer name: ``Mul`` only inside it
        ("y = ops.Mul.apply(x)", r"\w", True),  # an attribute of a module may be the class
        ("y = ops.Mul(x)", r"[\w.]", False),  # a mention, but of another module's name
        ("y = MulGen.apply(x) + Mul.apply(x)", r"\w", True),  # a name that starts another
        ("xMul.apply(x); Mul.apply(y)", r"\w", True),  # found after a match in the wrong place
        ("xMul.apply(x)", r"\w", False),
    ],
)
def test_a_class_name_is_found_only_where_a_name_starts(text: str, not_after: str, found: bool) -> None:
    import re

    from flake8_autograd.engine.analysis.module_analysis import _starts_a_name

    applied = "apply" in text and not_after == r"\w"
    pattern = re.compile(r"(?:Mul|MulGen)\s*\.\s*apply\b" if applied else r"(?:Mul|MulGen)\b")
    assert _starts_a_name(pattern, text, re.compile(not_after)) is found
