"""The engine: find Function classes, model each one, infer tensors, count gradients.

Pipeline: :mod:`.checker` is the entry point; :mod:`.discovery` reads flake8's ``ast`` tree (free) to
find candidate classes; only when there is one does :mod:`.class_checks` (and with it libcst) come
in: :mod:`.source` parses only those classes with libcst, :mod:`.model` builds one model per class,
and every rule checks every model.
"""
