"""One acceptance test per mistake of the custom-op survey table (torch.library.custom_op with
register_autograd / register_fake) that a static check can see.

Each entry is a small module of our own with the mistake, and the same module with one piece of text
replaced: the corrected near miss. The test checks that the linter (preview rules included) reports the
entry's codes on the mistake and nothing on the near miss, then runs both under torch 2.13 CPU: the mistake
raises the exception the table gives at the step it gives (decoration, registration, call, backward, under
fake tensors, under opcheck, under torch.compile), or, for the two rows torch 2.13 accepts, behaves as the
entry says; the near miss runs. Modules are executed statement by statement, so that a failure at import
is pinned to the decoration or the registration that raised, and the "rows::" namespace is replaced by a
fresh one on every run (an op name can be defined once per process).

Rows out of a static check's reach, and why:

- no register_autograd while a backward runs through the op ("Trying to backward through ... but no
  autograd formula was registered"): an op without a formula is correct for inference; whether some
  caller differentiates through it is decided outside the op's module, at run time.
- no register_fake ("There was no fake impl registered", under torch.compile / export / opcheck only): an
  eager-only op is legitimate; whether it is ever compiled or exported is not written in its module.
- a wrong gradient formula (opcheck passes, gradcheck fails): the count and types of the gradients can be
  checked, their mathematics cannot.
- an undeclared mutation made inside a compiled kernel (a Triton or C++/CUDA call that writes into its
  argument): the write is in code the linter does not read; only writes in the op's Python body are seen.
"""

import ast
import gc
import itertools
import warnings
import weakref
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import pytest
from conftest import lint, require_torch

torch = require_torch()

from torch._dynamo.exc import BackendCompilerFailed  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402
from torch.testing._internal.optests.generate_tests import OpCheckError  # noqa: E402

Namespace = Dict[str, Any]
Inputs = Callable[[], Tuple[Any, ...]]
_fresh_namespaces = itertools.count()


class Probe:
    """Remembers the step being run, so that an exception is attributed to it."""

    def __init__(self) -> None:
        self.step = "module"

    @contextmanager
    def at(self, step: str) -> Iterator[None]:
        self.step = step
        yield


@dataclass(frozen=True)
class Raises:
    """torch raises ``error`` (that exact type) at ``step``, its message containing ``text``."""

    step: str
    error: type
    text: str


@dataclass(frozen=True)
class Outcome:
    """What running a module gave: an exception at a step, or the exercise's observation."""

    step: str = ""
    error: Optional[type] = None
    message: str = ""
    observed: Any = None


Exercise = Callable[[Namespace, Probe], Any]


@dataclass(frozen=True)
class SurveyRow:
    mistake: str
    codes: Tuple[str, ...]
    source: str
    fix: Tuple[str, str]  # (text of the mistake, its correction): gives the near miss
    exercise: Exercise
    torch_does: Any  # a Raises, or what the exercise observes on the mistake when torch accepts it
    near_miss_observes: Any = None
    marks: List[Any] = field(default_factory=list)

    def near_miss(self) -> str:
        wrong, right = self.fix
        assert self.source.count(wrong) == 1, f"{wrong!r} must occur once in the module"
        return self.source.replace(wrong, right)


def _step_of(statement: ast.stmt) -> str:
    """The survey's name for the import-time step a top-level statement performs."""
    if isinstance(statement, ast.FunctionDef) and any(
        "custom_op" in ast.unparse(decorator) for decorator in statement.decorator_list
    ):
        return "decoration"
    if isinstance(statement, ast.Expr) and "register_" in ast.unparse(statement.value):
        return "registration"
    return "module"


def _execute(source: str, probe: Probe) -> Namespace:
    """Run the module statement by statement under a namespace of its own."""
    source = source.replace('"rows::', f'"survey_rows_{next(_fresh_namespaces)}::')
    namespace: Namespace = {"__name__": "survey_row"}
    for statement in ast.parse(source).body:
        with probe.at(_step_of(statement)):
            exec(compile(ast.Module(body=[statement], type_ignores=[]), "<survey row>", "exec"), namespace)
    return namespace


