"""Think-J's score prompt ("margin"): the exact final line, gold scores, and a strict parser."""

from __future__ import annotations

import pytest

from judge_rl.data.pairs import verdict_line
from judge_rl.prompts import Judgment, get_prompt
from judge_rl.prompts import margin as mg
from judge_rl.prompts import strength as s
from judge_rl.prompts.margin import margin_verdict_line
from judge_rl.prompts.think import SCORE_OUT_OF_RANGE

MARGIN = get_prompt("margin")
THINK = "<think>\nResponse (a) is right; (b) is not.\n</think>\n"


def line(x: object, y: object) -> str:
    return f"Therefore, the score of Response (a) is [[{x}]] and the score of Response (b) is [[{y}]]."


def ok(winner: str, x: float, y: float) -> Judgment:
    return Judgment(winner, None, None, scores=(float(x), float(y)))


def test_verdict_lines() -> None:
    assert margin_verdict_line(80, 30) == line(80, 30)
    assert MARGIN.scored_verdict(0, 100) == line(0, 100)  # type: ignore[attr-defined]
    # label verdicts use GOLD_SCORES: strength 1 -> 60/40, 2 (and None) -> 70/30, 3 -> 80/20
    assert MARGIN.verdict("a", 1) == line(60, 40)
    assert MARGIN.verdict("b", 1) == line(40, 60)
    assert MARGIN.verdict("a", 3) == line(80, 20)
    assert MARGIN.verdict("b") == line(30, 70)
    assert MARGIN.scored_output("x", 55, 45) == "<think>\nx\n</think>\n" + line(55, 45)  # type: ignore[attr-defined]
    for bad in [(50, 50), (-1, 3), (3, 101), (2.5, 3), (True, 3)]:
        with pytest.raises(ValueError):
            margin_verdict_line(*bad)  # type: ignore[arg-type]
    for winner, strength in [("c", 1), ("a", 4), ("a", 0)]:
        with pytest.raises(ValueError):
            MARGIN.verdict(winner, strength)


WELL_FORMED: list[tuple[str, str, Judgment]] = [
    ("a higher", THINK + line(80, 30), ok("a", 80, 30)),
    ("b higher", THINK + line(30, 80), ok("b", 30, 80)),
    ("gap of one", THINK + line(51, 50), ok("a", 51, 50)),
    ("extremes", THINK + line(0, 100), ok("b", 0, 100)),
    ("whitespace around", "\n " + THINK + "\n\n  " + line(70, 20) + "  \n", ok("a", 70, 20)),
    ("line right after </think>", "<think>x</think>" + line(10, 90), ok("b", 10, 90)),
    ("lines inside think ignored", "<think>" + line(99, 1) + "</think>\n" + line(1, 99), ok("b", 1, 99)),
]


@pytest.mark.parametrize("text,expected", [c[1:] for c in WELL_FORMED], ids=[c[0] for c in WELL_FORMED])
def test_parser_well_formed(text: str, expected: Judgment) -> None:
    assert MARGIN.parse(text) == expected


MALFORMED: list[tuple[str, str, str]] = [
    ("tie", THINK + line(50, 50), mg.TIE),
    ("tie at zero", THINK + line(0, 0), mg.TIE),
    ("score 101", THINK + line(101, 20), SCORE_OUT_OF_RANGE),
    ("negative", THINK + line(-5, 20), SCORE_OUT_OF_RANGE),
    ("both out of range", THINK + line(200, 300), SCORE_OUT_OF_RANGE),
    ("decimal", THINK + line("80.5", 20), s.BAD_TEMPLATE),
    ("leading zero", THINK + line("080", 20), s.BAD_TEMPLATE),
    ("placeholder", THINK + line("x", "y"), s.BAD_TEMPLATE),
    ("single brackets", THINK + "Therefore, the score of Response (a) is [80] and the score of Response (b) is [30].",
     s.BAD_TEMPLATE),
    ("missing period", THINK + line(80, 30)[:-1], s.BAD_TEMPLATE),
    ("responses swapped in the line",
     THINK + "Therefore, the score of Response (b) is [[80]] and the score of Response (a) is [[30]].", s.BAD_TEMPLATE),
    ("released Think-J tags", THINK + "Therefore, the scores are <Score 1>30</Score 1> and <Score 2>80</Score 2>.",
     s.BAD_TEMPLATE),
    ("strength line", THINK + verdict_line("a", 2), s.BAD_TEMPLATE),
    ("bold", THINK + "**" + line(80, 30) + "**", s.BAD_TEMPLATE),
    ("two lines", THINK + line(80, 30) + "\n" + line(30, 80), s.SEVERAL_VERDICTS),
    ("text after", THINK + line(80, 30) + "\nDone.", s.TEXT_AFTER_VERDICT),
    ("text before", THINK + "So:\n" + line(80, 30), s.TEXT_BEFORE_VERDICT),
    ("no think", line(80, 30), s.MISSING_THINK),
    ("nothing after think", THINK, s.NO_VERDICT),
    ("empty", "", s.EMPTY_OUTPUT),
    ("text before think", "Hi " + THINK + line(80, 30), s.TEXT_BEFORE_THINK),
    ("unclosed", "<think> " + line(80, 30), s.UNCLOSED_THINK),
    ("two thinks", THINK + THINK + line(80, 30), s.SEVERAL_THINK),
    ("empty think", "<think></think>" + line(80, 30), s.EMPTY_THINK),
]


@pytest.mark.parametrize("text,reason", [c[1:] for c in MALFORMED], ids=[c[0] for c in MALFORMED])
def test_parser_malformed(text: str, reason: str) -> None:
    assert MARGIN.parse(text) == Judgment.failure(reason)


def test_every_failure_reason_is_exercised_and_distinct() -> None:
    assert len(set(mg.FAILURE_REASONS)) == len(mg.FAILURE_REASONS)
    assert {c[2] for c in MALFORMED} == set(mg.FAILURE_REASONS)
