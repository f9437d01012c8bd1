"""Fetch the real-code benchmark's projects: the Python sources of each pinned project, into a cache.

    python benchmarks/realcode/fetch.py [--cache DIR] [--only NAME,...] [--github-mirror DIR] [--manifest FILE]

Reads ``projects.toml`` beside this file (one ``[[project]]`` table per project) and, for each project,
puts its ``*.py`` files under ``<cache>/<name>/`` (default cache ``~/.cache/flake8-autograd-realcode``,
outside the repository):

- ``source = "pypi"``: ``pip download --no-deps`` of the exact ``requirement`` (``--only-binary :all:``
  when ``file`` is a wheel, ``--no-binary :all:`` for an sdist); the downloaded file must be ``file`` and
  its sha256 must be ``sha256``, or the project is refused. pip reads an sdist's metadata, and the
  ``setup.py`` of many of these projects imports torch: the first try uses ``--no-build-isolation``, so
  run this with an interpreter that has torch and setuptools installed (an isolated build comes second).
- ``source = "github"``: the tarball of ``commit`` of ``repository`` (``owner/name``), over HTTPS, or,
  with ``--github-mirror DIR``, ``git archive <commit>`` of the bare git directory ``DIR/<owner>+<name>``
  (no network).

Only regular ``*.py`` members are unpacked, and an archive with an absolute member name or a ``..``
component is refused as a whole, so nothing is ever written outside the project's folder. A project's
folder appears only once complete, with a marker file holding its pin: a later run skips it while the
pin is unchanged and fetches it anew when the manifest's pin changes. One line per project on standard
error; exit status 1 when any project failed.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Dict, Iterator, List, Optional, Sequence, Set, Tuple

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "projects.toml"
DEFAULT_CACHE = Path.home() / ".cache" / "flake8-autograd-realcode"
MARKER = ".realcode-pin"
ARCHIVES = ".archives"  # downloaded files, kept so that a changed pin or a lost folder needs no new download
GITHUB_TARBALL = "https://codeload.github.com/{repository}/tar.gz/{commit}"
DOWNLOAD_TIMEOUT = 300  # seconds, per network operation
# Reading an sdist's metadata runs its setup.py: these tell the CUDA projects' ones not to compile or to
# look for a CUDA toolkit (only the file is wanted, nothing is built or installed).
SKIP_CUDA_BUILD = {
    "FLASH_ATTENTION_SKIP_CUDA_BUILD": "TRUE",
    "MAMBA_SKIP_CUDA_BUILD": "TRUE",
    "CAUSAL_CONV1D_SKIP_CUDA_BUILD": "TRUE",
}


class FetchError(Exception):
    """A project that could not be fetched; the message is the one-line reason."""


@dataclass(frozen=True)
class Project:
    name: str
    source: str
    requirement: str = ""
    file: str = ""
    sha256: str = ""
    repository: str = ""
    commit: str = ""

    @property
    def pin(self) -> str:
        """What identifies the fetched content exactly: written to the marker, compared on later runs."""
        if self.source == "pypi":
            return f"pypi {self.requirement} {self.file} {self.sha256}"
        return f"github {self.repository} {self.commit}"


def load_toml(path: Path) -> Dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef, import-not-found, unused-ignore]
    with path.open("rb") as stream:
        data: Dict[str, Any] = tomllib.load(stream)
    return data


def _is_hex(text: str, length: int) -> bool:
    return len(text) == length and all(char in "0123456789abcdef" for char in text.lower())


def parse_project(entry: Dict[str, Any]) -> Project:
    """One manifest table as a Project, or FetchError naming what is wrong with it."""
    name = str(entry.get("name", ""))
    # The name is a folder of the cache: one plain path component.
    if not name or name.startswith(".") or "/" in name or "\\" in name:
        raise FetchError(f"bad project name {name!r}")
    source = entry.get("source")
    if source == "pypi":
        project = Project(
            name, "pypi", str(entry.get("requirement", "")), str(entry.get("file", "")), str(entry.get("sha256", ""))
        )
        if "==" not in project.requirement:
            raise FetchError(f"requirement {project.requirement!r} is not pinned with ==")
        if not project.file.endswith((".whl", ".tar.gz", ".zip")) or "/" in project.file:
            raise FetchError(f"file {project.file!r} is neither a wheel nor an sdist (.tar.gz, .zip)")
        if not _is_hex(project.sha256, 64):
            raise FetchError("sha256 is not 64 hexadecimal digits")
        return project
    if source == "github":
        repository, commit = str(entry.get("repository", "")), str(entry.get("commit", ""))
        project = Project(name, "github", repository=repository, commit=commit)
        parts = project.repository.split("/")
        if len(parts) != 2 or not all(parts) or any(part in (".", "..") for part in parts):
            raise FetchError(f"repository {project.repository!r} is not owner/name")
        if not _is_hex(project.commit, 40):
            raise FetchError("commit is not 40 hexadecimal digits")
        return project
    raise FetchError(f"unknown source {source!r} (pypi or github)")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_sha256(path: Path, expected: str) -> None:
    """Refuse a file whose sha256 is not the manifest's."""
    actual = sha256_of(path)
    if actual != expected.lower():
        raise FetchError(f"sha256 mismatch for {path.name}: expected {expected.lower()}, got {actual}")


