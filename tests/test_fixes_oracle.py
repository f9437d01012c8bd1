"""Fixed Functions still compute what they computed: the oracle fixtures run under torch, before and after.

Every declaration of the oracle fixtures whose original class runs is run again on the fixed file; the
gradients must be the same. Small classes for the fixes the oracle fixtures do not exercise are run the
same way. Skipped without torch.
"""

from __future__ import annotations

import importlib
import os
import textwrap
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=r"Failed to initialize NumPy", category=UserWarning)
    if os.environ.get("AGF_REQUIRE_TORCH"):
        torch = importlib.import_module("torch")
    else:
        torch = pytest.importorskip("torch", reason="the oracle runs fixture Functions under PyTorch")

from conftest import FIXTURES  # noqa: E402
from flake8_autograd.adapters.command.fixer import fix_text  # noqa: E402
from flake8_autograd.adapters.command.runner import CheckOptions  # noqa: E402
from oracle import Declaration, LoadedFixture, _arguments, _differentiable_outputs, _target  # noqa: E402
from oracle import load_fixture, parse_fixture  # noqa: E402

ORACLE_FIXTURES = sorted(path for path in FIXTURES.glob("agf*.py") if "# torch:" in path.read_text(encoding="utf-8"))


def gradients(declaration: Declaration, fixture: LoadedFixture) -> Optional[List[Any]]:
    """The gradients of a declaration's call, or None when forward or backward raises."""
    function = _target(declaration, fixture)
    args, positions = _arguments(declaration)
    try:
        outputs = _differentiable_outputs(function(*args))
        if not outputs or not positions:
            return None
        seed = torch.zeros_like if declaration.zero_grad else torch.ones_like
        inputs = [args[position] for position in positions]
        return list(torch.autograd.grad(outputs, inputs, [seed(output) for output in outputs], allow_unused=True))
    except Exception:  # noqa: BLE001 - the original may be broken in exactly the way the fix repairs
        return None


def assert_same(before: Optional[List[Any]], after: Optional[List[Any]], where: str) -> None:
    assert before is not None
    assert after is not None, f"{where}: the fixed class no longer runs"
    assert len(before) == len(after), where
    for old, new in zip(before, after):
        if old is None or new is None:
            assert old is None and new is None, where
        else:
            assert torch.equal(old, new), where


@pytest.mark.parametrize("path", ORACLE_FIXTURES, ids=lambda path: path.name)
def test_fixed_oracle_fixtures_give_the_same_gradients(path: Path, tmp_path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    fixed_text, fixed_count, _, _ = fix_text(text, path.name, CheckOptions(preview=True, unsafe_fixes=True))
    fixed_path = tmp_path / path.name
    fixed_path.write_text(fixed_text, encoding="utf-8")
    original, fixed = load_fixture(path), load_fixture(fixed_path)
    blocks, fixed_blocks = parse_fixture(path), parse_fixture(fixed_path)
    assert [block.name for block in blocks] == [block.name for block in fixed_blocks]
    compared = 0
    for block, fixed_block in zip(blocks, fixed_blocks):
        for declaration, fixed_declaration in zip(block.declarations, fixed_block.declarations):
            before = gradients(declaration, original)
            after = gradients(fixed_declaration, fixed)
            if before is None:
                continue  # broken before the fix: whether the fix mends it is not this test's question
            assert_same(before, after, declaration.where)
            compared += 1
    assert compared > 0


SNIPPETS = {
    "staticmethod, ctx rename, decorator order": (
        """
        import torch
        from torch.autograd.function import once_differentiable

        class Fn(torch.autograd.Function):
            def forward(self, x, scale: float):
                self.save_for_backward(x)
                self.scale = scale
                return x * x * scale

            @once_differentiable
            @staticmethod
            def backward(self, grad):
                (x,) = self.saved_tensors
                return 2 * x * grad * self.scale, None

        def run(x):
            return Fn.apply(x, 3.0)
        """
    ),
    "missing None gradients": (
        """
        import torch

        class Fn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, scale: float, inplace: bool = False):
                ctx.scale = scale
                return x * scale

            @staticmethod
            def backward(ctx, grad):
                return grad * ctx.scale

        def run(x):
            return Fn.apply(x, 2.0, False)
        """
    ),
    "tensor kept on ctx": (
        """
        import torch

        class Fn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x: torch.Tensor):
                out = x.exp()
                ctx.out = out
                return out

            @staticmethod
            def backward(ctx, grad):
                return grad * ctx.out

        def run(x):
            return Fn.apply(x)
        """
    ),
    "two tensors kept on ctx": (
        """
        import torch

        class Fn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a: torch.Tensor, b: torch.Tensor):
                ctx.a = a
                ctx.b = b
                return a * b

            @staticmethod
            def backward(ctx, grad):
                return grad * ctx.b, grad * ctx.a

        def run(x):
            return Fn.apply(x.detach() * 3 + 1, x)
        """
    ),
    "an input and the output kept on ctx": (
        """
        import torch

        class Fn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x: torch.Tensor):
                ctx.x = x
                out = x * x
                ctx.out = out
                return out

            @staticmethod
            def backward(ctx, grad):
                return grad * 2 * ctx.out / ctx.x

        def run(x):
            return Fn.apply(x)
        """
    ),
    "list return and instantiation": (
        """
        import torch

        class Fn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                ctx.save_for_backward(x, y)
                return x * y

            @staticmethod
            def backward(ctx, grad):
                x, y = ctx.saved_tensors
                return [grad * y, grad * x]

        def run(x):
            return Fn()(x, x + 1)
        """
    ),
}


def _run_snippet(source: str, name: str) -> Optional[List[Any]]:
    namespace: Dict[str, Any] = {}
    exec(compile(source, name, "exec"), namespace)
    x = torch.linspace(0.5, 1.5, 5, dtype=torch.float64, requires_grad=True)
    try:
        (gradient,) = torch.autograd.grad(namespace["run"](x).sum(), [x])
    except Exception:  # noqa: BLE001 - the broken original
        return None
    return [gradient]


@pytest.mark.filterwarnings("ignore:.*should not be instantiated:DeprecationWarning")
@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_fixed_snippets_compute_the_intended_gradients(name: str) -> None:
    source = textwrap.dedent(SNIPPETS[name])
    fixed_source, count, remaining, _ = fix_text(source, "snippet.py", CheckOptions(preview=True, unsafe_fixes=True))
    assert count > 0 and fixed_source != source
    assert not [finding for finding in remaining if finding.fix is not None]
    after = _run_snippet(fixed_source, "fixed.py")
    x = torch.linspace(0.5, 1.5, 5, dtype=torch.float64)
    expected = {
        "staticmethod, ctx rename, decorator order": 6 * x,
        "missing None gradients": torch.full_like(x, 2.0),
        "list return and instantiation": 2 * x + 1,
        "tensor kept on ctx": x.exp(),
        "two tensors kept on ctx": 3 * x + 1,  # the gradient of b is a
        "an input and the output kept on ctx": 2 * x,
    }[name]
    assert after is not None, fixed_source
    assert torch.allclose(after[0], expected)
    before = _run_snippet(source, "original.py")
    if before is not None:  # where the original ran, the fix changed nothing it computed
        assert torch.equal(before[0], after[0])
