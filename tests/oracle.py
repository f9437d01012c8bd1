"""PyTorch as the oracle: run fixture Functions under real torch and check what their comments declare.

Declarations
============

A fixture class is declared by comment lines in the comment block directly above its ``class`` line
(one or more lines; each is checked on its own)::

    # torch: CALL [with zero grad] VERDICT

CALL
    ``Cls.apply(ARGS)``, where ``Cls`` is the class the block belongs to, or ``helper(ARGS)``, where
    ``helper`` is a top-level function of the fixture whose body calls ``Cls.apply``. ARGS are positional
    only, separated by commas, each one of:

    - ``T`` -- a fresh float64 tensor of shape ``(3,)`` with ``requires_grad=True``;
    - ``T(d0, d1, ...)`` -- the same with the given shape;
    - any Python literal (``2.0``, ``"copy"``, ``None``, ``False``, ...), passed as is.

    Tensor values are deterministic, distinct and positive: the k-th ``T`` of a call (k = 0, 1, ...)
    holds ``0.5 + 0.1 * k + i / n`` for its flat index ``i`` of ``n`` elements, so they lie in [0.5, 2).

``with zero grad``
    Seed backward with zeros instead of ones (for code paths taken on an all-zero gradient).
    Not allowed with ``passes gradcheck``.

VERDICT, one of:
    ``runs``
        forward, then backward (``torch.autograd.grad`` of every output that requires grad with
        respect to every ``T``, seeded with ones) complete without an exception.
    ``passes gradcheck``
        ``runs``, and ``torch.autograd.gradcheck`` over the ``T`` arguments succeeds (default tolerances,
        including its check of undefined output gradients).
    ``raises at backward EXC "FRAGMENT"``
        forward completes, then backward raises the builtin exception EXC (or a subclass) whose message
        contains FRAGMENT.
    ``raises at forward EXC "FRAGMENT"``
        the CALL itself raises (FRAGMENT may be ``""``: any message).

Every top-level ``torch.autograd.Function`` class of an oracle fixture carries at least one
declaration; a ``# torch:`` line outside a class's comment block is an error. A "raises at backward"
declaration with one of :data:`GRADIENT_COUNT_FRAGMENTS` is what AGF004 predicts.
"""

from __future__ import annotations

import ast
import builtins
import importlib.util
import io
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Type

from flake8_autograd.adapters.command.fixer import MAX_PASSES, applies
from flake8_autograd.adapters.command.runner import CheckOptions, lint_lines
from flake8_autograd.core.fixes import apply_fixes_taken

try:
    import torch
except ImportError:  # reading declarations needs no torch (a test collects them); running them does
    torch = None

PREFIX = "# torch:"

#: Stable fragments of the two errors PyTorch raises at backward for a wrong gradient count.
GRADIENT_COUNT_FRAGMENTS = (
    "returned an incorrect number of gradients",
    "returned a gradient different than None",
)

VERDICTS = ("runs", "passes gradcheck", "raises")

_DECLARATION = re.compile(
    r"^(?P<call>.+?)\s+(?:(?P<zero>with zero grad)\s+)?"
    r"(?P<verdict>runs|passes gradcheck"
    r"|raises at (?P<when>forward|backward) (?P<exc>[A-Za-z_]\w*) \"(?P<fragment>[^\"]*)\")$"
)


class DeclarationError(ValueError):
    """A ``# torch:`` line that does not follow the grammar in this module's docstring."""


@dataclass(frozen=True)
class TensorArg:
    """A ``T`` / ``T(shape)`` placeholder in a declaration."""

    shape: Tuple[int, ...] = (3,)


@dataclass(frozen=True)
class Declaration:
    path: Path
    line: int
    text: str
    class_name: str
    class_line: int
    target: str  # "apply" or the name of a top-level helper function
    args: Tuple[Any, ...]
    zero_grad: bool
    verdict: str  # one of VERDICTS
    when: Optional[str] = None  # "forward" / "backward" for "raises"
    exception: Optional[Type[BaseException]] = None
    fragment: str = ""

    @property
    def where(self) -> str:
        return f"{self.path.name}:{self.line}: {self.text}"

    @property
    def is_gradient_count_error(self) -> bool:
        return (
            self.verdict == "raises"
            and self.when == "backward"
            and self.exception is RuntimeError
            and any(fragment in self.fragment for fragment in GRADIENT_COUNT_FRAGMENTS)
        )


