"""AGF001, AGF002 and AGF003, held: no @staticmethod, self as ctx, two inputs kept on it, all in one class."""

import torch


class Product(torch.autograd.Function):
    def forward(self, left: torch.Tensor, right: torch.Tensor):
        self.right = right
        self.left = left
        return left * right

    def backward(self, grad):
        return grad * self.right, grad * self.left


def check():
    left = torch.linspace(0.5, 1.5, 3, dtype=torch.float64, requires_grad=True)
    right = torch.linspace(2.0, 3.0, 3, dtype=torch.float64, requires_grad=True)
    Product.apply(left, right).sum().backward()
    return [left.grad, right.grad]
