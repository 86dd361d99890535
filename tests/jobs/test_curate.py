"""judge_rl/jobs/curate.py and `python -m judge_rl.curate`: the whole job end to end, its output feeding the SFT
init, and the `pairs` format it writes (judge_rl.data.loaders)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from judge_rl.jobs.curate import run_curate
from judge_rl.data.loaders import load_dataset_pairs, load_pairs, write_pairs
from judge_rl.data.pairs import PreferencePair, balanced_positions
from judge_rl.prompts import get_prompt
from judge_rl.updates.sft import sft_examples

from conftest import CACHE_DIR, REPO_ROOT
from curate_support import STRENGTH, TINY, compose_curate, lines, synthetic

# --------------------------------------------------------------------------- the pairs format


def test_pairs_format_round_trips_every_field(tmp_path):
    pairs = synthetic(4) + [
        PreferencePair("plain-1", "hand", "Q?", "good", "bad"),  # no strength, traces or meta
        PreferencePair("half-1", "hand", "Q2?", "yes", "no", 1, {"b": "<think>\nx\n</think>\nverdict"}, {"k": [1, "é"]}),
    ]
    path = write_pairs(pairs, tmp_path / "out" / "pairs.jsonl")
    assert [p.name for p in path.parent.iterdir()] == ["pairs.jsonl"]  # written atomically: no temporary left
    loaded = load_pairs(path)
    assert loaded.pairs == pairs and loaded.skipped == []
    assert load_dataset_pairs("pairs", path=path, limit=2).pairs == pairs[:2]
    row = json.loads(path.read_text().splitlines()[4])
    assert row == {"pair_id": "plain-1", "source": "hand", "question": "Q?", "chosen": "good", "rejected": "bad",
                   "strength": None, "trace_a": None, "trace_b": None, "meta": {}}
    # rows without pair_id/source get "<source>-<row>" like the other loaders
    bare = tmp_path / "bare.jsonl"
    bare.write_text(json.dumps({"question": "Q", "chosen": "a", "rejected": "b"}) + "\n")
    assert load_pairs(bare)[0].pair_id == "pairs/bare-1" and load_pairs(bare, source="x")[0].source == "x"


def test_pairs_format_reports_malformed_rows_by_file_and_row(tmp_path):
    good = {"pair_id": "p1", "question": "Q", "chosen": "a", "rejected": "b"}
    path = tmp_path / "bad.jsonl"
    rows = [good, {**good, "pair_id": "p2", "strength": 4}, {**good, "pair_id": "p1"}, {**good, "pair_id": "p3", "trace_c": "x"},
            {**good, "pair_id": "p4", "meta": [1]}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ValueError, match=rf"^{path} row 2 \(1-based line\): strength must be null or 1, 2 or 3, got 4$"):
        load_pairs(path)
    loaded = load_pairs(path, on_error="skip")
    assert [p.pair_id for p in loaded] == ["p1"]
    assert [s.split(": ", 1)[1] for s in loaded.skipped] == [
        "strength must be null or 1, 2 or 3, got 4", "duplicate pair_id 'p1'",
        "unknown field(s) 'trace_c'; expected pair_id, source, question, chosen, rejected, strength, trace_a, trace_b, meta",
        "field 'meta' is a list, not an object"]
    with pytest.raises(ValueError, match="pair_id 'p1' occurs twice"):
        write_pairs([loaded[0], loaded[0]], tmp_path / "twice.jsonl")
    assert not (tmp_path / "twice.jsonl").exists()


# --------------------------------------------------------------------------- end to end


def test_end_to_end_output_feeds_the_sft_init_and_counts_match_the_file(tmp_path):
    out = tmp_path / "set" / "curated.jsonl"
    counts = run_curate(compose_curate([*TINY, "data.kwargs.n=8", f"run_dir={tmp_path / 'run'}", f"output={out}"]))
    pairs = load_dataset_pairs("pairs", path=out)
    saved = json.loads((out.parent / "counts.json").read_text())
    assert saved == counts and saved["written"] == len(pairs) == len(out.read_text().splitlines())
    chain = [saved["input"], saved["after_difficulty"], saved["after_diversity"], saved["after_accuracy"], saved["written"]]
    assert chain[0] == 8 and chain == sorted(chain, reverse=True)
    for name, before in zip(("difficulty", "diversity", "accuracy"), chain):
        f = saved["filters"][name]
        assert f["enabled"] and f["in"] == before and f["in"] - f["out"] == sum(f["dropped"].values())
    assert len(lines(tmp_path / "run" / "dropped.jsonl")) == 8 - len(pairs)
    assert len(pairs) >= 4 and all(p.traces and set(p.traces) == {"a", "b"} for p in pairs)
    examples = sft_examples(balanced_positions(pairs, 0), get_prompt("strength"), 8)
    assert len(examples) == 8
    assert all(STRENGTH.parse(e["completion"][0]["content"]).ok for e in examples)
    # and the main job's config accepts the file as its SFT data
    from conftest import compose_config
    from judge_rl.jobs.train import to_job_config

    job = to_job_config(compose_config(["run_dir=/tmp/unused", "model=tiny-random", "data.train.loader=pairs",
                                        "~data.train.kwargs", f"+data.train.kwargs={{path: '{out}'}}"]))
    assert load_dataset_pairs(job.data.train.loader, **job.data.train.kwargs).pairs == pairs.pairs


def test_python_m_judge_rl_curate(tmp_path):
    env = {**os.environ, "JUDGE_RL_CACHE": CACHE_DIR, "HYDRA_FULL_ERROR": "0"}
    out = tmp_path / "curated.jsonl"
    done = subprocess.run([sys.executable, "-m", "judge_rl.curate", *TINY, "data.kwargs.n=4", "diversity.enabled=false",
                           f"run_dir={tmp_path / 'run'}", f"output={out}", f"hydra.run.dir={tmp_path / 'hydra'}"],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "written" in done.stdout and len(load_pairs(out)) == json.loads((tmp_path / "counts.json").read_text())["written"]
    bad = subprocess.run([sys.executable, "-m", "judge_rl.curate", *TINY, "diversity.threshold=1.5",
                          f"run_dir={tmp_path / 'bad'}", f"hydra.run.dir={tmp_path / 'hydra-bad'}"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 1
    assert "judge_rl: error: ValueError: diversity.threshold=1.5: expected (0, 1]" in bad.stderr
    assert not (tmp_path / "bad").exists()  # refused before the run directory was claimed
    assert json.loads((tmp_path / "hydra-bad" / "status.json").read_text())["status"] == "failed"
