"""Which codes run and which are reported: flake8's select / ignore decision, and the preview codes.

The preview codes are off by default the way flake8 plugins keep optional codes off: the flake8 plugin
adds them to flake8's default ignore list (``extend_default_ignore``), as flake8-bugbear does for its
B9 codes, and the command keeps the same default. A preview rule runs when

- preview is on (``--autograd-preview``, the command's ``--preview``) and its code is reported; or
- a selection (``select`` or ``extend-select``) names it, by its code or by a group narrower than the
  plugin's whole prefix (``AGF004``, ``AGF1``, ``AGF0``), and its code is reported. ``AGF`` alone (like
  ruff's ``ALL``) keeps meaning the codes on by default; so does an ``ignore`` list, which in flake8 drops
  the default ignore list but does not choose anything.

The flake8 plugin asks flake8's own decision engine whether a code is reported; the command asks
:func:`reported`, the same decision written out here (a test checks the two agree).

Imported by the flake8 plugin when flake8 starts: it imports nothing heavy (no rules, no libcst).
"""

from __future__ import annotations

from typing import Callable, FrozenSet, List, Optional, Sequence, Tuple

PREFIX = "AGF"

# AGF000: the plugin could not check a class (reported whatever rules run).
DEFAULT_CODES: Tuple[str, ...] = ("AGF000", "AGF001")

# The codes of ``rules.PREVIEW_RULES`` (a test keeps the two equal; the rules import libcst).
PREVIEW_CODES: Tuple[str, ...] = (
    "AGF002", "AGF003", "AGF004", "AGF005",
    "AGF101", "AGF102", "AGF103", "AGF104", "AGF105", "AGF106", "AGF107", "AGF108", "AGF109", "AGF110",
    "AGF111", "AGF112", "AGF113", "AGF114", "AGF115", "AGF116", "AGF117", "AGF118", "AGF119", "AGF120",
    "AGF121", "AGF122", "AGF123", "AGF124", "AGF125", "AGF126", "AGF127", "AGF128", "AGF129", "AGF130",
    "AGF131", "AGF132", "AGF133", "AGF134", "AGF135", "AGF136", "AGF137", "AGF138", "AGF139",
)

CODES: Tuple[str, ...] = DEFAULT_CODES + PREVIEW_CODES


def reported(
    code: str,
    *,
    select: Optional[Sequence[str]],
    extend_select: Sequence[str] = (),
    ignore: Optional[Sequence[str]],
    extend_ignore: Sequence[str] = (),
    default_select: Sequence[str] = (PREFIX,),
    default_ignore: Sequence[str] = PREVIEW_CODES,
) -> bool:
    """flake8's decision (``flake8.style_guide.DecisionEngine``, flake8 5 to 7): whether ``code`` is reported.

    ``select`` / ``ignore`` are None when not given: then the defaults apply. A code chosen explicitly
    (``select``, ``extend_select``) beats one ignored by default, one ignored explicitly (``ignore``,
    ``extend_ignore``) beats one selected by default, and when both lists of the same kind match, the
    longer prefix wins (a tie ignores).
    """
    selected_explicitly = _matches(code, [*(select or ()), *extend_select])
    ignored_explicitly = _matches(code, [*(ignore or ()), *extend_ignore])
    all_selected = [*(select if select is not None else default_select), *extend_select]
    all_ignored = [*(ignore if ignore is not None else default_ignore), *extend_ignore]
    selected = _matches(code, all_selected)
    ignored = _matches(code, all_ignored)
    if selected is None:
        return False
    if ignored is None:
        return True
    if selected_explicitly is not None and ignored_explicitly is None:
        return True
    if selected_explicitly is None and ignored_explicitly is not None:
        return False
    return len(selected) > len(ignored)  # both explicit or both by default: the longer prefix wins


def _matches(code: str, prefixes: Sequence[str]) -> Optional[str]:
    """The longest of ``prefixes`` that ``code`` starts with."""
    matching = [prefix for prefix in prefixes if code.startswith(prefix)]
    return max(matching, key=len) if matching else None


def names_preview_code(prefix: str, code: str) -> bool:
    """Whether a selection of ``prefix`` turns the preview code ``code`` on: it must be narrower than ``AGF``."""
    return len(prefix) > len(PREFIX) and code.startswith(prefix)


def preview_codes_to_run(
    preview: bool, selections: Sequence[str], is_reported: Callable[[str], bool]
) -> FrozenSet[str]:
    """The preview codes whose rules run, given preview on or off, the codes selected explicitly
    (``select`` and ``extend-select``) and whether a code is reported."""
    return frozenset(
        code
        for code in PREVIEW_CODES
        if is_reported(code) and (preview or any(names_preview_code(prefix, code) for prefix in selections))
    )


def ineffective_selections(
    selections: Sequence[str], runs: Callable[[str], bool], is_reported: Callable[[str], bool], preview_option: str
) -> List[str]:
    """A warning for each selection of this plugin's codes that changes nothing: no code starts with it,
    or none of the codes it names will run (ignored, or preview codes chosen only by ``AGF``)."""
    warnings: List[str] = []
    for prefix in dict.fromkeys(selections):  # each once, in the order given
        if not prefix.startswith(PREFIX):
            continue  # another plugin's, or flake8's
        named = [code for code in CODES if code.startswith(prefix)]
        if not named:
            warnings.append(f"selection {prefix} has no effect: no flake8-autograd code starts with {prefix}")
        elif not any(runs(code) for code in named):
            if not any(is_reported(code) for code in named):
                what = f"{prefix} is" if named == [prefix] else "every code it selects is"
                warnings.append(f"selection {prefix} has no effect: {what} also ignored")
            else:
                warnings.append(
                    f"selection {prefix} has no effect: its preview codes run with {preview_option} or when "
                    f"selected by a narrower prefix (AGF0, AGF1, or the code)"
                )
    return warnings
