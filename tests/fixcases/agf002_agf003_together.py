"""AGF002 and AGF003, held: self as the ctx parameter and two inputs kept on it, fixed together."""

import torch


class Product(torch.autograd.Function):
    @staticmethod
    def forward(self, left: torch.Tensor, right: torch.Tensor):
        self.right = right
        self.left = left
        return left * right

    @staticmethod
    def backward(self, grad):
        return grad * self.right, grad * self.left


def check():
    left = torch.linspace(0.5, 1.5, 3, dtype=torch.float64, requires_grad=True)
    right = torch.linspace(-1.0, 1.0, 3, dtype=torch.float64, requires_grad=True)
    Product.apply(left, right).sum().backward()
    return [left.grad, right.grad]
