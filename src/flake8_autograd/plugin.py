"""The flake8 adapter: flake8 hands us the ``ast`` tree and lines; we hand back findings."""

from __future__ import annotations

import ast
from typing import Any, ClassVar, Iterator, List, Sequence, Tuple, Type

from . import __version__
from .engine.checker import check_module
from .rules import PREVIEW_RULES, RULES
from .rules.base import Rule


class AutogradChecker:
    """flake8 entry point ``AGF`` (group ``flake8.extension``)."""

    name = "flake8-autograd"
    version = __version__

    function_bases: ClassVar[Sequence[str]] = ()
    rules: ClassVar[List[Rule]] = RULES

    def __init__(self, tree: ast.Module, lines: List[str], filename: str = "<unknown>") -> None:
        self.tree = tree
        self.lines = lines
        self.filename = filename

    @classmethod
    def add_options(cls, parser: Any) -> None:
        parser.add_option(
            "--autograd-function-bases",
            default="",
            parse_from_config=True,
            comma_separated_list=True,
            help=(
                "Comma-separated dotted names of project base classes (imported from other modules) "
                "that subclass torch.autograd.Function, e.g. mypkg.ops.BaseFunction."
            ),
        )

        parser.add_option(
            "--autograd-preview",
            action="store_true",
            default=False,
            parse_from_config=True,
            help="Also run the preview rules (AGF1xx), which are still being proven on real code.",
        )

    @classmethod
    def parse_options(cls, options: Any) -> None:
        cls.rules = RULES + PREVIEW_RULES if getattr(options, "autograd_preview", False) else RULES
        bases = getattr(options, "autograd_function_bases", None) or []
        if isinstance(bases, str):
            bases = [bases]
        cls.function_bases = tuple(base.strip() for base in bases if base.strip())

    def run(self) -> Iterator[Tuple[int, int, str, Type["AutogradChecker"]]]:
        for finding in check_module(self.tree, self.lines, self.filename, self.function_bases, self.rules):
            yield finding.line, finding.column, finding.message, type(self)
