"""PyTorch is the oracle for AGF127: every floating output of a Function that is not marked
non-differentiable carries a gradient into backward; a backward that never reads it gives a loss that
uses that output a silently wrong gradient. The reference is the same computation in plain torch ops."""

from typing import Any, Callable, Dict, List, Sequence, Tuple

from conftest import codes_inside, fixture_module, lint, require_torch

torch = require_torch()

STEM = "agf127"


def _cls(name: str) -> Any:
    return getattr(fixture_module(STEM), name)


def _leaf(*shape: int, seed: int = 0) -> Any:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, dtype=torch.float64, generator=generator).requires_grad_()


def _loss(outputs: Sequence[Any]) -> Any:
    """A loss that uses every floating output, each with its own weights."""
    total = torch.zeros((), dtype=torch.float64)
    for index, output in enumerate(outputs):
        if output.is_floating_point():
            weights = torch.linspace(0.5, 1.5 + index, output.numel(), dtype=torch.float64).reshape(output.shape)
            total = total + (output * weights).sum()
    return total


def _gradients(function: Callable[..., Any], inputs: Sequence[Any]) -> Tuple[Any, ...]:
    leaves = [value.detach().clone().requires_grad_() if value.is_floating_point() else value for value in inputs]
    _loss(function(*leaves)).backward()
    return tuple(leaf.grad for leaf in leaves if leaf.is_floating_point())


def _matches(name: str, reference: Callable[..., Any], inputs: Sequence[Any]) -> bool:
    found = _gradients(_cls(name).apply, inputs)
    expected = _gradients(reference, inputs)
    return all(torch.allclose(got, want) for got, want in zip(found, expected))


def _x() -> Any:
    return _leaf(3, 4)


# name -> (the same computation in plain torch ops, the inputs)
Cases = Dict[str, Tuple[Callable[..., Any], Callable[[], List[Any]]]]

FLAGGED: Cases = {
    "SinCosFunction": (lambda x: (torch.sin(x), torch.cos(x)), lambda: [_x()]),
    "CenterFunction": (lambda x: (x - x.mean(-1, keepdim=True), x.mean(-1, keepdim=True)), lambda: [_x()]),
    "FusedActivationFunction": (
        lambda x, w: ((x @ w).relu(), x @ w, torch.argmax((x @ w).relu(), dim=-1)),
        lambda: [_x(), _leaf(4, 2, seed=1)],
    ),
    "ExpSoftplusFunction": (lambda x: (x.exp(), torch.nn.functional.softplus(x)), lambda: [_x()]),
    "RowSoftmaxFunction": (lambda s: (torch.softmax(s, -1), torch.logsumexp(s, -1)), lambda: [_x()]),
    "PolarFunction": (
        lambda x, y: (x + y, torch.sqrt(x * x + y * y), torch.atan2(y, x)),
        lambda: [_x(), _leaf(3, 4, seed=2)],
    ),
}

SILENT: Cases = {
    "SinCosCompleteFunction": (lambda x: (torch.sin(x), torch.cos(x)), lambda: [_x()]),
    "CenterMarkedFunction": (
        lambda x: (x - x.mean(-1, keepdim=True), x.mean(-1, keepdim=True).detach()), lambda: [_x()],
    ),
    "TopValuesFunction": (lambda x: torch.topk(x, 2, dim=-1), lambda: [_x()]),
    "ReluWithMaskFunction": (lambda x: (x * (x > 0).to(x.dtype), (x > 0).to(x.dtype)), lambda: [_x()]),
    "SinCosStarredFunction": (lambda x: (torch.sin(x), torch.cos(x)), lambda: [_x()]),
    "CubeTwiceFunction": (lambda x: (x * 2, x ** 3), lambda: [_x()]),
    "DetachedStatsFunction": (lambda x: (x * 2, x.detach().abs().amax()), lambda: [_x()]),
    "WithScratchFunction": (lambda x: (x * 3, torch.zeros(4, dtype=torch.float64)), lambda: [_x()]),
    "SplitMarkedFunction": (lambda x: (x.exp(), x.sum().detach()), lambda: [_x()]),
    "GatherWithOffsetsFunction": (
        lambda x, index: (x[index], index + 1), lambda: [_x(), torch.tensor([2, 0, 0])],
    ),
    "ExchangeWithCountsFunction": (
        lambda x, counts: (x.flip(0), counts.flip(0)), lambda: [_x(), torch.tensor([1, 2, 3])],
    ),
}


