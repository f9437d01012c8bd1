"""The engine: what a module's Function classes and custom ops are and what their methods do.

Its parts, each importing only those below it:

- :mod:`.analysis`: the module's :class:`~.analysis.module_analysis.Analysis`, the object a rule
  queries, and the facts that need the whole module (aliases, output buffers, apply sites);
- :mod:`.facts`: dataflow facts about one method or class: which values are tensors, the returns
  and their counts, where a value comes from, what ctx holds;
- :mod:`.models`: the class model (its methods, their parameters, the facts of their bodies) and the
  Function a custom op's registrations generate;
- :mod:`.discovery`: finding Function classes and custom ops from flake8's ``ast`` tree and imports;
- :mod:`.syntax`: source text, libcst parsing of one class, walks, scopes, import names, positions.

It may import :mod:`..core`; never the rules or anything above them.
"""
