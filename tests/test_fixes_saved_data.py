"""The fixes of AGF118 (``.data`` saved for backward) and AGF119 (``ctx.saved_variables``): what each
rewrites, and what it leaves to the author."""

from __future__ import annotations

import textwrap

from test_fixes import HEADER, code_counts, findings_with_fixes, fixed

SAVE_DATA = HEADER + textwrap.dedent(
    """\
    class Mul(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x: torch.Tensor, w: torch.Tensor):
            ctx.save_for_backward(x.data, w.data)
            return x * w

        @staticmethod
        def backward(ctx, grad):
            x, w = ctx.saved_tensors
            grad_x = grad * w if ctx.needs_input_grad[0] else None
            grad_w = grad * x if ctx.needs_input_grad[1] else None
            return grad_x, grad_w
    """
)


def test_agf118_replaces_data_with_detach() -> None:
    assert code_counts(findings_with_fixes(SAVE_DATA)) == {"AGF118": 2}
    result = fixed(SAVE_DATA)
    assert "ctx.save_for_backward(x.detach(), w.detach())" in result
    assert result.replace("x.detach(), w.detach()", "x.data, w.data") == SAVE_DATA  # nothing else changes
    assert code_counts(findings_with_fixes(result)) == {}


def test_agf118_fix_is_unsafe() -> None:
    fixes = [finding.fix for finding in findings_with_fixes(SAVE_DATA) if finding.fix is not None]
    assert fixes and all(fix.unsafe_because and "version counter" in fix.unsafe_because for fix in fixes)


def test_agf118_leaves_a_value_not_known_to_be_a_tensor_alone() -> None:
    # Another object's ``data`` (a block-sparse matrix wrapper, a dataclass, say) is a tensor of its own,
    # version-checked, and the object may have no ``detach``: neither reported nor rewritten.
    source = SAVE_DATA.replace("x: torch.Tensor, w: torch.Tensor", "x, w")
    findings = findings_with_fixes(source)
    assert code_counts(findings) == {}
    assert fixed(source) == source


def test_agf118_keeps_the_rest_of_the_expression() -> None:
    source = SAVE_DATA.replace("x.data, w.data", "x, self_weight[0].data").replace(
        "def forward(ctx, x: torch.Tensor, w: torch.Tensor):",
        "def forward(ctx, x: torch.Tensor, w: torch.Tensor, self_weight: torch.Tensor):",
    )
    assert "ctx.save_for_backward(x, self_weight[0].detach())" in fixed(source)


def test_agf118_leaves_a_tensor_forward_changes_in_place_to_the_author() -> None:
    for change in ("w.add_(1)", "w.data.mul_(2)", "w[0] = 0", "ctx.mark_dirty(w)"):
        source = SAVE_DATA.replace("        return x * w\n", f"        {change}\n        return x * w\n")
        assert change in source
        result = fixed(source)
        assert "ctx.save_for_backward(x.detach(), w.data)" in result, change
    assert "AGF118" in code_counts(findings_with_fixes(source))


def test_agf119_renames_the_alias_only() -> None:
    source = SAVE_DATA.replace("x.data, w.data", "x, w").replace(
        "x, w = ctx.saved_tensors", "x, w = ctx.saved_variables  # saved_variables: the old name"
    )
    assert code_counts(findings_with_fixes(source)) == {"AGF119": 1}
    result = fixed(source)
    assert "x, w = ctx.saved_tensors  # saved_variables: the old name" in result
    assert code_counts(findings_with_fixes(result)) == {}


def test_agf119_in_a_helper_and_under_another_ctx_name() -> None:
    source = HEADER + textwrap.dedent(
        """\
        class Sin(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return torch.sin(x)

            @staticmethod
            def _saved(ctx):
                return ctx.saved_variables[0]

            @staticmethod
            def backward(ctx, grad):
                return grad * torch.cos(Sin._saved(ctx)) * len(ctx.saved_variables)
        """
    )
    result = fixed(source)
    assert "saved_variables" not in result
    assert result.count("ctx.saved_tensors") == 2