def test_flagged_classes_give_a_wrong_gradient_when_the_loss_uses_the_dropped_output() -> None:
    for name, (reference, inputs) in FLAGGED.items():
        assert not _matches(name, reference, inputs()), name
        assert "AGF127" in codes_inside(STEM, name), name


def test_flagged_classes_are_right_when_the_loss_ignores_the_dropped_output() -> None:
    """Autograd sends zeros for an unused output: the bug shows only when a loss uses it."""
    x = _x()
    sin, _ = _cls("SinCosFunction").apply(x)
    sin.sum().backward()
    assert torch.allclose(x.grad, torch.cos(x.detach()))


def test_silent_classes_match_plain_torch() -> None:
    for name, (reference, inputs) in SILENT.items():
        assert _matches(name, reference, inputs()), name
        assert "AGF127" not in codes_inside(STEM, name), name


def test_marked_output_carries_no_gradient() -> None:
    x = _x()
    _, mean = _cls("CenterMarkedFunction").apply(x)
    assert not mean.requires_grad
    _, total = _cls("SplitMarkedFunction").apply(x)
    assert not total.requires_grad


def test_integer_output_carries_no_gradient_and_a_float_mask_does() -> None:
    """An integer output gets no place in the graph; a float mask does, but its true derivative is zero."""
    x = _x()
    _, indices = _cls("TopValuesFunction").apply(x)
    assert not indices.requires_grad
    _, mask = _cls("ReluWithMaskFunction").apply(x)
    assert mask.requires_grad


MARK_WRONG_TARGET = '''
import torch


class ReluAndMask(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        mask = (x > 0).to(x.dtype)
        ctx.mark_non_differentiable(x)
        ctx.save_for_backward(mask)
        return x * mask, mask

    @staticmethod
    def backward(ctx, grad, grad_mask):
        (mask,) = ctx.saved_tensors
        return grad * mask
'''


def test_contract_case_mask_marked_wrongly_is_silent() -> None:
    """The reproduction of a mark given the input instead of the mask: the mask still requires grad,
    but it is a comparison: its derivative is zero, so backward is right to drop its gradient."""
    assert "AGF127" not in {finding.code for finding in lint(MARK_WRONG_TARGET, preview=True)}
    namespace: Dict[str, Any] = {}
    exec(compile(MARK_WRONG_TARGET, "<case>", "exec"), namespace)
    x = _x()
    _, mask = namespace["ReluAndMask"].apply(x)
    assert mask.requires_grad
    (mask * 3).sum().backward()
    assert torch.equal(x.grad, torch.zeros_like(x))


SEED_STYLE = '''
import torch


class MinMax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        low = x.amin(dim=0)
        high = x.amax(dim=0)
        ctx.save_for_backward(x, low)
        return low, high

    @staticmethod
    def backward(ctx, grad_low, grad_high):
        x, low = ctx.saved_tensors
        return grad_low * (x == low)
'''


def test_reported_at_the_unread_gradient() -> None:
    findings = [finding for finding in lint(SEED_STYLE, preview=True) if finding.code == "AGF127"]
    assert [(finding.line, finding.column) for finding in findings] == [(14, 32)]
    assert "grad_high" in findings[0].message


def test_a_gradient_named_as_unused_is_left_alone() -> None:
    """``_grad_out`` says the author means to drop it: the double hands back its output whatever the loss."""
    x = _x()
    _cls("FixedGradientDouble").apply(x).mul(3.0).sum().backward()
    assert torch.allclose(x.grad, x.detach())  # not the true gradient (3.0): deliberately so
    assert "AGF127" not in codes_inside(STEM, "FixedGradientDouble")
