import importlib
import os

import pytest

if os.environ.get("AGF_REQUIRE_TORCH"):  # CI installs torch: a missing torch there fails, not skips
    torch = importlib.import_module("torch")
else:
    torch = pytest.importorskip(
        "torch", reason="the oracle layer runs fixture Functions under PyTorch, which is not installed"
    )

# PyTorch as the oracle for the structure rules AGF113-AGF116: Function classes taken from the fixtures
# run under torch; each test shows torch failing the flagged class and accepting its silent counterpart,
# and checks that the linter flags the first and not the second.

import ast  # noqa: E402
import inspect  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from functools import lru_cache  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable, Dict, List, Sequence, Set, Tuple  # noqa: E402

from conftest import FIXTURES, lint  # noqa: E402
from oracle import load_fixture, make_tensor  # noqa: E402


@dataclass(frozen=True)
class Case:
    """A fixture class and how to call its apply: ``args`` builds fresh arguments (T = a grad-requiring tensor)."""

    fixture: str
    name: str
    args: Callable[[], List[Any]]

    def __str__(self) -> str:
        return self.name


def _t(*shape: int, index: int = 0) -> Any:
    """A fresh float64 tensor in [0.5, 2) that requires grad (deterministic)."""
    return make_tensor(shape or (3,), index)


def _row_mask() -> Any:
    return torch.tensor([[True, False, True], [True, True, False]])


@lru_cache(maxsize=None)
def _module(fixture: str) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_fixture(FIXTURES / f"{fixture}.py").module


@lru_cache(maxsize=None)
def _class_codes(fixture: str) -> Dict[str, Set[str]]:
    """Codes the linter reports inside each top-level class of a fixture (all rules, preview on)."""
    path: Path = FIXTURES / f"{fixture}.py"
    source = path.read_text(encoding="utf-8")
    findings = lint(source, filename=str(path), preview=True)
    spans = {
        node.name: (min([node.lineno] + [d.lineno for d in node.decorator_list]), node.end_lineno or node.lineno)
        for node in ast.parse(source).body
        if isinstance(node, ast.ClassDef)
    }
    return {
        name: {finding.code for finding in findings if start <= finding.line <= end}
        for name, (start, end) in spans.items()
    }


def _cls(case: Case) -> Any:
    return getattr(_module(case.fixture), case.name)


def _grad_inputs(args: Sequence[Any]) -> List[Any]:
    return [arg for arg in args if isinstance(arg, torch.Tensor) and arg.requires_grad]


def _backward(case: Case) -> Tuple[Any, ...]:
    """apply, then backward of the summed outputs with respect to every grad-requiring argument."""
    args = case.args()
    result = _cls(case).apply(*args)
    outputs = result if isinstance(result, tuple) else (result,)
    loss = sum(output.sum() for output in outputs if isinstance(output, torch.Tensor) and output.requires_grad)
    return torch.autograd.grad(loss, _grad_inputs(args), allow_unused=True)


def _gradcheck(case: Case) -> None:
    args = case.args()
    positions = [index for index, arg in enumerate(args) if isinstance(arg, torch.Tensor) and arg.requires_grad]

    def call(*tensors: Any) -> Any:
        concrete = list(args)
        for position, tensor in zip(positions, tensors):
            concrete[position] = tensor
        return _cls(case).apply(*concrete)

    assert torch.autograd.gradcheck(call, tuple(args[position] for position in positions))


def _assert_lint(code: str, flagged: Case, silent: Case) -> None:
    flagged_codes = _class_codes(flagged.fixture)[flagged.name]
    silent_codes = _class_codes(silent.fixture)[silent.name]
    assert code in flagged_codes, f"{flagged.name}: torch fails it, the linter reports {sorted(flagged_codes)}"
    assert "AGF000" not in flagged_codes, f"{flagged.name}: internal error"
    assert code not in silent_codes, f"{silent.name}: torch accepts it, the linter reports {code}"


# --- AGF113: backward and vjp both defined, or neither ----------------------------------------------------

