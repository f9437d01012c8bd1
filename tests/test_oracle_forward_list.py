"""PyTorch is the oracle for AGF116 in forward: a list returned by forward is one non-tensor output, so the
tensors in it are not tracked and backward never runs; the tuple the fix writes makes them outputs."""

from pathlib import Path
from typing import Any, List

from conftest import FIXTURES, codes, codes_inside, fixture_module, require_torch

torch = require_torch()

import pytest  # noqa: E402

from flake8_autograd.adapters.command.fixer import fix_text  # noqa: E402
from flake8_autograd.adapters.command.runner import CheckOptions  # noqa: E402
from oracle import load_fixture  # noqa: E402

STEM = "agf116"
FLAGGED = ("SplitHalvesFunction", "ScaleShiftFunction", "TripleFunction", "SplitSumFunction")


def _cls(name: str) -> Any:
    return getattr(fixture_module(STEM), name)


def _input(size: int = 4) -> Any:
    return torch.linspace(0.5, 2.0, size, dtype=torch.float64, requires_grad=True)


def _outputs(name: str, *extra: Any) -> List[Any]:
    result = _cls(name).apply(_input(), *extra)
    assert isinstance(result, list)
    return result


@pytest.mark.parametrize("name", FLAGGED)
def test_forward_list_outputs_are_not_tracked(name: str) -> None:
    extra = (2.0,) if name == "ScaleShiftFunction" else ()
    outputs = _outputs(name, *extra)
    assert all(isinstance(output, torch.Tensor) and output.grad_fn is None for output in outputs)
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"):
        sum(output.sum() for output in outputs).backward()
    assert "AGF116" in codes_inside(STEM, name)


def test_forward_list_gradient_is_lost_beside_another_path() -> None:
    """With another path to the input, backward runs without error and the list's share is silently missing."""
    x = _input()
    head, tail = _cls("SplitHalvesFunction").apply(x)
    (head.sum() + tail.sum() + x.sum()).backward()
    assert torch.equal(x.grad, torch.ones(4, dtype=torch.float64))  # the true gradient is 3 everywhere


def test_silent_forwards_run_fine() -> None:
    for name in ("SplitHalvesTupleFunction", "StackPowersFunction", "MinMaxFunction"):
        shape = (2, 3) if name == "MinMaxFunction" else (4,)
        x = torch.linspace(0.5, 2.0, shape[-1] * (2 if len(shape) == 2 else 1), dtype=torch.float64)
        x = x.reshape(shape).requires_grad_()
        assert torch.autograd.gradcheck(_cls(name).apply, (x,)), name
        assert "AGF116" not in codes_inside(STEM, name), name


def test_fixed_forwards_compute_the_gradients(tmp_path: Path) -> None:
    """The fix turns each list whose elements backward takes one gradient each into a tuple, and the fixed
    class passes gradcheck; SplitSumFunction, whose backward takes one gradient for two outputs, is left."""
    text = (FIXTURES / f"{STEM}.py").read_text(encoding="utf-8")
    options = CheckOptions(preview=True, select=("AGF116",), unsafe_fixes=True)  # in forward, AGF116's fix is unsafe
    fixed_text, _, _, _ = fix_text(text, f"{STEM}.py", options)
    fixed_path = tmp_path / f"{STEM}.py"
    fixed_path.write_text(fixed_text, encoding="utf-8")
    fixed = load_fixture(fixed_path).module
    assert "return [x[:2] * 2, x[2:] * 2]  # AGF116" in fixed_text  # SplitSumFunction, not fixed
    for name, extra in (("SplitHalvesFunction", ()), ("ScaleShiftFunction", (2.0,)), ("TripleFunction", ())):
        apply = getattr(fixed, name).apply
        assert torch.autograd.gradcheck(lambda x: apply(x, *extra), (_input(),)), name


def test_contract_case_forward_list_is_reported() -> None:
    """The contract's reproduction in our words: a split returned as a list from forward."""
    source = """
import torch

class Halves(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return [x[:3] * 2, x[3:] * 2]

    @staticmethod
    def backward(ctx, grad_first, grad_second):
        return torch.cat([grad_first, grad_second]) * 2
"""
    assert codes(source, preview=True) == ["AGF116"]
