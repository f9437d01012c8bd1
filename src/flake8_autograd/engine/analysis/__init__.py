"""The module analysis a rule queries (:mod:`.module_analysis`: imports, apply calls, per-method
inference and returns, computed once and cached), and the facts that need it, that is the whole
module: writes through aliases and helpers (:mod:`.aliases`), output buffers filled by kernels
(:mod:`.buffers`), apply call sites (:mod:`.apply_sites`), outputs that carry a gradient
(:mod:`.differentiable_outputs`). May import everything else of the engine.
"""
