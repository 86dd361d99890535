"""Any preference file: subsets and gzip end to end with a scripted judge."""

from __future__ import annotations

import gzip
import json

from benchmark_support import run


def test_preference_file_with_subsets_and_gzip(tmp_path):
    rows = [{"prompt": f"Q{i} rule={'right' if i % 2 else 'wrong'}", "chosen": f"GOOD {i}", "rejected": f"BAD {i}",
             "subset": "even" if i % 2 == 0 else "odd"} for i in range(4)]
    path = tmp_path / "prefs.jsonl.gz"
    with gzip.open(path, "wt") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    summary, _ = run(tmp_path, "preference", path)
    assert summary["official"]["by_subset"] == {"even": 0.0, "odd": 1.0}
    assert summary["official"]["accuracy"] == 0.5
