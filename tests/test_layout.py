"""The tree shows the pipeline (docs/architecture.md): every package says what it knows and may import,
no folder but rules/ (one module per code, by design) holds more than 15 modules, and no module is over
800 lines. The imports between layers are import-linter's to check (pyproject.toml, run in CI)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import List

import pytest

from conftest import ROOT

PACKAGE = ROOT / "src" / "flake8_autograd"
MAX_MODULES = 15
MAX_LINES = 800


def _packages() -> List[Path]:
    return sorted(init.parent for init in PACKAGE.rglob("__init__.py"))


@pytest.mark.parametrize("package", _packages(), ids=lambda path: path.relative_to(PACKAGE.parent).as_posix())
def test_every_package_opens_with_what_it_knows(package: Path) -> None:
    docstring = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8")))
    assert docstring and len(docstring.split()) >= 12, "a package's docstring says what it knows and may import"


@pytest.mark.parametrize("package", _packages(), ids=lambda path: path.relative_to(PACKAGE.parent).as_posix())
def test_no_folder_but_rules_holds_more_than_15_modules(package: Path) -> None:
    if package.name == "rules":
        return
    modules = [path for path in package.glob("*.py") if path.name != "__init__.py"]
    assert len(modules) <= MAX_MODULES, sorted(path.name for path in modules)


def test_no_module_is_over_800_lines() -> None:
    lengths = {
        path.relative_to(PACKAGE).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in PACKAGE.rglob("*.py")
    }
    assert len(lengths) > 50
    assert {name: count for name, count in lengths.items() if count > MAX_LINES} == {}


def test_the_layers_are_the_import_linter_contract() -> None:
    """The layers the contract names are the packages there are: a new top-level package gets a place."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    top = sorted(path.name for path in PACKAGE.iterdir() if (path / "__init__.py").exists())
    engine = sorted(path.name for path in (PACKAGE / "engine").iterdir() if (path / "__init__.py").exists())
    for name in top:
        assert f'"flake8_autograd.{name}"' in text, name
    layers = text.split('containers = ["flake8_autograd.engine"]', 1)[1].split("\n", 2)[1]
    assert sorted(layer.strip(' "') for layer in layers.split("=", 1)[1].strip(" []").split(",")) == engine
