"""PyTorch is the oracle for AGF135 (fixture tests/fixtures/agf135.py): a custom op whose signature torch
cannot turn into a schema raises when ``custom_op`` runs, i.e. when the module is imported.

The fixture is run one top-level statement at a time in one namespace: each statement holding an expected
finding raises torch 2.13's error for it, every other statement runs, and the silent ops give results.
"""

import ast
from typing import Any, Callable, Dict, List, Optional, Tuple, Type

from conftest import FIXTURES, fixture_findings, require_torch

torch = require_torch()

import pytest  # noqa: E402

# statement name -> (exception, the start of torch's message)
RAISES: Dict[str, Tuple[Type[BaseException], str]] = {
    "scale": (ValueError, "infer_schema(func): Parameter factor must have a type annotation"),
    "halves": (ValueError, "infer_schema(func): Return has unsupported type <class 'list'>"),
    "stats": (ValueError, "infer_schema(func): Return has unsupported type typing.Dict[str, torch.Tensor]"),
    "maybe_norm": (ValueError, "infer_schema(func): Return has unsupported type typing.Optional[torch.Tensor]"),
    "pieces": (ValueError, "infer_schema(func): Return has unsupported type typing.Tuple[torch.Tensor, ...]"),
    "rows_of": (ValueError, "infer_schema(func): Return has unsupported type typing.List[int]"),
    "cube": (ValueError, "infer_schema(func): No return type annotation was provided. Please add one."),
    "shift": (TypeError, "custom_op() missing 1 required keyword-only argument: 'mutates_args'"),
    "masked": (NotImplementedError, "custom_op with kwarg-only Tensor args. Please make your tensors not kwarg-only."),
    "biased": (NotImplementedError, "custom_op with kwarg-only Tensor args. Please make your tensors not kwarg-only."),
    "crop": (ValueError, "infer_schema(func): Parameter size has unsupported type typing.Tuple[int, int]. We do not "
             "support Tuple inputs in schema."),
    "tagged": (ValueError, "infer_schema(func): Parameter tag has unsupported type typing.Any."),
    "total": (ValueError, "infer_schema(func): We do not support positional-only args, varargs, or varkwargs."),
    "sum_over": (ValueError, "infer_schema(func): Parameter dims has an unsupported default value type"),
    "add_any": (ValueError, "infer_schema(func): Parameter y has unsupported type typing.Union[int, torch.Tensor]."),
}


def _statement_name(node: ast.stmt) -> Optional[str]:
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return node.name
    if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    return None


def _run_statements() -> Tuple[Dict[str, Any], Dict[str, BaseException], List[Tuple[int, int, Optional[str]]]]:
    """The fixture's namespace, the exception of each statement that raised (by name), and each statement's
    (first line, last line, name)."""
    path = FIXTURES / "agf135.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    namespace: Dict[str, Any] = {"__name__": "_fixture_agf135"}
    raised: Dict[str, BaseException] = {}
    spans: List[Tuple[int, int, Optional[str]]] = []
    for node in tree.body:
        name = _statement_name(node)
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        spans.append((first, node.end_lineno or node.lineno, name))
        code = compile(ast.Module(body=[node], type_ignores=[]), str(path), "exec")
        try:
            exec(code, namespace)
        except Exception as error:  # noqa: BLE001 - the error is the verdict
            raised[name or f"line {node.lineno}"] = error
    return namespace, raised, spans


RESULT = _run_statements()


def test_agf135_flagged_statements_are_the_ones_that_raise() -> None:
    _, raised, spans = RESULT
    flagged = {
        name for line, code in fixture_findings("agf135") if code == "AGF135"
        for first, last, name in spans if first <= line <= last
    }
    assert flagged == set(RAISES)
    assert set(raised) == set(RAISES)


@pytest.mark.parametrize("name", sorted(RAISES))
def test_agf135_decoration_raises_torch_message(name: str) -> None:
    _, raised, _ = RESULT
    kind, message = RAISES[name]
    assert type(raised[name]) is kind
    text = str(raised[name])
    assert text.startswith(message), text


def _t(*shape: int) -> Any:
    return torch.rand(*(shape or (2, 3))) + 0.5


SILENT: Dict[str, Callable[[Dict[str, Any]], Any]] = {
    "combine": lambda ns: ns["combine"](_t(), [_t(), _t()], None, [0], 1.0, False, "sum", 1),
    "split_two": lambda ns: ns["split_two"](_t()),
    "fill_ones": lambda ns: ns["fill_ones"](_t()),
    "leaky": lambda ns: ns["leaky"](_t(), slope=0.1),
    "cast_all": lambda ns: ns["cast_all"]([_t()], torch.float64, torch.device("cpu"), 2.0),
    "resize": lambda ns: ns["resize"](_t(2, 3), [3, 2], None, 1),
    "twice": lambda ns: ns["twice"](_t()),
    "negate": lambda ns: ns["negate"](_t()),
    "repeat_rows": lambda ns: ns["repeat_rows"](_t(1, 3), 2),
    "norm_value": lambda ns: ns["norm_value"](_t()),
}


@pytest.mark.parametrize("name", sorted(SILENT))
def test_agf135_silent_ops_are_made_and_run(name: str) -> None:
    namespace, raised, _ = RESULT
    assert name not in raised
    assert SILENT[name](namespace) is not None or name == "fill_ones"
