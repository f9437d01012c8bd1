"""``flake8-autograd --fix`` and ``--diff`` as users run them: the installed executable, in a subprocess."""

from __future__ import annotations

import ast
import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, List, Set, Tuple

import pytest

from conftest import FIXTURES, fixture_paths, source_lines
from flake8_autograd.adapters.command import main as cli
from flake8_autograd.checking.checker import check_module
from flake8_autograd.core.settings import Settings
from flake8_autograd.core.fixes import computing_fixes
from test_command import COMMAND, run

PATCH = shutil.which("patch")
GIT = shutil.which("git")

# AGF001 on forward, AGF002 on backward; AGF004 that no fix can repair (y may be a tensor). AGF002 and
# AGF004 are preview rules: tests of what --fix repairs turn preview on; by default only AGF001 is fixed.
BROKEN = textwrap.dedent(
    """\
    import torch


    class Mul(torch.autograd.Function):
        def forward(ctx, x, y):
            ctx.save_for_backward(y)
            return x * y

        @staticmethod
        def backward(self, grad):
            (y,) = self.saved_tensors
            return grad * y
    """
)
BROKEN_FIXED = BROKEN.replace("    def forward", "    @staticmethod\n    def forward").replace("self", "ctx")


LATIN_HEADER = "# -*- coding: latin-1 -*-\n# caf\u00e9 \u00e0 l'\u00e9t\u00e9\n"


