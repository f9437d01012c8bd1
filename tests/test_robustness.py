"""The plugin never takes a flake8 run down: edge inputs through the real ``flake8`` executable.

flake8 aborts the whole run when a plugin raises, so every input here must end with exit status 0
or 1, no traceback, no AGF000 and no plugin failure; where the input holds mistakes a rule reports,
the findings must also be there (the edge is handled, not skipped). The engine's safety net is
checked in-process, the corpus script is kept working, deep and long code (which once crashed the
engine) is checked to give the expected findings, and known engine bugs are kept as strict xfails at
the end.
"""

from __future__ import annotations

import ast
import io
import multiprocessing
import os
import re
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, List, Optional, Sequence, Tuple
from unittest import mock

import libcst
import pytest
from libcst.metadata import MetadataWrapper

import corpus_check
from conftest import FIXTURES, lint, parseable_fixture_sources, source_lines
from flake8_autograd.engine.analysis.module_analysis import Analysis
from flake8_autograd.checking.checker import INTERNAL_ERROR, check_module
from flake8_autograd.checking import class_checks
from flake8_autograd.checking.class_checks import _ModelBuilder
from flake8_autograd.core.settings import Settings
from flake8_autograd.engine.discovery.functions import Discovery
from flake8_autograd.engine.models.class_model import ClassModel
from flake8_autograd.engine.syntax.source import parse_class
from flake8_autograd.engine.facts.tensor_kinds import Kind
from flake8_autograd.engine.facts.tensors.inference import TensorInference
from flake8_autograd.engine.syntax.walk import walk
from flake8_autograd.rules import PREVIEW_RULES, RULES
from flake8_autograd.rules.base import Finding, Rule

DEFAULT_CODES = {rule.code for rule in RULES}

FLAKE8 = str(Path(sys.executable).parent / "flake8")
FAILURE_MARKERS = ("Traceback", INTERNAL_ERROR, "plugin", "failed during execution", "critical error")
REPORT_LINE = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+):(?P<column>\d+): (?P<code>AGF\d{3})\b")

# Two findings: AGF003 on line 7 and AGF004 on line 12.
BUGGY = textwrap.dedent(
    """\
    import torch


    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x: torch.Tensor, y: torch.Tensor):
            ctx.x = x
            return x * y

        @staticmethod
        def backward(ctx, grad):
            return grad
    """
)
BUGGY_FINDINGS = [(7, "AGF003"), (12, "AGF004")]
CLASS_TEXT = BUGGY.split("\n\n\n", 1)[1]


# -- running flake8 ---------------------------------------------------------------------------------
class Run:
    def __init__(self, result: "subprocess.CompletedProcess[bytes]", preview: bool) -> None:
        self.preview = preview
        self.returncode = result.returncode
        self.stdout = result.stdout.decode("utf-8", "replace")
        self.stderr = result.stderr.decode("utf-8", "replace")

    @property
    def findings(self) -> List[Tuple[int, str]]:
        """(line, code) of every AGF line of the report, in its order."""
        return [(line, code) for _path, line, code in self._report()]

    def findings_in(self, name: str) -> List[Tuple[int, str]]:
        """(line, code) of the AGF lines for the file called ``name``, sorted."""
        return sorted((line, code) for path, line, code in self._report() if Path(path).name == name)

    def _report(self) -> List[Tuple[str, int, str]]:
        matches = (REPORT_LINE.match(line) for line in self.stdout.splitlines())
        return [(match.group("path"), int(match.group("line")), match.group("code")) for match in matches if match]

    def assert_clean(self) -> None:
        """Exit status 0 or 1, and nothing in the output says the plugin failed."""
        context = (
            f"status {self.returncode}\n--- stdout ---\n{self.stdout[-3000:]}\n--- stderr ---\n{self.stderr[-3000:]}"
        )
        assert self.returncode in (0, 1), context
        for marker in FAILURE_MARKERS:
            assert marker.lower() not in self.stdout.lower(), context
            assert marker.lower() not in self.stderr.lower(), context


def flake8(cwd: Path, *args: str, stdin: Optional[bytes] = None, timeout: int = 300, preview: bool = True) -> Run:
    """flake8 on AGF codes; with every rule on unless ``preview`` is false (the cases here exercise them all)."""
    switch = ["--autograd-preview"] if preview else []
    result = subprocess.run(
        [FLAKE8, "--select", "AGF", *switch, *args], cwd=cwd, input=stdin, capture_output=True, timeout=timeout
    )
    return Run(result, preview)


def lint_file(tmp_path: Path, content: bytes, name: str = "edge.py", preview: bool = True) -> Run:
    """Write ``content`` byte for byte and run flake8 on it (by relative name: the path stays out of the report)."""
    (tmp_path / name).write_bytes(content)
    run = flake8(tmp_path, name, preview=preview)
    run.assert_clean()
    return run


# -- edge files, linted together in one (parallel) flake8 run ----------------------------------------
@dataclass(frozen=True)
class Case:
    name: str
    content: bytes
    expected: Optional[List[Tuple[int, str]]]  # None: any findings, as long as the run is clean
    exact: bool = True  # False: the expected findings must be among the findings


def _form_feed_lines(text: str) -> str:
    """A form feed on its own line before the class and between methods (GNU style)."""
    text = text.replace("\n\n\nclass", "\n\n\x0c\nclass")
    return text.replace("\n\n    @staticmethod\n    def backward", "\n\x0c\n    @staticmethod\n    def backward")


