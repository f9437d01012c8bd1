"""PyTorch as the oracle for when a forward-only Function's missing backward can be reached (AGF113).

apply under ``no_grad``/``inference_mode`` records no node, so backward is never reached: the rule is
silent when every use of the class in its module is such a call. A call with gradients on (even one, or
one in a function merely defined inside the no_grad block) records a node whose backward raises.
"""

from __future__ import annotations

import pytest

from conftest import codes_inside, fixture_module, require_torch

torch = require_torch()

NOT_IMPLEMENTED = "You must implement either the backward or vjp method"


def _inputs() -> "tuple[torch.Tensor, torch.Tensor]":
    return torch.ones(3, requires_grad=True), torch.full((3,), 2.0, requires_grad=True)


def test_every_use_without_grad_records_no_node() -> None:
    fixture = fixture_module("agf113")
    state, token = _inputs()
    decoder = fixture.Decoder()
    for output in (
        fixture.decode(state, [token, token]),
        fixture.decode_one(state, token),
        decoder(state, token),
        decoder.step(state, token),
    ):
        assert output.grad_fn is None and not output.requires_grad
    # The same apply with gradients on records a node whose backward raises.
    with pytest.raises(NotImplementedError, match=NOT_IMPLEMENTED):
        fixture.DecodeStepKernel.apply(state, token).sum().backward()
    assert "AGF113" not in codes_inside("agf113", "DecodeStepKernel")


def test_one_use_with_grad_reaches_the_missing_backward() -> None:
    fixture = fixture_module("agf113")
    x, _ = _inputs()
    assert fixture.score_eval(x).grad_fn is None
    with pytest.raises(NotImplementedError, match=NOT_IMPLEMENTED):
        fixture.score_train(x).sum().backward()
    assert "AGF113" in codes_inside("agf113", "ScoreKernel")


def test_a_function_defined_in_the_no_grad_block_runs_with_grad() -> None:
    fixture = fixture_module("agf113")
    x, _ = _inputs()
    with pytest.raises(NotImplementedError, match=NOT_IMPLEMENTED):
        fixture.make_deferred()(x).sum().backward()
    assert "AGF113" in codes_inside("agf113", "DeferredKernel")


def test_gradients_turned_back_on_reach_the_missing_backward() -> None:
    fixture = fixture_module("agf113")
    x, _ = _inputs()
    with pytest.raises(NotImplementedError, match=NOT_IMPLEMENTED):
        fixture.reenabled(x).sum().backward()
    assert "AGF113" in codes_inside("agf113", "ReenabledKernel")


def test_outputs_marked_non_differentiable_or_of_an_integer_dtype_never_reach_backward() -> None:
    fixture = fixture_module("agf113")
    x, _ = _inputs()
    marked = fixture.ArgmaxIndexFunction.apply(x)
    assert marked.grad_fn is None and not marked.requires_grad

    class IntegerOnly(torch.autograd.Function):  # the rule does not know dtypes: still reported
        @staticmethod
        def forward(ctx, values):  # type: ignore[no-untyped-def]
            return torch.argmax(values, dim=-1)

    index = IntegerOnly.apply(x)
    assert index.dtype == torch.int64 and index.grad_fn is None and not index.requires_grad
    assert "AGF113" not in codes_inside("agf113", "ArgmaxIndexFunction")


@pytest.mark.parametrize("name, inputs", [("_RoundingBase", 1), ("_ProjectionBase", 2)])
def test_an_abstract_base_raises_before_any_output(name: str, inputs: int) -> None:
    """Forward calls a hook the base does not define: applied itself it raises, and no node is recorded."""
    fixture = fixture_module("agf113")
    with pytest.raises(AttributeError, match="has no attribute"):
        getattr(fixture, name).apply(*[torch.ones(3, requires_grad=True)] * inputs)
    assert "AGF113" not in codes_inside("agf113", name)


def test_the_subclasses_of_abstract_bases_run_their_own_backward() -> None:
    fixture = fixture_module("agf113")
    x = torch.rand(3, requires_grad=True)
    fixture.FloorRound.apply(x * 4).sum().backward()
    assert torch.equal(x.grad, torch.full((3,), 4.0))
    with pytest.raises(NotImplementedError, match="subclasses define forward"):
        fixture._NormBase.apply(x)
    fixture.L2Norm.apply(x).backward()
    for name in ("FloorRound", "_NormBase", "L2Norm"):
        assert "AGF113" not in codes_inside("agf113", name)


def test_a_base_the_module_applies_itself_reaches_the_missing_backward() -> None:
    """_DoubleBase defines its hook and has a subclass, but double() applies the base itself."""
    fixture = fixture_module("agf113")
    x = torch.rand(3, requires_grad=True)
    fixture.TripleScale.apply(x).sum().backward()
    output = fixture.double(x)
    assert output.grad_fn is not None
    with pytest.raises(NotImplementedError, match=NOT_IMPLEMENTED):
        output.sum().backward()
    assert "AGF113" in codes_inside("agf113", "_DoubleBase")
    assert "AGF113" not in codes_inside("agf113", "TripleScale")
