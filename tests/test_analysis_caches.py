"""What :class:`.Analysis` works out once for all the rules: each rule reads the same answer, whichever
rules ran before it and however much of the inference's step budget they spent."""

from __future__ import annotations

import ast
import textwrap
from typing import List, Tuple

import pytest

from conftest import lint, source_lines
from flake8_autograd.engine.analysis import module_analysis as analysis_module
from flake8_autograd.engine.facts.tensors import inference as tensors
from flake8_autograd.engine.analysis.module_analysis import Analysis
from flake8_autograd.checking.class_checks import _ModelBuilder
from flake8_autograd.engine.facts.counting import backward_never_runs
from flake8_autograd.engine.discovery.functions import Discovery
from flake8_autograd.engine.models.class_model import ClassModel
from flake8_autograd.engine.facts.module_facts import ModuleFacts

# Count's forward returns only a number, bound to a name: no output carries a gradient, so backward
# never runs; knowing it takes the inference of ``count``.
NEVER_DIFFERENTIABLE = textwrap.dedent(
    """\
    import torch


    class Count(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            count = x.numel()
            return count

        @staticmethod
        def backward(ctx, grad):
            return grad


    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2
    """
)


def _models(source: str) -> Tuple[Analysis, List[ClassModel]]:
    lines = source_lines(source)
    tree = ast.parse("".join(lines))
    discovery = Discovery(tree, "example.py")
    builder = _ModelBuilder(lines)
    models = [builder.build(site) for site in discovery.function_classes]
    assert all(model is not None for model in models)
    return Analysis(tree, discovery, lines=lines), [model for model in models if model is not None]


def test_backward_never_runs_is_worked_out_once_per_class(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: List[str] = []

    def counting(model: ClassModel, inference: tensors.TensorInference) -> bool:
        asked.append(model.name)
        return backward_never_runs(model, inference)

    monkeypatch.setattr(analysis_module, "backward_never_runs", counting)
    lint(NEVER_DIFFERENTIABLE, preview=True)
    assert sorted(asked) == ["Count", "Scale"]  # eight rules ask; each class works it out once


def test_a_budget_spent_by_earlier_rules_does_not_change_the_answer() -> None:
    analysis, (count_model, scale) = _models(NEVER_DIFFERENTIABLE)
    for model, expected in ((count_model, True), (scale, False)):
        forward = model.method("forward")
        assert forward is not None
        shared = analysis.inference(forward)
        shared._budget.steps = tensors.MAX_STEPS  # the rules before have spent the whole budget
        assert not backward_never_runs(model, shared)  # asked of the spent inference: nothing known
        assert analysis.backward_never_runs(model) is expected  # the answer of a fresh budget
        assert analysis.backward_never_runs(model) is expected


# -- module-level helpers a ``global`` statement rebinds ------------------------------------------------
REBOUND_HELPER = textwrap.dedent(
    """\
    import torch


    def helper(x):
        return x * 2


    def reset():
        try:
            pass
        except RuntimeError:
            def inner():
                if True: global helper
                helper = None
    """
)


def _module_facts(source: str) -> ModuleFacts:
    lines = source_lines(source)
    tree = ast.parse("".join(lines))
    return Analysis(tree, Discovery(tree, "example.py"), lines=lines).module_facts


@pytest.mark.parametrize("declared", [True, False], ids=["global-in-a-nested-handler", "no-global"])
def test_a_global_statement_anywhere_in_the_statements_unsettles_a_helper(declared: bool) -> None:
    source = REBOUND_HELPER if declared else REBOUND_HELPER.replace("global helper", "pass")
    found = _module_facts(source)._sole_top_level("helper")
    assert (found is None) if declared else isinstance(found, ast.FunctionDef)


def test_the_word_global_in_comments_and_strings_starts_no_search() -> None:
    quiet = "import torch\n\n# the global mean over all ranks\nNAME = 'global'\n"
    assert not _module_facts(quiet)._may_declare_global
    assert _module_facts(REBOUND_HELPER)._may_declare_global
    assert _module_facts("x = 1; global x\n")._may_declare_global
