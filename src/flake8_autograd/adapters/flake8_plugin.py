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
import importlib
import multiprocessing
import sys
from typing import Any, Callable, ClassVar, FrozenSet, Iterator, List, Sequence, Tuple, Type

from .. import __version__
from ..core.conventions import DEFAULT_CTX_NAMES, ConventionError, CtxNames, TorchVersion
from ..core.settings import DEFAULT_SETTINGS, Settings
from ..checking.selection import PREVIEW_CODES, ineffective_selections, preview_codes_to_run, reported


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


def flake8_decision(options: Any, preview: bool) -> Callable[[str], bool]:
    """Whether flake8 reports a code, as its own decision engine says (flake8 5.0.4 to 7). Options that are
    not flake8's (a test's namespace) get the same decision written out in :mod:`.selection`."""
    try:
        style_guide = importlib.import_module("flake8.style_guide")
        engine = style_guide.DecisionEngine(options)
        selected = style_guide.Decision.Selected
        engine.decision_for("AGF001")
    except Exception:  # noqa: BLE001 - not flake8's options, or an engine that changed: decide as flake8 5-7 do
        return lambda code: reported(
            code,
            select=getattr(options, "select", None),
            extend_select=getattr(options, "extend_select", None) or (),
            ignore=getattr(options, "ignore", None),
            extend_ignore=getattr(options, "extend_ignore", None) or (),
            default_ignore=getattr(options, "extended_default_ignore", () if preview else PREVIEW_CODES),
        )
    return lambda code: engine.decision_for(code) is selected


class AutogradChecker:
    """flake8 entry point ``AGF`` (group ``flake8.extension``)."""

    name = "flake8-autograd"
    version = __version__

    # Built once, when flake8 parses the options, and handed to the check of every file.
    settings: ClassVar[Settings] = DEFAULT_SETTINGS

    def __init__(self, tree: ast.Module, lines: List[str], filename: str = "<unknown>") -> None:
        self.tree = tree
        self.lines = lines
        self.filename = filename

    @classmethod
    def add_options(cls, parser: Any) -> None:
        # Off by default, as flake8-bugbear's B9 codes: --extend-select AGF1 (or one code) turns them on.
        parser.extend_default_ignore(list(PREVIEW_CODES))
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
            help=(
                "Also run the preview rules (AGF002-AGF005, AGF1xx), which are still being proven on real code. "
                "One code or a group runs without it when selected: --extend-select AGF1."
            ),
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
        preview = bool(getattr(options, "autograd_preview", False))
        preview_codes = cls._preview_codes(options, preview)
        bases = getattr(options, "autograd_function_bases", None) or []
        if isinstance(bases, str):
            bases = [bases]
        function_bases = tuple(base.strip() for base in bases if base.strip())
        names = getattr(options, "autograd_ctx_names", None)
        if names is None:
            ctx_names = CtxNames()
        else:
            try:
                ctx_names = CtxNames.parse([names] if isinstance(names, str) else names)
            except ConventionError as error:
                # A usage error, as argparse reports one (flake8 would show an exception as a traceback).
                print(f"flake8: error: --autograd-ctx-names: {error}", file=sys.stderr)
                raise SystemExit(2) from None
        release = getattr(options, "autograd_min_torch_version", None)
        try:
            min_torch_version = TorchVersion.parse(release) if release else None
        except ConventionError as error:
            print(f"flake8: error: --autograd-min-torch-version: {error}", file=sys.stderr)
            raise SystemExit(2) from None
        cls.settings = Settings(
            function_bases=function_bases,
            preview=preview,
            preview_codes=preview_codes,
            ctx_names=ctx_names,
            min_torch_version=min_torch_version,
        )

    @classmethod
    def _preview_codes(cls, options: Any, preview: bool) -> FrozenSet[str]:
        """The preview codes to run: those flake8 reports, with preview on or when a selection names them.
        Warns, once per run, about a selection of this plugin's codes that changes nothing."""
        if preview and isinstance(getattr(options, "extended_default_ignore", None), list):
            # Preview on: flake8 must not drop what the preview rules report (a new list: flake8's own is
            # shared with its option manager). parse_options runs before flake8 builds its decision engine.
            options.extended_default_ignore = [
                code for code in options.extended_default_ignore if code not in PREVIEW_CODES
            ]
        is_reported = flake8_decision(options, preview)
        selections = [*(getattr(options, "select", None) or ()), *(getattr(options, "extend_select", None) or ())]
        codes = preview_codes_to_run(preview, selections, is_reported)
        # flake8 parses the options again in each worker process it starts (other than by fork): warn once.
        if multiprocessing.parent_process() is None:

            def runs(code: str) -> bool:
                return is_reported(code) and (code not in PREVIEW_CODES or code in codes)

            for warning in ineffective_selections(selections, runs, is_reported, "--autograd-preview"):
                print(f"flake8-autograd: warning: {warning}", file=sys.stderr)
        return codes

    def run(self) -> Iterator[Tuple[int, int, str, Type["AutogradChecker"]]]:
        settings = self.settings
        if not might_define_function("".join(self.lines), settings.function_bases):
            return  # most files: no import, no tree walked
        from ..checking.checker import check_tree, class_checks_loaded

        findings = check_tree(self.tree, self.lines, self.filename, settings)
        if class_checks_loaded():
            _settle_engine()
        for finding in findings:
            yield finding.line, finding.column, finding.message, type(self)
