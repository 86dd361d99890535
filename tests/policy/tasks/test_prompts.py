"""Policy prompts (judge_rl.policy.tasks.prompts): the data model, the seeded generator (determinism, validity,
train/test disjoint by base task), responses built to satisfy a constraint pass the rule checker, and
nothing reuses IFEval's 541 prompts (needs the shared data; skipped without it)."""

from __future__ import annotations

import json
import re

import pytest

from judge_rl.evaluation.ifeval import CHECKERS
from judge_rl.policy.tasks.prompts import (
    BASE_TASKS,
    CONSTRAINT_POINTS,
    FORBIDDEN_POOL,
    GENERATED_INSTRUCTION_IDS,
    NEGATIVE_CRITERIA,
    QUALITY_POINTS,
    Criterion,
    PolicyPrompt,
    compatible,
    constraint_instruction,
    criterion_text,
    generate_policy_prompts,
    task_split,
    tasks_for,
)
from judge_rl.policy.rewards.rule import rule_score

TASK_BY_ID = {t.task_id: t for t in BASE_TASKS}


@pytest.fixture(scope="module")
def generated() -> list[PolicyPrompt]:
    return [p for seed in (0, 1, 2) for split in ("train", "test") for p in generate_policy_prompts(150, seed, split)]


# --------------------------------------------------------------------------------------------------
# data model
# --------------------------------------------------------------------------------------------------


def test_criterion_validation() -> None:
    c = Criterion("Mentions the moon.", 3, ["axis:accuracy"])
    assert c.points == 3.0 and isinstance(c.points, float) and c.tags == ("axis:accuracy",)
    assert Criterion("Padded.", -2).points == -2.0
    for bad in (0, 0.0, True, float("nan"), float("inf"), "3", None):
        with pytest.raises(ValueError, match="points must be a finite non-zero number"):
            Criterion("x", bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-empty string"):
        Criterion("  ", 1)
    with pytest.raises(ValueError, match="tags must be a list of strings"):
        Criterion("x", 1, "axis:accuracy")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tags must be a list of strings"):
        Criterion("x", 1, [1])  # type: ignore[list-item]


def test_policy_prompt_validates_kwargs_one_line() -> None:
    with pytest.raises(ValueError) as e:
        PolicyPrompt("p1", "Say hi.", ("keywords:existence",), ({},))
    assert str(e.value) == "prompt 'p1': instruction 'keywords:existence': missing argument(s) keywords"
    with pytest.raises(ValueError, match="unknown instruction id 'no:such'"):
        PolicyPrompt("p1", "Say hi.", ("no:such",), ({},))
    with pytest.raises(ValueError, match="one object per instruction"):
        PolicyPrompt("p1", "Say hi.", ("punctuation:no_comma",), ())
    # None-valued arguments are dropped, as the checkers do
    p = PolicyPrompt("p1", "Say hi.", ("punctuation:no_comma",), ({"num_words": None},))
    assert p.kwargs == ({},)


def test_policy_prompt_messages_and_round_trip() -> None:
    messages = [
        {"role": "user", "content": "Hi."},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Tell me about tides."},
    ]
    p = PolicyPrompt(
        "p2", "Tell me about tides.", ("punctuation:no_comma",), ({},), (Criterion("Mentions the moon.", 2),),
        reference="The moon pulls the sea.", soft_constraints=("Playful tone.",), messages=messages, meta={"k": 1},
    )  # fmt: skip
    assert p.chat() == messages
    assert PolicyPrompt.from_dict(json.loads(json.dumps(p.to_dict()))) == p
    assert PolicyPrompt("p3", "Hi.").chat() == [{"role": "user", "content": "Hi."}]
    with pytest.raises(ValueError, match="last message must be a user turn"):
        PolicyPrompt("p4", "Hi.", messages=[{"role": "user", "content": "Hi."}, {"role": "assistant", "content": "Yo"}])
    with pytest.raises(ValueError, match="prompt must be the content of the last user message"):
        PolicyPrompt("p4", "Other.", messages=[{"role": "user", "content": "Hi."}])
    with pytest.raises(ValueError, match="unknown policy prompt field"):
        PolicyPrompt.from_dict({"prompt_id": "x", "prompt": "y", "extra": 1})


# --------------------------------------------------------------------------------------------------
# base tasks and splits
# --------------------------------------------------------------------------------------------------


def test_base_tasks_are_clean() -> None:
    assert len({t.task_id for t in BASE_TASKS}) == len(BASE_TASKS) >= 40
    assert len({t.text for t in BASE_TASKS}) == len(BASE_TASKS)
    for t in BASE_TASKS:
        assert "," not in t.text, t.task_id  # a repeated request must not break "no commas"
        assert t.text.endswith(".") and ". " not in t.text and "?" not in t.text, t.task_id  # one sentence
        assert len(t.keywords) >= 2 and all(re.fullmatch(r"[a-z]+", k) for k in t.keywords), t.task_id
        for word in FORBIDDEN_POOL:  # a repeated request must not break "forbidden words"
            assert not re.search(rf"\b{word}\b", t.text, flags=re.IGNORECASE), (t.task_id, word)


def test_splits_are_disjoint_by_base_task(generated: list[PolicyPrompt]) -> None:
    train, test = tasks_for("train"), tasks_for("test")
    assert train and test and len(train) + len(test) == len(BASE_TASKS)
    assert not {t.task_id for t in train} & {t.task_id for t in test}
    assert not {t.text for t in train} & {t.text for t in test}
    assert 0.1 <= len(test) / len(BASE_TASKS) <= 0.35
    for p in generated:
        task = TASK_BY_ID[p.meta["task_id"]]
        assert task_split(task.task_id) == p.meta["split"]
        assert p.prompt.startswith(task.text + " ")
    for split in ("train", "test"):
        used = {p.meta["task_id"] for p in generated if p.meta["split"] == split}
        assert used <= {t.task_id for t in tasks_for(split)}  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="split must be"):
        tasks_for("dev")  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------------
