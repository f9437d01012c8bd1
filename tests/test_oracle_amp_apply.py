"""PyTorch is the oracle for AGF125 (custom_fwd / custom_bwd not paired, or with setup_context) and AGF126
(apply called with a count of positional arguments forward cannot take; keyword arguments for projects
that support a torch older than 2.13): each flagged class fails under torch as its docs page says, the
silent ones run."""

import importlib.util
import sys
import warnings
from types import ModuleType
from typing import Any, Callable, List, Tuple

import pytest

from conftest import FIXTURES, codes, codes_inside, fixture_module, require_torch

torch = require_torch()

AMP = "agf125"
APPLY = "agf126"


def _cls(stem: str, name: str) -> Any:
    return getattr(fixture_module(stem), name)


def _square(requires_grad: bool = True) -> Any:
    return torch.randn(4, 4, requires_grad=requires_grad)


def _backward_under_autocast(function: Callable[..., Any], *inputs: Any) -> None:
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = function(*inputs)
    out.float().sum().backward()


def test_custom_fwd_without_custom_bwd_mixes_dtypes_in_backward() -> None:
    function = _cls(AMP, "MatMulForwardOnly").apply
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype"):
        _backward_under_autocast(function, _square(), _square())
    assert "AGF125" in codes_inside(AMP, "MatMulForwardOnly")


def test_custom_bwd_without_custom_fwd_raises() -> None:
    x = torch.randn(3, requires_grad=True)
    out = _cls(AMP, "DoubleBackwardOnly").apply(x)
    message = "'DoubleBackwardOnlyBackward' object has no attribute '_fwd_used_autocast'"
    with pytest.raises(AttributeError, match=message):
        out.sum().backward()
    assert "AGF125" in codes_inside(AMP, "DoubleBackwardOnly")


