"""PyTorch as the oracle for AGF111's ctx argument: a direct forward call records no node of the Function,
whatever ctx it is given. The literal ``None`` says the caller knows it (not reported); a ctx object of the
caller's, or a None that is an input of a separate-style forward, does not (reported)."""

from __future__ import annotations

from conftest import codes_inside, fixture_module, require_torch

torch = require_torch()


def _node_names(output: "torch.Tensor") -> str:
    return type(output.grad_fn).__name__


def test_a_ctx_of_the_callers_records_no_node_of_the_function() -> None:
    fixture = fixture_module("agf111")
    x = torch.tensor([0.5, 1.0], requires_grad=True)
    assert _node_names(fixture.ScaledExp.apply(x, 2.0)) == "ScaledExpBackward"
    direct = fixture.scaled_exp_own_ctx(x)
    assert _node_names(direct) == "MulBackward0"  # the ops inside forward, not the Function's node
    assert "AGF111" in codes_inside("agf111", "scaled_exp_own_ctx")


def test_a_none_input_of_a_separate_style_forward_is_no_ctx() -> None:
    fixture = fixture_module("agf111")
    x = torch.tensor([0.5, 1.0], requires_grad=True)
    assert _node_names(fixture.AddBias.apply(None, x)) == "AddBiasBackward"
    assert _node_names(fixture.add_no_bias(x)) == "CloneBackward0"
    assert "AGF111" in codes_inside("agf111", "add_no_bias")


def test_a_literal_none_ctx_is_not_reported_though_it_records_no_node() -> None:
    fixture = fixture_module("agf111")
    x = torch.tensor([0.4, 1.6], requires_grad=True)
    assert _node_names(fixture.round_ste_direct(x)) == "RoundBackward0"
    assert "AGF111" not in codes_inside("agf111", "round_ste_direct")
