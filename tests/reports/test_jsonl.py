"""Crash-torn JSON-lines files: metrics.jsonl and judgments.jsonl resume after a half-written last line."""

from __future__ import annotations

import json

import pytest

from judge_rl.config import LoggerConfig
from judge_rl.evaluation.harness import read_records
from judge_rl.reports.jsonl import open_for_append, read_jsonl, trim_torn_tail
from judge_rl.reports.logging import MetricsLogger


def test_a_torn_last_line_is_dropped_and_cut_before_the_next_append(tmp_path):
    path = tmp_path / "judgments.jsonl"
    path.write_text(json.dumps({"item_id": "a", "x": 1}) + "\n" + '{"item_id": "b", "x"')
    assert [r["item_id"] for r in read_jsonl(path)] == ["a"]
    with open_for_append(path) as f:  # the next record must not be glued to the torn half
        f.write(json.dumps({"item_id": "c", "x": 3}) + "\n")
    assert list(read_records(path)) == ["a", "c"]
    assert path.read_text().count("\n") == 2


def test_a_complete_record_missing_only_its_newline_is_still_dropped_consistently(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text('{"step": 1}\n{"step": 2}')
    assert read_jsonl(path) == [{"step": 1}]
    assert trim_torn_tail(path) and path.read_text() == '{"step": 1}\n'
    assert not trim_torn_tail(path)


def test_damage_in_the_middle_is_an_error_naming_the_file_and_line(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 1}\n{"step": oops\n{"step": 3}\n')
    with pytest.raises(ValueError, match=r"metrics.jsonl line 2 is damaged"):
        read_jsonl(path)


def test_metrics_logger_resumes_after_a_torn_metrics_line(tmp_path):
    """On today's main a torn metrics.jsonl stops resume with a bare JSONDecodeError."""
    logger = MetricsLogger(tmp_path, LoggerConfig(name="none"), {})
    for step in (1, 2):
        logger.log({"critic/score/mean": 0.5 * step}, step)
    with (tmp_path / "metrics.jsonl").open("a") as f:
        f.write('{"step": 3, "critic/sc')  # killed mid-write
    logger = MetricsLogger(tmp_path, LoggerConfig(name="none"), {})
    logger.drop_steps_after(2)
    logger.log({"critic/score/mean": 1.5}, 3)
    assert [h["step"] for h in logger.history()] == [1, 2, 3]
    assert logger.history()[-1]["critic/score/mean"] == 1.5