def test_custom_bwd_on_vjp_without_custom_fwd_raises() -> None:
    x = torch.randn(3, requires_grad=True)
    out = _cls(AMP, "VjpBackwardOnly").apply(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the deprecated spelling warns, and CUDA autocast warns on a CPU build
        with pytest.raises(AttributeError, match="_fwd_used_autocast"):
            out.sum().backward()
    assert "AGF125" in codes_inside(AMP, "VjpBackwardOnly")


def test_setup_context_style_custom_bwd_raises() -> None:
    x = torch.randn(3, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = _cls(AMP, "SeparateStyleBoth").apply(x)
    message = "'SeparateStyleBothBackward' object has no attribute '_fwd_used_autocast'"
    with pytest.raises(AttributeError, match=message):
        out.sum().backward()
    assert "AGF125" in codes_inside(AMP, "SeparateStyleBoth")


def test_setup_context_style_custom_fwd_writes_on_the_input() -> None:
    """Forward gets no ctx: custom_fwd's state lands on the first input, and backward still runs outside
    forward's autocast state."""
    function = _cls(AMP, "SeparateStyleForwardOnly").apply
    x, w = _square(), _square()
    function(x, w)
    assert hasattr(x, "_fwd_used_autocast")  # the caller's tensor now carries custom_fwd's state
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype"):
        _backward_under_autocast(function, _square(), _square())
    assert "AGF125" in codes_inside(AMP, "SeparateStyleForwardOnly")


def test_silent_amp_cases_run_under_autocast() -> None:
    for name in ("MatMulPaired", "MatMulCastInputs"):
        a, b = _square(), _square()
        _backward_under_autocast(_cls(AMP, name).apply, a, b)
        assert a.grad is not None and a.grad.dtype == torch.float32, name
        assert "AGF125" not in codes_inside(AMP, name), name
    for name in ("SeparateStyleCastInputs", "StateByHand", "NoAmp"):
        x = torch.randn(3, requires_grad=True)
        _backward_under_autocast(_cls(AMP, name).apply, x)
        assert torch.equal(x.grad, torch.full((3,), 2.0)), name
        assert "AGF125" not in codes_inside(AMP, name), name


def test_contract_case_amp_is_reported() -> None:
    """The reference reproduction's classes, in our words: custom_fwd alone, custom_bwd alone, both in the
    setup_context style: each reported; custom_fwd with cast_inputs alone: silent."""
    source = '''
        import torch

        class Product(torch.autograd.Function):
            @staticmethod
            @torch.amp.custom_fwd(device_type="cpu")
            def forward(ctx, left, right):
                ctx.save_for_backward(left, right)
                return left @ right

            @staticmethod
            def backward(ctx, grad):
                left, right = ctx.saved_tensors
                return grad @ right.t(), left.t() @ grad

        class CastProduct(Product):
            @staticmethod
            @torch.amp.custom_fwd(device_type="cpu", cast_inputs=torch.float32)
            def forward(ctx, left, right):
                ctx.save_for_backward(left, right)
                return left @ right

        class TwiceBackwardOnly(torch.autograd.Function):
            @staticmethod
            def forward(ctx, value):
                return value * 2

            @staticmethod
            @torch.amp.custom_bwd(device_type="cpu")
            def backward(ctx, grad):
                return grad * 2

        class TwiceSeparate(torch.autograd.Function):
            @staticmethod
            @torch.amp.custom_fwd(device_type="cpu", cast_inputs=torch.float32)
            def forward(value):
                return value * 2

            @staticmethod
            def setup_context(ctx, inputs, output):
                pass

            @staticmethod
            @torch.amp.custom_bwd(device_type="cpu")
            def backward(ctx, grad):
                return grad * 2
    '''
    from conftest import lint

    found = sorted(finding.message.split()[1].split(".")[0] for finding in lint(source, preview=True)
                   if finding.code == "AGF125")
    assert found == ["Product", "TwiceBackwardOnly", "TwiceSeparate"]


# -- AGF126 ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "layer, message",
    [
        ("ScaleTooMany", r"ScaleFunction.forward\(\) takes from 2 to 3 positional arguments but 4 were given"),
        ("ScaleTooFew", r"ScaleFunction.forward\(\) missing 1 required positional argument: 'x'"),
        ("SeparateTooMany", "too many positional arguments"),
        ("AliasTooMany", r"takes from 2 to 3 positional arguments but 4 were given"),
        ("CastTooFew", r"CastScale.forward\(\) missing 1 required positional argument: 'factor'"),
    ],
)
def test_wrong_positional_count_raises_at_the_call(layer: str, message: str) -> None:
    module = _cls(APPLY, layer)()
    x = torch.randn(3, requires_grad=True)
    with pytest.raises(TypeError, match=message):
        module() if layer == "ScaleTooFew" else module(x)
    assert "AGF126" in codes_inside(APPLY, layer)


def test_silent_apply_calls_run() -> None:
    x = torch.randn(3, requires_grad=True)
    for layer, arguments in (
        ("ScaleRight", (x,)),
        ("ScaleKeyword", (x,)),  # keywords to apply work on torch 2.13
        ("ScaleStar", ((x, 3.0),)),
        ("SumMany", (x, x, x)),
        ("ScaleWithDefaultsLayer", (x,)),
    ):
        _cls(APPLY, layer)()(*arguments).sum().backward()
        assert "AGF126" not in codes_inside(APPLY, layer), layer
    # The decorator drops the extra arguments: the call runs (backward then owes three gradients, AGF004's
    # business, not this rule's).
    assert torch.equal(_cls(APPLY, "LoggedMany")()(x), x * 2)
    for layer in ("LoggedMany", "Shadowed"):
        assert "AGF126" not in codes_inside(APPLY, layer), layer


def test_keyword_argument_reaches_forward_on_this_torch() -> None:
    """torch 2.13 binds a keyword of apply to forward's parameter, in both styles (older releases raise
    ``apply() takes no keyword arguments`` in the combined style)."""
    x = torch.randn(3, requires_grad=True)
    assert torch.equal(_cls(APPLY, "ScaleFunction").apply(x, factor=3.0), x * 3.0)
    assert torch.equal(_cls(APPLY, "ScaleSeparate").apply(x, factor=3.0), x * 3.0)


def test_contract_case_apply_arguments_is_reported() -> None:
    source = '''
        import torch

        class Multiply(torch.autograd.Function):
            @staticmethod
            def forward(ctx, value, by=2.0):
                ctx.by = by
                return value * by

            @staticmethod
            def backward(ctx, grad):
                return grad * ctx.by, None

        class MultiplySeparate(torch.autograd.Function):
            @staticmethod
            def forward(value, by=2.0):
                return value * by

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.by = inputs[1]

            @staticmethod
            def backward(ctx, grad):
                return grad * ctx.by, None

        def run(value):
            Multiply.apply(value, by=3.0)
            Multiply.apply(value, 3.0, True)
            Multiply.apply()
            MultiplySeparate.apply(value, by=3.0)
            MultiplySeparate.apply(value, 3.0, 1)
    '''
    assert codes(source, preview=True).count("AGF126") == 3


# -- AGF126 with --autograd-min-torch-version below 2.13 ----------------------------------------------

MIN_TORCH = FIXTURES / "options" / "agf126_min_torch.py"


def _min_torch_fixture(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The fixture run as a module, its unseen project base stubbed (a plain mixin)."""
    helpers = ModuleType("mypkg.helpers")
    helpers.TracingMixin = type("TracingMixin", (), {})  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "mypkg", ModuleType("mypkg"))
    monkeypatch.setitem(sys.modules, "mypkg.helpers", helpers)
    spec = importlib.util.spec_from_file_location("_fixture_agf126_min_torch", MIN_TORCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_keywords_to_apply_work_on_this_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every call of the fixture, flagged only for projects that support an older torch, runs under
    torch 2.13 with the gradient of x * 3: why the keyword report is off by default."""
    module = _min_torch_fixture(monkeypatch)
    for layer in (
        "ScaleKeyword", "AliasKeyword", "AllKeywords", "KeywordAndOptions", "SpreadCall",
        "SeparateKeyword", "InheritedSeparateKeyword", "OwnApplyKeyword", "UnseenBaseKeyword", "ScalePositional",
        "PlainKeyword",
    ):
        x = torch.randn(3, requires_grad=True)
        out = getattr(module, layer)()(x)
        out.sum().backward()
        assert torch.allclose(out, x * 3) and torch.allclose(x.grad, torch.full_like(x, 3.0)), layer
    x = torch.randn(3)
    assert torch.allclose(module.OptionsOnly()(x, factor=3.0), x * 3)
    assert torch.allclose(module.Shadowed()(module.ScaleFunction, x), x * 3)


def test_a_keyword_through_a_decorated_combined_forward_fails_on_this_torch_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """torch 2.13 matches a keyword against the parameters of forward's own code: custom_fwd's wrapper takes
    ``*args, **kwargs``, so the keyword is refused there as well (the flagged call fails on every release)."""
    module = _min_torch_fixture(monkeypatch)
    with pytest.raises(TypeError, match="forward\\(\\) got an unexpected keyword argument 'factor'"):
        module.CastKeyword()(torch.randn(3, requires_grad=True))


def test_only_the_combined_style_hands_keywords_to_torchs_apply(monkeypatch: pytest.MonkeyPatch) -> None:
    """``Function.apply`` binds the arguments to forward's signature in the setup_context style
    (``bind_default_args``), so torch's own apply gets positional arguments only; in the combined style the
    keyword goes on to torch's own apply, which releases before 2.13 refuse (``apply() takes no keyword
    arguments``)."""
    module = _min_torch_fixture(monkeypatch)
    handed: List[Tuple[Any, ...]] = []
    unwrap = torch._functorch.utils.unwrap_dead_wrappers  # what Function.apply calls on the arguments it passes on

    def recording(args: Tuple[Any, ...]) -> Tuple[Any, ...]:
        handed.append(args)
        return unwrap(args)

    monkeypatch.setattr(torch._functorch.utils, "unwrap_dead_wrappers", recording)
    x = torch.randn(3, requires_grad=True)
    module.ScaleSeparate.apply(x, factor=3.0)
    module.ScaleFunction.apply(x, factor=3.0)
    assert [len(args) for args in handed] == [2, 1]
    assert handed[0][1] == 3.0  # bound into its positional slot
