"""The models rules read: a Function class with its methods and their body facts (:mod:`.class_model`),
the Function a custom op's ``register_autograd`` generates (:mod:`.custom_op_model`), and the shape of a
``setup_context`` (:mod:`.setup_context_shape`). May import :mod:`..discovery` and :mod:`..syntax`.
"""