BOTH_PAIRS = [
    (Case("agf113", "SquarePlusFunction", lambda: [_t()]), Case("agf113", "SwishFunction", lambda: [_t()])),
    (
        Case("agf113", "ScaleWithVjpFunction", lambda: [_t(), 2.0]),
        Case("agf113", "ScaleFunction", lambda: [_t(), 2.0]),
    ),
    (
        Case("agf113", "SharedScaleFunction", lambda: [_t(), 2.0]),
        Case("agf113", "SharedScaleOnlyBackward", lambda: [_t(), 2.0]),
    ),
]

NEITHER_PAIRS = [
    (
        Case("agf113", "SoftClampFunction", lambda: [_t(), 3.0]),
        Case("agf113", "SigmoidFocalLossFunction", lambda: [_t(4), torch.tensor([1.0, 0.0, 1.0, 0.0]).double()]),
    ),
    (
        Case("agf113", "RMSNormFunction", lambda: [_t(2, 4), _t(4, index=1), 1e-6]),
        Case("agf113", "GeluTanhFunction", lambda: [_t()]),
    ),
    (
        Case("agf113", "IdentityCopyFunction", lambda: [_t()]),
        Case("agf113", "GatherRowsFunction", lambda: [_t(4, 2), torch.tensor([0, 2, 2])]),
    ),
    (Case("agf113", "SoftClampFunction", lambda: [_t(), 3.0]), Case("agf113", "FusedSiLUFunction", lambda: [_t()])),
    (
        Case("agf113", "SoftClampFunction", lambda: [_t(), 3.0]),
        Case("agf113", "SoftshrinkFunction", lambda: [_t(), 0.7]),
    ),
]


@pytest.mark.parametrize(("flagged", "silent"), BOTH_PAIRS, ids=str)
def test_agf113_backward_and_vjp_both_defined_fail_at_backward(flagged: Case, silent: Case) -> None:
    flagged_args = flagged.args()
    output = _cls(flagged).apply(*flagged_args)  # apply itself is fine: the check runs in the backward node
    assert output.requires_grad
    with pytest.raises(RuntimeError, match="Implementing both 'backward' and 'vjp' for a custom Function"):
        _backward(flagged)
    _gradcheck(silent)
    _assert_lint("AGF113", flagged, silent)


@pytest.mark.parametrize(("flagged", "silent"), NEITHER_PAIRS, ids=str)
def test_agf113_no_backward_fails_at_backward(flagged: Case, silent: Case) -> None:
    with torch.no_grad():
        _cls(flagged).apply(*flagged.args())  # nothing is checked while no gradient is needed
    output = _cls(flagged).apply(*flagged.args())
    assert output.requires_grad  # apply records a node all the same
    with pytest.raises(NotImplementedError, match="You must implement either the backward or vjp method"):
        _backward(flagged)
    _gradcheck(silent)
    _assert_lint("AGF113", flagged, silent)


def test_agf113_jvp_only_function_serves_forward_mode() -> None:
    """Precision: a jvp without backward is a complete Function for forward-mode AD."""
    forward_ad = importlib.import_module("torch.autograd.forward_ad")
    case = Case("agf113", "ExpForwardModeFunction", lambda: [_t()])
    x = _t().detach()
    tangent = torch.ones_like(x)
    _, jvp_out = torch.func.jvp(_cls(case).apply, (x,), (tangent,))
    torch.testing.assert_close(jvp_out, x.exp())
    with forward_ad.dual_level():
        dual = forward_ad.make_dual(x, tangent)
        torch.testing.assert_close(forward_ad.unpack_dual(_cls(case).apply(dual)).tangent, x.exp())
    with pytest.raises(NotImplementedError, match="You must implement either the backward or vjp method"):
        _backward(case)  # reverse mode is the only thing it cannot do
    assert "AGF113" not in _class_codes("agf113")["ExpForwardModeFunction"]