def _latin1() -> bytes:
    text = BUGGY.replace("return x * y", "return x * y  # caf\xe9, na\xefve, \xa7 3")
    text = text.replace("def backward(ctx, grad):", "def backward(ctx, grad):\n        '''r\xe9sum\xe9 \xb5s'''")
    return ("# -*- coding: latin-1 -*-\n" + text).encode("latin-1")


def _continuations() -> bytes:
    text = BUGGY.replace("(torch.autograd.Function)", "(torch.autograd\\\n.Function)")
    return text.replace("return grad", "return \\\n            grad").encode()


EDGE_FILES: List[Case] = [
    Case("empty", b"", []),
    Case("only-a-newline", b"\n", []),
    Case("comments-only", b"# torch.autograd.Function\n# class Fn(Function):\n#     def forward(ctx): ...\n", []),
    Case("blank-and-form-feeds", b"\n\n\x0c\n   \n\t\n", []),
    Case("docstring-mentioning-Function", b'"""Function, torch.autograd.Function."""\n', []),
    Case("utf-8-bom", b"\xef\xbb\xbf" + BUGGY.encode(), BUGGY_FINDINGS),
    Case("utf-8-bom-class-on-line-1", b"\xef\xbb\xbf" + CLASS_TEXT.encode() + b"\n\nimport torch\n",
         [(4, "AGF003"), (9, "AGF004")]),
    Case("crlf", BUGGY.replace("\n", "\r\n").encode(), BUGGY_FINDINGS),
    Case("cr-only", BUGGY.replace("\n", "\r").encode(), BUGGY_FINDINGS),
    Case("mixed-newlines", BUGGY.replace("\n", "\r\n", 6).encode(), BUGGY_FINDINGS),
    Case("bom-and-crlf", b"\xef\xbb\xbf" + BUGGY.replace("\n", "\r\n").encode(), BUGGY_FINDINGS),
    Case("tabs", BUGGY.replace("    ", "\t").encode(), BUGGY_FINDINGS),
    Case("tabs-after-spaces", BUGGY.replace("        ", "    \t").encode(), BUGGY_FINDINGS),
    Case("form-feed-lines", _form_feed_lines(BUGGY).encode(), BUGGY_FINDINGS),
    Case("form-feed-inside-class",
         BUGGY.replace("    @staticmethod\n    def backward", "\x0c    @staticmethod\n    def backward").encode(),
         BUGGY_FINDINGS),
    Case("form-feed-before-class", BUGGY.replace("\nclass", "\n\x0cclass").encode(), BUGGY_FINDINGS),
    Case("latin-1-coding-cookie", _latin1(), [(8, "AGF003"), (14, "AGF004")]),
    Case("latin-1-bytes-without-cookie", BUGGY.replace("return grad", "return grad  # \xe9").encode("latin-1"), None),
    Case("no-final-newline", BUGGY.rstrip("\n").encode(), BUGGY_FINDINGS),
    Case("trailing-whitespace-at-end", (BUGGY + "    \n\t").encode(), BUGGY_FINDINGS),
    Case("backslash-continuations", _continuations(), [(8, "AGF003"), (13, "AGF004")]),
    Case("syntax-error", b"import torch\nclass Fn(torch.autograd.Function:\n    pass\n", []),
    Case("null-byte", b"import torch\n\x00\n", []),
    Case("non-ascii-identifiers",
         BUGGY.replace("Scale", "\u015ccal\u00e9").replace(" grad", " \u0261rad").encode(), BUGGY_FINDINGS),
    Case("very-long-line", BUGGY.replace("return grad", "return grad  # " + "x" * 100_000).encode(), BUGGY_FINDINGS),
    Case("string-literal-100k",
         BUGGY.replace("return grad", "_ = '" + "y" * 100_000 + "'\n        return grad").encode(),
         [(7, "AGF003"), (13, "AGF004")]),
]


def _nested(depth: int, inner: str, template: str) -> str:
    expression = inner
    for _ in range(depth):
        expression = template.format(expression)
    return expression


DEEP_RETURNS = {
    "parentheses": _nested(100, "grad", "({})"),
    "binary-ops-right": _nested(100, "grad", "(grad * {})"),
    "binary-ops-left": _nested(100, "grad", "({} + 1)"),
    "unparenthesised-chain": "grad" + " * 2" * 100,
    "calls": _nested(100, "grad", "torch.exp({})"),
    "subscripts-and-attributes": _nested(100, "grad", "({}.T[0])"),
    "conditional-expressions": _nested(100, "grad", "({} if ctx.needs_input_grad[0] else grad)"),
    "lambdas": _nested(60, "grad", "(lambda: {})()"),
    "tuple-arithmetic": "(grad,)" + " + (None,)" * 100,
    "boolean-chain": " and ".join(["grad"] * 100),
}
DEEP_FILES = [
    Case(
        f"deep-{name}",
        BUGGY.replace("return grad", f"g = {value}\n        h = {value}\n        return {value}").encode(),
        [(7, "AGF003")],
        exact=False,
    )
    for name, value in DEEP_RETURNS.items()
]


def _nested_blocks(depth: int = 90) -> bytes:
    """Statements nested inside backward to nearly the depth CPython allows (100 levels)."""
    body = "".join(" " * (8 + 4 * level) + f"if ctx.needs_input_grad[{level % 2}]:\n" for level in range(depth))
    body += " " * (8 + 4 * depth) + "return grad, grad\n"
    return BUGGY.replace("        return grad\n", body + "        return grad, None\n").encode()


BATCH = EDGE_FILES + DEEP_FILES + [Case("deep-blocks", _nested_blocks(), [(7, "AGF003")], exact=False)]


