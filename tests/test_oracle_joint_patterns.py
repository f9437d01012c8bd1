"""PyTorch as the oracle for AGF005's fixtures of joint and separate launches.

``agf005_launch_order.py`` (launches that read a prepared buffer), ``agf005_in_place_launch.py``
(incoming gradients written in place by a launch) and ``agf005_tied_inputs.py`` (separate work whose
inputs the callers tie): every class there computes correct gradients (each declaration is a
gradcheck), so a silent case hides no wrong slot. For the reported pattern of launches reading one
prepared buffer, a frozen weight still pays for its launch: ``ctx.needs_input_grad`` says the weight
needs no gradient, backward runs the weight's launch all the same, and autograd drops it. Where the
callers tie two pairs of inputs, needs_input_grad asks for both pairs or for neither, whatever requires
grad; where a caller detaches one input, some choice asks for one pair only.
"""

from __future__ import annotations

from functools import lru_cache
import itertools
from pathlib import Path
from typing import Callable, List, Set, Tuple

import pytest

from conftest import require_torch

torch = require_torch()

from conftest import FIXTURES, expected_findings  # noqa: E402
from oracle import Declaration, LoadedFixture, check, load_fixture, parse_fixture  # noqa: E402

LAUNCH_ORDER = FIXTURES / "agf005_launch_order.py"
TIED_INPUTS = FIXTURES / "agf005_tied_inputs.py"
PATTERN_FIXTURES = [LAUNCH_ORDER, FIXTURES / "agf005_in_place_launch.py", TIED_INPUTS]
DECLARATIONS: List[Tuple[Path, Declaration]] = [
    (path, declaration)
    for path in PATTERN_FIXTURES
    for block in parse_fixture(path)
    for declaration in block.declarations
]


@lru_cache(maxsize=None)
def _loaded(path: Path) -> LoadedFixture:
    return load_fixture(path)


@pytest.mark.parametrize(
    "path, declaration", DECLARATIONS, ids=lambda value: getattr(value, "class_name", getattr(value, "stem", ""))
)
def test_torch_confirms_declaration(path: Path, declaration: Declaration) -> None:
    check(declaration, _loaded(path))


@pytest.mark.parametrize("path", PATTERN_FIXTURES, ids=lambda path: path.stem)
def test_every_function_class_is_declared_as_a_gradcheck(path: Path) -> None:
    loaded = _loaded(path)
    for block in parse_fixture(path):
        if issubclass(loaded.classes[block.line], torch.autograd.Function):
            assert block.declarations, f"{block.name} (line {block.line}) has no '# torch:' declaration"
            assert all(declaration.verdict == "passes gradcheck" for declaration in block.declarations), block.name


@pytest.mark.parametrize("path", PATTERN_FIXTURES, ids=lambda path: path.stem)
def test_fixture_holds_both_verdicts(path: Path) -> None:
    expected = expected_findings(path)
    blocks = parse_fixture(path)
    flagged = [
        block for block in blocks
        if any((line, "AGF005") in expected for line in range(block.line, block.end_line + 1))
    ]
    assert len(flagged) >= 3 and len(blocks) - len(flagged) >= 3


def test_frozen_weight_still_runs_its_launch_and_autograd_drops_the_result() -> None:
    """ScaledMatMul (reported): with the weight frozen, needs_input_grad says so, yet backward runs the
    weight's launch; the input and scale gradients are those of plain autograd."""
    module = _loaded(LAUNCH_ORDER).module
    launches: List[str] = []
    needs: List[tuple] = []
    weight_kernel = module._weight_kernel
    backward = module.ScaledMatMul.backward

    def counting_weight_kernel(*args: object) -> None:
        launches.append("weight")
        weight_kernel(*args)

    def recording_backward(ctx: object, grad: object) -> object:
        needs.append(tuple(ctx.needs_input_grad))  # type: ignore[attr-defined]
        return backward(ctx, grad)

    x = torch.rand(2, 3, dtype=torch.float64, requires_grad=True)
    weight = torch.rand(3, 4, dtype=torch.float64)  # frozen
    scale = torch.rand(2, 1, dtype=torch.float64, requires_grad=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, "_weight_kernel", counting_weight_kernel)
        patch.setattr(module.ScaledMatMul, "backward", staticmethod(recording_backward))
        module.ScaledMatMul.apply(x, weight, scale).sum().backward()
    assert needs == [(True, False, True)]
    assert launches == ["weight"]
    assert weight.grad is None
    reference_x = x.detach().clone().requires_grad_()
    reference_scale = scale.detach().clone().requires_grad_()
    ((reference_x @ weight) * reference_scale).sum().backward()
    assert torch.allclose(x.grad, reference_x.grad) and torch.allclose(scale.grad, reference_scale.grad)


def _recording_pairs(backward: Callable[..., object], seen: Set[Tuple[bool, bool]]) -> staticmethod:
    """A backward that records (first pair needed, second pair needed) from ctx.needs_input_grad."""

    def recording_backward(ctx: object, grad: object) -> object:
        needs = ctx.needs_input_grad  # type: ignore[attr-defined]
        seen.add((needs[0] or needs[1], needs[2] or needs[3]))
        return backward(ctx, grad)

    return staticmethod(recording_backward)


def _pairs_needed(function_name: str, class_name: str, arguments: int) -> Set[Tuple[bool, bool]]:
    """For every choice of which of the caller's tensors require grad: (first pair needed, second pair
    needed) as backward's ctx.needs_input_grad says."""
    module = _loaded(TIED_INPUTS).module
    function = getattr(module, function_name)
    cls = getattr(module, class_name)
    seen: Set[Tuple[bool, bool]] = set()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cls, "backward", _recording_pairs(cls.backward, seen))
        for flags in itertools.product([False, True], repeat=arguments):
            if not any(flags):
                continue  # no node recorded, backward never runs
            tensors = [
                torch.rand(3, dtype=torch.float64).add(0.5).requires_grad_(flag) for flag in flags
            ]
            function(*tensors).sum().backward()
    return seen


def test_tied_pairs_are_needed_together() -> None:
    """paired_products (silent): both pairs are needed, or neither, for every choice of x and weight."""
    assert _pairs_needed("paired_products", "TiedProducts", 2) == {(True, True)}


def test_pairs_tied_through_an_attribute_are_needed_together() -> None:
    module = _loaded(TIED_INPUTS).module
    seen: Set[Tuple[bool, bool]] = set()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module.TiedAttribute, "backward", _recording_pairs(module.TiedAttribute.backward, seen))
        for x_flag, weight_flag in [(True, False), (False, True), (True, True)]:
            x = torch.rand(3, dtype=torch.float64).requires_grad_(x_flag)
            weight = torch.rand(3, dtype=torch.float64).requires_grad_(weight_flag)
            module._Scaled(weight)(x, 2).sum().backward()
    assert seen == {(True, True)}


@pytest.mark.parametrize(
    "function_name, class_name, arguments",
    [
        ("detached_products", "DetachedProducts", 2),
        ("gradless_products", "GradlessProducts", 2),
        ("biased_products", "BiasedProducts", 3),
        ("once_apart", "OnceTied", 4),
        ("products_of_parts", "PartsProducts", 4),
        ("products_of_picked", "HelperPartsProducts", 4),
    ],
)
def test_untied_pairs_can_be_needed_apart(function_name: str, class_name: str, arguments: int) -> None:
    """The reported cases: some choice of what requires grad needs one pair and not the other."""
    seen = _pairs_needed(function_name, class_name, arguments)
    assert any(first != second for first, second in seen)
