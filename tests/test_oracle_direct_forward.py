"""PyTorch as the oracle for AGF111's silent direct forward calls: given no argument that can be a tensor
requiring grad, apply records no graph node, so a direct ``Cls.forward(None, ...)`` call loses nothing.
Where an argument may be such a tensor, or forward uses the ctx it is given, the direct call differs."""

from __future__ import annotations

import pytest

from conftest import codes_inside, fixture_module, require_torch

torch = require_torch()


def _storage(module: object) -> object:
    scale = torch.tensor([0.5, 0.25], requires_grad=True)  # a tensor that requires grad, held by the object
    return module.QuantizedStorage(torch.tensor([2, 4], dtype=torch.int8), scale)  # type: ignore[attr-defined]


def test_apply_records_no_node_for_a_storage_object_and_a_dtype() -> None:
    fixture = fixture_module("agf111")
    storage = _storage(fixture)
    applied = fixture.DequantizeStorage.apply(storage, torch.float32)
    assert applied.grad_fn is None and not applied.requires_grad  # apply looks at its arguments, not into them
    direct = storage.dequantize()
    assert torch.equal(direct.detach(), applied)
    assert "AGF111" not in codes_inside("agf111", "QuantizedStorage")
    assert "AGF111" not in codes_inside("agf111", "PackedStorage")


def test_apply_records_no_node_for_literals_and_dtypes() -> None:
    fixture = fixture_module("agf111")
    applied = fixture.Ramp.apply(4, torch.float32)
    assert applied.grad_fn is None and not applied.requires_grad
    direct, _ = fixture.ramp(4)
    assert torch.equal(direct, applied)
    assert "AGF111" not in codes_inside("agf111", "ramp")


def test_a_tensor_self_gets_a_node_from_apply_and_none_from_the_direct_call() -> None:
    fixture = fixture_module("agf111")
    applied_leaf = torch.tensor([1.0, 2.0], requires_grad=True)
    tensor = applied_leaf.as_subclass(fixture.QuantizedTensorNoApply)
    tensor.scale = 3.0
    fixture.DequantizeStorage.apply(tensor, torch.float32).sum().backward()
    assert applied_leaf.grad is not None and applied_leaf.grad.tolist() == [1.0, 1.0]  # the custom backward ran
    direct = tensor.dequantize()
    assert direct.grad_fn is None  # forward read .data: the direct call cut the graph
    # The literal None ctx is taken as the caller's statement that no graph is wanted: not reported.
    assert "AGF111" not in codes_inside("agf111", "QuantizedTensorNoApply")
    # The same call given a ctx that is not None is reported.
    assert "AGF111" in codes_inside("agf111", "StorageWithContext")


def test_the_fast_path_of_a_tensor_subclass_takes_apply_when_grad_is_on() -> None:
    fixture = fixture_module("agf111")
    leaf = torch.tensor([1.0, 2.0], requires_grad=True)
    tensor = leaf.as_subclass(fixture.QuantizedTensor)
    tensor.scale = 3.0
    assert tensor.dequantize().grad_fn is not None
    with torch.no_grad():
        assert tensor.dequantize().grad_fn is None
    assert "AGF111" not in codes_inside("agf111", "QuantizedTensor")


def test_literal_arguments_but_a_ctx_used_by_forward_fail_where_apply_works() -> None:
    fixture = fixture_module("agf111")
    assert fixture.LengthSaved.apply(3).tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(AttributeError, match="'NoneType' object has no attribute 'n'"):
        fixture.zeros_direct()
    assert "AGF111" not in codes_inside("agf111", "zeros_direct")  # a None ctx: deliberate (and loud)
