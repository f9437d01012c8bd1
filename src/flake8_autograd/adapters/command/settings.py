"""The command line, merged with the configuration (:mod:`.config`): an option given on the command line wins."""

from __future__ import annotations

import argparse
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ... import __version__
from ...core.conventions import DEFAULT_CTX_NAMES, ConventionError, CtxNames, TorchVersion
from ...rules import PREVIEW_RULES, RULES
from .config import ConfigError, FileConfig, find_config, parse_per_file_ignores, split_list
from .files import normalize_pattern
from .formats import FORMATS
from .runner import CheckOptions

# flake8 accepts the same shapes of code prefix in --select and --ignore.
_CODE_PREFIX = re.compile(r"^[A-Z]{1,3}[0-9]{0,3}$", re.ASCII)


RULE_CODES = frozenset(rule.code for rule in RULES + PREVIEW_RULES)


class UsageError(Exception):
    """A bad option or configuration: reported on stderr, exit status 2."""


@dataclass(frozen=True)
class Settings:
    paths: Tuple[str, ...]
    check: CheckOptions
    exclude: Tuple[str, ...]  # patterns normalized as in flake8
    output_format: str
    jobs: int
    stdin_filename: str
    config: Optional[Path]
    fix: bool = False  # repair what can be repaired for certain, in place
    diff: bool = False  # print those repairs as a patch instead; write nothing
    # The options users know from flake8 and ruff (see _add_linter_options).
    exit_zero: bool = False  # exit 0 even with findings (errors still exit 2)
    statistics: bool = False  # per-code counts after the report
    explain: Optional[str] = None  # print this code's rule page and exit
    baseline: Optional[Path] = None  # report only findings not recorded in this file
    write_baseline: bool = False  # record the current findings in the baseline instead
    respect_gitignore: bool = True  # skip the files git ignores when walking folders


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="flake8-autograd",
        allow_abbrev=False,  # ``--fi`` must not pass for ``--fix``, which rewrites files
        description=(
            "Check custom torch.autograd.Function classes against PyTorch's contract. Reads "
            "[tool.flake8-autograd] from the nearest pyproject.toml and the [flake8] section flake8 reads "
            "(setup.cfg, tox.ini, .flake8); options given here win, then the pyproject table."
        ),
    )
    parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="files and folders to check (default: .); - reads standard input"
    )
    parser.add_argument("--select", metavar="CODES", help="report only codes starting with these, e.g. AGF003,AGF1")
    parser.add_argument("--ignore", metavar="CODES", help="do not report codes starting with these")
    parser.add_argument(
        "--extend-select",
        metavar="CODES",
        help="also report codes starting with these; a preview code or group (AGF004, AGF1) runs without --preview",
    )
    parser.add_argument("--extend-ignore", metavar="CODES", help="also do not report codes starting with these")
    parser.add_argument(
        "--exclude",
        metavar="PATTERNS",
        help="glob patterns of files and folders to skip, besides .git, virtualenvs, .tox, build, dist, __pycache__",
    )
    parser.add_argument(
        "--function-bases",
        metavar="NAMES",
        help="dotted names of your own base classes that subclass torch.autograd.Function",
    )
    parser.add_argument(
        "--ctx-names",
        metavar="NAMES",
        help=(
            "accepted names of the ctx parameter (AGF002); * matches any run of characters, and the first "
            f"name without * is the one suggested (default: {','.join(DEFAULT_CTX_NAMES)})"
        ),
    )
    parser.add_argument(
        "--min-torch-version",
        metavar="X.Y",
        help=(
            "the oldest torch release the project supports, e.g. 2.4: AGF126 then also reports what that "
            "release refuses (keyword arguments to apply before 2.13)"
        ),
    )
    parser.add_argument(
        "--preview",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="also run the preview rules (AGF002-AGF005, AGF1xx), as flake8's --autograd-preview does",
    )
    parser.add_argument("--format", choices=sorted(FORMATS), default="text", help="output format (default: text)")
    parser.add_argument(
        "-j",
        "--jobs",
        default="1",
        metavar="N",
        help="check files in N processes, at most one per CPU; 'auto': one per CPU (default: 1)",
    )
    parser.add_argument(
        "--stdin-filename", default="stdin", metavar="NAME", help="the name shown for standard input (-)"
    )
    parser.add_argument(
        "--fix",
        action="store_true",
        help="repair, in place, the findings whose fix is safe (keeps what the code computes); report the rest",
    )
    parser.add_argument(
        "--unsafe-fixes",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=(
            "with --fix or --diff, also apply the fixes that may change what code computes (each rule's page "
            "says what; JSON and SARIF give the reason per finding)"
        ),
    )
    parser.add_argument(
        "--diff",
        action="store_true",
        help="print those repairs as a unified diff (for patch -p1 or git apply) and write nothing",
    )
    _add_linter_options(parser)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser


