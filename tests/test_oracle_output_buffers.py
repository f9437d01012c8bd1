"""PyTorch as the oracle for AGF003's output buffers: a caller's tensor kept on ctx that backward fills and
returns as the gradient holds no state (its contents before backward never matter), and saving it with
save_for_backward would make autograd reject the caller's reuse of it. A ctx tensor whose contents backward
reads does hold state: an in-place change after forward silently changes the gradient."""

from __future__ import annotations

from typing import Any

import pytest

from conftest import codes_inside, fixture_module, require_torch

torch = require_torch()

STEM = "agf003_buffers"


def _inputs() -> "tuple[Any, Any]":
    x = torch.arange(12, dtype=torch.float64).reshape(4, 3).requires_grad_()
    index = torch.tensor([2, 0, 2])
    return x, index


def _expected_gradient(x: Any, index: Any) -> Any:
    expected = torch.zeros_like(x)
    expected.index_add_(0, index, torch.ones(3, 3, dtype=x.dtype))
    return expected


@pytest.mark.parametrize(
    "name", ["GatherRowsIntoBuffer", "GatherFlatIntoBuffer", "GatherRowsModuleHelper", "GatherRowsConditional"]
)
def test_a_filled_buffer_holds_no_state(name: str) -> None:
    function = getattr(fixture_module(STEM), name)
    x, index = _inputs()
    buffer = torch.empty(4, 3, dtype=torch.float64)
    out = function.apply(x, index, buffer)
    buffer.fill_(123.0)  # the caller reuses its buffer after forward: nothing backward reads
    out.sum().backward()
    torch.testing.assert_close(x.grad, _expected_gradient(x, index))
    torch.testing.assert_close(buffer.view(4, 3), _expected_gradient(x, index))  # the gradient went there
    x.grad = None
    function.apply(x, index).sum().backward()  # no buffer given: fresh memory
    torch.testing.assert_close(x.grad, _expected_gradient(x, index))
    assert "AGF003" not in codes_inside(STEM, name)


def test_saving_the_buffer_instead_rejects_the_callers_reuse() -> None:
    class SavedBuffer(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, index, grad_out):  # type: ignore[no-untyped-def]
            ctx.save_for_backward(index, grad_out)
            return x[index]

        @staticmethod
        def backward(ctx, grad):  # type: ignore[no-untyped-def]
            index, g = ctx.saved_tensors
            fixture_module(STEM).scatter_rows(grad, index, g)
            return g, None, None

    x, index = _inputs()
    buffer = torch.empty(4, 3, dtype=torch.float64)
    out = SavedBuffer.apply(x, index, buffer)
    buffer.fill_(123.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_a_gradient_read_from_ctx_changes_with_the_callers_edit() -> None:
    function = fixture_module(STEM).InjectGradient
    x = torch.ones(3, requires_grad=True)
    injected = torch.full((3,), 2.0)
    out = function.apply(x, injected)
    injected.mul_(10)  # no version check: the gradient silently follows
    out.sum().backward()
    torch.testing.assert_close(x.grad, torch.full((3,), 20.0))
    assert "AGF003" in codes_inside(STEM, "InjectGradient")


def test_a_buffer_also_computed_with_is_state() -> None:
    function = fixture_module(STEM).AccumulateIntoBuffer
    x, index = _inputs()
    buffer = torch.zeros(4, 3, dtype=torch.float64)
    out = function.apply(x, index, buffer)
    buffer.fill_(1.0)  # summed by backward before the fill: the gradient changes with it
    out.sum().backward()
    torch.testing.assert_close(x.grad, _expected_gradient(x, index) + 12.0)
    assert "AGF003" in codes_inside(STEM, "AccumulateIntoBuffer")


def test_a_weight_the_buffer_is_filled_from_is_state() -> None:
    function = fixture_module(STEM).ScaledGatherIntoBuffer
    x, index = _inputs()
    scale = torch.tensor(2.0, dtype=torch.float64)
    out = function.apply(x, index, scale)
    scale.mul_(10)
    out.sum().backward()
    torch.testing.assert_close(x.grad, 20 * _expected_gradient(x, index))  # not the 2x of the forward
    assert codes_inside(STEM, "ScaledGatherIntoBuffer") == {"AGF003"}


def test_an_output_overwritten_in_place_is_read() -> None:
    function = fixture_module(STEM).SigmoidInPlaceBackward
    x = torch.linspace(-2, 2, 5, dtype=torch.float64, requires_grad=True)
    function.apply(x).sum().backward()
    sigmoid = torch.sigmoid(x.detach())
    torch.testing.assert_close(x.grad, sigmoid * (1 - sigmoid))  # computed from the stored values
    assert "AGF003" in codes_inside(STEM, "SigmoidInPlaceBackward")


def test_a_list_of_uninitialised_workspaces_holds_no_state() -> None:
    """What the workspaces hold before backward writes them never reaches the gradient: filled with
    garbage between forward and backward, the gradient is the same. With a computed tensor in the list,
    that element is read in backward: changing it changes the gradient (state kept on ctx)."""
    module = fixture_module(STEM)
    x = torch.rand(3, dtype=torch.float64, requires_grad=True)
    node = module.WorkspaceList.apply(x)
    for workspace in node.grad_fn.workspaces:
        workspace.fill_(123.0)
    node.sum().backward()
    torch.testing.assert_close(x.grad, torch.full_like(x, 2.0))
    assert "AGF003" not in codes_inside(STEM, "WorkspaceList")
    x.grad = None
    assert torch.autograd.gradcheck(module.WorkspaceListWithData.apply, (x,))
    node = module.WorkspaceListWithData.apply(x)
    node.grad_fn.workspaces[1].fill_(1.0)  # the kept data changed before backward, unchecked by autograd
    node.sum().backward()
    torch.testing.assert_close(x.grad, torch.full_like(x, 2.0))  # not 2 * exp(x): a silently wrong gradient
    assert not torch.allclose(x.grad, 2 * torch.exp(x.detach()))
    assert "AGF003" in codes_inside(STEM, "WorkspaceListWithData")


def test_zero_size_placeholders_hold_nothing() -> None:
    """A zero-element tensor has no values for a change to alter: the placeholders kept on ctx carry
    no data into backward, and the gradient is right."""
    module = fixture_module(STEM)
    x = torch.rand(4, dtype=torch.float64, requires_grad=True)
    node = module.ZeroSizeScratch.apply(x)
    assert all(placeholder.numel() == 0 for placeholder in node.grad_fn.scratch)
    node.sum().backward()
    torch.testing.assert_close(x.grad, torch.full_like(x, 2.0))
    assert "AGF003" not in codes_inside(STEM, "ZeroSizeScratch")
    assert torch.autograd.gradcheck(module.SizedScratch.apply, (x.detach().requires_grad_(),))
    assert module.SizedScratch.apply(x).grad_fn.scratch[0].numel() == 4  # sized: it holds x's values
    assert "AGF003" in codes_inside(STEM, "SizedScratch")