@pytest.fixture(scope="module", params=[False, True], ids=["default-rules", "preview-rules"])
def batch_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Run:
    """One flake8 run over every edge file (in worker processes), with and without ``--autograd-preview``."""
    directory = tmp_path_factory.mktemp("edge")
    for case in BATCH:
        (directory / f"{case.name}.py").write_bytes(case.content)
    return flake8(directory, "-j", "2", ".", preview=request.param)


@pytest.mark.slow  # two flake8 runs over every edge file (the serial check below stays in the default run)
@pytest.mark.parametrize("case", BATCH, ids=[case.name for case in BATCH])
def test_edge_file(batch_run: Run, case: Case) -> None:
    batch_run.assert_clean()
    findings = [(line, code) for line, code in batch_run.findings_in(f"{case.name}.py") if code < "AGF100"]
    if case.expected is None:
        return
    expected = [(line, code) for line, code in case.expected if batch_run.preview or code in DEFAULT_CODES]
    if case.exact:
        assert findings == expected, batch_run.stdout
    else:
        assert set(expected) <= set(findings), batch_run.stdout


def test_edge_files_one_by_one_match_the_batch(tmp_path: Path) -> None:
    """The serial path (one file, no worker processes) gives the same as the parallel batch."""
    for case in [EDGE_FILES[5], EDGE_FILES[7], DEEP_FILES[0]]:
        run = lint_file(tmp_path, case.content, f"{case.name}.py")
        assert case.expected is not None and set(case.expected) <= set(run.findings)


# -- size -------------------------------------------------------------------------------------------
@pytest.mark.slow  # a 5,000-class file through flake8
def test_five_thousand_function_classes_each_get_their_finding(tmp_path: Path) -> None:
    count = 5_000
    parts = ["import torch\n"]
    for index in range(count):
        parts.append(f"\n\nclass Fn{index}(torch.autograd.Function):\n    def forward(ctx, x):\n        return x\n")
    run = lint_file(tmp_path, "".join(parts).encode(), "many.py", preview=False)
    findings = run.findings
    assert len(findings) == count, "some classes were skipped"
    assert {code for _line, code in findings} == {"AGF001"}
    assert [line for line, _code in findings] == [5 + 5 * index for index in range(count)]


# -- newer syntax inside Function classes -----------------------------------------------------------
SYNTAX_CASES: List[Tuple[str, Tuple[int, int], str]] = [
    ("walrus", (3, 8), "if (n := x.dim()) > 2:\n    ctx.n = n\nctx.w = (w := x * 2)"),
    ("positional-only", (3, 8), "def helper(a, /, b, *, c):\n    return a"),
    ("match", (3, 10), textwrap.dedent(
        """\
        match mode:
            case {"scale": s, **rest} if s > 0:
                ctx.v = x * s
            case [first, *others]:
                ctx.v = x
            case Point(x=0) | None:
                pass
            case _:
                pass"""
    )),
    ("parenthesised-context-managers", (3, 10), "with (torch.no_grad() as a, torch.enable_grad() as b):\n    pass"),
    ("except-star", (3, 11), "try:\n    pass\nexcept* ValueError as group:\n    ctx.errors = group"),
    ("star-in-index", (3, 11), "ctx.v = x[*ctx.index]"),
    ("type-parameters", (3, 12), "def helper[T](a: T) -> T:\n    return a\ntype Alias = list[int]"),
    ("nested-f-strings", (3, 12), 'ctx.name = f"{f"{f"{x!r}"}"}"\nctx.path = f"{"\\n".join(["a", "b"])}"'),
]


@pytest.mark.parametrize(
    "version, snippet",
    [
        pytest.param(version, snippet, marks=pytest.mark.skipif(sys.version_info < version, reason=f"needs {version}"))
        for _name, version, snippet in SYNTAX_CASES
    ],
    ids=[name for name, _version, _snippet in SYNTAX_CASES],
)
def test_newer_syntax_inside_function_classes(tmp_path: Path, version: Tuple[int, int], snippet: str) -> None:
    source = BUGGY.replace(
        "def forward(ctx, x: torch.Tensor, y: torch.Tensor):\n",
        "def forward(ctx, x: torch.Tensor, y: torch.Tensor, mode=None):\n" + textwrap.indent(snippet, " " * 8) + "\n",
    )
    ast.parse(source)  # the snippet is valid on this interpreter
    run = lint_file(tmp_path, source.encode())
    try:
        libcst.parse_module(source)
    except libcst.ParserSyntaxError:
        assert run.findings == []  # libcst cannot parse the class: skipped, silently
    else:
        shift = snippet.count("\n") + 1
        assert {(line + shift, code) for line, code in BUGGY_FINDINGS} <= set(run.findings)


@pytest.mark.skipif(sys.version_info < (3, 12), reason="PEP 695 needs Python 3.12")
def test_generic_function_class(tmp_path: Path) -> None:
    source = BUGGY.replace("class Scale(torch.autograd.Function):", "class Scale[T](torch.autograd.Function):")
    lint_file(tmp_path, source.encode())


ODD_METHODS = textwrap.dedent(
    """\
    import torch


    class AsyncFn(torch.autograd.Function):
        async def forward(ctx, x, y):
            ctx.x = x
            return x * y

        @staticmethod
        async def backward(self, grad):
            return grad


    class AssignedFn(torch.autograd.Function):
        forward = staticmethod(lambda ctx, x, y: x * y)
        backward = lambda ctx, grad: grad
        vjp = staticmethod(_impl)
        jvp: Any = staticmethod(lambda ctx, *tangents: tangents)
        setup_context = None
        vmap, other = staticmethod(_vmap), 1


    class HalfAssigned(torch.autograd.Function):
        backward = staticmethod(lambda ctx, grad: (grad, grad))

        @staticmethod
        def forward(ctx, x):
            return x.clone()


    class OneLiners(torch.autograd.Function):
        forward = staticmethod(lambda ctx, x: x); backward = staticmethod(lambda ctx, g: g)


    class Empty(torch.autograd.Function): pass


    class Generators(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            yield x

        @staticmethod
        async def backward(ctx, grad):
            yield grad
            await grad
    """
)


