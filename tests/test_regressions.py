"""Regressions found by reading real findings, reviews and torch's own source (every rule on)."""

from __future__ import annotations

from conftest import codes, lint


def test_forward_without_ctx_and_without_setup_context_gets_the_right_advice() -> None:
    findings = lint(
        """
        import torch

        class Clone(torch.autograd.Function):
            @staticmethod
            def forward(x):
                return x.clone()

            @staticmethod
            def backward(ctx, grad):
                return grad
        """,
        preview=True,
    )
    # Not "rename x to ctx": x is an input. And no gradient count: the inputs are uncertain.
    assert [finding.code for finding in findings] == ["AGF002"]
    assert "add ctx before it, or define setup_context" in findings[0].message


def test_legacy_self_is_reported_once_as_a_missing_staticmethod() -> None:
    findings = lint(
        """
        import torch

        class Legacy(torch.autograd.Function):
            def forward(self, x):
                return x.clone()
        """,
        preview=True,
    )
    # AGF113 too: the class has no backward. Not AGF002: in a method that is not static, self is the
    # instance, and AGF001 already names the fix.
    assert [finding.code for finding in findings] == ["AGF001", "AGF113"]


def test_falling_off_the_end_reads_well() -> None:
    findings = lint(
        """
        import torch

        class Add(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                return a + b

            @staticmethod
            def backward(ctx, grad):
                if ctx.needs_input_grad[0]:
                    return grad, grad
        """,
        preview=True,
    )
    assert [finding.code for finding in findings] == ["AGF004"]
    assert "Add.backward can end without a return (one None) for 2 inputs" in (
        findings[0].message
    )


def test_needs_input_grad_ignores_inputs_that_are_not_tensors() -> None:
    source = """
        import torch

        class Scale(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, scale: float, bias=0.5):
                ctx.scale = scale
                return x * scale + bias

            @staticmethod
            def backward(ctx, grad):
                return grad * ctx.scale, None, None
    """
    assert codes(source, preview=True) == []


def test_doubling_chains_of_names_stay_fast() -> None:
    """Each name is inferred once: 40 doublings would take 2**40 steps otherwise."""
    chain = "\n".join(f"        a{i + 1} = a{i} + a{i}" for i in range(40))
    source = f"""
import torch

class Chain(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a0: torch.Tensor):
{chain}
        ctx.out = a40
        return a40
"""
    assert codes(source, preview=True) == ["AGF113", "AGF003"]  # AGF113: no backward


def test_huge_repeated_tuples_are_not_built() -> None:
    source = """
        import torch

        class Many(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, grad):
                return (grad,) + (None,) * 10000000000
    """
    assert codes(source, preview=True) == []


def test_deep_local_inheritance_does_not_overflow_the_stack() -> None:
    classes = "\n".join(f"class C{i + 1}(C{i}):\n    pass\n" for i in range(3000))
    source = f"import torch\n\nclass C0(torch.autograd.Function):\n    pass\n\n{classes}"
    assert "AGF000" not in codes(source, preview=True)
