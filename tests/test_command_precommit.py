"""The pre-commit hooks this repository declares, run by the real ``pre-commit try-repo``.

pre-commit installs the hook from a git repository. ``try-repo`` on a working copy takes the last
commit plus changes to tracked files only, so the hook would be missing while its files are new. The
test therefore commits a copy of what the package is built from to a fresh repository and points
``try-repo`` at that: it checks the working tree as it is, committed or not.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict

import pytest

from conftest import ROOT
from test_command import CLEAN, SCALE

# What building the package needs, and the hook definitions.
PACKAGE_FILES = ["pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE", ".pre-commit-hooks.yaml"]
PACKAGE_FOLDERS = ["src", "docs/rules"]

_SEARCH_PATH = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
PRE_COMMIT = shutil.which("pre-commit", path=_SEARCH_PATH)
GIT = shutil.which("git")


def _environment(tmp_path: Path) -> Dict[str, str]:
    environment = dict(os.environ)
    environment.update(
        {
            "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),  # a fresh hook environment
            "GIT_AUTHOR_NAME": "test",
            "GIT_AUTHOR_EMAIL": "test@example.com",
            "GIT_COMMITTER_NAME": "test",
            "GIT_COMMITTER_EMAIL": "test@example.com",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,  # no signing or hooks from the user's own config
        }
    )
    return environment


def _git(*args: str, cwd: Path, environment: Dict[str, str]) -> None:
    assert GIT is not None
    subprocess.run([GIT, *args], cwd=cwd, env=environment, check=True, capture_output=True, timeout=120)


def _hook_repository(tmp_path: Path, environment: Dict[str, str]) -> Path:
    """A git repository holding what the package is built from, committed."""
    hook_repository = tmp_path / "hook-repository"
    hook_repository.mkdir()
    for name in PACKAGE_FILES:
        shutil.copy2(ROOT / name, hook_repository / name)
    for name in PACKAGE_FOLDERS:
        shutil.copytree(ROOT / name, hook_repository / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    _git("init", "-q", cwd=hook_repository, environment=environment)
    _git("add", "-A", cwd=hook_repository, environment=environment)
    _git("commit", "-q", "-m", "hook under test", cwd=hook_repository, environment=environment)
    return hook_repository


def _try_repo(
    hook_repository: Path, hook: str, project: Path, environment: Dict[str, str]
) -> subprocess.CompletedProcess:
    assert PRE_COMMIT is not None
    return subprocess.run(
        [PRE_COMMIT, "try-repo", str(hook_repository), hook, "--all-files"],
        cwd=project, env=environment, capture_output=True, text=True, timeout=600,
    )


@pytest.mark.skipif(PRE_COMMIT is None, reason="pre-commit is not installed (pip install -e '.[test]')")
@pytest.mark.skipif(GIT is None, reason="git is not installed, and pre-commit needs it")
def test_hook_fails_on_a_buggy_file_and_passes_once_fixed(tmp_path: Path) -> None:
    environment = _environment(tmp_path)
    hook_repository = _hook_repository(tmp_path, environment)

    project = tmp_path / "project"
    project.mkdir()
    _git("init", "-q", cwd=project, environment=environment)
    (project / "ops.py").write_text(SCALE, encoding="utf-8")
    (project / "clean.py").write_text(CLEAN, encoding="utf-8")
    _git("add", "-A", cwd=project, environment=environment)

    failed = _try_repo(hook_repository, "flake8-autograd", project, environment)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "ops.py:5:5: AGF001" in failed.stdout and "AGF005" not in failed.stdout  # AGF005 is a preview rule
    assert "clean.py" not in failed.stdout.split("- exit code: 1", 1)[-1]

    (project / "ops.py").write_text(CLEAN, encoding="utf-8")
    _git("add", "-A", cwd=project, environment=environment)
    passed = _try_repo(hook_repository, "flake8-autograd", project, environment)  # installed by now: quick
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Passed" in passed.stdout


# Only fixable findings: AGF001 on forward, AGF002 (preview) on backward.
FIXABLE = """\
import torch


class Double(torch.autograd.Function):
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(self, grad):
        return grad * 2
"""
# SCALE with its forward a staticmethod: only AGF005 (line 11, preview), which no fix repairs.
UNFIXABLE = SCALE.replace("    def forward", "    @staticmethod\n    def forward")


@pytest.mark.skipif(PRE_COMMIT is None, reason="pre-commit is not installed (pip install -e '.[test]')")
@pytest.mark.skipif(GIT is None, reason="git is not installed, and pre-commit needs it")
def test_fix_hook_repairs_what_the_check_hook_reports(tmp_path: Path) -> None:
    environment = _environment(tmp_path)
    hook_repository = _hook_repository(tmp_path, environment)
    project = tmp_path / "project"
    project.mkdir()
    _git("init", "-q", cwd=project, environment=environment)
    (project / "ops.py").write_text(FIXABLE, encoding="utf-8")
    (project / "scale.py").write_text(UNFIXABLE, encoding="utf-8")
    # Both hooks read the project's configuration: with preview on, AGF002 is reported and fixed too.
    (project / "pyproject.toml").write_text("[tool.flake8-autograd]\npreview = true\n", encoding="utf-8")
    _git("add", "-A", cwd=project, environment=environment)

    checked = _try_repo(hook_repository, "flake8-autograd", project, environment)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "ops.py:5:5: AGF001" in checked.stdout and "ops.py:9:18: AGF002" in checked.stdout

    fixed = _try_repo(hook_repository, "flake8-autograd-fix", project, environment)
    assert fixed.returncode == 1, fixed.stdout + fixed.stderr  # files modified, and findings remain
    assert "files were modified by this hook" in fixed.stdout
    repaired = (project / "ops.py").read_text(encoding="utf-8")
    assert repaired == FIXABLE.replace("    def forward", "    @staticmethod\n    def forward").replace("self", "ctx")
    assert "scale.py:11:5: AGF005" in fixed.stdout and "ops.py" not in fixed.stdout.split("- exit code: 1", 1)[-1]
    assert (project / "scale.py").read_text(encoding="utf-8") == UNFIXABLE

    _git("add", "-A", cwd=project, environment=environment)
    rechecked = _try_repo(hook_repository, "flake8-autograd", project, environment)
    assert "ops.py" not in rechecked.stdout.split("- exit code: 1", 1)[-1]  # only unfixable findings remain
    assert "scale.py:11:5: AGF005" in rechecked.stdout
    fixed_again = _try_repo(hook_repository, "flake8-autograd-fix", project, environment)
    assert "files were modified by this hook" not in fixed_again.stdout
