"""The standalone command: the same engine as the flake8 plugin, without flake8 around it.

:mod:`.settings` merges the command line with the configuration from :mod:`.config` (``[tool.flake8-autograd]``
and flake8's ``[flake8]`` section);
:mod:`.files` finds the files; :mod:`.runner` reads each one as flake8 does, runs the engine and
applies ``noqa`` comments (:mod:`.noqa`) and the selection (:mod:`..selection`); :mod:`.formats` prints.
"""
