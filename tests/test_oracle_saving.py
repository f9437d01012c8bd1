"""PyTorch is the oracle for AGF101-AGF104 (save_for_backward and ctx.saved_tensors).

* Paired tests: a flagged Function and its silent counterpart, taken from tests/fixtures/agf10N.py (or
  defined inline), run under torch: the first fails or computes a wrong result, the second passes
  gradcheck; the linter reports the first and not the second.
* Verdict table: every Function class of the four fixtures runs under torch with the outcome written
  below; a class on which torch raises the rule's error must carry the rule's code in its fixture comments.

The whole module is skipped when torch is not installed.
"""

import importlib
import os

import pytest

if os.environ.get("AGF_REQUIRE_TORCH"):
    torch = importlib.import_module("torch")
else:
    torch = pytest.importorskip(
        "torch", reason="the oracle layer runs fixture Functions under PyTorch, which is not installed"
    )

import re  # noqa: E402
import textwrap  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple, Type  # noqa: E402

from conftest import FIXTURES, expected_findings, lint  # noqa: E402
from conftest import codes_inside as _linted_codes, fixture_module as _fixture, fixture_spans as _spans  # noqa: E402


# --- helpers ---------------------------------------------------------------------------------------


def _annotated_codes(stem: str, name: str) -> Set[str]:
    """Codes the fixture's trailing comments expect inside class ``name``."""
    first, last = _spans(stem)[name]
    return {code for line, code in expected_findings(FIXTURES / f"{stem}.py") if first <= line <= last}


def _cls(stem: str, name: str) -> Any:
    return getattr(_fixture(stem), name)


def _inline(source: str, name: str) -> Any:
    namespace: Dict[str, Any] = {}
    exec(compile(textwrap.dedent(source), f"<inline {name}>", "exec"), namespace)
    return namespace[name]


class T:
    """A fresh float64 leaf tensor requiring grad, deterministic and positive (values in [0.5, 2))."""

    def __init__(self, *shape: int, grad: bool = True) -> None:
        self.shape = shape
        self.grad = grad

    def make(self, index: int) -> Any:
        count = 1
        for size in self.shape:
            count *= size
        values = 0.5 + 0.1 * index + torch.arange(count, dtype=torch.float64) / count
        return values.reshape(self.shape).requires_grad_(self.grad)


def _materialize(spec: Sequence[Any]) -> Tuple[List[Any], List[Any]]:
    """Concrete arguments, and the tensors among them that require grad."""
    args = [item.make(index) if isinstance(item, T) else item for index, item in enumerate(spec)]
    tensors = [arg for arg in args if isinstance(arg, torch.Tensor) and arg.requires_grad]
    return args, tensors


def _differentiable(result: Any) -> List[Any]:
    results = result if isinstance(result, tuple) else (result,)
    return [r for r in results if isinstance(r, torch.Tensor) and r.requires_grad]


def _backward(outputs: List[Any], tensors: List[Any]) -> Tuple[Any, ...]:
    seeds = [torch.ones_like(output) for output in outputs]
    return torch.autograd.grad(outputs, tensors, seeds, allow_unused=True)


def _gradcheck(function: Any, spec: Sequence[Any]) -> bool:
    args, tensors = _materialize(spec)
    slots = [i for i, arg in enumerate(args) if isinstance(arg, torch.Tensor) and arg.requires_grad]

    def call(*inputs: Any) -> Any:
        filled = list(args)
        for slot, value in zip(slots, inputs):
            filled[slot] = value
        return function.apply(*filled)

    return bool(torch.autograd.gradcheck(call, tuple(tensors)))


# --- AGF101: a second save_for_backward replaces the first --------------------------------------------


def test_agf101_second_save_replaces_the_first() -> None:
    flagged, silent = _cls("agf101", "TwoSaveMulFunction"), _cls("agf101", "OneSaveMulFunction")
    args, tensors = _materialize([T(3), T(3)])
    out = flagged.apply(*args)  # forward runs; only `b` is kept
    with pytest.raises(ValueError, match=re.escape("not enough values to unpack (expected 2, got 1)")):
        _backward([out], tensors)
    assert _gradcheck(silent, [T(3), T(3)])
    assert "AGF101" in _linted_codes("agf101", "TwoSaveMulFunction")
    assert "AGF101" not in _linted_codes("agf101", "OneSaveMulFunction")


