"""The rules, one module per code (``agf003_tensor_on_ctx.py``): its message, the examples it must catch
and must not, its check as a short query of the engine's model, and its fix. :mod:`.base` says what a
rule is. ``RULES`` (on by default) and ``PREVIEW_RULES`` are the registry the checking layer runs.
A rule may import :mod:`..engine` and :mod:`..core`, and :mod:`.base`; never another rule.
"""

from __future__ import annotations

from typing import Dict, FrozenSet, List

from .agf001_staticmethod import StaticMethodRule
from .agf002_ctx_first import CtxFirstRule
from .agf003_tensor_on_ctx import TensorOnCtxRule
from .agf004_gradient_count import GradientCountRule
from .agf005_needs_input_grad import NeedsInputGradRule
from .agf101_save_twice import SaveTwiceRule
from .agf102_save_non_tensor import SaveNonTensorRule
from .agf103_saved_unpack_count import SavedUnpackCountRule
from .agf104_saved_tensors_in_forward import SavedTensorsInForwardRule
from .agf105_gradient_for_non_tensor import GradientForNonTensorRule
from .agf106_needs_input_grad_index import NeedsInputGradIndexRule
from .agf107_backward_arity import BackwardArityRule
from .agf108_jvp_count import JvpCountRule
from .agf109_inplace_input import InPlaceInputRule
from .agf110_inplace_grad import InPlaceGradRule
from .agf111_direct_use import DirectUseRule
from .agf112_mixed_styles import MixedStylesRule
from .agf113_backward_presence import BackwardPresenceRule
from .agf114_decorator_order import DecoratorOrderRule
from .agf115_vmap_with_generated_rule import VmapWithGeneratedRuleRule
from .agf116_list_return import ListReturnRule
from .agf117_saved_tensors_read import SavedTensorsReadRule
from .agf118_save_data import SaveDataRule
from .agf119_saved_variables import SavedVariablesRule
from .agf120_shared_storage import SharedStorageRule
from .agf121_save_outside_forward import SaveOutsideForwardRule
from .agf122_saved_unread import SavedUnreadRule
from .agf123_inplace_saved import InPlaceSavedRule
from .agf124_ctx_attribute_unset import CtxAttributeUnsetRule
from .agf125_custom_fwd_bwd import CustomFwdBwdRule
from .agf126_apply_arguments import ApplyArgumentsRule
from .agf127_unread_output_gradient import UnreadOutputGradientRule
from .agf128_setup_context_shape import SetupContextShapeRule
from .agf129_vmap_support import VmapSupportRule
from .agf130_save_for_forward import SaveForForwardRule
from .agf131_fake_signature import FakeSignatureRule
from .agf132_undeclared_mutation import UndeclaredMutationRule
from .agf133_returns_input import ReturnsInputRule
from .agf134_untraceable_autograd import UntraceableAutogradRule
from .agf135_op_schema import OpSchemaRule
from .agf136_dirty_not_returned import DirtyNotReturnedRule
from .agf137_no_forward import NoForwardRule
from .agf138_saved_tensors_read_twice import SavedTensorsReadTwiceRule
from .agf139_tangent_for_non_differentiable import TangentForNonDifferentiableRule
from .base import Finding, Rule

# On by default: each has judged precision >= 0.95 over >= 10 findings on the benchmark's held-out
# projects (docs/accuracy.md).
RULES: List[Rule] = [
    StaticMethodRule(),
]

# Rules that run only with ``--autograd-preview`` until the benchmark shows them at that bar; each
# already has its fixtures, docs page and oracle tests. A code keeps its number when it moves, so
# ``noqa`` comments and configurations stay valid.
PREVIEW_RULES: List[Rule] = [
    CtxFirstRule(),
    TensorOnCtxRule(),
    GradientCountRule(),
    NeedsInputGradRule(),
    SaveTwiceRule(),
    SaveNonTensorRule(),
    SavedUnpackCountRule(),
    SavedTensorsInForwardRule(),
    GradientForNonTensorRule(),
    NeedsInputGradIndexRule(),
    BackwardArityRule(),
    JvpCountRule(),
    InPlaceInputRule(),
    InPlaceGradRule(),
    DirectUseRule(),
    MixedStylesRule(),
    BackwardPresenceRule(),
    DecoratorOrderRule(),
    VmapWithGeneratedRuleRule(),
    ListReturnRule(),
    SavedTensorsReadRule(),
    SaveDataRule(),
    SavedVariablesRule(),
    SharedStorageRule(),
    SaveOutsideForwardRule(),
    SavedUnreadRule(),
    InPlaceSavedRule(),
    CtxAttributeUnsetRule(),
    CustomFwdBwdRule(),
    ApplyArgumentsRule(),
    UnreadOutputGradientRule(),
    SetupContextShapeRule(),
    VmapSupportRule(),
    SaveForForwardRule(),
    FakeSignatureRule(),
    UndeclaredMutationRule(),
    ReturnsInputRule(),
    UntraceableAutogradRule(),
    OpSchemaRule(),
    DirtyNotReturnedRule(),
    NoForwardRule(),
    SavedTensorsReadTwiceRule(),
    TangentForNonDifferentiableRule(),
]

# The message table: code -> what the rule asks for (the README and docs list the same).
MESSAGES: Dict[str, str] = {rule.code: rule.name for rule in sorted(RULES + PREVIEW_RULES, key=lambda rule: rule.code)}

PREVIEW_CODES: FrozenSet[str] = frozenset(rule.code for rule in PREVIEW_RULES)

__all__ = ["RULES", "PREVIEW_RULES", "PREVIEW_CODES", "MESSAGES", "Finding", "Rule"]