# generator
# --------------------------------------------------------------------------------------------------


def test_generator_is_deterministic() -> None:
    a = [p.to_dict() for p in generate_policy_prompts(40, seed=7)]
    b = [p.to_dict() for p in generate_policy_prompts(40, seed=7)]
    assert a == b
    assert a != [p.to_dict() for p in generate_policy_prompts(40, seed=8)]
    assert [p.to_dict() for p in generate_policy_prompts(10, seed=7)] == a[:10]  # a prefix of a longer run
    assert len({p["prompt_id"] for p in a}) == 40
    assert generate_policy_prompts(0) == []
    # pinned: a change here changes every data set generated so far
    first = generate_policy_prompts(1, seed=0)[0]
    assert first.prompt_id == "ifgen-train-s0-000000"
    assert first.prompt == (
        "Write a letter to a new neighbor inviting them to a street picnic. Stay below 140 words in total. "
        "Count your letters: 'n' should occur at least 25 times."
    )
    assert first.kwargs == (
        {"num_words": 140, "relation": "less than"},
        {"letter": "n", "let_frequency": 25, "let_relation": "at least"},
    )
    assert [c.points for c in first.rubric] == [2.0, 2.0, 3.0]


def test_generated_items_are_valid(generated: list[PolicyPrompt]) -> None:
    ids_seen = set()
    for p in generated:
        n = len(p.instruction_id_list)
        assert 1 <= n <= 3
        assert len(set(p.instruction_id_list)) == n
        for i, a in enumerate(p.instruction_id_list):
            assert a in GENERATED_INSTRUCTION_IDS
            for b in p.instruction_id_list[i + 1 :]:
                assert compatible(a, b), (a, b)
        for instruction_id, kwargs in zip(p.instruction_id_list, p.kwargs):
            assert CHECKERS[instruction_id].arguments(kwargs) == kwargs  # accepted, nothing dropped
            ids_seen.add(instruction_id)
        # rubric: one criterion per constraint, one for quality, maybe one negative
        constraint_items = p.rubric[:n]
        assert [c.criterion for c in constraint_items] == [
            criterion_text(i, k) for i, k in zip(p.instruction_id_list, p.kwargs)
        ]
        assert all(c.points == CONSTRAINT_POINTS for c in constraint_items)
        assert [c.tags[1] for c in constraint_items] == [f"instruction_id:{i}" for i in p.instruction_id_list]
        quality = p.rubric[n]
        assert quality.points == QUALITY_POINTS and quality.tags == ("axis:task_quality",)
        assert TASK_BY_ID[p.meta["task_id"]].text in quality.criterion
        rest = p.rubric[n + 1 :]
        assert len(rest) <= 1 and all((c.criterion, c.points) in NEGATIVE_CRITERIA for c in rest)
        assert p.reference is None and p.soft_constraints == ()
    assert len(ids_seen) >= 15
    assert ids_seen == set(GENERATED_INSTRUCTION_IDS)
    negatives = sum(1 for p in generated if p.rubric[-1].points < 0)
    assert 0.3 < negatives / len(generated) < 0.7