def safe_member_path(name: str) -> PurePosixPath:
    """The member's path relative to the target folder; FetchError for an absolute name or a ``..`` part."""
    normalized = name.replace("\\", "/")
    path = PurePosixPath(normalized)
    if path.is_absolute() or (len(normalized) > 1 and normalized[1] == ":"):
        raise FetchError(f"archive member with an absolute path: {name!r}")
    if ".." in path.parts:
        raise FetchError(f"archive member leading outside the folder: {name!r}")
    return path


def _python_members(archive: Path, data: Optional[bytes] = None) -> Iterator[Tuple[str, bytes]]:
    """(name, content) of every regular ``*.py`` member of a .tar.gz, .tar, .zip or .whl (or of tar bytes)."""
    if data is not None or archive.name.endswith((".tar.gz", ".tgz", ".tar")):
        opened = tarfile.open(fileobj=io.BytesIO(data)) if data is not None else tarfile.open(archive)
        with opened as tar:
            for member in tar:
                # Only regular files: links and devices are never created.
                if member.isfile() and member.name.endswith(".py"):
                    stream = tar.extractfile(member)
                    if stream is not None:
                        yield member.name, stream.read()
    elif archive.name.endswith((".zip", ".whl")):
        with zipfile.ZipFile(archive) as zipped:
            for info in zipped.infolist():
                if not info.is_dir() and info.filename.endswith(".py"):
                    yield info.filename, zipped.read(info)
    else:
        raise FetchError(f"cannot unpack {archive.name} (.tar.gz, .zip or .whl)")


def extract_python_files(archive: Path, target: Path, data: Optional[bytes] = None) -> int:
    """Write the archive's ``*.py`` files under ``target`` (which must not exist yet); the number written.

    Every member name is checked before anything is written, so a refused archive leaves nothing behind.
    """
    members = list(_python_members(archive, data))
    paths = [safe_member_path(name) for name, _ in members]
    root = target.resolve()
    written = 0
    target.mkdir(parents=True)
    for path, (_, content) in zip(paths, members):
        destination = (root / path).resolve()
        # Belt and braces: the resolved path must still lie in the folder.
        if destination == root or root not in destination.parents:
            raise FetchError(f"archive member leading outside the folder: {str(path)!r}")
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes(content)
        written += 1
    return written


