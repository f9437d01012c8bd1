"""PyTorch is the oracle for AGF109-AGF112: fixture Functions run under torch, next to their lint verdicts.

Each test takes a flagged case and its silent counterpart from tests/fixtures/agf1NN.py, shows what
torch does with each (an error, or a wrong result, against a correct run), and checks that the linter
reports the first and not the second. The whole module is skipped when torch is not installed.
"""

import importlib
import os

import pytest

if os.environ.get("AGF_REQUIRE_TORCH"):
    torch = importlib.import_module("torch")
else:
    torch = pytest.importorskip(
        "torch", reason="the oracle layer runs fixture Functions under PyTorch, which is not installed"
    )

import warnings  # noqa: E402

from conftest import codes_inside as _codes_in, fixture_module as _fixture  # noqa: E402


def _vector(*values: float) -> "torch.Tensor":
    return torch.tensor(values, dtype=torch.float64, requires_grad=True)


# --- AGF109: forward modifies an input in place without ctx.mark_dirty ------------------------------


def test_agf109_input_changed_in_place_gives_wrong_gradient_without_mark_dirty() -> None:
    fixture = _fixture("agf109")
    results = {}
    for name in ("ReluInplaceNoDirty", "ReluInplaceDirty"):
        a = _vector(-1.0, 2.0, -3.0)
        h = a * 3
        y = getattr(fixture, name).apply(h)
        (y + h).sum().backward()  # d/da of 2 * relu(3a)
        results[name] = a.grad.tolist()
    assert results["ReluInplaceDirty"] == [0.0, 6.0, 0.0]
    assert results["ReluInplaceNoDirty"] == [3.0, 6.0, 3.0]  # h kept its old history: silently wrong
    assert "AGF109" in _codes_in("agf109", "ReluInplaceNoDirty")
    assert "AGF109" not in _codes_in("agf109", "ReluInplaceDirty")


def test_agf109_leaf_is_overwritten_silently_without_mark_dirty() -> None:
    fixture = _fixture("agf109")
    leaf = _vector(-1.0, 2.0)
    fixture.ReluInplaceNoDirty.apply(leaf)
    assert leaf.tolist() == [0.0, 2.0]  # the parameter's data changed, and nothing complained
    guarded = _vector(-1.0, 2.0)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used in an in-place"):
        fixture.ReluInplaceDirty.apply(guarded)
    assert "AGF109" in _codes_in("agf109", "ReluInplaceNoDirty")
    assert "AGF109" not in _codes_in("agf109", "ReluInplaceDirty")


def test_agf109_input_changed_in_place_breaks_an_earlier_saved_tensor() -> None:
    fixture = _fixture("agf109")
    a = _vector(1.0, 2.0)
    y = fixture.ShiftThenScale.apply(a.exp())  # exp saved its result, which forward then changes
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    b = _vector(1.0, 2.0)
    fixture.ShiftThenScaleCopy.apply(b.exp()).sum().backward()
    assert torch.allclose(b.grad, 2 * b.detach().exp())
    assert "AGF109" in _codes_in("agf109", "ShiftThenScale")
    assert "AGF109" not in _codes_in("agf109", "ShiftThenScaleCopy")


def test_agf109_running_statistics_buffers_are_harmless_and_cannot_be_marked_dirty() -> None:
    """Precision: a batch-norm forward updating running stats in place is correct code."""
    fixture = _fixture("agf109")
    running_mean = torch.zeros(3, dtype=torch.float64)
    running_var = torch.ones(3, dtype=torch.float64)
    x = torch.randn(8, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: fixture.BatchNormTrainStats.apply(t, running_mean, running_var), (x,))
    assert not torch.equal(running_mean, torch.zeros(3, dtype=torch.float64))  # the stats were updated

    class MarksBufferDirty(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, running_mean):
            running_mean.add_(x.mean(0))
            ctx.mark_dirty(running_mean)
            return x * 2

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * 2, None

    with pytest.raises(RuntimeError, match="marked as dirty during the forward method were not returned"):
        MarksBufferDirty.apply(x, torch.zeros(3, dtype=torch.float64))
    assert "AGF109" not in _codes_in("agf109", "BatchNormTrainStats")


