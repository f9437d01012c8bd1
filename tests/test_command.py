"""The ``flake8-autograd`` command as users meet it: the installed executable, in a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Tuple

import pytest

from conftest import fixture_paths

COMMAND = str(Path(sys.executable).parent / "flake8-autograd")

SCALE = textwrap.dedent(
    """\
    import torch


    class Scale(torch.autograd.Function):
        def forward(ctx, x: torch.Tensor, y: torch.Tensor):
            ctx.save_for_backward(x, y)
            return x * y

        @staticmethod
        def backward(ctx, grad):
            x, y = ctx.saved_tensors
            return grad * y, grad * x
    """
)
# AGF001 on line 5 (on by default) and AGF005 on line 10 (preview); no other rule reports anything on it.
SCALE_CODES = ["AGF001"]
SCALE_PREVIEW_CODES = ["AGF001", "AGF005"]

CLEAN = "import torch\n\n\ndef double(x):\n    return 2 * x\n"

# A legacy Function: AGF001 on its forward; AGF002 and AGF113 (preview) for its first parameter, this,
# and the missing backward.
LEGACY = textwrap.dedent(
    """\
    import torch


    class Legacy(torch.autograd.Function):
        def forward(this, x):
            return x
    """
)

PROJECT_BASE = textwrap.dedent(
    """\
    from mypkg.autograd_base import KernelFunction


    class Fused(KernelFunction):
        def forward(ctx, x):
            return x
    """
)


def run(*args: str, cwd: Path, stdin: Optional[bytes] = None) -> subprocess.CompletedProcess:
    """The command with ``args``; stdout and stderr as text."""
    result = subprocess.run([COMMAND, *args], cwd=cwd, input=stdin, capture_output=True, timeout=300)
    return subprocess.CompletedProcess(
        result.args, result.returncode, result.stdout.decode("utf-8"), result.stderr.decode("utf-8")
    )


def codes_of(result: subprocess.CompletedProcess) -> List[str]:
    return [line.split(": ", 1)[1].split()[0] for line in result.stdout.splitlines()]


def findings_of(result: subprocess.CompletedProcess) -> List[Tuple[str, int, str]]:
    """(file name, line, code) of each text-format line."""
    found = []
    for line in result.stdout.splitlines():
        path, number, _column, rest = line.split(":", 3)
        found.append((Path(path).name, int(number), rest.split()[0]))
    return found


def write(folder: Path, files: Dict[str, str]) -> None:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_text_output_is_flake8s_and_findings_exit_1(tmp_path: Path) -> None:
    write(tmp_path, {"scale.py": SCALE})
    assert run("scale.py", cwd=tmp_path).stdout.splitlines() == [
        "scale.py:5:5: AGF001 Scale.forward is not a @staticmethod; add @staticmethod",
    ]
    result = run("--preview", "scale.py", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "scale.py:5:5: AGF001 Scale.forward is not a @staticmethod; add @staticmethod",
        "scale.py:10:5: AGF005 Scale.backward always computes gradients for x, y; check "
        "ctx.needs_input_grad first",
    ]
    assert result.stderr == "1 fixable with the --fix option\n"  # AGF001 adds @staticmethod


def test_clean_files_exit_0_silently(tmp_path: Path) -> None:
    write(tmp_path, {"clean.py": CLEAN, "pkg/empty.py": ""})
    result = run(cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_python_dash_m_is_the_same_command(tmp_path: Path) -> None:
    write(tmp_path, {"scale.py": SCALE})
    module = subprocess.run(
        [sys.executable, "-m", "flake8_autograd", "scale.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    script = run("scale.py", cwd=tmp_path)
    assert (module.returncode, module.stdout) == (script.returncode, script.stdout)
    version = run("--version", cwd=tmp_path)
    assert version.returncode == 0 and version.stdout.startswith("flake8-autograd ")


def test_default_path_is_the_current_folder_shown_as_flake8_shows_it(tmp_path: Path) -> None:
    write(tmp_path, {"pkg/scale.py": SCALE})
    result = run("--preview", cwd=tmp_path)
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == [os.path.join(".", "pkg", "scale.py")] * 2


def test_stdin_with_and_without_a_filename(tmp_path: Path) -> None:
    named = run("--preview", "-", "--stdin-filename", "ops/scale.py", cwd=tmp_path, stdin=SCALE.encode())
    assert named.returncode == 1
    assert [line.split(":")[0] for line in named.stdout.splitlines()] == ["ops/scale.py"] * 2
    assert codes_of(named) == SCALE_PREVIEW_CODES
    unnamed = run("--preview", "-", cwd=tmp_path, stdin=SCALE.encode())
    assert [line.split(":")[0] for line in unnamed.stdout.splitlines()] == ["stdin"] * 2
    assert run("-", cwd=tmp_path, stdin=CLEAN.encode()).returncode == 0


def test_stdin_named_by_an_excluded_path_is_skipped(tmp_path: Path) -> None:
    result = run("-", "--stdin-filename", "gen/scale.py", "--exclude", "gen/*", cwd=tmp_path, stdin=SCALE.encode())
    assert (result.returncode, result.stdout) == (0, "")


@pytest.mark.parametrize("mode", [[], ["--diff"]], ids=["check", "diff"])
def test_stdin_named_as_a_file_also_given_is_checked_once(tmp_path: Path, mode: List[str]) -> None:
    """Standard input stands for the file it is named after (an editor's unsaved text): not both."""
    write(tmp_path, {"ops/scale.py": LEGACY})
    result = run(
        "--preview", *mode, "--stdin-filename", "ops/scale.py", "-", "ops/scale.py", ".", cwd=tmp_path,
        stdin=SCALE.encode(),
    )
    if mode:
        assert result.stdout.count("--- a/ops/scale.py") == 1
        assert "would fix 1 of 2 findings in 1 file" in result.stderr
    else:
        assert [line.split(":")[0] for line in result.stdout.splitlines()] == ["ops/scale.py"] * 2
        assert codes_of(result) == SCALE_PREVIEW_CODES  # standard input's text, not the file's


def test_an_abbreviated_option_is_refused(tmp_path: Path) -> None:
    """``--fi`` is not taken for ``--fix``, which would rewrite the file."""
    write(tmp_path, {"legacy.py": LEGACY})
    result = run("--fi", "legacy.py", cwd=tmp_path)
    assert result.returncode == 2
    assert "unrecognized arguments: --fi" in result.stderr
    assert (tmp_path / "legacy.py").read_text(encoding="utf-8") == LEGACY


def test_jobs_are_at_most_one_per_cpu(tmp_path: Path) -> None:
    from flake8_autograd.adapters.command.settings import parse_settings, usable_cpus

    assert parse_settings(["-j", "100000"], tmp_path).jobs == usable_cpus()
    assert parse_settings(["-j", "auto"], tmp_path).jobs == usable_cpus()
    assert parse_settings(["-j", "1"], tmp_path).jobs == 1


@pytest.mark.parametrize(
    "options, expected",
    [
        ([], SCALE_PREVIEW_CODES),
        (["--select", "AGF001"], ["AGF001"]),
        (["--ignore", "AGF001"], ["AGF005"]),
        (["--select", "AGF", "--ignore", "AGF005"], ["AGF001"]),
        (["--select", "AGF001", "--ignore", "AGF0"], ["AGF001"]),  # the longer prefix wins
        (["--select", "AGF1"], []),
        (["--select", "AGF001,AGF005", "--ignore", "E501 W"], SCALE_PREVIEW_CODES),
    ],
)
def test_select_and_ignore_by_prefix(tmp_path: Path, options: List[str], expected: List[str]) -> None:
    """With preview on, so that two codes are there to choose from."""
    write(tmp_path, {"scale.py": SCALE})
    result = run("--preview", *options, "scale.py", cwd=tmp_path)
    assert codes_of(result) == expected
    assert result.returncode == (1 if expected else 0)


@pytest.mark.parametrize(
    "options",
    [["--select", "agf003"], ["--ignore", "AGF-3"], ["-j", "0"], ["-j", "many"], ["--format", "xml"], ["--bogus"]],
)
def test_usage_errors_exit_2(tmp_path: Path, options: List[str]) -> None:
    write(tmp_path, {"scale.py": SCALE})
    result = run(*options, "scale.py", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.strip()


def test_preview_rules_only_with_preview(tmp_path: Path) -> None:
    write(tmp_path, {"legacy.py": LEGACY})
    assert codes_of(run("legacy.py", cwd=tmp_path)) == ["AGF001"]
    assert sorted(codes_of(run("--preview", "legacy.py", cwd=tmp_path))) == ["AGF001", "AGF002", "AGF113"]


def test_function_bases(tmp_path: Path) -> None:
    write(tmp_path, {"ops.py": PROJECT_BASE})
    assert run("ops.py", cwd=tmp_path).returncode == 0
    result = run("--function-bases", "other.Base,mypkg.autograd_base.KernelFunction", "ops.py", cwd=tmp_path)
    assert codes_of(result) == ["AGF001"]


def test_jobs_give_the_same_output_in_the_same_order(tmp_path: Path) -> None:
    paths = [str(path) for path in fixture_paths()]
    serial = run("--preview", *paths, cwd=tmp_path)
    parallel = run("--preview", "-j", "2", *paths, cwd=tmp_path)
    assert serial.returncode == parallel.returncode == 1
    assert parallel.stdout == serial.stdout
    assert len(serial.stdout.splitlines()) > 100


# -- configuration ------------------------------------------------------------------------------


def test_configuration_is_found_upward_and_options_win(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": textwrap.dedent(
                """\
                [project]
                name = "demo"

                [tool.flake8-autograd]
                select = ["AGF"]
                ignore = ["AGF005"]
                exclude = ["generated", "src/legacy_*.py"]
                function-bases = ["mypkg.autograd_base.KernelFunction"]
                preview = true
                """
            ),
            "src/scale.py": SCALE,
            "src/legacy_ops.py": LEGACY,
            "src/generated/gen.py": SCALE,
            "src/ops.py": PROJECT_BASE,
            "src/pkg/legacy.py": LEGACY,
        },
    )
    inside = tmp_path / "src" / "pkg"
    result = run("..", cwd=inside)
    assert sorted(findings_of(result)) == [
        ("legacy.py", 5, "AGF001"),
        ("legacy.py", 5, "AGF002"),
        ("legacy.py", 5, "AGF113"),
        ("ops.py", 5, "AGF001"),
        ("ops.py", 5, "AGF113"),
        ("scale.py", 5, "AGF001"),
    ]
    overridden = run(
        "--ignore", "AGF00", "--select", "AGF001", "--no-preview", "--exclude", "pkg", "--function-bases", "x.Y", "..",
        cwd=inside,
    )
    # The command line replaces the file's exclude list: generated/ and legacy_ops.py are back in; no
    # preview code (AGF002, AGF113) any more; ops.py's base is no Function for x.Y.
    assert sorted(findings_of(overridden)) == [
        ("gen.py", 5, "AGF001"), ("legacy_ops.py", 5, "AGF001"), ("scale.py", 5, "AGF001")
    ]


