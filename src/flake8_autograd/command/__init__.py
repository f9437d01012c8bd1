"""The standalone command: the same engine as the flake8 plugin, without flake8 around it.

:mod:`.settings` merges the command line with ``[tool.flake8-autograd]`` from :mod:`.config`;
:mod:`.files` finds the files; :mod:`.runner` reads each one as flake8 does, runs the engine and
applies ``noqa`` comments (:mod:`.noqa`) and ``--select``/``--ignore``; :mod:`.formats` prints.
"""
