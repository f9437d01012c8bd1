"""Which classes are autograd Functions: import spellings, scoping, local inheritance, options."""

from __future__ import annotations

from typing import List

import pytest

from conftest import codes

LEGACY = """
    def forward(ctx, x):
        return x
"""


def _case(header: str, base: str, indent: str = "") -> str:
    body = "\n".join(indent + "    " + line[4:] if line.strip() else "" for line in LEGACY.splitlines())
    return f"{header}\n{indent}class Fn({base}):{body}\n"


FUNCTION_BASES = [
    ("import torch", "torch.autograd.Function"),
    ("import torch as T", "T.autograd.Function"),
    ("import torch.autograd", "torch.autograd.Function"),
    ("import torch.autograd as ag", "ag.Function"),
    ("from torch import autograd", "autograd.Function"),
    ("from torch import autograd as tag", "tag.Function"),
    ("from torch.autograd import Function", "Function"),
    ("from torch.autograd import Function as F", "F"),
    ("from torch.autograd.function import Function", "Function"),
    ("from torch.autograd.function import InplaceFunction", "InplaceFunction"),
    ("from torch.autograd.function import NestedIOFunction", "NestedIOFunction"),
    ("import torch.autograd.function as agf", "agf.InplaceFunction"),
    ("from torch.autograd import *", "Function"),
    ("from torch.autograd.function import *", "InplaceFunction"),
    # Two spellings of the same class are not a conflict.
    ("from torch.autograd import Function\nfrom torch.autograd.function import Function", "Function"),
    ("from torch.autograd import *\nfrom torch.autograd.function import *", "Function"),
    # Names bound inside functions or classes do not shadow a module-level import.
    ("import torch as T\ndef size(q):\n    T = q.size(1)\n    return T", "T.autograd.Function"),
    ("from torch.autograd import Function\ndef build():\n    class Function:\n        pass", "Function"),
    ("from torch.autograd import Function\nclass Registry:\n    class Function:\n        pass", "Function"),
    # An optional-import fallback in an except handler does not hide the import.
    ("try:\n    from torch.autograd import Function\nexcept ImportError:\n    Function = object", "Function"),
]


@pytest.mark.parametrize("header, base", FUNCTION_BASES)
def test_function_base_spellings(header: str, base: str) -> None:
    assert codes(_case(header, base)) == ["AGF001"]


NOT_FUNCTION_BASES = [
    ("from sympy import Function", "Function"),
    ("import sympy", "sympy.Function"),
    ("from chainer import Function", "Function"),
    ("import chainer", "chainer.Function"),
    ("class Function:\n    pass", "Function"),
    ("import torch", "torch.nn.Module"),
    ("import torch", "torch.Function"),
    ("from torch.autograd import Function\nFunction = make_function_class()", "Function"),
    ("", "Function"),
]


@pytest.mark.parametrize("header, base", NOT_FUNCTION_BASES)
def test_other_functions_are_not_checked(header: str, base: str) -> None:
    assert codes(_case(header, base)) == []


def test_class_inside_function_uses_the_function_imports() -> None:
    source = """
        def make():
            from torch.autograd import Function

            class Fn(Function):
                def forward(ctx, x):
                    return x

            return Fn
    """
    assert codes(source) == ["AGF001"]


@pytest.mark.parametrize(
    "nesting",
    [
        "def make():\n",
        "class Outer:\n",
        "class Outer:\n    def method(self):\n",
        "if True:\n",
    ],
)
def test_nested_classes_at_any_depth(nesting: str) -> None:
    indent = "    " * nesting.count(":\n")
    source = "import torch\n" + nesting + _case("", "torch.autograd.Function", indent)
    assert codes(source) == ["AGF001"]


def test_local_inheritance_at_any_depth() -> None:
    source = """
        import torch

        class Base(torch.autograd.Function):
            pass

        class Middle(Base):
            pass

        class Leaf(Middle):
            def forward(ctx, x):
                return x
    """
    assert codes(source) == ["AGF001"]


def test_nested_local_base_by_qualified_name() -> None:
    source = """
        import torch

        class Ops:
            class Base(torch.autograd.Function):
                pass

        class Leaf(Ops.Base):
            def forward(ctx, x):
                return x
    """
    assert codes(source) == ["AGF001"]


def test_cyclic_local_bases_do_not_hang() -> None:
    source = """
        class A(B):
            def forward(ctx, x):
                return x

        class B(A):
            pass
    """
    assert codes(source) == []


def test_relative_import_inside_torch_itself() -> None:
    source = """
        from ..function import Function

        class Fn(Function):
            def forward(ctx, x):
                return x
    """
    assert codes(source, filename="site-packages/torch/autograd/_functions/tensor.py") == ["AGF001"]
    assert codes(source, filename="mypkg/ops/tensor.py") == []
    package_init = source.replace("..function", ".function")
    assert codes(package_init, filename="site-packages/torch/autograd/__init__.py") == ["AGF001"]


@pytest.mark.parametrize(
    "bases, expected",
    [
        ([], []),
        (["mypkg.base.KernelFunction"], ["AGF001"]),
        (["base.KernelFunction"], ["AGF001"]),  # a dotted suffix is enough
        (["KernelFunction"], ["AGF001"]),  # a bare name matches the name as written
        (["otherpkg.KernelFunction"], []),
    ],
)
def test_extra_function_bases(bases: List[str], expected: List[str]) -> None:
    source = _case("from mypkg.base import KernelFunction", "KernelFunction")
    assert codes(source, extra_bases=bases) == expected


def test_file_without_function_is_not_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cheap text and ``ast`` tests keep libcst away from files with no Function class."""
    import flake8_autograd.checking.class_checks as class_checks

    def fail(*args: object) -> None:
        raise AssertionError("parsed with libcst")

    monkeypatch.setattr(class_checks, "parse_class", fail)
    assert codes("import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x\n") == []
    assert codes("import sympy\n\nclass F(sympy.Function):\n    pass\n") == []
