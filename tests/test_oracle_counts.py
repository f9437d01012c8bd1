import importlib
import os

import pytest

if os.environ.get("AGF_REQUIRE_TORCH"):  # CI installs torch: a missing torch there fails, not skips
    torch = importlib.import_module("torch")
else:
    torch = pytest.importorskip(
        "torch", reason="the oracle layer runs fixture Functions under PyTorch, which is not installed"
    )

# PyTorch as the oracle for AGF105-AGF108: Function classes of the fixtures run under torch (CPU).
# A class that carries the code must fail the way the rule predicts; its silent counterparts must run
# and give correct derivatives (gradcheck for backward, torch.func.jvp of a plain reference for jvp).
# Each test also asks the linter (preview rules on) about the same class, linted in its fixture file.

import ast  # noqa: E402
import importlib.util  # noqa: E402
import warnings  # noqa: E402
from functools import lru_cache  # noqa: E402
from types import ModuleType  # noqa: E402
from typing import Any, Callable, Dict, List, Set, Tuple  # noqa: E402

from conftest import FIXTURES, lint  # noqa: E402

forward_ad = importlib.import_module("torch.autograd.forward_ad")

INCORRECT_NON_TENSOR_GRADIENT = "returned a gradient different than None at position"
INVALID_JVP_COUNT = "jvp returned an invalid number of forward gradients"


