"""The ``--diff`` writer on its own: any two versions give a patch that turns the first into the second exactly
(checked by a strict applier here, and by ``patch`` and ``git apply``), hunks as ``diff -u`` writes them,
names both tools read back, and time that grows with the file, not with its square."""

from __future__ import annotations

import difflib
import io
import re
import subprocess
import tempfile
from pathlib import Path
from typing import List, Sequence, Tuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flake8_autograd.adapters.command.patch import UnnamedInPatch, unified_diff
from test_fixes_command import GIT, PATCH
from test_properties import example_count

DIFF = "/usr/bin/diff" if Path("/usr/bin/diff").exists() else None

_HUNK = re.compile(rb"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@\n\Z")
_NO_NEWLINE = b"\\ No newline at end of file\n"

# Pieces of text: line ends of every kind, and the characters bytes.splitlines() also splits at.
FRAGMENTS = [b"\n", b"\n", b"\r\n", b"\r", b"a", b"b", b"x = 1", b"    ", b"\x0c", b"\x0b", b"\x1c", b"\xc2\x85", b"#"]
LINES = [b"a\n", b"b\n", b"\n", b"c\r\n", b"d\re\n", b"\r", b"    pass\n", b"\x0c\n", b"tail"]

texts = st.lists(st.sampled_from(FRAGMENTS), max_size=60).map(b"".join)


@st.composite
def edited_pairs(draw: st.DrawFn) -> Tuple[bytes, bytes]:
    """A text and the same text with a few lines replaced, removed or added, as fixes change a file."""
    before = draw(texts)
    lines = io.BytesIO(before).readlines()
    for _ in range(draw(st.integers(0, 6))):
        at = draw(st.integers(0, len(lines)))
        removed = draw(st.integers(0, 3))
        end = at + removed
        lines[at:end] = draw(st.lists(st.sampled_from(LINES), max_size=3))
    return before, b"".join(lines)


pairs = st.one_of(edited_pairs(), st.tuples(texts, texts))


def apply_patch(before: bytes, patch: bytes) -> bytes:
    """A strict applier: each hunk must sit where its header says, with its context and removed lines there
    exactly, and its counts must match its lines."""
    original = io.BytesIO(before).readlines()
    lines = io.BytesIO(patch).readlines()
    assert lines[0] == b"--- a/f.py\n" and lines[1] == b"+++ b/f.py\n"
    result: List[bytes] = []
    taken = 0  # lines of the original copied or replaced so far
    index = 2
    while index < len(lines):
        match = _HUNK.match(lines[index])
        assert match, lines[index]
        old_start, old_count = int(match[1]), int(match[2] or b"1")
        new_start, new_count = int(match[3]), int(match[4] or b"1")
        first = old_start if old_count == 0 else old_start - 1
        assert first >= taken, "hunks overlap or go backwards"
        result.extend(original[taken:first])
        assert new_start == (len(result) if new_count == 0 else len(result) + 1)
        old_side: List[bytes] = []
        new_side: List[bytes] = []
        last_sides: Tuple[List[bytes], ...] = ()
        index += 1
        while index < len(lines) and not lines[index].startswith(b"@@"):
            line = lines[index]
            if line == _NO_NEWLINE:
                assert last_sides, "a no-newline marker after no line"
                for side in last_sides:
                    assert side[-1].endswith(b"\n")
                    side[-1] = side[-1][:-1]
            else:
                mark, text = line[:1], line[1:]
                assert mark in (b" ", b"-", b"+") and text.endswith(b"\n"), line
                last_sides = {b" ": (old_side, new_side), b"-": (old_side,), b"+": (new_side,)}[mark]
                for side in last_sides:
                    side.append(text)
            index += 1
        assert (len(old_side), len(new_side)) == (old_count, new_count)
        taken_after = first + old_count
        assert original[first:taken_after] == old_side
        result.extend(new_side)
        taken = taken_after
    result.extend(original[taken:])
    return b"".join(result)


@settings(max_examples=20 * example_count(), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pairs)
def test_the_patch_turns_before_into_after_exactly(pair: Tuple[bytes, bytes]) -> None:
    before, after = pair
    patch = unified_diff("f.py", before, after)
    assert (patch == b"") == (before == after)
    if patch:
        assert apply_patch(before, patch) == after


def run_tool(command: Sequence[str], before: bytes, patch: bytes) -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "f.py"
        target.write_bytes(before)
        applied = subprocess.run(command, cwd=folder, input=patch, capture_output=True, timeout=60)
        assert applied.returncode == 0, (applied.stdout + applied.stderr).decode(errors="replace")
        return target.read_bytes()


@pytest.mark.skipif(PATCH is None or GIT is None, reason="patch or git is not installed")
@settings(max_examples=example_count(), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edited_pairs())
def test_patch_and_git_apply_agree(pair: Tuple[bytes, bytes]) -> None:
    before, after = pair
    patch = unified_diff("f.py", before, after)
    if not patch:
        return
    assert PATCH is not None and GIT is not None
    assert run_tool([PATCH, "-p1", "--quiet", "--force"], before, patch) == after
    assert run_tool([GIT, "apply", "-p1", "-"], before, patch) == after


