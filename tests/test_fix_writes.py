"""How ``--fix`` writes a file: what it keeps of the file, what it refuses, what it reports when it cannot.

A fixed file keeps its owner, group, extended attributes, hard links and mode; a read-only file is left
as it is; a file that cannot be written keeps its findings in the report; a file named twice (through
a symbolic link) is fixed and counted once. Ownership tests need root (to hand a file to another user)
and are skipped without it.
"""

from __future__ import annotations

import errno
import io
import json
import os
import shutil
import stat
import subprocess
import tempfile
import textwrap
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

from flake8_autograd.adapters.command import main as cli
from flake8_autograd.adapters.command import fixer
from flake8_autograd.adapters.command.runner import CheckOptions
from test_command import COMMAND, run

# The LegacyRelu class of examples/: AGF001 (forward is not a staticmethod) and AGF002 (its first
# argument is ``this``), both fixable, and nothing else. AGF002 is a preview rule: every run here turns
# preview on, so that both fixes are written.
LEGACY_RELU = textwrap.dedent(
    """\
    import torch


    class LegacyRelu(torch.autograd.Function):
        def forward(this, x):
            this.save_for_backward(x)
            return x.clamp(min=0)

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * (x > 0)
    """
)
LEGACY_RELU_FIXED = LEGACY_RELU.replace("    def forward(this, x):", "    @staticmethod\n    def forward(ctx, x):")
LEGACY_RELU_FIXED = LEGACY_RELU_FIXED.replace("this.save_for_backward", "ctx.save_for_backward")
OTHER_USER = 1000  # the owner a file is handed to; need not exist in the user database
NOBODY = 65534

needs_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")


def legacy_file(folder: Path, name: str = "relu.py") -> Path:
    path = folder / name
    path.write_text(LEGACY_RELU, encoding="utf-8")
    return path


def assert_fixed_everything(result: subprocess.CompletedProcess[str]) -> None:
    assert (result.returncode, result.stdout) == (0, ""), result.stderr
    assert "fixed 2 of 2 findings in 1 file" in result.stderr


# -- what a fixed file keeps ----------------------------------------------------------------------------


@needs_root
def test_owner_group_and_mode_are_kept(tmp_path: Path) -> None:
    path = legacy_file(tmp_path)
    os.chown(path, OTHER_USER, OTHER_USER)
    os.chmod(path, 0o640)
    assert_fixed_everything(run("--preview", "--fix", path.name, cwd=tmp_path))
    assert path.read_text(encoding="utf-8") == LEGACY_RELU_FIXED
    status = os.stat(path)
    assert (status.st_uid, status.st_gid, stat.S_IMODE(status.st_mode)) == (OTHER_USER, OTHER_USER, 0o640)


@needs_root
def test_a_group_other_than_the_users_own_is_kept(tmp_path: Path) -> None:
    path = legacy_file(tmp_path)
    os.chown(path, os.geteuid(), NOBODY)  # the user's own file, in a shared group
    assert_fixed_everything(run("--preview", "--fix", path.name, cwd=tmp_path))
    assert os.stat(path).st_gid == NOBODY
    assert path.read_text(encoding="utf-8") == LEGACY_RELU_FIXED


def test_extended_attributes_are_kept(tmp_path: Path) -> None:
    path = legacy_file(tmp_path)
    try:
        os.setxattr(path, "user.origin", b"kept")
    except (AttributeError, OSError) as error:  # no xattrs on this system or filesystem
        pytest.skip(f"extended attributes are not available here: {error}")
    assert_fixed_everything(run("--preview", "--fix", path.name, cwd=tmp_path))
    assert path.read_text(encoding="utf-8") == LEGACY_RELU_FIXED
    assert os.getxattr(path, "user.origin") == b"kept"


def test_hard_links_keep_sharing_the_fixed_file(tmp_path: Path) -> None:
    path = legacy_file(tmp_path)
    other_name = tmp_path / "alias.py"
    os.link(path, other_name)
    inode = os.stat(path).st_ino
    assert_fixed_everything(run("--preview", "--fix", path.name, cwd=tmp_path))
    assert os.stat(path).st_ino == os.stat(other_name).st_ino == inode
    assert other_name.read_text(encoding="utf-8") == LEGACY_RELU_FIXED