def test_agf113_function_with_only_non_differentiable_outputs_needs_no_backward() -> None:
    case = Case("agf113", "ArgmaxIndexFunction", lambda: [_t(2, 3)])
    x = _t(2, 3)
    index = _cls(case).apply(x)
    assert not index.requires_grad  # no node to run backward for
    torch.testing.assert_close(index, torch.argmax(x.detach(), dim=-1))
    assert "AGF113" not in _class_codes("agf113")["ArgmaxIndexFunction"]


# --- AGF114: @once_differentiable above @staticmethod -----------------------------------------------------

ORDER_PAIRS = [
    (
        Case("agf114", "SquaredReLUFunction", lambda: [_t()]),
        Case("agf114", "SoftsignFunction", lambda: [_t()]),
        "backward",
    ),
    (
        Case("agf114", "MaskedSoftmaxFunction", lambda: [_t(2, 3), _row_mask()]),
        Case("agf114", "HardSigmoidFunction", lambda: [_t()]),
        "backward",
    ),
    (
        Case("agf114", "FusedBiasGeluFunction", lambda: [_t(2, 3), _t(3, index=1)]),
        Case("agf114", "FusedBiasTanhFunction", lambda: [_t(2, 3), _t(3, index=1)]),
        "backward",
    ),
    (Case("agf114", "LogCoshFunction", lambda: [_t()]), Case("agf114", "ExpM1Function", lambda: [_t()]), "vjp"),
]


@pytest.mark.parametrize(("flagged", "silent", "method"), ORDER_PAIRS, ids=str)
def test_agf114_once_differentiable_above_staticmethod(flagged: Case, silent: Case, method: str) -> None:
    reversed_order = inspect.getattr_static(_cls(flagged), method)
    documented_order = inspect.getattr_static(_cls(silent), method)
    # The documented order leaves a staticmethod in the class; the reversed one leaves once_differentiable's
    # plain wrapper, which calls the staticmethod object it wrapped.
    assert isinstance(documented_order, staticmethod)
    assert not isinstance(reversed_order, staticmethod)
    assert isinstance(reversed_order.__wrapped__, staticmethod)
    if sys.version_info < (3, 10):
        with pytest.raises(TypeError, match="'staticmethod' object is not callable"):
            _backward(flagged)
    else:
        # Python 3.10 made staticmethod objects callable: the reversed order runs, and is still
        # once-differentiable. What fails on 3.9 and older cannot be observed here.
        assert callable(reversed_order.__wrapped__)
        _gradcheck(flagged)
        args = flagged.args()
        output = _cls(flagged).apply(*args)
        seed = torch.ones_like(output, requires_grad=True)  # a gradient that itself requires grad
        (grad,) = torch.autograd.grad(output, _grad_inputs(args)[:1], seed, create_graph=True)
        with pytest.raises(RuntimeError, match="differentiate twice a function that was marked with @once_diff"):
            grad.sum().backward()
    _gradcheck(silent)
    _assert_lint("AGF114", flagged, silent)


# --- AGF115: vmap defined while generate_vmap_rule = True -------------------------------------------------

VMAP_PAIRS = [
    (
        Case("agf115", "TritonSoftplusFunction", lambda: [_t(4, 3), 2.0]),
        Case("agf115", "TritonSoftplusBatchedFunction", lambda: [_t(4, 3), 2.0]),
    ),
    (
        Case("agf115", "FusedSquareFunction", lambda: [_t(4, 3)]),
        Case("agf115", "NumpySortLikeFunction", lambda: [_t(4, 3)]),
    ),
    (Case("agf115", "CubeFunction", lambda: [_t(4, 3)]), Case("agf115", "_GeneratedCubeBase", lambda: [_t(4, 3)])),
    (Case("agf115", "AbsFunction", lambda: [_t(4, 3)]), Case("agf115", "_BatchedAbsBase", lambda: [_t(4, 3)])),
    (
        Case("agf115", "SharedSoftplusFunction", lambda: [_t(4, 3), 2.0]),
        Case("agf115", "ClampMinFunction", lambda: [_t(4, 3), 0.1]),
    ),
    (
        Case("agf115", "FusedSquareFunction", lambda: [_t(4, 3)]),
        Case("agf115", "RowNormalizeFunction", lambda: [_t(4, 3)]),
    ),
    (Case("agf115", "FusedSquareFunction", lambda: [_t(4, 3)]), Case("agf115", "SiLUFunction", lambda: [_t(4, 3)])),
]


