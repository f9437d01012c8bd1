"""Fixes on real code under torch: each Function class of the real-code projects that a fix changes,
as a CPU stand-in, computes the same before and after the fix.

tests/fixdiff_cases/ holds one stand-in per class (benchmarks/realcode/fixdiff.py lists the classes):
the class's autograd structure in our own words, its GPU, Triton or C++ kernels replaced by plain torch
ops, the parts a fix touches (decorators, ctx names, stores, returns) kept as they are. Each is fixed
with ``fix_text``; the original and the fixed module are run on the same inputs: forward values, the
inputs afterwards (kernels write running statistics in place), the gradients of a first backward, and
what a second backward without ``retain_graph`` gives or raises.

A safe fix must leave all of it identical. An unsafe fix must leave forward and the first gradients
identical; any other difference must be the one its ``unsafe_because`` names. Skipped without torch.
"""

from __future__ import annotations

import functools
import importlib
import os
import types
import warnings
from pathlib import Path
from typing import Any, Callable, List, Tuple

import pytest

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=r"Failed to initialize NumPy", category=UserWarning)
    if os.environ.get("AGF_REQUIRE_TORCH"):
        torch = importlib.import_module("torch")
    else:
        torch = pytest.importorskip("torch", reason="the stand-ins run under PyTorch")

from flake8_autograd.adapters.command.fixer import fix_text  # noqa: E402
from flake8_autograd.adapters.command.runner import CheckOptions, lint_lines  # noqa: E402

CASES = Path(__file__).parent / "fixdiff_cases"
STAND_INS = sorted(path for path in CASES.glob("*.py") if not path.name.startswith("_"))
SAFE = CheckOptions(preview=True)
UNSAFE = CheckOptions(preview=True, unsafe_fixes=True)


def load(text: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__file__ = str(CASES / f"{name}.py")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(text, module.__file__, "exec"), module.__dict__)  # noqa: S102 - our own stand-in
    return module


