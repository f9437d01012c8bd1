"""PyTorch is the oracle for AGF138: with ``clear_saved_tensors_on_access = True`` a second read of
ctx.saved_tensors in backward raises; one read, reads on separate branches, or the default setting pass."""

from typing import Any, Tuple

import pytest

from conftest import codes_inside, fixture_module, require_torch

torch = require_torch()

STEM = "agf138"
REPORTED = {"SquareReadTwice": (), "ExpReadTwice": (), "CubeReadInTest": (), "ExpReadInWith": (), "SquarePair": ()}
SILENT_AND_FINE = {
    "SquareReadOnce": (), "SquareReadTwiceAllowed": (), "AbsOneReadPerBranch": (True,),
    "SumMaybeLoop": (1,),
}


def _backward(name: str, extra: Tuple[Any, ...]) -> Any:
    x = torch.linspace(-1.0, 1.0, 5, dtype=torch.float64, requires_grad=True)
    getattr(fixture_module(STEM), name).apply(x, *extra).sum().backward()
    return x.grad


@pytest.mark.parametrize("name", sorted(REPORTED))
def test_a_second_read_raises(name: str) -> None:
    with pytest.raises(RuntimeError, match="saved_tensors can only be accessed once"):
        _backward(name, REPORTED[name])
    assert "AGF138" in codes_inside(STEM, name)


@pytest.mark.parametrize("name", sorted(SILENT_AND_FINE))
def test_one_read_on_each_path_passes(name: str) -> None:
    assert _backward(name, SILENT_AND_FINE[name]) is not None
    assert "AGF138" not in codes_inside(STEM, name)


@pytest.mark.parametrize("name, extra", [("SumMaybeLoop", (2,)), ("ReluEarlyReturn", ())])
def test_a_second_read_on_a_path_the_data_decides_is_left_alone(name: str, extra: Tuple[Any, ...]) -> None:
    """Why a read in a loop, or after an early return, is not reported: it raises only on the paths where the
    loop runs twice or the return is not taken, which depend on values the module does not fix."""
    with pytest.raises(RuntimeError, match="can only be accessed once"):
        _backward(name, extra)
    assert "AGF138" not in codes_inside(STEM, name)