def wheel_options(file: str) -> List[str]:
    """pip options that select this wheel's tags, whatever the running interpreter: the file, not a neighbour.

    None for a pure-Python wheel (any interpreter takes it); otherwise the wheel's platforms, ABIs,
    implementation and Python version, as its name gives them (``name-version[-build]-python-abi-platform``).
    """
    parts = file[: -len(".whl")].split("-")
    if len(parts) not in (5, 6):
        raise FetchError(f"{file} is not a wheel's file name")
    python_tags, abi_tags, platform_tags = (tags.split(".") for tags in parts[-3:])
    if platform_tags == ["any"]:
        return []
    options = [option for platform in platform_tags for option in ("--platform", platform)]
    options += [option for abi in abi_tags for option in ("--abi", abi)]
    implementation, version = python_tags[0][:2], python_tags[0][2:]
    options += ["--implementation", implementation, "--python-version", version]
    return options


def download_pypi(project: Project, archives: Path) -> Path:
    """The project's file, downloaded with pip (or already in ``archives``), its sha256 checked."""
    kept = archives / project.file
    if kept.is_file():
        try:
            verify_sha256(kept, project.sha256)
            return kept
        except FetchError:
            kept.unlink()  # a damaged or stale download: fetch it anew, and check that one
    if project.file.endswith(".whl"):
        binary = ["--only-binary", ":all:", *wheel_options(project.file)]
    else:
        binary = ["--no-binary", ":all:"]
    archives.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=archives) as scratch:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", *binary]
        command += ["--dest", scratch, project.requirement]
        attempts = [command]
        if not project.file.endswith(".whl"):
            # pip reads an sdist's metadata, and many setup.py import torch, which an isolated build lacks (and
            # installing it there is a long download): first with this interpreter's packages, which fails fast
            # when the build backend is missing, then isolated.
            attempts.insert(0, [*command[:4], "--no-build-isolation", *command[4:]])
        failure = ""
        for attempt in attempts:
            try:
                environment = {**os.environ, **SKIP_CUDA_BUILD}
                result = subprocess.run(
                    attempt, capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT, env=environment
                )
            except subprocess.TimeoutExpired:
                failure = f"pip download timed out after {DOWNLOAD_TIMEOUT} s"
                continue
            if result.returncode == 0:
                failure = ""
                break
            lines = [line for line in result.stderr.splitlines() if line.strip()]
            failure = f"pip download failed: {lines[-1].strip() if lines else result.returncode}"
        if failure:
            raise FetchError(failure)
        downloaded = Path(scratch) / project.file
        if not downloaded.is_file():
            found = ", ".join(sorted(entry.name for entry in Path(scratch).iterdir())) or "nothing"
            raise FetchError(f"pip downloaded {found}, not {project.file}")
        verify_sha256(downloaded, project.sha256)
        shutil.move(str(downloaded), str(kept))
    return kept


def download_github(project: Project, archives: Path) -> Path:
    """The tarball of the project's commit, over HTTPS (or already in ``archives``)."""
    kept = archives / f"{project.repository.replace('/', '+')}-{project.commit}.tar.gz"
    if kept.is_file():
        return kept
    archives.mkdir(parents=True, exist_ok=True)
    url = GITHUB_TARBALL.format(repository=project.repository, commit=project.commit)
    partial = kept.with_name(kept.name + ".part")
    try:
        with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT) as response, partial.open("wb") as out:
            shutil.copyfileobj(response, out)
        # Check that the whole tarball arrived before keeping it.
        with tarfile.open(partial) as tar:
            for _ in tar:
                pass
    except (OSError, tarfile.TarError) as error:
        partial.unlink(missing_ok=True)
        raise FetchError(f"download of {url} failed: {error}") from None
    partial.replace(kept)
    return kept


