"""PyTorch is the oracle for the custom-op rules AGF131-AGF134 (fixtures tests/fixtures/agf131.py ...):

- AGF131: a fake whose parameters cannot take the op's arguments raises TypeError as soon as fake tensors
  run it (torch.compile, opcheck), while eager calls work; torch drops trailing arguments equal to their
  defaults, so both the full call and the shortest one must bind.
- AGF132: an undeclared in-place write runs in eager mode and changes the caller's tensor, and
  torch.library.opcheck's schema test reports it; register_autograd on an op that lists mutated
  arguments raises at registration.
- AGF133: an op returning an argument or a view of one raises at every call.
- AGF134: data_ptr() in setup_context or backward raises under torch.compile; a global written or read
  there is frozen at trace time (written once, read once) under torch.compile, and so is a module-level
  ContextVar or threading.local read or written there (no graph break: the value seen while tracing stays).
Every silent case runs.
"""

import ast
from typing import Any, Callable, Dict, List, Set, Tuple

from conftest import FIXTURES, codes_inside, fixture_findings, fixture_module, require_torch

torch = require_torch()

import pytest  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

Call = Tuple[Tuple[Any, ...], Dict[str, Any]]


def _t(*shape: int) -> Any:
    return torch.rand(*(shape or (2, 3))) + 0.5


def _op_codes(stem: str, name: str) -> Set[str]:
    """The codes reported in an op's case: from its decorator to the next op's (its fake and registrations
    follow it in the fixture)."""
    tree = ast.parse((FIXTURES / f"{stem}.py").read_text(encoding="utf-8"))
    starts = sorted(
        (min([node.lineno] + [decorator.lineno for decorator in node.decorator_list]), node.name)
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and any("custom_op" in ast.unparse(d) for d in node.decorator_list)
    )
    names = [op for _, op in starts]
    start = starts[names.index(name)][0]
    end = starts[names.index(name) + 1][0] if names.index(name) + 1 < len(starts) else 10**9
    return {code for line, code in fixture_findings(stem) if start <= line < end}


# --- AGF131 -------------------------------------------------------------------------------------------------

# op name -> the call that fake tensors cannot make (what the finding names)
FAKE_MISMATCH: Dict[str, Callable[[], Call]] = {
    "axpy": lambda: ((_t(), 2.0, _t()), {}),
    "power": lambda: ((_t(), 2), {}),
    "scaled": lambda: ((_t(),), {}),
    "leaky": lambda: ((_t(),), {"slope": 0.1}),
    "softclip": lambda: ((_t(),), {"limit": 3.0}),
    "lerp3": lambda: ((_t(), _t(), 0.3), {}),
    "rowsum": lambda: ((_t(), True), {}),
}
# op name -> every call shape the op can get: the full one and the shortest one
FAKE_MATCH: Dict[str, List[Callable[[], Call]]] = {
    "mul": [lambda: ((_t(), _t(), 2.0), {})],
    "fma": [lambda: ((_t(), 2.0, _t()), {})],
    "shift": [lambda: ((_t(), 3), {})],
    "gelu_scaled": [lambda: ((_t(),), {}), lambda: ((_t(),), {"gain": 2.0})],
    "blend": [lambda: ((_t(), _t()), {}), lambda: ((_t(), _t(), 0.25), {"clamp": True})],
    "square": [lambda: ((_t(), 1.5), {})],
}


def _under_fake_tensors(op: Any, call: Call) -> Any:
    args, kwargs = call
    with FakeTensorMode() as mode:
        fake_args = tuple(mode.from_tensor(arg) if isinstance(arg, torch.Tensor) else arg for arg in args)
        return op(*fake_args, **kwargs)


@pytest.mark.parametrize("name", sorted(FAKE_MISMATCH))
def test_agf131_fake_fails_under_fake_tensors_only(name: str) -> None:
    op = getattr(fixture_module("agf131"), name)
    call = FAKE_MISMATCH[name]()
    op(*call[0], **call[1])  # eager: the fake never runs
    with pytest.raises(TypeError, match=r"positional argument|unexpected keyword argument"):
        _under_fake_tensors(op, FAKE_MISMATCH[name]())
    assert "AGF131" in _op_codes("agf131", name)


