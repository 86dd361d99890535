"""The run directory's saved judgments (difficulty.jsonl, teacher.jsonl): append-only JSON lines.

Read with `judge_rl.reports.jsonl.read_jsonl`: a torn last line (a crash mid-write) is dropped and its record
redone; a line that does not parse anywhere else is a damaged file and raises, naming the file and line.
Appends first cut such a torn line off, so a new record never lands glued to it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Sequence

from judge_rl.reports.jsonl import open_for_append, read_jsonl


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records (JSON objects) of an append-only JSONL file; [] when it does not exist."""
    return [record for record in read_jsonl(path) if isinstance(record, dict)]


def append_records(path: Path, records: Sequence[dict[str, Any]]) -> None:
    """Append `records`, one JSON line each, and sync them to disk."""
    with open_for_append(path) as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())