def test_async_lambda_and_assigned_methods(tmp_path: Path) -> None:
    run = lint_file(tmp_path, ODD_METHODS.encode())
    assert run.findings == [(5, "AGF001"), (10, "AGF002"), (11, "AGF004"), (17, "AGF113")]


# -- standard input ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "content, expected",
    [
        (BUGGY.encode(), BUGGY_FINDINGS),
        (b"\xef\xbb\xbf" + BUGGY.replace("\n", "\r\n").encode(), BUGGY_FINDINGS),
        (_latin1(), [(8, "AGF003"), (14, "AGF004")]),
        (b"", []),
        (ODD_METHODS.encode(), [(5, "AGF001"), (10, "AGF002"), (11, "AGF004"), (17, "AGF113")]),
    ],
    ids=["plain", "bom-crlf", "latin-1", "empty", "odd-methods"],
)
def test_standard_input(tmp_path: Path, content: bytes, expected: List[Tuple[int, str]]) -> None:
    run = flake8(tmp_path, "-", "--stdin-display-name", "buffer.py", stdin=content)
    run.assert_clean()
    assert run.findings == expected
    assert all(line.startswith("buffer.py:") for line in run.stdout.splitlines())


# -- in-process: the safety net ---------------------------------------------------------------------
class ExplodingRule(Rule):
    code = "AGF999"
    name = "raises on one class"
    message = "never reported"

    def __init__(self, victim: str) -> None:
        self.victim = victim

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        if model.name == self.victim:
            yield Finding(1, 0, self.code, "partial result that must be dropped")
            raise ZeroDivisionError("boom")
        return


THREE_CLASSES = textwrap.dedent(
    """\
    import torch


    class First(torch.autograd.Function):
        def forward(ctx, x):
            return x


    class Victim(torch.autograd.Function):
        def forward(ctx, x):
            return x


    class Last(torch.autograd.Function):
        @staticmethod
        def forward(context, x):
            return x
    """
)


def _lint_with(rules: Sequence[Rule], source: str = THREE_CLASSES) -> List[Finding]:
    """The findings of ``rules``, rules of a test among them, in place of those the settings choose."""
    with mock.patch.object(class_checks, "rules_for", lambda settings: rules):
        return check_module(ast.parse(source), io.StringIO(source).readlines(), "three.py")


def test_a_raising_rule_gives_one_internal_error_at_its_class_and_the_rest_is_checked() -> None:
    findings = _lint_with([*RULES, *PREVIEW_RULES, ExplodingRule("Victim")])
    internal = [finding for finding in findings if finding.code == INTERNAL_ERROR]
    assert len(internal) == 1
    assert (internal[0].line, internal[0].column) == (9, 0)
    assert internal[0].message == "AGF000 internal error while checking Victim: ZeroDivisionError; please report"
    others = [(finding.line, finding.code) for finding in findings if finding.code != INTERNAL_ERROR]
    # First and Last keep their findings (AGF113: none has a backward); Victim has none.
    assert others == [(5, "AGF001"), (5, "AGF113"), (16, "AGF113"), (16, "AGF002")]


@pytest.mark.parametrize("position", ["first", "last"])
def test_a_raising_rule_does_not_hide_findings_of_the_other_rules_elsewhere(position: str) -> None:
    rules = [ExplodingRule("First"), *RULES] if position == "first" else [*RULES, ExplodingRule("Last")]
    codes = [(finding.line, finding.code) for finding in _lint_with(rules)]
    assert codes.count((4 if position == "first" else 14, INTERNAL_ERROR)) == 1
    assert (10, "AGF001") in codes


def test_libcst_failure_is_silent(monkeypatch: pytest.MonkeyPatch) -> None:
    """Syntax Python accepts and the installed libcst cannot parse: the class is skipped, no AGF000.

    No such syntax was found for libcst 1.9 on Python 3.11 (about 120 candidates: soft keywords,
    PEP 646 stars, numbers glued to keywords, f-string corners, odd whitespace), so it is simulated.
    """
    calls: List[str] = []

    def refuse(text: str, *args: object, **kwargs: object) -> libcst.Module:
        calls.append(text)
        raise libcst.ParserSyntaxError("unsupported syntax", lines=text.splitlines(True) or [""], raw_line=1,
                                       raw_column=0)

    monkeypatch.setattr(libcst, "parse_module", refuse)
    assert lint(BUGGY) == []
    assert len(calls) == 1
    nested = "import torch\n\n\ndef factory():\n" + textwrap.indent(CLASS_TEXT, "    ")
    assert lint(nested) == []


