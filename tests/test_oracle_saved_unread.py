"""PyTorch is the oracle for AGF122: a tensor passed to ctx.save_for_backward stays alive until backward
whether backward reads it or not, and leaving out the tensors backward never reads changes no gradient."""

from typing import Any, Callable, List, Tuple

from conftest import codes_inside, fixture_module, lint, require_torch

torch = require_torch()

STEM = "agf122"


def _cls(name: str) -> Any:
    return getattr(fixture_module(STEM), name)


def _inputs(count: int) -> List[Any]:
    torch.manual_seed(0)
    return [torch.rand(256, dtype=torch.float64, requires_grad=True) for _ in range(count)]


def _saved_bytes_and_gradients(apply: Callable[..., Any], count: int) -> Tuple[int, List[Any]]:
    """Bytes of the tensors the graph keeps for backward (``saved_tensors_hooks`` sees each one saved),
    and the gradients of the inputs."""
    kept: List[int] = []

    def pack(tensor: Any) -> Any:
        kept.append(tensor.numel() * tensor.element_size())
        return tensor

    inputs = _inputs(count)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        output = apply(*inputs)
    output.sum().backward()
    return sum(kept), [tensor.grad for tensor in inputs]


TENSOR_BYTES = 256 * 8


def test_unread_saves_keep_memory_and_the_lean_version_gives_the_same_gradient() -> None:
    """The seed example: input and intermediate are held until backward; saving the output alone is enough."""
    wasteful_bytes, wasteful_grads = _saved_bytes_and_gradients(_cls("WastefulExpFunction").apply, 1)
    lean_bytes, lean_grads = _saved_bytes_and_gradients(_cls("LeanExpFunction").apply, 1)
    assert wasteful_bytes == 3 * TENSOR_BYTES
    assert lean_bytes == TENSOR_BYTES
    assert torch.allclose(wasteful_grads[0], lean_grads[0])
    assert "AGF122" in codes_inside(STEM, "WastefulExpFunction")
    assert "AGF122" not in codes_inside(STEM, "LeanExpFunction")


def test_every_flagged_class_keeps_a_tensor_backward_does_not_need() -> None:
    """Each flagged class computes a correct gradient (gradcheck) while holding more than backward reads."""
    cases = {
        "AddMulFunction": (3, 3 * TENSOR_BYTES),
        "SigmoidPlaceholderFunction": (1, 2 * TENSOR_BYTES),
        "TripleFunction": (1, TENSOR_BYTES),
        "IndexedSquareFunction": (1, 2 * TENSOR_BYTES),
        "CubeSetupFunction": (1, 2 * TENSOR_BYTES),
    }
    for name, (count, expected_bytes) in cases.items():
        apply = _cls(name).apply
        assert torch.autograd.gradcheck(apply, tuple(_inputs(count))), name
        assert _saved_bytes_and_gradients(apply, count)[0] == expected_bytes, name
        assert "AGF122" in codes_inside(STEM, name), name


def test_triple_needs_no_saved_tensor() -> None:
    """Backward of 3 * x reads nothing: the gradient is the same with no save at all."""
    _, grads = _saved_bytes_and_gradients(_cls("TripleFunction").apply, 1)
    assert torch.equal(grads[0], torch.full((256,), 3.0, dtype=torch.float64))


def test_silent_cases_run_fine() -> None:
    one_input = ("WholeTupleFunction", "StarredUnpackFunction", "HelperBackwardFunction", "SameTensorTwiceFunction",
                 "LengthCheckFunction")
    two_inputs = ("NestedReadFunction", "OptionalBiasFunction", "LoopIndexFunction", "ScaleBothFunction")
    for name in one_input:
        assert torch.autograd.gradcheck(_cls(name).apply, tuple(_inputs(1))), name
        assert "AGF122" not in codes_inside(STEM, name), name
    for name in two_inputs:
        assert torch.autograd.gradcheck(_cls(name).apply, tuple(_inputs(2))), name
        assert "AGF122" not in codes_inside(STEM, name), name
    for flag in (True, False):
        x = _inputs(1)[0]
        assert torch.autograd.gradcheck(lambda value: _cls("BranchSaveFunction").apply(value, flag), (x,))
    for name in ("BranchSaveFunction", "PackedSaveFunction", "ScaleBaseFunction", "RaisingBackwardFunction"):
        assert "AGF122" not in codes_inside(STEM, name), name


# The contract case in our own words: x * w + b saves all three inputs; backward reads only w.
ADD_MUL = """
import torch


class AddMul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save_for_backward(x, w, b)
        return x * w + b

    @staticmethod
    def backward(ctx, g):
        x, w, b = ctx.saved_tensors
        return g * w, None, g
"""


def test_contract_case_is_reported_naming_the_unread_tensors() -> None:
    found = [finding for finding in lint(ADD_MUL, preview=True) if finding.code == "AGF122"]
    assert len(found) == 1
    assert found[0].line == 8
    assert "never reads saved x and b" in found[0].message


def test_seed_example_names_input_and_intermediate() -> None:
    source = (
        "import torch\n\n\n"
        "class Wasteful(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, input):\n"
        "        intermediate = input.exp()\n"
        "        output = intermediate * 2\n"
        "        ctx.save_for_backward(input, intermediate, output)  # Wastes memory\n"
        "        return output\n\n"
        "    @staticmethod\n"
        "    def backward(ctx, grad_output):\n"
        "        input, intermediate, output = ctx.saved_tensors\n"
        "        return grad_output * output\n"
    )
    found = [finding for finding in lint(source, preview=True) if finding.code == "AGF122"]
    assert [finding.line for finding in found] == [9]
    assert "never reads saved input and intermediate" in found[0].message