# --- helpers ---------------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def _fixture(code: str) -> ModuleType:
    """The fixture module for ``code`` (e.g. "agf105"), imported from its file, not via sys.modules."""
    path = FIXTURES / f"{code}.py"
    spec = importlib.util.spec_from_file_location(f"flake8_autograd_oracle_counts_{code}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec.loader.exec_module(module)
    return module


@lru_cache(maxsize=None)
def _findings_by_class(code: str) -> Dict[str, Set[str]]:
    """Codes the linter reports inside each top-level class of the fixture (whole file linted)."""
    path = FIXTURES / f"{code}.py"
    source = path.read_text(encoding="utf-8")
    findings = lint(source, filename=str(path), preview=True)
    spans: List[Tuple[str, int, int]] = [
        (node.name, node.lineno, node.end_lineno or node.lineno)
        for node in ast.parse(source).body
        if isinstance(node, ast.ClassDef)
    ]
    found: Dict[str, Set[str]] = {name: set() for name, _, _ in spans}
    for finding in findings:
        for name, start, end in spans:
            if start <= finding.line <= end:
                found[name].add(finding.code)
    return found


def _flags(code: str, name: str) -> bool:
    return code.upper() in _findings_by_class(code)[name]


def _tensor(*shape: int, index: int = 0, signed: bool = False) -> Any:
    """A deterministic float64 leaf with distinct values (no ties), away from 0, requiring grad."""
    count = 1
    for size in shape:
        count *= size
    values = 0.5 + 0.1 * index + torch.arange(count, dtype=torch.float64) / count
    if signed:
        values = torch.where(torch.arange(count) % 2 == 0, values, -values)
    return values.reshape(shape).requires_grad_()


def _backward(outputs: Any) -> None:
    """Backward through every tensor output that takes part in the graph."""
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    tensors = [out for out in outputs if isinstance(out, torch.Tensor) and out.requires_grad]
    torch.autograd.backward(tensors, [torch.ones_like(out) for out in tensors])


def _gradcheck(function: Callable[..., Any], *inputs: Any) -> None:
    def differentiable(*args: Any) -> Any:
        outputs = function(*args)
        if isinstance(outputs, tuple):
            return tuple(out for out in outputs if isinstance(out, torch.Tensor) and out.is_floating_point())
        return outputs

    assert torch.autograd.gradcheck(differentiable, inputs)


def _tangents(function: Callable[..., Any], primals: Tuple[Any, ...], tangents: Tuple[Any, ...]) -> List[Any]:
    """Output tangents of ``function`` under forward-mode AD (dual tensors); None where there is none."""
    with forward_ad.dual_level():
        duals = [
            forward_ad.make_dual(primal, tangent) if tangent is not None else primal
            for primal, tangent in zip(primals, tangents)
        ]
        outputs = function(*duals)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        return [
            forward_ad.unpack_dual(out).tangent if isinstance(out, torch.Tensor) else None for out in outputs
        ]


# --- AGF105: a gradient returned for an input that is not a tensor ---------------------------------


def test_agf105_gradient_for_float_input_fails_and_none_passes() -> None:
    module = _fixture("agf105")
    with pytest.raises(RuntimeError, match=f"{INCORRECT_NON_TENSOR_GRADIENT} 2"):
        _backward(module.ScaledTanh.apply(_tensor(3), 2.0))
    _gradcheck(lambda x: module.ScaledTanhFixed.apply(x, 2.0), _tensor(3))
    assert _flags("agf105", "ScaledTanh")
    assert not _flags("agf105", "ScaledTanhFixed")


AGF105_FAILING: Dict[str, Tuple[Callable[[ModuleType], Any], int]] = {
    # class name: (the call, the 1-based position PyTorch names)
    "PixelShuffleFn": (lambda m: m.PixelShuffleFn.apply(_tensor(1, 4, 2, 2), 2), 2),
    "ClampedExp": (lambda m: m.clamped_exp(_tensor(3)), 2),
    "RMSNormFn": (lambda m: m.RMSNormFn.apply(_tensor(2, 4), _tensor(4, index=1), 1e-6), 3),
    "RoundSTE": (lambda m: m.RoundSTE.apply(_tensor(3), True), 2),
    "SafeDivide": (lambda m: m.SafeDivide.apply(_tensor(3), 0.0), 2),
    "Temperature": (lambda m: m.Temperature.apply(_tensor(3), 0.5), 2),
    "HuberLoss": (lambda m: m.HuberLoss.apply(_tensor(4, signed=True), 1.0), 2),
}


@pytest.mark.parametrize("name", list(AGF105_FAILING))
def test_agf105_flagged_class_fails_at_backward(name: str) -> None:
    module = _fixture("agf105")
    call, position = AGF105_FAILING[name]
    outputs = call(module)
    with pytest.raises(RuntimeError, match=f"{INCORRECT_NON_TENSOR_GRADIENT} {position}"):
        _backward(outputs)
    assert _flags("agf105", name)


AGF105_WORKING: Dict[str, Callable[[ModuleType], None]] = {
    "LinearFn": lambda m: _gradcheck(m.linear, _tensor(2, 3), _tensor(4, 3, index=1), _tensor(4, index=2)),
    "LeakyReLUFn": lambda m: _gradcheck(m.prelu, _tensor(5, signed=True), _tensor(index=1)),
    "ScaledSoftmax": lambda m: _gradcheck(m.ScaledSoftmax.apply, _tensor(2, 3), _tensor(index=2)),
    "PowerFn": lambda m: _gradcheck(lambda x: m.PowerFn.apply(x, 3.0), _tensor(3)),
    "Im2Col": lambda m: _gradcheck(lambda x: m.Im2Col.apply(x, 2, 2, False), _tensor(1, 2, 4, 4)),
    "WeightedCumsum": lambda m: (
        _gradcheck(lambda x, w: m.WeightedCumsum.apply(x, 1, w), _tensor(2, 3), _tensor(2, 3, index=1)),
        _gradcheck(lambda x: m.WeightedCumsum.apply(x, 1), _tensor(2, 3)),
    ),
    "HardSigmoidFn": lambda m: _gradcheck(m.HardSigmoidFn.apply, _tensor(5, signed=True)),
    "SoftThreshold": lambda m: _gradcheck(lambda x: m.SoftThreshold.apply(x, 0.3), _tensor(4, signed=True)),
}


@pytest.mark.parametrize("name", list(AGF105_WORKING))
def test_agf105_silent_class_passes_gradcheck(name: str) -> None:
    AGF105_WORKING[name](_fixture("agf105"))
    assert not _flags("agf105", name)


def test_agf105_literal_default_given_a_float_does_fail() -> None:
    """The other side of LeakyReLUFn: the same class called with a float slope does fail."""
    module = _fixture("agf105")
    with pytest.raises(RuntimeError, match=f"{INCORRECT_NON_TENSOR_GRADIENT} 2"):
        _backward(module.LeakyReLUFn.apply(_tensor(5, signed=True), 0.1))


# --- AGF106: ctx.needs_input_grad indexed past the inputs -------------------------------------------


def test_agf106_index_past_inputs_raises_and_zero_based_passes() -> None:
    module = _fixture("agf106")
    outputs = module.MulFn.apply(_tensor(3), _tensor(3, index=1))
    with pytest.raises(IndexError, match="tuple index out of range"):
        _backward(outputs)
    _gradcheck(module.MulFnFixed.apply, _tensor(3), _tensor(3, index=1))
    assert _flags("agf106", "MulFn")
    assert not _flags("agf106", "MulFnFixed")


AGF106_FAILING: Dict[str, Tuple[Callable[[ModuleType], Any], str]] = {
    # class name: (the call, "forward" when apply itself raises, else "backward")
    "Softplus": (lambda m: m.Softplus.apply(_tensor(3)), "backward"),
    "FusedLinear": (lambda m: m.FusedLinear.apply(_tensor(2, 3), _tensor(4, 3, index=1)), "forward"),
    "LinearBias": (
        lambda m: m.LinearBias.apply(_tensor(2, 3), _tensor(4, 3, index=1), _tensor(4, index=2)), "backward"
    ),
    "GatedValue": (lambda m: m.GatedValue.apply(_tensor(3), _tensor(3, index=1)), "backward"),
    "ScaleChecked": (lambda m: m.ScaleChecked.apply(_tensor(3)), "backward"),
}


@pytest.mark.parametrize("name", list(AGF106_FAILING))
def test_agf106_flagged_class_raises_index_error(name: str) -> None:
    module = _fixture("agf106")
    call, when = AGF106_FAILING[name]
    with pytest.raises(IndexError, match="tuple index out of range"):
        outputs = call(module)
        assert when == "backward", "apply should have raised"
        _backward(outputs)
    assert _flags("agf106", name)


AGF106_WORKING: Dict[str, Callable[[ModuleType], None]] = {
    "SumAll": lambda m: _gradcheck(m.sum_three, _tensor(3), _tensor(3, index=1), _tensor(3, index=2)),
    "AddMul": lambda m: _gradcheck(m.AddMul.apply, _tensor(3), _tensor(3, index=1)),
    "LinearMaybeBias": lambda m: _gradcheck(m.linear_bias, _tensor(2, 3), _tensor(4, 3, index=1), _tensor(4, index=2)),
    "Stack3": lambda m: _gradcheck(m.Stack3.apply, _tensor(3), _tensor(3, index=1), _tensor(3, index=2)),
    "MaskedFillFn": lambda m: _gradcheck(
        m.MaskedFillFn.apply, _tensor(3), torch.tensor([True, False, True]), _tensor(index=1)
    ),
}


@pytest.mark.parametrize("name", list(AGF106_WORKING))
def test_agf106_silent_class_passes_gradcheck(name: str) -> None:
    AGF106_WORKING[name](_fixture("agf106"))
    assert not _flags("agf106", name)


# --- AGF107: backward takes the wrong number of gradients -------------------------------------------


def test_agf107_missing_gradient_parameter_raises_and_full_signature_passes() -> None:
    module = _fixture("agf107")
    outputs = module.SortFn.apply(_tensor(4))
    with pytest.raises(TypeError, match="takes 2 positional arguments but 3 were given"):
        _backward(outputs)
    _gradcheck(module.SortFnFixed.apply, _tensor(4))
    assert _flags("agf107", "SortFn")
    assert not _flags("agf107", "SortFnFixed")


AGF107_FAILING: Dict[str, Tuple[Callable[[ModuleType], Any], str]] = {
    "Hypot": (lambda m: m.Hypot.apply(_tensor(3), _tensor(3, index=1)), "missing 1 required positional argument"),
    "LayerNormStats": (lambda m: m.LayerNormStats.apply(_tensor(2, 4)), "takes 3 positional arguments but 4"),
    "CompactNonzero": (lambda m: m.CompactNonzero.apply(_tensor(4)), "takes 2 positional arguments but 3"),
    "PolarFn": (lambda m: m.PolarFn.apply(_tensor(3), _tensor(3, index=1)), "takes 2 positional arguments but 3"),
    "SplitHalves": (lambda m: m.SplitHalves.apply(_tensor(4)), "takes 2 positional arguments but 3"),
}


@pytest.mark.parametrize("name", list(AGF107_FAILING))
def test_agf107_flagged_class_raises_type_error_at_backward(name: str) -> None:
    module = _fixture("agf107")
    call, fragment = AGF107_FAILING[name]
    outputs = call(module)
    with pytest.raises(TypeError, match=fragment):
        _backward(outputs)
    assert _flags("agf107", name)


AGF107_WORKING: Dict[str, Callable[[ModuleType], None]] = {
    "MinMax": lambda m: _gradcheck(m.MinMax.apply, _tensor(4)),
    "SoftmaxLse": lambda m: (
        _gradcheck(lambda x: m.SoftmaxLse.apply(x, True), _tensor(2, 3)),
        _gradcheck(m.SoftmaxLse.apply, _tensor(2, 3)),
    ),
    "SinCosKernel": lambda m: _gradcheck(m.SinCosKernel.apply, _tensor(3)),
    "ReluWithMask": lambda m: _gradcheck(m.ReluWithMask.apply, _tensor(4, signed=True)),
    "Identity1": lambda m: _gradcheck(m.Identity1.apply, _tensor(4)),
    "MaybeAux": lambda m: (
        _gradcheck(lambda x: m.MaybeAux.apply(x, False), _tensor(4)),
        _gradcheck(lambda x: m.MaybeAux.apply(x, True)[0], _tensor(4)),
    ),
    "AdaptiveMaxPoolFn": lambda m: _gradcheck(lambda x: m.AdaptiveMaxPoolFn.apply(x, 2), _tensor(1, 2, 6)),
    "MaxPoolWithIndicesFn": lambda m: _gradcheck(m.MaxPoolWithIndicesFn.apply, _tensor(1, 2, 6)),
}


@pytest.mark.parametrize("name", list(AGF107_WORKING))
def test_agf107_silent_class_passes_gradcheck(name: str) -> None:
    AGF107_WORKING[name](_fixture("agf107"))
    assert not _flags("agf107", name)


# --- AGF108: jvp returns the wrong number of tangents (forward-mode AD) -----------------------------


def test_agf108_surplus_none_tangent_raises_and_one_tangent_passes() -> None:
    module = _fixture("agf108")
    x, t = _tensor(3).detach(), torch.ones(3, dtype=torch.float64)
    with pytest.raises(RuntimeError, match=INVALID_JVP_COUNT + r" \(expected 1 but got 2\)"):
        _tangents(module.ExpFn.apply, (x,), (t,))
    (tangent,) = _tangents(module.ExpFnFixed.apply, (x,), (t,))
    _, expected = torch.func.jvp(torch.exp, (x,), (t,))
    torch.testing.assert_close(tangent, expected)
    assert _flags("agf108", "ExpFn")
    assert not _flags("agf108", "ExpFnFixed")


def _primals(*shapes: Tuple[int, ...]) -> Tuple[Any, ...]:
    return tuple(_tensor(*shape, index=k).detach() for k, shape in enumerate(shapes))


AGF108_FAILING: Dict[str, Tuple[Callable[[ModuleType], Any], Tuple[Any, ...], Tuple[Any, ...]]] = {
    # class name: (function, primals, tangents); None: no tangent for that input
    "MulFn": (lambda m: m.MulFn.apply, _primals((3,), (3,)), (torch.ones(3, dtype=torch.float64),) * 2),
    "SinCos": (lambda m: m.SinCos.apply, _primals((3,)), (torch.ones(3, dtype=torch.float64),)),
    "Softplus": (
        lambda m: (lambda x: m.Softplus.apply(x, 2.0)), _primals((3,)), (torch.ones(3, dtype=torch.float64),)
    ),
    # Wrong only on the shortcut path: scale has no tangent.
    "ScaleShift": (lambda m: m.ScaleShift.apply, _primals((3,), (3,)), (torch.ones(3, dtype=torch.float64), None)),
}


@pytest.mark.parametrize("name", list(AGF108_FAILING))
def test_agf108_flagged_class_raises_under_forward_ad(name: str) -> None:
    module = _fixture("agf108")
    function, primals, tangents = AGF108_FAILING[name]
    with pytest.raises(RuntimeError, match=INVALID_JVP_COUNT):
        _tangents(function(module), primals, tangents)
    assert _flags("agf108", name)


def test_agf108_flagged_scale_shift_main_path_works() -> None:
    """ScaleShift's other return is right: with both tangents given, jvp gives the true tangents."""
    module = _fixture("agf108")
    primals = _primals((3,), (3,))
    tangents = (torch.ones(3, dtype=torch.float64), torch.full((3,), 2.0, dtype=torch.float64))
    got = _tangents(module.ScaleShift.apply, primals, tangents)
    _, expected = torch.func.jvp(lambda x, s: (x * s, x + s), primals, tangents)
    torch.testing.assert_close(tuple(got), expected)


AGF108_WORKING: Dict[str, Tuple[Callable[[ModuleType], Any], Callable[..., Any], Tuple[Tuple[int, ...], ...]]] = {
    # class name: (function, plain torch reference, primal shapes)
    "MulFnFixed": (lambda m: m.MulFnFixed.apply, lambda a, b: a * b, ((3,), (3,))),
    "SinCosFixed": (lambda m: m.SinCosFixed.apply, lambda x: (torch.sin(x), torch.cos(x)), ((3,),)),
    "Square": (lambda m: m.Square.apply, lambda x: x * x, ((3,),)),
    "CountPositive": (lambda m: (lambda x: m.CountPositive.apply(x)[0]), lambda x: x * (x > 0), ((4,),)),
    "TanhFn": (lambda m: m.TanhFn.apply, torch.tanh, ((3,),)),
    "MinMaxKernel": (
        lambda m: m.MinMaxKernel.apply, lambda x: (x.min(-1).values, x.max(-1).values), ((2, 3),)
    ),
}


@pytest.mark.parametrize("name", list(AGF108_WORKING))
def test_agf108_silent_class_gives_the_true_tangents(name: str) -> None:
    module = _fixture("agf108")
    function, reference, shapes = AGF108_WORKING[name]
    primals = _primals(*shapes)
    tangents = tuple(torch.linspace(0.5, 1.5, p.numel(), dtype=torch.float64).reshape(p.shape) for p in primals)
    got = _tangents(function(module), primals, tangents)
    _, expected = torch.func.jvp(reference, primals, tangents)
    expected = expected if isinstance(expected, tuple) else (expected,)
    torch.testing.assert_close(tuple(got), expected)
    assert not _flags("agf108", name)


def test_agf108_count_includes_non_tensor_outputs() -> None:
    """CountPositive returns (tensor, int): jvp must give two values, the second None."""
    module = _fixture("agf108")
    x = _tensor(4, signed=True).detach()
    with forward_ad.dual_level():
        out, count = module.CountPositive.apply(forward_ad.make_dual(x, torch.ones_like(x)))
        assert count == 2
        torch.testing.assert_close(forward_ad.unpack_dual(out).tangent, (x > 0).to(x.dtype))
