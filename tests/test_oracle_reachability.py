"""PyTorch as the oracle for reachability in the count rules (AGF004, AGF107, AGF108).

A backward autograd never calls is not counted: when no output of forward can carry a gradient (marked
non-differentiable, an integer or bool tensor, or None), ``apply`` builds no node. A fall-through of
backward that mirrors forward's condition chain is never taken either: there forward returned None.
jvp is another matter: forward-mode AD calls it even for outputs marked non-differentiable.
Each test also asks the linter about the same class, linted in its fixture file.
"""

from __future__ import annotations

import ast
import importlib
import os
from functools import lru_cache
from typing import Any, Callable, Dict, List, Set, Tuple

import pytest

if os.environ.get("AGF_REQUIRE_TORCH"):  # CI installs torch: a missing torch there fails, not skips
    torch = importlib.import_module("torch")
else:
    torch = pytest.importorskip(
        "torch", reason="the oracle layer runs fixture Functions under PyTorch, which is not installed"
    )

from conftest import FIXTURES, lint  # noqa: E402
from oracle import LoadedFixture, load_fixture, make_tensor  # noqa: E402

forward_ad = importlib.import_module("torch.autograd.forward_ad")

INCORRECT_COUNT = "returned an incorrect number of gradients"
INVALID_JVP_COUNT = "jvp returned an invalid number of forward gradients"


@lru_cache(maxsize=None)
def _loaded(stem: str) -> LoadedFixture:
    return load_fixture(FIXTURES / f"{stem}.py")


def _fixture(stem: str) -> Any:
    return _loaded(stem).module


@lru_cache(maxsize=None)
def _codes_by_class(stem: str) -> Dict[str, Set[str]]:
    path = FIXTURES / f"{stem}.py"
    source = path.read_text(encoding="utf-8")
    spans = [
        (node.name, node.lineno, node.end_lineno or node.lineno)
        for node in ast.parse(source).body
        if isinstance(node, ast.ClassDef)
    ]
    found: Dict[str, Set[str]] = {name: set() for name, _, _ in spans}
    for finding in lint(source, filename=str(path), preview=True):
        for name, start, end in spans:
            if start <= finding.line <= end:
                found[name].add(finding.code)
    return found


def _tensor(*shape: int, index: int = 0) -> Any:
    return make_tensor(shape or (3,), index)


def _outputs(result: Any) -> List[Any]:
    return list(result) if isinstance(result, tuple) else [result]


def _backward(result: Any) -> None:
    tensors = [out for out in _outputs(result) if isinstance(out, torch.Tensor) and out.requires_grad]
    assert tensors, "no output takes part in the graph"
    torch.autograd.backward(tensors, [torch.ones_like(out) for out in tensors])


# --- backward never runs: no output can carry a gradient ----------------------------------------------

NEVER_DIFFERENTIATED: Dict[str, Callable[[Any], Any]] = {
    "NearestIndex": lambda m: m.NearestIndex.apply(0.5, 4, _tensor(5, 2), _tensor(3, 2, index=1)),
    "SortedPair": lambda m: m.SortedPair.apply(_tensor(4), True),
    "RankOf": lambda m: m.RankOf.apply(_tensor(2, 3), -1),
    "PositiveMask": lambda m: m.PositiveMask.apply(_tensor(4), 1.0),
    "NearestCounts": lambda m: m.NearestCounts.apply(_tensor(5, 2), _tensor(3, 2, index=1)),
    "BucketOf": lambda m: m.BucketOf.apply(_tensor(4), torch.tensor([0.7, 1.2], dtype=torch.float64)),
}


@pytest.mark.parametrize("name", list(NEVER_DIFFERENTIATED))
def test_backward_of_a_function_with_no_differentiable_output_never_runs(name: str) -> None:
    """apply builds no node: no output requires grad, so there is no backward to call."""
    outputs = _outputs(NEVER_DIFFERENTIATED[name](_fixture("agf004_reachability")))
    assert all(isinstance(out, torch.Tensor) for out in outputs)
    assert all(not out.requires_grad and out.grad_fn is None for out in outputs)
    assert "AGF004" not in _codes_by_class("agf004_reachability")[name]