@dataclass
class ClassBlock:
    """A top-level class of a fixture with the declarations in the comment block above it."""

    name: str
    line: int
    end_line: int
    declarations: List[Declaration] = field(default_factory=list)


def _parse_args(call: ast.Call, where: str) -> Tuple[Any, ...]:
    if call.keywords:
        raise DeclarationError(f"{where}: keyword arguments are not part of the grammar")
    args: List[Any] = []
    for node in call.args:
        if isinstance(node, ast.Name) and node.id == "T":
            args.append(TensorArg())
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "T":
            dims = [ast.literal_eval(dim) for dim in node.args]
            if node.keywords or not dims or not all(isinstance(dim, int) and dim > 0 for dim in dims):
                raise DeclarationError(f"{where}: T(...) takes positive integer dimensions")
            args.append(TensorArg(tuple(dims)))
        else:
            try:
                args.append(ast.literal_eval(node))
            except ValueError as exc:
                raise DeclarationError(f"{where}: {ast.unparse(node)!r} is neither T nor a literal") from exc
    return tuple(args)


def _calls_apply(function: ast.FunctionDef, class_name: str) -> bool:
    return any(
        isinstance(node, ast.Attribute)
        and node.attr == "apply"
        and isinstance(node.value, ast.Name)
        and node.value.id == class_name
        for node in ast.walk(function)
    )


def parse_declaration(
    text: str, path: Path, line: int, block: ClassBlock, helpers: Dict[str, ast.FunctionDef]
) -> Declaration:
    """Parse the part after ``# torch:`` of one line."""
    where = f"{path.name}:{line}"
    match = _DECLARATION.match(text)
    if match is None:
        raise DeclarationError(f"{where}: cannot parse {text!r}")
    try:
        call = ast.parse(match["call"], mode="eval").body
    except SyntaxError as exc:
        raise DeclarationError(f"{where}: the call {match['call']!r} is not valid Python") from exc
    if not isinstance(call, ast.Call):
        raise DeclarationError(f"{where}: {match['call']!r} is not a call")
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "apply" and isinstance(func.value, ast.Name):
        if func.value.id != block.name:
            raise DeclarationError(f"{where}: declares {func.value.id}.apply above class {block.name}")
        target = "apply"
    elif isinstance(func, ast.Name) and func.id in helpers:
        if not _calls_apply(helpers[func.id], block.name):
            raise DeclarationError(f"{where}: {func.id}() does not call {block.name}.apply")
        target = func.id
    else:
        raise DeclarationError(f"{where}: call {block.name}.apply(...) or a top-level helper that does")
    verdict = "raises" if match["when"] else match["verdict"]
    zero_grad = match["zero"] is not None
    if zero_grad and verdict == "passes gradcheck":
        raise DeclarationError(f"{where}: 'with zero grad' cannot be combined with gradcheck")
    exception: Optional[Type[BaseException]] = None
    if match["exc"]:
        candidate = getattr(builtins, match["exc"], None)
        if not (isinstance(candidate, type) and issubclass(candidate, BaseException)):
            raise DeclarationError(f"{where}: {match['exc']} is not a builtin exception")
        exception = candidate
    return Declaration(
        path=path,
        line=line,
        text=text,
        class_name=block.name,
        class_line=block.line,
        target=target,
        args=_parse_args(call, where),
        zero_grad=zero_grad,
        verdict=verdict,
        when=match["when"],
        exception=exception,
        fragment=match["fragment"] or "",
    )


def parse_fixture(path: Path) -> List[ClassBlock]:
    """Top-level classes of a fixture with their declarations; stray ``# torch:`` lines are errors."""
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    tree = ast.parse(source, filename=str(path))
    helpers = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    blocks: List[ClassBlock] = []
    attached = set()
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        first = min([node.lineno] + [decorator.lineno for decorator in node.decorator_list])
        block = ClassBlock(node.name, node.lineno, node.end_lineno or node.lineno)
        number = first - 1  # 1-based line just above the class (or its first decorator)
        while number >= 1 and lines[number - 1].lstrip().startswith("#"):
            text = lines[number - 1].strip()
            if text.startswith(PREFIX):
                attached.add(number)
                block.declarations.append(
                    parse_declaration(text[len(PREFIX):].strip(), path, number, block, helpers)
                )
            number -= 1
        block.declarations.reverse()
        blocks.append(block)
    stray = [
        number
        for number, line in enumerate(lines, start=1)
        if line.strip().startswith(PREFIX) and number not in attached
    ]
    if stray:
        raise DeclarationError(f"{path.name}: '{PREFIX}' lines outside a class's comment block: {stray}")
    return blocks