def _run(source: str, exercise: Exercise) -> Outcome:
    probe = Probe()
    try:
        observed = exercise(_execute(source, probe), probe)
    except Exception as error:  # the outcome under test
        return Outcome(probe.step, type(error), str(error))
    return Outcome(observed=observed)


# --- what each row does with its op (always bound to the name `op`) -----------------------------------------


def _leaf(*shape: int) -> Any:
    return (torch.rand(*(shape or (3,))) + 0.5).requires_grad_()


def _total(outputs: Any) -> Any:
    parts = outputs if isinstance(outputs, tuple) else (outputs,)
    return sum(part.sum() for part in parts)


def call(inputs: Inputs, **keywords: Any) -> Exercise:
    def exercise(namespace: Namespace, probe: Probe) -> None:
        with probe.at("call"):
            namespace["op"](*inputs(), **keywords)

    return exercise


def backward(inputs: Inputs, **keywords: Any) -> Exercise:
    def exercise(namespace: Namespace, probe: Probe) -> None:
        with probe.at("call"):
            outputs = namespace["op"](*inputs(), **keywords)
        with probe.at("backward"):
            _total(outputs).backward()

    return exercise


def gradients_match(inputs: Inputs, expected: Callable[..., Tuple[Any, ...]]) -> Exercise:
    """Backward runs and gives the gradients ``expected(*inputs)`` computes (None for a non-tensor)."""

    def exercise(namespace: Namespace, probe: Probe) -> bool:
        arguments = inputs()
        with probe.at("call"):
            outputs = namespace["op"](*arguments)
        with probe.at("backward"):
            _total(outputs).backward()
        tensors = [argument for argument in arguments if isinstance(argument, torch.Tensor)]
        return all(torch.allclose(tensor.grad, want) for tensor, want in zip(tensors, expected(*arguments)))

    return exercise


