"""PyTorch as the oracle for AGF118 (``.data`` saved for backward) and AGF119 (``ctx.saved_variables``).

The fixture classes run under torch 2.13 before and after ``--fix``:

* AGF118: a tensor saved through ``.data`` and changed in place between forward and backward gives a
  silently wrong gradient; after the fix (``.detach()``) backward raises the version-counter error
  instead, and without such a change the fixed class computes what the original did.
* AGF119: ``ctx.saved_variables`` works in eager mode with a DeprecationWarning, and makes
  ``torch.compile(fullgraph=True)`` fail; the fixed class (``ctx.saved_tensors``) compiles.

The silent classes of both fixtures pass gradcheck, and the linter reports the flagged classes and not
the silent ones. A class in the shape of the contract case ``.data`` saved for backward is linted too.
"""

from __future__ import annotations

import textwrap
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest

from conftest import FIXTURES, lint, require_torch

torch = require_torch()

from flake8_autograd.adapters.command.fixer import fix_text  # noqa: E402
from flake8_autograd.adapters.command.runner import CheckOptions  # noqa: E402
from oracle import load_fixture, make_tensor  # noqa: E402
from test_oracle_structure import _class_codes  # noqa: E402  (codes per class, every rule on)

VERSION_ERROR = "one of the variables needed for gradient computation has been modified by an inplace operation"
DEPRECATION = "'saved_variables' is deprecated; use 'saved_tensors'"


def _t(*shape: int, index: int = 0, grad: bool = True) -> Any:
    return make_tensor(shape or (3,), index).requires_grad_(grad)


def _load(path: Path) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_fixture(path).module


@pytest.fixture(scope="module")
def modules(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Any]:
    """Each fixture as written, and as ``--fix`` leaves it."""
    loaded: Dict[str, Any] = {}
    folder = tmp_path_factory.mktemp("fixed")
    for stem in ("agf118", "agf119"):
        path = FIXTURES / f"{stem}.py"
        text = path.read_text(encoding="utf-8")
        fixed_text = fix_text(text, path.name, CheckOptions(preview=True, unsafe_fixes=True))[0]
        assert fixed_text != text
        fixed_path = folder / path.name
        fixed_path.write_text(fixed_text, encoding="utf-8")
        loaded[stem], loaded[f"{stem} fixed"] = _load(path), _load(fixed_path)
    return loaded


def _gradients(
    function: Any, args: List[Any], change: Callable[[List[Any], Any], None] = lambda args, out: None
) -> Any:
    """apply, ``change`` (run under no_grad: an optimizer step, say), then the gradients of the summed output."""
    output = function.apply(*args)
    with torch.no_grad():
        change(args, output)
    inputs = [arg for arg in args if isinstance(arg, torch.Tensor) and arg.requires_grad]
    return torch.autograd.grad(output.sum(), inputs, allow_unused=True)


def _gradcheck(function: Any, args: List[Any]) -> None:
    positions = [index for index, arg in enumerate(args) if isinstance(arg, torch.Tensor) and arg.requires_grad]

    def call(*tensors: Any) -> Any:
        concrete = list(args)
        for position, tensor in zip(positions, tensors):
            concrete[position] = tensor
        return function.apply(*concrete)

    assert torch.autograd.gradcheck(call, tuple(args[position] for position in positions))


# --- AGF118 --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Changed:
    """A flagged class, its arguments, and an in-place change of what it saved through ``.data``."""

    name: str
    args: Callable[[], List[Any]]
    change: Callable[[List[Any], Any], None]

    def __str__(self) -> str:
        return self.name


CHANGED = [
    Changed("DataMulFunction", lambda: [_t(), _t(index=1)], lambda args, out: args[1].mul_(10)),
    Changed(
        "DataWeightLinearFunction",
        lambda: [_t(2, 3), _t(4, 3, index=1), _t(4, index=2)],
        lambda args, out: args[1].add_(1),
    ),
    Changed("DataSigmoidFunction", lambda: [_t()], lambda args, out: out.mul_(2)),
    Changed("DataScaleSetupFunction", lambda: [_t(), _t(index=1, grad=False)], lambda args, out: args[1].zero_()),
    Changed(
        "DataBilinearFunction",
        lambda: [_t(2, 3), _t(2, 3, index=1), _t(3, index=2)],
        lambda args, out: args[2].mul_(-1),
    ),
    Changed("DataViewScaleFunction", lambda: [_t(), _t(index=1)], lambda args, out: args[1].mul_(10)),
]
SILENT_118 = {
    "MulFunction": lambda: [_t(), _t(index=1)],
    "DetachedMulFunction": lambda: [_t(), _t(index=1)],
    "ClonedDataSquareFunction": lambda: [_t()],
    "DataComputeSquareFunction": lambda: [_t()],
    "DataShapeSumFunction": lambda: [_t()],
    "ScaleSetupFunction": lambda: [_t(), _t(index=1, grad=False)],  # a fixed scale: no gradient
    "BackwardDataCubeFunction": lambda: [_t()],
}


