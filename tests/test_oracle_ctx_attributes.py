"""PyTorch is the oracle for AGF124: in backward (and jvp) ctx is the graph node of the call, an instance of
the generated class ``<Name>Backward``; an attribute forward did not store on it, or one of the Function
class, raises AttributeError there."""

import re
from typing import Any, Callable, Sequence

import pytest

from conftest import codes_inside, fixture_module, lint, require_torch

torch = require_torch()

import torch.autograd.forward_ad as forward_ad  # noqa: E402

STEM = "agf124"


def _cls(name: str) -> Any:
    return getattr(fixture_module(STEM), name)


def _input() -> Any:
    return torch.linspace(0.2, 0.9, 5, dtype=torch.float64, requires_grad=True)


def _backward(apply: Callable[..., Any], *extra: Any) -> Any:
    x = _input()
    apply(x, *extra).sum().backward()
    return x.grad


def _missing(name: str, attribute: str) -> str:
    return re.escape(f"'{name}Backward' object has no attribute '{attribute}'")


# (class, extra apply arguments, attribute torch finds missing)
FLAGGED_IN_BACKWARD: Sequence[tuple] = (
    ("TypoScaleFunction", (2.0,), "scale"),
    ("TripleFunction", (), "FACTOR"),
    ("SoftsignFunction", (), "_derivative"),
    ("ClampScaleFunction", (2.0, False), "limit"),
    ("ShortcutScaleFunction", (1.0,), "scale"),
    ("ClipFunction", (0.3, 0.7), "width"),
    ("UnpackedTypoFunction", (2.0,), "totals"),
    ("ShortcutThenClampFunction", (False,), "limit"),
)


@pytest.mark.parametrize("name, extra, attribute", FLAGGED_IN_BACKWARD)
def test_flagged_backward_raises_attribute_error(name: str, extra: tuple, attribute: str) -> None:
    with pytest.raises(AttributeError, match=_missing(name, attribute)):
        _backward(_cls(name).apply, *extra)
    assert "AGF124" in codes_inside(STEM, name)


def test_one_branch_store_works_on_the_branch_that_stores() -> None:
    """The one-path findings are not about every call: the other path runs (the mistake is the rest)."""
    clamped = _backward(_cls("ClampScaleFunction").apply, 2.0, True)
    assert torch.allclose(clamped, torch.full((5,), 2.0, dtype=torch.float64))
    scaled = _backward(_cls("ShortcutScaleFunction").apply, 3.0)
    assert torch.allclose(scaled, torch.full((5,), 3.0, dtype=torch.float64))


def test_flagged_jvp_raises_attribute_error() -> None:
    x = _input().detach()
    with forward_ad.dual_level():
        dual = forward_ad.make_dual(x, torch.ones_like(x))
        with pytest.raises(AttributeError, match=_missing("SinScaleFunction", "scale")):
            _cls("SinScaleFunction").apply(dual, 2.0)
    assert "AGF124" in codes_inside(STEM, "SinScaleFunction")


def test_torch_provided_attributes_are_on_every_ctx() -> None:
    """What the rule takes as provided is what a real ctx in backward has, in both styles."""
    from flake8_autograd.engine.facts.ctx.attributes import TORCH_CTX_ATTRIBUTES

    seen = {}

    class Probe(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad_output):
            seen["combined"] = set(dir(ctx))
            return grad_output * 2

    class SeparateProbe(torch.autograd.Function):
        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, grad_output):
            seen["separate"] = set(dir(ctx))
            return grad_output * 2

    _backward(Probe.apply)
    _backward(SeparateProbe.apply)
    amp_only = {"_dtype", "_fwd_used_autocast"}  # stored by torch.amp.custom_fwd
    for style in ("combined", "separate"):
        provided = {name for name in seen[style] if not name.startswith("__")}
        assert provided == TORCH_CTX_ATTRIBUTES - amp_only, style
        assert "FACTOR" not in seen[style]