def test_agf109_storage_swap_into_a_placeholder_works_and_cannot_be_marked_dirty() -> None:
    """Precision: ``placeholder.set_(tensor)`` on a leaf parameter is an aliasing idiom, not a bug."""
    fixture = _fixture("agf109")
    tensor = _vector(1.0, 2.0, 3.0)
    placeholder = torch.nn.Parameter(torch.zeros(3, dtype=torch.float64))
    out = fixture.AliasIntoPlaceholder.apply(tensor, placeholder)
    (out * 2).sum().backward()
    assert placeholder.tolist() == [1.0, 2.0, 3.0]
    assert placeholder.grad.tolist() == [2.0, 2.0, 2.0]  # the gradient reached the placeholder

    class MarksPlaceholderDirty(torch.autograd.Function):
        @staticmethod
        def forward(ctx, tensor, placeholder):
            placeholder.set_(tensor.detach())
            ctx.mark_dirty(placeholder)
            return placeholder

        @staticmethod
        def backward(ctx, grad_output):
            return None, grad_output

    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used in an in-place"):
        MarksPlaceholderDirty.apply(_vector(1.0, 2.0, 3.0), torch.nn.Parameter(torch.zeros(3, dtype=torch.float64)))
    assert "AGF109" not in _codes_in("agf109", "AliasIntoPlaceholder")


# --- AGF110: backward modifies a gradient it received in place --------------------------------------

AGF110_PAIRS = [
    ("ReluMaskGrad", "ReluMaskGradCopy"),
    ("RoundSTEClipped", "RoundSTEClippedCopy"),
    ("SquareOut", "SquareOutBuffer"),
]


@pytest.mark.parametrize(("flagged", "silent"), AGF110_PAIRS, ids=[pair[0] for pair in AGF110_PAIRS])
def test_agf110_in_place_gradient_overwrites_the_callers_tensor(flagged: str, silent: str) -> None:
    fixture = _fixture("agf110")
    outcomes = {}
    for name in (flagged, silent):
        x = _vector(-1.5, 0.5, 2.0)
        gradient = torch.full((3,), 4.0, dtype=torch.float64)
        getattr(fixture, name).apply(x).backward(gradient)
        outcomes[name] = (gradient.tolist(), x.grad.tolist())
    assert outcomes[silent][0] == [4.0, 4.0, 4.0]
    assert outcomes[flagged][0] != [4.0, 4.0, 4.0]  # the tensor passed to .backward() was changed
    assert outcomes[flagged][1] == outcomes[silent][1]  # same gradient for x: only the caller's tensor differs
    assert "AGF110" in _codes_in("agf110", flagged)
    assert "AGF110" not in _codes_in("agf110", silent)


def test_agf110_in_place_gradient_corrupts_another_branch() -> None:
    fixture = _fixture("agf110")
    grads = {}
    for name in ("ReluMaskGrad", "ReluMaskGradCopy"):
        a = _vector(-1.0, 2.0)
        b = _vector(3.0, 4.0)
        w = b * 5  # created first, so its backward runs after the Function's
        z = getattr(fixture, name).apply(a) + w  # the addition hands one gradient tensor to both branches
        z.backward(torch.ones(2, dtype=torch.float64))
        grads[name] = (a.grad.tolist(), b.grad.tolist())
    assert grads["ReluMaskGradCopy"] == ([0.0, 1.0], [5.0, 5.0])
    assert grads["ReluMaskGrad"] == ([0.0, 1.0], [0.0, 5.0])  # b's gradient silently lost its first element
    assert "AGF110" in _codes_in("agf110", "ReluMaskGrad")
    assert "AGF110" not in _codes_in("agf110", "ReluMaskGradCopy")


# --- AGF111: a Function instantiated, or its forward called directly ---------------------------------


def test_agf111_instantiated_function_raises_where_apply_works() -> None:
    fixture = _fixture("agf111")
    x = _vector(0.4, 1.6)
    with pytest.warns(DeprecationWarning, match="should not be instantiated"):
        with pytest.raises(RuntimeError, match="Legacy autograd function with non-static forward method"):
            fixture.round_ste_legacy(x)
    fixture.round_ste(x).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]
    assert "AGF111" in _codes_in("agf111", "round_ste_legacy")
    assert "AGF111" not in _codes_in("agf111", "round_ste")