def test_a_plain_file_is_still_replaced_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing about the file's identity would be lost: it is replaced by a complete new file."""
    path = legacy_file(tmp_path)
    replaced = []
    real_replace = os.replace

    def recording_replace(source: str, target: str) -> None:
        replaced.append(Path(source).read_text(encoding="utf-8"))
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", recording_replace)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["--preview", "--fix", path.name]) == 0
    assert replaced == [LEGACY_RELU_FIXED]
    assert sorted(entry.name for entry in tmp_path.iterdir()) == [path.name]


def test_a_file_name_too_long_for_a_temporary_name_is_fixed(tmp_path: Path) -> None:
    name_max = os.pathconf(tmp_path, "PC_NAME_MAX")
    path = legacy_file(tmp_path, "r" * (name_max - len(".py")) + ".py")
    assert_fixed_everything(run("--preview", "--fix", path.name, cwd=tmp_path))
    assert path.read_text(encoding="utf-8") == LEGACY_RELU_FIXED
    assert sorted(entry.name for entry in tmp_path.iterdir()) == [path.name]  # no temporary file left


# -- what is refused, and what is reported then ----------------------------------------------------------


def test_a_read_only_file_is_left_as_it_is_and_its_findings_reported(tmp_path: Path) -> None:
    path = legacy_file(tmp_path)
    os.chmod(path, 0o444)  # root may write it all the same: the mode must be enough to refuse
    result = run("--preview", "--fix", "--format", "json", path.name, cwd=tmp_path)
    assert result.returncode == 2
    assert f"{path.name}: is read-only; left as it is" in result.stderr
    assert "fixed 0 of 2 findings in 0 files" in result.stderr
    reports = json.loads(result.stdout)
    assert [(report["code"], report["fixable"]) for report in reports] == [("AGF001", True), ("AGF002", True)]
    assert path.read_text(encoding="utf-8") == LEGACY_RELU
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o444


def test_a_file_changed_while_it_was_fixed_keeps_its_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = legacy_file(tmp_path)
    edited = LEGACY_RELU + "# edited meanwhile\n"
    real_fix_source = fixer.fix_source

    def fix_then_edit(data: bytes, name: str, options: CheckOptions) -> fixer.FixedFile:
        result = real_fix_source(data, name, options)
        path.write_text(edited, encoding="utf-8")  # someone saves the file while the fixes are computed
        return result

    monkeypatch.setattr(fixer, "fix_source", fix_then_edit)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["--preview", "--fix", path.name]) == 2
    output = capsys.readouterr()
    assert [line.split(" ", 1)[1].split()[0] for line in output.out.splitlines()] == ["AGF001", "AGF002"]
    assert f"{path.name}: changed while it was being fixed; left as it is" in output.err
    assert "fixed 0 of 2 findings in 0 files" in output.err
    assert path.read_text(encoding="utf-8") == edited


@pytest.fixture
def folder_for_nobody() -> Iterator[Path]:
    """A folder outside pytest's (which only root may enter), owned by ``nobody``."""
    folder = Path(tempfile.mkdtemp(prefix="agf-nobody-"))
    try:
        os.chown(folder, NOBODY, NOBODY)
        yield folder
    finally:
        os.chmod(folder, 0o755)
        shutil.rmtree(folder)


