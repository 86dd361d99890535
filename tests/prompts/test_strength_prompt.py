"""The Think-J prompts: messages put each response in its slot, prompts stay short, parsers are strict."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge_rl.data.pairs import JudgeItem, PreferencePair, verdict_line
from judge_rl.prompts import PROMPTS, Judgment, get_prompt
from judge_rl.prompts import strength as s
from judge_rl.prompts.strength import BinaryPrompt, StrengthPrompt

STRENGTH = get_prompt("strength")
BINARY = get_prompt("binary")
THINK = "<think>\nResponse (a) answers the question; (b) does not.\n</think>\n"


def ok(winner: str, strength: int | None) -> Judgment:
    return Judgment(winner, strength, None)


def fail(reason: str) -> Judgment:
    return Judgment(None, None, reason)


def v(winner: str, strength: int) -> str:
    return verdict_line(winner, strength)


# --- registry and verdict lines ---------------------------------------------------------------


def test_registry_holds_instances_with_names() -> None:
    assert {"binary", "judgelrm", "margin", "pairwise_tag", "pointwise", "strength"} <= set(PROMPTS.names())
    assert isinstance(STRENGTH, StrengthPrompt) and STRENGTH.name == "strength"
    assert isinstance(BINARY, BinaryPrompt) and BINARY.name == "binary"
    with pytest.raises(KeyError, match="unknown prompt .nope.; known: binary, binary_direct, judgelrm, margin"):
        get_prompt("nope")


def test_judgment_ok() -> None:
    assert ok("a", 1).ok
    assert not fail("empty output").ok
    assert Judgment.failure("x") == Judgment(None, None, "x")
    assert Judgment.failure("x") == Judgment(None, None, "x", scores=None, score=None)
    assert Judgment("a", 2, None).scores is None and Judgment("a", 2, None).score is None  # new fields default to None


def test_verdict_lines() -> None:
    assert STRENGTH.verdict("b", 2) == "Therefore, Response (b) is better, and the strength is [[2]]."
    assert BINARY.verdict("a") == "Therefore, Response (a) is better."
    assert BINARY.verdict("b", 3) == "Therefore, Response (b) is better."  # strength ignored
    with pytest.raises(ValueError):
        STRENGTH.verdict("a")
    with pytest.raises(ValueError):
        STRENGTH.verdict("a", 4)
    with pytest.raises(ValueError):
        BINARY.verdict("c")


@pytest.mark.parametrize("winner", ["a", "b"])
@pytest.mark.parametrize("strength", [1, 2, 3])
def test_gold_output_round_trips(winner: str, strength: int) -> None:
    assert STRENGTH.parse(STRENGTH.output("Compare them.", winner, strength)) == ok(winner, strength)
    assert BINARY.parse(BINARY.output("Compare them.", winner, strength)) == ok(winner, None)
    assert STRENGTH.output("x", winner, strength) == f"<think>\nx\n</think>\n{v(winner, strength)}"


def test_output_rejects_bad_thinking() -> None:
    for thinking in ["", "  ", "a <think> b", "a </think>"]:
        with pytest.raises(ValueError):
            STRENGTH.output(thinking, "a", 1)


# --- messages ---------------------------------------------------------------------------------


def item(position: str) -> JudgeItem:
    pair = PreferencePair("p1", "test", "What is 2+2?", chosen="It is 4.", rejected="It is 5.", strength=3)
    return JudgeItem(pair, position)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["strength", "binary"])
@pytest.mark.parametrize("position", ["a", "b"])
def test_messages_put_responses_in_their_slots(name: str, position: str) -> None:
    it = item(position)
    msgs = get_prompt(name).messages(it)
    assert [m["role"] for m in msgs] == ["system", "user"]
    user = msgs[1]["content"]
    assert f"[The Start of Response (a)]\n{it.response_a}\n[The End of Response (a)]" in user
    assert f"[The Start of Response (b)]\n{it.response_b}\n[The End of Response (b)]" in user
    expected_a = "It is 4." if position == "a" else "It is 5."
    assert it.response_a == expected_a
    assert user.index("What is 2+2?") < user.index("Response (a)]") < user.index("Response (b)]")
    # the instruction comes last, after both responses
    assert user.rstrip().endswith(get_prompt(name).instruction.rstrip())  # type: ignore[attr-defined]


def test_instructions_name_their_templates() -> None:
    assert "Therefore, Response (x) is better, and the strength is [[k]]." in s.STRENGTH_INSTRUCTION
    assert "Therefore, Response (x) is better.\n" in s.BINARY_INSTRUCTION
    assert "<think>" in s.STRENGTH_INSTRUCTION and "<think>" in s.BINARY_INSTRUCTION




@pytest.mark.parametrize("name", ["strength", "binary"])
def test_prompt_is_short(name: str, smollm2_tokenizer_dir: str) -> None:
    """Everything but the question and responses costs tokens on every sample: keep it small."""
    empty = JudgeItem(PreferencePair("p", "t", "", "", ""), "a")
    msgs = get_prompt(name).messages(empty)
    instruction_text = s.SYSTEM_PROMPT + "\n" + get_prompt(name).instruction  # type: ignore[attr-defined]
    words = sum(len(m["content"].split()) for m in msgs)
    assert words < 90
    from tokenizers import Tokenizer  # the fast tokenizer alone: importing transformers takes seconds

    tokenizer = Tokenizer.from_file(str(Path(smollm2_tokenizer_dir) / "tokenizer.json"))

    def n_tokens(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False).ids)

    assert n_tokens(instruction_text) < 100  # system prompt + instruction (78 for "strength")
    assert sum(n_tokens(m["content"]) for m in msgs) < 150  # plus question/response markers


# --- strict parser: well-formed outputs -------------------------------------------------------

WELL_FORMED: list[tuple[str, str, Judgment]] = [
    ("a1", THINK + v("a", 1), ok("a", 1)),
    ("a2", THINK + v("a", 2), ok("a", 2)),
    ("a3", THINK + v("a", 3), ok("a", 3)),
    ("b1", THINK + v("b", 1), ok("b", 1)),
    ("b2", THINK + v("b", 2), ok("b", 2)),
    ("b3", THINK + v("b", 3), ok("b", 3)),
    ("leading whitespace", "  \n\n" + THINK + v("a", 2), ok("a", 2)),
    ("trailing whitespace", THINK + v("b", 1) + "  \n\n\t", ok("b", 1)),
    ("blank lines before verdict", THINK + "\n\n  \n" + v("a", 3), ok("a", 3)),
    ("indented verdict", THINK + "   " + v("b", 2), ok("b", 2)),
    ("verdict right after </think>", "<think>x</think>" + v("a", 1), ok("a", 1)),
    ("crlf", "<think>\r\nx\r\n</think>\r\n" + v("b", 3) + "\r\n", ok("b", 3)),
    ("verdicts inside think are ignored", "<think>" + v("b", 3) + "\n" + v("a", 1) + "</think>\n" + v("a", 2), ok("a", 2)),
]


@pytest.mark.parametrize("text,expected", [c[1:] for c in WELL_FORMED], ids=[c[0] for c in WELL_FORMED])
def test_strength_parser_well_formed(text: str, expected: Judgment) -> None:
    assert STRENGTH.parse(text) == expected


# --- strict parser: malformed outputs ---------------------------------------------------------

MALFORMED: list[tuple[str, str, str]] = [
    ("empty", "", s.EMPTY_OUTPUT),
    ("blank", " \n\t ", s.EMPTY_OUTPUT),
    ("no think", v("a", 2), s.MISSING_THINK),
    ("only closing tag", "x\n</think>\n" + v("a", 2), s.MISSING_THINK),
    ("text before think", "Sure!\n" + THINK + v("a", 2), s.TEXT_BEFORE_THINK),
    ("unclosed", "<think>\nthinking forever " + v("a", 2), s.UNCLOSED_THINK),
    ("two think blocks", THINK + THINK + v("a", 2), s.SEVERAL_THINK),
    ("nested open", "<think> x <think> y </think>\n" + v("a", 2), s.SEVERAL_THINK),
    ("two closing tags", "<think> x </think> y </think>\n" + v("a", 2), s.SEVERAL_THINK),
    ("empty think", "<think> \n </think>\n" + v("a", 2), s.EMPTY_THINK),
    ("nothing after think", THINK, s.NO_VERDICT),
    ("blank after think", THINK + " \n \n", s.NO_VERDICT),
    ("two verdict lines, conflicting", THINK + v("a", 2) + "\n" + v("b", 2), s.SEVERAL_VERDICTS),
    ("two verdict lines, same", THINK + v("a", 2) + "\n" + v("a", 2), s.SEVERAL_VERDICTS),
    ("text after verdict", THINK + v("a", 2) + "\nHope this helps.", s.TEXT_AFTER_VERDICT),
    ("eos leftover after verdict", THINK + v("a", 2) + "\n<|im_end|>", s.TEXT_AFTER_VERDICT),
    ("text between think and verdict", THINK + "In summary, (a).\n" + v("a", 2), s.TEXT_BEFORE_VERDICT),
    ("only prose after think", THINK + "I like (a).", s.BAD_TEMPLATE),
    ("two prose lines", THINK + "I like (a).\nReally.", s.BAD_TEMPLATE),
    ("eos on verdict line", THINK + v("a", 2) + "<|im_end|>", s.BAD_TEMPLATE),
    ("response (c)", THINK + "Therefore, Response (c) is better, and the strength is [[2]].", s.BAD_TEMPLATE),
    ("uppercase A", THINK + "Therefore, Response (A) is better, and the strength is [[2]].", s.BAD_TEMPLATE),
    ("missing period", THINK + "Therefore, Response (a) is better, and the strength is [[2]]", s.BAD_TEMPLATE),
    ("single brackets", THINK + "Therefore, Response (a) is better, and the strength is [2].", s.BAD_TEMPLATE),
    ("placeholder k", THINK + "Therefore, Response (a) is better, and the strength is [[k]].", s.BAD_TEMPLATE),
    ("placeholder x", THINK + "Therefore, Response (x) is better, and the strength is [[2]].", s.BAD_TEMPLATE),
    ("leading zero", THINK + "Therefore, Response (a) is better, and the strength is [[02]].", s.BAD_TEMPLATE),
    ("quoted", THINK + '"' + v("a", 2) + '"', s.BAD_TEMPLATE),
    ("bold", THINK + "**" + v("a", 2) + "**", s.BAD_TEMPLATE),
    ("binary line for strength prompt", THINK + "Therefore, Response (a) is better.", s.BAD_TEMPLATE),
    ("double space", THINK + "Therefore,  Response (a) is better, and the strength is [[2]].", s.BAD_TEMPLATE),
    ("strength 4", THINK + "Therefore, Response (a) is better, and the strength is [[4]].", s.STRENGTH_OUT_OF_RANGE),
    ("strength 0", THINK + "Therefore, Response (b) is better, and the strength is [[0]].", s.STRENGTH_OUT_OF_RANGE),
    ("strength -1", THINK + "Therefore, Response (b) is better, and the strength is [[-1]].", s.STRENGTH_OUT_OF_RANGE),
    ("strength 10", THINK + "Therefore, Response (a) is better, and the strength is [[10]].", s.STRENGTH_OUT_OF_RANGE),
]


@pytest.mark.parametrize("text,reason", [c[1:] for c in MALFORMED], ids=[c[0] for c in MALFORMED])
def test_strength_parser_malformed(text: str, reason: str) -> None:
    assert STRENGTH.parse(text) == fail(reason)


def test_every_failure_reason_is_exercised_and_distinct() -> None:
    assert len(set(s.FAILURE_REASONS)) == len(s.FAILURE_REASONS)
    assert {c[2] for c in MALFORMED} == set(s.FAILURE_REASONS)


# --- binary parser ----------------------------------------------------------------------------

BINARY_CASES: list[tuple[str, str, Judgment]] = [
    ("a", THINK + "Therefore, Response (a) is better.", ok("a", None)),
    ("b", THINK + "Therefore, Response (b) is better.", ok("b", None)),
    ("whitespace", "\n " + THINK + "  Therefore, Response (b) is better. \n", ok("b", None)),
    ("strength line", THINK + v("a", 2), fail(s.BAD_TEMPLATE)),
    ("response (c)", THINK + "Therefore, Response (c) is better.", fail(s.BAD_TEMPLATE)),
    ("no think", "Therefore, Response (a) is better.", fail(s.MISSING_THINK)),
    ("unclosed", "<think> Therefore, Response (a) is better.", fail(s.UNCLOSED_THINK)),
    ("empty", "", fail(s.EMPTY_OUTPUT)),
    ("nothing after", THINK, fail(s.NO_VERDICT)),
    ("text after", THINK + "Therefore, Response (a) is better.\nDone.", fail(s.TEXT_AFTER_VERDICT)),
    (
        "two verdicts",
        THINK + "Therefore, Response (a) is better.\nTherefore, Response (b) is better.",
        fail(s.SEVERAL_VERDICTS),
    ),
]


@pytest.mark.parametrize("text,expected", [c[1:] for c in BINARY_CASES], ids=[c[0] for c in BINARY_CASES])
def test_binary_parser(text: str, expected: Judgment) -> None:
    assert BINARY.parse(text) == expected


def test_reference_guided_pairs_show_their_reference_and_others_render_as_before():
    from judge_rl.data import generate_pairs
    from judge_rl.data.pairs import JudgeItem
    from judge_rl.prompts import get_prompt

    plain, guided = generate_pairs(3, 0, "train"), generate_pairs(3, 0, "train", reference=True)
    for p, g in zip(plain, guided):
        assert "reference" not in p.meta and g.meta["reference"] == g.meta["answer"]
        for name in ("strength", "binary", "judgelrm", "pairwise_tag"):
            without = get_prompt(name).messages(JudgeItem(p, "b"))[1]["content"]
            with_ref = get_prompt(name).messages(JudgeItem(g, "b"))[1]["content"]
            assert "[Reference Answer]" not in without
            assert with_ref == without.replace("\n\n[The Start of Response (a)]",
                                               f"\n\n[Reference Answer]\n{g.meta['answer']}\n\n[The Start of Response (a)]", 1)


def test_the_verdict_only_prompts_read_the_line_alone():
    """Think-J Table 3's "w/o CoT" rows: the same line, no <think> block, the same strict template."""
    from judge_rl.prompts import get_prompt

    direct = get_prompt("strength_direct")
    assert direct.parse("Therefore, Response (b) is better, and the strength is [[3]].\n").winner == "b"
    assert direct.parse("").error == "empty output"
    assert direct.parse("<think>x</think>\nTherefore, Response (b) is better, and the strength is [[3]].").error
    assert direct.parse("Therefore, Response (a) is better, and the strength is [[4]].").error == "strength out of range"
    assert direct.parse("Therefore, Response (a) is better, and the strength is [[1]].\nBecause.").error == "text after verdict line"
    assert direct.output("ignored thinking", "a", 2) == "Therefore, Response (a) is better, and the strength is [[2]]."
    binary = get_prompt("binary_direct")
    assert binary.parse("Therefore, Response (a) is better.").winner == "a"
    assert binary.parse("Response (a)").error == "verdict line does not match template"