def test_configuration_accepts_comma_separated_strings(tmp_path: Path) -> None:
    write(
        tmp_path,
        {"pyproject.toml": '[tool.flake8-autograd]\nselect = "AGF001, AGF005"\nignore = "AGF005"\n', "s.py": SCALE},
    )
    assert codes_of(run("s.py", cwd=tmp_path)) == ["AGF001"]


def test_nearest_pyproject_with_the_table_wins(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": '[tool.flake8-autograd]\nignore = ["AGF001"]\n',
            "sub/pyproject.toml": '[project]\nname = "sub"\n',  # no table: keep searching upward
            "sub/inner/pyproject.toml": "[tool.flake8-autograd]\nignore = [\"AGF005\"]\n",
            "sub/s.py": SCALE,
        },
    )
    assert codes_of(run("--preview", "s.py", cwd=tmp_path / "sub")) == ["AGF005"]
    assert codes_of(run("--preview", "../s.py", cwd=tmp_path / "sub" / "inner")) == ["AGF001"]


@pytest.mark.parametrize(
    "table, complaint",
    [
        ('[tool.flake8-autograd]\nselet = ["AGF"]\n', "unknown key"),
        ("[tool.flake8-autograd]\nselect = 3\n", "expected a list of strings"),
        ('[tool.flake8-autograd]\npreview = "yes"\n', "expected true or false"),
        ('[tool.flake8-autograd]\nselect = ["agf"]\n', "not a code prefix"),
        ("[tool.flake8-autograd\nselect = 1\n", "not valid TOML"),
    ],
)
def test_bad_configuration_exits_2_and_names_the_file(tmp_path: Path, table: str, complaint: str) -> None:
    write(tmp_path, {"pyproject.toml": table, "s.py": SCALE})
    result = run("s.py", cwd=tmp_path)
    assert result.returncode == 2
    assert "pyproject.toml" in result.stderr and complaint in result.stderr
    assert result.stdout == ""


