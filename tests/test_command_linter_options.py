"""The options users know from flake8 and ruff, through the installed command: --exit-zero, --statistics,
--per-file-ignores, --explain, .gitignore, --baseline, ``--fix -`` and the fixable summary."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from test_command import CLEAN, COMMAND, SCALE, run, write
from test_fix_safety import EVERY_FIX, MIXED, SAFE_ONLY
from test_sdist import setuptools_fits

from flake8_autograd.adapters.command.config import ConfigError, parse_per_file_ignores
from flake8_autograd.rules import PREVIEW_RULES, RULES

GIT = shutil.which("git")
ROOT = Path(__file__).resolve().parents[1]
AGF001_LINE = "scale.py:5:5: AGF001 Scale.forward is not a @staticmethod; add @staticmethod"


# --exit-zero


def test_exit_zero_reports_findings_and_exits_0_but_errors_still_exit_2(tmp_path: Path) -> None:
    write(tmp_path, {"scale.py": SCALE})
    result = run("--exit-zero", "scale.py", cwd=tmp_path)
    assert (result.returncode, result.stdout.splitlines()) == (0, [AGF001_LINE])
    assert run("--exit-zero", "scale.py", "missing.py", cwd=tmp_path).returncode == 2
    assert run("--exit-zero", "--diff", "scale.py", cwd=tmp_path).returncode == 0
    assert run("--exit-zero", "--select", "nonsense", cwd=tmp_path).returncode == 2


def test_exit_zero_with_fix(tmp_path: Path) -> None:
    write(tmp_path, {"ops.py": MIXED})
    result = run("--preview", "--fix", "--exit-zero", "ops.py", cwd=tmp_path)
    assert result.returncode == 0 and "AGF003" in result.stdout
    assert (tmp_path / "ops.py").read_text(encoding="utf-8") == SAFE_ONLY


# --statistics


def test_statistics_count_each_code_after_the_report_as_flake8_prints_them(tmp_path: Path) -> None:
    write(tmp_path, {"scale.py": SCALE, "b/scale.py": SCALE})
    result = run("--preview", "--statistics", ".", cwd=tmp_path)
    lines = result.stdout.splitlines()
    assert result.returncode == 1 and len(lines) == 6
    assert lines[4:] == [
        "2     AGF001 Scale.forward is not a @staticmethod; add @staticmethod",
        "2     AGF005 Scale.backward always computes gradients for x, y; check ctx.needs_input_grad first",
    ]
    assert run("--statistics", cwd=tmp_path, stdin=None).stdout.count("\n") == 3  # AGF001 twice, one count


def test_statistics_with_a_machine_format_go_to_stderr(tmp_path: Path) -> None:
    write(tmp_path, {"scale.py": SCALE})
    result = run("--statistics", "--format", "json", "scale.py", cwd=tmp_path)
    assert [item["code"] for item in json.loads(result.stdout)] == ["AGF001"]
    assert result.stderr.startswith("1     AGF001 ")
    clean = run("--statistics", "-", cwd=tmp_path, stdin=CLEAN.encode())
    assert (clean.returncode, clean.stdout, clean.stderr) == (0, "", "")


# the fixable summary


def test_text_output_ends_with_how_many_findings_fix_can_repair_on_stderr(tmp_path: Path) -> None:
    write(tmp_path, {"ops.py": SAFE_ONLY, "scale.py": SCALE})  # AGF003 (unsafe fix); AGF001 (safe), AGF005 (none)
    result = run("--preview", ".", cwd=tmp_path)
    assert result.stderr == "1 fixable with the --fix option (1 more with --unsafe-fixes)\n"
    assert [line.split(" ")[1] for line in result.stdout.splitlines()] == ["AGF003", "AGF001", "AGF005"]
    both = run("--preview", "--unsafe-fixes", ".", cwd=tmp_path)
    assert both.stderr == "2 fixable with the --fix option\n"
    unsafe_only = run("--preview", "ops.py", cwd=tmp_path)
    assert unsafe_only.stderr == "1 fixable with the --fix --unsafe-fixes options\n"
    assert run("--preview", "--format", "json", ".", cwd=tmp_path).stderr == ""
    assert run("--preview", "--select", "AGF005", ".", cwd=tmp_path).stderr == ""


# --per-file-ignores


def test_per_file_ignores_on_the_command_line(tmp_path: Path) -> None:
    write(tmp_path, {"scale.py": SCALE, "tests/test_scale.py": SCALE, "legacy/old.py": SCALE})
    result = run("--preview", "--per-file-ignores", "tests/*:AGF001 legacy/*.py:AGF", ".", cwd=tmp_path)
    assert sorted(line.split(":")[0] + " " + line.split()[1] for line in result.stdout.splitlines()) == [
        "./scale.py AGF001", "./scale.py AGF005", "./tests/test_scale.py AGF005",
    ]
    # a bare name matches the file's name anywhere, as in flake8; standard input by its --stdin-filename
    assert run("--per-file-ignores", "*.py:AGF001", ".", cwd=tmp_path).returncode == 0
    piped = run("--per-file-ignores", "ops/*:AGF0", "-", "--stdin-filename", "ops/a.py", cwd=tmp_path,
                stdin=SCALE.encode())
    assert (piped.returncode, piped.stdout) == (0, "")


def test_per_file_ignores_in_pyproject_as_a_table_or_flake8s_strings(tmp_path: Path) -> None:
    write(tmp_path, {"tests/test_scale.py": SCALE, "pkg/scale.py": SCALE})
    write(tmp_path, {"pyproject.toml": '[tool.flake8-autograd]\nper-file-ignores = {"tests/*" = ["AGF001"]}\n'})
    assert [line.split(":")[0] for line in run(".", cwd=tmp_path).stdout.splitlines()] == ["./pkg/scale.py"]
    # patterns are relative to the configuration's folder, wherever the command runs
    inner = run(".", cwd=tmp_path / "tests")
    assert (inner.returncode, inner.stdout) == (0, "")
    write(tmp_path, {"pyproject.toml": '[tool.flake8-autograd]\nper-file-ignores = ["pkg/*:AGF001"]\n'})
    assert [line.split(":")[0] for line in run(".", cwd=tmp_path).stdout.splitlines()] == ["./tests/test_scale.py"]
    # the command line wins over the file
    assert run("--per-file-ignores", "x.py:AGF1", ".", cwd=tmp_path).stdout.count("AGF001") == 2


def test_per_file_ignores_leave_fixes_of_ignored_codes_undone(tmp_path: Path) -> None:
    write(tmp_path, {"scale.py": SCALE})
    result = run("--fix", "--per-file-ignores", "scale.py:AGF001", "scale.py", cwd=tmp_path)
    assert result.returncode == 0 and (tmp_path / "scale.py").read_text(encoding="utf-8") == SCALE


@pytest.mark.parametrize(
    "value",
    ["tests/*", "tests/*:agf001", "tests/*:AGF001 legacy.py", "tests/*:AGF1,a"],
)
def test_bad_per_file_ignores_are_a_usage_error(tmp_path: Path, value: str) -> None:
    write(tmp_path, {"scale.py": SCALE})
    result = run("--per-file-ignores", value, ".", cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == "" and "--per-file-ignores" in result.stderr


def test_bad_per_file_ignores_in_pyproject_are_a_usage_error(tmp_path: Path) -> None:
    write(tmp_path, {"scale.py": SCALE, "pyproject.toml": "[tool.flake8-autograd]\nper-file-ignores = 3\n"})
    result = run(".", cwd=tmp_path)
    assert result.returncode == 2 and "per-file-ignores" in result.stderr and result.stdout == ""


def test_per_file_ignores_are_read_as_flake8_reads_them() -> None:
    assert parse_per_file_ignores("a.py b/*.py:AGF001,AGF1\n  c.py : AGF  d.py:") == [
        ("a.py", ("AGF001", "AGF1")), ("b/*.py", ("AGF001", "AGF1")), ("c.py", ("AGF",)),
    ]
    assert parse_per_file_ignores("") == []
    for bad in ("a.py", "a.py:AGF001 b.py", "a.py:AGF001 b.py c.py", "a.py:AGF1,b"):
        with pytest.raises(ConfigError):
            parse_per_file_ignores(bad)
    try:
        from flake8.utils import parse_files_to_codes_mapping
    except ImportError:  # pragma: no cover
        return
    for value in ("a.py b/*.py:AGF001,AGF1\n  c.py : AGF  d.py:", "x.py:E1,W2 y/*:AGF", "t/*:AGF1:AGF2", ":AGF1"):
        expected = [(name, tuple(codes)) for name, codes in parse_files_to_codes_mapping(value)]
        assert parse_per_file_ignores(value) == expected


# --explain


def test_every_code_can_be_explained(tmp_path: Path) -> None:
    for rule in RULES + PREVIEW_RULES:
        result = run("--explain", rule.code, cwd=tmp_path)
        assert result.returncode == 0, rule.code
        assert result.stdout == (ROOT / "docs" / "rules" / f"{rule.code}.md").read_text(encoding="utf-8")
    assert run("--explain", "agf003", cwd=tmp_path).stdout.startswith("# AGF003")


def test_explaining_an_unknown_code_is_a_usage_error(tmp_path: Path) -> None:
    result = run("--explain", "AGF999", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (2, "") and "AGF999" in result.stderr


def test_without_its_page_a_rule_is_explained_from_its_class() -> None:
    from flake8_autograd.adapters.command import explain

    page = explain._page_of(RULES[0])
    assert page.startswith(f"# {RULES[0].code}: ") and explain.DOCS_URL.format(code=RULES[0].code) in page


@pytest.mark.slow  # CI runs it with a setuptools that fits pyproject.toml's build requirement
def test_a_built_wheel_carries_the_rule_pages(tmp_path: Path) -> None:
    if not setuptools_fits():
        pytest.skip("the installed setuptools is older than pyproject.toml's build requirement")
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copytree(ROOT / "docs" / "rules", source / "docs" / "rules")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
         "-w", str(tmp_path / "dist"), str(source)],
        capture_output=True, text=True, timeout=600,
    )
    if build.returncode != 0 and "No module named" in build.stderr:
        pytest.skip(f"cannot build a wheel here: {build.stderr.strip()[-200:]}")
    assert build.returncode == 0, build.stderr
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        pages = {name for name in names if name.startswith("flake8_autograd/rule_pages/")}
        assert pages == {f"flake8_autograd/rule_pages/{rule.code}.md" for rule in RULES + PREVIEW_RULES}
        page = archive.read("flake8_autograd/rule_pages/AGF001.md").decode("utf-8")
    assert page == (ROOT / "docs" / "rules" / "AGF001.md").read_text(encoding="utf-8")
    # and the installed package reads them from there: a copy of the built package alone, without docs/
    installed = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(installed)
    shown = subprocess.run(
        [sys.executable, "-c", "import sys; from flake8_autograd.adapters.command import explain as e; "
         "assert not e._SOURCE_PAGES.is_dir(), e._SOURCE_PAGES; sys.stdout.write(e.explain('AGF001'))"],
        cwd=tmp_path, env={"PYTHONPATH": str(installed), "PATH": ""}, capture_output=True, text=True, timeout=300,
    )
    assert (shown.returncode, shown.stdout) == (0, page), shown.stderr


# .gitignore


def git(folder: Path, *args: str) -> None:
    assert GIT is not None
    subprocess.run([GIT, *args], cwd=folder, check=True, capture_output=True, timeout=120)


@pytest.mark.skipif(GIT is None, reason="needs git")
def test_walking_a_folder_skips_what_git_ignores_but_a_named_file_is_checked(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    write(tmp_path, {
        "scale.py": SCALE, "generated/scale.py": SCALE, "pkg/scratch_scale.py": SCALE, "pkg/tracked.py": SCALE,
        ".gitignore": "generated/\nscratch_*.py\ntracked.py\n",
    })
    git(tmp_path, "add", "-f", "pkg/tracked.py")  # a tracked file is never ignored, as in git
    result = run(".", cwd=tmp_path)
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == ["./pkg/tracked.py", "./scale.py"]
    inner = run(".", cwd=tmp_path / "pkg")
    assert [line.split(":")[0] for line in inner.stdout.splitlines()] == ["./tracked.py"]
    named = run("generated/scale.py", "pkg", cwd=tmp_path)
    assert [line.split(":")[0] for line in named.stdout.splitlines()] == ["generated/scale.py", "pkg/tracked.py"]
    every = run("--no-respect-gitignore", ".", cwd=tmp_path)
    assert len(every.stdout.splitlines()) == 4
    write(tmp_path, {"pyproject.toml": "[tool.flake8-autograd]\nrespect-gitignore = false\n"})
    assert len(run(".", cwd=tmp_path).stdout.splitlines()) == 4


def test_outside_a_git_work_tree_nothing_is_ignored(tmp_path: Path) -> None:
    write(tmp_path, {"generated/scale.py": SCALE, ".gitignore": "generated/\n"})
    result = run(".", cwd=tmp_path)
    if GIT is not None and subprocess.run([GIT, "rev-parse"], cwd=tmp_path, capture_output=True).returncode == 0:
        pytest.skip("the temporary folder is inside a git work tree")
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == ["./generated/scale.py"]


# --baseline


TWO = SCALE + textwrap.dedent(
    """\


    class Twice(torch.autograd.Function):
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad
    """
)


def test_a_baseline_hides_the_findings_it_records_and_edits_elsewhere_keep_them_hidden(tmp_path: Path) -> None:
    write(tmp_path, {"pkg/scale.py": TWO})
    written = run("--baseline", "baseline.json", "--write-baseline", ".", cwd=tmp_path)
    assert (written.returncode, written.stdout) == (0, "")
    assert "wrote 2 findings" in written.stderr
    document = json.loads((tmp_path / "baseline.json").read_text(encoding="utf-8"))
    assert document["version"] == 1 and [item["path"] for item in document["findings"]] == ["pkg/scale.py"] * 2
    sources = {item["source"] for item in document["findings"]}
    assert sources == {"def forward(ctx, x: torch.Tensor, y: torch.Tensor):", "def forward(ctx, x):"}
    assert run("--baseline", "baseline.json", ".", cwd=tmp_path).returncode == 0
    # lines added above move every finding: still known; the path may be spelled differently, or from elsewhere
    write(tmp_path, {"pkg/scale.py": '"""Docs."""\n\n\n' + TWO})
    runs = [(".", "--baseline", "baseline.json"), ("pkg/scale.py", "--baseline", "./baseline.json")]
    for args in runs:
        again = run(*args, cwd=tmp_path)
        assert (again.returncode, again.stdout) == (0, ""), args
    inside = run(".", "--baseline", "../baseline.json", cwd=tmp_path / "pkg")
    assert (inside.returncode, inside.stdout) == (0, "")
    # one more of the same finding (a copy of the class) and a new one are reported
    write(tmp_path, {"pkg/scale.py": TWO + TWO.split("\n\n\n", 1)[1].replace("Scale", "Other")})
    new = run("--baseline", "baseline.json", ".", cwd=tmp_path)
    assert new.returncode == 1
    assert [line.split(" ", 2)[1:] for line in new.stdout.splitlines()] == [
        ["AGF001", "Other.forward is not a @staticmethod; add @staticmethod"],
        ["AGF001", "Twice.forward is not a @staticmethod; add @staticmethod"],
    ]


def test_a_baseline_keeps_a_finding_whose_message_names_a_line_hidden_after_edits_above_it(tmp_path: Path) -> None:
    """AGF101 says "again after line 7": lines added above make it "after line 10", the same finding."""
    saved_twice = textwrap.dedent(
        """\
        import torch


        class Twice(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                ctx.save_for_backward(a)
                ctx.save_for_backward(b)
                return a * b
        """
    )
    write(tmp_path, {"ops.py": saved_twice})
    options = ("--select", "AGF101", "--baseline", "baseline.json")
    assert run(*options, "--write-baseline", ".", cwd=tmp_path).returncode == 0
    (item,) = json.loads((tmp_path / "baseline.json").read_text(encoding="utf-8"))["findings"]
    assert "line 7" in item["message"]  # the message as the finding said it
    write(tmp_path, {"ops.py": '"""Ops."""\n\n# one\n' + saved_twice})
    assert "line 10" in run("--select", "AGF101", ".", cwd=tmp_path).stdout
    again = run(*options, ".", cwd=tmp_path)
    assert (again.returncode, again.stdout) == (0, "")
    # a second such finding is still new
    write(tmp_path, {"ops.py": saved_twice + "\n\n" + saved_twice.split("\n\n\n", 1)[1].replace("Twice", "Again")})
    new = run(*options, ".", cwd=tmp_path)
    assert new.returncode == 1 and "Again.forward" in new.stdout and "Twice.forward" not in new.stdout


def test_a_baseline_applies_to_fix_and_json(tmp_path: Path) -> None:
    write(tmp_path, {"ops.py": MIXED})
    assert run("--preview", "--baseline", "b.json", "--write-baseline", cwd=tmp_path).returncode == 0
    assert json.loads(run("--preview", "--baseline", "b.json", "--format", "json", cwd=tmp_path).stdout) == []
    fixed = run("--preview", "--fix", "--unsafe-fixes", "--baseline", "b.json", cwd=tmp_path)
    assert (fixed.returncode, fixed.stdout) == (0, "")
    assert (tmp_path / "ops.py").read_text(encoding="utf-8") == EVERY_FIX


@pytest.mark.parametrize(
    "content, message",
    [(None, "cannot read the baseline"), ("{", "not JSON"), ('{"version": 9, "findings": []}', "not a baseline"),
     ('{"version": 1, "findings": [{"path": "a.py"}]}', "a finding is not")],
)
def test_a_baseline_that_cannot_be_read_is_an_error(tmp_path: Path, content: str, message: str) -> None:
    write(tmp_path, {"scale.py": SCALE})
    if content is not None:
        write(tmp_path, {"b.json": content})
    result = run("--baseline", "b.json", ".", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (2, "") and message in result.stderr


def test_write_baseline_needs_a_file_and_no_fix_and_is_not_written_when_a_file_fails(tmp_path: Path) -> None:
    write(tmp_path, {"scale.py": SCALE})
    assert run("--write-baseline", ".", cwd=tmp_path).returncode == 2
    assert run("--write-baseline", "--baseline", "b.json", "--fix", ".", cwd=tmp_path).returncode == 2
    failed = run("--write-baseline", "--baseline", "b.json", ".", "missing.py", cwd=tmp_path)
    assert failed.returncode == 2 and not (tmp_path / "b.json").exists()


# --fix -


def test_fix_dash_writes_the_fixed_text_alone_on_stdout_and_the_rest_on_stderr(tmp_path: Path) -> None:
    result = run("--preview", "--fix", "-", "--stdin-filename", "ops.py", cwd=tmp_path, stdin=MIXED.encode())
    assert result.stdout == SAFE_ONLY and result.returncode == 1
    assert "ops.py:7:9: AGF003" in result.stderr  # on the fixed text
    assert "fixed 1 of 2 findings (1 more with --unsafe-fixes)" in result.stderr
    every = run("--preview", "--fix", "--unsafe-fixes", "-", cwd=tmp_path, stdin=MIXED.encode())
    assert (every.returncode, every.stdout) == (0, EVERY_FIX)
    clean = run("--fix", "-", cwd=tmp_path, stdin=CLEAN.encode())
    assert (clean.returncode, clean.stdout) == (0, CLEAN)
    assert run("--fix", "--exit-zero", "--preview", "-", cwd=tmp_path, stdin=MIXED.encode()).returncode == 0


def test_fix_dash_gives_back_text_it_cannot_fix_as_it_came(tmp_path: Path) -> None:
    broken = b"import torch\n\nclass A(torch.autograd.Function:\n"
    result = run("--fix", "-", cwd=tmp_path, stdin=broken)
    assert result.stdout == broken.decode() and result.returncode == 0 and "not valid Python" in result.stderr
    undecodable = b"x = '\xff'\n" + SCALE.encode()
    bad = subprocess.run([COMMAND, "--fix", "-"], cwd=tmp_path, input=undecodable, capture_output=True, timeout=300)
    assert (bad.returncode, bad.stdout) == (2, undecodable) and b"cannot decode" in bad.stderr
    excluded = run("--fix", "-", "--stdin-filename", "gen/a.py", "--exclude", "gen/*", cwd=tmp_path,
                   stdin=SCALE.encode())
    assert (excluded.returncode, excluded.stdout) == (0, SCALE)


def test_fix_dash_takes_standard_input_alone(tmp_path: Path) -> None:
    write(tmp_path, {"scale.py": SCALE})
    result = run("--fix", "-", "scale.py", cwd=tmp_path, stdin=SCALE.encode())
    assert (result.returncode, result.stdout) == (2, "") and "standard input alone" in result.stderr
    assert (tmp_path / "scale.py").read_text(encoding="utf-8") == SCALE
