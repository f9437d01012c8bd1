"""What the user runs: the flake8 plugin and the flake8-autograd command."""