# -- which files --------------------------------------------------------------------------------


def test_folders_skip_tool_state_virtualenvs_and_build_output(tmp_path: Path) -> None:
    skipped = [".git", ".venv", "venv", ".tox", "build", "dist", "__pycache__", "pkg.egg", "myenv"]
    files = {f"{folder}/scale.py": SCALE for folder in skipped}
    files.update({"myenv/pyvenv.cfg": "home = /usr/bin\n", "pkg/scale.py": SCALE, "pkg/notes.txt": SCALE})
    files.update({"pkg/stub.pyi": SCALE, "pkg/deep/er/scale.py": SCALE})
    write(tmp_path, files)
    result = run(".", cwd=tmp_path)
    shown = sorted({line.split(":")[0] for line in result.stdout.splitlines()})
    assert shown == [os.path.join(".", "pkg", "deep", "er", "scale.py"), os.path.join(".", "pkg", "scale.py")]
    # Named explicitly, a skipped folder or a file of any suffix is checked.
    assert codes_of(run("build", "pkg/notes.txt", cwd=tmp_path)) == SCALE_CODES * 2


def test_exclude_patterns_match_names_and_paths_also_for_named_files(tmp_path: Path) -> None:
    write(tmp_path, {"a/scale.py": SCALE, "b/scale.py": SCALE, "b/test_scale.py": SCALE, "c/gen_x.py": SCALE})
    result = run("--exclude", "test_*.py,a,./c", ".", cwd=tmp_path)
    assert sorted({line.split(":")[0] for line in result.stdout.splitlines()}) == [os.path.join(".", "b", "scale.py")]
    assert run("--exclude", "test_*.py", "b/test_scale.py", cwd=tmp_path).stdout == ""
    assert run("--exclude", "b/*", "b/scale.py", cwd=tmp_path).stdout == ""


