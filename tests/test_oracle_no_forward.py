"""PyTorch is the oracle for AGF137: a Function applied without a forward of its own or of a base raises
NotImplementedError at every call; one whose forward is defined, assigned, conditional or added by a
decorator runs."""

import pytest

from conftest import codes_inside, fixture_module, require_torch

torch = require_torch()

STEM = "agf137"
REPORTED = ["DoubleMisspelt", "TripleCapitalised", "OnlyBackward", "ForwardInsideBackward", "ScaledNoForward"]
SILENT_AND_FINE = ["ScaledWithForward", "Quadruple", "DoubleAssigned", "DoubleConditional", "DoubleDecorated",
                   "DoubleFromMixin"]


@pytest.mark.parametrize("name", REPORTED)
def test_applying_a_function_without_forward_raises(name: str) -> None:
    function = getattr(fixture_module(STEM), name)
    with pytest.raises(NotImplementedError, match="must implement the forward function"):
        function.apply(torch.ones(3, requires_grad=True))
    assert "AGF137" in codes_inside(STEM, name)


@pytest.mark.parametrize("name", SILENT_AND_FINE)
def test_a_forward_defined_any_way_runs(name: str) -> None:
    x = torch.ones(3, requires_grad=True)
    getattr(fixture_module(STEM), name).apply(x).sum().backward()
    assert x.grad is not None
    assert "AGF137" not in codes_inside(STEM, name)