@dataclass
class LoadedFixture:
    module: ModuleType
    classes: Dict[int, type]  # class line -> the class object that statement created


def load_fixture(path: Path) -> LoadedFixture:
    """Import a fixture from its file under a unique module name (not entered in ``sys.modules``).

    The statements run one by one in the module's namespace so that each ``class`` statement's object is
    kept, even when a later class of the same name shadows it.
    """
    name = f"flake8_autograd_oracle_fixture_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    classes: Dict[int, type] = {}
    for statement in tree.body:
        code = compile(ast.Module(body=[statement], type_ignores=[]), str(path), "exec", dont_inherit=True)
        exec(code, module.__dict__)
        if isinstance(statement, ast.ClassDef):
            classes[statement.lineno] = module.__dict__[statement.name]
    return LoadedFixture(module, classes)


def make_tensor(shape: Sequence[int], index: int) -> torch.Tensor:
    """The ``index``-th ``T`` of a call: deterministic, distinct, positive float64, requires grad."""
    count = math.prod(shape)
    values = 0.5 + 0.1 * index + torch.arange(count, dtype=torch.float64) / count
    return values.reshape(tuple(shape)).requires_grad_()


def _arguments(declaration: Declaration) -> Tuple[List[Any], List[int]]:
    """Concrete arguments for one run, and the positions holding the ``T`` tensors."""
    args: List[Any] = []
    positions: List[int] = []
    for position, arg in enumerate(declaration.args):
        if isinstance(arg, TensorArg):
            args.append(make_tensor(arg.shape, len(positions)))
            positions.append(position)
        else:
            args.append(arg)
    return args, positions


def _target(declaration: Declaration, fixture: LoadedFixture) -> Callable[..., Any]:
    if declaration.target == "apply":
        function: Callable[..., Any] = fixture.classes[declaration.class_line].apply  # type: ignore[attr-defined]
        return function
    helper: Callable[..., Any] = getattr(fixture.module, declaration.target)
    return helper


def _differentiable_outputs(result: Any) -> List[torch.Tensor]:
    results = result if isinstance(result, (tuple, list)) else (result,)
    return [item for item in results if isinstance(item, torch.Tensor) and item.requires_grad]


def _expect_raise(action: Callable[[], object], declaration: Declaration, stage: str) -> None:
    assert declaration.exception is not None
    try:
        action()
    except Exception as exc:  # any exception: compared with the declared one below
        if isinstance(exc, declaration.exception) and declaration.fragment in str(exc):
            return
        raise AssertionError(
            f"{declaration.where}\n{stage} raised {type(exc).__name__}: {exc}"
        ) from exc
    raise AssertionError(f"{declaration.where}\n{stage} raised nothing")


def check(declaration: Declaration, fixture: LoadedFixture) -> None:
    """Run one declaration under torch; AssertionError when torch disagrees with it."""
    function = _target(declaration, fixture)
    args, positions = _arguments(declaration)
    if declaration.when == "forward":
        _expect_raise(lambda: function(*args), declaration, "the call (forward)")
        return
    try:
        result = function(*args)
    except Exception as exc:
        raise AssertionError(f"{declaration.where}\nforward raised {type(exc).__name__}: {exc}") from exc
    outputs = _differentiable_outputs(result)
    if not outputs or not positions:
        raise AssertionError(f"{declaration.where}\nnothing to differentiate (no T argument or no output needing grad)")
    seed = torch.zeros_like if declaration.zero_grad else torch.ones_like
    inputs = [args[position] for position in positions]

    def backward() -> object:
        return torch.autograd.grad(outputs, inputs, [seed(output) for output in outputs], allow_unused=True)

    if declaration.verdict == "raises":
        _expect_raise(backward, declaration, "backward")
        return
    try:
        backward()
    except Exception as exc:
        raise AssertionError(f"{declaration.where}\nbackward raised {type(exc).__name__}: {exc}") from exc
    if declaration.verdict == "passes gradcheck":

        def call(*tensors: torch.Tensor) -> Any:
            concrete = list(args)
            for position, tensor in zip(positions, tensors):
                concrete[position] = tensor
            return function(*concrete)

        fresh, _ = _arguments(declaration)
        torch.autograd.gradcheck(call, tuple(fresh[position] for position in positions))


