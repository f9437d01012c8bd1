"""The flake8 adapter: flake8 hands us the ``ast`` tree and lines; we hand back findings.

flake8 imports this module at start-up, before it reads any file, even for a run over one file that
holds no Function class. So it imports nothing heavy: the engine's entry point is imported by
:meth:`AutogradChecker.run` once a file passes the text test that rules out most files, and the
rules (and with them libcst, whose import costs more than flake8's own) only once a file is found to
hold a Function class.
"""

from __future__ import annotations

import ast
import gc
import sys
from typing import Any, ClassVar, Iterator, List, Optional, Sequence, Tuple, Type

from . import __version__
from .conventions import DEFAULT_CTX_NAMES, ConventionError, CtxNames, TorchVersion


def might_define_function(text: str, extra_bases: Sequence[str]) -> bool:
    """The engine's text test (``engine.checker.might_define_function``), without importing the engine.

    Kept identical to it; a test checks that the two agree.
    """
    if "Function" in text or "custom_op" in text:  # a Function class, or a torch.library custom op
        return True
    return any(base.rsplit(".", 1)[-1] in text for base in extra_bases)


_engine_settled = False


def _settle_engine() -> None:
    """Once per process, after the first file that held a Function class (so libcst and the rules are
    imported): take what is alive out of the cyclic collector's reach (``gc.freeze``).

    Importing libcst and the engine leaves some 20,000 objects that live as long as the process; the
    collector would walk them in every full collection flake8 runs afterwards, which roughly doubles
    the time flake8 spends in those collections. Frozen objects are still freed by reference counting
    when their last reference goes; only cyclic garbage alive at this moment is never reclaimed, and the
    engine has already collected the classes it just checked, one by one.
    """
    global _engine_settled
    if not _engine_settled:
        _engine_settled = True
        gc.freeze()


class AutogradChecker:
    """flake8 entry point ``AGF`` (group ``flake8.extension``)."""

    name = "flake8-autograd"
    version = __version__

    function_bases: ClassVar[Sequence[str]] = ()
    preview: ClassVar[bool] = False
    ctx_names: ClassVar[CtxNames] = CtxNames()
    min_torch_version: ClassVar[Optional[TorchVersion]] = None

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
            "--autograd-ctx-names",
            default=",".join(DEFAULT_CTX_NAMES),
            parse_from_config=True,
            comma_separated_list=True,
            help=(
                "Comma-separated accepted names of the ctx parameter (AGF002); * matches any run of "
                "characters. The first name without * is the one suggested. (Default: %(default)s)"
            ),
        )

        parser.add_option(
            "--autograd-preview",
            action="store_true",
            default=False,
            parse_from_config=True,
            help="Also run the preview rules (AGF002-AGF005, AGF1xx), which are still being proven on real code.",
        )

        parser.add_option(
            "--autograd-min-torch-version",
            default=None,
            parse_from_config=True,
            metavar="X.Y",
            help=(
                "The oldest torch release the project supports, e.g. 2.4: AGF126 then also reports what that "
                "release refuses (keyword arguments to apply before 2.13). (Default: not set)"
            ),
        )

    @classmethod
    def parse_options(cls, options: Any) -> None:
        cls.preview = bool(getattr(options, "autograd_preview", False))
        bases = getattr(options, "autograd_function_bases", None) or []
        if isinstance(bases, str):
            bases = [bases]
        cls.function_bases = tuple(base.strip() for base in bases if base.strip())
        names = getattr(options, "autograd_ctx_names", None)
        if names is None:
            cls.ctx_names = CtxNames()
        else:
            try:
                cls.ctx_names = CtxNames.parse([names] if isinstance(names, str) else names)
            except ConventionError as error:
                # A usage error, as argparse reports one (flake8 would show an exception as a traceback).
                print(f"flake8: error: --autograd-ctx-names: {error}", file=sys.stderr)
                raise SystemExit(2) from None
        release = getattr(options, "autograd_min_torch_version", None)
        try:
            cls.min_torch_version = TorchVersion.parse(release) if release else None
        except ConventionError as error:
            print(f"flake8: error: --autograd-min-torch-version: {error}", file=sys.stderr)
            raise SystemExit(2) from None

    def run(self) -> Iterator[Tuple[int, int, str, Type["AutogradChecker"]]]:
        if not might_define_function("".join(self.lines), self.function_bases):
            return  # most files: no import, no tree walked
        from .engine.checker import check_tree, class_checks_loaded

        findings = check_tree(
            self.tree, self.lines, self.filename, self.function_bases, preview=self.preview, ctx_names=self.ctx_names,
            min_torch_version=self.min_torch_version,
        )
        if class_checks_loaded():
            _settle_engine()
        for finding in findings:
            yield finding.line, finding.column, finding.message, type(self)
