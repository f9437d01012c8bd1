"""Dataflow facts about a method or a class, each module one kind of fact: which values are tensors and
of what kind, the ways a method returns and how many values, where a value comes from, grad mode and
autocast, the signature facts of ops, and what ctx holds (:mod:`.ctx`). May import :mod:`..models`,
:mod:`..discovery` and :mod:`..syntax`; no two modules import each other in a circle.
"""
