"""AGF001's fix is not offered for a legacy Function that keeps state from ``__init__``: under torch 2.13 the
added ``@staticmethod`` makes forward and backward receive a fresh ctx, and the state is gone."""

from __future__ import annotations

import textwrap
from typing import Any, Dict

import pytest

from conftest import lint, require_torch

torch = require_torch()

LEGACY = textwrap.dedent(
    """\
    import torch


    class MaskedFill(torch.autograd.Function):
        def __init__(self, mask):
            super().__init__()
            self.mask = mask

        def forward(self, input):
            return input.masked_fill(self.mask, 0)

        def backward(self, grad_output):
            return grad_output.masked_fill(self.mask, 0)
    """
)


def test_reported_but_not_fixed() -> None:
    from flake8_autograd.core.fixes import computing_fixes

    with computing_fixes():
        findings = lint(LEGACY)
    assert [(finding.code, finding.fix) for finding in findings] == [("AGF001", None), ("AGF001", None)]


def test_the_fix_would_break_the_class() -> None:
    fixed = LEGACY.replace("    def forward", "    @staticmethod\n    def forward").replace(
        "    def backward", "    @staticmethod\n    def backward"
    )
    namespace: Dict[str, Any] = {}
    exec(compile(fixed, "<legacy>", "exec"), namespace)  # noqa: S102 - our own example source
    x = torch.ones(3, requires_grad=True)
    with pytest.raises(AttributeError, match="mask"):
        namespace["MaskedFill"].apply(x)
