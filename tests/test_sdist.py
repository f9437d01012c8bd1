"""The source distribution leaves the tests out (MANIFEST.in prunes them): they need the repository's
fixtures, benchmark data and examples, and run from a clone. An sdist holding some test modules and not
their conftest or fixtures would fail when run, so the choice is checked on a real build.

The sdist is built by setuptools' PEP 517 hook in a copy of what it is built from, in a subprocess, without
build isolation (no network): skipped when the installed setuptools is older than pyproject.toml requires.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tarfile
from typing import List, NamedTuple

import pytest

from conftest import ROOT

# Building takes seconds and needs setuptools >= the build requirement: CI's second stage installs it.
pytestmark = pytest.mark.slow

# What setuptools reads to build the sdist (setup.py and docs/ where the build uses them); tests/ is
# copied so that leaving it out is a real choice.
SOURCE_FILES = ["pyproject.toml", "MANIFEST.in", "README.md", "LICENSE", "CHANGELOG.md", "setup.py"]
SOURCE_FOLDERS = ["src", "tests", "docs"]


def setuptools_fits() -> bool:
    try:
        import setuptools
    except ImportError:  # pragma: no cover - setuptools is in every supported environment
        return False
    required = re.search(r'"setuptools>=(\d+)', (ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    major = int(setuptools.__version__.split(".")[0])
    return required is None or major >= int(required.group(1))


class Sdist(NamedTuple):
    names: List[str]  # relative to the archive's top folder
    metadata: str  # PKG-INFO


@pytest.fixture(scope="module")
def sdist(tmp_path_factory: pytest.TempPathFactory) -> Sdist:
    if not setuptools_fits():
        pytest.skip("the installed setuptools is older than pyproject.toml's build requirement")
    source = tmp_path_factory.mktemp("source")
    for name in SOURCE_FILES:
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, source / name)
    for name in SOURCE_FOLDERS:
        if (ROOT / name).is_dir():
            shutil.copytree(
                ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", ".pytest_cache")
            )
    build = subprocess.run(
        [sys.executable, "-c", "import setuptools.build_meta as b; b.build_sdist('dist')"],
        cwd=source, capture_output=True, text=True, timeout=300,
    )
    assert build.returncode == 0, build.stderr
    (archive,) = (source / "dist").glob("*.tar.gz")
    root = archive.name[: -len(".tar.gz")]
    with tarfile.open(archive) as opened:
        names = opened.getnames()
        metadata = opened.extractfile(f"{root}/PKG-INFO")
        assert metadata is not None
        text = metadata.read().decode("utf-8")
    return Sdist([name[len(root) + 1:] for name in names if name.startswith(root + "/")], text)


def test_sdist_leaves_the_tests_out(sdist: Sdist) -> None:
    assert not [name for name in sdist.names if name == "tests" or name.startswith("tests/")]


def test_sdist_holds_the_package_and_its_documents(sdist: Sdist) -> None:
    package = ROOT / "src" / "flake8_autograd"
    modules = {
        path.relative_to(ROOT).as_posix() for path in package.rglob("*.py") if "__pycache__" not in path.parts
    }
    assert modules <= set(sdist.names), sorted(modules - set(sdist.names))
    assert {"pyproject.toml", "PKG-INFO", "README.md", "LICENSE", "CHANGELOG.md"} <= set(sdist.names)


def test_metadata_names_the_project_urls(sdist: Sdist) -> None:
    """Homepage, Documentation, Changelog and Issues, as absolute URLs (the package index shows them)."""
    urls = dict(re.findall(r"^Project-URL: (\w+), (\S+)$", sdist.metadata, re.MULTILINE))
    assert {"Homepage", "Documentation", "Changelog", "Issues"} <= set(urls)
    assert all(url.startswith("https://") for url in urls.values()), urls
