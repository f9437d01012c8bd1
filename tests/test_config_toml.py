"""The command reads pyproject.toml on every supported Python: tomllib from 3.11 on, the tomli backport
before it, which is therefore a runtime dependency for Python < 3.11 (not only a test one)."""

from __future__ import annotations

import sys
import types
from importlib import metadata
from pathlib import Path
from typing import Any, Dict, List

import pytest
from packaging.requirements import Requirement

from conftest import ROOT
from flake8_autograd.adapters.command import config
from flake8_autograd.adapters.command.config import ConfigError, find_config

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the runtime dependencies install tomli before Python 3.11
    import tomli as tomllib


def _tomli_requirements(requirements: List[str]) -> List[Requirement]:
    return [req for req in map(Requirement, requirements) if req.name == "tomli"]


def _environment(python: str) -> Dict[str, str]:
    return {"python_version": python, "python_full_version": f"{python}.0", "extra": ""}


def test_pyproject_declares_tomli_as_a_runtime_dependency_before_311() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    [tomli] = _tomli_requirements(project["dependencies"])
    assert tomli.marker is not None
    assert [tomli.marker.evaluate(_environment(python)) for python in ("3.9", "3.10", "3.11", "3.13")] == [
        True, True, False, False,
    ]
    oldest = project["requires-python"].lstrip(">=")
    assert tomli.marker.evaluate(_environment(oldest))


def test_installed_metadata_requires_tomli_without_an_extra() -> None:
    """What pip resolves: tomli for Python < 3.11 whatever extras are asked for (or none)."""
    requirements = _tomli_requirements(metadata.requires("flake8-autograd") or [])
    runtime = [str(req) for req in requirements if "extra" not in str(req.marker)]
    assert runtime, f"no runtime tomli in {[str(req) for req in requirements]} (reinstall the package?)"


def test_loader_picks_tomli_before_311(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_tomli = types.ModuleType("tomli")

    def loads(text: str) -> Dict[str, Any]:
        return {}

    fake_tomli.loads = loads  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tomli", fake_tomli)
    monkeypatch.setattr(sys, "version_info", (3, 10, 13, "final", 0))
    assert config._toml_loader() is loads


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib is in the standard library from Python 3.11")
def test_loader_picks_tomllib_from_311() -> None:
    assert config._toml_loader() is tomllib.loads


def test_a_missing_tomli_before_311_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tomli", None)  # import tomli raises ImportError
    monkeypatch.setattr(sys, "version_info", (3, 10, 13, "final", 0))
    with pytest.raises(ConfigError, match="'tomli' package on Python < 3.11"):
        config._toml_loader()


def test_reads_a_pyproject_toml(tmp_path: Path) -> None:
    """End to end on the running Python (tomli on the oldest supported one): the tool's table is read, and a
    pyproject that only lists flake8-autograd as a dependency has none (not an error)."""
    configured = tmp_path / "configured"
    configured.mkdir()
    (configured / "pyproject.toml").write_text(
        '[project]\nname = "demo"\n\n[tool.flake8-autograd]\nselect = ["AGF001", "AGF004"]\npreview = true\n',
        encoding="utf-8",
    )
    found = find_config(configured)
    assert found is not None
    assert found.lists == {"select": ("AGF001", "AGF004")}
    assert found.booleans == {"preview": True}

    dependent = tmp_path / "dependent"
    dependent.mkdir()
    (dependent / "pyproject.toml").write_text(
        '[project]\nname = "user"\ndependencies = ["flake8-autograd"]\n', encoding="utf-8"
    )
    assert find_config(dependent) is None
