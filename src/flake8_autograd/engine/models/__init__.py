"""The models rules read: a Function class with its methods (:mod:`.class_model`) and what one walk over
each body finds (:mod:`.body_facts`), the Function a custom op's ``register_autograd`` generates
(:mod:`.custom_op_model`), and the shape of a ``setup_context`` (:mod:`.setup_context_shape`). May
import :mod:`..discovery` and :mod:`..syntax`.
"""
