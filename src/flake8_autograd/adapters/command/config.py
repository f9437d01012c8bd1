"""The configuration: ``[tool.flake8-autograd]`` in pyproject.toml and the ``[flake8]`` section flake8 reads.

Each is found by searching upward from the current folder: the nearest pyproject.toml with the table, and
the file flake8 itself would read (:func:`flake8_config_file`). Per option, the pyproject table wins over
the flake8 section (the command line wins over both, in :mod:`.settings`). The flake8 section gives the
plugin's own options (``autograd-function-bases``, ``autograd-ctx-names``, ``autograd-preview``,
``autograd-min-torch-version``) and flake8's ``select``, ``ignore``, ``extend-select``, ``extend-ignore``,
``exclude`` and ``extend-exclude``, so that the command checks what ``flake8`` checks and reports what it
reports; other options, another plugin's among them, are left to flake8.
"""

from __future__ import annotations

import configparser
import importlib
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

SECTION = "flake8-autograd"
LIST_KEYS = ("select", "ignore", "extend-select", "extend-ignore", "exclude", "function-bases", "ctx-names")
BOOLEAN_KEYS = ("preview", "unsafe-fixes", "respect-gitignore")
STRING_KEYS = ("min-torch-version",)
PER_FILE_IGNORES = "per-file-ignores"  # a table {glob: codes} or flake8's "glob:codes" strings

_LIST_SEPARATOR = re.compile(r"[,\s]")

# flake8's configuration files, in the order it looks for them in each folder.
FLAKE8_FILES = ("setup.cfg", "tox.ini", ".flake8")
# An option of the [flake8] section -> the key of [tool.flake8-autograd] it sets.
FLAKE8_KEYS = {
    "select": "select",
    "ignore": "ignore",
    "extend-select": "extend-select",
    "extend-ignore": "extend-ignore",
    "exclude": "exclude",
    "extend-exclude": "exclude",  # the command always skips its own defaults; both lists add to them
    "autograd-function-bases": "function-bases",
    "autograd-ctx-names": "ctx-names",
    "autograd-preview": "preview",
    "autograd-min-torch-version": "min-torch-version",
}


class ConfigError(Exception):
    """The configuration cannot be used; the message names the file and what is wrong."""


@dataclass(frozen=True)
class FileConfig:
    path: Path  # the pyproject.toml when it has the table, else the flake8 configuration file
    lists: Mapping[str, Tuple[str, ...]]  # key -> values, only the keys the files set
    booleans: Mapping[str, bool]
    strings: Mapping[str, str] = field(default_factory=dict)
    per_file_ignores: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()  # (pattern as written, codes)
    # key -> the file that set it and the option's name there: the keys from the [flake8] section
    origins: Mapping[str, Tuple[Path, str]] = field(default_factory=dict)

    def origin(self, key: str) -> Path:
        """The file that set ``key`` (relative patterns are relative to its folder)."""
        return self.origins.get(key, (self.path, key))[0]

    def where(self, key: str) -> str:
        """``key`` as the user wrote it, and where: for messages."""
        path, name = self.origins.get(key, (self.path, key))
        return f"{name} in {path}"


def split_list(value: str) -> List[str]:
    """Comma- or whitespace-separated values, as flake8 splits its list options."""
    return [item for item in _LIST_SEPARATOR.split(value) if item]


def find_config(start: Path) -> Optional[FileConfig]:
    """The configuration for a run from ``start``: ``[tool.flake8-autograd]`` over flake8's ``[flake8]``."""
    table = find_pyproject_config(start)
    section = find_flake8_config(start)
    if section is None or table is None:
        return table or section
    return FileConfig(
        table.path,
        {**section.lists, **table.lists},
        {**section.booleans, **table.booleans},
        {**section.strings, **table.strings},
        per_file_ignores=table.per_file_ignores,
        origins={key: origin for key, origin in section.origins.items() if key not in table.origins},
    )


