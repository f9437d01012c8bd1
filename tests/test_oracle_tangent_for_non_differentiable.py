"""PyTorch is the oracle for AGF139: under forward-mode AD, a jvp that returns a tensor at the position of an
output forward marked non-differentiable raises; None there, or an output not marked, passes."""

from typing import Any, Tuple

import pytest

from conftest import codes_inside, fixture_module, require_torch

torch = require_torch()

import torch.autograd.forward_ad as forward_ad  # noqa: E402

STEM = "agf139"
REPORTED = {"SortWithIndices": (), "ReluWithMask": (), "ArgmaxAndDouble": ()}
SILENT_AND_FINE = {
    "SortWithIndicesNone": (), "DoubleAndTriple": (), "MarkSecondFillFirst": (), "MarkedThenRebound": (),
}


def _forward_mode(name: str, extra: Tuple[Any, ...]) -> Any:
    x = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=torch.float64)
    with forward_ad.dual_level():
        dual = forward_ad.make_dual(x, torch.ones_like(x))
        outputs = getattr(fixture_module(STEM), name).apply(dual, *extra)
        return [forward_ad.unpack_dual(output).tangent for output in outputs]


@pytest.mark.parametrize("name", sorted(REPORTED))
def test_a_tangent_for_a_marked_output_raises(name: str) -> None:
    with pytest.raises(RuntimeError, match="jvp returned a gradient at position"):
        _forward_mode(name, REPORTED[name])
    assert "AGF139" in codes_inside(STEM, name)


@pytest.mark.parametrize("name", sorted(SILENT_AND_FINE))
def test_none_for_a_marked_output_passes(name: str) -> None:
    tangents = _forward_mode(name, SILENT_AND_FINE[name])
    assert tangents[0] is not None
    assert "AGF139" not in codes_inside(STEM, name)


def test_a_mark_on_one_path_raises_only_there() -> None:
    """Why a mark under a condition is left alone: jvp's tangent is wrong only on the path that marks."""
    assert _forward_mode("MaybeMarked", (False,))[1] is not None
    with pytest.raises(RuntimeError, match="jvp returned a gradient at position"):
        _forward_mode("MaybeMarked", (True,))
    assert "AGF139" not in codes_inside(STEM, "MaybeMarked")
