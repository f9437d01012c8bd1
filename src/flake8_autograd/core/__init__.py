"""What every layer shares, knowing nothing of Functions: a finding (:mod:`.findings`), a fix as text
edits and how edits are applied (:mod:`.fixes`), the conventions options name (:mod:`.conventions`:
ctx names, torch versions), and the one :class:`~.settings.Settings` of a run (:mod:`.settings`).
Imports nothing of the package.
"""
