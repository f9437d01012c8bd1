"""flake8-autograd: lint custom ``torch.autograd.Function`` subclasses."""

__version__ = "0.1.0"