@pytest.mark.parametrize("case", CHANGED, ids=str)
def test_agf118_data_hides_an_in_place_change_and_detach_reveals_it(case: Changed, modules: Dict[str, Any]) -> None:
    original, fixed = getattr(modules["agf118"], case.name), getattr(modules["agf118 fixed"], case.name)
    unchanged = _gradients(original, case.args())
    changed = _gradients(original, case.args(), case.change)  # no error: autograd never sees the change
    assert any(
        before is not None and not torch.allclose(before, after) for before, after in zip(unchanged, changed)
    ), "the change should alter a gradient"
    with pytest.raises(RuntimeError, match=VERSION_ERROR):
        _gradients(fixed, case.args(), case.change)
    # without a change the fixed class computes exactly what the original did
    for before, after in zip(unchanged, _gradients(fixed, case.args())):
        assert (before is None and after is None) or torch.equal(before, after)
    _gradcheck(fixed, case.args())
    assert "AGF118" in _class_codes("agf118")[case.name]


def test_agf118_a_class_that_changes_its_saved_buffer_is_reported_and_left_unfixed(modules: Dict[str, Any]) -> None:
    name = "DataRunningScaleFunction"
    args = [_t(), _t(index=1, grad=False)]
    assert _gradients(getattr(modules["agf118"], name), args) is not None  # runs, with the changed values
    assert "AGF118" in _class_codes("agf118")[name]
    fixed_source = (FIXTURES / "agf118.py").read_text(encoding="utf-8")
    fixed_source = fix_text(fixed_source, "agf118.py", CheckOptions(preview=True, unsafe_fixes=True))[0]
    assert "ctx.save_for_backward(running.data)" in fixed_source


@pytest.mark.parametrize("name", sorted(SILENT_118))
def test_agf118_silent_classes_run(name: str, modules: Dict[str, Any]) -> None:
    _gradcheck(getattr(modules["agf118"], name), SILENT_118[name]())
    assert "AGF118" not in _class_codes("agf118")[name]


def test_agf118_silent_packed_sequence_data() -> None:
    assert "AGF118" not in _class_codes("agf118")["PackedScaleFunction"]


def _objects_with_data(module: Any) -> Dict[str, Callable[[], List[Any]]]:
    """Arguments of the classes that save ``.data`` of an object that is not a tensor."""
    return {
        "BlocksScaleFunction": lambda: [_t(), _t(index=1, grad=False)],
        "SparseScaleFunction": lambda: [
            _t(),
            module.SparseValues(_t(index=1, grad=False), torch.arange(3)),
            module.Blocks(_t(index=2, grad=False), 3),
        ],
    }


@pytest.mark.parametrize("name", ["BlocksScaleFunction", "SparseScaleFunction"])
def test_agf118_data_of_an_object_is_a_tensor_of_its_own(name: str, modules: Dict[str, Any]) -> None:
    """``.data`` of a dataclass or a wrapper is the object's tensor itself: saved, it is version-checked
    (an in-place change of it before backward raises, as for any saved tensor), so nothing is hidden;
    the wrapper has no ``detach`` a fix could call. Not reported."""
    function = getattr(modules["agf118"], name)
    args = _objects_with_data(modules["agf118"])[name]
    _gradcheck(function, args())

    def change(arguments: List[Any], out: Any) -> None:
        held = arguments[1]  # the tensor blocks.data holds, or the wrapper whose data property gives its own
        (held if isinstance(held, torch.Tensor) else held.data).mul_(10)

    with pytest.raises(RuntimeError, match=VERSION_ERROR):
        _gradients(function, args(), change)
    assert not hasattr(args()[1], "detach") or name == "BlocksScaleFunction"
    assert "AGF118" not in _class_codes("agf118")[name]


