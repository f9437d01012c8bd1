"""Dataflow facts about a method or a class, each module one kind of fact: which values are tensors
(:mod:`.tensors`) and of what kind (:mod:`.tensor_kinds`) and dtype (:mod:`.integer_dtypes`), the ways a
method returns and how many values (:mod:`.counting`), whether a forward can run on its own class
(:mod:`.abstract_forward`), where a value comes from (:mod:`.provenance`), grad mode and autocast, the
signature facts of ops, and what ctx holds (:mod:`.ctx`). May import :mod:`..models`, :mod:`..discovery` and
:mod:`..syntax`; no two modules import each other in a circle.
"""