def test_generator_options() -> None:
    only = generate_policy_prompts(20, seed=1, instruction_ids=["punctuation:no_comma"], max_constraints=3)
    assert all(p.instruction_id_list == ("punctuation:no_comma",) for p in only)  # cannot supply more
    three = generate_policy_prompts(20, seed=1, min_constraints=3, max_constraints=3)
    assert all(len(p.instruction_id_list) == 3 for p in three)
    with pytest.raises(ValueError, match="is not generated"):
        generate_policy_prompts(1, instruction_ids=["detectable_format:constrained_response"])
    with pytest.raises(ValueError, match="min_constraints"):
        generate_policy_prompts(1, min_constraints=2, max_constraints=1)
    with pytest.raises(ValueError, match="non-negative integer"):
        generate_policy_prompts(-1)


def test_compatibility_rules() -> None:
    assert not compatible("punctuation:no_comma", "punctuation:no_comma")
    assert not compatible("change_case:english_capital", "change_case:english_lowercase")
    assert not compatible("language:response_language", "keywords:existence")
    assert not compatible("detectable_format:json_format", "detectable_format:title")
    assert compatible("detectable_format:json_format", "keywords:existence")
    assert compatible("keywords:existence", "detectable_format:json_format")
    assert compatible("punctuation:no_comma", "detectable_format:title")


# --------------------------------------------------------------------------------------------------
# a response built to satisfy the constraint passes the rule checker
# --------------------------------------------------------------------------------------------------


def _build(instruction_id: str, k: dict) -> str:
    """A response that follows `instruction_id` with arguments `k` (checker semantics)."""
    at_least = lambda rel: rel == "at least"  # noqa: E731
    builders = {
        "punctuation:no_comma": lambda: "The tide rises. Then it falls again.",
        "keywords:existence": lambda: " and ".join(k["keywords"]) + " are all here.",
        "keywords:forbidden_words": lambda: "Plain words only here.",
        "keywords:frequency": lambda: (
            " ".join([k["keyword"]] * k["frequency"]) if at_least(k["relation"]) else f"One {k['keyword']} only."
        ),
        "keywords:letter_frequency": lambda: (
            k["letter"] * k["let_frequency"] if at_least(k["let_relation"]) else "Hello world."
        ),
        "change_case:english_lowercase": lambda: "the moon pulls the ocean and the water rises and falls each day.",
        "change_case:capital_word_frequency": lambda: (
            " ".join(["LOUD"] * k["capital_frequency"]) + " words." if at_least(k["capital_relation"]) else "quiet words."
        ),
        "length_constraints:number_words": lambda: (
            " ".join(["word"] * (k["num_words"] if at_least(k["relation"]) else k["num_words"] - 1))
        ),
        "length_constraints:number_sentences": lambda: (
            " ".join(["This is a sentence."] * k["num_sentences"]) if at_least(k["relation"]) else "One sentence."
        ),
        "length_constraints:number_paragraphs": lambda: "\n***\n".join(
            f"Paragraph {i} text." for i in range(k["num_paragraphs"])
        ),
        "length_constraints:nth_paragraph_first_word": lambda: "\n\n".join(
            f"{k['first_word'].capitalize()} here." if i == k["nth_paragraph"] else f"Paragraph {i}."
            for i in range(1, k["num_paragraphs"] + 1)
        ),
        "detectable_content:number_placeholders": lambda: " ".join(f"[field {i}]" for i in range(k["num_placeholders"])),
        "detectable_content:postscript": lambda: f"Main text.\n\n{k['postscript_marker']} One more note.",
        "detectable_format:json_format": lambda: '```json\n{"answer": "tides"}\n```',
        "detectable_format:multiple_sections": lambda: "\n".join(
            f"{k['section_spliter']} {i}\nSome text." for i in range(1, k["num_sections"] + 1)
        ),
        "detectable_format:number_bullet_lists": lambda: "\n".join(f"* item {i}" for i in range(k["num_bullets"])),
        "detectable_format:number_highlighted_sections": lambda: " ".join(
            f"*point {i}*" for i in range(k["num_highlights"])
        ),
        "detectable_format:title": lambda: "<<Moon and Sea>>\nThe body.",
        "combination:two_responses": lambda: "First answer.\n******\nSecond answer.",
        "combination:repeat_prompt": lambda: f"{k['prompt_to_repeat']} Here is my answer.",
        "startend:end_checker": lambda: f"Some body text. {k['end_phrase']}",
        "startend:quotation": lambda: '"All of it quoted."',
    }
    return builders[instruction_id]()


