"""Conventions a project may set: which names of the context parameter it accepts (AGF002), and the
oldest torch release it supports (AGF126: what ``apply`` accepts depends on the release).

Imported by the adapters when they read their options, before any file is checked, so it imports
nothing heavy.
"""

from __future__ import annotations

import fnmatch
import keyword
import re
from dataclasses import dataclass
from typing import Iterable, Tuple

# ``ctx`` is PyTorch's own name; ``_ctx`` is the usual spelling of a parameter a method does not use, and a
# name ending in ``_ctx`` (``func_ctx``) keeps the autograd context apart from other context objects of
# the same body. All three say "the context" to a reader.
DEFAULT_CTX_NAMES: Tuple[str, ...] = ("ctx", "_ctx", "*_ctx")

# A name, or a name with ``*`` standing for any run of name characters.
_ENTRY = re.compile(r"^[A-Za-z_*][A-Za-z0-9_*]*$", re.ASCII)


class ConventionError(ValueError):
    """An option value that cannot be used; the message says why."""


@dataclass(frozen=True)
class CtxNames:
    """The accepted names of a contract method's context parameter.

    Each entry is a plain name (``ctx``) or a pattern in which ``*`` matches any run of characters
    (``*_ctx``). The first plain name is the one findings ask for and the fix renames to.
    """

    entries: Tuple[str, ...] = DEFAULT_CTX_NAMES

    @classmethod
    def parse(cls, values: Iterable[str]) -> "CtxNames":
        """The names from an option's values; raises ConventionError for an entry that is not a name or
        pattern (a keyword included), or a list with no plain name."""
        entries = tuple(value.strip() for value in values if value.strip())
        for entry in entries:
            if not _ENTRY.match(entry):
                raise ConventionError(f"{entry!r} is not a parameter name or a pattern of one (letters, digits, _, *)")
            # The fix would rename the parameter to it, and no file would parse after that. Soft keywords
            # (``match``, ``case``, ``type``, ``_``) are names like any other outside their statements.
            if keyword.iskeyword(entry):
                raise ConventionError(f"{entry!r} is a Python keyword, which cannot name a parameter")
        if not any("*" not in entry for entry in entries):
            raise ConventionError(
                "needs at least one plain name (without *), the one findings suggest and the fix renames to"
            )
        return cls(entries)

    @property
    def preferred(self) -> str:
        return next(entry for entry in self.entries if "*" not in entry)

    def accepts(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, entry) if "*" in entry else name == entry for entry in self.entries)


# A release as projects write it in their requirements: major.minor, a patch number allowed (and ignored).
_RELEASE = re.compile(r"^([0-9]+)\.([0-9]+)(?:\.[0-9]+)?$", re.ASCII)


@dataclass(frozen=True, order=True)
class TorchVersion:
    """A torch release, major.minor: the oldest one a project supports."""

    major: int
    minor: int

    @classmethod
    def parse(cls, value: str) -> "TorchVersion":
        """The release written as ``2.4`` (or ``2.4.1``); raises ConventionError for anything else."""
        match = _RELEASE.match(value.strip())
        if match is None:
            raise ConventionError(f"{value!r} is not a torch release written as major.minor, like 2.4")
        return cls(int(match.group(1)), int(match.group(2)))

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"