def test_agf131_findings_sit_on_the_fakes() -> None:
    module = fixture_module("agf131")
    assert "AGF131" in codes_inside("agf131", "_lerp3_fake")
    assert "AGF131" in codes_inside("agf131", "rowsum_fake")
    assert module.rowsum is not None


@pytest.mark.parametrize("name", sorted(FAKE_MATCH))
def test_agf131_silent_fakes_run_under_fake_tensors(name: str) -> None:
    op = getattr(fixture_module("agf131"), name)
    for make in FAKE_MATCH[name]:
        assert _under_fake_tensors(op, make()).shape is not None


def test_agf131_compile_error_of_the_contract_case() -> None:
    """The reproduction: a fake with fewer parameters than the op, under torch.compile."""
    op = fixture_module("agf131").axpy
    torch._dynamo.reset()
    compiled = torch.compile(lambda a, b: op(a, 2.0, b), backend="aot_eager", fullgraph=True)
    with pytest.raises(Exception, match=r"takes 2 positional arguments but 3 were given"):
        compiled(_t(), _t())


# --- AGF132 -------------------------------------------------------------------------------------------------

UNDECLARED: Dict[str, Tuple[Callable[[], Tuple[Any, ...]], int]] = {
    # op name -> (arguments, index of the argument written)
    "relu_": (lambda: (_t() - 2.0,), 0),  # every element negative: the write always shows
    "drop_negative": (lambda: (_t() - 2.0,), 0),
    "add_bias": (lambda: (_t(), _t()), 0),
    "add_into": (lambda: (_t(), _t(), torch.zeros(2, 3)), 2),
    "gelu_tail": (lambda: (_t() - 2.0,), 0),
    "swap_into": (lambda: (_t(), _t() + 5.0), 1),
    "reset_stats": (lambda: (_t(), _t()), 1),
    "fill_weight": (lambda: (torch.zeros(3, 3), _t()), 0),
}
DECLARED: Dict[str, Callable[[], Tuple[Any, ...]]] = {
    "clip_": lambda: (_t(), 1.0),
    "anything": lambda: (_t(),),
    "shifted": lambda: (_t(), 1.0),
    "sum_pair": lambda: (_t(), _t()),
    "detached_sum": lambda: (_t(),),
    "doubled": lambda: (_t(), _t()),
    "affine": lambda: (_t(), 2.0, 1.0),
}


@pytest.mark.parametrize("name", sorted(UNDECLARED))
def test_agf132_undeclared_write_runs_and_opcheck_reports_it(name: str) -> None:
    op = getattr(fixture_module("agf132"), name)
    make, written = UNDECLARED[name]
    args = make()
    before = args[written].clone()
    op(*args)  # eager: nothing checks the schema
    assert not torch.equal(before, args[written]), "the caller's tensor changed"
    with pytest.raises(Exception, match=r"is not defined as mutable but was mutated"):
        torch.library.opcheck(op, make(), test_utils="test_schema")
    assert "AGF132" in _op_codes("agf132", name)


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_agf132_silent_ops_pass_the_schema_test(name: str) -> None:
    op = getattr(fixture_module("agf132"), name)
    assert torch.library.opcheck(op, DECLARED[name](), test_utils="test_schema") == {"test_schema": "SUCCESS"}
    assert "AGF132" not in _op_codes("agf132", name)


def test_agf132_register_autograd_on_a_mutating_op_raises_at_registration() -> None:
    module = fixture_module("agf132")
    with pytest.raises(RuntimeError, match="Cannot register autograd formula for non-functional operator"):
        module.scale_.register_autograd(module.scale_backward, setup_context=module.scale_setup)


# --- AGF133 -------------------------------------------------------------------------------------------------

