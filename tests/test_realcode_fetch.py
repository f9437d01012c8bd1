"""The real-code benchmark's fetcher: safe unpacking, the sha256 check and the cache, on archives made here."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, List, Optional

import pytest

ROOT = Path(__file__).parent.parent


def _load_fetch() -> ModuleType:
    spec = importlib.util.spec_from_file_location("realcode_fetch", ROOT / "benchmarks" / "realcode" / "fetch.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


fetch = _load_fetch()


def _tar_gz(path: Path, members: Dict[str, bytes], links: Optional[Dict[str, str]] = None) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, content in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            tar.addfile(info)
    return path


def _files(folder: Path) -> List[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file())


def test_only_regular_python_files_are_unpacked(tmp_path: Path) -> None:
    archive = _tar_gz(
        tmp_path / "pkg-1.0.tar.gz",
        {"pkg-1.0/pkg/__init__.py": b"", "pkg-1.0/pkg/ops.py": b"x = 1\n", "pkg-1.0/README.md": b"readme"},
        links={"pkg-1.0/pkg/link.py": "/etc/passwd"},
    )
    target = tmp_path / "out"
    assert fetch.extract_python_files(archive, target) == 2
    assert _files(target) == ["pkg-1.0/pkg/__init__.py", "pkg-1.0/pkg/ops.py"]
    assert (target / "pkg-1.0" / "pkg" / "ops.py").read_bytes() == b"x = 1\n"


@pytest.mark.parametrize("evil", ["../evil.py", "pkg/../../evil.py", "/tmp/evil.py", "C:/evil.py"])
def test_a_member_outside_the_folder_refuses_the_whole_archive(tmp_path: Path, evil: str) -> None:
    archive = _tar_gz(tmp_path / "pkg.tar.gz", {"pkg/good.py": b"", evil: b"owned = True\n"})
    target = tmp_path / "area" / "out"
    with pytest.raises(fetch.FetchError, match="archive member"):
        fetch.extract_python_files(archive, target)
    assert not target.exists()  # checked before anything is written
    assert not (tmp_path / "area" / "evil.py").exists() and not (tmp_path / "evil.py").exists()


def test_wheel_members_are_checked_too(tmp_path: Path) -> None:
    wheel = tmp_path / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zipped:
        zipped.writestr("pkg/ops.py", "x = 1\n")
        zipped.writestr("pkg-1.0.dist-info/METADATA", "Name: pkg\n")
    assert fetch.extract_python_files(wheel, tmp_path / "good") == 1
    assert _files(tmp_path / "good") == ["pkg/ops.py"]
    with zipfile.ZipFile(wheel, "a") as zipped:
        zipped.writestr("..\\evil.py", "owned = True\n")
    with pytest.raises(fetch.FetchError, match="outside the folder"):
        fetch.extract_python_files(wheel, tmp_path / "bad")
    assert not (tmp_path / "bad").exists()


def test_sha256_check(tmp_path: Path) -> None:
    path = tmp_path / "file.tar.gz"
    path.write_bytes(b"content")
    fetch.verify_sha256(path, hashlib.sha256(b"content").hexdigest().upper())
    with pytest.raises(fetch.FetchError, match="sha256 mismatch"):
        fetch.verify_sha256(path, hashlib.sha256(b"other").hexdigest())


def _pypi_project(archive: Path, **changes: Any) -> Any:
    entry = {
        "name": "pkg",
        "source": "pypi",
        "requirement": "pkg==1.0",
        "file": archive.name,
        "sha256": hashlib.sha256(archive.read_bytes()).hexdigest(),
    }
    entry.update(changes)
    return fetch.parse_project(entry)


def test_pypi_download_with_another_hash_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = _tar_gz(tmp_path / "pkg-1.0.tar.gz", {"pkg-1.0/pkg/ops.py": b"x = 1\n"})
    project = _pypi_project(archive, sha256="0" * 64)
    commands: List[List[str]] = []

    def fake_pip(command: List[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        # Stands for pip: put the file in --dest, as pip download does.
        commands.append(command)
        shutil.copy(archive, command[command.index("--dest") + 1])
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(fetch.subprocess, "run", fake_pip)
    cache = tmp_path / "cache"
    with pytest.raises(fetch.FetchError, match="sha256 mismatch"):
        fetch.fetch_project(project, cache)
    assert commands and "--no-binary" in commands[0] and "pkg==1.0" in commands[0]
    assert not (cache / "pkg").exists()
    assert not (cache / fetch.ARCHIVES / archive.name).exists()

    good = _pypi_project(archive)
    assert fetch.fetch_project(good, cache) == "1 .py files"
    assert _files(cache / "pkg") == [fetch.MARKER, "pkg-1.0/pkg/ops.py"]
    assert fetch.fetch_project(good, cache) == "already fetched"
    assert len(commands) == 2


def _git(*args: str, cwd: Path) -> str:
    result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return result.stdout.strip()


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_github_entry_from_a_mirror_and_exit_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    work = tmp_path / "work"
    (work / "lib").mkdir(parents=True)
    (work / "lib" / "ops.py").write_text("x = 1\n")
    (work / "notes.txt").write_text("not python\n")
    _git("init", "-q", cwd=work)
    _git("add", ".", cwd=work)
    _git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "init", cwd=work)
    commit = _git("rev-parse", "HEAD", cwd=work)
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    _git("clone", "-q", "--bare", str(work), str(mirror / "owner+repo"), cwd=tmp_path)
    manifest = tmp_path / "projects.toml"
    manifest.write_text(
        f'[[project]]\nname = "repo"\nsource = "github"\nrepository = "owner/repo"\ncommit = "{commit}"\n\n'
        f'[[project]]\nname = "absent"\nsource = "github"\nrepository = "owner/absent"\ncommit = "{commit}"\n'
    )
    cache = tmp_path / "cache"
    arguments = ["--manifest", str(manifest), "--cache", str(cache), "--github-mirror", str(mirror)]

    assert fetch.main(arguments) == 1
    messages = capsys.readouterr().err.splitlines()
    assert messages == ["repo: ok (1 .py files)", "absent: FAILED: no git directory owner+absent in the mirror folder"]
    assert _files(cache / "repo") == [fetch.MARKER, "lib/ops.py"]

    assert fetch.main([*arguments, "--only", "repo"]) == 0
    assert capsys.readouterr().err.splitlines() == ["repo: ok (already fetched)"]
