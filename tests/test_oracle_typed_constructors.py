"""PyTorch as the oracle for outputs of the legacy typed constructors (AGF004, AGF107, AGF113): an output made
by ``torch.IntTensor``, ``torch.LongTensor``, ``torch.ShortTensor``, ``torch.BoolTensor``, ... is an integer or
bool tensor, which autograd gives no node even when the inputs require grad, so the class's backward (right
or wrong) is never called. ``torch.FloatTensor`` and ``torch.DoubleTensor`` outputs do get a node."""

from __future__ import annotations

import pytest

from conftest import codes_inside, fixture_module, require_torch

torch = require_torch()

STEM = "agf004_typed_constructors"
SILENT = ("AGF004", "AGF107", "AGF113")


def _points() -> "torch.Tensor":
    return torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0], [3.0, 3.0]], requires_grad=True)


@pytest.mark.parametrize(
    "name, arguments, dtypes",
    [
        ("FarthestPointIndex", (3, 0.5), (torch.int32,)),
        ("NeighbourCount", (1.5, 2), (torch.int64,)),
        ("NeighbourFlags", (1.5, 2), (torch.int16, torch.bool)),
        ("QuantizeCodes", (4,), (torch.uint8, torch.int8)),
        ("RankAndMask", (0.5,), (torch.int64, torch.bool)),
    ],
)
def test_integer_outputs_get_no_node(name: str, arguments: tuple, dtypes: tuple) -> None:
    points = _points()
    inputs = (points.sum(-1),) if name == "RankAndMask" else (points,)
    result = getattr(fixture_module(STEM), name).apply(*inputs, *arguments)
    outputs = result if isinstance(result, tuple) else (result,)
    assert tuple(output.dtype for output in outputs) == dtypes
    assert all(output.grad_fn is None and not output.requires_grad for output in outputs)
    assert not set(SILENT) & codes_inside(STEM, name)


def test_a_float_tensor_output_gets_a_node_and_a_wrong_count_raises() -> None:
    points = _points()
    distance = fixture_module(STEM).FarthestDistance.apply(points, 3, 0.5)
    assert distance.dtype == torch.float32 and distance.grad_fn is not None
    with pytest.raises(RuntimeError, match="returned an incorrect number of gradients"):
        distance.sum().backward()
    assert "AGF004" in codes_inside(STEM, "FarthestDistance")


def test_a_double_tensor_output_reaches_the_missing_backward() -> None:
    table = fixture_module(STEM).DistanceTable.apply(_points())
    assert table.dtype == torch.float64 and table.grad_fn is not None
    with pytest.raises(NotImplementedError, match="You must implement either the backward or vjp method"):
        table.sum().backward()
    assert "AGF113" in codes_inside(STEM, "DistanceTable")


def test_float_values_beside_an_int_index_reach_a_short_backward() -> None:
    values, index = fixture_module(STEM).SampledValues.apply(_points(), 3, 0.5)
    assert index.dtype == torch.int32 and index.grad_fn is None
    assert values.grad_fn is not None
    with pytest.raises(RuntimeError, match="returned an incorrect number of gradients"):
        values.sum().backward()
    assert "AGF004" in codes_inside(STEM, "SampledValues")