def compiled_backward(inputs: Inputs) -> Exercise:
    def exercise(namespace: Namespace, probe: Probe) -> None:
        op = namespace["op"]
        torch._dynamo.reset()
        try:
            # the failing backward's forward is reported again as an anomaly-mode warning: not under test
            with probe.at("compile"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                compiled = torch.compile(lambda *arguments: _total(op(*arguments)), backend="aot_eager", fullgraph=True)
                compiled(*inputs()).backward()
        finally:
            torch._dynamo.reset()

    return exercise


def under_fake_tensors(inputs: Inputs) -> Exercise:
    """The eager call works; the same call on fake tensors (as torch.compile and export make it) is tried."""

    def exercise(namespace: Namespace, probe: Probe) -> None:
        with probe.at("call"):
            namespace["op"](*inputs())
        with probe.at("fake tensors"), FakeTensorMode() as mode:
            namespace["op"](*(mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in inputs()))

    return exercise


def opcheck_schema(inputs: Inputs) -> Exercise:
    def exercise(namespace: Namespace, probe: Probe) -> None:
        with probe.at("call"):
            namespace["op"](*inputs())
        with probe.at("opcheck"):
            torch.library.opcheck(namespace["op"], inputs(), test_utils="test_schema")

    return exercise


def output_lifetime(namespace: Namespace, probe: Probe) -> Tuple[bool, bool]:
    """Whether the op's output is still alive after ``del`` (collector off), then after gc.collect()."""
    gc.disable()
    try:
        with probe.at("call"):
            output = namespace["op"](_leaf(1000))
        reference = weakref.ref(output)
        del output
        alive_after_del = reference() is not None
        gc.collect()
        return alive_after_del, reference() is not None
    finally:
        gc.enable()


# --- the rows ---------------------------------------------------------------------------------------------

ROWS: Dict[str, SurveyRow] = {
    "backward returns too few gradients": SurveyRow(
        mistake="backward returns 2 gradients for a 3-input op (the message is off by one)",
        codes=("AGF004",),
        source='''
import torch
from torch import Tensor

@torch.library.custom_op("rows::affine", mutates_args=())
def affine(x: Tensor, weight: float, bias: float) -> Tensor:
    return x * weight + bias

@affine.register_fake
def _(x, weight, bias):
    return torch.empty_like(x)

def affine_setup(ctx, inputs, output):
    ctx.weight = inputs[1]

def affine_backward(ctx, grad):
    return grad * ctx.weight, None

affine.register_autograd(affine_backward, setup_context=affine_setup)
op = affine
''',
        fix=("return grad * ctx.weight, None\n", "return grad * ctx.weight, None, None\n"),
        exercise=backward(lambda: (_leaf(), 0.25, 1.0)),
        torch_does=Raises("backward", RuntimeError, "returned an incorrect number of gradients (expected 4, got 3)"),
    ),
    "too few gradients under torch.compile": SurveyRow(
        mistake="the same short backward under torch.compile (aot_eager, fullgraph): fails while compiling",
        codes=("AGF004",),
        source='''
import torch
from torch import Tensor

@torch.library.custom_op("rows::scale_by", mutates_args=())
def scale_by(x: Tensor, factor: float) -> Tensor:
    return x * factor

@scale_by.register_fake
def _(x, factor):
    return torch.empty_like(x)

def scale_by_setup(ctx, inputs, output):
    ctx.factor = inputs[1]

def scale_by_backward(ctx, grad):
    return grad * ctx.factor

scale_by.register_autograd(scale_by_backward, setup_context=scale_by_setup)
op = scale_by
''',
        fix=("return grad * ctx.factor\n", "return grad * ctx.factor, None\n"),
        exercise=compiled_backward(lambda: (_leaf(), 2.0)),
        torch_does=Raises("compile", BackendCompilerFailed, "returned an incorrect number of gradients"),
    ),
    "surplus trailing None": SurveyRow(
        mistake="backward returns one None more than the op has inputs: accepted by 2.13 (later releases reject it)",
        codes=("AGF004",),
        source='''
import torch
from torch import Tensor

@torch.library.custom_op("rows::shifted", mutates_args=())
def shifted(x: Tensor, offset: float) -> Tensor:
    return x + offset

@shifted.register_fake
def _(x, offset):
    return torch.empty_like(x)

def shifted_setup(ctx, inputs, output):
    pass

def shifted_backward(ctx, grad):
    return grad, None, None

shifted.register_autograd(shifted_backward, setup_context=shifted_setup)
op = shifted
''',
        fix=("return grad, None, None", "return grad, None"),
        exercise=gradients_match(lambda: (_leaf(), 1.5), lambda x, offset: (torch.ones_like(x),)),
        torch_does=True,
        near_miss_observes=True,
    ),
    "tensor gradient for a float input": SurveyRow(
        mistake="backward returns a tensor in the slot of a float input",
        codes=("AGF105",),
        source='''
import torch
from torch import Tensor

@torch.library.custom_op("rows::scaled", mutates_args=())
def scaled(x: Tensor, factor: float) -> Tensor:
    return x * factor

@scaled.register_fake
def _(x, factor):
    return torch.empty_like(x)

def scaled_setup(ctx, inputs, output):
    x, factor = inputs
    ctx.save_for_backward(x)
    ctx.factor = factor

def scaled_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return grad * ctx.factor, (grad * x).sum()

scaled.register_autograd(scaled_backward, setup_context=scaled_setup)
op = scaled
''',
        fix=("return grad * ctx.factor, (grad * x).sum()", "return grad * ctx.factor * torch.ones_like(x), None"),
        exercise=backward(lambda: (_leaf(), 3.0)),
        torch_does=Raises(
            "backward",
            RuntimeError,
            "returned a gradient different than None at position 2, but the corresponding forward input was not a "
            "Variable",
        ),
    ),
    "backward returns a list": SurveyRow(
        mistake="backward returns its gradients in a list",
        codes=("AGF116",),
        source='''
import torch
from torch import Tensor

@torch.library.custom_op("rows::weighted_sum", mutates_args=())
def weighted_sum(a: Tensor, b: Tensor, weight: float) -> Tensor:
    return a + b * weight

@weighted_sum.register_fake
def _(a, b, weight):
    return torch.empty_like(a)

def weighted_sum_setup(ctx, inputs, output):
    ctx.weight = inputs[2]

def weighted_sum_backward(ctx, grad):
    return [grad, grad * ctx.weight, None]

weighted_sum.register_autograd(weighted_sum_backward, setup_context=weighted_sum_setup)
op = weighted_sum
''',
        fix=("return [grad, grad * ctx.weight, None]", "return grad, grad * ctx.weight, None"),
        exercise=backward(lambda: (_leaf(), _leaf(), 2.0)),
        torch_does=Raises("backward", RuntimeError, "returned an incorrect number of gradients (expected 4, got 2)"),
    ),
    "backward takes fewer gradients than the op has outputs": SurveyRow(
        mistake="backward takes 1 output gradient, the op returns 2 tensors",
        codes=("AGF107",),
        source='''
import torch
from torch import Tensor

@torch.library.custom_op("rows::polar", mutates_args=())
def polar(angle: Tensor) -> tuple[Tensor, Tensor]:
    return angle.cos(), angle.sin()

@polar.register_fake
def _(angle):
    return torch.empty_like(angle), torch.empty_like(angle)

def polar_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])

def polar_backward(ctx, grad_cos):
    (angle,) = ctx.saved_tensors
    return -grad_cos * angle.sin()

polar.register_autograd(polar_backward, setup_context=polar_setup)
op = polar
''',
        fix=(
            "def polar_backward(ctx, grad_cos):\n    (angle,) = ctx.saved_tensors\n    return -grad_cos * angle.sin()",
            "def polar_backward(ctx, grad_cos, grad_sin):\n    (angle,) = ctx.saved_tensors\n"
            "    return -grad_cos * angle.sin() + grad_sin * angle.cos()",
        ),
        exercise=backward(lambda: (_leaf(),)),
        torch_does=Raises("backward", TypeError, "polar_backward() takes 2 positional arguments but 3 were given"),
    ),
    "setup_context without keyword_only_inputs": SurveyRow(
        mistake="setup_context(ctx, inputs, output) on an op with keyword-only arguments: fails at the first call",
        codes=("AGF128",),
        source='''
import torch
from torch import Tensor

@torch.library.custom_op("rows::leaky", mutates_args=())
def leaky(x: Tensor, *, slope: float = 0.01) -> Tensor:
    return torch.where(x > 0, x, x * slope)

@leaky.register_fake
def _(x, *, slope=0.01):
    return torch.empty_like(x)

def leaky_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])
    ctx.slope = 0.01

def leaky_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return torch.where(x > 0, grad, grad * ctx.slope)

leaky.register_autograd(leaky_backward, setup_context=leaky_setup)
op = leaky
''',
        fix=(
            "def leaky_setup(ctx, inputs, output):\n    ctx.save_for_backward(inputs[0])\n    ctx.slope = 0.01",
            "def leaky_setup(ctx, inputs, keyword_only_inputs, output):\n    ctx.save_for_backward(inputs[0])\n"
            '    ctx.slope = keyword_only_inputs["slope"]',
        ),
        exercise=call(lambda: (_leaf(),), slope=0.2),
        torch_does=Raises("call", TypeError, "leaky_setup() got an unexpected keyword argument 'keyword_only_inputs'"),
    ),
    "setup_context with other parameter names": SurveyRow(
        mistake="setup_context(ctx, inp, out): torch passes inputs= and output= by keyword, at the first call",
        codes=("AGF128",),
        source='''
import torch
from torch import Tensor

@torch.library.custom_op("rows::cube", mutates_args=())
def cube(x: Tensor) -> Tensor:
    return x ** 3

@cube.register_fake
def _(x):
    return torch.empty_like(x)

def cube_setup(ctx, inp, out):
    ctx.save_for_backward(inp[0])

def cube_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return 3 * grad * x ** 2

cube.register_autograd(cube_backward, setup_context=cube_setup)
op = cube
''',
        fix=("def cube_setup(ctx, inp, out):\n    ctx.save_for_backward(inp[0])",
             "def cube_setup(ctx, inputs, output):\n    ctx.save_for_backward(inputs[0])"),
        exercise=call(lambda: (_leaf(),)),
        torch_does=Raises("call", TypeError, "cube_setup() got an unexpected keyword argument 'inputs'"),
    ),
    "setup_context without output": SurveyRow(
        mistake="setup_context(ctx, inputs): fails at the first call",
        codes=("AGF128",),
        source='''
import torch
from torch import Tensor

@torch.library.custom_op("rows::halve", mutates_args=())
def halve(x: Tensor) -> Tensor:
    return x / 2

@halve.register_fake
def _(x):
    return torch.empty_like(x)

def halve_setup(ctx, inputs):
    pass

def halve_backward(ctx, grad):
    return grad / 2

halve.register_autograd(halve_backward, setup_context=halve_setup)
op = halve
''',
        fix=("def halve_setup(ctx, inputs):", "def halve_setup(ctx, inputs, output):"),
        exercise=call(lambda: (_leaf(),)),
        torch_does=Raises("call", TypeError, "halve_setup() got an unexpected keyword argument 'output'"),
    ),
    "save_for_backward of a non-tensor": SurveyRow(
        mistake="setup_context passes an int input to save_for_backward: fails at the first call",
        codes=("AGF102",),
        source='''
import torch
from torch import Tensor

@torch.library.custom_op("rows::power", mutates_args=())
def power(x: Tensor, exponent: int) -> Tensor:
    return x ** exponent

@power.register_fake
def _(x, exponent):
    return torch.empty_like(x)

def power_setup(ctx, inputs, output):
    x, exponent = inputs
    ctx.save_for_backward(x, exponent)

def power_backward(ctx, grad):
    x, exponent = ctx.saved_tensors
    return grad * exponent * x ** (exponent - 1), None

power.register_autograd(power_backward, setup_context=power_setup)
op = power
''',
        fix=(
            "    ctx.save_for_backward(x, exponent)\n\ndef power_backward(ctx, grad):\n"
            "    x, exponent = ctx.saved_tensors\n",
            "    ctx.save_for_backward(x)\n    ctx.exponent = exponent\n\ndef power_backward(ctx, grad):\n"
            "    (x,) = ctx.saved_tensors\n    exponent = ctx.exponent\n",
        ),
        exercise=call(lambda: (_leaf(), 3)),
        torch_does=Raises(
            "call", TypeError, "save_for_backward can only save variables, but argument 1 is of type int"
        ),
    ),
    "output kept as a ctx attribute": SurveyRow(
        mistake="setup_context stores the output as ctx.out: works on 2.13, but the output outlives del until "
        "gc.collect() (a reference cycle), where save_for_backward frees it at once",
        codes=("AGF003",),
        source='''
import torch
from torch import Tensor

@torch.library.custom_op("rows::softplus", mutates_args=())
def softplus(x: Tensor) -> Tensor:
    return torch.log1p(x.exp())

@softplus.register_fake
def _(x):
    return torch.empty_like(x)

def softplus_setup(ctx, inputs, output):
    ctx.out = output

def softplus_backward(ctx, grad):
    return grad * (1 - torch.exp(-ctx.out))

softplus.register_autograd(softplus_backward, setup_context=softplus_setup)
op = softplus
''',
        fix=(
            "    ctx.out = output\n\ndef softplus_backward(ctx, grad):\n    return grad * (1 - torch.exp(-ctx.out))",
            "    ctx.save_for_backward(output)\n\ndef softplus_backward(ctx, grad):\n"
            "    (out,) = ctx.saved_tensors\n    return grad * (1 - torch.exp(-out))",
        ),
        exercise=output_lifetime,
        torch_does=(True, False),  # alive after del, freed by gc.collect()
        near_miss_observes=(False, False),
    ),
    "register_fake of the wrong arity": SurveyRow(
        mistake="the fake takes fewer parameters than the op: eager works, fake tensors (compile, export) fail",
        codes=("AGF131",),
        source='''
import torch
from torch import Tensor

@torch.library.custom_op("rows::axpy", mutates_args=())
def axpy(x: Tensor, alpha: float, y: Tensor) -> Tensor:
    return x * alpha + y

@axpy.register_fake
def _(x, y):
    return torch.empty_like(x)

op = axpy
''',
        fix=("def _(x, y):", "def _(x, alpha, y):"),
        exercise=under_fake_tensors(lambda: (torch.rand(3), 2.0, torch.rand(3))),
        torch_does=Raises("fake tensors", TypeError, "takes 2 positional arguments but 3 were given"),
    ),
    "undeclared mutation": SurveyRow(
        mistake="the op writes into its argument with mutates_args=(): eager runs, opcheck's schema test fails",
        codes=("AGF132",),
        source='''
import torch
from torch import Tensor

@torch.library.custom_op("rows::clipped", mutates_args=())
def clipped(x: Tensor) -> Tensor:
    x.clamp_(min=0.0, max=1.0)
    return x + 0

@clipped.register_fake
def _(x):
    return torch.empty_like(x)

op = clipped
''',
        fix=("    x.clamp_(min=0.0, max=1.0)\n    return x + 0", "    return x.clamp(min=0.0, max=1.0)"),
        exercise=opcheck_schema(lambda: (torch.randn(3) * 2,)),
        torch_does=Raises("opcheck", OpCheckError, "Argument x is not defined as mutable but was mutated"),
    ),
    "register_autograd on a mutating op": SurveyRow(
        mistake="register_autograd on an op that lists mutated arguments: fails at registration",
        codes=("AGF132",),
        source='''
import torch
from torch import Tensor

@torch.library.custom_op("rows::increment", mutates_args={"x"})
def increment(x: Tensor) -> None:
    x.add_(1.0)

@increment.register_fake
def _(x):
    return None

def increment_setup(ctx, inputs, output):
    pass

def increment_backward(ctx, grad):
    return grad

increment.register_autograd(increment_backward, setup_context=increment_setup)
op = increment
''',
        fix=(
            'mutates_args={"x"})\ndef increment(x: Tensor) -> None:\n    x.add_(1.0)\n\n'
            "@increment.register_fake\ndef _(x):\n    return None",
            "mutates_args=())\ndef increment(x: Tensor) -> Tensor:\n    return x + 1.0\n\n"
            "@increment.register_fake\ndef _(x):\n    return torch.empty_like(x)",
        ),
        exercise=call(lambda: (torch.randn(3),)),
        torch_does=Raises("registration", RuntimeError, "Cannot register autograd formula for non-functional operator"),
    ),
    "op returns its input": SurveyRow(
        mistake="the op returns its tensor argument: every call fails",
        codes=("AGF133",),
        source='''
import torch
from torch import Tensor

@torch.library.custom_op("rows::passthrough", mutates_args=())
def passthrough(x: Tensor) -> Tensor:
    return x

op = passthrough
''',
        fix=("    return x\n", "    return x.clone()\n"),
        exercise=call(lambda: (torch.rand(3),)),
        torch_does=Raises("call", RuntimeError, "must not also be an input to this custom operator"),
    ),
    "parameter without annotation": SurveyRow(
        mistake="a parameter of the op has no type annotation: custom_op fails at decoration",
        codes=("AGF135",),
        source='''
import torch
from torch import Tensor

@torch.library.custom_op("rows::tripled", mutates_args=())
def tripled(x) -> Tensor:
    return x * 3

op = tripled
''',
        fix=("def tripled(x) -> Tensor:", "def tripled(x: Tensor) -> Tensor:"),
        exercise=call(lambda: (torch.rand(3),)),
        torch_does=Raises("decoration", ValueError, "infer_schema(func): Parameter x must have a type annotation"),
    ),
    "unsupported return annotation": SurveyRow(
        mistake="the op's return is annotated as a bare list: custom_op fails at decoration",
        codes=("AGF135",),
        source='''
import torch
from torch import Tensor

@torch.library.custom_op("rows::halves", mutates_args=())
def halves(x: Tensor) -> list:
    return [x[:1].clone(), x[1:].clone()]

op = halves
''',
        fix=("-> list:", "-> list[Tensor]:"),
        exercise=call(lambda: (torch.rand(4),)),
        torch_does=Raises("decoration", ValueError, "Return has unsupported type <class 'list'>"),
    ),
    "custom_op without mutates_args": SurveyRow(
        mistake="custom_op called without mutates_args: fails at decoration",
        codes=("AGF135",),
        source='''
import torch
from torch import Tensor

@torch.library.custom_op("rows::negated")
def negated(x: Tensor) -> Tensor:
    return -x

op = negated
''',
        fix=('"rows::negated")', '"rows::negated", mutates_args=())'),
        exercise=call(lambda: (torch.rand(3),)),
        torch_does=Raises("decoration", TypeError, "missing 1 required keyword-only argument: 'mutates_args'"),
    ),
    "keyword-only tensor argument": SurveyRow(
        mistake="a keyword-only Tensor parameter: custom_op fails at decoration",
        codes=("AGF135",),
        source='''
import torch
from torch import Tensor

@torch.library.custom_op("rows::masked", mutates_args=())
def masked(x: Tensor, *, mask: Tensor) -> Tensor:
    return x * mask

op = masked
''',
        fix=("def masked(x: Tensor, *, mask: Tensor)", "def masked(x: Tensor, mask: Tensor)"),
        exercise=call(lambda: (torch.rand(3), torch.ones(3))),
        torch_does=Raises("decoration", NotImplementedError, "custom_op with kwarg-only Tensor args"),
    ),
}


def _params() -> List[Any]:
    return [pytest.param(name, marks=row.marks, id=name.replace(" ", "-")) for name, row in ROWS.items()]


def _codes(source: str) -> List[str]:
    return sorted(finding.code for finding in lint(source, preview=True))


@pytest.mark.parametrize("name", _params())
def test_linter_reports_the_mistake_and_not_its_near_miss(name: str) -> None:
    row = ROWS[name]
    assert _codes(row.source) == sorted(row.codes), row.mistake
    assert _codes(row.near_miss()) == [], f"near miss of: {row.mistake}"


@pytest.mark.parametrize("name", _params())
def test_torch_does_what_the_survey_says(name: str) -> None:
    row = ROWS[name]
    mistake = _run(row.source, row.exercise)
    if isinstance(row.torch_does, Raises):
        assert (mistake.step, mistake.error) == (row.torch_does.step, row.torch_does.error), mistake
        assert row.torch_does.text in mistake.message, mistake.message
    else:
        assert mistake.error is None, mistake
        assert mistake.observed == row.torch_does
    near_miss = _run(row.near_miss(), row.exercise)
    assert near_miss.error is None, near_miss
    assert near_miss.observed == row.near_miss_observes
