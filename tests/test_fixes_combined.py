"""Every fix of a class at once, under torch: fixed classes compute the gradients they computed before.

The oracle fixtures' classes run under torch (their ``# torch:`` declarations). Each is mutated by undoing
what a fix repairs (a dropped ``@staticmethod``, ``self`` for ``ctx``, tensors kept on ctx instead of
saved, a list returned, the class instantiated instead of ``apply``), several mutations and several
classes at once; then ``--fix`` (every rule, preview included) repairs the mutant. For every declaration
whose original runs:

- where the mutant runs, the fixed class runs and gives the mutant's gradients (a fix never changes
  what working code computes);
- where the fixed class runs, it gives the original's gradients (what a fix writes is the intended code);

and no fixed class has a finding of a code that the mutant did not have. Skipped without torch.
"""

from __future__ import annotations

import ast
import os
import random
import re
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import pytest

from test_fixes_oracle import ORACLE_FIXTURES, gradients, torch  # first: skips this module without torch

from flake8_autograd.adapters.command.fixer import fix_text
from flake8_autograd.adapters.command.runner import CheckOptions
from oracle import load_fixture, parse_fixture
from test_fixes import assert_no_new_codes

Lines = List[str]
# A mutation rewrites the lines of one class (first to last line, 0-based, inclusive) in place; it
# returns False when it found nothing to undo there.
Mutation = Callable[[Lines, int, int], bool]

METHOD = re.compile(r"^(?P<indent>\s+)def (?P<name>forward|backward)\((?P<ctx>ctx)\b")


def _methods(lines: Lines, first: int, last: int) -> List[Tuple[str, int, int]]:
    """(name, def line, last line) of the forward and backward methods written ``def m(ctx, ...)``."""
    found = []
    for index in range(first, last + 1):
        match = METHOD.match(lines[index])
        if not match:
            continue
        indent = len(match.group("indent"))
        end = index + 1
        while end <= last and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent):
            end += 1
        while not lines[end - 1].strip():
            end -= 1
        found.append((match.group("name"), index, end - 1))
    return found


def drop_staticmethod(lines: Lines, first: int, last: int) -> bool:
    """AGF001's fix undone."""
    changed = False
    for _, start, _ in reversed(_methods(lines, first, last)):
        if lines[start - 1].strip() == "@staticmethod":
            del lines[start - 1]
            changed = True
    return changed


def ctx_as_self(lines: Lines, first: int, last: int) -> bool:
    """AGF002's fix undone: the context named ``self``."""
    changed = False
    for _, start, end in _methods(lines, first, last):
        body = "".join(lines[start:end + 1])
        if re.search(r"\bself\b", body) or re.search(r"['\"].*\bctx\b", body):
            continue
        lines[start:end + 1] = [re.sub(r"\bctx\b", "self", line) for line in lines[start:end + 1]]
        changed = True
    return changed


def list_return(lines: Lines, first: int, last: int) -> bool:
    """AGF116's fix undone: backward returns a list."""
    changed = False
    for name, start, end in _methods(lines, first, last):
        if name != "backward":
            continue
        for index in range(start + 1, end + 1):
            match = re.match(r"^(\s+)return ([^#]+?)(\s*#.*)?\n$", lines[index])
            if not match or not _is_bare_tuple(match.group(2)):
                continue
            lines[index] = f"{match.group(1)}return [{match.group(2)}]{match.group(3) or ''}\n"
            changed = True
    return changed


def _is_bare_tuple(expression: str) -> bool:
    try:
        parsed = ast.parse(expression, mode="eval").body
    except SyntaxError:
        return False
    return isinstance(parsed, ast.Tuple) and not expression.lstrip().startswith("(") and len(parsed.elts) > 1


SAVE = re.compile(r"^(\s+)ctx\.save_for_backward\((?P<names>\w+(?:, \w+)*)\)\n$")
UNPACK = re.compile(r"^(\s+)\(?(?P<names>\w+(?:, \w+)*),?\)? = ctx\.saved_tensors\n$")


def kept_on_ctx(lines: Lines, first: int, last: int) -> bool:
    """AGF003's fix undone: the saved tensors kept as ctx attributes, read back one by one."""
    methods = {name: (start, end) for name, start, end in _methods(lines, first, last)}
    if set(methods) != {"forward", "backward"}:
        return False
    saves = [i for i in range(methods["forward"][0], methods["forward"][1] + 1) if SAVE.match(lines[i])]
    unpacks = [i for i in range(methods["backward"][0], methods["backward"][1] + 1) if UNPACK.match(lines[i])]
    if len(saves) != 1 or len(unpacks) != 1:
        return False
    save, unpack = SAVE.match(lines[saves[0]]), UNPACK.match(lines[unpacks[0]])
    assert save is not None and unpack is not None
    saved, unpacked = save.group("names").split(", "), unpack.group("names").split(", ")
    text = "".join(lines[first:last + 1])
    if len(saved) != len(unpacked) or len(set(saved)) != len(saved):
        return False
    if any(f".{name}" in text for name in saved):
        return False  # an attribute of that name exists already
    targets = ", ".join(unpacked) + ("," if len(unpacked) == 1 else "")
    values = ", ".join(f"ctx.{name}" for name in saved) + ("," if len(saved) == 1 else "")
    lines[unpacks[0]] = f"{unpack.group(1)}{targets} = {values}\n"
    lines[saves[0]:saves[0] + 1] = [f"{save.group(1)}ctx.{name} = {name}\n" for name in saved]
    return True