def find_pyproject_config(start: Path) -> Optional[FileConfig]:
    """The nearest pyproject.toml at or above ``start`` that has a ``[tool.flake8-autograd]`` table."""
    for directory in [start, *start.parents]:
        candidate = directory / "pyproject.toml"
        if not candidate.is_file():
            continue
        try:
            text = candidate.read_text(encoding="utf-8")
        except (OSError, UnicodeError) as error:
            raise ConfigError(f"{candidate}: cannot read: {error}") from None
        if SECTION not in text:  # cheap: a file that never names the tool has no table for it
            continue
        table = _tool_table(candidate, text)
        if table is not None:
            return _parse_table(candidate, table)
    return None


def _tool_table(path: Path, text: str) -> Optional[Dict[str, Any]]:
    try:
        document = _toml_loader()(text)
    except ConfigError:
        raise
    except Exception as error:  # noqa: BLE001 - the TOML reader's own error type differs by Python version
        raise ConfigError(f"{path}: not valid TOML: {error}") from None
    tool = document.get("tool")
    table = tool.get(SECTION) if isinstance(tool, dict) else None
    if table is None:
        return None
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.{SECTION}] must be a table")
    return table


def _parse_table(path: Path, table: Dict[str, Any]) -> FileConfig:
    lists: Dict[str, Tuple[str, ...]] = {}
    booleans: Dict[str, bool] = {}
    strings: Dict[str, str] = {}
    per_file_ignores: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    for key, value in table.items():
        where = f"{path}: [tool.{SECTION}] {key}"
        if key == PER_FILE_IGNORES:
            per_file_ignores = _per_file_ignores_value(value, where)
        elif key in LIST_KEYS:
            if isinstance(value, str):
                lists[key] = tuple(split_list(value))
            elif isinstance(value, list) and all(isinstance(item, str) for item in value):
                lists[key] = tuple(item.strip() for item in value if item.strip())
            else:
                raise ConfigError(f"{where}: expected a list of strings")
        elif key in BOOLEAN_KEYS:
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: expected true or false")
            booleans[key] = value
        elif key in STRING_KEYS:
            # A version written as a TOML number would lose its zeros (2.10 reads as 2.1): strings only.
            if not isinstance(value, str):
                raise ConfigError(f'{where}: expected a string, like "2.4"')
            strings[key] = value
        else:
            known = ", ".join(LIST_KEYS + BOOLEAN_KEYS + STRING_KEYS + (PER_FILE_IGNORES,))
            raise ConfigError(f"{where}: unknown key (known keys: {known})")
    return FileConfig(path, lists, booleans, strings, per_file_ignores=per_file_ignores)


def _per_file_ignores_value(value: Any, where: str) -> Tuple[Tuple[str, Tuple[str, ...]], ...]:
    """``per-file-ignores`` as a table of patterns to codes (a list or a string), or flake8's mapping
    written as one string or a list of ``"pattern:codes"`` strings."""
    if isinstance(value, dict):
        pairs = []
        for pattern, codes in value.items():
            if isinstance(codes, str):
                codes = split_list(codes)
            if not isinstance(codes, list) or not all(isinstance(code, str) for code in codes):
                raise ConfigError(f"{where}: {pattern!r}: expected a list of codes")
            pairs.append((pattern, tuple(code.strip() for code in codes if code.strip())))
        return tuple(pairs)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        value = "\n".join(value)
    if not isinstance(value, str):
        raise ConfigError(f"{where}: expected a table of patterns to codes, or flake8's 'pattern:codes' strings")
    try:
        return tuple(parse_per_file_ignores(value))
    except ConfigError as error:
        raise ConfigError(f"{where}: {error}") from None


_MAPPING_TOKENS = (  # flake8's tokens for per-file-ignores (flake8.utils), tried in this order
    ("code", re.compile(r"[A-Z]+[0-9]*(?=$|\s|,)")),
    ("file", re.compile(r"[^\s:,]+")),
    ("colon", re.compile(r"\s*:\s*")),
    ("separator", re.compile(r"\s*,\s*|\s+")),
)


