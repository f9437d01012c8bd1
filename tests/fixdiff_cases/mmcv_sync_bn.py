"""Stand-in: mmcv ``mmcv/ops/sync_bn.py``, class ``SyncBatchNormFunction``.

The ``_ext`` C++/CUDA kernels (``sync_bn_forward_mean``, ``_var``, ``_output``, ``sync_bn_backward_param``,
``_data``) are replaced by plain torch ops on CPU that write into the buffers they are handed, as the
kernels do; mmengine's device probes answer "no CUDA, no MUSA"; one process (``group_size`` 1, so no
``all_reduce``). The class keeps the original's decorators, stores and returns, and its first parameter
named ``self`` in forward and backward (AGF002).
"""

import torch
import torch.distributed as dist
from torch.autograd import Function
from torch.autograd.function import once_differentiable

SOURCE = ("mmcv", "mmcv/ops/sync_bn.py", "SyncBatchNormFunction")
FIXED = ("AGF002",)
UNSAFE = False


def is_cuda_available():
    return False


def is_musa_available():
    return False


class _Kernels:
    """What ``ext_loader.load_ext('_ext', [...])`` gives, on CPU."""

    @staticmethod
    def sync_bn_forward_mean(input3d, mean):
        mean.copy_(input3d.mean(dim=(0, 2)))

    @staticmethod
    def sync_bn_forward_var(input3d, mean, var):
        var.copy_(((input3d - mean.view(1, -1, 1)) ** 2).mean(dim=(0, 2)))

    @staticmethod
    def sync_bn_forward_output(input3d, mean, var, weight, bias, running_mean, running_var, norm, std, output3d,
                               eps, momentum, group_size):
        std.copy_((var + eps).sqrt())
        norm.copy_((input3d - mean.view(1, -1, 1)) / std.view(1, -1, 1))
        output3d.copy_(norm * weight.view(1, -1, 1) + bias.view(1, -1, 1))
        count = input3d.size(0) * input3d.size(2) * group_size
        running_mean.mul_(1 - momentum).add_(momentum * mean)
        running_var.mul_(1 - momentum).add_(momentum * var * count / max(count - 1, 1))

    @staticmethod
    def sync_bn_backward_param(grad_output3d, norm, grad_weight, grad_bias):
        grad_weight.copy_((grad_output3d * norm).sum(dim=(0, 2)))
        grad_bias.copy_(grad_output3d.sum(dim=(0, 2)))

    @staticmethod
    def sync_bn_backward_data(grad_output3d, weight, grad_weight, grad_bias, norm, std, grad_input3d):
        count = grad_output3d.size(0) * grad_output3d.size(2)
        shape = (1, -1, 1)
        grad_input3d.copy_(weight.view(shape) / std.view(shape) * (
            grad_output3d - (grad_bias.view(shape) + norm * grad_weight.view(shape)) / count
        ))


ext_module = _Kernels()