REPLACED_SAVE = """
import torch


class ScaleReplaced(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(scale)
        ctx.save_for_backward(x)
        return x * scale

    @staticmethod
    def backward(ctx, grad_output):
        scale = ctx.saved_tensors[0]
        return grad_output * scale, None
"""

SINGLE_SAVE = REPLACED_SAVE.replace("ScaleReplaced", "ScaleSaved").replace("        ctx.save_for_backward(x)\n", "")


def test_agf101_replaced_save_gives_a_silently_wrong_gradient() -> None:
    """Indexing saved_tensors after two saves reads the later tensor: no error, a wrong gradient."""
    x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    scale = torch.tensor([10.0, 20.0, 30.0], dtype=torch.float64)
    (wrong,) = torch.autograd.grad(_inline(REPLACED_SAVE, "ScaleReplaced").apply(x, scale).sum(), x)
    (right,) = torch.autograd.grad(_inline(SINGLE_SAVE, "ScaleSaved").apply(x, scale).sum(), x)
    assert torch.equal(right, scale)  # d/dx sum(x * scale)
    assert torch.equal(wrong, x.detach())  # backward read x where it expected scale
    assert [f.code for f in lint(REPLACED_SAVE, preview=True)] == ["AGF101"]
    assert [f.code for f in lint(SINGLE_SAVE, preview=True)] == []


# --- AGF102: save_for_backward accepts tensors and None only ------------------------------------------


def test_agf102_non_tensor_raises_only_when_grad_is_recorded() -> None:
    flagged, silent = _cls("agf102", "FlattenFunction"), _cls("agf102", "FlattenShapeOnCtxFunction")
    (x,), _ = _materialize([T(2, 3)])
    message = "save_for_backward can only save variables, but argument 1 is of type torch.Size"
    with pytest.raises(TypeError, match=re.escape(message)):
        flagged.apply(x)
    with torch.no_grad():
        assert flagged.apply(x).shape == (6,)  # no check when autograd records nothing
    assert flagged.apply(x.detach()).shape == (6,)  # nor when no input requires grad
    assert _gradcheck(silent, [T(2, 3)])
    assert "AGF102" in _linted_codes("agf102", "FlattenFunction")
    assert "AGF102" not in _linted_codes("agf102", "FlattenShapeOnCtxFunction")


def test_agf102_none_is_accepted() -> None:
    """The silent LinearFunction saves an optional bias that is None; MaskedScaleFunction saves None."""
    linear, masked = _cls("agf102", "LinearFunction"), _cls("agf102", "MaskedScaleFunction")
    assert _gradcheck(linear, [T(2, 3), T(4, 3)])
    assert _gradcheck(masked, [T(3)])
    assert "AGF102" not in _linted_codes("agf102", "LinearFunction")
    assert "AGF102" not in _linted_codes("agf102", "MaskedScaleFunction")


# --- AGF103: saved_tensors has one entry per saved argument --------------------------------------------


@pytest.mark.parametrize("with_bias", [False, True], ids=["no-bias", "bias"])
def test_agf103_unpacking_the_wrong_count_fails_at_backward(with_bias: bool) -> None:
    flagged, silent = _cls("agf103", "LinearFunction"), _cls("agf103", "LinearMatchFunction")
    spec = [T(2, 3), T(4, 3)] + ([T(4)] if with_bias else [])
    args, tensors = _materialize(spec)
    out = flagged.apply(*args)  # forward and apply are fine: the error waits for backward
    with pytest.raises(ValueError, match=re.escape("too many values to unpack (expected 2)")):
        _backward([out], tensors)
    assert _gradcheck(silent, spec)
    assert "AGF103" in _linted_codes("agf103", "LinearFunction")
    assert "AGF103" not in _linted_codes("agf103", "LinearMatchFunction")


# --- AGF104: saved_tensors is empty in forward and setup_context ---------------------------------------