def snapshot(value: Any) -> Any:
    """A copy of a result to compare later: tensors detached and cloned, lists and tuples (keeping which of
    the two they are) and dicts copied item by item, anything else as it is."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (list, tuple)):
        return type(value)(snapshot(item) for item in value)
    if isinstance(value, dict):
        return {key: snapshot(item) for key, item in value.items()}
    return value


def same_value(before: Any, after: Any) -> bool:
    """Whether two snapshots are the same: same types and containers, tensors bit for bit (NaN equal to NaN)."""
    if type(before) is not type(after):
        return False
    if isinstance(before, torch.Tensor):
        if before.shape != after.shape or before.dtype != after.dtype:
            return False
        if before.is_floating_point() or before.is_complex():
            return bool(torch.allclose(before, after, rtol=0.0, atol=0.0, equal_nan=True))
        return bool(torch.equal(before, after))
    if isinstance(before, (list, tuple)):
        return len(before) == len(after) and all(same_value(old, new) for old, new in zip(before, after))
    if isinstance(before, dict):
        return before.keys() == after.keys() and all(same_value(before[key], after[key]) for key in before)
    return bool(before == after)


#: The error a rule says the code it fixes raises under torch: (stage, exception type, message fragments).
#: Where the original raised it, the fixed code may get past it.
REPAIRED_ERRORS: Dict[str, Tuple[str, Type[BaseException], Tuple[str, ...]]] = {
    "AGF004": ("backward", RuntimeError, GRADIENT_COUNT_FRAGMENTS),
    # torch takes a list that backward returns for one gradient: the count is wrong, or the type for one input
    "AGF116": ("backward", RuntimeError, GRADIENT_COUNT_FRAGMENTS + ("expected Variable or None (got list)",)),
    "AGF111": ("forward", RuntimeError, ("Legacy autograd function with non-static forward method",)),
}


def is_repaired_error(code: str, error: Optional[Type[BaseException]], message: str) -> bool:
    """Whether an exception is the one the rule ``code`` says its fix repairs."""
    _, expected, fragments = REPAIRED_ERRORS.get(code, ("", None, ()))
    return error is not None and error is expected and any(fragment in message for fragment in fragments)


def applied_fixes(text: str, path: str, options: CheckOptions, fixed_text: str) -> List[Tuple[int, str, str]]:
    """(line, code, message) of each finding whose fix took ``text`` to ``fixed_text`` under ``options``.

    The passes of ``fix_text`` are replayed (a run without a failed fix): a finding of a later pass, one an
    earlier fix uncovered, has its line in the text of that pass.
    """
    applied: List[Tuple[int, str, str]] = []
    current = text
    for _ in range(MAX_PASSES):
        findings, _ = lint_lines(io.StringIO(current, newline=None).readlines(), path, options)
        wanted = [finding for finding in findings if applies(finding, options)]
        candidate, taken = apply_fixes_taken(current, [finding.fix for finding in wanted if finding.fix is not None])
        if not taken or candidate == current:
            break
        applied.extend((finding.line, finding.code, finding.message) for finding in wanted if finding.fix in taken)
        current = candidate
    assert current == fixed_text, f"{path}: replaying the fixes does not give the fixed text"
    return applied


def implied_blocks(path: Path) -> List[ClassBlock]:
    """The top-level classes of a fixture without declarations, each that defines ``forward`` with one implied
    call, ``Cls.apply(T, ...)``: one ``T`` per parameter of forward after the first that has no default (none
    for a forward that also takes ``*args`` or a keyword-only parameter without a default). Its verdict says
    nothing (``runs``): what the call does is only compared, before and after a fix."""
    blocks: List[ClassBlock] = []
    for node in ast.parse(path.read_text(encoding="utf-8"), filename=str(path)).body:
        if not isinstance(node, ast.ClassDef):
            continue
        block = ClassBlock(node.name, node.lineno, node.end_lineno or node.lineno)
        forwards = [item for item in node.body if isinstance(item, ast.FunctionDef) and item.name == "forward"]
        blocks.append(block)
        if not forwards:
            continue
        arguments = forwards[-1].args
        if arguments.vararg or any(default is None for default in arguments.kw_defaults):
            continue
        required = len(arguments.posonlyargs + arguments.args) - 1 - len(arguments.defaults)
        call = f"{node.name}.apply({', '.join(['T'] * max(required, 0))})"
        block.declarations.append(
            Declaration(
                path=path,
                line=node.lineno,
                text=f"{call} (implied)",
                class_name=node.name,
                class_line=node.lineno,
                target="apply",
                args=tuple(TensorArg() for _ in range(max(required, 0))),
                zero_grad=False,
                verdict="runs",
            )
        )
    return blocks
