"""Progress where the output is not a terminal (a log file, CI; pytest captures stdout): no live bar, a few plain
lines with the step, the status and the rate of this process's steps (a resumed run's earlier ones left out)."""

from __future__ import annotations

import re

from judge_rl.reports.console import progress_bar


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
