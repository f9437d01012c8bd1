"""AGF118 on an object that is not a tensor (robustness review, defect 4): forward saves .data of a wrapper
class whose data property gives a tensor and which has no detach(). No fix may be offered."""

import torch


class Packed:
    """Holds a values tensor behind a data property, as block-sparse matrix classes do."""

    def __init__(self, values):
        self._values = values

    @property
    def data(self):
        return self._values


def pack(v):
    return Packed(v * 3)


class Pack(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v):
        packed = pack(v)
        ctx.save_for_backward(v, packed.data)
        return packed.data.clone()

    @staticmethod
    def backward(ctx, grad):
        v, values = ctx.saved_tensors
        return grad * 3


def check():
    v = torch.linspace(0.0, 1.0, 3, dtype=torch.float64, requires_grad=True)
    Pack.apply(v).sum().backward()
    return [v.grad]