def test_lines_end_at_newlines_only() -> None:
    # A bare CR inside a line (a docstring's), and a CR-only file, which is a single line.
    before = b'class F:\n    """A bare CR:\r done."""\n    def forward(self, x):\n'
    after = before.replace(b"(self,", b"(ctx,")
    assert unified_diff("f.py", before, after) == (
        b'--- a/f.py\n+++ b/f.py\n@@ -1,3 +1,3 @@\n class F:\n     """A bare CR:\r done."""\n'
        b"-    def forward(self, x):\n+    def forward(ctx, x):\n"
    )
    cr_only = b"a\rb\rc\r"
    assert unified_diff("f.py", cr_only, cr_only.replace(b"b", b"B")) == (
        b"--- a/f.py\n+++ b/f.py\n@@ -1 +1 @@\n-a\rb\rc\r\n" + _NO_NEWLINE + b"+a\rB\rc\r\n" + _NO_NEWLINE
    )


def function_classes(count: int, fixed: bool) -> bytes:
    """``count`` classes with an AGF001 and an AGF002 each, as the command finds them or fixes them."""
    forward = "    @staticmethod\n    def forward(ctx, x):\n" if fixed else "    def forward(self, x):\n"
    return (
        "import torch\n\n\n"
        + "".join(
            f"class F{number}(torch.autograd.Function):\n{forward}        return x\n\n"
            "    @staticmethod\n    def backward(ctx, g):\n        return g\n\n\n"
            for number in range(count)
        )
    ).encode()


@pytest.mark.skipif(DIFF is None, reason="GNU diff is not installed")
def test_hunks_are_those_diff_u_writes(tmp_path: Path) -> None:
    assert DIFF is not None
    before, after = function_classes(40, fixed=False), function_classes(40, fixed=True)
    cut = after.index(b"class F20")
    after = after[:cut] + b"# added\n" + after[cut:-2]  # a line added, the last blank lines removed
    (tmp_path / "before").write_bytes(before)
    (tmp_path / "after").write_bytes(after)
    expected = subprocess.run(
        [DIFF, "-u", "--label", "a/f.py", "--label", "b/f.py", "before", "after"],
        cwd=tmp_path,
        capture_output=True,
        timeout=60,
    ).stdout
    assert unified_diff("f.py", before, after) == expected


def test_thousands_of_fixes_are_compared_in_small_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every class is anchored by its own ``class`` line: difflib (quadratic) only ever sees a few lines."""
    compared: List[int] = []
    real_matcher = difflib.SequenceMatcher

    def recording_matcher(junk: None, old: Sequence[bytes], new: Sequence[bytes], autojunk: bool) -> object:
        compared.append(len(old) * len(new))
        return real_matcher(junk, old, new, autojunk=autojunk)

    monkeypatch.setattr(difflib, "SequenceMatcher", recording_matcher)
    before, after = function_classes(2_000, fixed=False), function_classes(2_000, fixed=True)
    patch = unified_diff("f.py", before, after)
    assert patch.count(b"\n@@ ") == 2_000 and patch.count(b"\n+    @staticmethod\n") == 2_000
    assert max(compared, default=0) <= 10 * 10


def test_a_large_gap_without_unique_lines_is_still_an_exact_patch() -> None:
    before = b"x\n" * 3_000
    after = b"".join(b"y\n" if number % 100 == 50 else b"x\n" for number in range(3_000))
    assert apply_patch(before, unified_diff("f.py", before, after)) == after


@pytest.mark.parametrize(
    ("relative", "header"),
    [
        ("sub/plain.py", b"a/sub/plain.py"),
        ("sub/my file.py", b"a/sub/my file.py\t"),
        ("sub/tab\tx.py", b'"a/sub/tab\\tx.py"'),
        ("sub/new\nline.py", b'"a/sub/new\\nline.py"'),
        ('sub/q"b\\c.py', b'"a/sub/q\\"b\\\\c.py"'),
        ("sub/caf\u00e9.py", b'"a/sub/caf\\303\\251.py"'),
        ("sub/trailing space.py ", b'"a/sub/trailing space.py "'),
    ],
)
def test_header_names_are_quoted_as_git_quotes_them(relative: str, header: bytes) -> None:
    patch = unified_diff(relative, b"a\n", b"b\n")
    assert patch.startswith(b"--- " + header + b"\n+++ " + header.replace(b"a/", b"b/", 1) + b"\n")


def test_a_path_outside_the_current_folder_is_refused() -> None:
    with pytest.raises(UnnamedInPatch, match="outside the current folder"):
        unified_diff("../elsewhere.py", b"a\n", b"b\n")
    assert unified_diff("../elsewhere.py", b"a\n", b"a\n") == b""  # nothing to name
