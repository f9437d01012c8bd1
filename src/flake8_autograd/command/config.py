"""``[tool.flake8-autograd]`` in pyproject.toml: found by searching upward from a directory."""

from __future__ import annotations

import importlib
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

SECTION = "flake8-autograd"
LIST_KEYS = ("select", "ignore", "exclude", "function-bases", "ctx-names")
BOOLEAN_KEYS = ("preview", "unsafe-fixes")
STRING_KEYS = ("min-torch-version",)

_LIST_SEPARATOR = re.compile(r"[,\s]")


class ConfigError(Exception):
    """The configuration cannot be used; the message names the file and what is wrong."""


@dataclass(frozen=True)
class FileConfig:
    path: Path
    lists: Mapping[str, Tuple[str, ...]]  # key -> values, only the keys the file sets
    booleans: Mapping[str, bool]
    strings: Mapping[str, str] = field(default_factory=dict)


def split_list(value: str) -> List[str]:
    """Comma- or whitespace-separated values, as flake8 splits its list options."""
    return [item for item in _LIST_SEPARATOR.split(value) if item]


def find_config(start: Path) -> Optional[FileConfig]:
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
    for key, value in table.items():
        where = f"{path}: [tool.{SECTION}] {key}"
        if key in LIST_KEYS:
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
            known = ", ".join(LIST_KEYS + BOOLEAN_KEYS + STRING_KEYS)
            raise ConfigError(f"{where}: unknown key (known keys: {known})")
    return FileConfig(path, lists, booleans, strings)


def _toml_loader() -> Callable[[str], Dict[str, Any]]:
    # tomllib is in the standard library from Python 3.11; older Pythons get the tomli backport.
    name = "tomllib" if sys.version_info >= (3, 11) else "tomli"
    try:
        module = importlib.import_module(name)
    except ImportError:
        raise ConfigError(f"reading pyproject.toml needs the '{name}' package on Python < 3.11") from None
    loads: Callable[[str], Dict[str, Any]] = module.loads
    return loads
