"""Progress where the output is not a terminal (a log file, CI; pytest captures stdout): no live bar, a few plain
lines with the step, the status and the rate of this process's steps (a resumed run's earlier ones left out)."""

from __future__ import annotations

import re

from judge_rl.reports.console import forecast_line, progress_bar


def test_progress_lines_every_eighth_and_at_the_end_resumed_steps_not_in_the_rate(capsys):
    with progress_bar("sft", 16, lines=8) as advance:
        advance(4, done_before=True)  # a resumed run's first 4 steps
        for step in range(5, 17):
            advance(1, f"loss {step / 100:.2f}")
    out = capsys.readouterr().out
    lines = re.findall(r"^sft (\d+)/16  loss (\S+)  (\d+\.\d) s/step$", out, re.M)
    assert [int(n) for n, _, _ in lines] == [6, 8, 10, 12, 14, 16]
    assert lines[-1][1] == "0.16" and float(lines[-1][2]) < 1.0
    assert "\n\n" not in out  # no blank line a transient bar leaves behind


def test_without_lines_nothing_is_printed(capsys):
    with progress_bar("judging", 10) as advance:
        for _ in range(10):
            advance()
    assert capsys.readouterr().out == ""


def test_after_the_first_step_of_this_process_one_forecast_line_with_the_work_that_follows(capsys):
    calls = []

    def then(step):
        calls.append(step)
        return [("evaluating the RL judge", 30.0)]

    with progress_bar("rl", 10, forecast=then) as advance:
        advance(3, done_before=True)  # resumed after step 3: the first step this process runs is step 4
        for _ in range(7):
            advance(1)
    out = capsys.readouterr().out
    assert calls == [4]  # once, after this process's first step
    (line,) = re.findall(r"^rl: step 4 of 10 took .*$", out, re.M)
    assert line.endswith("(6 steps ~0 s, evaluating the RL judge ~30 s)"), line


def test_forecast_line_adds_the_steps_left_and_the_work_after_them(capsys):
    line = forecast_line("rl", 1, 10, 50.0, [("evaluating the RL judge", 120.0)])
    assert line == "rl: step 1 of 10 took 50 s; the rest ~9.5 min (9 steps ~7.5 min, evaluating the RL judge ~2.0 min)"
    assert forecast_line("sft", 1, 16, 23.7) == "sft: step 1 of 16 took 24 s; the rest ~5.9 min"
    with progress_bar("sft", 1, forecast=True) as advance:  # nothing is left after a one-step run: no line
        advance(1)
    assert "took" not in capsys.readouterr().out
