"""JudgeLRM's prompt ("judgelrm"): `<answer>x, y</answer>` with two 1-10 scores, strictly parsed."""

from __future__ import annotations

import pytest

from judge_rl.prompts import Judgment, get_prompt
from judge_rl.prompts import judgelrm as jl
from judge_rl.prompts import think as t

JUDGELRM = get_prompt("judgelrm")
R = jl.ANSWER_REASONS
THINK = "<think>\nResponse (a) is right; (b) is not.\n</think>\n"


def ok(x: int, y: int) -> Judgment:
    winner = None if x == y else ("a" if x > y else "b")
    return Judgment(winner, None, None, scores=(float(x), float(y)))


def test_verdicts() -> None:
    assert JUDGELRM.scored_verdict(7, 3) == "<answer>7, 3</answer>"  # type: ignore[attr-defined]
    # a tie is well formed
    assert JUDGELRM.scored_verdict(5, 5) == "<answer>5, 5</answer>"  # type: ignore[attr-defined]
    gold = JUDGELRM.scored_output("x", 1, 10)  # type: ignore[attr-defined]
    assert gold == "<think>\nx\n</think>\n<answer>1, 10</answer>"
    # label verdicts use GOLD_SCORES: 1 -> 6/4, 2 (and None) -> 7/3, 3 -> 8/2
    assert JUDGELRM.verdict("a", 1) == "<answer>6, 4</answer>"
    assert JUDGELRM.verdict("b", 3) == "<answer>2, 8</answer>"
    assert JUDGELRM.verdict("b") == "<answer>3, 7</answer>"
    for bad in [(0, 3), (3, 11), (2.0, 3), (True, 3)]:
        with pytest.raises(ValueError):
            JUDGELRM.scored_verdict(*bad)  # type: ignore[attr-defined]
    for winner, strength in [("c", 1), ("a", 4)]:
        with pytest.raises(ValueError):
            JUDGELRM.verdict(winner, strength)


WELL_FORMED: list[tuple[str, str, Judgment]] = [
    ("a higher", THINK + "<answer>7, 3</answer>", ok(7, 3)),
    ("b higher", THINK + "<answer>2, 9</answer>", ok(2, 9)),
    ("extremes", THINK + "<answer>10, 1</answer>", ok(10, 1)),
    ("tie is well formed", THINK + "<answer>5, 5</answer>", ok(5, 5)),
    ("same line as </think>", "<think>x</think><answer>7, 3</answer>", ok(7, 3)),
    ("no space after comma", THINK + "<answer>7,3</answer>", ok(7, 3)),
    ("spaces inside tag", THINK + "<answer>  7 ,  3 </answer>", ok(7, 3)),
    ("newlines inside tag", THINK + "<answer>\n7, 3\n</answer>", ok(7, 3)),
    ("whitespace around", "\n " + THINK + "\n\n<answer>4, 8</answer>\n ", ok(4, 8)),
    ("tags inside think ignored", "<think><answer>1, 9</answer></think>\n<answer>9, 1</answer>", ok(9, 1)),
]


@pytest.mark.parametrize("text,expected", [c[1:] for c in WELL_FORMED], ids=[c[0] for c in WELL_FORMED])
def test_parser_well_formed(text: str, expected: Judgment) -> None:
    assert JUDGELRM.parse(text) == expected


MALFORMED: list[tuple[str, str, str]] = [
    ("empty", "", t.EMPTY_OUTPUT),
    ("no think", "<answer>7, 3</answer>", t.MISSING_THINK),
    ("text before think", "Ok. " + THINK + "<answer>7, 3</answer>", t.TEXT_BEFORE_THINK),
    ("unclosed think", "<think> <answer>7, 3</answer>", t.UNCLOSED_THINK),
    ("two thinks", THINK + THINK + "<answer>7, 3</answer>", t.SEVERAL_THINK),
    ("empty think", "<think> </think><answer>7, 3</answer>", t.EMPTY_THINK),
    ("nothing after think", THINK, t.NO_VERDICT),
    ("prose only", THINK + "(a) is better.", R.missing),
    ("closing tag only", THINK + "7, 3</answer>", R.missing),
    ("uppercase tag", THINK + "<Answer>7, 3</Answer>", R.missing),
    ("released two-tag form", THINK + "<answer>7</answer><answer>3</answer>", R.several),
    ("two answers", THINK + "<answer>7, 3</answer>\n<answer>3, 7</answer>", R.several),
    ("unclosed answer", THINK + "<answer>7, 3", R.unclosed),
    ("closing before opening", THINK + "</answer>7, 3<answer>", R.unclosed),
    ("text before answer", THINK + "Scores: <answer>7, 3</answer>", R.text_before),
    ("text after answer", THINK + "<answer>7, 3</answer> Done.", R.text_after),
    ("eos after answer", THINK + "<answer>7, 3</answer><|im_end|>", R.text_after),
    ("one score", THINK + "<answer>7</answer>", R.bad_content),
    ("three scores", THINK + "<answer>7, 3, 1</answer>", R.bad_content),
    ("decimal", THINK + "<answer>7.5, 3</answer>", R.bad_content),
    ("leading zero", THINK + "<answer>07, 3</answer>", R.bad_content),
    ("words", THINK + "<answer>a: 7, b: 3</answer>", R.bad_content),
    ("letter", THINK + "<answer>A</answer>", R.bad_content),
    ("empty answer", THINK + "<answer></answer>", R.bad_content),
    ("placeholder", THINK + "<answer>x, y</answer>", R.bad_content),
    ("zero", THINK + "<answer>0, 3</answer>", t.SCORE_OUT_OF_RANGE),
    ("eleven", THINK + "<answer>7, 11</answer>", t.SCORE_OUT_OF_RANGE),
    ("negative", THINK + "<answer>-1, 3</answer>", t.SCORE_OUT_OF_RANGE),
    ("hundred", THINK + "<answer>100, 30</answer>", t.SCORE_OUT_OF_RANGE),
]


@pytest.mark.parametrize("text,reason", [c[1:] for c in MALFORMED], ids=[c[0] for c in MALFORMED])
def test_parser_malformed(text: str, reason: str) -> None:
    assert JUDGELRM.parse(text) == Judgment.failure(reason)


def test_every_failure_reason_is_exercised_and_distinct() -> None:
    assert len(set(jl.FAILURE_REASONS)) == len(jl.FAILURE_REASONS)
    assert {c[2] for c in MALFORMED} == set(jl.FAILURE_REASONS)
