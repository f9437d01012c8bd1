"""PyTorch is the oracle: run fixture Functions under real torch (CPU) and check each lint verdict.

* Every Function class in the oracle fixtures declares what torch does with it (grammar: tests/oracle.py);
  each declaration runs as one test, and a class carries AGF004 exactly when torch fails its backward
  with a gradient-count error.
* AGF003's harms, shown on small Functions that the engine is also asked to lint.
* Conventions PyTorch does not enforce (a missing @staticmethod) next to what it does enforce.

The whole module is skipped when torch is not installed.
"""

from __future__ import annotations

import gc
import importlib
import os
import textwrap
import warnings
import weakref
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

with warnings.catch_warnings():
    # A torch wheel without numpy warns at import; irrelevant to these tests.
    warnings.filterwarnings("ignore", message=r"Failed to initialize NumPy", category=UserWarning)
    if os.environ.get("AGF_REQUIRE_TORCH"):  # CI installs torch: a missing torch there fails, not skips
        torch = importlib.import_module("torch")
    else:
        torch = pytest.importorskip(
            "torch", reason="the oracle layer runs fixture Functions under PyTorch, which is not installed"
        )

from conftest import FIXTURES, expected_findings, lint  # noqa: E402
from oracle import ClassBlock, Declaration, LoadedFixture, check, load_fixture, parse_fixture  # noqa: E402

ORACLE_FIXTURES = [FIXTURES / "agf004.py", FIXTURES / "agf005.py"]


def _declarations() -> Tuple[List[Declaration], List[str]]:
    declarations: List[Declaration] = []
    ids: List[str] = []
    for path in ORACLE_FIXTURES:
        blocks = parse_fixture(path)
        names = [block.name for block in blocks]
        for block in blocks:
            suffix = f"@L{block.line}" if names.count(block.name) > 1 else ""
            for number, declaration in enumerate(block.declarations, start=1):
                declarations.append(declaration)
                ids.append(f"{path.stem}.{block.name}{suffix}" + (f"-{number}" if number > 1 else ""))
    return declarations, ids


def _blocks() -> List[Tuple[Path, ClassBlock]]:
    return [(path, block) for path in ORACLE_FIXTURES for block in parse_fixture(path)]


DECLARATIONS, DECLARATION_IDS = _declarations()
BLOCKS = _blocks()


@lru_cache(maxsize=None)
def _loaded(path: Path) -> LoadedFixture:
    return load_fixture(path)


@pytest.mark.parametrize("declaration", DECLARATIONS, ids=DECLARATION_IDS)
def test_torch_confirms_declaration(declaration: Declaration) -> None:
    check(declaration, _loaded(declaration.path))


@pytest.mark.parametrize("path", ORACLE_FIXTURES, ids=lambda path: path.name)
def test_every_function_class_is_declared(path: Path) -> None:
    loaded = _loaded(path)
    undeclared = [
        f"{block.name} (line {block.line})"
        for block in parse_fixture(path)
        if issubclass(loaded.classes[block.line], torch.autograd.Function) and not block.declarations
    ]
    assert undeclared == [], f"{path.name}: Function classes without a '# torch:' declaration"


@pytest.mark.parametrize(
    ("path", "block"), BLOCKS, ids=[f"{path.stem}.{block.name}@L{block.line}" for path, block in BLOCKS]
)
def test_lint_and_torch_agree_on_gradient_count(path: Path, block: ClassBlock) -> None:
    """AGF004 annotated in the class <=> a declaration says torch fails its backward on the count."""
    annotated = expected_findings(path)
    flagged = any((line, "AGF004") in annotated for line in range(block.line, block.end_line + 1))
    raising = [declaration for declaration in block.declarations if declaration.when == "backward"]
    for declaration in raising:
        assert declaration.is_gradient_count_error, (
            f"{declaration.where}\nbackward errors in oracle fixtures must be gradient-count errors"
        )
    if flagged:
        assert raising, f"{block.name} carries AGF004, but no declaration shows torch failing at backward"
    else:
        assert not raising, f"{block.name} is silent for AGF004, but torch fails it at backward"


