"""Every registered prompt: its kind, messages with each response in its slot, a short instruction,
gold outputs that parse back, and the shared think-block rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge_rl.data.pairs import JudgeItem, PointwiseItem, PreferencePair
from judge_rl.prompts import PROMPTS, JudgePrompt, Judgment, PointwiseJudgePrompt, get_prompt
from judge_rl.prompts import openjudge as oj
from judge_rl.prompts import strength as s
from judge_rl.prompts import think as t
from judge_rl.prompts.judgelrm import JudgeLRMPrompt
from judge_rl.prompts.margin import MarginPrompt
from judge_rl.prompts.openjudge import PairwiseTagPrompt, PointwisePrompt

PAIRWISE = ["strength", "binary", "margin", "judgelrm", "pairwise_tag"]


def test_registry_classes_and_kinds() -> None:
    expected = {
        "margin": MarginPrompt,
        "judgelrm": JudgeLRMPrompt,
        "pairwise_tag": PairwiseTagPrompt,
        "pointwise": PointwisePrompt,
    }
    for name, cls in expected.items():
        prompt = get_prompt(name)
        assert type(prompt) is cls and prompt.name == name
    for name in PAIRWISE:
        assert isinstance(get_prompt(name), JudgePrompt) and get_prompt(name).kind == "pairwise"
    assert isinstance(get_prompt("pointwise"), PointwiseJudgePrompt) and get_prompt("pointwise").kind == "pointwise"
    benchmark_prompts = ["rewardbench_pairwise", "rb2_choice", "rb2_rating", "rb2_rating_ties"]
    verdict_only = ["strength_direct", "binary_direct"]  # Think-J Table 3's "w/o CoT" rows
    assert PROMPTS.names() == sorted([*PAIRWISE, "pointwise", *benchmark_prompts, *verdict_only, "scalar"])
    assert get_prompt("scalar").kind == "pointwise" and get_prompt("strength_direct").kind == "pairwise"


# --- messages ---------------------------------------------------------------------------------


def pair() -> PreferencePair:
    return PreferencePair("p1", "test", "What is 2+2?", chosen="It is 4.", rejected="It is 5.", strength=3)


@pytest.mark.parametrize("name", PAIRWISE)
@pytest.mark.parametrize("position", ["a", "b"])
def test_pairwise_messages_put_responses_in_their_slots(name: str, position: str) -> None:
    it = JudgeItem(pair(), position)  # type: ignore[arg-type]
    prompt = get_prompt(name)
    msgs = prompt.messages(it)  # type: ignore[arg-type]
    assert [m["role"] for m in msgs] == ["system", "user"]
    assert msgs[0]["content"] == s.SYSTEM_PROMPT
    user = msgs[1]["content"]
    chosen_slot, rejected_slot = ("a", "b") if position == "a" else ("b", "a")
    assert f"[The Start of Response ({chosen_slot})]\nIt is 4.\n[The End of Response ({chosen_slot})]" in user
    assert f"[The Start of Response ({rejected_slot})]\nIt is 5.\n[The End of Response ({rejected_slot})]" in user
    assert user.index("What is 2+2?") < user.index("Response (a)]") < user.index("Response (b)]")
    assert user.endswith(prompt.instruction)  # type: ignore[union-attr]


@pytest.mark.parametrize("which,label", [("chosen", 1), ("rejected", 0)])
def test_pointwise_messages_show_one_response(which: str, label: int) -> None:
    item = PointwiseItem(pair(), which, label)  # type: ignore[arg-type]
    msgs = get_prompt("pointwise").messages(item)  # type: ignore[arg-type]
    assert msgs == [
        {"role": "system", "content": oj.POINTWISE_SYSTEM_PROMPT},
        {
            "role": "user",
            "content": "[Question]\nWhat is 2+2?\n\n"
            f"[The Start of Response]\n{item.response}\n[The End of Response]\n\n" + oj.POINTWISE_INSTRUCTION,
        },
    ]
    other = "It is 5." if which == "chosen" else "It is 4."
    assert item.response in msgs[1]["content"] and other not in msgs[1]["content"]


def test_instructions_name_their_formats() -> None:
    assert "Therefore, the score of Response (a) is [[x]] and the score of Response (b) is [[y]]." in get_prompt(
        "margin"
    ).instruction  # type: ignore[union-attr]
    assert "<answer>x, y</answer>" in get_prompt("judgelrm").instruction  # type: ignore[union-attr]
    assert "<better>A</better> if Response (a)" in oj.PAIRWISE_TAG_INSTRUCTION
    assert "<better>B</better> if Response (b)" in oj.PAIRWISE_TAG_INSTRUCTION
    assert "<score>k</score>" in oj.POINTWISE_INSTRUCTION and "0" in oj.POINTWISE_INSTRUCTION
    for name in [*PAIRWISE, "pointwise"]:
        assert "<think>...</think>" in get_prompt(name).instruction  # type: ignore[union-attr]


def empty_messages(name: str) -> tuple[list[dict[str, str]], str]:
    empty = PreferencePair("p", "t", "", "", "")
    if name == "pointwise":
        item = PointwiseItem(empty, "chosen", 1)
        return get_prompt(name).messages(item), oj.POINTWISE_SYSTEM_PROMPT  # type: ignore[arg-type]
    return get_prompt(name).messages(JudgeItem(empty, "a")), s.SYSTEM_PROMPT  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["margin", "judgelrm", "pairwise_tag", "pointwise"])
def test_prompt_is_short(name: str, smollm2_tokenizer_dir: str) -> None:
    """No longer than the strength prompt the embedded model is tuned with (same bounds as its test)."""
    msgs, system = empty_messages(name)
    instruction_text = system + "\n" + get_prompt(name).instruction  # type: ignore[union-attr]
    assert sum(len(m["content"].split()) for m in msgs) < 90
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(Path(smollm2_tokenizer_dir) / "tokenizer.json"))

    def n_tokens(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False).ids)

    assert n_tokens(instruction_text) < 100  # margin 76, judgelrm 63, pairwise_tag 63, pointwise 56
    assert sum(n_tokens(m["content"]) for m in msgs) < 150
    strength_msgs, _ = empty_messages("strength")
    assert sum(n_tokens(m["content"]) for m in msgs) <= sum(n_tokens(m["content"]) for m in strength_msgs)


# --- gold outputs round-trip -------------------------------------------------------------------


LABELS = [(n, w, k) for n in PAIRWISE for w in "ab" for k in (1, 2, 3, None) if not (n == "strength" and k is None)]


@pytest.mark.parametrize("name,winner,strength", LABELS)
def test_label_output_parses_as_the_labelled_winner(name: str, winner: str, strength: int | None) -> None:
    """`output(thinking, winner, strength)` is what SFT calls for every pairwise prompt."""
    prompt = get_prompt(name)
    out = prompt.output("Compare them.", winner, strength)  # type: ignore[union-attr, call-arg]
    assert out.startswith("<think>\nCompare them.\n</think>\n")
    judgment = prompt.parse(out)
    assert judgment.ok and judgment.winner == winner


@pytest.mark.parametrize("score", [0, 1, 2, 3, 4])
def test_pointwise_output_round_trips(score: int) -> None:
    prompt = get_prompt("pointwise")
    out = prompt.output("Check it.", score)  # type: ignore[union-attr, call-arg]
    assert out == f"<think>\nCheck it.\n</think>\n<score>{score}</score>"
    assert prompt.parse(out) == Judgment(None, None, None, score=score)


@pytest.mark.parametrize("name", ["margin", "judgelrm", "pairwise_tag", "pointwise"])
def test_output_rejects_bad_thinking(name: str) -> None:
    args = (3,) if name == "pointwise" else ("a", 1)
    for thinking in ["", "  ", "a <think> b", "a </think>"]:
        with pytest.raises(ValueError):
            get_prompt(name).output(thinking, *args)  # type: ignore[union-attr]


# --- the shared think-block rules, for every prompt ---------------------------------------------


def verdict_for(name: str) -> str:
    if name == "pointwise":
        return get_prompt(name).verdict(3)  # type: ignore[call-arg]
    return get_prompt(name).verdict("a", 2)  # type: ignore[call-arg]


THINK_CASES: list[tuple[str, str, str]] = [
    ("empty", "", t.EMPTY_OUTPUT),
    ("blank", " \n\t ", t.EMPTY_OUTPUT),
    ("no think", "{v}", t.MISSING_THINK),
    ("only closing tag", "x\n</think>\n{v}", t.MISSING_THINK),
    ("text before think", "Sure!\n<think>x</think>\n{v}", t.TEXT_BEFORE_THINK),
    ("unclosed", "<think>\nthinking forever {v}", t.UNCLOSED_THINK),
    ("two think blocks", "<think>x</think><think>y</think>\n{v}", t.SEVERAL_THINK),
    ("empty think", "<think> \n </think>\n{v}", t.EMPTY_THINK),
    ("nothing after think", "<think>x</think>", t.NO_VERDICT),
    ("blank after think", "<think>x</think>\n \n", t.NO_VERDICT),
]


@pytest.mark.parametrize("name", [*PAIRWISE, "pointwise"])
@pytest.mark.parametrize("text,reason", [c[1:] for c in THINK_CASES], ids=[c[0] for c in THINK_CASES])
def test_think_block_rules_hold_for_every_prompt(name: str, text: str, reason: str) -> None:
    assert get_prompt(name).parse(text.format(v=verdict_for(name))) == Judgment.failure(reason)


def test_split_think() -> None:
    assert t.split_think("  <think>x</think>\nrest ") == ("\nrest ", None)
    assert t.split_think("<think>x</think>") == ("", t.NO_VERDICT)
    assert t.split_think("") == ("", t.EMPTY_OUTPUT)


def test_tag_reasons() -> None:
    r = t.TagReasons.for_tag("answer")
    assert r.all() == (
        "missing <answer> tag",
        "several <answer> tags",
        "unclosed <answer> tag",
        "text between </think> and <answer>",
        "text after </answer>",
        "<answer> content does not match template",
    )