def _add_linter_options(parser: argparse.ArgumentParser) -> None:
    """The options users know from flake8 and ruff."""
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings (errors still exit 2)")
    parser.add_argument(
        "--statistics", action="store_true", help="after the report, count the findings of each code, as flake8 does"
    )
    parser.add_argument(
        "--per-file-ignores",
        metavar="MAPPING",
        help="codes to ignore in some files, as flake8 writes them: 'tests/*:AGF003,AGF1 legacy.py:AGF'",
    )
    parser.add_argument("--explain", metavar="CODE", help="print the page of the rule CODE and exit")
    parser.add_argument(
        "--baseline",
        metavar="FILE",
        help="report only the findings not recorded in FILE (a JSON file --write-baseline writes)",
    )
    parser.add_argument(
        "--write-baseline",
        action="store_true",
        help="with --baseline FILE: record the current findings in FILE, report nothing and exit 0",
    )
    parser.add_argument(
        "--respect-gitignore",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="skip the files git ignores when walking folders inside a git work tree (default: on)",
    )


def parse_settings(argv: Optional[Sequence[str]], cwd: Path) -> Settings:
    """Settings from the command line and the configuration; raises UsageError."""
    arguments = build_parser().parse_args(argv)
    try:
        config = find_config(cwd)
    except ConfigError as error:
        raise UsageError(str(error)) from None
    paths = tuple(arguments.paths) or (".",)
    if arguments.fix and not arguments.diff and "-" in paths and paths != ("-",):
        raise UsageError("--fix - reads standard input alone: name no other path with it")
    linter = _linter_settings(arguments, config, cwd)
    return Settings(
        paths=paths,
        check=CheckOptions(
            select=_codes("select", arguments.select, config),
            ignore=_codes("ignore", arguments.ignore, config),
            extend_select=_codes("extend-select", arguments.extend_select, config),
            extend_ignore=_codes("extend-ignore", arguments.extend_ignore, config),
            function_bases=_values("function-bases", arguments.function_bases, config),
            preview=_flag("preview", arguments.preview, config),
            ctx_names=_ctx_names(arguments.ctx_names, config),
            min_torch_version=_min_torch_version(arguments.min_torch_version, config),
            unsafe_fixes=_flag("unsafe-fixes", arguments.unsafe_fixes, config),
            per_file_ignores=_per_file_ignores(arguments.per_file_ignores, config, cwd),
        ),
        exclude=_patterns(arguments.exclude, config, cwd),
        output_format=arguments.format,
        jobs=_jobs(arguments.jobs),
        stdin_filename=arguments.stdin_filename,
        config=config.path if config else None,
        fix=arguments.fix,
        diff=arguments.diff,
        **linter,
    )


def _linter_settings(arguments: argparse.Namespace, config: Optional[FileConfig], cwd: Path) -> Dict[str, Any]:
    """The settings of the options users know from flake8 and ruff (all but --per-file-ignores)."""
    explain = arguments.explain
    if explain is not None:
        explain = explain.strip().upper()
        if explain not in RULE_CODES:
            raise UsageError(f"--explain: {arguments.explain!r} is not a code (AGF001 to {max(RULE_CODES)})")
    baseline = Path(arguments.baseline) if arguments.baseline else None
    if arguments.write_baseline and baseline is None:
        raise UsageError("--write-baseline needs --baseline FILE, the file to write")
    if arguments.write_baseline and (arguments.fix or arguments.diff):
        raise UsageError("--write-baseline records findings: it cannot be used with --fix or --diff")
    return {
        "exit_zero": arguments.exit_zero,
        "statistics": arguments.statistics,
        "explain": explain,
        "baseline": baseline,
        "write_baseline": arguments.write_baseline,
        "respect_gitignore": _flag("respect-gitignore", arguments.respect_gitignore, config, default=True),
    }


