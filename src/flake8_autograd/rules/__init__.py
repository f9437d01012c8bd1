"""The rules, one module each. ``RULES`` is the registry every adapter runs."""

from __future__ import annotations

from typing import Dict, List

from .agf001_staticmethod import StaticMethodRule
from .agf002_ctx_first import CtxFirstRule
from .agf003_tensor_on_ctx import TensorOnCtxRule
from .agf004_gradient_count import GradientCountRule
from .agf005_needs_input_grad import NeedsInputGradRule
from .base import Finding, Rule

RULES: List[Rule] = [
    StaticMethodRule(),
    CtxFirstRule(),
    TensorOnCtxRule(),
    GradientCountRule(),
    NeedsInputGradRule(),
]

# The message table: code -> what the rule asks for (the README and docs list the same).
MESSAGES: Dict[str, str] = {rule.code: rule.name for rule in RULES}

__all__ = ["RULES", "MESSAGES", "Finding", "Rule"]