def snapshot(value: Any) -> Any:
    """A detached copy of what a call gave: tensors cloned, tuples and lists walked, the rest kept."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (tuple, list)):
        return type(value)(snapshot(item) for item in value)
    return value


def same(left: Any, right: Any) -> bool:
    """Equal values: tensors bit for bit (NaNs in the same places), containers item by item."""
    if isinstance(left, torch.Tensor) or isinstance(right, torch.Tensor):
        return (
            isinstance(left, torch.Tensor) and isinstance(right, torch.Tensor) and left.dtype == right.dtype
            and left.shape == right.shape and bool(torch.equal(left.nan_to_num(), right.nan_to_num()))
            and bool(torch.equal(left.isnan(), right.isnan()))
        )
    if isinstance(left, (tuple, list)) or isinstance(right, (tuple, list)):
        return type(left) is type(right) and len(left) == len(right) and all(map(same, left, right))
    if isinstance(left, BaseException) or isinstance(right, BaseException):
        return type(left) is type(right)
    if callable(left) or type(left) is object:  # a helper or handle of the module: each run loads its own
        return type(left) is type(right) and getattr(left, "__qualname__", 0) == getattr(right, "__qualname__", 0)
    return bool(left == right)


def outcome(action: Callable[[], Any]) -> Any:
    """What ``action`` gives (snapshotted), or the exception it raises."""
    try:
        return snapshot(action())
    except Exception as error:  # noqa: BLE001 - an exception is an outcome to compare
        return error


def differentiable(outputs: Any) -> List[Any]:
    items = outputs if isinstance(outputs, (tuple, list)) else [outputs]
    return [item for item in items if isinstance(item, torch.Tensor) and item.requires_grad]


def behaviour(module: types.ModuleType) -> Tuple[Any, Any, Any, Any]:
    """Forward values, the inputs after forward, first gradients, second backward: of one seeded run."""
    torch.manual_seed(0)
    args = module.inputs()
    leaves = [arg for arg in args if isinstance(arg, torch.Tensor) and arg.requires_grad]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            raw = module.run(args)
        except Exception as error:  # noqa: BLE001 - an exception is an outcome to compare
            return error, None, None, None
        outputs = differentiable(raw)
        # Output gradients handed to autograd (no loss node of ours, which would save tensors itself).
        weights = [torch.linspace(0.5, 1.5, output.numel()).view_as(output) for output in outputs]
        first = outcome(lambda: torch.autograd.grad(outputs, leaves, weights, allow_unused=True))
        second = outcome(lambda: torch.autograd.grad(outputs, leaves, weights, allow_unused=True))
    return snapshot(raw), snapshot(args), first, second


@functools.lru_cache(maxsize=None)  # each stand-in is fixed once per options, whichever test asks
def fixed(path: Path, options: CheckOptions) -> Tuple[str, List[str], Tuple[str, ...]]:
    """The stand-in's text after the fixes ``options`` applies; the codes fixed; the unsafe_because of each
    unsafe fix among them."""
    text = path.read_text(encoding="utf-8")
    before, _ = lint_lines(text.splitlines(keepends=True), str(path), options)
    after_text, count, after, notice = fix_text(text, str(path), options)
    assert notice is None, f"{path.name}: {notice}"
    left = [(finding.code, finding.message) for finding in after]
    codes, reasons = [], []
    for finding in before:
        if finding.fix is None or not (finding.fix.safe or options.unsafe_fixes):
            continue
        if (finding.code, finding.message) in left:
            left.remove((finding.code, finding.message))
            continue
        codes.append(finding.code)
        if finding.fix.unsafe_because is not None:
            reasons.append(finding.fix.unsafe_because)
    assert count == len(codes), path.name
    return after_text, sorted(set(codes)), tuple(reasons)


def stand_in_id(path: Path) -> str:
    return path.stem


def test_every_stand_in_names_its_class() -> None:
    assert STAND_INS
    for path in STAND_INS:
        module = load(path.read_text(encoding="utf-8"), path.stem)
        project, file, name = module.SOURCE
        assert isinstance(getattr(module, name.split(".")[-1]), type), path.name
        assert project and file.endswith(".py"), path.name


@pytest.mark.parametrize("path", STAND_INS, ids=stand_in_id)
def test_a_safe_fix_keeps_everything_the_class_computes(path: Path) -> None:
    original_text = path.read_text(encoding="utf-8")
    text, codes, reasons = fixed(path, SAFE)
    module = load(original_text, path.stem)
    if module.UNSAFE:
        assert text == original_text, f"{path.name}: a safe fix changed a class only unsafe fixes should"
        return
    assert text != original_text, f"{path.name}: no fix changed the stand-in"
    assert codes == sorted(module.FIXED) and not reasons, path.name
    before, after = behaviour(module), behaviour(load(text, path.stem + "_fixed"))
    assert not isinstance(before[0], Exception), f"{path.name}: the original stand-in does not run: {before[0]!r}"
    assert not isinstance(before[2], Exception), f"{path.name}: the original's backward raises: {before[2]!r}"
    for part, old, new in zip(("forward", "inputs after forward", "gradients", "second backward"), before, after):
        assert same(old, new), f"{path.name}: the safe fix changed the {part}: {old!r} -> {new!r}"


@pytest.mark.parametrize("path", STAND_INS, ids=stand_in_id)
def test_an_unsafe_fix_changes_only_what_it_says(path: Path) -> None:
    original_text = path.read_text(encoding="utf-8")
    module = load(original_text, path.stem)
    safe_text, _, _ = fixed(path, SAFE)
    text, codes, reasons = fixed(path, UNSAFE)
    if not module.UNSAFE:
        assert text == safe_text, f"{path.name}: an unsafe fix changed a class listed as changed by safe ones only"
        return
    assert text != original_text, f"{path.name}: no fix changed the stand-in"
    assert codes == sorted(module.FIXED) and reasons, path.name
    before, after = behaviour(module), behaviour(load(text, path.stem + "_fixed"))
    assert not isinstance(before[0], Exception), f"{path.name}: the original stand-in does not run: {before[0]!r}"
    assert not isinstance(before[2], Exception), f"{path.name}: the original's backward raises: {before[2]!r}"
    for part, old, new in zip(("forward", "inputs after forward", "gradients"), before, after):
        assert same(old, new), f"{path.name}: the unsafe fix changed the {part}: {old!r} -> {new!r}"
    if not same(before[3], after[3]):
        # The one difference an unsafe fix of the kind here may make: a second backward now raises.
        assert isinstance(after[3], RuntimeError) and "second time" in str(after[3]), after[3]
        assert any("second backward" in reason for reason in reasons), reasons
    assert module.SECOND_BACKWARD_DIFFERS == (not same(before[3], after[3])), path.name


MUTATING = [path for path in STAND_INS if "\ndef mutate(" in path.read_text(encoding="utf-8")]


def backward_after_mutation(module: types.ModuleType) -> Any:
    """The gradients of a run whose stored tensor the stand-in's ``mutate`` changes in place between forward
    and backward (or the exception backward raises)."""
    torch.manual_seed(0)
    args = module.inputs()
    leaves = [arg for arg in args if isinstance(arg, torch.Tensor) and arg.requires_grad]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outputs = differentiable(module.run(args))
        module.mutate(args)
        weights = [torch.linspace(0.5, 1.5, output.numel()).view_as(output) for output in outputs]
        return outcome(lambda: torch.autograd.grad(outputs, leaves, weights, allow_unused=True))


@pytest.mark.parametrize("path", MUTATING, ids=stand_in_id)
def test_an_unsafe_saving_fix_raises_where_an_in_place_change_went_unchecked(path: Path) -> None:
    """The other difference AGF003's unsafe_because names: an in-place change of the tensor between forward
    and backward, unseen while it sat on ctx, now fails the saved tensor's version check."""
    module = load(path.read_text(encoding="utf-8"), path.stem)
    text, _, reasons = fixed(path, UNSAFE)
    before, after = backward_after_mutation(module), backward_after_mutation(load(text, path.stem + "_fixed"))
    assert not isinstance(before, Exception), before
    assert isinstance(after, RuntimeError) and "modified by an inplace operation" in str(after), after
    assert any("in-place change" in reason for reason in reasons), reasons
