"""Stand-in: linear-operator ``linear_operator/functions/_pivoted_cholesky.py``, class ``PivotedCholesky``.

The original is plain torch on a LinearOperator; here the operator is a small dense one (a
``representation_tree`` that builds ``F F^T + I`` from the factor ``F``), the library's settings are
constants, and ``apply_permutation``/``psd_safe_cholesky`` are their unbatched dense equivalents. The
pivoted Cholesky loop and the backward that rebuilds the operator under ``enable_grad`` are the original's.
The class keeps the original's decorators, ctx names, stores and returns: forward is a staticmethod,
backward is not (AGF001; the module never makes an instance).
"""

import torch
from torch.autograd import Function

SOURCE = ("linear-operator", "linear_operator/functions/_pivoted_cholesky.py", "PivotedCholesky")
FIXED = ("AGF001",)
UNSAFE = False
PRECONDITIONER_TOLERANCE = 1e-3


class _Dense:
    def __init__(self, tensor):
        self.tensor = tensor
        self.shape, self.dtype, self.device = tensor.shape, tensor.dtype, tensor.device

    def _approx_diagonal(self):
        return self.tensor.diagonal(dim1=-2, dim2=-1)

    def to_dense(self):
        return self.tensor


def representation_tree(factor):
    return _Dense(factor @ factor.mT + torch.eye(factor.size(-2), dtype=factor.dtype))


def apply_permutation(matrix, left_permutation=None, right_permutation=None):
    dense = matrix.to_dense() if isinstance(matrix, _Dense) else matrix
    if left_permutation is not None:
        dense = dense[left_permutation.reshape(-1), :].reshape(*left_permutation.shape, dense.size(-1))
    if right_permutation is not None:
        dense = dense[..., right_permutation.reshape(-1)]
    return dense


def inverse_permutation(permutation):
    arange = torch.arange(permutation.size(-1), device=permutation.device)
    return torch.zeros_like(permutation).scatter_(-1, permutation, arange.expand_as(permutation))


def psd_safe_cholesky(matrix):
    return torch.linalg.cholesky(matrix)


class PivotedCholesky(Function):
    @staticmethod
    def forward(ctx, representation_tree, max_iter, error_tol, *matrix_args):
        ctx.representation_tree = representation_tree
        matrix = ctx.representation_tree(*matrix_args)
        batch_shape = matrix.shape[:-2]
        matrix_shape = matrix.shape[-2:]

        if error_tol is None:
            error_tol = PRECONDITIONER_TOLERANCE

        matrix_diag = matrix._approx_diagonal()
        matrix_diag = matrix_diag.clone()
        max_iter = min(max_iter, matrix_shape[-1])

        L = torch.zeros(*batch_shape, max_iter, matrix_shape[-1], dtype=matrix.dtype, device=matrix.device)
        orig_error = torch.max(matrix_diag, dim=-1)[0]
        errors = torch.norm(matrix_diag, 1, dim=-1) / orig_error

        permutation = torch.arange(0, matrix_shape[-1], dtype=torch.long, device=matrix_diag.device)
        permutation = permutation.repeat(*batch_shape, 1)

        m = 0
        while (m == 0) or (m < max_iter and torch.max(errors) > error_tol):
            permuted_diags = torch.gather(matrix_diag, -1, permutation[..., m:])
            max_diag_values, max_diag_indices = torch.max(permuted_diags, -1)
            max_diag_indices = max_diag_indices + m

            old_pi_m = permutation[..., m].clone()
            permutation[..., m].copy_(permutation.gather(-1, max_diag_indices.unsqueeze(-1)).squeeze_(-1))
            permutation.scatter_(-1, max_diag_indices.unsqueeze(-1), old_pi_m.unsqueeze(-1))
            pi_m = permutation[..., m].contiguous()

            L_m = L[..., m, :]
            L_m.scatter_(-1, pi_m.unsqueeze(-1), max_diag_values.sqrt().unsqueeze_(-1))

            if m + 1 < matrix_shape[-1]:
                row = apply_permutation(matrix, pi_m.unsqueeze(-1), right_permutation=None).squeeze(-2)
                pi_i = permutation[..., m + 1:].contiguous()

                L_m_new = row.gather(-1, pi_i)
                if m > 0:
                    L_prev = L[..., :m, :].gather(-1, pi_i.unsqueeze(-2).repeat(*(1 for _ in batch_shape), m, 1))
                    update = L[..., :m, :].gather(
                        -1,
                        pi_m.view(*pi_m.shape, 1, 1).repeat(*(1 for _ in batch_shape), m, 1),
                    )
                    L_m_new -= torch.sum(update * L_prev, dim=-2)

                L_m_new /= L_m.gather(-1, pi_m.unsqueeze(-1))
                L_m.scatter_(-1, pi_i, L_m_new)

                matrix_diag_current = matrix_diag.gather(-1, pi_i)
                matrix_diag.scatter_(-1, pi_i, matrix_diag_current - L_m_new**2)
                L[..., m, :] = L_m

                errors = torch.norm(matrix_diag.gather(-1, pi_i), 1, dim=-1) / orig_error

            m = m + 1

        ctx.save_for_backward(permutation, permutation[..., :m], *matrix_args)
        return L[..., :m, :].mT.contiguous(), permutation

    def backward(ctx, grad_output, _):
        full_permutation, short_permutation, *_matrix_args = ctx.saved_tensors
        _inverse_permutation = inverse_permutation(full_permutation)
        m = short_permutation.size(-1)

        with torch.enable_grad():
            matrix_args = []
            for matrix_arg in _matrix_args:
                if matrix_arg.dtype in (torch.float, torch.double, torch.half):
                    matrix_arg = matrix_arg.detach().requires_grad_(True)
                matrix_args.append(matrix_arg)

            matrix = ctx.representation_tree(*matrix_args)
            Krows = apply_permutation(matrix, full_permutation, short_permutation)
            L = psd_safe_cholesky(Krows[..., :m, :])
            res_pivoted = torch.cat(
                [
                    L,
                    torch.linalg.solve_triangular(L, Krows[..., m:, :].mT, upper=False).mT,
                ],
                dim=-2,
            )
            res = apply_permutation(
                res_pivoted,
                left_permutation=_inverse_permutation,
                right_permutation=None,
            )
            res.backward(gradient=grad_output)

        return tuple([None, None, None] + [matrix_arg.grad for matrix_arg in matrix_args])


def inputs():
    return [representation_tree, 3, None, torch.randn(6, 4, dtype=torch.double, requires_grad=True)]


def run(args):
    return PivotedCholesky.apply(*args)