def test_agf104_saved_tensors_is_empty_in_forward() -> None:
    flagged, silent = _cls("agf104", "ExpFunction"), _cls("agf104", "ExpOutputFunction")
    (x,), _ = _materialize([T(3)])
    with pytest.raises(ValueError, match=re.escape("not enough values to unpack (expected 1, got 0)")):
        flagged.apply(x)
    assert _gradcheck(silent, [T(3)])
    assert "AGF104" in _linted_codes("agf104", "ExpFunction")
    assert "AGF104" not in _linted_codes("agf104", "ExpOutputFunction")


def test_agf104_saved_tensors_is_empty_in_setup_context() -> None:
    flagged, silent = _cls("agf104", "ScaleFunction"), _cls("agf104", "HardSwishFunction")
    args, _ = _materialize([T(3), T(3)])
    with pytest.raises(IndexError, match="tuple index out of range"):
        flagged.apply(*args)
    assert _gradcheck(silent, [T(3)])
    assert "AGF104" in _linted_codes("agf104", "ScaleFunction")
    assert "AGF104" not in _linted_codes("agf104", "HardSwishFunction")


SEEN_IN_FORWARD = """
import torch


class Probe(torch.autograd.Function):
    seen = []

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        Probe.seen.append(("forward", len(ctx.saved_tensors)))
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        Probe.seen.append(("backward", len(ctx.saved_tensors)))
        return grad_output * 2
"""


def test_agf104_reads_in_forward_see_nothing() -> None:
    """Right after save_for_backward, forward sees `()`; backward sees the tensor. No error anywhere."""
    probe = _inline(SEEN_IN_FORWARD, "Probe")
    x = torch.ones(3, dtype=torch.float64, requires_grad=True)
    probe.apply(x).sum().backward()
    assert probe.seen == [("forward", 0), ("backward", 1)]
    lines = [(f.line, f.code) for f in lint(SEEN_IN_FORWARD, preview=True)]
    assert lines == [(11, "AGF104")]  # the forward read only


# --- every fixture class under torch ---------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """``runs`` (forward and backward), ``gradcheck`` (and passes gradcheck), or an error at a stage."""

    outcome: str
    exception: Optional[Type[BaseException]] = None
    fragment: str = ""


RUNS = Verdict("runs")
GRADCHECK = Verdict("gradcheck")


def forward_raises(exception: Type[BaseException], fragment: str) -> Verdict:
    return Verdict("forward", exception, fragment)


def backward_raises(exception: Type[BaseException], fragment: str) -> Verdict:
    return Verdict("backward", exception, fragment)


UNPACK = "values to unpack"
NOT_SAVABLE = "save_for_backward can only save variables"
C = T  # a constant tensor argument: C(3, grad=False)

# Each rule's own error: a class where torch raises it must carry the code in its fixture comments.
RULE_ERRORS: Dict[str, Callable[[Verdict], bool]] = {
    "agf101": lambda v: v.outcome == "backward" and v.exception is ValueError and v.fragment == UNPACK,
    "agf102": lambda v: v.outcome == "forward" and v.exception is TypeError and v.fragment == NOT_SAVABLE,
    "agf103": lambda v: v.outcome == "backward" and v.exception is ValueError and v.fragment == UNPACK,
    "agf104": lambda v: v.outcome == "forward" and v.exception in (ValueError, IndexError),
}

