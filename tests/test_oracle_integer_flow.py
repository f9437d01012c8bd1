"""PyTorch as the oracle for forward-only Functions whose outputs are integer or bool by the flow of dtypes
(AGF113): a buffer made like an index tensor, a dtype taken from one, masks, counts. Autograd records no
node for such outputs even when every input requires grad, so the missing backward is never called. Where
the dtype comes from a float input (or cannot be settled), the output gets a node whose backward raises.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List

import pytest

from conftest import codes_inside, fixture_module, require_torch

torch = require_torch()

STEM = "agf113_integer_flow"
NOT_IMPLEMENTED = "You must implement either the backward or vjp method"


def _float(*shape: int) -> Any:
    return torch.rand(*shape, dtype=torch.float64, requires_grad=True)


def _outputs(result: Any) -> List[Any]:
    return list(result) if isinstance(result, tuple) else [result]


INTEGER_ONLY: Dict[str, Callable[[Any], Any]] = {
    "RenumberKept": lambda m: m.RenumberKept.apply(_float(6, 4), _float(6)),
    "BestClass": lambda m: m.BestClass.apply(_float(5, 3)),
    "ValidMasks": lambda m: m.ValidMasks.apply(_float(8), 0.25, 0.75),
    "BucketCounts": lambda m: m.BucketCounts.apply(_float(8), torch.tensor([0.3, 0.6], dtype=torch.float64)),
    "LabelCounts": lambda m: m.LabelCounts.apply(_float(8) * 4),
    "TopPositions": lambda m: m.TopPositions.apply(_float(6), 3),
}


@pytest.mark.parametrize("name", list(INTEGER_ONLY))
def test_integer_outputs_get_no_node(name: str) -> None:
    outputs = _outputs(INTEGER_ONLY[name](fixture_module(STEM)))
    for output in outputs:
        assert not output.is_floating_point() and not output.is_complex()
        assert output.grad_fn is None and not output.requires_grad
    assert "AGF113" not in codes_inside(STEM, name)


FLOAT_OUTPUT: Dict[str, Callable[[Any], Any]] = {
    "FillLikeInput": lambda m: m.FillLikeInput.apply(_float(4)),
    "AllocateAs": lambda m: m.AllocateAs.apply(_float(4), torch.float64),
    "ConvertLike": lambda m: m.ConvertLike.apply(_float(4), _float(4)),
    "WeightedCounts": lambda m: m.WeightedCounts.apply(torch.tensor([0, 1, 1]), _float(3)),
    "UniqueValues": lambda m: m.UniqueValues.apply(_float(5)),
    "MeanPosition": lambda m: m.MeanPosition.apply(_float(3, 4)),
}


@pytest.mark.parametrize("name", list(FLOAT_OUTPUT))
def test_a_float_output_gets_a_node_whose_backward_raises(name: str) -> None:
    outputs = _outputs(FLOAT_OUTPUT[name](fixture_module(STEM)))
    differentiable = [output for output in outputs if output.grad_fn is not None]
    assert differentiable and all(output.is_floating_point() for output in differentiable)
    with pytest.raises(NotImplementedError, match=NOT_IMPLEMENTED):
        differentiable[0].sum().backward()
    assert "AGF113" in codes_inside(STEM, name)


def test_the_unsettled_dtype_is_an_integer_one_on_some_calls() -> None:
    """AllocateAs with an integer dtype gives an output without a node: the dtype decides, and the class
    cannot tell which one it is given."""
    output = fixture_module(STEM).AllocateAs.apply(_float(4), torch.int64)
    assert output.dtype == torch.int64 and output.grad_fn is None
