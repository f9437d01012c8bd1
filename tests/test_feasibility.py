"""What the engine settles of a condition (engine/analysis/feasibility.py): True or False only where the
module fixes it, unknown (None) for anything else, and never a crash.

Each case puts the condition in the forward of a probe class at the end of a small module and asks the
module's analysis about it, as the model's walk does.
"""

from __future__ import annotations

import ast
import textwrap
from typing import Optional

import libcst as cst
import pytest

from conftest import lint, source_lines
from flake8_autograd.checking.class_checks import _ModelBuilder
from flake8_autograd.core.conventions import TorchVersion
from flake8_autograd.core.settings import Settings
from flake8_autograd.engine.analysis.module_analysis import Analysis
from flake8_autograd.engine.discovery.functions import Discovery

PROBE = """

class Probe(torch.autograd.Function):{setup}
    @staticmethod
    def forward(ctx, x):
        if {condition}:
            return x
        return x
"""
SETUP_CONTEXT = """
    @staticmethod
    def setup_context(ctx, inputs, output):
        pass
"""


def settled(module: str, condition: str, min_torch: Optional[str] = None, setup: bool = False) -> Optional[bool]:
    source = textwrap.dedent(module) + PROBE.format(condition=condition, setup=SETUP_CONTEXT if setup else "")
    lines = source_lines(source)
    tree = ast.parse("".join(lines))
    settings = Settings(min_torch_version=TorchVersion.parse(min_torch) if min_torch else None)
    discovery = Discovery(tree, "example.py", settings)
    analysis = Analysis(tree, discovery, settings, lines)
    site = next(site for site in discovery.function_classes if site.name == "Probe")
    model = _ModelBuilder(lines, analysis).build(site)
    assert model is not None and model.settle is not None
    forward = model.own_methods["forward"].node
    assert forward is not None and isinstance(forward.body, cst.IndentedBlock)
    statement = forward.body.body[0]
    assert isinstance(statement, cst.If)
    return model.settle(statement.test)


IMPORTS = """
import os
import typing
from typing import TYPE_CHECKING

import torch
from packaging import version
from packaging.version import Version
"""


@pytest.mark.parametrize(
    "condition, expected",
    [
        ("False", False), ("True", True), ("None", False), ("0", False), ("1", True), ('""', False),
        ("not False", True), ("False and x", False), ("True or x", True), ("x or True", True),
        ("x and True", None), ("not x", None), ("x", None), ("1 < 2", True), ('"a" == "b"', False),
        ("1 < 'a'", None), ("TYPE_CHECKING", False), ("typing.TYPE_CHECKING", False),
        ("not TYPE_CHECKING", True), ("os.environ.get('X')", None), ("x.y()", None),
    ],
)
def test_literals_and_logic(condition: str, expected: Optional[bool]) -> None:
    assert settled(IMPORTS, condition) is expected


FLAGS = IMPORTS + """
LEGACY = False
ENABLED: bool = True
FROM_CALL = os.getcwd() == "/"
ALIAS = LEGACY
"""


@pytest.mark.parametrize(
    "condition, expected",
    [("LEGACY", False), ("not LEGACY", True), ("ENABLED", True), ("FROM_CALL", None), ("ALIAS", False),
     ("LEGACY or FROM_CALL", None), ("LEGACY and FROM_CALL", False)],
)
def test_module_flags(condition: str, expected: Optional[bool]) -> None:
    assert settled(FLAGS, condition) is expected


@pytest.mark.parametrize(
    "rebinding",
    [
        "LEGACY = True",
        "LEGACY += 1",
        "del LEGACY",
        "for LEGACY in range(2):\n    pass",
        "with open('f') as LEGACY:\n    pass",
        "import LEGACY",
        "from os import path as LEGACY",
        "def enable():\n    global LEGACY",
        "def helper(LEGACY):\n    return LEGACY",
        "def helper():\n    LEGACY = 1\n    return LEGACY",
        "values = [(LEGACY := 1)]",
        "try:\n    pass\nexcept Exception as LEGACY:\n    pass",
        "class LEGACY:\n    pass",
        "globals()['OTHER'] = 1",
        "from os.path import *",
    ],
)
def test_a_flag_bound_again_anywhere_is_unknown(rebinding: str) -> None:
    assert settled(IMPORTS + "\nLEGACY = False\n" + rebinding + "\n", "LEGACY") is None


def test_a_star_import_before_the_flag_leaves_it_known() -> None:
    assert settled(IMPORTS + "\nfrom os.path import *\nLEGACY = False\n", "LEGACY") is False


VERSIONS = IMPORTS + """
MAJOR, MINOR = (int(part) for part in torch.__version__.split(".")[:2])
PAIR = tuple(map(int, torch.__version__.split(".")[:2]))
LISTED = [int(x) for x in torch.__version__.split("+")[0].split(".")[:2]]
PARSED = version.parse(torch.__version__)
"""