def test_agf118_every_fixture_class_is_exercised() -> None:
    covered = {case.name for case in CHANGED} | set(SILENT_118) | {"DataRunningScaleFunction", "PackedScaleFunction"}
    covered |= {"BlocksScaleFunction", "SparseScaleFunction", "Blocks", "SparseValues"}  # and the two holders
    assert covered == set(_class_codes("agf118"))


CONTRACT_CASE = textwrap.dedent(
    """\
    import torch


    class ProductOfDetachedData(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a.data, b.data)
            return a * b

        @staticmethod
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            return grad * b, grad * a


    class Product(ProductOfDetachedData):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b
    """
)


def test_agf118_contract_case_data_saved_then_changed_in_place() -> None:
    """The contract case: ``.data`` saved, the weight scaled in place before backward; the product's
    gradient silently uses the scaled weight (20 where 2 is right), the plain save raises."""
    findings = [finding for finding in lint(CONTRACT_CASE, preview=True) if finding.code == "AGF118"]
    assert [(finding.line, finding.column) for finding in findings] == [(7, 30), (7, 38)]
    namespace: Dict[str, Any] = {}
    exec(compile(CONTRACT_CASE, "<contract case>", "exec"), namespace)
    for name, fails in (("ProductOfDetachedData", False), ("Product", True)):
        a, b = torch.ones(2, requires_grad=True), torch.full((2,), 2.0, requires_grad=True)
        output = namespace[name].apply(a, b)
        with torch.no_grad():
            b.mul_(10)
        if fails:
            with pytest.raises(RuntimeError, match=VERSION_ERROR):
                output.sum().backward()
        else:
            output.sum().backward()
            assert a.grad is not None and a.grad.tolist() == [20.0, 20.0]


# --- AGF119 --------------------------------------------------------------------------------------------

FLAGGED_119 = {
    "OldSquareFunction": lambda: [_t()],
    "OldExpFunction": lambda: [_t()],
    "OldMulFunction": lambda: [_t(), _t(index=1)],
    "OldScaleSetupFunction": lambda: [_t(), _t(index=1, grad=False)],
    "OldHelperSinFunction": lambda: [_t()],
    "OldOptionalBiasFunction": lambda: [_t(), _t(index=1)],
}
SILENT_119 = {
    "SquareFunction": lambda: [_t()],
    "LocalNameSquareFunction": lambda: [_t()],
    "RecordedSquareFunction": lambda: [_t()],
    "CountedSquareFunction": lambda: [_t()],
    "DocumentedSquareFunction": lambda: [_t()],
}


@pytest.mark.parametrize("name", sorted(FLAGGED_119))
def test_agf119_saved_variables_warns_and_the_fix_computes_the_same(name: str, modules: Dict[str, Any]) -> None:
    original, fixed = getattr(modules["agf119"], name), getattr(modules["agf119 fixed"], name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        before = _gradients(original, FLAGGED_119[name]())
    assert any(issubclass(w.category, DeprecationWarning) and DEPRECATION in str(w.message) for w in caught)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # the fixed class warns no more
        after = _gradients(fixed, FLAGGED_119[name]())
    for old, new in zip(before, after):
        assert (old is None and new is None) or torch.equal(old, new)
    assert "AGF119" in _class_codes("agf119")[name]


@pytest.mark.parametrize("name", sorted(SILENT_119))
def test_agf119_silent_classes_run(name: str, modules: Dict[str, Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        _gradcheck(getattr(modules["agf119"], name), SILENT_119[name]())
    assert "AGF119" not in _class_codes("agf119")[name]


def test_agf119_every_fixture_class_is_exercised() -> None:
    functions = {name for name in _class_codes("agf119") if name != "Recorder"}
    assert functions == set(FLAGGED_119) | set(SILENT_119)


def test_agf119_torch_compile_cannot_trace_saved_variables(modules: Dict[str, Any]) -> None:
    """Dynamo finds the alias empty while tracing backward: fullgraph compilation fails; the fix compiles."""
    from torch._dynamo.exc import Unsupported

    def compiled_gradient(function: Any) -> Any:
        torch._dynamo.reset()
        step = torch.compile(lambda x: function.apply(x).sum(), backend="aot_eager", fullgraph=True)
        x = torch.linspace(0.5, 1.5, 3, requires_grad=True)
        step(x).backward()
        return x.grad

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(Unsupported, match="not enough values to unpack"):
            compiled_gradient(modules["agf119"].OldSquareFunction)
    gradient = compiled_gradient(modules["agf119 fixed"].OldSquareFunction)
    assert torch.allclose(gradient, 2 * torch.linspace(0.5, 1.5, 3))