def test_libcst_unexpected_exception_is_silent_too(monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(text: str, *args: object, **kwargs: object) -> libcst.Module:
        raise RuntimeError("native parser failure")

    monkeypatch.setattr(libcst, "parse_module", explode)
    assert lint(BUGGY) == []


def test_check_module_never_raises_even_when_discovery_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    import flake8_autograd.checking.checker as checker

    def broken(*args: object, **kwargs: object) -> None:
        raise KeyError("discovery")

    monkeypatch.setattr(checker, "Discovery", broken)
    findings = lint(BUGGY)
    assert [(finding.line, finding.code) for finding in findings] == [(1, INTERNAL_ERROR)]
    assert findings[0].message == "AGF000 internal error while checking module: KeyError; please report"


# -- the corpus script ------------------------------------------------------------------------------
@pytest.mark.slow  # a corpus run over the fixtures and the package
def test_corpus_check_runs_on_the_fixtures_and_the_package(capsys: pytest.CaptureFixture[str]) -> None:
    import flake8_autograd

    package = Path(flake8_autograd.__file__).parent
    roots = [str(FIXTURES), str(package)]
    status = corpus_check.main([*roots, "-j", "1", "--core-only"])
    out = capsys.readouterr().out
    assert status == 0, out
    for label in ("rules run:", "files checked:", "files skipped:", "Function classes found:", "AGF000", "exceptions:",
                  "elapsed:"):
        assert label in out

    summary = corpus_check.run([FIXTURES, package], jobs=1, core_only=True)
    assert summary.files_checked >= len(list(FIXTURES.glob("*.py"))) + 5
    assert summary.function_classes >= 100
    assert set(summary.codes) == DEFAULT_CODES
    assert not summary.failed

    # Every rule, in worker processes: the exit status follows the summary (no AGF000 there is
    # asserted by the property tests, unit by unit).
    status = corpus_check.main([*roots, "-j", "2"])
    out = capsys.readouterr().out
    assert status == (1 if "AGF000 at " in out or "exception in " in out else 0), out
    assert "AGF101" in out


def test_corpus_check_counts_skips_and_reports_internal_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "broken.py").write_bytes(b"def (:\n")
    (tmp_path / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\nx = '\xe9'\n")
    (tmp_path / "buggy.py").write_text(BUGGY)
    summary = corpus_check.run([tmp_path], jobs=1)
    assert (summary.files_checked, summary.files_skipped, summary.function_classes) == (2, 1, 1)
    assert dict(summary.codes) == {"AGF003": 1, "AGF004": 1}
    assert not summary.failed

    monkeypatch.setattr(corpus_check, "check_module", lambda *args: [Finding(3, 0, INTERNAL_ERROR, "AGF000 x")])
    summary = corpus_check.run([tmp_path / "buggy.py"], jobs=1)
    assert summary.failed and summary.internal_errors == [f"{tmp_path / 'buggy.py'}:3: AGF000 x"]


@pytest.mark.skipif(multiprocessing.get_start_method() != "fork", reason="the patch reaches workers through fork")
def test_corpus_check_finds_a_file_that_kills_its_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that dies (as on a segfault) neither hangs the run nor loses the other files."""
    for index in range(40):
        (tmp_path / f"ok{index:02}.py").write_text(BUGGY)
    (tmp_path / "crash.py").write_text(BUGGY)

    def die_on_crash_py(tree: ast.Module, lines: Sequence[str], path: str, settings: Settings) -> List[Finding]:
        if path.endswith("crash.py"):
            os._exit(3)  # as a segfault would: the worker is gone
        return check_module(tree, lines, path, settings)

    monkeypatch.setattr(corpus_check, "check_module", die_on_crash_py)
    summary = corpus_check.run([tmp_path], jobs=2)
    assert [path for path, _error in summary.exceptions] == [str(tmp_path / "crash.py")]
    assert summary.files_checked == 41 and summary.codes["AGF003"] == 40
    assert summary.failed


def test_corpus_check_reads_files_like_flake8() -> None:
    assert corpus_check.read_lines(b"\xef\xbb\xbfx = 1\r\ny = 2\r") == ["x = 1\n", "y = 2\n"]
    assert corpus_check.read_lines(b"# -*- coding: latin-1 -*-\nx = '\xe9'\n")[1] == "x = '\xe9'\n"
    assert corpus_check.read_lines(b"x = '\xe9'\n") == ["x = '\xe9'\n"]  # not UTF-8: latin-1, as flake8 does
    assert corpus_check.read_lines(b"a\x0cb\n") == ["a\x0cb\n"]  # split on newlines only


# -- deep and long code -----------------------------------------------------------------------------
# Each input below once made the engine fail: AGF000, a crash of the whole flake8 process (libcst's
# native parser overflowing the C stack), a run that looked hung, or a class silently skipped. Each
# is now handled: the findings are the ones expected, or, where the engine cannot follow the code
# within its budgets, none at all (unknown means silent).
#
# Sizes are well past the old thresholds (each recursion took at least 1000 levels even where Python
# 3.12 inlines comprehensions) and below the ones where pyflakes or ast give up.
# Through flake8: inputs that pyflakes and pycodestyle handle, so the outcome is this plugin's alone.
# In-process: inputs on which pyflakes itself overflows the stack as well (nested binary operations
# and elif chains deeper than about 330), so only the engine can be checked on them.
def _chain_backward(body: str) -> str:
    return textwrap.dedent(
        """\
        import torch


        class Fn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                return x * y

            @staticmethod
            def backward(ctx, grad):
        """
    ) + body


def _kernel_source_class(pieces: int) -> str:
    """A Function class embedding kernel source as implicitly concatenated literals, one per line."""
    lines = "".join(f'        "    out[i] = in[i] * {i};\\n"\n' for i in range(pieces))
    return f"import torch\n\n\nclass Fn(torch.autograd.Function):\n    SOURCE = (\n{lines}    )\n\n" + (
        "    def forward(ctx, x):\n        return x\n"
    )


def _elif_chain(branches: int) -> str:
    """A backward returning one gradient (of two) in each of ``branches`` branches, falling off after them."""
    return _chain_backward(
        "        if ctx.mode == 0:\n            return grad\n"
        + "".join(f"        elif ctx.mode == {i}:\n            return grad\n" for i in range(1, branches))
    )


DEEP_THROUGH_FLAKE8: List[Tuple[str, str, List[Tuple[int, str]]]] = [
    (
        # libcst's position pass recurses once per level: positions come from ast, statement by statement.
        "kernel-source-of-400-concatenated-literals",
        _kernel_source_class(400),
        [(408, "AGF001"), (408, "AGF113")],
    ),
    (
        # An `or` of 400 operands is flat in ast but 400 deep in libcst.
        "or-chain-of-400-operands",
        _chain_backward("        return grad if " + " or ".join(["grad"] * 400) + " else grad\n"),
        [(11, "AGF004")],
    ),
    (
        # Counting follows a chain of names only so far: past its budget the count is unknown.
        "chain-of-600-rebound-names",
        _chain_backward("".join(f"        a{i + 1} = a{i} * 2\n" for i in range(600)).replace("= a0 ", "= grad ")
                        + "        return a600\n"),
        [],
    ),
    (
        # AGF005 follows aliases with a worklist, to the end of the chain (to a computation other
        # than the second slot's: the same code computed twice counts once).
        "chain-of-600-aliases",
        _chain_backward("        a0 = grad * 3\n" + "".join(f"        a{i + 1} = a{i}\n" for i in range(600))
                        + "        return a600, grad * 2\n"),
        [(10, "AGF005")],
    ),
    (
        # setup_context's inference of forward shares its depth budget: both chains together exceed it.
        "setup-context-and-forward-chains-sharing-one-budget",
        textwrap.dedent(
            """\
            import torch


            class Fn(torch.autograd.Function):
                @staticmethod
                def forward(x: torch.Tensor):
                    return x{forward}

                @staticmethod
                def setup_context(ctx, inputs, output):
                    ctx.y = output{setup}
            """
        ).format(forward=" + 1" * 250, setup=" + 1" * 195),
        [(6, "AGF113")],  # no backward
    ),
    (
        # A string annotation this long is not parsed (libcst's parser overflows the C stack from ~2000
        # levels): x is of unknown kind, and the class is checked for the rest.
        "string-annotation-nested-100000-deep",
        BUGGY.replace("x: torch.Tensor,", 'x: "' + "(" * 100_000 + "torch.Tensor" + ")" * 100_000 + '",'),
        [(12, "AGF004")],
    ),
]

DEEP_IN_PROCESS: List[Tuple[str, str, List[Tuple[int, str]]]] = [
    (
        "string-annotation-of-1500-alternatives",
        BUGGY.replace("x: torch.Tensor,", 'x: "' + " | ".join(["torch.Tensor"] * 1500) + '",'),
        [(12, "AGF004")],
    ),
    (
        # 601 gradients for 2 inputs, all surplus ones None: counted (in a loop, not a recursion), and fine.
        "sum-of-600-tuples-of-none",
        _chain_backward("        return (grad,)" + " + (None,)" * 600 + "\n"),
        [],
    ),
    (
        "sum-of-600-tuples-of-gradients",
        _chain_backward("        return (grad,)" + " + (grad,)" * 600 + "\n"),
        [(11, "AGF004")],
    ),
    (
        # can_fall_off walks the elif chain in a loop; positions come from ast.
        "chain-of-900-elifs",
        _elif_chain(900),
        [(10, "AGF004")] + [(12 + 2 * branch, "AGF004") for branch in range(900)],
    ),
]

BUG_TIMEOUT = 120  # seconds; a safety net only: flake8 fails on each of these within a few seconds


def _cases(cases: List[Tuple[str, str, List[Tuple[int, str]]]]) -> List[object]:
    return [pytest.param(source, expected, id=name) for name, source, expected in cases]


@pytest.mark.parametrize("source, expected", _cases(DEEP_THROUGH_FLAKE8))
def test_deep_code_through_flake8(tmp_path: Path, source: str, expected: List[Tuple[int, str]]) -> None:
    (tmp_path / "deep.py").write_text(source)
    try:
        run = flake8(tmp_path, "deep.py", timeout=BUG_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"flake8 did not finish within {BUG_TIMEOUT} s")
    run.assert_clean()
    assert run.findings == expected


@pytest.mark.parametrize("preview", [False, True], ids=["default-rules", "preview-rules"])
@pytest.mark.parametrize("source, expected", _cases(DEEP_IN_PROCESS))
def test_deep_code_in_process(source: str, expected: List[Tuple[int, str]], preview: bool) -> None:
    findings = lint(source, preview=preview)
    assert INTERNAL_ERROR not in [finding.code for finding in findings], findings
    if not preview:
        assert [(finding.line, finding.code) for finding in findings] == [
            (line, code) for line, code in expected if code in DEFAULT_CODES
        ]


# Deeper than libcst is trusted with (its parser overflows the C stack from ~7500 levels): the class is
# not parsed at all, and one AGF000 at it says so. pyflakes overflows on the elif chain: in-process only.
TOO_DEEP_THROUGH_FLAKE8 = BUGGY.replace("return x * y", "return x if " + " and ".join(["x"] * 20_000) + " else y")
TOO_DEEP_IN_PROCESS = _elif_chain(1000)


def test_a_class_too_deep_to_parse_through_flake8(tmp_path: Path) -> None:
    (tmp_path / "deep.py").write_text(TOO_DEEP_THROUGH_FLAKE8)
    run = flake8(tmp_path, "deep.py", timeout=BUG_TIMEOUT)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert run.findings == [(4, INTERNAL_ERROR)]
    assert "AGF000 Scale is nested too deeply to check" in run.stdout


@pytest.mark.parametrize("preview", [False, True], ids=["default-rules", "preview-rules"])
def test_a_class_too_deep_to_parse_in_process(preview: bool) -> None:
    findings = lint(TOO_DEEP_IN_PROCESS, preview=preview)
    assert [(finding.line, finding.code) for finding in findings] == [(4, INTERNAL_ERROR)]
    assert findings[0].message.startswith("AGF000 Fn is nested too deeply to check (more than 1000 levels")


def _deep_custom_op(branches: int) -> str:
    chain = "    if mode == 0:\n        return grad\n" + "".join(
        f"    elif mode == {i}:\n        return grad\n" for i in range(1, branches)
    )
    return (
        "import torch\n\n\n"
        '@torch.library.custom_op("mylib::scale", mutates_args=())\n'
        "def scale(x: torch.Tensor) -> torch.Tensor:\n    return x * 2\n\n\n"
        "def setup_context(ctx, inputs, output):\n    pass\n\n\n"
        "def backward(ctx, grad):\n    mode = 0\n" + chain + "    return grad\n\n\n"
        "scale.register_autograd(backward, setup_context=setup_context)\n"
    )


def test_a_custom_op_registration_too_deep_to_parse_is_said_so() -> None:
    findings = lint(_deep_custom_op(1000), preview=True)
    assert [(finding.line, finding.code) for finding in findings] == [(5, INTERNAL_ERROR)]  # at the def
    assert findings[0].message.startswith("AGF000 scale is nested too deeply to check")
    assert INTERNAL_ERROR not in [finding.code for finding in lint(_deep_custom_op(50), preview=True)]


def _doubling_names(count: int) -> str:
    body = "".join(f"        a{i} = a{i - 1} + a{i - 1}\n" for i in range(1, count + 1))
    return _chain_backward(f"        a0 = (grad,)\n{body}        return a{count}\n")


def test_names_used_twice_are_counted_once() -> None:
    """``a{i} = a{i-1} + a{i-1}``: counting each name once keeps this linear (it was 2**24 steps, minutes)."""
    source = _doubling_names(24)
    started = time.perf_counter()
    findings = lint(source, preview=True)
    elapsed = time.perf_counter() - started
    assert INTERNAL_ERROR not in [finding.code for finding in findings]
    assert elapsed < 0.3, f"{elapsed:.2f} s for one small class"


def test_a_long_chain_of_names_that_counts_small_is_counted() -> None:
    """Names bound along a chain, each counted once, to a count the rule can check."""
    body = "        a0 = (grad,)\n" + "".join(f"        a{i} = a{i - 1}\n" for i in range(1, 20))
    findings = lint(_chain_backward(body + "        return a19\n"), preview=True)
    assert [(finding.line, finding.code) for finding in findings] == [(31, "AGF004")]


# -- positions without libcst's position pass -------------------------------------------------------
ALL_STATEMENTS = textwrap.dedent(
    """\
    import torch


    @decorator
    class Fn(torch.autograd.Function):
        x = 1; y = 2
        @staticmethod
        async def forward(ctx, x):
            if x: a = 1; b = 2
            elif x > 1:
                pass
            else: c = 3
            for i in x: pass
            else:
                d = 4
            while x:
                break
            else: pass
            try:
                pass
            except ValueError as e:
                pass
            else:
                pass
            finally:
                ctx.caf\u00e9 = "\u00e9"; ctx.f = 1
            with a as b, c: pass
            async with a: pass
            async for i in x: pass
            class Inner:
                def method(self): return 1
            def helper(): yield
            return x
    """
)
MATCH_STATEMENT = "\n".join(
    [
        "import torch",
        "class Fn(torch.autograd.Function):",
        "    def forward(ctx, x):",
        "        match x:",
        "            case 1: pass",
        "            case [a, *b]:",
        "                return a",
        "        try:",
        "            pass",
        "        except* ValueError:",
        "            pass",
        "",
    ]
)


def _statement_positions_agree(source: str) -> int:
    """Compare the fallback positions of every statement with libcst's; the number compared."""
    lines = source_lines(source)
    compared = 0
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ClassDef):
            continue
        segment = parse_class(lines, node)
        if segment is None:
            continue
        exact, fallback = segment._resolve(), segment._statement_positions()
        for cst_node in [segment.class_node, *walk(segment.class_node)]:
            if isinstance(cst_node, (libcst.BaseSmallStatement, libcst.BaseCompoundStatement,
                                     libcst.SimpleStatementLine)):
                assert fallback.get(cst_node) == exact[cst_node], libcst.Module([]).code_for_node(cst_node)
                compared += 1
    return compared