# --- AGF003: the harms of tensors kept on ctx --------------------------------------------------------

OUTPUT_ON_CTX = """
import torch


class ExpOnCtx(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out = torch.exp(x)
        ctx.out = out
        return out

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.out
"""

OUTPUT_SAVED = """
import torch


class ExpSaved(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out = torch.exp(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * out
"""

INPUT_ON_CTX = """
import torch


class SquareOnCtx(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor):
        ctx.x = x
        return x * x

    @staticmethod
    def backward(ctx, grad):
        return 2 * ctx.x * grad
"""

INPUT_SAVED = """
import torch


class SquareSaved(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad
"""


def _define(source: str, name: str) -> Any:
    """Execute a demo source and return the class it defines."""
    namespace: Dict[str, Any] = {}
    exec(compile(textwrap.dedent(source), f"<demo {name}>", "exec"), namespace)
    return namespace[name]


def _leaf() -> Any:
    return torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)


@pytest.mark.parametrize(
    ("source", "expected"),
    [(OUTPUT_ON_CTX, ["AGF003"]), (OUTPUT_SAVED, []), (INPUT_ON_CTX, ["AGF003"]), (INPUT_SAVED, [])],
    ids=["ExpOnCtx", "ExpSaved", "SquareOnCtx", "SquareSaved"],
)
def test_agf003_demo_lint(source: str, expected: List[str]) -> None:
    assert [finding.code for finding in lint(source, preview=True)] == expected  # AGF003 is a preview rule


@pytest.mark.parametrize(
    ("source", "name", "freed_at_once"),
    [(OUTPUT_ON_CTX, "ExpOnCtx", False), (OUTPUT_SAVED, "ExpSaved", True)],
    ids=["ExpOnCtx", "ExpSaved"],
)
def test_agf003_output_on_ctx_waits_for_the_garbage_collector(source: str, name: str, freed_at_once: bool) -> None:
    """output -> grad_fn -> ctx -> output is a cycle: dropping every reference does not free it."""
    function = _define(source, name)
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        x = _leaf()
        out = function.apply(x)
        out.sum().backward()  # the Function works either way
        output = weakref.ref(out)
        del out, x
        assert (output() is None) is freed_at_once
        gc.collect()
        assert output() is None
    finally:
        if was_enabled:
            gc.enable()


def test_agf003_input_on_ctx_gives_a_silently_wrong_gradient() -> None:
    """An input changed in place after forward (as an optimizer step does) is read as changed."""
    function = _define(INPUT_ON_CTX, "SquareOnCtx")
    x = _leaf()
    analytic = 2 * x.detach().clone()  # d/dx sum(x * x) at the value forward saw
    out = function.apply(x)
    with torch.no_grad():
        x.add_(1.0)
    out.sum().backward()
    assert not torch.allclose(x.grad, analytic)
    assert torch.equal(x.grad, analytic + 2.0)  # computed from the modified x, no error raised


def test_agf003_saved_input_changed_in_place_raises() -> None:
    function = _define(INPUT_SAVED, "SquareSaved")
    x = _leaf()
    out = function.apply(x)
    with torch.no_grad():
        x.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


# --- Conventions PyTorch does not enforce ------------------------------------------------------------

NO_STATICMETHOD = """
import torch


class DoubleNoStatic(torch.autograd.Function):
    def forward(ctx, x):
        return x * 2

    def backward(ctx, grad):
        return grad * 2
"""

FORWARD_WITHOUT_CTX = """
import torch


class DoubleNoCtx(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2
"""