def archive_from_mirror(project: Project, mirror: Path) -> bytes:
    """``git archive`` of the project's commit from the bare git directory ``mirror/<owner>+<name>``."""
    git_dir = mirror / project.repository.replace("/", "+")
    if not git_dir.is_dir():
        raise FetchError(f"no git directory {git_dir.name} in the mirror folder")
    # Only the Python files: a mirror may lack large files (data, weights) that a whole archive would need.
    command = ["git", "--git-dir", str(git_dir), "archive", "--format=tar", project.commit, "--", "*.py"]
    try:
        result = subprocess.run(command, capture_output=True, timeout=DOWNLOAD_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise FetchError(f"git archive failed: {error}") from None
    if result.returncode != 0:
        lines = [line for line in result.stderr.decode(errors="replace").splitlines() if line.strip()]
        raise FetchError(f"git archive failed: {lines[-1].strip() if lines else result.returncode}")
    return result.stdout


def fetch_project(project: Project, cache: Path, mirror: Optional[Path] = None) -> str:
    """Put the project's ``*.py`` files in ``cache/<name>``; what was done, as a short phrase."""
    folder = cache / project.name
    marker = folder / MARKER
    if marker.is_file() and marker.read_text(encoding="utf-8").strip() == project.pin:
        return "already fetched"
    archives = cache / ARCHIVES
    data: Optional[bytes] = None
    if project.source == "pypi":
        archive = download_pypi(project, archives)
    elif mirror is not None:
        archive = Path(f"{project.commit}.tar")
        data = archive_from_mirror(project, mirror)
    else:
        archive = download_github(project, archives)
    # Unpack beside the folder and move it in place only when complete: a folder in the cache is whole.
    partial = cache / f".{project.name}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    try:
        count = extract_python_files(archive, partial, data)
        (partial / MARKER).write_text(project.pin + "\n", encoding="utf-8")
        shutil.rmtree(folder, ignore_errors=True)
        partial.rename(folder)
    except (OSError, tarfile.TarError, zipfile.BadZipFile) as error:
        raise FetchError(f"unpacking {archive.name} failed: {error}") from None
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return f"{count} .py files"


def select(projects: Sequence[Project], only: Optional[str]) -> List[Project]:
    if not only:
        return list(projects)
    wanted = {name.strip() for name in only.split(",") if name.strip()}
    unknown = wanted - {project.name for project in projects}
    if unknown:
        raise FetchError(f"not in the manifest: {', '.join(sorted(unknown))}")
    return [project for project in projects if project.name in wanted]


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--manifest", type=Path, default=MANIFEST, help="the projects (default: projects.toml here)")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help=f"cache folder (default: {DEFAULT_CACHE})")
    parser.add_argument("--only", help="comma-separated names of the projects to fetch (default: all)")
    parser.add_argument(
        "--github-mirror", type=Path, help="folder of bare git directories <owner>+<name> to take github entries from"
    )
    args = parser.parse_args(argv)
    try:
        entries = load_toml(args.manifest).get("project", [])
    except (OSError, ValueError) as error:
        print(f"fetch: cannot read {args.manifest}: {error}", file=sys.stderr)
        return 2
    failures = 0
    projects: List[Project] = []
    seen: Set[str] = set()
    for index, entry in enumerate(entries):
        try:
            project = parse_project(entry if isinstance(entry, dict) else {})
            if project.name in seen:
                raise FetchError(f"project name {project.name!r} appears twice")
            seen.add(project.name)
            projects.append(project)
        except FetchError as error:
            label = entry.get("name", f"#{index}") if isinstance(entry, dict) else f"#{index}"
            print(f"{label}: FAILED: {error}", file=sys.stderr)
            failures += 1
    try:
        chosen = select(projects, args.only)
    except FetchError as error:
        print(f"fetch: {error}", file=sys.stderr)
        return 2
    args.cache.mkdir(parents=True, exist_ok=True)
    for project in chosen:
        try:
            done = fetch_project(project, args.cache, args.github_mirror)
            print(f"{project.name}: ok ({done})", file=sys.stderr)
        except FetchError as error:
            print(f"{project.name}: FAILED: {error}", file=sys.stderr)
            failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