class SyncBatchNormFunction(Function):

    @staticmethod
    def symbolic(g, input, running_mean, running_var, weight, bias, momentum,
                 eps, group, group_size, stats_mode):
        return g.op(
            'mmcv::MMCVSyncBatchNorm',
            input,
            running_mean,
            running_var,
            weight,
            bias,
            momentum_f=momentum,
            eps_f=eps,
            group_i=group,
            group_size_i=group_size,
            stats_mode=stats_mode)

    @staticmethod
    def forward(self, input: torch.Tensor, running_mean: torch.Tensor,
                running_var: torch.Tensor, weight: torch.Tensor,
                bias: torch.Tensor, momentum: float, eps: float, group: int,
                group_size: int, stats_mode: str) -> torch.Tensor:
        self.momentum = momentum
        self.eps = eps
        self.group = group
        self.group_size = group_size
        self.stats_mode = stats_mode

        if is_cuda_available():
            raise AssertionError('a CUDA machine')
        elif is_musa_available():
            raise AssertionError('a MUSA machine')
        else:
            assert isinstance(
                    input, (torch.HalfTensor, torch.FloatTensor)), \
                f'only support Half or Float Tensor, but {input.type()}'
        output = torch.zeros_like(input)
        input3d = input.flatten(start_dim=2)
        output3d = output.view_as(input3d)
        num_channels = input3d.size(1)

        mean = torch.zeros(
            num_channels, dtype=torch.float, device=input3d.device)
        var = torch.zeros(
            num_channels, dtype=torch.float, device=input3d.device)
        norm = torch.zeros_like(
            input3d, dtype=torch.float, device=input3d.device)
        std = torch.zeros(
            num_channels, dtype=torch.float, device=input3d.device)

        batch_size = input3d.size(0)
        if batch_size > 0:
            ext_module.sync_bn_forward_mean(input3d, mean)
            batch_flag = torch.ones([1], device=mean.device, dtype=mean.dtype)
        else:
            batch_flag = torch.zeros([1], device=mean.device, dtype=mean.dtype)

        vec = torch.cat([mean, batch_flag])
        if self.stats_mode == 'N':
            vec *= batch_size
        if self.group_size > 1:
            dist.all_reduce(vec, group=self.group)
        total_batch = vec[-1].detach()
        mean = vec[:num_channels]

        if self.stats_mode == 'default':
            mean = mean / self.group_size
        elif self.stats_mode == 'N':
            mean = mean / total_batch.clamp(min=1)
        else:
            raise NotImplementedError

        if batch_size > 0:
            ext_module.sync_bn_forward_var(input3d, mean, var)

        if self.stats_mode == 'N':
            var *= batch_size
        if self.group_size > 1:
            dist.all_reduce(var, group=self.group)

        if self.stats_mode == 'default':
            var /= self.group_size
        elif self.stats_mode == 'N':
            var /= total_batch.clamp(min=1)
        else:
            raise NotImplementedError

        update_flag = total_batch.clamp(max=1)
        momentum = update_flag * self.momentum
        ext_module.sync_bn_forward_output(
            input3d,
            mean,
            var,
            weight,
            bias,
            running_mean,
            running_var,
            norm,
            std,
            output3d,
            eps=self.eps,
            momentum=momentum,
            group_size=self.group_size)
        self.save_for_backward(norm, std, weight)
        return output

    @staticmethod
    @once_differentiable
    def backward(self, grad_output: torch.Tensor) -> tuple:
        norm, std, weight = self.saved_tensors
        grad_weight = torch.zeros_like(weight)
        grad_bias = torch.zeros_like(weight)
        grad_input = torch.zeros_like(grad_output)
        grad_output3d = grad_output.flatten(start_dim=2)
        grad_input3d = grad_input.view_as(grad_output3d)

        batch_size = grad_input3d.size(0)
        if batch_size > 0:
            ext_module.sync_bn_backward_param(grad_output3d, norm, grad_weight,
                                              grad_bias)

        if self.group_size > 1:
            dist.all_reduce(grad_weight, group=self.group)
            dist.all_reduce(grad_bias, group=self.group)
            grad_weight /= self.group_size
            grad_bias /= self.group_size

        if batch_size > 0:
            ext_module.sync_bn_backward_data(grad_output3d, weight,
                                             grad_weight, grad_bias, norm, std,
                                             grad_input3d)

        return grad_input, None, None, grad_weight, grad_bias, \
            None, None, None, None, None


def inputs():
    channels = 3
    return [
        torch.randn(4, channels, 2, 3, requires_grad=True),
        torch.zeros(channels),
        torch.ones(channels),
        (torch.rand(channels) + 0.5).requires_grad_(),
        torch.randn(channels, requires_grad=True),
        0.1,
        1e-5,
        0,
        1,
        'N',
    ]


def run(args):
    return SyncBatchNormFunction.apply(*args)
