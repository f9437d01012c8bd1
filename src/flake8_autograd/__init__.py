"""flake8-autograd: lint custom ``torch.autograd.Function`` subclasses and ``torch.library.custom_op``
registrations against PyTorch's contract, without importing torch.

The package is a pipeline, each layer a package that imports only the layers below it (import-linter
contracts in pyproject.toml; docs/architecture.md):

    adapters  ->  checking  ->  rules  ->  engine  ->  core

:mod:`.adapters` is what the user runs (the flake8 plugin, the command); :mod:`.checking` runs the
rules on each Function class and custom op; :mod:`.rules` holds one module per code; :mod:`.engine`
finds the classes and ops and models what they do; :mod:`.core` is the vocabulary every layer shares.
"""

__version__ = "0.1.0"
