"""PyTorch is the oracle for AGF109 and AGF110 through aliases: writes through a view, ``.data``, ``.detach()``,
another name, a torch in-place function or a helper of the module reach the input or the gradient itself.

Each test runs classes of tests/fixtures/agf109_aliases.py or agf110_aliases.py under torch and checks the
linter reports exactly the ones whose write torch shows reaching the caller's tensor. Skipped without torch.
"""

import importlib
import os
from typing import Dict, List, Tuple

import pytest

if os.environ.get("AGF_REQUIRE_TORCH"):
    torch = importlib.import_module("torch")
else:
    torch = pytest.importorskip(
        "torch", reason="the oracle layer runs fixture Functions under PyTorch, which is not installed"
    )

from conftest import codes_inside, fixture_module  # noqa: E402

# --- AGF109: forward writes into an input through an alias ------------------------------------------

# Each class with the arguments that follow the tensor input.
AGF109_WRITING = {
    "ScaleFlatView": (2.0,),
    "ZeroFirstRow": (),
    "ClampData": (),
    "ShiftDetached": (),
    "RotateKeyOfPair": (),
    "NegateSecond": (),
    "ZeroFirstColumn": (),
    "BumpThroughData": (),
    "ReluFunctionalInPlace": (),
    "LeakyReluInplaceFlag": (),
    "NegateIntoFirst": (),
    "RotateHalfHelper": (),
    "ShiftHelperInplace": (),
    "NormalizeRowsHelper": (),
    "RectifyHelper": (),
    "ClearFirstRowHelper": (),
    "ClearThroughViewHelper": (),
}
AGF109_NOT_WRITING = {
    "ShiftHelperCopy": (),
    "FillFreshBuffer": (),
    "ScaleReshaped": (),
    "ShiftContiguous": (),
    "ZeroMaskedCopy": (),
    "ScaleClonedView": (),
    "AddNoResidual": (),
    "ScaleByModeCopy": (),
    "DoubledHelper": (),
    "RememberHelper": (),
}


def _input() -> "torch.Tensor":
    """A (2, 4) non-leaf tensor with negative and positive values, as a layer's output would be."""
    leaf = torch.tensor([[-1.5, 2.0, -0.5, 3.0], [1.0, -2.5, 4.0, -3.5]], dtype=torch.float64, requires_grad=True)
    return leaf * 1


@pytest.mark.parametrize("name", sorted(AGF109_WRITING))
def test_agf109_write_through_an_alias_changes_the_callers_input(name: str) -> None:
    fixture = fixture_module("agf109_aliases")
    x = _input()
    before = x.detach().clone()
    getattr(fixture, name).apply(x, *AGF109_WRITING[name])
    assert not torch.equal(x.detach(), before)  # the caller's tensor was overwritten, and nothing complained
    assert "AGF109" in codes_inside("agf109_aliases", name)


@pytest.mark.parametrize("name", sorted(AGF109_NOT_WRITING))
def test_agf109_no_write_reaches_the_input(name: str) -> None:
    """Precision: a copy (``.reshape`` or ``.contiguous()`` of a transposed input, a mask index, a clone)
    or a helper not asked to work in place leaves the input as it was."""
    fixture = fixture_module("agf109_aliases")
    x = _input()
    before = x.detach().clone()
    getattr(fixture, name).apply(x, *AGF109_NOT_WRITING[name])
    assert torch.equal(x.detach(), before)
    assert "AGF109" not in codes_inside("agf109_aliases", name)


def test_agf109_write_through_a_view_breaks_an_earlier_saved_tensor() -> None:
    fixture = fixture_module("agf109_aliases")
    leaf = torch.rand(2, 4, dtype=torch.float64, requires_grad=True)
    y = fixture.ZeroFirstRow.apply(leaf.exp())  # exp saved its result, which the view write then changes
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    assert "AGF109" in codes_inside("agf109_aliases", "ZeroFirstRow")


def test_agf109_write_through_data_gives_a_silently_wrong_gradient() -> None:
    """``.data`` hides the write from the version counter: no error, a wrong gradient."""
    fixture = fixture_module("agf109_aliases")
    leaf = torch.tensor([-1.0, 0.5], dtype=torch.float64, requires_grad=True)
    fixture.ClampData.apply(leaf.tanh()).sum().backward()  # tanh saved its result; the clamp overwrote it
    correct = 2 * (1 - leaf.detach().tanh() ** 2)
    assert not torch.allclose(leaf.grad, correct)
    assert leaf.grad[0].item() == 2.0  # tanh's backward read 0.0 where its output was tanh(-1)
    assert leaf.grad[1].item() == pytest.approx(correct[1].item())
    assert "AGF109" in codes_inside("agf109_aliases", "ClampData")