def test_statement_positions_from_ast_match_libcst_on_every_statement_kind() -> None:
    assert _statement_positions_agree(ALL_STATEMENTS) >= 40
    if sys.version_info >= (3, 11):
        assert _statement_positions_agree(MATCH_STATEMENT) >= 8


def test_statement_positions_from_ast_match_libcst_on_the_fixtures() -> None:
    for _path, source in parseable_fixture_sources():
        _statement_positions_agree(source)


def test_findings_keep_their_positions_when_libcst_positions_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    def overflow(*args: object, **kwargs: object) -> None:
        raise RecursionError("maximum recursion depth exceeded")

    expected = [(finding.line, finding.column, finding.code) for finding in lint(BUGGY)]
    monkeypatch.setattr(MetadataWrapper, "resolve", overflow)
    assert [(finding.line, finding.column, finding.code) for finding in lint(BUGGY)] == expected


# -- precision of tensor inference ------------------------------------------------------------------
def _inference(source: str, method: str) -> TensorInference:
    lines = source_lines(textwrap.dedent(source))
    tree = ast.parse("".join(lines))
    discovery = Discovery(tree, "example.py")
    model = _ModelBuilder(lines).build(discovery.function_classes[0])
    assert model is not None
    found = model.method(method)
    assert found is not None
    return Analysis(tree, discovery).inference(found)