def _vmapped(case: Case) -> Tuple[Any, Any]:
    """torch.vmap of apply over the first dimension of the tensor argument, and apply on the whole batch."""
    batch, *rest = case.args()
    batch = batch.detach()

    def one(x: Any) -> Any:
        return _cls(case).apply(x, *rest)

    return torch.vmap(one)(batch), one(batch)


@pytest.mark.parametrize(("flagged", "silent"), VMAP_PAIRS, ids=str)
def test_agf115_vmap_with_generated_rule_fails_under_vmap(flagged: Case, silent: Case) -> None:
    _gradcheck(flagged)  # outside vmap the class is fine
    with pytest.raises(RuntimeError, match="has both generate_vmap_rule=True and an overridden vmap staticmethod"):
        _vmapped(flagged)
    batched, whole = _vmapped(silent)
    torch.testing.assert_close(batched, whole)
    batch, *rest = silent.args()
    per_sample = torch.vmap(torch.func.grad(lambda x: _cls(silent).apply(x, *rest).sum()))(batch.detach())
    assert per_sample.shape == batch.shape
    _gradcheck(silent)
    _assert_lint("AGF115", flagged, silent)


# --- AGF116: backward returns a list ----------------------------------------------------------------------

LIST_PAIRS = [
    (
        Case("agf116", "FusedMulFunction", lambda: [_t(), _t(index=1)]),
        Case("agf116", "FusedMulTupleFunction", lambda: [_t(), _t(index=1)]),
        "returned an incorrect number of gradients (expected 2, got 1)",
    ),
    (
        Case("agf116", "LeakyClampFunction", lambda: [_t()]),
        Case("agf116", "MeanOfSquaresFunction", lambda: [_t()]),
        "expected Variable or None (got list)",
    ),
    (
        Case("agf116", "ModulatedScaleFunction", lambda: [_t(2, 3), _t(3, index=1), 1, 1e-6]),
        Case("agf116", "StackedLinearFunction", lambda: [_t(2, 3), _t(3, 2, index=1), _t(3, 2, index=2)]),
        "returned an incorrect number of gradients (expected 4, got 1)",
    ),
    (
        Case("agf116", "MaskedAddFunction", lambda: [_t(), torch.ones(3).double(), torch.tensor([True, False, True])]),
        Case("agf116", "WeightedSumFunction", lambda: [_t(), _t(index=1), _t(index=2)]),
        "returned an incorrect number of gradients (expected 3, got 1)",
    ),
    (
        Case("agf116", "AffineFunction", lambda: [_t(), 2.0, 1.0]),
        Case("agf116", "SplitScaleFunction", lambda: [_t(4), 3.0]),
        "returned an incorrect number of gradients (expected 3, got 1)",
    ),
    (
        Case("agf116", "FusedMulFunction", lambda: [_t(), _t(index=1)]),
        Case("agf116", "MinMaxFunction", lambda: [_t(2, 3)]),
        "returned an incorrect number of gradients (expected 2, got 1)",
    ),
]


@pytest.mark.parametrize(
    ("flagged", "silent", "fragment"), LIST_PAIRS, ids=[f"{flagged}-{silent}" for flagged, silent, _ in LIST_PAIRS]
)
def test_agf116_list_return_counts_as_one_gradient(flagged: Case, silent: Case, fragment: str) -> None:
    with pytest.raises(RuntimeError) as raised:
        _backward(flagged)
    assert fragment in str(raised.value)
    _gradcheck(silent)
    _assert_lint("AGF116", flagged, silent)


def test_agf116_tuple_path_of_masked_add_runs() -> None:
    """MaskedAddFunction's tuple path (both inputs need grad) works; only its list path fails."""
    case = Case("agf116", "MaskedAddFunction", lambda: [_t(), _t(index=1), torch.tensor([True, False, True])])
    _gradcheck(case)
