"""The generated Function-dense module of the editor-latency row (benchmarks/kernels.py): valid Python,
the size and density the row claims, the same text every time, and checked without an internal error."""

from __future__ import annotations

import ast
import importlib.util
from types import ModuleType

from conftest import ROOT, codes


def _load_kernels() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_kernels", ROOT / "benchmarks" / "kernels.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


kernels = _load_kernels()
TARGET_LINES: int = kernels.TARGET_LINES
attention_module = kernels.attention_module


def test_the_module_is_function_dense_and_deterministic() -> None:
    text = attention_module()
    assert text == attention_module()
    tree = ast.parse(text)
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    lines = len(text.splitlines())
    assert TARGET_LINES * 0.95 <= lines <= TARGET_LINES
    assert len(classes) >= 20
    assert all(ast.unparse(node.bases[0]) == "Function" for node in classes)
    assert sum((node.end_lineno or 0) - node.lineno + 1 for node in classes) / lines >= 0.7


def test_the_linter_checks_it_without_an_internal_error() -> None:
    assert "AGF000" not in codes(attention_module(), preview=True)