def test_an_augmented_assignment_does_not_hide_what_an_input_is() -> None:
    source = """\
        import torch


        class Fn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, y, z):
                y += 1
                z = 2
                ctx.save_for_backward(x, y, z)
                return x * y
        """
    inference = _inference(source, "forward")
    assert inference.method.signature is not None
    params = {param.name: param for param in inference.method.signature.positional}
    assert inference.input_kind(params["y"]) is Kind.TENSOR  # changed in place: still the tensor it was
    assert inference.input_kind(params["z"]) is Kind.UNKNOWN  # rebound: the name no longer tells


@pytest.mark.parametrize("first", ["ctx, ", ""], ids=["leftover-ctx", "no-ctx"])
def test_setup_context_inputs_map_to_the_forward_inputs(first: str) -> None:
    """``inputs[i]`` is forward's i-th input, whether or not forward keeps a leftover ctx first."""
    source = f"""\
        import torch


        class Fn(torch.autograd.Function):
            @staticmethod
            def forward({first}x: torch.Tensor, n: int):
                return x * n

            @staticmethod
            def setup_context(ctx, inputs, output):
                a, b = inputs
                ctx.a = a
                ctx.b = b
                ctx.c = inputs[0]
                ctx.d = inputs[1]
        """
    inference = _inference(source, "setup_context")
    stores = {store.attribute: store.value for store in inference.facts.ctx_stores}
    kinds = {attribute: inference.kind(value) for attribute, value in stores.items()}
    assert kinds == {"a": Kind.TENSOR, "b": Kind.NOT_TENSOR, "c": Kind.TENSOR, "d": Kind.NOT_TENSOR}


