"""Compare two judgments files item by item: how often the two runs give the same verdict, and how right each is.

    python3 scripts/gpu_kit/compare_verdicts.py CPU_JUDGMENTS.jsonl GPU_JUDGMENTS.jsonl [--json]

The files are judge_rl's judgments JSONL (`<run_dir>/eval/<stage>/judgments.jsonl` of the main job,
`<run_dir>/judgments.jsonl` of `python -m judge_rl.eval`), one record per judged item, matched by `item_id`
(a pair and the order it was shown in, e.g. `synthetic-arithmetic-test-0:a`). When an item appears twice (a
resumed run), its last record counts, as the harness reads it. Over the items both files hold:

- agreement: the share with the same `winner` ("a", "b", ...; null = unparsed, so two unparsed verdicts agree);
  agreement_parsed: the same, over the items both runs parsed
- accuracy_a / accuracy_b: each file's share of right verdicts (`correct`; where a record lacks it,
  winner == chosen_position)

Items only one file holds are reported (counts and the first ids), never silently dropped. Standard library only.
Exit status 0 once both files are read (whatever the agreement), 2 when a file is missing or holds no items, or
the two share no item_id (files of different runs or stages).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Iterable

SHOW_IDS = 10  # ids listed per side for items the other file lacks


def read_judgments(path: str | Path) -> dict[str, dict[str, Any]]:
    """item_id -> its last record; lines that are not JSON objects with an item_id are skipped."""
    records: dict[str, dict[str, Any]] = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by a killed run
            if isinstance(record, dict) and "item_id" in record:
                records[str(record["item_id"])] = record
    return records


def is_correct(record: dict[str, Any]) -> bool:
    if "correct" in record:
        return bool(record["correct"])
    return record.get("winner") is not None and record.get("winner") == record.get("chosen_position")


def _rate(hits: int, n: int) -> float | None:
    return hits / n if n else None


def compare(a: dict[str, dict[str, Any]], b: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Agreement of `winner` and each side's accuracy over the item_ids both hold, plus what only one holds."""
    common = sorted(set(a) & set(b))
    only_a, only_b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
    same = sum(a[i].get("winner") == b[i].get("winner") for i in common)
    parsed = [i for i in common if a[i].get("winner") is not None and b[i].get("winner") is not None]
    same_parsed = sum(a[i]["winner"] == b[i]["winner"] for i in parsed)
    return {
        "n_a": len(a),
        "n_b": len(b),
        "n_common": len(common),
        "agreement": _rate(same, len(common)),
        "n_parsed_both": len(parsed),
        "agreement_parsed": _rate(same_parsed, len(parsed)),
        "accuracy_a": _rate(sum(is_correct(a[i]) for i in common), len(common)),
        "accuracy_b": _rate(sum(is_correct(b[i]) for i in common), len(common)),
        "unparsed_a": sum(a[i].get("winner") is None for i in common),
        "unparsed_b": sum(b[i].get("winner") is None for i in common),
        "n_only_a": len(only_a),
        "n_only_b": len(only_b),
        "only_a": only_a[:SHOW_IDS],
        "only_b": only_b[:SHOW_IDS],
        "disagreements": [i for i in common if a[i].get("winner") != b[i].get("winner")][:SHOW_IDS],
    }


def compare_files(path_a: str | Path, path_b: str | Path) -> dict[str, Any]:
    out = compare(read_judgments(path_a), read_judgments(path_b))
    return {"a": str(path_a), "b": str(path_b), **out}


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def format_report(r: dict[str, Any], label_a: str = "A", label_b: str = "B") -> str:
    lines = [
        f"{label_a}: {r.get('a', '')} ({r['n_a']} items); {label_b}: {r.get('b', '')} ({r['n_b']} items)",
        f"common items {r['n_common']}: agreement {_fmt(r['agreement'])} (same winner, unparsed = unparsed); "
        f"over the {r['n_parsed_both']} both parsed: {_fmt(r['agreement_parsed'])}",
        f"accuracy {label_a} {_fmt(r['accuracy_a'])}, {label_b} {_fmt(r['accuracy_b'])}; "
        f"unparsed {label_a} {r['unparsed_a']}, {label_b} {r['unparsed_b']}",
    ]
    for label, n, ids in ((label_a, r["n_only_a"], r["only_a"]), (label_b, r["n_only_b"], r["only_b"])):
        if n:
            more = f" (+{n - len(ids)} more)" if n > len(ids) else ""
            lines.append(f"missing: {n} item_id(s) only in {label}: {', '.join(ids)}{more}")
    if r["disagreements"]:
        lines.append(f"first disagreements: {', '.join(r['disagreements'])}")
    return "\n".join(lines)


def main(argv: Iterable[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a", help="judgments JSONL (e.g. the CPU reference run's)")
    ap.add_argument("b", help="judgments JSONL (e.g. the GPU run's)")
    ap.add_argument("--labels", nargs=2, default=("A", "B"), metavar=("LABEL_A", "LABEL_B"))
    ap.add_argument("--json", action="store_true", help="print the comparison as one JSON object")
    args = ap.parse_args(None if argv is None else list(argv))
    for p in (args.a, args.b):
        if not Path(p).is_file():
            print(f"compare_verdicts: no file {p}", file=sys.stderr)
            return 2
    r = compare_files(args.a, args.b)
    if not r["n_a"] or not r["n_b"]:
        print(f"compare_verdicts: no judgments in {args.a if not r['n_a'] else args.b}", file=sys.stderr)
        return 2
    print(json.dumps(r) if args.json else format_report(r, *args.labels))
    if not r["n_common"]:
        print("compare_verdicts: the two files share no item_id", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
