"""Draw the classes to label: custom autograd Functions across the manifest's projects, at random, once.

    python benchmarks/realcode/sample.py --count 400 [--seed 20261123] [--cache DIR] [--packets DIR]
    python benchmarks/realcode/sample.py --split holdout --count 200 --packets DIR
    python benchmarks/realcode/sample.py --split holdout-2026-11-27 --count 200 --packets DIR

``--split`` chooses the projects drawn from: ``both`` (the default: dev and test, the population of
``sample.txt``), ``all``, or one split. Every project drawn from must be in the cache (``fetch.py``). The
draw is uniform over the Function classes of those projects, with a fixed seed, so that the same manifest
gives the same sample; it writes one line per class (``project<TAB>path:line:end<TAB>name``) to
``sample.txt`` (``sample-<split>.txt`` for another choice), with the split's own seed where it has one
(the holdout split's is 20261124: it is drawn on its own, and adding it left ``sample.txt`` as it was; the
split ``holdout-2026-11-27``'s is 20261127, and ``all`` leaves it out).
With ``--packets``, each class is also written as a packet for a blind labeller: the class's text with
line numbers and where it comes from, and nothing of what the linter says.
"""

from __future__ import annotations

import argparse
import ast
import random
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence

from fetch import load_toml  # the folder of this script is on the path, run as a script or by the tests

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "projects.toml"
SAMPLE = HERE / "sample.txt"
DEFAULT_CACHE = Path.home() / ".cache" / "flake8-autograd-realcode"
DEFAULT_SEED = 20261123
SPLITS = ("dev", "test", "holdout", "holdout-2026-11-27")
# "all" leaves out the holdout of 2026-11-27: it is drawn on its own, and only when named.
SPLIT_GROUPS = {"both": ("dev", "test"), "all": ("dev", "test", "holdout")}
SPLIT_SEEDS = {"holdout": 20261124, "holdout-2026-11-27": 20261127}  # a split drawn on its own has its own seed
FUNCTION_BASES = {"Function", "autograd.Function", "torch.autograd.Function", "torch.autograd.function.Function"}


@dataclass(frozen=True)
class FunctionClass:
    project: str
    path: str  # relative to the project's folder in the cache
    line: int
    end: int
    name: str

    def row(self) -> str:
        return f"{self.project}\t{self.path}:{self.line}:{self.end}\t{self.name}"


def _dotted(node: ast.expr) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return None if inner is None else f"{inner}.{node.attr}"
    return None


def function_classes(project: str, root: Path) -> Iterator[FunctionClass]:
    """The classes of ``root``'s Python files that subclass autograd's Function, directly or through a class
    of the same file that does, in a stable order."""
    for file in sorted(root.rglob("*.py")):
        try:
            tree = ast.parse(file.read_bytes())
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        classes = [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
        bases = set(FUNCTION_BASES)
        found: List[ast.ClassDef] = []
        while True:  # a subclass may come before its base in the walk: until nothing new is found
            new = [node for node in classes if node not in found and any(_dotted(base) in bases for base in node.bases)]
            if not new:
                break
            found += new
            bases.update(node.name for node in new)
        relative = file.relative_to(root).as_posix()
        for node in sorted(found, key=lambda node: node.lineno):
            yield FunctionClass(project, relative, node.lineno, node.end_lineno or node.lineno, node.name)


def draw(classes: Sequence[FunctionClass], count: int, seed: int) -> List[FunctionClass]:
    ordered = sorted(classes, key=lambda found: (found.project, found.path, found.line))
    chosen = random.Random(seed).sample(ordered, min(count, len(ordered)))
    return sorted(chosen, key=lambda found: (found.project, found.path, found.line))


def packet(found: FunctionClass, root: Path) -> str:
    lines = (root / found.path).read_text(encoding="utf-8", errors="replace").splitlines()
    body = "\n".join(f"{number:5d}  {lines[number - 1]}" for number in range(found.line, found.end + 1))
    return f"# {found.project}: {found.path}:{found.line} class {found.name}\n\n{body}\n"


def projects_of(entries: Sequence[Dict[str, Any]], split: str) -> List[str]:
    """The names of the manifest's projects in ``split``, a split or a group of splits, in manifest order."""
    chosen = SPLIT_GROUPS.get(split, (split,))
    return [str(entry["name"]) for entry in entries if entry.get("split") in chosen]


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=400)
    parser.add_argument(
        "--split", choices=(*SPLITS, *SPLIT_GROUPS), default="both", help="the projects to draw from (default both)"
    )
    parser.add_argument(
        "--seed",
        type=int,
        help=f"default {DEFAULT_SEED}, or the split's own (holdout: 20261124, holdout-2026-11-27: 20261127)",
    )
    parser.add_argument("--manifest", type=Path, default=MANIFEST)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--output", type=Path, help="default sample.txt for both, else sample-<split>.txt")
    parser.add_argument("--packets", type=Path, help="also write one labeller packet per class here")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else SPLIT_SEEDS.get(args.split, DEFAULT_SEED)
    output = args.output or (SAMPLE if args.split == "both" else HERE / f"sample-{args.split}.txt")
    projects = projects_of(load_toml(args.manifest).get("project", []), args.split)
    missing = [name for name in projects if not (args.cache / name).is_dir()]
    if missing:
        print(f"sample: not in the cache (run fetch.py first): {', '.join(missing)}", file=sys.stderr)
        return 2
    classes = [found for name in projects for found in function_classes(name, args.cache / name)]
    chosen = draw(classes, args.count, seed)
    output.write_text("".join(found.row() + "\n" for found in chosen), encoding="utf-8")
    if args.packets is not None:
        args.packets.mkdir(parents=True, exist_ok=True)
        for index, found in enumerate(chosen):
            (args.packets / f"{index:04d}.txt").write_text(packet(found, args.cache / found.project), encoding="utf-8")
    print(f"{len(chosen)} of {len(classes)} Function classes in {len(projects)} projects -> {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