# -- contract methods bound by assignment ------------------------------------------------------------
# Once an internal error (AGF000): the rules that report at a method asked it for a def's position.
ASSIGNED_CONTRACT_METHODS = textwrap.dedent(
    """\
    import torch


    class Fn(torch.autograd.Function):
        vjp = staticmethod(_vjp)

        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad


    class Gen(torch.autograd.Function):
        generate_vmap_rule = True
        vmap = staticmethod(_vmap)

        @staticmethod
        def forward(x):
            return x.clone()

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass


    class NoBackward(torch.autograd.Function):
        forward = staticmethod(lambda ctx, x: x)
    """
)


def test_preview_rules_report_at_a_method_bound_by_assignment(tmp_path: Path) -> None:
    (tmp_path / "assigned.py").write_text(ASSIGNED_CONTRACT_METHODS)
    run = flake8(tmp_path, "--autograd-preview", "assigned.py")
    run.assert_clean()
    # vjp beside backward, vmap beside generate_vmap_rule, and two classes with no backward at all.
    assert run.findings == [(5, "AGF113"), (18, "AGF115"), (21, "AGF113"), (30, "AGF113")]


ODD_CONTRACT_CLASSES = {
    "dirty with walrus, starred and a match": '''
import torch
class F(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, *rest, **options):
        if (n := len(rest)) > 0:
            ctx.mark_dirty(x, *rest)
        match options:
            case {"double": True}:
                return x * 2
            case _:
                return (*rest, -x)
    @staticmethod
    def backward(ctx, *grads):
        return grads
''',
    "no forward, async and nested classes": '''
import torch
class F(torch.autograd.Function):
    class Inner:
        pass
    async def foward(ctx, x):
        return x
    @staticmethod
    def backward(ctx, g): ...
def run(x):
    return F.apply(x), [F.apply(y) for y in x]
''',
    "saved tensors read in try-star, lambda and comprehension": '''
import torch
class F(torch.autograd.Function):
    clear_saved_tensors_on_access = True
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2
    @staticmethod
    def backward(ctx, g):
        try:
            a = ctx.saved_tensors[0]
        except* ValueError:
            a = None
        f = lambda: ctx.saved_tensors
        b = [ctx.saved_tensors for _ in range(2)]
        return g * 2
''',
    "jvp with starred and empty returns": '''
import torch
class F(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        m = x > 0
        ctx.mark_non_differentiable(m)
        return x, m
    @staticmethod
    def jvp(ctx, *tangents):
        if not tangents:
            return
        return (*tangents, tangents[0])
    @staticmethod
    def backward(ctx, g, gm):
        return g
''',
}


@pytest.mark.skipif(sys.version_info < (3, 11), reason="except* needs Python 3.11")
@pytest.mark.parametrize("source", list(ODD_CONTRACT_CLASSES.values()), ids=list(ODD_CONTRACT_CLASSES))
def test_the_contract_checks_on_odd_code_neither_raise_nor_report(tmp_path: Path, source: str) -> None:
    """AGF136-AGF139 on odd but valid code: starred marks and returns, a match, a walrus, an async near-miss
    of forward, reads in ``try*``, a lambda and a comprehension, a jvp that falls off or returns starred."""
    ast.parse(source)
    run = lint_file(tmp_path, source.encode())
    run.assert_clean()
    assert [code for _line, code in run.findings if code in ("AGF136", "AGF138", "AGF139")] == []