def _per_file_ignores(
    given: Optional[str], config: Optional[FileConfig], cwd: Path
) -> Tuple[Tuple[str, Tuple[str, ...]], ...]:
    """(pattern, codes) pairs; a pattern is normalized as an exclude pattern, relative to where it was written."""
    if given is not None:
        try:
            pairs = parse_per_file_ignores(given)
        except ConfigError as error:
            raise UsageError(f"--per-file-ignores: {error}") from None
        base, where = os.fspath(cwd), "--per-file-ignores"
    elif config is not None and config.per_file_ignores:
        pairs = list(config.per_file_ignores)
        base, where = os.fspath(config.path.parent), f"per-file-ignores in {config.path}"
    else:
        return ()
    for _, codes in pairs:
        for code in codes:
            if not _CODE_PREFIX.match(code):
                raise UsageError(f"{where}: {code!r} is not a code prefix (like AGF, AGF1 or AGF003)")
    return tuple((normalize_pattern(pattern, base), tuple(codes)) for pattern, codes in pairs)


def _values(key: str, given: Optional[str], config: Optional[FileConfig]) -> Tuple[str, ...]:
    if given is not None:
        return tuple(split_list(given))
    if config is not None:
        return tuple(config.lists.get(key, ()))
    return ()


def _codes(key: str, given: Optional[str], config: Optional[FileConfig]) -> Tuple[str, ...]:
    codes = _values(key, given, config)
    # flake8 checks the codes of ignore lists only: another plugin's select entry it takes must not stop us.
    lenient = given is None and config is not None and key in config.origins and key.endswith("select")
    for code in codes:
        if not _CODE_PREFIX.match(code) and not (lenient and not code.upper().startswith("AGF")):
            where = f"--{key}" if given is not None else config.where(key) if config else key
            raise UsageError(f"{where}: {code!r} is not a code prefix (like AGF, AGF1 or AGF003)")
    return codes


def _ctx_names(given: Optional[str], config: Optional[FileConfig]) -> CtxNames:
    if given is None and (config is None or "ctx-names" not in config.lists):
        return CtxNames()
    try:
        return CtxNames.parse(_values("ctx-names", given, config))
    except ConventionError as error:
        where = "--ctx-names" if given is not None else config.where("ctx-names") if config else "ctx-names"
        raise UsageError(f"{where}: {error}") from None


def _min_torch_version(given: Optional[str], config: Optional[FileConfig]) -> Optional[TorchVersion]:
    value = given if given is not None else config.strings.get("min-torch-version") if config is not None else None
    if not value:
        return None
    try:
        return TorchVersion.parse(value)
    except ConventionError as error:
        where = "--min-torch-version" if given is not None else config.where("min-torch-version") if config else ""
        raise UsageError(f"{where}: {error}") from None


def _flag(key: str, given: Optional[bool], config: Optional[FileConfig], default: bool = False) -> bool:
    if given is not None:
        return given
    return bool(config.booleans.get(key, default)) if config is not None else default


def _patterns(given: Optional[str], config: Optional[FileConfig], cwd: Path) -> Tuple[str, ...]:
    # Relative patterns are relative to where they were written: the cwd or the config's folder.
    if given is not None:
        patterns: List[str] = split_list(given)
        base = os.fspath(cwd)
    elif config is not None:
        patterns = list(config.lists.get("exclude", ()))
        base = os.fspath(config.origin("exclude").parent)
    else:
        return ()
    return tuple(normalize_pattern(pattern, base) for pattern in patterns)


def _jobs(value: str) -> int:
    if value == "auto":
        return usable_cpus()
    try:
        jobs = int(value)
    except ValueError:
        jobs = 0
    if jobs < 1:
        raise UsageError(f"-j/--jobs: expected a positive number or 'auto', not {value!r}")
    # More processes than CPUs only compete for them (and each costs memory and a start-up).
    return min(jobs, usable_cpus())


def usable_cpus() -> int:
    """The CPUs this process may run on (fewer than the machine has under a CPU affinity mask)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1