SILENT = (
    ("ScaleFunction", (2.0,)),
    ("QuadrupleFunction", ()),
    ("GuardedClampScaleFunction", (2.0, False)),
    ("GuardedClampScaleFunction", (2.0, True)),
    ("PiecewiseScaleFunction", ("half",)),
    ("BoundedClipFunction", ((0.3, 0.7),)),
    ("HelperScaleFunction", (2.0, {"weight": 0.5})),
    ("DecoratedScaleFunction", (2.0,)),
    ("TrainingScaleFunction", (2.0, True)),
    ("TrainingNormFunction", (1e-3, True)),
    ("RememberingScaleFunction", (2.0,)),
    ("ProbingScaleFunction", (2.0,)),
    ("UnpackedStoresFunction", (2.0, (1, 2, 3))),
    ("NoGradientShortcutFunction", (2.0,)),
    ("WantedStoreFunction", (2.0,)),
    ("OneInputWantedFunction", (2.0,)),
)


@pytest.mark.parametrize("name, extra", SILENT)
def test_silent_cases_run_fine(name: str, extra: tuple) -> None:
    grad = _backward(_cls(name).apply, *extra)
    assert grad is not None and torch.isfinite(grad).all()
    assert "AGF124" not in codes_inside(STEM, name)


def test_unpacked_stores_are_read_in_backward() -> None:
    """An attribute set by an unpacking whose value is no display (``out, ctx.total = kernel(...)``, a
    nested or starred target) is on the ctx backward receives."""
    grad = _backward(_cls("UnpackedStoresFunction").apply, 2.0, (1, 2, 3))
    assert torch.allclose(grad, torch.full((5,), 2.0, dtype=torch.float64))


@pytest.mark.parametrize("name", ["NoGradientShortcutFunction", "WantedStoreFunction"])
def test_a_store_skipped_only_without_gradients_leaves_no_backward_to_fail(name: str) -> None:
    """The path that skips the store is taken only when no input requires a gradient: apply then records
    no graph node, so no backward can read the missing attribute; with a gradient the store is made."""
    out = _cls(name).apply(_input().detach(), 2.0)
    assert out.grad_fn is None and not out.requires_grad
    with torch.no_grad():
        assert _cls(name).apply(_input(), 2.0).grad_fn is None
    assert torch.allclose(_backward(_cls(name).apply, 2.0), torch.full((5,), 2.0, dtype=torch.float64))


def test_one_input_wanted_is_not_enough() -> None:
    """Why a test of one input's requires_grad settles nothing when another input may need a gradient:
    backward runs for the other one, and the attribute is missing."""
    x, w = _input().detach(), _input()
    with pytest.raises(AttributeError, match=_missing("OneInputWantedFunction", "w")):
        _cls("OneInputWantedFunction").apply(x, w).sum().backward()


# The contract cases in our own words: a store under a typo (and another only on one branch), and a
# class constant read through ctx.
TYPO = """
import torch


class Gain(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, gain, saturate=False):
        if saturate:
            ctx.gain = gain
        ctx.gian = gain
        return x * gain

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.gain, None, None
"""

CONSTANT = """
import torch


class Halve(torch.autograd.Function):
    RATIO = 0.5

    @staticmethod
    def forward(ctx, x):
        return x * Halve.RATIO

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.RATIO
"""


def _run(source: str, name: str, *extra: Any) -> None:
    namespace: dict = {}
    exec(compile(source, f"{name}.py", "exec"), namespace)
    _backward(namespace[name].apply, *extra)


def test_contract_cases() -> None:
    with pytest.raises(AttributeError, match=_missing("Gain", "gain")):
        _run(TYPO, "Gain", 2.0)
    assert [(f.line, f.code) for f in lint(TYPO, preview=True)] == [(15, "AGF124")]
    with pytest.raises(AttributeError, match=_missing("Halve", "RATIO")):
        _run(CONSTANT, "Halve")
    findings = lint(CONSTANT, preview=True)
    assert [(f.line, f.code) for f in findings] == [(14, "AGF124")]
    assert "read Halve.RATIO" in findings[0].message


def test_attributes_stored_on_the_graph_node_from_outside_reach_backward() -> None:
    module = fixture_module(STEM)
    x = torch.rand(3, requires_grad=True)
    gradient = torch.full((3,), 4.0)
    module.attach_peer_gradient(x, gradient).backward()
    assert torch.equal(x.grad, gradient)
    y = torch.rand(3, requires_grad=True)
    module.relay(y, 3.0).sum().backward()
    assert torch.equal(y.grad, torch.full((3,), 3.0))
    for name in ("PeerGradientFunction", "RelayFunction"):
        assert "AGF124" not in codes_inside(STEM, name), name