ALIASING: Dict[str, Callable[[], Tuple[Any, ...]]] = {
    "identity": lambda: (_t(),),
    "rows": lambda: (_t(),),
    "first_row": lambda: (_t(),),
    "transposed": lambda: (_t(),),
    "scale_and_pass": lambda: (_t(), _t()),
    "maybe_scale": lambda: (_t(), 1.0),
    "stop_gradient": lambda: (_t(),),
    "first_half": lambda: (_t(4, 3),),
    "relu_t": lambda: (_t(),),
}
FRESH: Dict[str, Callable[[], Tuple[Any, ...]]] = {
    "copied": lambda: (_t(),),
    "rows_copy": lambda: (_t(),),
    "positives": lambda: (_t() - 1.0,),
    "doubled": lambda: (_t(),),
    "stats": lambda: (_t(),),
    "pick": lambda: (_t(), torch.tensor([1, 0])),
}


@pytest.mark.parametrize("name", sorted(ALIASING))
def test_agf133_returning_an_input_or_its_view_raises_at_the_call(name: str) -> None:
    op = getattr(fixture_module("agf133"), name)
    with pytest.raises(RuntimeError, match=r"must not also be an input to this custom operator"):
        op(*ALIASING[name]())
    assert "AGF133" in _op_codes("agf133", name)


@pytest.mark.parametrize("name", sorted(FRESH))
def test_agf133_fresh_outputs_run(name: str) -> None:
    op = getattr(fixture_module("agf133"), name)
    op(*FRESH[name]())
    assert "AGF133" not in _op_codes("agf133", name)


def test_agf133_the_other_path_runs() -> None:
    op = fixture_module("agf133").maybe_scale
    assert torch.allclose(op(torch.ones(2), 3.0), torch.full((2,), 3.0))


# --- AGF134 -------------------------------------------------------------------------------------------------


def _gradient(op: Any, x: Any, compiled: bool, *extra: Any) -> Any:
    function = lambda a: op(a, *extra).sum()  # noqa: E731
    if compiled:
        function = torch.compile(function, backend="aot_eager", fullgraph=True)
    x = x.clone().requires_grad_()
    function(x).backward()
    return x.grad


@pytest.mark.parametrize("name", ["double", "square"])
def test_agf134_data_ptr_raises_under_compile_only(name: str) -> None:
    op = getattr(fixture_module("agf134"), name)
    _gradient(op, _t(), compiled=False)
    torch._dynamo.reset()
    with pytest.raises(Exception, match="Cannot access data pointer of Tensor"):
        _gradient(op, _t(), compiled=True)


def test_agf134_global_written_in_backward_runs_once_under_compile() -> None:
    module = fixture_module("agf134")
    for compiled, expected in ((False, 3), (True, 1)):
        torch._dynamo.reset()
        module.BACKWARD_CALLS = 0
        function = lambda a: module.negate(a).sum()  # noqa: E731
        if compiled:
            function = torch.compile(function, backend="aot_eager", fullgraph=True)
        for _ in range(3):
            x = _t().requires_grad_()
            function(x).backward()
        assert module.BACKWARD_CALLS == expected


def test_agf134_global_read_in_backward_is_frozen_under_compile() -> None:
    module = fixture_module("agf134")
    torch._dynamo.reset()
    function = torch.compile(lambda a: module.triple(a).sum(), backend="aot_eager", fullgraph=True)
    grads = []
    for scale in (1.0, 5.0):
        module.set_grad_scale(scale)
        x = _t().requires_grad_()
        function(x).backward()
        grads.append(float(x.grad.flatten()[0]))
    module.set_grad_scale(5.0)
    assert float(_gradient(module.triple, _t(), compiled=False).flatten()[0]) == 15.0  # eager follows it
    assert grads == [3.0, 3.0]  # compiled: the value seen when tracing
    module.set_grad_scale(1.0)