def run_as_nobody(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The command run by ``nobody``. Where ``setpriv`` is, it keeps the right to read any file (the
    interpreter may live in root's home), which gives no right to write one."""
    setpriv = shutil.which("setpriv")
    as_nobody = [f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    keep_reading = ["--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search"]
    command = [setpriv, *as_nobody, *keep_reading, COMMAND, *args] if setpriv else [COMMAND, *args]
    try:
        result = subprocess.run(
            command, cwd=cwd, capture_output=True, text=True, timeout=300, **({} if setpriv else _NOBODY)
        )
    except PermissionError as error:
        pytest.skip(f"cannot run the command as another user: {error}")
    if result.returncode not in (0, 1, 2) or "Traceback" in result.stderr or "Fatal Python error" in result.stderr:
        pytest.skip(f"the command cannot run as another user here: {result.stderr[-500:]}")
    return result


_NOBODY: Dict[str, Any] = {"user": NOBODY, "group": NOBODY, "extra_groups": []}


@needs_root
def test_a_writable_file_in_a_read_only_folder_is_fixed_in_place(folder_for_nobody: Path) -> None:
    path = legacy_file(folder_for_nobody)
    os.chown(path, NOBODY, NOBODY)
    os.chmod(folder_for_nobody, 0o555)  # no temporary file can be made beside it
    assert_fixed_everything(run_as_nobody("--preview", "--fix", path.name, cwd=folder_for_nobody))
    assert path.read_text(encoding="utf-8") == LEGACY_RELU_FIXED


@needs_root
def test_a_file_the_user_may_not_write_is_refused_with_its_findings(folder_for_nobody: Path) -> None:
    path = legacy_file(folder_for_nobody)  # root's, 0644: nobody may read it but not write it
    result = run_as_nobody("--preview", "--fix", path.name, cwd=folder_for_nobody)
    assert result.returncode == 2
    assert f"{path.name}: is read-only; left as it is" in result.stderr
    assert [line.split(" ", 1)[1].split()[0] for line in result.stdout.splitlines()] == ["AGF001", "AGF002"]
    assert "fixed 0 of 2 findings in 0 files" in result.stderr
    assert path.read_text(encoding="utf-8") == LEGACY_RELU


def test_the_fixer_reports_the_findings_of_a_file_it_could_not_write(tmp_path: Path) -> None:
    """In-process, for any write error: the findings are those of the file as it stands."""
    path = legacy_file(tmp_path)
    os.chmod(path, 0o555)
    result = fixer.fix_file(str(path), CheckOptions(preview=True, unsafe_fixes=True), write=True)
    assert result.fixed == 0 and result.before == result.after == LEGACY_RELU.encode()
    assert result.outcome.error == "is read-only; left as it is"
    assert [(report.code, report.fixable) for report in result.outcome.reports] == [
        ("AGF001", True),
        ("AGF002", True),
    ]


def test_a_write_in_place_that_fails_puts_the_old_bytes_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = legacy_file(tmp_path)
    os.link(path, tmp_path / "alias.py")  # a second name: written in place
    real_write = fixer._write_from_start
    calls = []

    def write_half_then_fail(stream: io.FileIO, data: bytes) -> None:
        calls.append(data)
        if len(calls) > 1:
            real_write(stream, data)
            return
        real_write(stream, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(fixer, "_write_from_start", write_half_then_fail)
    result = fixer.fix_file(str(path), CheckOptions(preview=True, unsafe_fixes=True), write=True)
    assert len(calls) == 2
    assert path.read_text(encoding="utf-8") == LEGACY_RELU
    assert result.outcome.error == f"cannot write the fixes: {os.strerror(errno.ENOSPC)}"
    assert [report.code for report in result.outcome.reports] == ["AGF001", "AGF002"]


# -- a file named twice ----------------------------------------------------------------------------------


@pytest.fixture
def file_and_link(tmp_path: Path) -> Path:
    legacy_file(tmp_path, "a.py")
    try:
        (tmp_path / "b.py").symlink_to("a.py")
    except OSError as error:
        if error.errno not in (errno.EPERM, errno.ENOSYS, errno.EOPNOTSUPP):
            raise
        pytest.skip("symbolic links are not available here")
    return tmp_path


def test_a_file_and_a_link_to_it_are_fixed_and_counted_once(file_and_link: Path) -> None:
    shown = run("--preview", "--diff", "a.py", "b.py", cwd=file_and_link)
    assert "would fix 2 of 2 findings in 1 file" in shown.stderr
    assert shown.stdout.count("--- a/") == 1 and "--- a/a.py\n" in shown.stdout
    fixed = run("--preview", "--fix", "a.py", "b.py", cwd=file_and_link)
    assert_fixed_everything(fixed)
    assert (file_and_link / "a.py").read_text(encoding="utf-8") == LEGACY_RELU_FIXED
    assert (file_and_link / "b.py").is_symlink()


def test_a_file_and_a_link_to_it_are_checked_once_under_the_first_name(file_and_link: Path) -> None:
    result = run("--preview", "b.py", ".", cwd=file_and_link)
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == ["b.py", "b.py"]


def test_a_file_and_a_hard_link_to_it_are_fixed_and_counted_once(tmp_path: Path) -> None:
    legacy_file(tmp_path, "a.py")
    os.link(tmp_path / "a.py", tmp_path / "b.py")
    result = run("--preview", "--fix", "-j", "2", "b.py", "a.py", cwd=tmp_path)
    assert_fixed_everything(result)
    assert (tmp_path / "a.py").read_text(encoding="utf-8") == LEGACY_RELU_FIXED


# -- links that lead elsewhere ---------------------------------------------------------------------------


def symlink(link: Path, target: str) -> None:
    try:
        link.symlink_to(target)
    except OSError as error:
        if error.errno not in (errno.EPERM, errno.ENOSYS, errno.EOPNOTSUPP):
            raise
        pytest.skip("symbolic links are not available here")


def refusals(result: subprocess.CompletedProcess[str]) -> List[str]:
    """What stderr says about each file, without the summary (which --fix and --diff word differently)."""
    return [line for line in result.stderr.splitlines() if line.startswith("flake8-autograd: ")]


@pytest.fixture
def project_with_a_vendored_link(tmp_path: Path) -> Path:
    """``project/pkg/vendored.py``, a link to a file outside the project; ``project/pkg/own.py``, its own."""
    legacy_file(tmp_path, "vendored.py")
    package = tmp_path / "project" / "pkg"
    package.mkdir(parents=True)
    legacy_file(package, "own.py")
    symlink(package / "vendored.py", "../../vendored.py")
    return tmp_path / "project"


def test_a_link_met_in_a_folder_is_not_followed_out_of_it(project_with_a_vendored_link: Path) -> None:
    project = project_with_a_vendored_link
    outside = project.parent / "vendored.py"
    shown = run("--preview", "--diff", ".", cwd=project)
    fixed = run("--preview", "--fix", ".", cwd=project)
    assert shown.returncode == fixed.returncode == 2
    link = os.path.join(".", "pkg", "vendored.py")
    expected = [
        f"flake8-autograd: {link}: a link out of the folder ., left as it is: --fix and --diff change the file "
        "a link met in a folder leads to only when it is inside that folder, or the link is named"
    ]
    assert refusals(shown) == refusals(fixed) == expected
    assert shown.stdout.count("--- a/") == 1 and "--- a/pkg/own.py\n" in shown.stdout
    assert "would fix 2 of 4 findings in 1 file" in shown.stderr
    assert "fixed 2 of 4 findings in 1 file" in fixed.stderr
    assert [line.split(":")[0] for line in fixed.stdout.splitlines()] == [link, link]  # its findings, still
    assert outside.read_text(encoding="utf-8") == LEGACY_RELU
    assert (project / "pkg" / "own.py").read_text(encoding="utf-8") == LEGACY_RELU_FIXED


def test_a_link_within_the_current_folder_but_out_of_the_folder_walked_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    (tmp_path / "pkg").mkdir()
    legacy_file(tmp_path / "other", "x.py")
    symlink(tmp_path / "pkg" / "x.py", "../other/x.py")
    shown = run("--preview", "--diff", "pkg", cwd=tmp_path)
    fixed = run("--preview", "--fix", "pkg", cwd=tmp_path)
    assert shown.returncode == fixed.returncode == 2
    assert refusals(shown) == refusals(fixed) != []
    assert shown.stdout == ""
    assert (tmp_path / "other" / "x.py").read_text(encoding="utf-8") == LEGACY_RELU
    # Walked from a folder that holds what it leads to, the link is the file it names: fixed once.
    assert_fixed_everything(run("--preview", "--fix", ".", cwd=tmp_path))


def test_a_named_link_is_followed_by_both_modes_within_the_current_folder_only(
    project_with_a_vendored_link: Path,
) -> None:
    project = project_with_a_vendored_link
    symlink(project / "inside.py", "pkg/own.py")
    shown = run("--preview", "--diff", "inside.py", cwd=project)
    assert shown.returncode == 1 and shown.stdout.startswith("--- a/pkg/own.py\n")
    assert_fixed_everything(run("--preview", "--fix", "inside.py", cwd=project))
    assert (project / "pkg" / "own.py").read_text(encoding="utf-8") == LEGACY_RELU_FIXED
    # A link to a file outside the current folder: the patch cannot name it, so neither mode changes it.
    shown = run("--preview", "--diff", "pkg/vendored.py", cwd=project)
    fixed = run("--preview", "--fix", "pkg/vendored.py", cwd=project)
    assert shown.returncode == fixed.returncode == 2
    assert refusals(shown) == refusals(fixed) == [
        "flake8-autograd: pkg/vendored.py: outside the current folder (or a link to a file there), left as it is: "
        "--fix changes only what --diff can show in a patch applied from here; run from a folder that holds it"
    ]
    assert (project.parent / "vendored.py").read_text(encoding="utf-8") == LEGACY_RELU
