"""The reward workers' outcomes file: what the policy job on verl reads back instead of a silent "0 failed"."""

from __future__ import annotations

import json

import pytest

from judge_rl.policy.verl.reward_outcomes import OUTCOMES_ENV, judge_totals, read_outcomes, record_outcome, summary_sections


def calls(n: int, p50: float | None = 0.5) -> dict:
    return {"calls": n, "cache_hits": 0, "prompt_tokens": 10 * n, "completion_tokens": n, "failures": 0,
            "latency_p50_s": p50, "latency_p95_s": p50}  # fmt: skip


def test_outcomes_from_two_processes_sum_samples_and_each_process_last_judge_totals(tmp_path):
    path = tmp_path / "o.jsonl"
    rows = [("a", 1, 0, None, calls(2, 1.0)), ("b", 2, 1, "judge server error", calls(3, 2.0)),
            ("a", 1, 1, "judge reply unparseable: empty reply", calls(4, 1.0)), ("b", 2, 1, "judge server error", calls(6, 2.0))]  # fmt: skip
    path.write_text("".join(json.dumps({"host": h, "pid": p, "time": 0.0, "failed": f, "reason": r, "judge": j}) + "\n"
                            for h, p, f, r, j in rows))  # fmt: skip
    out = read_outcomes(path)
    assert out["samples"] == 4 and out["failures"] == 3 and out["rate"] == 0.75 and out["processes"] == 2
    assert out["reasons"] == {"judge server error": 2, "judge reply unparseable: empty reply": 1}
    assert out["judge"]["calls"] == 10.0 and out["judge"]["prompt_tokens"] == 100.0  # last lines: 4 + 6
    assert out["judge"]["latency_p50_s"] == pytest.approx((4 * 1.0 + 6 * 2.0) / 10)  # call-weighted
    sections = summary_sections(out)
    assert sections["judge_failure"]["samples"] == 3.0 and sections["judge_failure"]["trained_samples"] == 1.0
    assert "verl reward workers" in sections["judge"]["source"]


def test_a_torn_last_line_is_left_out_and_a_bad_line_elsewhere_names_the_file_and_line(tmp_path, monkeypatch):
    path = tmp_path / "o.jsonl"
    monkeypatch.setenv(OUTCOMES_ENV, str(path))
    record_outcome(False, None, calls(1))
    record_outcome(True, "judge server error", calls(2))
    with open(path, "a") as f:
        f.write('{"host": "a", "pid"')  # a worker killed mid-write
    out = read_outcomes(path)
    assert out["samples"] == 2 and out["failures"] == 1 and out["judge"]["calls"] == 2.0
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], "not json", lines[1]]) + "\n")
    with pytest.raises(ValueError, match=rf"{path} line 2 is damaged"):
        read_outcomes(path)
    path.write_text("\n".join([lines[0], '{"host": "a"}', lines[1]]) + "\n")
    with pytest.raises(ValueError, match=rf"{path}: record 2 is not a reward outcome \(KeyError"):
        read_outcomes(path)
    assert read_outcomes(tmp_path / "absent.jsonl") is None


def test_nothing_is_written_outside_the_policy_job(tmp_path, monkeypatch):
    monkeypatch.delenv(OUTCOMES_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    record_outcome(True, "judge server error", calls(1))
    assert list(tmp_path.iterdir()) == []


def test_judge_totals_sum_a_processes_graders_and_skip_latencies_without_calls():
    summaries = [{"judge/calls": 2.0, "judge/failures": 1.0, "judge/latency_p50_s": 1.0, "judge/latency_p95_s": 3.0},
                 {"judge/calls": 0.0, "judge/failures": 0.0, "judge/latency_p50_s": float("nan"),
                  "judge/latency_p95_s": float("nan")}]  # fmt: skip
    out = judge_totals(summaries)
    assert out["calls"] == 2.0 and out["failures"] == 1.0 and out["latency_p50_s"] == 1.0 and out["latency_p95_s"] == 3.0
    assert judge_totals([])["latency_p50_s"] is None
