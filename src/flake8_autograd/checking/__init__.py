"""Which rules run, on what, and a failure kept to one finding.

:mod:`.selection` turns select/ignore/preview options into the codes that run; :mod:`.checker` is the
entry point for one module (a cheap text and ``ast`` test first: most files hold no Function);
:mod:`.class_checks` builds the models of the module's Function classes and custom ops and runs every
rule on each, turning an exception in a rule into an AGF000 finding at its class instead of a crash.
May import :mod:`..rules`, :mod:`..engine` and :mod:`..core`.
"""
