"""The engine: find Function classes, model each one, infer tensors, count gradients.

Pipeline: :mod:`.discovery` reads flake8's ``ast`` tree (free) to find candidate classes;
:mod:`.source` parses only those classes with libcst; :mod:`.model` builds one model per class;
:mod:`.checker` hands every model to every rule.
"""
