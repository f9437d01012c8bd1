"""The command and ``flake8 --select AGF`` run the same engine: on the same files, the same output.

Each test runs both real executables over one folder and compares their text output line for line
(the command's text format is flake8's), so ``noqa`` handling, decoding and positions are compared
as a whole rather than restated here.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, List, Optional

import pytest

from conftest import fixture_paths
from flake8_autograd.rules import PREVIEW_CODES
from test_command import PROJECT_BASE, SCALE, run

FLAKE8 = str(Path(sys.executable).parent / "flake8")


def flake8(*args: str, cwd: Path, stdin: Optional[bytes] = None) -> subprocess.CompletedProcess:
    result = subprocess.run([FLAKE8, *args], cwd=cwd, input=stdin, capture_output=True, timeout=300)
    return subprocess.CompletedProcess(
        result.args, result.returncode, result.stdout.decode("utf-8"), result.stderr.decode("utf-8")
    )


def assert_same(command: subprocess.CompletedProcess, reference: subprocess.CompletedProcess) -> List[str]:
    assert "Traceback" not in command.stderr + reference.stderr
    assert command.stdout.splitlines() == reference.stdout.splitlines()
    assert command.returncode == reference.returncode
    return command.stdout.splitlines()


@pytest.mark.slow  # every fixture through flake8 and the command
def test_every_fixture_gives_flake8s_findings(tmp_path: Path) -> None:
    # As tests/test_fixtures.py: a preview rule's fixture with every rule on, a default rule's as installed.
    preview = [str(path) for path in fixture_paths() if path.name[:6].upper() in PREVIEW_CODES]
    core = [str(path) for path in fixture_paths() if path.name[:6].upper() not in PREVIEW_CODES]
    lines = assert_same(run(*core, cwd=tmp_path), flake8("--select", "AGF", *core, cwd=tmp_path))
    assert len(lines) > 15
    if preview:
        preview_lines = assert_same(
            run("--preview", *preview, cwd=tmp_path),
            flake8("--select", "AGF", "--autograd-preview", *preview, cwd=tmp_path),
        )
        assert len(preview_lines) > 50


_HEAD = "import torch\n\n\nclass Scale(torch.autograd.Function):\n"
_FORWARD = "    @staticmethod\n    def forward(ctx, x: torch.Tensor):\n"
_BACKWARD = "\n    @staticmethod\n    def backward(ctx, grad):\n        return grad\n"
_STORE = _HEAD + _FORWARD + "        ctx.x = x{comment}\n        return x\n" + _BACKWARD
_PLAIN = _STORE.format(comment="")
# AGF003 is a preview rule: both sides run with every rule on.
COMMAND_PREVIEW = ("--preview",)
FLAKE8_PREVIEW = ("--select", "AGF", "--autograd-preview")

# Each file holds one AGF003 (ctx.x = x), or AGF001/AGF002/AGF113 for the legacy forward, and a comment.
NOQA_CASES: Dict[str, str] = {
    "bare": _STORE.format(comment="  # noqa"),
    "code": _STORE.format(comment="  # noqa: AGF003"),
    "other_code": _STORE.format(comment="  # noqa: AGF004"),
    "prefix": _STORE.format(comment="  # noqa: AGF"),
    "no_space": _STORE.format(comment="  # noqa:AGF003"),
    "lower_case_code": _STORE.format(comment="  # noqa: agf003"),
    "upper_case_noqa": _STORE.format(comment="  # NOQA: AGF003"),
    "space_before_colon": _STORE.format(comment="  # noqa : AGF004"),
    "code_list": _STORE.format(comment="  # noqa: E501,AGF003 W291"),
    "not_codes": _STORE.format(comment="  # noqa: not-a-code"),
    "in_a_string": _STORE.format(comment="; note = '# noqa'"),
    "in_a_multiline_string": _STORE.format(comment="; note = '''\n# noqa: AGF003\n'''"),
    "backslash_continuation": _HEAD + _FORWARD + "        ctx.x = \\\n            x  # noqa: AGF003\n"
    "        return x\n" + _BACKWARD,
    "bracket_continuation": _HEAD + _FORWARD + "        ctx.x = (\n            x\n        )  # noqa: AGF003\n"
    "        return x\n" + _BACKWARD,
    "legacy_def_over_lines": _HEAD + "    def forward(\n        this, x  # noqa: AGF002\n    ):\n        return x\n",
    "comment_above": _HEAD + _FORWARD + "        # noqa: AGF003\n        ctx.x = x\n        return x\n" + _BACKWARD,
    "file_noqa": "# flake8: noqa\n" + _PLAIN,
    "file_noqa_with_codes": "# flake8: noqa: AGF004\n" + _PLAIN,
    "file_noqa_indented": "    # flake8: noqa\n" + _PLAIN,
    "file_noqa_equals": "#FLAKE8=NOQA\n" + _PLAIN,
    "file_noqa_no_space": "#flake8: noqa\n" + _PLAIN,
    "file_noqa_after_code": "x = 1  # flake8: noqa\n" + _PLAIN,
    "file_noqa_in_a_docstring": '"""\n# flake8: noqa\n"""\n' + _PLAIN,
}


