"""Which files to check: the paths given, with folders walked for ``*.py`` files.

Paths are reported as flake8 reports them: as given, and ``os.path.join(folder, name)`` below a
folder (``./pkg/ops.py`` for ``.``). Exclude patterns match as in flake8: a pattern matches a file
or folder by its name, or by its absolute path (patterns that contain a slash are made absolute
against the directory they were given in).
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field
from typing import Dict, Hashable, Iterator, List, Optional, Sequence, Set, Tuple

from .gitignore import git_ignored

# Folders never walked into: tool and version-control state, virtualenvs, build output. They are
# still checked when named on the command line.
SKIPPED_FOLDERS = (
    ".git", ".hg", ".svn", ".bzr", "CVS", ".tox", ".nox", ".eggs", "*.egg", "__pycache__",
    ".venv", "venv", "build", "dist",
)
_VIRTUALENV_MARKER = "pyvenv.cfg"
PYTHON_FILES = "*.py"


def normalize_pattern(pattern: str, base: str) -> str:
    """A pattern with a slash is made absolute against ``base``; a bare name matches any name."""
    separators = os.sep + (os.altsep or "")
    if pattern == "." or any(separator in pattern for separator in separators):
        pattern = os.path.abspath(os.path.join(base, pattern))
    return pattern.rstrip(separators)


def is_excluded(path: str, patterns: Sequence[str]) -> bool:
    if not patterns:
        return False
    name = os.path.basename(path)
    if name not in (".", "..") and _matches(name, patterns):
        return True
    return _matches(os.path.abspath(path), patterns)


def _matches(text: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatch(text, pattern) for pattern in patterns)


@dataclass
class FileList:
    """What walking the paths found."""

    paths: List[str] = field(default_factory=list)  # the files, each once, in the order found; ``-``: stdin
    walked_from: Dict[str, str] = field(default_factory=dict)  # a file met in a folder -> that folder, as given
    unreadable: List[Tuple[str, str]] = field(default_factory=list)  # (a folder that could not be listed, why)


def python_files(
    paths: Sequence[str], exclude: Sequence[str], stdin_path: Optional[str] = None, respect_gitignore: bool = False
) -> FileList:
    """The files to check, each once, in the order found (``-`` stays as it is: standard input).

    A file named twice, also through a symbolic or hard link, is kept under the first name given:
    fixed twice, it would be counted twice, and the second fix would find the file changed under it.
    The file ``stdin_path`` names (standard input's ``--stdin-filename``) is left out: standard input
    stands for it (an editor sends the text not yet saved), and reporting both would report it twice.
    A folder that cannot be listed is in ``unreadable``: like a file that cannot be read, it fails the run.
    With ``respect_gitignore``, a walk skips what git ignores (a file named is still checked).
    """
    seen: Set[Hashable] = set()
    if stdin_path is not None:
        seen.add(_identity(stdin_path))
    found = FileList()
    for path in paths:
        for name, folder in _expand(path, exclude, found.unreadable, respect_gitignore):
            key = _identity(name)
            if key not in seen:
                seen.add(key)
                found.paths.append(name)
                if folder is not None:
                    found.walked_from[name] = folder
    return found


def fix_refusal(path: str, walked_from: Optional[str], here: str) -> Optional[str]:
    """Why ``--fix`` and ``--diff`` must leave ``path`` as it is whatever its fixes (the same answer for
    both, so that the patch shown is what is written); None when they may change it.

    ``walked_from`` is the folder whose walk met the file (None: named itself), ``here`` the real path
    of the current folder. A file is followed to the file it is (through any link) and refused when that
    is outside the folder walked: a link met there, leading elsewhere, was not named to be changed. It is
    refused too outside the current folder, where a patch applied from here cannot name it.
    """
    real = os.path.realpath(path)
    if walked_from is not None and not _within(real, os.path.realpath(walked_from)):
        return (
            f"a link out of the folder {walked_from}, left as it is: --fix and --diff change the file a link "
            "met in a folder leads to only when it is inside that folder, or the link is named"
        )
    if not _within(real, here):
        return (
            "outside the current folder (or a link to a file there), left as it is: --fix changes only what "
            "--diff can show in a patch applied from here; run from a folder that holds it"
        )
    return None


def _within(real: str, folder: str) -> bool:
    try:
        return os.path.commonpath([real, folder]) == folder
    except ValueError:  # on another drive (Windows)
        return False


def _identity(name: str) -> Hashable:
    """What tells one file from another: its device and inode, else (a missing file, a system without
    inodes) the path it resolves to."""
    if name == "-":
        return name
    try:
        status = os.stat(name)
    except OSError:  # reported when it is read, under the name given
        status = None
    if status is not None and status.st_ino:
        return (status.st_dev, status.st_ino)
    return os.path.normcase(os.path.realpath(name))


def _expand(
    path: str, exclude: Sequence[str], unreadable: List[Tuple[str, str]], respect_gitignore: bool = False
) -> Iterator[Tuple[str, Optional[str]]]:
    """Each file ``path`` stands for, with the folder walked to find it (None: ``path`` itself)."""
    if path == "-":
        yield path, None
        return
    if is_excluded(path, exclude):
        return
    if not os.path.isdir(path):
        yield path, None  # named explicitly: checked whatever its suffix (a missing file is reported later)
        return

    def cannot_list(error: OSError) -> None:
        unreadable.append((error.filename or path, f"cannot read the folder: {error.strerror or error}"))

    ignored = git_ignored(path) if respect_gitignore else frozenset()

    def git_ignores(name: str) -> bool:
        return bool(ignored) and os.path.normpath(os.path.abspath(name)) in ignored

    for root, folders, files in os.walk(path, onerror=cannot_list):
        folders[:] = sorted(
            folder
            for folder in folders
            if not _skipped_folder(os.path.join(root, folder), folder, exclude)
            and not git_ignores(os.path.join(root, folder))
        )
        for file in sorted(files):
            joined = os.path.join(root, file)
            if fnmatch.fnmatch(file, PYTHON_FILES) and not is_excluded(joined, exclude) and not git_ignores(joined):
                yield joined, path


def _skipped_folder(path: str, name: str, exclude: Sequence[str]) -> bool:
    if _matches(name, SKIPPED_FOLDERS) or is_excluded(path, exclude):
        return True
    return os.path.isfile(os.path.join(path, _VIRTUALENV_MARKER))