def test_agf109_leaf_is_overwritten_through_a_view_without_mark_dirty() -> None:
    fixture = fixture_module("agf109_aliases")
    leaf = torch.ones(2, 4, dtype=torch.float64, requires_grad=True)
    fixture.ZeroFirstRow.apply(leaf)
    assert leaf[0].tolist() == [0.0] * 4  # a parameter's data changed silently
    guarded = torch.ones(2, 4, dtype=torch.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used in an in-place"):
        fixture.ZeroFirstRowDirty.apply(guarded)
    assert "AGF109" not in codes_inside("agf109_aliases", "ZeroFirstRowDirty")


# --- AGF110: backward writes into a gradient it received through an alias ---------------------------

AGF110_PAIRS: List[Tuple[str, str]] = [
    ("ScaleAliased", "ScaleClonedGrad"),
    ("ScaleFlatGrad", "ScaleClonedGrad"),
    ("ScaleDetachedGrad", "ScaleClonedGrad"),
    ("ScaleHelperInplaceGrad", "ScaleHelperCopyGrad"),
    ("ClipHelperGrad", "ScaleClonedGrad"),
    ("ClampFunctionalGrad", "ScaleClonedGrad"),
    ("ZeroFirstGrad", "ScaleClonedGrad"),
    ("NegateSecondHalfGrad", "ScaleClonedGrad"),
]


def _seeded_backward(name: str) -> Tuple[List[float], List[float]]:
    """(the seed tensor after backward, the sibling branch's gradient) for ``z = F(a) + 5 * b``."""
    fixture = fixture_module("agf110_aliases")
    a = torch.tensor([-1.0, 2.0, 0.5, 3.0], dtype=torch.float64, requires_grad=True)
    b = torch.tensor([1.0, 1.0, 1.0, 1.0], dtype=torch.float64, requires_grad=True)
    w = b * 5  # created first, so its backward runs after the Function's
    z = getattr(fixture, name).apply(a) + w  # the addition hands one gradient tensor to both branches
    seed = torch.full((4,), 4.0, dtype=torch.float64)
    z.backward(seed)
    return seed.tolist(), b.grad.tolist()


@pytest.mark.parametrize(("flagged", "silent"), AGF110_PAIRS, ids=[pair[0] for pair in AGF110_PAIRS])
def test_agf110_write_through_an_alias_corrupts_the_shared_gradient(flagged: str, silent: str) -> None:
    outcomes: Dict[str, Tuple[List[float], List[float]]] = {name: _seeded_backward(name) for name in (flagged, silent)}
    assert outcomes[silent] == ([4.0] * 4, [20.0] * 4)
    seed, sibling = outcomes[flagged]
    assert seed != [4.0] * 4  # the tensor passed to .backward() was changed
    assert sibling != [20.0] * 4  # and the other branch's gradient with it
    assert "AGF110" in codes_inside("agf110_aliases", flagged)
    assert "AGF110" not in codes_inside("agf110_aliases", silent)


def test_agf110_write_through_a_view_fails_on_the_expanded_gradient_of_sum() -> None:
    fixture = fixture_module("agf110_aliases")
    a = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        fixture.ScaleFlatGrad.apply(a).sum().backward()
    fixture.ScaleClonedGrad.apply(a).sum().backward()
    assert a.grad.tolist() == [2.0, 2.0]
    assert "AGF110" in codes_inside("agf110_aliases", "ScaleFlatGrad")
    assert "AGF110" not in codes_inside("agf110_aliases", "ScaleClonedGrad")


@pytest.mark.parametrize("name", ["ScaleReshapedGrad", "ScaleContiguousGrad"])
def test_agf110_reshape_and_contiguous_alias_only_for_some_layouts(name: str) -> None:
    """Why the linter stays silent on a write through ``.reshape()`` or ``.contiguous()``: it reaches the
    received gradient when that is contiguous, and a copy when it is not, which the code does not show."""
    fixture = fixture_module("agf110_aliases")
    seed, _ = _seeded_backward(name)
    assert seed != [4.0] * 4  # a contiguous gradient: the write went through
    a = torch.ones(2, 3, dtype=torch.float64, requires_grad=True)
    transposed_seed = torch.full((3, 2), 4.0, dtype=torch.float64)
    getattr(fixture, name).apply(a).t().backward(transposed_seed)  # backward receives a transposed view
    assert transposed_seed.tolist() == [[4.0, 4.0]] * 3  # a copy was written: the caller's tensor is intact
    assert a.grad.tolist() == [[8.0] * 3] * 2
    assert "AGF110" not in codes_inside("agf110_aliases", name)