def test_a_file_named_twice_is_checked_once(tmp_path: Path) -> None:
    write(tmp_path, {"pkg/scale.py": SCALE})
    assert codes_of(run("pkg", "pkg/scale.py", "./pkg/scale.py", cwd=tmp_path)) == SCALE_CODES


# -- files that cannot be checked ---------------------------------------------------------------


def test_unreadable_and_undecodable_files_are_reported_and_the_rest_checked(tmp_path: Path) -> None:
    write(tmp_path, {"ok.py": SCALE})
    (tmp_path / "bad_utf8.py").write_bytes(b"x = '\xff\xfe'\n" + SCALE.encode())
    (tmp_path / "bad_cookie.py").write_bytes(b"# -*- coding: no-such-codec -*-\n" + SCALE.encode())
    (tmp_path / "bom_and_latin1.py").write_bytes(b"\xef\xbb\xbf# coding: latin-1\n" + SCALE.encode())
    (tmp_path / "dangling.py").symlink_to(tmp_path / "nowhere.py")
    result = run(".", "missing.py", cwd=tmp_path)
    assert result.returncode == 2  # errors win over findings
    assert codes_of(result) == SCALE_CODES
    complaints = sorted(line for line in result.stderr.splitlines() if "fixable with" not in line)
    assert len(complaints) == 5, result.stderr
    for name in ["bad_cookie.py", "bad_utf8.py", "bom_and_latin1.py"]:
        assert any(name in line and "cannot decode" in line for line in complaints), name
    for name in ["dangling.py", "missing.py"]:
        assert any(name in line and "cannot read" in line for line in complaints), name
    assert "Traceback" not in result.stderr