CASES: Dict[str, List[Tuple[str, Sequence[Any], Verdict]]] = {
    "agf101": [
        ("TwoSaveMulFunction", [T(3), T(3)], backward_raises(ValueError, UNPACK)),
        ("OneSaveMulFunction", [T(3), T(3)], GRADCHECK),
        ("FusedBiasGeLUFunction", [T(2, 3), T(3)], backward_raises(ValueError, UNPACK)),
        ("FusedBiasGeLUFunction", [T(2, 3)], GRADCHECK),  # without bias, one save runs
        ("ExpScaleFunction", [T(3), T(3)], backward_raises(ValueError, UNPACK)),
        ("LayerNormFunction", [T(2, 4), T(4)], GRADCHECK),  # supersets: works, yet two extra calls
        ("AutocastLinearFunction", [T(2, 3), T(4, 3)], backward_raises(ValueError, UNPACK)),
        ("TritonSiLUFunction", [T(2, 3)], backward_raises(ValueError, UNPACK)),
        ("XTanhFunction", [T(3)], backward_raises(ValueError, UNPACK)),
        ("FmaFunction", [T(3), T(3), T(3)], GRADCHECK),
        ("FmaFunction", [T(3), 2.0, T(3)], GRADCHECK),
        ("BiasedMatmulFunction", [T(2, 3), T(4, 3), T(4)], GRADCHECK),
        ("BiasedMatmulFunction", [T(2, 3), T(4, 3)], GRADCHECK),
        ("AddBiasReluFunction", [T(2, 3), T(3)], GRADCHECK),
        ("AddBiasReluFunction", [T(2, 3)], GRADCHECK),
        ("ActivationFunction", [T(3), "sigmoid"], GRADCHECK),
        ("ActivationFunction", [T(3), "identity"], GRADCHECK),
        ("SafeLogFunction", [T(3)], GRADCHECK),
        ("GroupedLinearFunction", [T(2, 3), T(4, 3), T(4)], GRADCHECK),
        ("ExpFunction", [T(3)], GRADCHECK),
        ("SquareFunction", [T(3)], GRADCHECK),
        ("CubeFunction", [T(3)], GRADCHECK),
        ("PowFunction", [T(3), 2.0], GRADCHECK),
        ("PowFunction", [T(3), 3.0], GRADCHECK),
        ("OptionalBiasDoubleFunction", [T(3), T(3)], backward_raises(ValueError, UNPACK)),
        ("OptionalBiasDoubleFunction", [T(3)], GRADCHECK),  # without bias, the replaced save never ran
        ("AutocastScaleFunction", [T(3)], GRADCHECK),
        ("AutocastScaleFunction", [T(3), T(3)], GRADCHECK),
        ("CheckedLogFunction", [T(3)], GRADCHECK),
        ("CheckedLogFunction", [T(3), True], GRADCHECK),
    ],
    "agf102": [
        ("FlattenFunction", [T(2, 3)], forward_raises(TypeError, NOT_SAVABLE)),
        ("FlattenShapeOnCtxFunction", [T(2, 3)], GRADCHECK),
        ("RoIAlignFunction", [T(1, 2, 8, 8), C(3, 5, grad=False)], forward_raises(TypeError, NOT_SAVABLE)),
        ("FakeQuantFunction", [T(3)], forward_raises(TypeError, NOT_SAVABLE)),
        ("LayerNormFunction", [T(2, 4), T(4)], forward_raises(TypeError, NOT_SAVABLE)),
        ("AttentionFunction", [T(2, 3), T(2, 3), T(2, 3)], forward_raises(TypeError, NOT_SAVABLE)),
        ("CastFunction", [T(3), T(3)], forward_raises(TypeError, NOT_SAVABLE)),
        ("SumToSizeFunction", [T(2, 3)], forward_raises(TypeError, NOT_SAVABLE)),
        ("MulSetupContextFunction", [T(3), T(3)], forward_raises(TypeError, NOT_SAVABLE)),
        ("MulSetupContextStarFunction", [T(3), T(3)], GRADCHECK),
        ("LinearFunction", [T(2, 3), T(4, 3)], GRADCHECK),
        ("LinearFunction", [T(2, 3), T(4, 3), T(4)], GRADCHECK),
        ("MaskedScaleFunction", [T(3)], GRADCHECK),
        ("MaskedScaleFunction", [T(3), C(3, grad=False)], GRADCHECK),
        ("RMSNormFunction", [T(2, 4)], GRADCHECK),
        ("GatedLinearUnitFunction", [T(2, 4)], GRADCHECK),
        ("ClampFunction", [T(3), C(3, grad=False), C(3, grad=False)], GRADCHECK),
        ("StackFunction", [0, T(2, 3), T(1, 3)], GRADCHECK),
        ("SinCosFunction", [T(3)], forward_raises(TypeError, NOT_SAVABLE)),
        ("SinCosStarFunction", [T(3)], GRADCHECK),
        ("ScaleBySetupContextFunction", [T(3), T(3)], GRADCHECK),
    ],
    "agf103": [
        ("MulFunction", [T(3), T(3)], backward_raises(ValueError, UNPACK)),
        ("MulMatchFunction", [T(3), T(3)], GRADCHECK),
        ("LinearFunction", [T(2, 3), T(4, 3), T(4)], backward_raises(ValueError, UNPACK)),
        ("LinearMatchFunction", [T(2, 3), T(4, 3), T(4)], GRADCHECK),
        ("SoftplusFunction", [T(3)], backward_raises(ValueError, UNPACK)),
        ("SigmoidFunction", [T(3)], GRADCHECK),
        ("SiLUFunction", [T(3)], backward_raises(ValueError, UNPACK)),
        ("ModulatedConvFunction", [T(1, 2, 5, 5), T(3, 2, 3, 3), T(3)], GRADCHECK),
        ("ModulatedConvFunction", [T(1, 2, 5, 5), T(3, 2, 3, 3)], GRADCHECK),
        ("AffineFunction", [T(3), T(3), T(3)], GRADCHECK),
        ("AffineFunction", [T(3), T(3)], GRADCHECK),
        ("WeightedSumFunction", [T(2, 3), T(2, 3)], GRADCHECK),
        ("ConvHelperFunction", [T(1, 2, 5), T(3, 2, 3), T(3)], GRADCHECK),
        ("AddcmulFunction", [T(3), T(3), T(3), 0.5], GRADCHECK),
        ("TanhFunction", [T(3)], GRADCHECK),
        ("GeLUFunction", [T(3)], GRADCHECK),
    ],
    "agf104": [
        ("ExpFunction", [T(3)], forward_raises(ValueError, "not enough values to unpack (expected 1, got 0)")),
        ("ExpOutputFunction", [T(3)], GRADCHECK),
        ("ContiguousMatmulFunction", [T(2, 3), T(3, 2)], GRADCHECK),  # the check inside never runs
        ("CachedNormFunction", [T(2, 3)], GRADCHECK),  # the guard is always taken
        ("ScaleFunction", [T(3), T(3)], forward_raises(IndexError, "tuple index out of range")),
        ("DropoutFunction", [T(3)], RUNS),  # random mask: no gradcheck
        ("SinFunction", [T(3)], GRADCHECK),
        ("SquaredDistanceFunction", [T(2, 3), T(2, 3)], GRADCHECK),
        ("LoggedReluFunction", [T(3)], GRADCHECK),
        ("HardSwishFunction", [T(3)], GRADCHECK),
        ("MemoryLeanMulFunction", [T(3), T(3)], GRADCHECK),
    ],
}

