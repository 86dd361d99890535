"""judge_rl/curate/records.py: the run directory's saved judgments. A torn last line (a crash mid-write) is dropped
and cut before the next append; a damaged line anywhere else, in a records file or in the input, stops the job
with an error naming the file and the line."""

from __future__ import annotations

import json
import re

import pytest

from judge_rl.curate.config import curation_prompt, to_curate_config
from judge_rl.jobs.curate import run_curate
from judge_rl.curate.records import append_records, read_records
from judge_rl.curate.teacher import Teacher
from judge_rl.data.loaders import write_pairs

from curate_support import TINY, compose_curate, from_file, lines, synthetic


def test_a_torn_last_line_is_dropped_and_cut_before_the_next_append(tmp_path):
    path = tmp_path / "records.jsonl"
    path.write_text(json.dumps({"key": "k1"}) + "\n" + json.dumps([1, 2]) + "\n" + '{"key": "k2", "te')
    assert read_records(path) == [{"key": "k1"}]  # a line that is not an object is no record
    append_records(path, [{"key": "k3"}])
    assert lines(path) == [{"key": "k1"}, [1, 2], {"key": "k3"}]
    assert read_records(tmp_path / "absent.jsonl") == []


def test_a_damaged_line_in_difficulty_jsonl_names_the_file_and_line(tmp_path):
    run = tmp_path / "run"
    base = [*TINY, "data.kwargs.n=4", "diversity.enabled=false", f"run_dir={run}", f"output={run / 'out.jsonl'}"]
    run_curate(compose_curate(base))
    records = run / "difficulty.jsonl"
    text = records.read_text().splitlines(keepends=True)
    records.write_text(text[0] + text[1][:40] + "\n" + "".join(text[2:]))  # line 2 cut short, yet not the last
    with pytest.raises(ValueError, match=rf"^{re.escape(str(records))} line 2 is damaged"):
        run_curate(compose_curate(base))


def test_a_damaged_line_in_teacher_jsonl_names_the_file_and_line(tmp_path):
    records = tmp_path / "teacher.jsonl"
    records.write_text(json.dumps({"key": "k1", "text": "x"}) + "\n{not json\n" + json.dumps({"key": "k2", "text": "y"}) + "\n")
    job = to_curate_config(compose_curate([*TINY, f"run_dir={tmp_path / 'run'}"]))
    with pytest.raises(ValueError, match=rf"^{re.escape(str(records))} line 2 is damaged"):
        Teacher(job, curation_prompt(job.prompt), records)


def test_a_damaged_line_in_the_input_names_the_file_and_line(tmp_path):
    path = write_pairs(synthetic(3), tmp_path / "in.jsonl")
    rows = path.read_text().splitlines(keepends=True)
    path.write_text(rows[0] + "{not json\n" + "".join(rows[1:]))
    with pytest.raises(ValueError, match=rf"^{re.escape(str(path))} row 2 \(1-based line\): invalid JSON"):
        run_curate(compose_curate([*TINY, *from_file(path), f"run_dir={tmp_path / 'run'}",
                                   f"output={tmp_path / 'out.jsonl'}"]))
