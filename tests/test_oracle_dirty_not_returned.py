"""PyTorch is the oracle for AGF136: a tensor marked dirty in forward that no output is raises at every call,
with or without gradients; returning it (itself, through another name, or beside other outputs) passes."""

import warnings
from typing import Any, Tuple

import pytest

from conftest import codes_inside, fixture_module, require_torch

torch = require_torch()

STEM = "agf136"
REPORTED = {
    "AddOneThenDouble": (), "ClampThenClone": (), "ShiftToPair": (0.5,), "ScaleOrNegate": (True,),
    "ClampReturnsMask": (),
}
SILENT_AND_FINE = {
    "AddOneReturned": (), "ReturnedThroughAlias": (), "ReturnedInPair": (), "ReturnsInPlaceResult": (),
    "RebindsInput": (),
}


def _input(requires_grad: bool) -> Any:
    leaf = torch.linspace(-1.0, 1.0, 5, dtype=torch.float64, requires_grad=requires_grad)
    return leaf * 1 if requires_grad else leaf.clone()  # a non-leaf may be changed in place


def _apply(name: str, requires_grad: bool, extra: Tuple[Any, ...]) -> Any:
    return getattr(fixture_module(STEM), name).apply(_input(requires_grad), *extra)


@pytest.mark.parametrize("requires_grad", [True, False])
@pytest.mark.parametrize("name", sorted(REPORTED))
def test_a_dirty_input_not_returned_raises_on_every_call(name: str, requires_grad: bool) -> None:
    with pytest.raises(RuntimeError, match="marked as dirty during the forward method were not returned"):
        _apply(name, requires_grad, REPORTED[name])
    assert "AGF136" in codes_inside(STEM, name)


@pytest.mark.parametrize("requires_grad", [True, False])
@pytest.mark.parametrize("name", sorted(SILENT_AND_FINE))
def test_a_dirty_input_returned_passes(name: str, requires_grad: bool) -> None:
    out = _apply(name, requires_grad, SILENT_AND_FINE[name])
    first = out[0] if isinstance(out, tuple) else out
    if requires_grad:
        first.sum().backward()
    assert "AGF136" not in codes_inside(STEM, name)


def test_the_other_input_returned_raises_only_when_it_is_another_tensor() -> None:
    """Why AGF136 stays silent on ``return y`` of another input: passed the same tensor twice, the output is
    the tensor marked dirty, and torch accepts it."""
    function = getattr(fixture_module(STEM), "ReturnsOtherInput")
    x = _input(False)
    assert function.apply(x, x) is x
    with pytest.raises(RuntimeError, match="not returned as output"):
        function.apply(_input(False), _input(False))
    assert "AGF136" not in codes_inside(STEM, "ReturnsOtherInput")


def test_two_inputs_marked_and_one_returned_raise_unless_they_are_one_tensor() -> None:
    """Why AGF136 stays silent when another input is returned: passed twice, the tensor is returned."""
    function = getattr(fixture_module(STEM), "AddIntoFirstMarksBoth")
    x = _input(False)
    assert function.apply(x, x) is x
    with pytest.raises(RuntimeError, match="not returned as output"):
        function.apply(_input(False), _input(False))
    assert "AGF136" not in codes_inside(STEM, "AddIntoFirstMarksBoth")


def test_marking_a_local_only_warns() -> None:
    """A local (not an input) marked dirty and returned: torch only warns, and AGF136 is about inputs."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _apply("MarksLocal", True, ())
    assert any("not an input" in str(warning.message) for warning in caught)
    assert "AGF136" not in codes_inside(STEM, "MarksLocal")