def test_missing_staticmethod_works_with_apply_but_not_legacy_call() -> None:
    """AGF001 is a convention under .apply (Python 3 fetches the plain function); the legacy call fails."""
    function = _define(NO_STATICMETHOD, "DoubleNoStatic")
    x = _leaf()
    function.apply(x).sum().backward()
    assert torch.equal(x.grad, torch.full_like(x, 2.0))
    with pytest.warns(DeprecationWarning, match="should not be instantiated"):
        instance = function()
    with pytest.raises(RuntimeError, match="Legacy autograd function with non-static forward method"):
        instance(x)
    assert {finding.code for finding in lint(NO_STATICMETHOD)} == {"AGF001"}


CLASSMETHOD_BACKWARD = """
import torch


class DoubleClassmethod(torch.autograd.Function):
    @classmethod
    def forward(cls, ctx, x):
        return x * 2

    @classmethod
    def backward(cls, ctx, grad):
        return grad * 2
"""


def test_classmethod_contract_methods_run_eagerly_but_break_torch_compile() -> None:
    """A @classmethod runs under apply, but torch.compile cannot inline it: with fullgraph=True compiling
    fails, without it the call is a graph break. The @staticmethod twin compiles whole."""
    flagged = _define(CLASSMETHOD_BACKWARD, "DoubleClassmethod")
    silent = _define(NO_STATICMETHOD.replace("    def ", "    @staticmethod\n    def "), "DoubleNoStatic")
    x = _leaf()
    flagged.apply(x).sum().backward()
    assert torch.equal(x.grad, torch.full_like(x, 2.0))
    torch._dynamo.reset()
    compiled = torch.compile(lambda t: silent.apply(t), fullgraph=True, backend="eager")
    assert torch.equal(compiled(_leaf()), _leaf().detach() * 2)
    torch._dynamo.reset()
    compiled = torch.compile(lambda t: flagged.apply(t), fullgraph=True, backend="eager")
    with pytest.raises(Exception, match="failed to bind arguments"):
        compiled(_leaf())
    torch._dynamo.reset()
    assert [finding.code for finding in lint(CLASSMETHOD_BACKWARD)] == ["AGF001", "AGF001"]
    assert lint(NO_STATICMETHOD.replace("    def ", "    @staticmethod\n    def ")) == []


CLASSMETHOD_FORWARD = """
import torch


class TwiceClassmethodForward(torch.autograd.Function):
    @classmethod
    def forward(cls, ctx, x):
        return x + x

    @staticmethod
    def backward(ctx, grad):
        return grad
"""


def test_a_classmethod_forward_alone_breaks_fullgraph_compiling_too() -> None:
    """The shape PyTorch's own tests call supported (a @classmethod forward beside a static backward)
    runs eagerly and compiles with a graph break, but torch.compile(fullgraph=True) fails on it, as on a
    @classmethod backward: AGF001 reports it, and says why."""
    function = _define(CLASSMETHOD_FORWARD, "TwiceClassmethodForward")
    x = _leaf()
    function.apply(x).sum().backward()
    assert torch.equal(x.grad, torch.ones_like(x))
    torch._dynamo.reset()
    assert torch.equal(torch.compile(lambda t: function.apply(t), backend="eager")(_leaf()), _leaf().detach() * 2)
    torch._dynamo.reset()
    compiled = torch.compile(lambda t: function.apply(t), fullgraph=True, backend="eager")
    with pytest.raises(Exception, match="failed to bind arguments"):
        compiled(_leaf())
    torch._dynamo.reset()
    findings = lint(CLASSMETHOD_FORWARD)
    assert [finding.code for finding in findings] == ["AGF001"]
    assert "torch.compile cannot inline" in findings[0].message


def test_forward_without_ctx_or_setup_context_fails_at_apply() -> None:
    function = _define(FORWARD_WITHOUT_CTX, "DoubleNoCtx")
    with pytest.raises(TypeError, match="takes 1 positional argument but 2 were given"):
        function.apply(_leaf())
    assert [finding.code for finding in lint(FORWARD_WITHOUT_CTX, preview=True)] == ["AGF002"]  # a preview rule
