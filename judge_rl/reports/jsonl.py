"""Append-only JSON-lines files that survive a crash: `metrics.jsonl` and `judgments.jsonl`.

A process killed mid-write leaves at most one torn line, the last one, with no newline after it. A
reader drops that line (its record is redone); a writer cuts it off before appending, so the next
record starts on a line of its own instead of being glued to the torn one and lost with it. A line
that does not parse anywhere else is not a crash's trace but a damaged file, and is reported with its
file and line number.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, IO


def trim_torn_tail(path: Path) -> bool:
    """Cut a last line that has no newline (a write cut short); True if one was cut."""
    if not path.exists():
        return False
    with path.open("rb+") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        if size == 0:
            return False
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return False
        # walk back to the last newline (files here are small enough to read their tail in blocks)
        end = size
        while end > 0:
            start = max(0, end - 65536)
            f.seek(start)
            block = f.read(end - start)
            cut = block.rfind(b"\n")
            if cut >= 0:
                f.truncate(start + cut + 1)
                return True
            end = start
        f.truncate(0)
        return True


def open_for_append(path: Path) -> IO[str]:
    """`path` opened for appending, after cutting off a torn last line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    trim_torn_tail(path)
    return path.open("a", encoding="utf-8")


def read_jsonl(path: Path) -> list[Any]:
    """Every record of `path` ([] if it does not exist). A torn last line (no newline after it) is
    dropped; any other line that does not parse raises a one-line error naming the file and line."""
    if not path.exists():
        return []
    data = path.read_bytes()
    lines = data.split(b"\n")
    torn = lines.pop()  # b"" when the file ends with a newline
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"{path} line {number} is damaged ({e}); it is not the last line, so it is not a crash's "
                             "torn write: repair or remove the file") from None
    del torn  # dropped even if it parses: a writer cuts it too, so reader and writer agree on what is saved
    return records