CLASS_MUTATIONS: Sequence[Mutation] = (kept_on_ctx, list_return, ctx_as_self, drop_staticmethod)


def instantiate(text: str, classes: Sequence[str]) -> str:
    """AGF111's fix undone: ``Cls()(...)`` in the helpers instead of ``Cls.apply(...)``."""
    calls = re.compile(rf"(?<![\w.])({'|'.join(map(re.escape, classes))})\.apply\(") if classes else None
    if calls is None:
        return text
    lines = text.splitlines(keepends=True)
    # code only: the ``# torch:`` declarations keep calling ``apply``
    return "".join(line if line.lstrip().startswith("#") else calls.sub(r"\1()(", line) for line in lines)


def mutate(text: str, path: Path, chosen: Callable[[str, Mutation], bool]) -> str:
    """``text`` with the mutations ``chosen`` for a class (by name) applied; ast still accepts it."""
    lines = text.splitlines(keepends=True)
    blocks = sorted(parse_fixture(path), key=lambda block: block.line, reverse=True)  # bottom up: lines shift
    for block in blocks:
        first, last = block.line - 1, block.end_line - 1
        for mutation in CLASS_MUTATIONS:
            if chosen(block.name, mutation):
                before = list(lines)
                mutation(lines, first, last)
                last += len(lines) - len(before)
    mutated = instantiate("".join(lines), [block.name for block in blocks if chosen(block.name, instantiate)])
    ast.parse(mutated)
    return mutated


def same(left: Optional[List[Any]], right: Optional[List[Any]]) -> bool:
    assert left is not None and right is not None
    if len(left) != len(right):
        return False
    return all(
        (old is None and new is None) or (old is not None and new is not None and torch.equal(old, new))
        for old, new in zip(left, right)
    )


def check_fixed_mutant(path: Path, mutant: str, tmp_path: Path) -> int:
    """Fix the mutant and compare the three versions under torch; how many declarations compared."""
    fixed_text, _, _, _ = fix_text(mutant, path.name, CheckOptions(preview=True, unsafe_fixes=True))
    assert_no_new_codes(mutant, fixed_text)
    mutant_path, fixed_path = tmp_path / f"mutant_{path.name}", tmp_path / f"fixed_{path.name}"
    mutant_path.write_text(mutant, encoding="utf-8")
    fixed_path.write_text(fixed_text, encoding="utf-8")
    # The oracle reads a declaration's helper only if it calls ``apply``: the mutant's declarations are
    # read from its twin with ``apply`` back (the same lines), and run on the mutant itself.
    twin_path = tmp_path / f"twin_{path.name}"
    twin_path.write_text(re.sub(r"(?<![\w.])(\w+)\(\)\(", r"\1.apply(", mutant), encoding="utf-8")
    versions = [
        (parse_fixture(declared), load_fixture(file))
        for declared, file in ((path, path), (twin_path, mutant_path), (fixed_path, fixed_path))
    ]
    compared = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # an instantiated Function, in the mutant
        for blocks in zip(*(parsed for parsed, _ in versions)):
            for declarations in zip(*(block.declarations for block in blocks)):
                original, broken, repaired = (
                    gradients(declaration, loaded) for declaration, (_, loaded) in zip(declarations, versions)
                )
                if original is None:
                    continue
                where = declarations[0].where
                if broken is not None:
                    assert repaired is not None and same(broken, repaired), f"{where}: the fix changed gradients"
                if repaired is not None:
                    assert same(original, repaired), f"{where}: the fixed class computes other gradients"
                    compared += 1
    return compared


@pytest.mark.parametrize("path", ORACLE_FIXTURES, ids=lambda path: path.name)
def test_every_mutation_of_every_class_at_once(path: Path, tmp_path: Path) -> None:
    mutant = mutate(path.read_text(encoding="utf-8"), path, lambda name, mutation: True)
    assert check_fixed_mutant(path, mutant, tmp_path) > 0


@pytest.mark.parametrize("seed", range(int(os.environ.get("AGF_COMBINED_SEEDS", "4"))))
@pytest.mark.parametrize("path", ORACLE_FIXTURES, ids=lambda path: path.name)
def test_random_mutations_per_class(path: Path, seed: int, tmp_path: Path) -> None:
    """Each class gets its own random subset of the mutations (a fixed seed per run of the suite)."""
    choices: Dict[Tuple[str, Any], bool] = {}
    generator = random.Random(f"{path.name}:{seed}")

    def chosen(name: str, mutation: Any) -> bool:
        return choices.setdefault((name, mutation), generator.random() < 0.5)

    mutant = mutate(path.read_text(encoding="utf-8"), path, chosen)
    check_fixed_mutant(path, mutant, tmp_path)
