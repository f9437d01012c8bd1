"""The standalone command: the same checks as the flake8 plugin, without flake8 around it.

:mod:`.main` parses the command line; :mod:`.settings` merges it with the configuration from
:mod:`.config` (``[tool.flake8-autograd]`` and flake8's ``[flake8]`` section); :mod:`.files` finds the
files (:mod:`.gitignore`); :mod:`.runner` reads each one as flake8 does, runs the checks and applies
``noqa`` comments (:mod:`.noqa`) and the selection; :mod:`.fixer` and :mod:`.patch` apply or print fixes;
:mod:`.baseline` filters known findings; :mod:`.formats` prints; :mod:`.explain` prints a rule's page.
"""
