"""What every layer shares, knowing nothing of Functions: a finding (:mod:`.findings`), a fix as text
edits and how edits are applied (:mod:`.fixes`), and the conventions options name (:mod:`.conventions`:
ctx names, torch versions). Imports nothing of the package.
"""
