"""The files git ignores, asked of git once per folder walked (only inside a git work tree).

``git ls-files --others --ignored --exclude-standard --directory`` lists the untracked paths that
``.gitignore`` files, ``.git/info/exclude`` and the user's global excludes ignore, an ignored folder as
one entry. A tracked file is never ignored (git's own rule), and outside a work tree, or without git,
nothing is.
"""

from __future__ import annotations

import os
import subprocess
from typing import FrozenSet


def git_ignored(folder: str) -> FrozenSet[str]:
    """The absolute paths (files and folders) git ignores below ``folder``; empty when git cannot say."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"],
            cwd=folder,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):  # no git, or it did not answer
        return frozenset()
    if listed.returncode != 0:  # not a work tree (or inside .git)
        return frozenset()
    base = os.path.abspath(folder)
    names = (os.fsdecode(entry) for entry in listed.stdout.split(b"\0") if entry)
    return frozenset(os.path.normpath(os.path.join(base, name)) for name in names)
