"""What the command writes, and where, when the output or the paths are unusual: file names that SARIF or a
patch must quote, a full disk, closed streams, unexpected errors; and ``--diff`` patches that ``patch -p1``
and ``git apply`` apply for any line ending and any file name."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path
from typing import Dict, List

import pytest

from flake8_autograd.adapters.command import main as cli
from test_command import COMMAND, run
from test_fixes_command import BROKEN, BROKEN_FIXED, GIT, PATCH, tree_bytes

DEV_FULL = Path("/dev/full")


def run_bytes(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """The command with ``args``; stdout and stderr as bytes (file names need not be UTF-8)."""
    return subprocess.run([COMMAND, *args], cwd=cwd, capture_output=True, timeout=300)


def shell(script: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """A shell line with ``$F`` standing for the command, for redirections Python cannot set up."""
    line = f"F={shlex.quote(COMMAND)}; {script}"
    return subprocess.run(["sh", "-c", line], cwd=cwd, capture_output=True, timeout=300)


def no_traceback(result: subprocess.CompletedProcess[bytes]) -> bool:
    return b"Traceback" not in result.stderr and b"Traceback" not in result.stdout


# -- SARIF and unexpected errors ----------------------------------------------------------------


def test_sarif_quotes_a_file_name_that_is_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / os.fsdecode(b"bad\xff.py")).write_text(BROKEN, encoding="utf-8")
    result = run_bytes("--format", "sarif", "e", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert no_traceback(result)
    log = json.loads(result.stdout)
    uris = {
        location["physicalLocation"]["artifactLocation"]["uri"]
        for found in log["runs"][0]["results"]
        for location in found["locations"]
    }
    assert uris == {"e/bad%FF.py"}


def test_an_unexpected_error_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise ValueError("something unforeseen")

    (tmp_path / "mul.py").write_text(BROKEN, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli, "check_files", broken)
    assert cli.main(["mul.py"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        "flake8-autograd: internal error: ValueError: something unforeseen; please report"
    ]


def test_ctrl_c_still_exits_130(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli, "check_files", interrupted)
    assert cli.main(["."]) == 130


# -- output that cannot be written --------------------------------------------------------------


@pytest.mark.skipif(not DEV_FULL.exists(), reason="no /dev/full here")
@pytest.mark.parametrize("options", [[], ["--format", "sarif"], ["--diff"]], ids=["text", "sarif", "diff"])
def test_a_full_disk_is_an_error_exit_2(tmp_path: Path, options: List[str]) -> None:
    (tmp_path / "mul.py").write_text(BROKEN, encoding="utf-8")
    with DEV_FULL.open("wb") as full:
        result = subprocess.run([COMMAND, *options, "mul.py"], cwd=tmp_path, stdout=full, stderr=subprocess.PIPE)
    assert result.returncode == 2  # a truncated patch or report must not pass for findings (1)
    complaints = [line for line in result.stderr.decode().splitlines() if not line.startswith("would fix")]
    assert complaints == ["flake8-autograd: cannot write the output: No space left on device"]


@pytest.mark.parametrize("options", [[], ["--diff"]], ids=["text", "diff"])
def test_a_closed_standard_output_is_an_error_exit_2(tmp_path: Path, options: List[str]) -> None:
    (tmp_path / "mul.py").write_text(BROKEN, encoding="utf-8")
    result = shell(f"\"$F\" {' '.join(options)} mul.py >&-", cwd=tmp_path)
    assert result.returncode == 2
    assert no_traceback(result)
    assert b"flake8-autograd: cannot write the output: standard output is closed" in result.stderr


@pytest.mark.parametrize("options", [[], ["--diff"]], ids=["check", "diff"])
def test_a_closed_standard_input_is_an_error_exit_2(tmp_path: Path, options: List[str]) -> None:
    result = shell(f"\"$F\" {' '.join(options)} - <&-", cwd=tmp_path)
    assert result.returncode == 2
    assert b"flake8-autograd: stdin: cannot read standard input: it is closed\n" in result.stderr
    assert b"internal error" not in result.stderr


def test_a_closed_standard_output_with_nothing_to_write_is_fine(tmp_path: Path) -> None:
    (tmp_path / "clean.py").write_text("x = 1\n", encoding="utf-8")
    result = shell('"$F" clean.py >&-', cwd=tmp_path)
    assert (result.returncode, result.stderr) == (0, b"")


@pytest.mark.parametrize("options", [["--diff"], ["--fix"]])
def test_a_closed_standard_error_keeps_the_summary_out_of_standard_output(
    tmp_path: Path, options: List[str]
) -> None:
    (tmp_path / "mul.py").write_text(BROKEN, encoding="utf-8")
    # With preview, BROKEN's AGF004 has no fix: something remains to report after --fix.
    result = shell(f"\"$F\" --preview {' '.join(options)} mul.py 2>&-", cwd=tmp_path)
    assert result.returncode == 1
    assert b"fix" not in result.stdout.replace(b"--- a/", b"").replace(b"+++ b/", b"")
    if options == ["--diff"]:
        assert result.stdout.startswith(b"--- a/mul.py\n+++ b/mul.py\n@@ ")
    else:
        assert result.stdout.decode().split()[1] == "AGF004"  # only the finding that remains


def test_a_reader_that_stops_early_is_quiet_and_keeps_the_status(tmp_path: Path) -> None:
    # One fix next to a long line: the patch is far larger than a pipe holds.
    long_comment = "    # " + "x" * 400_000 + "\n"
    source = BROKEN.replace("    @staticmethod\n", long_comment + "    @staticmethod\n")
    assert long_comment in source
    (tmp_path / "mul.py").write_text(source, encoding="utf-8")
    pipeline = f'{shlex.quote(COMMAND)} --diff mul.py | head -c 100 >/dev/null; echo "status ${{PIPESTATUS[0]}}" >&2'
    result = subprocess.run(["bash", "-c", pipeline], cwd=tmp_path, capture_output=True, timeout=300)
    lines = result.stderr.decode().splitlines()
    assert lines[-1] == "status 1"  # findings, as when the whole patch is read
    assert [line for line in lines[:-1] if not line.startswith("would fix")] == []


# -- --diff patches that both tools apply -------------------------------------------------------

# The class of the examples below with a bare CR: AGF001 and AGF002, and AGF116's `[g]` on the last line.
CR_CLASS = (
    "import torch\n"
    "class F(torch.autograd.Function):\n"
    "    def forward(self, x):\n"
    "        return x\n"
    "    @staticmethod\n"
    "    def backward(ctx, g):\n"
    "        return [g]\n"
)
BARE_CR_DOCSTRING = BROKEN.replace(
    "class Mul(torch.autograd.Function):\n",
    'class Mul(torch.autograd.Function):\n    """Docstring with a bare CR:\r done."""\n',
)
LINE_ENDINGS: Dict[str, bytes] = {
    "cr_only.py": CR_CLASS.replace("\n", "\r").encode(),
    "cr_only_no_final_cr.py": CR_CLASS.replace("\n", "\r").rstrip("\r").encode(),
    "bare_cr_in_docstring.py": BARE_CR_DOCSTRING.encode(),
    "crlf.py": BROKEN.replace("\n", "\r\n").encode(),
    "no_final_newline.py": CR_CLASS.rstrip("\n").encode(),
    "crlf_no_final_newline.py": CR_CLASS.replace("\n", "\r\n").rstrip("\r\n").encode(),
}
ODD_NAMES = [
    "sub/my file.py",
    "sub/tab\tx.py",
    "sub/caf\u00e9.py",
    'sub/q"uote\\back.py',
    "sub/new\nline.py",
    "sub/sp ace\tand tab.py",
    " sub/lead.py",
    os.fsdecode(b"sub/bad\xff.py"),
]


def apply_tool(tool: str) -> List[str]:
    tools = {"patch": PATCH, "git": GIT}
    found = tools[tool]
    if found is None:
        pytest.skip(f"{tool} is not installed")
    return [found, "-p1", "--quiet"] if tool == "patch" else [found, "apply", "-p1", "-"]


def diff_applies_as_fix_writes(tmp_path: Path, files: Dict[str, bytes], tool: str, preview: bool = False) -> bytes:
    """``--diff`` applied by ``tool`` gives the bytes ``--fix`` writes; the patch."""
    command = apply_tool(tool)
    patched, fixed = tmp_path / "patched", tmp_path / "fixed"
    for folder in (patched, fixed):
        for name, data in files.items():
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    options = ["--preview"] if preview else []
    diff = run_bytes(*options, "--diff", ".", cwd=patched)
    assert diff.returncode == 1 and diff.stdout, diff.stderr
    assert tree_bytes(patched) == tree_bytes(fixed)  # --diff wrote nothing
    run_bytes(*options, "--fix", ".", cwd=fixed)
    assert tree_bytes(fixed) != tree_bytes(patched)
    applied = subprocess.run(command, cwd=patched, input=diff.stdout, capture_output=True, timeout=120)
    assert applied.returncode == 0, (applied.stdout + applied.stderr).decode(errors="replace")
    assert tree_bytes(patched) == tree_bytes(fixed)
    return bytes(diff.stdout)


@pytest.mark.parametrize("tool", ["patch", "git"])
def test_diff_splits_lines_at_newlines_only(tmp_path: Path, tool: str) -> None:
    patch = diff_applies_as_fix_writes(tmp_path, LINE_ENDINGS, tool, preview=True)
    # A CR-only file is one line, as diff sees it: a hunk of one line out and one in.
    cr_only = patch[patch.index(b"--- a/cr_only.py\n"):]
    assert cr_only.split(b"\n")[2] == b"@@ -1 +1 @@"


@pytest.mark.parametrize("tool", ["patch", "git"])
def test_diff_names_odd_file_names_so_that_both_tools_find_them(tmp_path: Path, tool: str) -> None:
    files = {name: BROKEN.encode() for name in ODD_NAMES}
    patch = diff_applies_as_fix_writes(tmp_path, files, tool)
    assert b"--- a/sub/my file.py\t\n+++ b/sub/my file.py\t\n" in patch
    assert b'--- "a/sub/tab\\tx.py"\n+++ "b/sub/tab\\tx.py"\n' in patch
    assert b'--- "a/sub/caf\\303\\251.py"\n' in patch


@pytest.mark.parametrize("tool", ["patch", "git"])
def test_diff_through_a_link_names_the_file_it_points_to(tmp_path: Path, tool: str) -> None:
    """``0.py -> z.py`` is walked first, and a linked folder's file is reached through the link: the patch
    names the files themselves (both tools refuse to patch through a link) and applies as --fix writes."""
    command = apply_tool(tool)
    results = {}
    for variant in ("patched", "fixed"):
        folder = tmp_path / variant
        (folder / "sub").mkdir(parents=True)
        (folder / "z.py").write_text(BROKEN, encoding="utf-8")
        (folder / "sub" / "y.py").write_text(BROKEN, encoding="utf-8")
        (folder / "0.py").symlink_to("z.py")
        (folder / "linked").symlink_to("sub", target_is_directory=True)
        results[variant] = folder
    diff = run_bytes("--diff", "0.py", "linked/y.py", cwd=results["patched"])
    assert diff.returncode == 1, diff.stderr
    assert b"--- a/z.py\n" in diff.stdout and b"--- a/sub/y.py\n" in diff.stdout, diff.stdout
    run_bytes("--fix", "0.py", "linked/y.py", cwd=results["fixed"])
    applied = subprocess.run(command, cwd=results["patched"], input=diff.stdout, capture_output=True, timeout=120)
    assert applied.returncode == 0, (applied.stdout + applied.stderr).decode(errors="replace")
    for name in ("z.py", "sub/y.py"):
        assert (results["patched"] / name).read_bytes() == (results["fixed"] / name).read_bytes() != BROKEN.encode()
    assert (results["patched"] / "0.py").is_symlink()


def test_diff_and_fix_refuse_a_file_outside_the_current_folder(tmp_path: Path) -> None:
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "x.py").write_text(BROKEN, encoding="utf-8")
    here = tmp_path / "out" / "a" / "b"
    here.mkdir(parents=True)
    (here / "inside.py").write_text(BROKEN, encoding="utf-8")
    result = run("--preview", "--diff", "../../../c/x.py", "inside.py", cwd=here)
    assert result.returncode == 2
    assert "../" not in result.stdout
    assert result.stdout.startswith("--- a/inside.py\n+++ b/inside.py\n@@ ")  # the other file's fixes still
    refusal = (
        "flake8-autograd: ../../../c/x.py: outside the current folder (or a link to a file there), left as it is: "
        "--fix changes only what --diff can show in a patch applied from here; run from a folder that holds it"
    )
    assert result.stderr.splitlines() == [refusal, "would fix 2 of 6 findings in 1 file"]
    # --fix leaves the same file as it is: the patch shown is what it writes.
    fixed = run("--preview", "--fix", "../../../c/x.py", "inside.py", cwd=here)
    assert fixed.returncode == 2
    assert fixed.stderr.splitlines() == [refusal, "fixed 2 of 6 findings in 1 file"]
    assert (tmp_path / "c" / "x.py").read_text(encoding="utf-8") == BROKEN
    assert run("--diff", "x.py", cwd=tmp_path / "c").returncode == 1  # from its own folder it is named


def test_diff_of_a_clean_file_outside_the_current_folder_is_fine(tmp_path: Path) -> None:
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "x.py").write_text(BROKEN_FIXED.replace("self", "ctx"), encoding="utf-8")
    here = tmp_path / "here"
    here.mkdir()
    result = run("--preview", "--diff", "../c/x.py", cwd=here)
    assert (result.returncode, result.stdout) == (1, "")  # the AGF004 (preview) no fix repairs; nothing to name