def run_without_root_access(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The command as root without the capabilities that let root read any file or folder: it then meets
    permissions as their owner does (the interpreter, root's, stays readable)."""
    setpriv = shutil.which("setpriv")
    if setpriv is None or not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("needs root and setpriv to take the right to read any folder away")
    command = [setpriv, "--bounding-set=-dac_override,-dac_read_search", COMMAND, *args]
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)
    if "setpriv:" in result.stderr:
        pytest.skip(f"cannot drop capabilities here: {result.stderr.strip()}")
    return result


@pytest.fixture
def unreadable_folder(tmp_path: Path) -> Iterator[Path]:
    write(tmp_path, {"ok.py": SCALE, "secret/scale.py": SCALE})
    (tmp_path / "secret").chmod(0)
    yield tmp_path
    (tmp_path / "secret").chmod(0o755)


@pytest.mark.parametrize("mode", [[], ["--fix"]], ids=["check", "fix"])
def test_an_unreadable_folder_is_an_error_exit_2(unreadable_folder: Path, mode: List[str]) -> None:
    named = run_without_root_access(*mode, "secret", cwd=unreadable_folder)
    assert named.returncode == 2
    assert "flake8-autograd: secret: cannot read the folder: Permission denied" in named.stderr.splitlines()
    walked = run_without_root_access(*mode, ".", cwd=unreadable_folder)
    assert walked.returncode == 2
    assert f"flake8-autograd: {os.path.join('.', 'secret')}: cannot read the folder: Permission denied" in walked.stderr
    if mode:  # the readable file is still fixed
        assert "fixed 1 of 1 finding in 1 file" in walked.stderr
    else:
        assert codes_of(walked) == SCALE_CODES


def test_an_unreadable_folder_fails_the_sarif_run(unreadable_folder: Path) -> None:
    result = run_without_root_access("--format", "sarif", ".", cwd=unreadable_folder)
    assert result.returncode == 2
    invocation = json.loads(result.stdout)["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    notes = [note["message"]["text"] for note in invocation["toolExecutionNotifications"]]
    assert notes == [f"{os.path.join('.', 'secret')}: cannot read the folder: Permission denied"]


def test_a_folder_that_cannot_be_listed_is_in_the_file_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Wherever the walk meets the error (as root, no permission stops it)."""
    from flake8_autograd.adapters.command import files

    write(tmp_path, {"pkg/scale.py": SCALE})
    real_walk = os.walk

    def walk_denied_below(top: str, onerror: Optional[Callable[[OSError], None]] = None) -> Iterator[object]:
        assert onerror is not None
        onerror(PermissionError(13, "Permission denied", os.path.join(top, "secret")))
        yield from real_walk(top, onerror=onerror)

    monkeypatch.setattr(files.os, "walk", walk_denied_below)
    found = files.python_files([str(tmp_path)], ())
    assert found.paths == [str(tmp_path / "pkg" / "scale.py")]
    assert found.unreadable == [(str(tmp_path / "secret"), "cannot read the folder: Permission denied")]


def test_undecodable_standard_input_exits_2(tmp_path: Path) -> None:
    result = run("-", cwd=tmp_path, stdin=b"x = '\xff'\n")
    assert result.returncode == 2
    assert "stdin" in result.stderr and "cannot decode" in result.stderr


def test_a_file_that_is_not_python_is_skipped_with_a_note(tmp_path: Path) -> None:
    write(tmp_path, {"broken.py": "class Function(:\n", "scale.py": SCALE})
    result = run(".", cwd=tmp_path)
    assert result.returncode == 1
    assert codes_of(result) == SCALE_CODES
    assert "broken.py" in result.stderr and "not valid Python" in result.stderr


def test_output_cut_short_by_the_reader_is_not_an_error(tmp_path: Path) -> None:
    write(tmp_path, {f"scale{number}.py": SCALE for number in range(200)})
    pipeline = f"'{COMMAND}' . | head -n 1"
    result = subprocess.run(["sh", "-c", pipeline], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert len(result.stdout.splitlines()) == 1
    assert "Traceback" not in result.stderr and "Error" not in result.stderr
