"""PyTorch as the oracle for forward-only Functions whose outputs are index tensors (AGF113): autograd records
no node for integer or bool outputs, even from inputs that require grad, so the missing backward is never
called. A float output (the values the indices select) does get a node, whose backward raises."""

from __future__ import annotations

from typing import Any

import pytest

from conftest import codes_inside, fixture_module, require_torch

torch = require_torch()

STEM = "agf113_index_outputs"
NOT_IMPLEMENTED = "You must implement either the backward or vjp method"


def _boxes() -> "tuple[Any, Any]":
    boxes = torch.tensor([[0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.1], [5.0, 5.0, 6.0, 6.0]], requires_grad=True)
    scores = torch.tensor([0.9, 0.8, 0.7], requires_grad=True)
    return boxes, scores


@pytest.mark.parametrize("max_kept, min_score", [(0, 0.0), (1, 0.0), (0, 0.75), (2, 0.75)])
def test_suppression_indices_get_no_node(max_kept: int, min_score: float) -> None:
    boxes, scores = _boxes()
    inds = fixture_module(STEM).SuppressBoxes.apply(boxes, scores, 0.5, max_kept, min_score)
    assert inds.dtype == torch.int64 and inds.grad_fn is None and not inds.requires_grad
    assert "AGF113" not in codes_inside(STEM, "SuppressBoxes")


def test_a_ranking_used_as_an_index_and_a_mask_get_no_node() -> None:
    module = fixture_module(STEM)
    rows = torch.randn(4, 3, requires_grad=True)
    order, kept = module.RankRows.apply(rows, torch.rand(4, requires_grad=True))
    assert order.dtype == torch.int64 and kept.dtype == torch.bool
    assert order.grad_fn is None and kept.grad_fn is None
    picks = module.GatherIndexCheck.apply(rows)
    assert picks.dtype == torch.int64 and picks.grad_fn is None
    assert "AGF113" not in codes_inside(STEM, "RankRows")
    assert "AGF113" not in codes_inside(STEM, "GatherIndexCheck")


@pytest.mark.parametrize("name", ["GatherKept", "SuppressWithBoxes"])
def test_selected_values_get_a_node_whose_backward_raises(name: str) -> None:
    boxes, scores = _boxes()
    result = getattr(fixture_module(STEM), name).apply(boxes, scores, 0.5)
    values = result[0] if isinstance(result, tuple) else result
    assert values.requires_grad and values.grad_fn is not None
    with pytest.raises(NotImplementedError, match=NOT_IMPLEMENTED):
        values.sum().backward()
    assert "AGF113" in codes_inside(STEM, name)


def test_a_float_path_beside_the_index_path_reaches_the_missing_backward() -> None:
    boxes, scores = _boxes()
    function = fixture_module(STEM).TwoKernels
    assert function.apply(boxes, scores, True).grad_fn is None
    with pytest.raises(NotImplementedError, match=NOT_IMPLEMENTED):
        function.apply(boxes, scores, False).sum().backward()
    assert "AGF113" in codes_inside(STEM, "TwoKernels")