def test_agf111_instance_kept_by_a_module_raises_where_apply_works() -> None:
    fixture = _fixture("agf111")
    x = torch.randn(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        legacy = fixture.QuantLinear(3, 4)
    with pytest.raises(RuntimeError, match="Legacy autograd function"):
        legacy(x)
    layer = fixture.QuantLinearApply(3, 4)
    layer(x).sum().backward()
    assert layer.weight.grad is not None and layer.weight.grad.abs().sum() > 0  # straight-through gradient
    assert "AGF111" in _codes_in("agf111", "QuantLinear")
    assert "AGF111" not in _codes_in("agf111", "QuantLinearApply")


def test_agf111_direct_forward_bypasses_the_custom_backward() -> None:
    fixture = _fixture("agf111")
    direct = _vector(0.4, 1.6)
    fixture.round_ste_direct(direct).sum().backward()
    applied = _vector(0.4, 1.6)
    fixture.round_ste(applied).sum().backward()
    assert direct.grad.tolist() == [0.0, 0.0]  # round's own zero gradient: the straight-through backward never ran
    assert applied.grad.tolist() == [1.0, 1.0]
    assert "AGF111" not in _codes_in("agf111", "round_ste_direct")  # the literal None ctx: taken as deliberate
    assert "AGF111" in _codes_in("agf111", "scaled_exp_own_ctx")  # a ctx of the caller's: reported
    assert "AGF111" not in _codes_in("agf111", "round_ste")


def test_agf111_direct_forward_with_no_ctx_fails_where_apply_works() -> None:
    fixture = _fixture("agf111")
    layer = fixture.ScaledExpLayer(2.0)
    x = _vector(0.0, 1.0)
    layer.train()
    assert torch.allclose(layer(x), 2 * x.detach().exp())
    layer.eval()
    with pytest.raises(AttributeError, match="'NoneType' object has no attribute 'save_for_backward'"):
        layer(x)
    assert "AGF111" not in _codes_in("agf111", "ScaledExpLayer")  # a None ctx: deliberate, and fails loudly
    assert "AGF111" not in _codes_in("agf111", "QuantLinearApply")


# --- AGF112: setup_context defined while forward still takes ctx ------------------------------------

AGF112_PAIRS = [
    ("ExpMixed", "ExpSeparate"),
    ("ExpFromBaseMixed", "ScaledExpFromBase"),
]


@pytest.mark.parametrize(("flagged", "silent"), AGF112_PAIRS, ids=[pair[0] for pair in AGF112_PAIRS])
def test_agf112_forward_taking_ctx_with_setup_context_fails_at_apply(flagged: str, silent: str) -> None:
    fixture = _fixture("agf112")
    x = _vector(0.0, 1.0)
    with pytest.raises(TypeError, match="missing a required argument: 'x'"):
        getattr(fixture, flagged).apply(x)
    getattr(fixture, silent).apply(x).sum().backward()
    assert torch.allclose(x.grad, x.detach().exp())
    assert "AGF112" in _codes_in("agf112", flagged)
    assert "AGF112" not in _codes_in("agf112", silent)


def test_agf112_extra_arguments_shift_into_the_leftover_ctx() -> None:
    fixture = _fixture("agf112")
    x = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(4, dtype=torch.float64, requires_grad=True)
    with pytest.raises(RuntimeError):  # ctx=x, x=weight, weight=bias: the inputs slid by one
        fixture.LinearMixed.apply(x, weight, bias)
    assert torch.autograd.gradcheck(fixture.LinearSeparate.apply, (x, weight, bias))
    assert "AGF112" in _codes_in("agf112", "LinearMixed")
    assert "AGF112" not in _codes_in("agf112", "LinearSeparate")


def test_agf112_subclass_adding_setup_context_fails_at_apply() -> None:
    fixture = _fixture("agf112")
    x = _vector(-0.5, 1.0)
    with pytest.raises(TypeError, match="missing a required argument: 'x'"):
        fixture.GeluMixedSubclass.apply(x)
    assert torch.autograd.gradcheck(fixture.GeluCombined.apply, (x,))
    # The mistake is the subclass's: the finding belongs there, not on the correct base.
    assert "AGF112" in _codes_in("agf112", "GeluMixedSubclass")
    assert "AGF112" not in _codes_in("agf112", "GeluCombined")


def test_agf112_first_input_named_context_is_an_input() -> None:
    """Precision: in the separate style, a tensor input may be called ``context``."""
    fixture = _fixture("agf112")
    context = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    query = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(fixture.ContextGate.apply, (context, query))
    with pytest.raises(TypeError, match="missing a required argument: 'x'"):
        fixture.ExpKernelMixed.apply(query)
    assert "AGF112" in _codes_in("agf112", "ExpKernelMixed")
    assert "AGF112" not in _codes_in("agf112", "ContextGate")
    # Unannotated too: an operand of arithmetic is an input, not a leftover ctx.
    assert torch.autograd.gradcheck(fixture.ContextMix.apply, (context, context.detach().clone().requires_grad_()))
    assert "AGF112" not in _codes_in("agf112", "ContextMix")