def test_noqa_comments_silence_what_flake8s_silence(tmp_path: Path) -> None:
    for name, text in NOQA_CASES.items():
        (tmp_path / f"{name}.py").write_text(text, encoding="utf-8")
    lines = assert_same(run(*COMMAND_PREVIEW, ".", cwd=tmp_path), flake8(*FLAKE8_PREVIEW, ".", cwd=tmp_path))
    reported = {Path(line.split(":")[0]).stem for line in lines}
    # What flake8 does, for the record: a comment counts on any physical line of the token run it sits
    # in (strings and backslash continuations join lines; brackets do not), codes compare
    # case-sensitively, and a line starting with "# flake8: noqa" skips the file even with codes.
    # "#flake8: noqa" and "#FLAKE8=NOQA" lack the space flake8 wants after "#".
    assert reported == {
        "other_code", "lower_case_code", "bracket_continuation", "legacy_def_over_lines", "comment_above",
        "file_noqa_no_space", "file_noqa_equals", "file_noqa_after_code",
    }
    assert "AGF002" not in "".join(line for line in lines if "legacy_def_over_lines" in line)


def test_decoding_and_positions_match_flake8(tmp_path: Path) -> None:
    source = _PLAIN
    files = {
        "crlf.py": source.replace("\n", "\r\n").encode(),
        "cr.py": source.replace("\n", "\r").encode(),
        "bom.py": b"\xef\xbb\xbf" + source.encode(),
        "bom_crlf.py": b"\xef\xbb\xbf" + source.replace("\n", "\r\n").encode(),
        "latin1_cookie.py": ("# -*- coding: latin-1 -*-\n# caf\xe9\n" + source).encode("latin-1"),
        "cp1252_cookie_second_line.py": ("#!/usr/bin/env python\n# vim: set fileencoding=cp1252 :\n# \u20ac\n" + source)
        .encode("cp1252"),
        "wide_characters_before.py": source.replace("ctx.x = x", "s = '\u00e9\U0001d11e'; ctx.x = x").encode(),
        "no_final_newline.py": source.rstrip("\n").encode(),
        "form_feed.py": source.replace("    @staticmethod", "\f\n    @staticmethod", 1).encode(),
        "crlf_noqa.py": _STORE.format(comment="  # noqa").replace("\n", "\r\n").encode(),
        "crlf_multiline_string_noqa.py": NOQA_CASES["in_a_multiline_string"].replace("\n", "\r\n").encode(),
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    lines = assert_same(run(*COMMAND_PREVIEW, ".", cwd=tmp_path), flake8(*FLAKE8_PREVIEW, ".", cwd=tmp_path))
    assert {Path(line.split(":")[0]).name for line in lines} == set(files) - {
        "crlf_noqa.py", "crlf_multiline_string_noqa.py"
    }


@pytest.mark.parametrize(
    "select, ignore, preview",
    [
        ("AGF001", "", False),
        ("AGF", "AGF001", True),
        ("AGF001", "AGF0", False),
        ("AGF0", "AGF002,AGF005", False),
        ("AGF1", "", False),
        ("AGF0", "AGF005,AGF001", True),
        ("AGF1", "", True),
    ],
)
def test_select_and_ignore_match_flake8(tmp_path: Path, select: str, ignore: str, preview: bool) -> None:
    # SCALE: AGF001, and AGF005 with preview; the legacy forward: AGF001, and AGF002 and AGF113 with preview.
    files = {"scale.py": SCALE, "legacy.py": _HEAD + "    def forward(this, x):\n        return x\n"}
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    options = ["--select", select] + (["--ignore", ignore] if ignore else [])
    command_preview, flake8_preview = (["--preview"], ["--autograd-preview"]) if preview else ([], [])
    lines = assert_same(
        run(*command_preview, *options, ".", cwd=tmp_path), flake8(*flake8_preview, *options, ".", cwd=tmp_path)
    )
    assert lines  # --select AGF1 runs AGF113 without preview: a group of preview codes selected


def test_function_bases_and_stdin_match_flake8(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(PROJECT_BASE, encoding="utf-8")
    base = "mypkg.autograd_base.KernelFunction"
    lines = assert_same(
        run("--function-bases", base, "ops.py", cwd=tmp_path),
        flake8("--select", "AGF", "--autograd-function-bases", base, "ops.py", cwd=tmp_path),
    )
    assert lines
    source = textwrap.dedent(SCALE).replace("\n", "\r\n").encode()
    lines = assert_same(
        run("--preview", "-", "--stdin-filename", "pkg/scale.py", cwd=tmp_path, stdin=source),
        flake8(
            "--select", "AGF", "--autograd-preview", "-", "--stdin-display-name", "pkg/scale.py", cwd=tmp_path,
            stdin=source,
        ),
    )
    assert len(lines) == 2
