"""Finding what to check, from flake8's ``ast`` tree and the module's imports: the Function classes
(:mod:`.functions`) and the custom ops with their registrations (:mod:`.custom_ops`). Imports only
:mod:`..syntax` (and core).
"""