def copy_fixtures(folder: Path) -> Path:
    target = folder / "fixtures"
    shutil.copytree(FIXTURES, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def tree_bytes(folder: Path) -> Dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*.py"))}


def test_fix_writes_reports_what_remains_and_counts_on_stderr(tmp_path: Path) -> None:
    (tmp_path / "mul.py").write_text(BROKEN, encoding="utf-8")
    result = run("--preview", "--fix", "mul.py", cwd=tmp_path)
    assert (tmp_path / "mul.py").read_text(encoding="utf-8") == BROKEN_FIXED
    assert result.returncode == 1  # the AGF004 remains
    assert [line.split()[1] for line in result.stdout.splitlines()] == ["AGF004"]
    assert "fixed 2 of 3 findings in 1 file" in result.stderr
    again = run("--preview", "--fix", "mul.py", cwd=tmp_path)
    assert "fixed 0 of 1 finding in 0 files" in again.stderr
    assert (tmp_path / "mul.py").read_text(encoding="utf-8") == BROKEN_FIXED


def test_fix_exits_0_once_everything_is_fixed(tmp_path: Path) -> None:
    source = textwrap.dedent(
        """\
        import torch


        class Double(torch.autograd.Function):
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(self, grad):
                return grad * 2
        """
    )
    (tmp_path / "mul.py").write_text(source, encoding="utf-8")
    result = run("--preview", "--fix", "mul.py", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "")
    assert "fixed 2 of 2 findings in 1 file" in result.stderr


def test_diff_writes_nothing_and_prints_a_patch(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mul.py").write_text(BROKEN, encoding="utf-8")
    result = run("--preview", "--diff", ".", cwd=tmp_path)
    assert (tmp_path / "pkg" / "mul.py").read_text(encoding="utf-8") == BROKEN
    assert result.returncode == 1
    assert result.stdout.startswith("--- a/pkg/mul.py\n+++ b/pkg/mul.py\n@@ ")
    assert "+    @staticmethod\n" in result.stdout and "-    def backward(self, grad):\n" in result.stdout
    assert "would fix 2 of 3 findings in 1 file" in result.stderr


def test_fix_without_preview_repairs_only_what_the_default_rules_report(tmp_path: Path) -> None:
    (tmp_path / "mul.py").write_text(BROKEN, encoding="utf-8")
    result = run("--fix", "mul.py", cwd=tmp_path)
    # AGF001's decorator is added; the preview AGF002's self stays, and AGF004 is not reported.
    only_default = BROKEN.replace("    def forward", "    @staticmethod\n    def forward")
    assert (tmp_path / "mul.py").read_text(encoding="utf-8") == only_default
    assert (result.returncode, result.stdout) == (0, "")
    assert "fixed 1 of 1 finding in 1 file" in result.stderr
    shown = run("--diff", "mul.py", cwd=tmp_path)
    assert (shown.returncode, shown.stdout) == (0, "")


def test_fix_writes_standard_input_fixed_to_stdout_and_diff_reads_it(tmp_path: Path) -> None:
    fixed = run("--preview", "--fix", "-", cwd=tmp_path, stdin=BROKEN.encode())
    assert fixed.returncode == 1 and fixed.stdout == BROKEN_FIXED and "AGF004" in fixed.stderr
    shown = run("--diff", "-", "--stdin-filename", "ops/mul.py", cwd=tmp_path, stdin=BROKEN.encode())
    assert shown.returncode == 1 and shown.stdout.startswith("--- a/ops/mul.py\n+++ b/ops/mul.py\n")


def engine_fixable(path: Path) -> Set[Tuple[int, str]]:
    lines = source_lines(path.read_text(encoding="utf-8"))
    with computing_fixes():
        findings = check_module(ast.parse("".join(lines)), lines, str(path), Settings(preview=True))
    return {(finding.line, finding.code) for finding in findings if finding.fix is not None}


def test_json_fixable_is_true_exactly_for_findings_with_a_fix(tmp_path: Path) -> None:
    folder = copy_fixtures(tmp_path)
    result = run("--preview", "--format", "json", ".", cwd=tmp_path)
    items = json.loads(result.stdout)
    assert any(item["fixable"] for item in items) and not all(item["fixable"] for item in items)
    for path in fixture_paths():
        shown = {
            (item["line"], item["code"]) for item in items if item["fixable"] and Path(item["path"]).name == path.name
        }
        assert shown == engine_fixable(folder / path.name), path.name


def test_fixed_fixtures_parse_lose_their_fixed_findings_and_are_stable(tmp_path: Path) -> None:
    folder = copy_fixtures(tmp_path)
    files = sorted(folder.glob("*.py"))  # the fixtures, not the folders beside them (options/)
    before = {path.name: run("--preview", "--format", "json", str(path), cwd=tmp_path) for path in files}
    result = run("--preview", "--fix", "--unsafe-fixes", "-j", "2", ".", cwd=tmp_path)
    assert result.returncode == 1 and "fixed " in result.stderr
    remaining = run("--preview", "--format", "json", ".", cwd=tmp_path)
    assert not [item for item in json.loads(remaining.stdout) if item["fixable"]]
    for path in files:
        ast.parse(path.read_bytes())
        original = json.loads(before[path.name].stdout)
        after = [item for item in json.loads(remaining.stdout) if Path(item["path"]).name == path.name]
        for code in {item["code"] for item in original}:
            had = [item for item in original if item["code"] == code]
            fixed = [item for item in had if item["fixable"]]
            still = [item for item in after if item["code"] == code]
            assert len(still) <= len(had) - len(fixed), (path.name, code)
    snapshot = tree_bytes(folder)
    again = run("--preview", "--fix", "--unsafe-fixes", ".", cwd=tmp_path)
    assert tree_bytes(folder) == snapshot and "fixed 0 of" in again.stderr


def test_encoding_bom_newlines_and_mode_are_kept(tmp_path: Path) -> None:
    files: Dict[str, bytes] = {
        "crlf.py": BROKEN.replace("\n", "\r\n").encode("utf-8"),
        "no_final_newline.py": BROKEN.rstrip("\n").encode("utf-8"),
        "bom.py": b"\xef\xbb\xbf" + ("# caf\u00e9\n" + BROKEN).encode("utf-8"),
        "latin.py": (LATIN_HEADER + BROKEN).encode("latin-1"),
        "mixed.py": BROKEN.replace("\n", "\r\n", 3).encode("utf-8"),
    }
    expected: Dict[str, bytes] = {
        "crlf.py": BROKEN_FIXED.replace("\n", "\r\n").encode("utf-8"),
        "no_final_newline.py": BROKEN_FIXED.rstrip("\n").encode("utf-8"),
        "bom.py": b"\xef\xbb\xbf" + ("# caf\u00e9\n" + BROKEN_FIXED).encode("utf-8"),
        "latin.py": (LATIN_HEADER + BROKEN_FIXED).encode("latin-1"),
        # The new decorator line takes the line ending of the line it goes on (LF), not the first line's.
        "mixed.py": BROKEN_FIXED.replace("\n", "\r\n", 3).encode(),
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    os.chmod(tmp_path / "crlf.py", 0o750)
    os.chmod(tmp_path / "latin.py", 0o604)
    result = run("--preview", "--fix", ".", cwd=tmp_path)
    assert "fixed 10 of 15 findings in 5 files" in result.stderr, result.stderr
    for name, data in expected.items():
        assert (tmp_path / name).read_bytes() == data, name
    assert stat.S_IMODE(os.stat(tmp_path / "crlf.py").st_mode) == 0o750
    assert stat.S_IMODE(os.stat(tmp_path / "latin.py").st_mode) == 0o604


@pytest.mark.parametrize(
    "encoding, header",
    [
        ("latin-1", LATIN_HEADER),
        ("cp1252", "# -*- coding: cp1252 -*-\n# \u20ac caf\u00e9\n"),
        ("shift_jis", "# -*- coding: shift_jis -*-\n# \u8868\u793a\n"),  # the second byte of each is 0x5C
        ("latin-1", "#!/usr/bin/env python\n# vim: set fileencoding=latin-1 :\n# caf\u00e9\n"),  # second line
    ],
    ids=["latin-1", "cp1252", "shift_jis", "cookie-on-the-second-line"],
)
def test_a_cr_only_file_with_a_coding_cookie_is_read_as_python_reads_it(
    tmp_path: Path, encoding: str, header: str
) -> None:
    """Classic Mac line endings: Python finds the cookie in the first two lines split at CR too."""
    data = (header + BROKEN).replace("\n", "\r").encode(encoding)
    compile(data, "mac.py", "exec")  # Python reads it
    (tmp_path / "mac.py").write_bytes(data)
    checked = run("--preview", "mac.py", cwd=tmp_path)
    assert checked.stderr == "2 fixable with the --fix option\n"
    assert [line.split(" ")[1] for line in checked.stdout.splitlines()] == ["AGF001", "AGF002", "AGF004"]
    fixed = run("--preview", "--fix", "mac.py", cwd=tmp_path)
    assert "fixed 2 of 3 findings in 1 file" in fixed.stderr, fixed.stderr
    assert (tmp_path / "mac.py").read_bytes() == (header + BROKEN_FIXED).replace("\n", "\r").encode(encoding)


def test_files_are_replaced_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mul.py").write_text(BROKEN, encoding="utf-8")
    replaced: List[Tuple[str, str]] = []
    real_replace = os.replace

    def recording_replace(source: str, target: str) -> None:
        replaced.append((str(source), str(target)))
        assert Path(source).read_text(encoding="utf-8") == BROKEN_FIXED  # complete before it is put in place
        assert (tmp_path / "mul.py").read_text(encoding="utf-8") == BROKEN
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", recording_replace)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["--preview", "--fix", "mul.py"]) == 1
    assert len(replaced) == 1
    temporary, target = replaced[0]
    assert Path(temporary).parent == Path(target).parent == tmp_path.resolve()
    assert Path(target).name == "mul.py"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["mul.py"]  # no temporary file left


def test_a_symbolic_link_is_followed_not_replaced(tmp_path: Path) -> None:
    (tmp_path / "real.py").write_text(BROKEN, encoding="utf-8")
    try:
        (tmp_path / "link.py").symlink_to("real.py")
    except OSError:
        pytest.skip("symbolic links are not available here")
    run("--preview", "--fix", "link.py", cwd=tmp_path)
    assert (tmp_path / "link.py").is_symlink()
    assert (tmp_path / "real.py").read_text(encoding="utf-8") == BROKEN_FIXED


def _encoded_variants(folder: Path) -> None:
    """Besides the fixtures: the same fixes in a CRLF, a BOM and a latin-1 file."""
    (folder / "crlf.py").write_bytes(BROKEN.replace("\n", "\r\n").encode())
    (folder / "bom.py").write_bytes(b"\xef\xbb\xbf" + BROKEN.encode())
    (folder / "latin.py").write_bytes(("# -*- coding: latin-1 -*-\n# \u00e9\n" + BROKEN).encode("latin-1"))
    (folder / "end.py").write_bytes(BROKEN.rstrip("\n").encode())


@pytest.mark.parametrize("tool", ["patch", "git"])
def test_diff_applied_gives_the_bytes_fix_writes(tmp_path: Path, tool: str) -> None:
    if (PATCH if tool == "patch" else GIT) is None:
        pytest.skip(f"{tool} is not installed")
    patched, fixed = tmp_path / "patched", tmp_path / "fixed"
    for folder in (patched, fixed):
        folder.mkdir()
        copy_fixtures(folder)
        _encoded_variants(folder)
    diff = subprocess.run(
        [COMMAND, "--preview", "--diff", "."], cwd=patched, capture_output=True, timeout=300
    )
    assert diff.returncode == 1 and diff.stdout
    untouched = tree_bytes(patched)
    assert untouched == tree_bytes(fixed)  # --diff wrote nothing
    run("--preview", "--fix", ".", cwd=fixed)
    if tool == "patch":
        assert PATCH is not None
        command = [PATCH, "-p1", "--quiet"]
    else:
        assert GIT is not None
        command = [GIT, "apply", "-p1", "-"]
    applied = subprocess.run(command, cwd=patched, input=diff.stdout, capture_output=True, timeout=120)
    assert applied.returncode == 0, applied.stderr.decode(errors="replace")
    assert tree_bytes(patched) == tree_bytes(fixed)
    assert tree_bytes(patched) != untouched


def test_python_dash_m_fixes_too(tmp_path: Path) -> None:
    (tmp_path / "mul.py").write_text(BROKEN, encoding="utf-8")
    subprocess.run(
        [sys.executable, "-m", "flake8_autograd", "--preview", "--fix", "mul.py"], cwd=tmp_path, timeout=300
    )
    assert (tmp_path / "mul.py").read_text(encoding="utf-8") == BROKEN_FIXED
