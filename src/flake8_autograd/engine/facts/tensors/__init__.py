"""Which values of a method are tensors: what torch's names return (:mod:`.torch_names`), the bindings
that reach a use (:mod:`.reaching_bindings`), what an ``isinstance`` or ``is None`` test proves on each
branch (:mod:`.narrowing`), and the inference itself (:mod:`.inference`). The kinds it infers, which
module-wide facts share, are :mod:`..tensor_kinds`. May import models, discovery and syntax.
"""