def test_agf134_global_written_in_setup_context_runs_in_eager() -> None:
    module = fixture_module("agf134")
    _gradient(module.halve, _t(4, 3), compiled=False)
    assert module.LAST_BATCH == 4


SILENT_134: List[Tuple[str, Tuple[Any, ...]]] = [
    ("safe_log", ()), ("mean_all", ()), ("checked_copy", ()), ("scaled", (2.0,)), ("scaled_by", (2.0,)),
    ("local_var", ()), ("forward_gain", ()), ("looked_up", ()),
]


@pytest.mark.parametrize("name, extra", SILENT_134, ids=[case[0] for case in SILENT_134])
def test_agf134_silent_pairs_compile_and_match_eager(name: str, extra: Tuple[Any, ...]) -> None:
    op = getattr(fixture_module("agf134"), name)
    x = _t()
    eager = _gradient(op, x, False, *extra)
    torch._dynamo.reset()
    assert torch.allclose(_gradient(op, x, True, *extra), eager)
    assert "AGF134" not in _op_codes("agf134", name)


def _compiled_grads(
    op: Any, set_value: Callable[[float], None], values: Tuple[float, ...], compiled: bool
) -> List[float]:
    torch._dynamo.reset()
    function = lambda a: op(a).sum()  # noqa: E731
    if compiled:
        function = torch.compile(function, backend="aot_eager", fullgraph=True)
    grads = []
    for value in values:
        set_value(value)
        x = torch.ones(3, requires_grad=True)
        function(x).backward()
        grads.append(float(x.grad[0]))
    return grads


def test_agf134_context_var_read_in_setup_context_is_frozen_under_compile() -> None:
    module = fixture_module("agf134")
    assert _compiled_grads(module.gained, module.GRAD_GAIN.set, (1.0, 5.0), compiled=False) == [3.0, 15.0]
    assert _compiled_grads(module.gained, module.GRAD_GAIN.set, (1.0, 5.0), compiled=True) == [3.0, 3.0]


def test_agf134_thread_local_read_in_backward_is_frozen_under_compile() -> None:
    module = fixture_module("agf134")
    set_scale = lambda value: setattr(module.STEP_STATE, "scale", value)  # noqa: E731
    assert _compiled_grads(module.stepped, set_scale, (1.0, 5.0), compiled=False) == [4.0, 20.0]
    assert _compiled_grads(module.stepped, set_scale, (1.0, 5.0), compiled=True) == [4.0, 4.0]


def test_agf134_context_var_set_in_backward_runs_at_trace_only() -> None:
    module = fixture_module("agf134")
    for compiled, expected in ((False, 3), (True, 1)):
        module.BACKWARD_RUNS.set(0)
        _compiled_grads(module.counted, lambda value: None, (1.0, 1.0, 1.0), compiled)
        assert module.BACKWARD_RUNS.get() == expected


def test_agf134_thread_local_written_in_setup_context_only_while_tracing() -> None:
    module = fixture_module("agf134")
    for compiled, expected in ((False, (3,)), (True, None)):
        torch._dynamo.reset()
        function = lambda a: module.recorded(a).sum()  # noqa: E731
        if compiled:
            function = torch.compile(function, backend="aot_eager", fullgraph=True)
        function(torch.ones(3, requires_grad=True)).backward()  # traced here when compiled
        del module.STEP_STATE.last_shape
        function(torch.ones(3, requires_grad=True)).backward()
        assert getattr(module.STEP_STATE, "last_shape", None) == expected


def test_agf134_context_var_in_the_op_body_follows_every_call_under_compile() -> None:
    module = fixture_module("agf134")
    torch._dynamo.reset()
    function = torch.compile(lambda a: module.forward_gain(a), backend="aot_eager", fullgraph=True)
    outputs = []
    for gain in (1.0, 5.0):
        module.FORWARD_GAIN.set(gain)
        outputs.append(float(function(torch.ones(3))[0]))
    module.FORWARD_GAIN.set(1.0)
    assert outputs == [1.0, 5.0]