VERDICT_CASES = [(stem, name, spec, verdict) for stem, cases in CASES.items() for name, spec, verdict in cases]


def _verdict_ids() -> List[str]:
    ids: List[str] = []
    seen: Dict[str, int] = {}
    for stem, name, _, _ in VERDICT_CASES:
        base = f"{stem}.{name}"
        seen[base] = seen.get(base, 0) + 1
        ids.append(base if seen[base] == 1 else f"{base}-{seen[base]}")
    return ids


@pytest.mark.parametrize(("stem", "name", "spec", "verdict"), VERDICT_CASES, ids=_verdict_ids())
def test_fixture_class_under_torch(stem: str, name: str, spec: Sequence[Any], verdict: Verdict) -> None:
    function = _cls(stem, name)
    if RULE_ERRORS[stem](verdict):
        assert stem.upper() in _annotated_codes(stem, name), f"torch fails {name}, but its fixture expects no {stem}"
    args, tensors = _materialize(spec)
    if verdict.outcome == "forward":
        assert verdict.exception is not None
        with pytest.raises(verdict.exception, match=re.escape(verdict.fragment)):
            function.apply(*args)
        return
    outputs = _differentiable(function.apply(*args))
    if verdict.outcome == "backward":
        assert verdict.exception is not None
        with pytest.raises(verdict.exception, match=re.escape(verdict.fragment)):
            _backward(outputs, tensors)
        return
    _backward(outputs, tensors)
    if verdict.outcome == "gradcheck":
        assert _gradcheck(function, spec)


@pytest.mark.parametrize("stem", sorted(CASES))
def test_every_fixture_class_has_a_verdict(stem: str) -> None:
    module = _fixture(stem)
    functions = {
        name for name in _spans(stem)
        if isinstance(getattr(module, name), type) and issubclass(getattr(module, name), torch.autograd.Function)
    }
    assert functions - {name for name, _, _ in CASES[stem]} == set()
