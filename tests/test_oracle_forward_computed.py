"""PyTorch as the oracle for ``agf005_forward_computed.py``: gradients computed in forward, buffers handed
to kernels through views, a shared preparation of the incoming gradient.

Every declaration of the fixture holds under torch. The silent cases that compute their gradients in
forward return autograd's gradients once backward has only rescaled them (in place or not): the work
was forward's, whatever needs_input_grad says. The reported cases run work that autograd throws away:
with one input frozen, needs_input_grad says so, backward still launches that input's kernel (or its
masked reduction), and the input gets no gradient.
"""

from __future__ import annotations

from functools import lru_cache
from types import SimpleNamespace
from typing import Callable, List, Tuple

import pytest

from conftest import require_torch

torch = require_torch()

from conftest import FIXTURES, expected_findings  # noqa: E402
from oracle import Declaration, LoadedFixture, check, load_fixture, parse_fixture  # noqa: E402

FORWARD_COMPUTED = FIXTURES / "agf005_forward_computed.py"
DECLARATIONS: List[Declaration] = [
    declaration for block in parse_fixture(FORWARD_COMPUTED) for declaration in block.declarations
]


@lru_cache(maxsize=None)
def _loaded() -> LoadedFixture:
    return load_fixture(FORWARD_COMPUTED)


@pytest.mark.parametrize("declaration", DECLARATIONS, ids=lambda declaration: declaration.class_name)
def test_torch_confirms_declaration(declaration: Declaration) -> None:
    check(declaration, _loaded())


def test_every_class_is_declared_and_both_verdicts_are_held() -> None:
    loaded = _loaded()
    blocks = parse_fixture(FORWARD_COMPUTED)
    for block in blocks:
        if issubclass(loaded.classes[block.line], torch.autograd.Function):
            assert block.declarations, f"{block.name} (line {block.line}) has no '# torch:' declaration"
    expected = expected_findings(FORWARD_COMPUTED)
    flagged = [
        block for block in blocks
        if any((line, "AGF005") in expected for line in range(block.line, block.end_line + 1))
    ]
    assert len(flagged) >= 3 and len(blocks) - len(flagged) >= 3


def _pair(requires: Tuple[bool, bool] = (True, True)) -> Tuple["torch.Tensor", "torch.Tensor"]:
    a = torch.tensor([0.5, 1.5, 2.0], dtype=torch.float64, requires_grad=requires[0])
    b = torch.tensor([1.0, -0.5, 3.0], dtype=torch.float64, requires_grad=requires[1])
    return a, b


@pytest.mark.parametrize(
    "class_name, extra",
    [
        ("DotMaybePrecomputed", (True,)),
        ("DotMaybePrecomputedInPlace", (True,)),
        ("DotKernelPrecomputed", ()),
        ("DotLossPrecomputed", ()),
        ("DotKernelOnCtx", ()),
    ],
)
def test_gradients_computed_in_forward_and_rescaled_equal_autograds(class_name: str, extra: tuple) -> None:
    """Silent cases: backward only rescales what forward computed, and the result is autograd's."""
    cls = getattr(_loaded().module, class_name)
    a, b = _pair()
    (cls.apply(a, b, *extra) * 2.5).backward()
    reference_a, reference_b = _pair()
    ((reference_a * reference_b).sum() * 2.5).backward()
    assert torch.allclose(a.grad, reference_a.grad) and torch.allclose(b.grad, reference_b.grad)


def _recording(
    module: object, cls: type, kernel_name: str
) -> Tuple[List[tuple], List[str], Callable[..., object], staticmethod]:
    """A counting stand-in for the kernel ``kernel_name`` and a backward recording needs_input_grad."""
    needs: List[tuple] = []
    launches: List[str] = []
    kernel = getattr(module, kernel_name)
    backward = cls.backward

    def counting_kernel(*args: object, **kwargs: object) -> object:
        launches.append(kernel_name)
        return kernel(*args, **kwargs)

    def recording_backward(ctx: object, *grads: object) -> object:
        needs.append(tuple(ctx.needs_input_grad))  # type: ignore[attr-defined]
        return backward(ctx, *grads)

    return needs, launches, counting_kernel, staticmethod(recording_backward)


@pytest.mark.parametrize("class_name", ["GatherPair", "GatherPairFlat"])
def test_separate_view_kernels_run_for_a_frozen_table_and_autograd_drops_the_result(class_name: str) -> None:
    """Reported cases: each buffer is filled by a kernel of its own through a view; with the second table
    frozen its kernel still runs, and autograd discards what it wrote."""
    module = _loaded().module
    cls = getattr(module, class_name)
    needs, launches, counting_kernel, recording_backward = _recording(module, cls, "_scatter_add")
    table_a = torch.rand(2, 3, dtype=torch.float64, requires_grad=True)
    table_b = torch.rand(2, 3, dtype=torch.float64)  # frozen
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, "_scatter_add", counting_kernel)
        patch.setattr(cls, "backward", recording_backward)
        cls.apply(table_a, table_b).sum().backward()
    assert needs == [(True, False)]
    assert launches == ["_scatter_add", "_scatter_add"]
    assert table_b.grad is None
    # forward's own operations, differentiated by autograd (a stand-in ctx takes what it saves)
    reference = table_a.detach().clone().requires_grad_()
    cls.forward(SimpleNamespace(save_for_backward=lambda *saved: None), reference, table_b).sum().backward()
    assert torch.allclose(table_a.grad, reference.grad)


def test_one_view_kernel_fills_both_tables_at_once() -> None:
    """GatherPairOneKernel (silent): one launch writes both buffers, whatever needs a gradient."""
    module = _loaded().module
    cls = module.GatherPairOneKernel
    needs, launches, counting_kernel, recording_backward = _recording(module, cls, "_scatter_add_pair")
    table_a = torch.rand(2, 3, dtype=torch.float64, requires_grad=True)
    table_b = torch.rand(2, 3, dtype=torch.float64)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, "_scatter_add_pair", counting_kernel)
        patch.setattr(cls, "backward", recording_backward)
        cls.apply(table_a, table_b).sum().backward()
    assert needs == [(True, False)] and launches == ["_scatter_add_pair"]


@pytest.mark.parametrize("class_name", ["MaskedRows", "MaskedRowsStacked"])
def test_shared_preparation_leaves_a_frozen_weights_reduction_to_be_dropped(class_name: str) -> None:
    """Reported cases: with the weight frozen, backward still computes the weight's masked reduction from
    the shared preparation, and autograd drops it; the input's gradient is autograd's."""
    module = _loaded().module
    cls = getattr(module, class_name)
    needs: List[tuple] = []
    returned: List[object] = []
    backward = cls.backward

    def recording_backward(ctx: object, grad: object) -> object:
        needs.append(tuple(ctx.needs_input_grad))  # type: ignore[attr-defined]
        result = backward(ctx, grad)
        returned.extend(result)
        return result

    x = torch.tensor([0.5, 1.5, 2.0], dtype=torch.float64, requires_grad=True)
    weight = torch.tensor([0.75], dtype=torch.float64)  # frozen
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cls, "backward", staticmethod(recording_backward))
        cls.apply(x, weight).sum().backward()
    assert needs == [(True, False)]
    assert returned[1] is not None and weight.grad is None  # computed, then thrown away
    reference = x.detach().clone().requires_grad_()
    scale = 3.0 if class_name == "MaskedRowsStacked" else 1.0
    masked = torch.where(reference > 1.0, reference, torch.zeros_like(reference))
    ((masked * weight).repeat(2, 1) * scale).sum().backward()
    assert torch.allclose(x.grad, reference.grad)
