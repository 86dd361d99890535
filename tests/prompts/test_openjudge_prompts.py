"""OpenJudge's prompts: "pairwise_tag" (`<better>A|B</better>`) and "pointwise" (`<score>0..4</score>`)."""

from __future__ import annotations

import pytest

from judge_rl.prompts import Judgment, get_prompt
from judge_rl.prompts import openjudge as oj
from judge_rl.prompts import think as t

TAG = get_prompt("pairwise_tag")
POINT = get_prompt("pointwise")
B, S = oj.BETTER_REASONS, oj.SCORE_REASONS
THINK = "<think>\nThe response is right.\n</think>\n"


def winner(w: str) -> Judgment:
    return Judgment(w, None, None)


def scored(k: int) -> Judgment:
    return Judgment(None, None, None, score=k)


def test_verdicts() -> None:
    assert TAG.verdict("a") == "<better>A</better>"
    assert TAG.verdict("b", 3) == "<better>B</better>"  # strength ignored
    assert TAG.output("x", "b") == "<think>\nx\n</think>\n<better>B</better>"  # type: ignore[union-attr]
    assert POINT.verdict(0) == "<score>0</score>" and POINT.verdict(4) == "<score>4</score>"  # type: ignore[call-arg]
    with pytest.raises(ValueError):
        TAG.verdict("c")
    for bad in [-1, 5, 2.0, True]:
        with pytest.raises(ValueError):
            POINT.verdict(bad)  # type: ignore[arg-type, call-arg]


# --- pairwise_tag -----------------------------------------------------------------------------

PAIRWISE_CASES: list[tuple[str, str, Judgment]] = [
    ("A", THINK + "<better>A</better>", winner("a")),
    ("B", THINK + "<better>B</better>", winner("b")),
    ("same line", "<think>x</think><better>B</better>", winner("b")),
    ("spaces inside", THINK + "<better> A </better>", winner("a")),
    ("whitespace around", "\n" + THINK + "\n<better>A</better>\n\n", winner("a")),
    ("tag inside think ignored", "<think><better>A</better></think><better>B</better>", winner("b")),
    ("lowercase letter", THINK + "<better>a</better>", Judgment.failure(B.bad_content)),
    ("tie", THINK + "<better>tie</better>", Judgment.failure(B.bad_content)),
    ("response a", THINK + "<better>Response A</better>", Judgment.failure(B.bad_content)),
    ("both letters", THINK + "<better>A or B</better>", Judgment.failure(B.bad_content)),
    ("our label style", THINK + "<better>(a)</better>", Judgment.failure(B.bad_content)),
    ("empty tag", THINK + "<better></better>", Judgment.failure(B.bad_content)),
    ("no tag", THINK + "Response A is better.", Judgment.failure(B.missing)),
    ("two tags", THINK + "<better>A</better><better>B</better>", Judgment.failure(B.several)),
    ("unclosed", THINK + "<better>A", Judgment.failure(B.unclosed)),
    ("text before", THINK + "Answer: <better>A</better>", Judgment.failure(B.text_before)),
    ("text after", THINK + "<better>A</better>\nThanks", Judgment.failure(B.text_after)),
    ("no think", "<better>A</better>", Judgment.failure(t.MISSING_THINK)),
    ("nothing after think", THINK, Judgment.failure(t.NO_VERDICT)),
    ("empty", "", Judgment.failure(t.EMPTY_OUTPUT)),
    ("text before think", "x " + THINK + "<better>A</better>", Judgment.failure(t.TEXT_BEFORE_THINK)),
    ("unclosed think", "<think> <better>A</better>", Judgment.failure(t.UNCLOSED_THINK)),
    ("two thinks", THINK + THINK + "<better>A</better>", Judgment.failure(t.SEVERAL_THINK)),
    ("empty think", "<think></think><better>A</better>", Judgment.failure(t.EMPTY_THINK)),
]


@pytest.mark.parametrize("text,expected", [c[1:] for c in PAIRWISE_CASES], ids=[c[0] for c in PAIRWISE_CASES])
def test_pairwise_tag_parser(text: str, expected: Judgment) -> None:
    assert TAG.parse(text) == expected


# --- pointwise --------------------------------------------------------------------------------

POINTWISE_CASES: list[tuple[str, str, Judgment]] = [
    *[(f"score {k}", THINK + f"<score>{k}</score>", scored(k)) for k in range(5)],
    ("same line", "<think>x</think><score>2</score>", scored(2)),
    ("spaces inside", THINK + "<score> 3 </score>", scored(3)),
    ("score inside think ignored", "<think><score>0</score></think><score>4</score>", scored(4)),
    ("five", THINK + "<score>5</score>", Judgment.failure(t.SCORE_OUT_OF_RANGE)),
    ("negative", THINK + "<score>-1</score>", Judgment.failure(t.SCORE_OUT_OF_RANGE)),
    ("ten", THINK + "<score>10</score>", Judgment.failure(t.SCORE_OUT_OF_RANGE)),
    ("decimal", THINK + "<score>2.5</score>", Judgment.failure(S.bad_content)),
    ("fraction", THINK + "<score>3/4</score>", Judgment.failure(S.bad_content)),
    ("leading zero", THINK + "<score>03</score>", Judgment.failure(S.bad_content)),
    ("words", THINK + "<score>score 3</score>", Judgment.failure(S.bad_content)),
    ("empty tag", THINK + "<score></score>", Judgment.failure(S.bad_content)),
    ("placeholder", THINK + "<score>k</score>", Judgment.failure(S.bad_content)),
    ("no tag", THINK + "Score: 3", Judgment.failure(S.missing)),
    ("two tags", THINK + "<score>3</score><score>1</score>", Judgment.failure(S.several)),
    ("unclosed", THINK + "<score>3", Judgment.failure(S.unclosed)),
    ("text before", THINK + "I give <score>3</score>", Judgment.failure(S.text_before)),
    ("text after", THINK + "<score>3</score> out of 4", Judgment.failure(S.text_after)),
    ("no think", "<score>3</score>", Judgment.failure(t.MISSING_THINK)),
    ("nothing after think", THINK, Judgment.failure(t.NO_VERDICT)),
    ("empty", "", Judgment.failure(t.EMPTY_OUTPUT)),
    ("text before think", "x " + THINK + "<score>3</score>", Judgment.failure(t.TEXT_BEFORE_THINK)),
    ("unclosed think", "<think> <score>3</score>", Judgment.failure(t.UNCLOSED_THINK)),
    ("two thinks", THINK + THINK + "<score>3</score>", Judgment.failure(t.SEVERAL_THINK)),
    ("empty think", "<think></think><score>3</score>", Judgment.failure(t.EMPTY_THINK)),
]


@pytest.mark.parametrize("text,expected", [c[1:] for c in POINTWISE_CASES], ids=[c[0] for c in POINTWISE_CASES])
def test_pointwise_parser(text: str, expected: Judgment) -> None:
    judgment = POINT.parse(text)
    assert judgment == expected
    assert judgment.ok == (judgment.score is not None)  # ok means parsed: a score is there
    assert judgment.winner is None


def test_every_failure_reason_is_exercised_and_distinct() -> None:
    tables = [(PAIRWISE_CASES, oj.PAIRWISE_FAILURE_REASONS), (POINTWISE_CASES, oj.POINTWISE_FAILURE_REASONS)]
    for cases, reasons in tables:
        assert len(set(reasons)) == len(reasons)
        assert {c[2].error for c in cases if not c[2].ok} == set(reasons)