def test_partly_marked_outputs_still_run_backward() -> None:
    """SortValues marks only the order: the values carry a gradient and the short return fails."""
    module = _fixture("agf004_reachability")
    values, order = module.SortValues.apply(_tensor(4), False)
    assert values.requires_grad and not order.requires_grad
    with pytest.raises(RuntimeError, match=f"{INCORRECT_COUNT} \\(expected 2, got 0\\)"):
        values.sum().backward()
    assert "AGF004" in _codes_by_class("agf004_reachability")["SortValues"]


def test_float_buffer_output_runs_backward() -> None:
    module = _fixture("agf004_reachability")
    with pytest.raises(RuntimeError, match=f"{INCORRECT_COUNT} \\(expected 2, got 1\\)"):
        _backward(module.ScaledCopy.apply(_tensor(3), 2.0))
    assert "AGF004" in _codes_by_class("agf004_reachability")["ScaledCopy"]


# --- a fall-through that mirrors forward's chain ------------------------------------------------------


@pytest.mark.parametrize("name", ["ModeAdd", "ModeShift"])
def test_mirrored_fall_through_is_never_taken(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """On the modes forward handles, backward is right; on any other, forward returns None (or raises)
    and apply gives None: no node, so backward's fall-through never runs."""
    module = _fixture("agf004_reachability")
    function = getattr(module, name).apply
    for mode in ("fast", "exact"):
        monkeypatch.setattr(module, "KERNEL", mode)
        assert torch.autograd.gradcheck(function, (_tensor(3), _tensor(3, index=1)))
    monkeypatch.setattr(module, "KERNEL", "other")
    if name == "ModeAdd":
        assert function(_tensor(3), _tensor(3, index=1)) is None
    else:
        with pytest.raises(ValueError):
            function(_tensor(3), _tensor(3, index=1))
    assert "AGF004" not in _codes_by_class("agf004_reachability")[name]


def test_forward_returning_none_gives_no_node() -> None:
    """The fact the mirror rests on, on its own."""
    module = _fixture("agf004_reachability")
    module_kernel = module.KERNEL
    try:
        module.KERNEL = "none of them"
        x = _tensor(3)
        assert module.ModeAdd.apply(x, _tensor(3, index=1)) is None
        assert x.grad is None
    finally:
        module.KERNEL = module_kernel


FALLS_THROUGH: Dict[str, Tuple[Callable[[Any], Any], str]] = {
    # class name: (the call, the mode under which backward falls through while forward returned a tensor)
    "ModeAddDefault": (lambda m: m.ModeAddDefault.apply(_tensor(3), _tensor(3, index=1)), "fast"),
    "EarlyReturn": (lambda m: m.EarlyReturn.apply(torch.zeros(0, requires_grad=True), torch.zeros(0)), "fast"),
}


@pytest.mark.parametrize("name", list(FALLS_THROUGH))
def test_fall_through_not_mirrored_fails_at_backward(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    module = _fixture("agf004_reachability")
    call, mode = FALLS_THROUGH[name]
    monkeypatch.setattr(module, "KERNEL", mode)
    with pytest.raises(RuntimeError, match=f"{INCORRECT_COUNT} \\(expected 2, got 1\\)"):
        _backward(call(module))
    assert "AGF004" in _codes_by_class("agf004_reachability")[name]


# --- counts through *name and slices ------------------------------------------------------------------


def test_starred_and_sliced_counts_that_match_pass_gradcheck() -> None:
    module = _fixture("agf004_reachability")
    pair = (_tensor(3), _tensor(3, index=1))
    assert torch.autograd.gradcheck(lambda x, y: module.PairThenFlags.apply(x, y, "sum", False), pair)
    assert torch.autograd.gradcheck(module.SumOfThree.apply, (_tensor(3), _tensor(3, index=1), _tensor(3, index=2)))
    assert "AGF004" not in _codes_by_class("agf004_reachability")["PairThenFlags"]
    assert "AGF004" not in _codes_by_class("agf004_reachability")["SumOfThree"]


SHORT_COUNTS: Dict[str, Tuple[Callable[[Any], Any], str]] = {
    "PairThenFlag": (
        lambda m: m.PairThenFlag.apply(_tensor(3), _tensor(3, index=1), "sum", False), "expected 4, got 3"
    ),
    "SumOfThreeSliced": (
        lambda m: m.SumOfThreeSliced.apply(_tensor(3), _tensor(3, index=1), _tensor(3, index=2)), "expected 3, got 2"
    ),
    "ScaleClamp": (lambda m: m.ScaleClamp.apply(_tensor(3), 2.0, 0.0, 1.0), "expected 4, got 3"),
}


@pytest.mark.parametrize("name", list(SHORT_COUNTS))
def test_starred_and_sliced_counts_that_fall_short_fail(name: str) -> None:
    module = _fixture("agf004_reachability")
    call, counts = SHORT_COUNTS[name]
    with pytest.raises(RuntimeError, match=f"{INCORRECT_COUNT} \\({counts}\\)"):
        _backward(call(module))
    assert "AGF004" in _codes_by_class("agf004_reachability")[name]


# --- AGF107 and AGF103 follow backward's reachability; AGF108 does not --------------------------------

BACKWARD_NEVER_CALLED: Dict[str, Tuple[Callable[[Any], Any], str]] = {
    # class name: (the call, the code its backward would carry if autograd could call it)
    "UniqueCounts": (lambda m: m.UniqueCounts.apply(torch.tensor([1.0, 2.0, 2.0], requires_grad=True)), "AGF107"),
    "TopIndex": (lambda m: m.TopIndex.apply(_tensor(5), 2), "AGF103"),
    "Histogram": (lambda m: m.Histogram.apply(_tensor(4), 3), "AGF107"),
}


@pytest.mark.parametrize("name", list(BACKWARD_NEVER_CALLED))
def test_backward_checks_skip_a_backward_never_called(name: str) -> None:
    call, code = BACKWARD_NEVER_CALLED[name]
    outputs = _outputs(call(_fixture("agf107_reachability")))
    assert all(not out.requires_grad and out.grad_fn is None for out in outputs if isinstance(out, torch.Tensor))
    assert code not in _codes_by_class("agf107_reachability")[name]


def test_partly_marked_outputs_call_backward_with_every_gradient() -> None:
    module = _fixture("agf107_reachability")
    values, order = module.SortedValues.apply(_tensor(4))
    with pytest.raises(TypeError, match="takes 2 positional arguments but 3 were given"):
        values.sum().backward()
    assert "AGF107" in _codes_by_class("agf107_reachability")["SortedValues"]


def _tangents(function: Callable[..., Any], *primals: Any) -> List[Any]:
    with forward_ad.dual_level():
        duals = [forward_ad.make_dual(primal, torch.ones_like(primal)) for primal in primals]
        return [forward_ad.unpack_dual(out).tangent for out in _outputs(function(*duals))]


def test_jvp_runs_for_outputs_marked_non_differentiable() -> None:
    """MarkedDouble's backward is never called, but forward-mode AD calls its jvp: the surplus None fails."""
    module = _fixture("agf107_reachability")
    assert module.MarkedDouble.apply(_tensor(3)).grad_fn is None
    with pytest.raises(RuntimeError, match=INVALID_JVP_COUNT + r" \(expected 1 but got 2\)"):
        _tangents(module.MarkedDouble.apply, _tensor(3).detach())
    assert "AGF108" in _codes_by_class("agf107_reachability")["MarkedDouble"]


@pytest.mark.parametrize("name", ["SinCosStarred", "SinCosSliced"])
def test_jvp_counts_through_starred_and_sliced_tuples(name: str) -> None:
    module = _fixture("agf107_reachability")
    x = _tensor(3).detach()
    got = _tangents(getattr(module, name).apply, x)
    _, expected = torch.func.jvp(lambda v: (torch.sin(v), torch.cos(v)), (x,), (torch.ones_like(x),))
    torch.testing.assert_close(tuple(got), expected)
    assert "AGF108" not in _codes_by_class("agf107_reachability")[name]


JVP_WRONG_COUNT: Dict[str, Tuple[Callable[[Any], Any], str]] = {
    "SinCosSurplus": (lambda m: m.SinCosSurplus.apply, "expected 2 but got 3"),
    "SinCosMaybe": (lambda m: (lambda x: m.SinCosMaybe.apply(x, False)), "expected 2 but got 1"),
}


@pytest.mark.parametrize("name", list(JVP_WRONG_COUNT))
def test_jvp_wrong_count_fails_under_forward_ad(name: str) -> None:
    module = _fixture("agf107_reachability")
    function, counts = JVP_WRONG_COUNT[name]
    with pytest.raises(RuntimeError, match=f"{INVALID_JVP_COUNT} \\({counts}\\)"):
        _tangents(function(module), _tensor(3).detach())
    assert "AGF108" in _codes_by_class("agf107_reachability")[name]


def test_jvp_that_falls_off_is_fine_on_the_path_that_returns() -> None:
    module = _fixture("agf107_reachability")
    x = _tensor(3).detach()
    got = _tangents(lambda v: module.SinCosMaybe.apply(v, True), x)
    _, expected = torch.func.jvp(lambda v: (torch.sin(v), torch.cos(v)), (x,), (torch.ones_like(x),))
    torch.testing.assert_close(tuple(got), expected)


# --- a backward with no return at all -----------------------------------------------------------------


def test_backward_without_return_gives_one_none() -> None:
    """MulInto's kernel fills the buffers but nothing returns them: one None for two inputs fails; with one
    input (DetachLike) the None is accepted; a backward ending in a helper that raises never returns."""
    module = _fixture("agf004_reachability")
    with pytest.raises(RuntimeError, match=f"{INCORRECT_COUNT} \\(expected 2, got 1\\)"):
        _backward(module.MulInto.apply(_tensor(3), _tensor(3, index=1)))
    x = _tensor(3)
    _backward(module.DetachLike.apply(x))
    assert x.grad is None
    with pytest.raises(RuntimeError, match="ForwardOnly has no backward"):
        _backward(module.ForwardOnly.apply(_tensor(3), _tensor(3, index=1)))
    found = _codes_by_class("agf004_reachability")
    assert "AGF004" in found["MulInto"]
    assert "AGF004" not in found["ForwardOnly"] | found["DetachLike"]


# --- a fall-through under needs_input_grad conditions that cover every input ------------------------


def test_a_fall_through_under_covering_needs_input_grad_checks_is_never_taken() -> None:
    """CoveredProduct's chain returns whenever some input needs a gradient; with none, apply builds no node
    and backward never runs. HalfCoveredProduct misses b: with only b requiring grad it falls off."""
    module = _fixture("agf004_reachability")
    for a_grad, b_grad in ((True, True), (True, False), (False, True)):
        a = torch.rand(3, dtype=torch.float64, requires_grad=a_grad)
        b = torch.rand(3, dtype=torch.float64, requires_grad=b_grad)
        module.CoveredProduct.apply(a, b).sum().backward()
        assert (a.grad is not None) == a_grad and (b.grad is not None) == b_grad
    none = module.CoveredProduct.apply(torch.rand(3), torch.rand(3))
    assert none.grad_fn is None  # no input requires grad: no node, backward cannot run
    assert "AGF004" not in _codes_by_class("agf004_reachability")["CoveredProduct"]
    a = torch.rand(3, dtype=torch.float64)
    b = torch.rand(3, dtype=torch.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match=f"{INCORRECT_COUNT} \\(expected 2, got 1\\)"):
        module.HalfCoveredProduct.apply(a, b).sum().backward()
    assert "AGF004" in _codes_by_class("agf004_reachability")["HalfCoveredProduct"]