@pytest.mark.parametrize(
    "condition, floor_2_0",
    [
        ('torch.__version__ < "1.9"', False),
        ('torch.__version__ >= "1.9"', True),
        ('"1.9" > torch.__version__', False),
        ('torch.__version__ < "2.9"', None),  # "2.10" < "2.9" as strings
        ('torch.__version__ < "2.0"', None),
        ('torch.__version__ < "10.0"', None),
        ('version.parse(torch.__version__) < version.parse("1.13")', False),
        ('Version(torch.__version__) >= Version("1.8")', True),
        ('PARSED < version.parse("1.13.1")', False),
        ('version.parse(torch.__version__) < version.parse("2.0")', None),  # 2.0.0a0 < 2.0
        ('version.parse(torch.__version__) < version.parse("2.1")', None),
        ('version.parse(torch.__version__) < version.parse("1.13rc1")', None),
        ('version.parse(torch.__version__) < "1.0"', None),
        ('int(torch.__version__.split(".")[0]) < 2', False),
        ('int(torch.__version__.split(".")[0]) == 1', False),
        ('int(torch.__version__.split(".")[1]) < 8', None),
        ("MAJOR < 2", False),
        ("MAJOR >= 2", True),
        ("MAJOR == 1 and MINOR < 13", False),
        ("MINOR < 13", None),
        ("PAIR < (1, 10)", False),
        ("PAIR < (2, 0)", False),
        ("PAIR <= (2, 0)", None),
        ("PAIR < (2, 1)", None),
        ("LISTED < [1, 10]", None),
        ("PAIR < 2", None),
        ('torch.__version__.startswith("1.")', None),
    ],
)
def test_torch_version_against_the_oldest_torch(condition: str, floor_2_0: Optional[bool]) -> None:
    assert settled(VERSIONS, condition, min_torch="2.0") is floor_2_0
    assert settled(VERSIONS, condition, setup=True) is floor_2_0  # setup_context proves 2.0
    assert settled(VERSIONS, condition) is None  # nothing says which torch runs the code


@pytest.mark.parametrize(
    "proof, floor",
    [
        ("from torch.library import custom_op", "2.4"),
        ("import torch.func", "2.0"),
        ("compiled = torch.compile(print)", "2.0"),
        ("@torch.library.custom_op('lib::op', mutates_args=())\ndef op(x: torch.Tensor) -> torch.Tensor:\n"
         "    return x.clone()", "2.4"),
    ],
)
def test_a_module_proves_its_oldest_torch_by_the_apis_it_uses_at_import(proof: str, floor: str) -> None:
    assert settled(VERSIONS + proof + "\n", 'torch.__version__ < "1.9"') is False
    older_than_floor = f'version.parse(torch.__version__) < version.parse("{floor}")'
    assert settled(VERSIONS + proof + "\n", older_than_floor) is None


@pytest.mark.parametrize(
    "guarded",
    [
        "try:\n    from torch.library import custom_op\nexcept ImportError:\n    custom_op = None",
        "def helper():\n    return torch.compile(print)",
        "if hasattr(torch, 'func'):\n    import torch.func",
    ],
)
def test_a_guarded_use_proves_nothing(guarded: str) -> None:
    assert settled(VERSIONS + guarded + "\n", 'torch.__version__ < "1.9"') is None


def test_the_setting_decides_over_the_module() -> None:
    module = VERSIONS + "from torch.library import custom_op\n"
    assert settled(module, 'version.parse(torch.__version__) < version.parse("2.0")', min_torch="2.1") is False
    assert settled(module, 'version.parse(torch.__version__) < version.parse("2.0")', min_torch="1.8") is None


@pytest.mark.parametrize(
    "condition",
    [
        "(y := LEGACY)", "lambda: False", "f'{x}'", "[*x]", "x if False else y", "await x" if False else "x[...]",
        " or ".join(["LEGACY"] * 300), "not " * 200 + "False", "(" * 50 + "False" + ")" * 50,
        "torch.__version__.split()[0] < '1'", "version.parse(*x) < 1", "int(*x) < 2", "MAJOR < 2.5",
        "torch.__version__.split('.')[-1] < '1'", "torch.__version__.split('.')[:x] < (1,)",
    ],
)
def test_odd_conditions_never_crash(condition: str) -> None:
    assert settled(VERSIONS + "LEGACY = False\n", condition, min_torch="2.0") in (True, False, None)


def test_code_after_assert_false_is_not_counted() -> None:
    source = """
    import torch

    class Pair(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, grad):
            if grad is None:
                assert False, "never"
                return grad
            return grad, grad
    """
    assert "AGF004" not in [finding.code for finding in lint(source, preview=True)]
