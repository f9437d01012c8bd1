"""Section "accuracy": the real-code scorer (``benchmarks/realcode/score.py``) on its dev and test
splits, preview codes shown, over the projects downloaded by ``benchmarks/realcode/fetch.py``
(``--realcode-cache``). Runs inside the plugin virtualenv, so that the scorer checks with this checkout;
skipped, with a one-line note, when the cache folder does not exist."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from benchmarks.common import Row, log

SECTIONS: Tuple[str, ...] = ("accuracy",)


def measure(args: argparse.Namespace, corpus: Path) -> Dict[str, Any]:
    # Imported here, not at the top: the scorer imports the plugin, which the parent may not have.
    from benchmarks.realcode import score

    cache = Path(args.realcode_cache).expanduser() if args.realcode_cache else score.DEFAULT_CACHE
    if not cache.is_dir():
        log(f"accuracy: skipped, no corpus cache at {cache}")
        return {"cache": str(cache), "skipped": f"no corpus cache at {cache}"}
    log(f"accuracy: the real-code scorer on {' and '.join(score.SPLITS)}, preview codes shown, cache {cache}")
    benchmark = score.load_benchmark(score.HERE)
    splits: Dict[str, Any] = {}
    for split in score.SPLITS:
        scored = score.score_split(benchmark, split, cache, preview=True)
        splits[split] = {
            "classes": scored.classes,
            "missing": len(scored.missing),
            "default": tally_json(scored.total(default=True)),
            "preview": tally_json(scored.total(default=False)),
            "table": score.format_split(scored, preview=True, details=False),
        }
    return {"cache": str(cache), "splits": splits}


def tally_json(tally: Any) -> Dict[str, Any]:
    """A scorer's ``Tally`` (typed Any: the scorer is imported only inside the plugin virtualenv)."""
    return {
        "labelled": tally.labelled,
        "found": tally.found,
        "true_positives": tally.true_positives,
        "precision": tally.precision,
        "recall": tally.recall,
    }


def _share(value: Optional[float]) -> str:
    return "—" if value is None else f"{value:.3f}"


def report_rows(measured: Dict[str, Any]) -> List[Row]:
    accuracy = measured.get("accuracy")
    if not accuracy:
        return []
    if "skipped" in accuracy:
        return [Row("8. accuracy on real code", f"skipped ({accuracy['skipped']})")]
    rows: List[Row] = []
    for split, scored in accuracy["splits"].items():
        default, preview = scored["default"], scored["preview"]
        rows.append(
            Row(
                f"8. accuracy on real code, {split} split ({scored['classes']} labelled classes): "
                "precision / recall, default codes; preview codes",
                f"{_share(default['precision'])} / {_share(default['recall'])}; "
                f"{_share(preview['precision'])} / {_share(preview['recall'])}",
            )
        )
    return rows


def report_tables(measured: Dict[str, Any]) -> List[str]:
    """The scorer's own table of each split, as it prints it (aligned text, hence the fence)."""
    accuracy = measured.get("accuracy")
    if not accuracy or "skipped" in accuracy:
        return []
    return ["```text\n" + "\n".join(scored["table"]) + "\n```" for scored in accuracy["splits"].values()]
