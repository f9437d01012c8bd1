"""Finding custom ops and their registrations (engine/discovery/custom_ops.py), every spelling, from the ast alone."""

from __future__ import annotations

import ast
import textwrap
from typing import Dict, List, Optional, Tuple

from flake8_autograd.engine.discovery.custom_ops import CustomOpDiscovery, CustomOpSite, might_define_custom_op
from flake8_autograd.engine.discovery.functions import Discovery

MODULE = '''
import torch
from torch.library import custom_op, register_fake
import torch.library as L
from torch import library


@torch.library.custom_op("demo::mul", mutates_args=())
def mul(a: torch.Tensor, b: torch.Tensor, alpha: float) -> torch.Tensor:
    return a * b * alpha


def mul_backward(ctx, grad):
    a, b = ctx.saved_tensors
    return grad * b * ctx.alpha, grad * a * ctx.alpha, None


def mul_setup(ctx, inputs, output):
    a, b, alpha = inputs
    ctx.save_for_backward(a, b)
    ctx.alpha = alpha


mul.register_autograd(mul_backward, setup_context=mul_setup)


@mul.register_fake
def _(a, b, alpha):
    return torch.empty_like(a)


@custom_op("demo::scale", mutates_args="unknown")
def scale(x: torch.Tensor, *, factor: float) -> torch.Tensor:
    return x * factor


def scale_bwd(ctx, g):
    return g * ctx.factor


def scale_sc(ctx, inputs, keyword_only_inputs, output):
    ctx.factor = keyword_only_inputs["factor"]


L.register_autograd("demo::scale", scale_bwd, setup_context=scale_sc)


@register_fake("demo::scale")
def _scale_fake(x, *, factor):
    return torch.empty_like(x)


def impl(x: torch.Tensor) -> torch.Tensor:
    return x.clone()


ident = custom_op("demo::ident", impl, mutates_args=("x",))


@library.custom_op("demo::twice", mutates_args=())
def twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2


def twice_backward(ctx, grad):
    return grad * 2


def twice_backward(ctx, grad):  # bound twice: which one is registered is not known here
    return grad * 3


if torch.cuda.is_available():
    twice.register_autograd(twice_backward)
    library.register_autograd("demo::ident", lambda ctx, grad: grad)


def build():
    @custom_op("demo::inner", mutates_args=())
    def inner(x: torch.Tensor) -> torch.Tensor:
        return x.clone()
    return inner
'''


def _ops(source: str) -> Dict[str, CustomOpSite]:
    tree = ast.parse(textwrap.dedent(source))
    discovery = CustomOpDiscovery(tree, Discovery(tree, "module.py").imports)
    return {site.binding: site for site in discovery.ops}


def _registrations(site: CustomOpSite) -> List[Tuple[Optional[str], Optional[str], bool]]:
    return [
        (
            None if item.backward is None else item.backward.name,
            None if item.setup_context is None else item.setup_context.name,
            item.backward_named,
        )
        for item in site.registrations
    ]


def test_every_spelling_of_an_op_and_its_registrations() -> None:
    ops = _ops(MODULE)
    assert sorted(ops) == ["ident", "mul", "scale", "twice"]  # not the op made inside a function
    assert (ops["mul"].qualname, ops["mul"].mutates_args, ops["mul"].function.name) == ("demo::mul", (), "mul")
    assert _registrations(ops["mul"]) == [("mul_backward", "mul_setup", True)]
    assert [fake.name for fake in ops["mul"].fakes] == ["_"]
    assert ops["scale"].mutates_unknown and ops["scale"].mutates_args is None
    assert _registrations(ops["scale"]) == [("scale_bwd", "scale_sc", True)]
    assert [fake.name for fake in ops["scale"].fakes] == ["_scale_fake"]
    assert (ops["ident"].function.name, ops["ident"].mutates_args) == ("impl", ("x",))


def test_a_name_bound_twice_or_a_lambda_is_named_but_not_resolved() -> None:
    ops = _ops(MODULE)
    assert _registrations(ops["twice"]) == [(None, None, True)]  # registered inside ``if``: still found
    assert _registrations(ops["ident"]) == [(None, None, True)]  # a lambda


def test_text_test_and_a_module_without_ops() -> None:
    assert might_define_custom_op(MODULE)
    assert not might_define_custom_op("import torch\nx = torch.ones(3)\n")
    local = "import torch\n\ndef custom_op(x):\n    return x\n\n@custom_op('a::b')\ndef f(x):\n    return x\n"
    assert _ops(local) == {}  # a module's own custom_op is not torch's


def test_an_op_with_a_second_decorator_is_left_alone() -> None:
    source = '''
    import functools
    import torch

    @functools.lru_cache
    @torch.library.custom_op("demo::cached", mutates_args=())
    def cached(x: torch.Tensor) -> torch.Tensor:
        return x.clone()
    '''
    assert _ops(source) == {}


def test_an_op_made_inside_a_module_level_block_is_found_unless_bound_twice() -> None:
    source = '''
    import torch

    if hasattr(torch.library, "custom_op"):
        @torch.library.custom_op("demo::norm", mutates_args=())
        def norm(x: torch.Tensor) -> torch.Tensor:
            return x / x.norm()

        def norm_backward(ctx, grad):
            return grad

        norm.register_autograd(norm_backward)

    try:
        @torch.library.custom_op("demo::twice", mutates_args=())
        def twice(x: torch.Tensor) -> torch.Tensor:
            return x * 2
    except AttributeError:
        def twice(x):
            return x * 2
    '''
    ops = _ops(source)
    assert sorted(ops) == ["norm"]  # twice is bound in both branches: which one is the op is not known
    assert _registrations(ops["norm"]) == [("norm_backward", None, True)]
