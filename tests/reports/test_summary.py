"""The reward section both jobs write into results.json, from the metrics rows."""

from judge_rl.reports.summary import metric_mean, reward_summary


def test_the_reward_summary_orders_steps_and_averages_the_timed_ones():
    rows = [{"step": 2, "critic/score/mean": 0.5, "timing_s/step": 3.0},
            {"step": 1, "critic/score/mean": 0.1},
            {"step": 3, "critic/score/mean": 0.9, "timing_s/step": 5.0}]  # fmt: skip
    out = reward_summary(rows)
    assert out["rewards"] == [0.1, 0.5, 0.9]  # step order, not the rows' order
    assert out["seconds_per_step"] == 4.0  # the untimed step is left out, not counted as 0
    assert out["reward_curve"]["first"] == 0.1 and out["reward_curve"]["last"] == 0.9


def test_rows_without_a_reward_or_timing_give_no_curve_and_no_pace():
    out = reward_summary([{"step": 1}, {"step": 2}])
    assert "reward_curve" not in out
    assert out == {"rewards": [None, None], "seconds_per_step": None}


def test_a_metric_mean_skips_rows_without_a_number_and_is_none_without_any():
    rows = [{"k": 2.0}, {"k": None}, {"k": "x"}, {}, {"k": 4}]
    assert metric_mean(rows, "k") == 3.0
    assert metric_mean(rows, "other") is None