BUILT = [
    "punctuation:no_comma", "keywords:existence", "keywords:forbidden_words", "keywords:frequency",
    "keywords:letter_frequency", "change_case:english_lowercase", "change_case:capital_word_frequency",
    "length_constraints:number_words", "length_constraints:number_sentences", "length_constraints:number_paragraphs",
    "length_constraints:nth_paragraph_first_word", "detectable_content:number_placeholders",
    "detectable_content:postscript", "detectable_format:json_format", "detectable_format:multiple_sections",
    "detectable_format:number_bullet_lists", "detectable_format:number_highlighted_sections",
    "detectable_format:title", "combination:two_responses", "combination:repeat_prompt", "startend:end_checker",
    "startend:quotation",
]  # fmt: skip


@pytest.mark.parametrize("instruction_id", BUILT)
def test_built_response_passes_rule_checker(instruction_id: str) -> None:
    for p in generate_policy_prompts(6, seed=11, instruction_ids=[instruction_id], max_constraints=1):
        response = _build(instruction_id, dict(p.kwargs[0]))
        reward = rule_score(p, response)
        assert (reward.score, reward.components["rule_all"]) == (1.0, 1.0), (p.kwargs, response)


def test_built_response_for_two_constraints() -> None:
    prompts = generate_policy_prompts(
        10, seed=5, instruction_ids=["detectable_format:title", "startend:end_checker"], min_constraints=2
    )
    for p in prompts:
        k = dict(zip(p.instruction_id_list, p.kwargs))
        response = f"<<A Title>>\nA body without much in it. {k['startend:end_checker']['end_phrase']}"
        assert rule_score(p, response).score == 1.0
        assert rule_score(p, "<<A Title>>\nNo ending here.").score == 0.5


# --------------------------------------------------------------------------------------------------
# no reuse of IFEval's prompts
# --------------------------------------------------------------------------------------------------


def _all_instruction_sentences() -> set[str]:
    sentences = set()
    for p in generate_policy_prompts(400, seed=0) + generate_policy_prompts(100, seed=0, split="test"):
        for instruction_id, kwargs in zip(p.instruction_id_list, p.kwargs):
            for variant in (0, 1):
                sentences.add(constraint_instruction(instruction_id, kwargs, variant))
    return sentences


def test_no_ifeval_prompt_is_reused(shared_data, generated: list[PolicyPrompt]) -> None:
    path = shared_data / "ifeval" / "input_data.jsonl"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    ifeval = [json.loads(line)["prompt"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(ifeval) == 541
    ifeval_lower = [q.lower() for q in ifeval]
    prompts = {p.prompt for p in generated}
    for prompt in prompts:
        assert prompt not in ifeval
        assert not any(q in prompt for q in ifeval), prompt
    # new wording: no constraint sentence and no base task occurs in an IFEval prompt
    for sentence in _all_instruction_sentences() | {t.text for t in BASE_TASKS}:
        assert not any(sentence.lower() in q for q in ifeval_lower), sentence