def parse_per_file_ignores(value: str) -> List[Tuple[str, Tuple[str, ...]]]:
    """``pattern[ pattern]:CODE[,CODE] ...`` read as flake8 reads its ``per-file-ignores``."""
    pairs: List[Tuple[str, Tuple[str, ...]]] = []
    files: List[str] = []
    codes: List[str] = []
    separated, after_colon = True, False

    def flush() -> None:
        pairs.extend((name, tuple(codes)) for name in files if codes)

    position = 0
    while position < len(value):
        for kind, pattern in _MAPPING_TOKENS:
            match = pattern.match(value, position)
            if match:
                break
        else:  # pragma: no cover - the file token takes any other character
            raise ConfigError(f"cannot read {value!r}")
        token, position = match.group(), match.end()
        if kind == "separator":
            separated = True
        elif not after_colon:
            if kind == "colon":
                after_colon = separated = True
            elif separated and kind == "file":
                files.append(token)
                separated = False
            else:
                raise ConfigError(f"expected 'pattern:CODES', got {token!r} in {value.strip()!r}")
        elif separated and kind == "code":
            codes.append(token)
            separated = False
        elif separated and kind == "file":
            flush()
            files, codes, after_colon = [token], [], False
            separated = False
        else:
            raise ConfigError(f"expected 'pattern:CODES', got {token!r} in {value.strip()!r}")
    if files and not after_colon:
        raise ConfigError(f"{files[-1]!r} has no ':CODES' in {value.strip()!r}")
    flush()
    return pairs


def flake8_config_file(start: Path) -> Optional[Path]:
    """The file flake8 reads its configuration from when run in ``start`` (``flake8.options.config``): in
    each folder from ``start`` upward, stopping below the home folder, the first of setup.cfg, tox.ini and
    .flake8 that has a ``[flake8]`` (or ``[flake8:local-plugins]``) section; a file that does not parse is
    passed over, as flake8 passes it over."""
    home = _stat_key(Path(os.path.expanduser("~")))
    directory = start
    while True:
        for name in FLAKE8_FILES:
            candidate = directory / name
            parser = configparser.RawConfigParser()
            try:
                parser.read(candidate, encoding="UTF-8")
            except (UnicodeDecodeError, configparser.ParsingError):
                continue
            except configparser.Error as error:  # a section or option twice: flake8 stops on it too
                raise ConfigError(f"{candidate}: {error}") from None
            if "flake8" in parser or "flake8:local-plugins" in parser:
                return candidate
        parent = directory.parent
        if parent == directory or _stat_key(parent) in (None, home):
            return None
        directory = parent


def _stat_key(path: Path) -> Optional[Tuple[int, int]]:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_ino, status.st_dev


def find_flake8_config(start: Path) -> Optional[FileConfig]:
    """What the ``[flake8]`` section of flake8's configuration file (:func:`flake8_config_file`) sets for the
    command, read as flake8 reads it: lists split at commas and whitespace, booleans as configparser reads
    them, ``autograd_preview`` the same as ``autograd-preview``."""
    path = flake8_config_file(start)
    if path is None:
        return None
    parser = configparser.RawConfigParser()
    parser.read(path, encoding="UTF-8")
    if "flake8" not in parser:
        return None
    lists: Dict[str, Tuple[str, ...]] = {}
    booleans: Dict[str, bool] = {}
    strings: Dict[str, str] = {}
    origins: Dict[str, Tuple[Path, str]] = {}
    for option, value in parser["flake8"].items():
        name = option.replace("_", "-")
        key = FLAKE8_KEYS.get(name)
        if key is None:
            continue
        origins[key] = (path, "exclude" if key == "exclude" else name)
        if key in LIST_KEYS:
            lists[key] = lists.get(key, ()) + tuple(split_list(value))
        elif key in BOOLEAN_KEYS:
            state = parser.BOOLEAN_STATES.get(value.strip().lower())
            if state is None:
                raise ConfigError(f"{path}: [flake8] {option}: expected true or false, not {value!r}")
            booleans[key] = state
        else:
            strings[key] = value.strip()
    return FileConfig(path, lists, booleans, strings, origins=origins)


def _toml_loader() -> Callable[[str], Dict[str, Any]]:
    # tomllib is in the standard library from Python 3.11; older Pythons get the tomli backport.
    name = "tomllib" if sys.version_info >= (3, 11) else "tomli"
    try:
        module = importlib.import_module(name)
    except ImportError:
        raise ConfigError(f"reading pyproject.toml needs the '{name}' package on Python < 3.11") from None
    loads: Callable[[str], Dict[str, Any]] = module.loads
    return loads
