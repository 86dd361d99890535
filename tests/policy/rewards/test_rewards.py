"""Policy rewards (judge_rl.policy.rewards): exact scores on hand-written judge replies, malformed ones
included (unclosed think, missing and extra criteria, wrong JSON), negative points and clipping; a judge
failure is never a score."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from judge_rl.evaluation.ifeval import evaluate_prompt, make_prompt
from judge_rl.policy.tasks.prompts import Criterion, PolicyPrompt, generate_policy_prompts
from judge_rl.policy.tasks.guard import guard_failure, task_keywords
from judge_rl.policy.rewards import (
    CRITERIA_MISSING,
    EMPTY_REPLY,
    NO_VERDICT,
    JUDGE_SERVER_ERROR,
    JUDGE_TRUNCATED,
    POLICY_REWARDS,
    JudgeFailure,
    PolicyReward,
    compute_score,
    failure_kind,
    strip_think,
    unparseable,
)
from judge_rl.policy.rewards.base import SEVERAL_VERDICTS, UNCLOSED_THINK
from judge_rl.policy.rewards.judge_pairwise import PAIRWISE_COMPONENTS, judge_pairwise_score, pairwise_judge_messages
from judge_rl.policy.rewards.rubric import (
    RUBRIC_COMPONENTS,
    collect_criterion_verdicts,
    criterion_grading_messages,
    parse_criterion_reply,
    parse_rubric_reply,
    rubric_grading_messages,
    rubric_reward,
    rubric_score,
)
from judge_rl.policy.rewards.rule import RULE_COMPONENTS, rule_checks, rule_compute_score, rule_score
from judge_rl.policy.rewards.verif import VERIF_COMPONENTS, parse_verif_reply, verif_judge_messages, verif_score
from judge_rl.prompts import get_prompt

U = "judge reply unparseable: "

RUBRIC = (
    Criterion("Explains that the moon's gravity causes tides.", 5),
    Criterion("Mentions two high tides a day.", 3),
    Criterion("Claims the wind causes tides.", -2),
)  # positive points: 8


def is_nan(x: float) -> bool:
    return isinstance(x, float) and math.isnan(x)


def reply_json(*pairs: tuple[int, bool], think: str | None = "Checking each criterion.") -> str:
    body = json.dumps([{"criterion_index": i, "met": m} for i, m in pairs])
    return body if think is None else f"<think>\n{think}\n</think>\n{body}"


# --------------------------------------------------------------------------------------------------
# PolicyReward and failures
# --------------------------------------------------------------------------------------------------


def test_policy_reward_shape_and_verl_dict() -> None:
    ok = PolicyReward(0.75, None, {"met_points": 6, "n_criteria": 3})
    assert ok.ok and ok.components == {"met_points": 6.0, "n_criteria": 3.0}
    assert ok.to_verl_dict() == {"score": 0.75, "judge_failed": 0, "failure_reason": "", "met_points": 6.0, "n_criteria": 3.0}
    bad = PolicyReward.failed(JudgeFailure.server_error("HTTP 503"), {"met_points": float("nan")})
    assert bad.score is None and bad.failure == JUDGE_SERVER_ERROR and not bad.ok
    d = bad.to_verl_dict()
    assert (d["score"], d["judge_failed"], d["failure_reason"]) == (0.0, 1, "judge server error") and is_nan(d["met_points"])
    with pytest.raises(ValueError, match="exactly one"):
        PolicyReward(None, None, {})
    with pytest.raises(ValueError, match="exactly one"):
        PolicyReward(0.0, CRITERIA_MISSING, {})
    with pytest.raises(ValueError, match="finite"):
        PolicyReward(float("nan"), None, {})
    with pytest.raises(ValueError, match="unknown failure reason"):
        PolicyReward(None, "the judge said something odd", {})
    with pytest.raises(ValueError, match="reserved"):
        PolicyReward(1.0, None, {"judge_failed": 0})
    assert failure_kind(U + "not valid JSON") == "judge reply unparseable"
    assert failure_kind(JUDGE_TRUNCATED) == JUDGE_TRUNCATED
    with pytest.raises(ValueError):
        failure_kind("judge reply unparseable: ")
    with pytest.raises(ValueError):
        JudgeFailure("timeout")


@pytest.mark.parametrize(
    ("text", "answer", "failure"),
    [
        ("[1]", "[1]", None),
        ("<think>\nhmm\n</think>\n[1]", "\n[1]", None),
        ("  <think>hmm</think>[1]", "[1]", None),
        ("hmm, thinking opened by the template\n</think>\n[1]", "\n[1]", None),
        ("<think>\nthe judge ran out of tokens", "", U + "unclosed <think>"),
        ("Sure. <think>hmm</think>[1]", "", U + "text before <think>"),
        ("<think>a</think><think>b</think>[1]", "", U + "several <think> blocks"),
        ("<think>a<think>b</think>[1]", "", U + "several <think> blocks"),
        ("<think>a</think>[1]</think>", "", U + "several <think> blocks"),
        ("<think>a</think>\n  \n", "", U + "nothing after </think>"),
        ("   ", "", U + "empty reply"),
    ],
)
def test_strip_think(text: str, answer: str, failure: str | None) -> None:
    got, fail = strip_think(text)
    assert got == answer
    assert (None if fail is None else fail.reason) == failure


# --------------------------------------------------------------------------------------------------
# rubric: parsing the judge's reply
# --------------------------------------------------------------------------------------------------


def test_parse_rubric_reply_json() -> None:
    assert parse_rubric_reply(reply_json((1, True), (2, False), (3, False)), 3) == {0: True, 1: False, 2: False}
    # any order, explanation allowed, code fence allowed, no think block
    fenced = '```json\n[{"criterion_index": 3, "met": true, "explanation": "says wind"}, ' \
             '{"criterion_index": 1, "met": true}, {"criterion_index": 2, "met": true}]\n```'  # fmt: skip
    assert parse_rubric_reply(fenced, 3) == {2: True, 0: True, 1: True}
    server = JudgeFailure.server_error("timeout")
    assert parse_rubric_reply(server, 3) is server


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (reply_json((1, True), (2, False)), CRITERIA_MISSING),  # criterion 3 missing
        (reply_json(), CRITERIA_MISSING),  # empty list
        (reply_json((1, True), (2, False), (3, False), (4, True)), U + "unknown criterion index"),  # extra criterion
        (reply_json((0, True), (1, True), (2, False)), U + "unknown criterion index"),  # 0-based by mistake
        (reply_json((1, True), (1, False), (2, False), (3, False)), U + "duplicate criterion index"),
        ("<think>\nI am still weighing criterion 2 and", U + "unclosed <think>"),
        ("<think>ok</think>\n[{'criterion_index': 1, 'met': true}]", U + "not valid JSON"),  # single quotes
        ("<think>ok</think>\nHere you go: " + reply_json((1, True), (2, True), (3, True), think=None), U + "not valid JSON"),
        (reply_json((1, True), (2, True), (3, True), think=None) + "\nHope this helps.", U + "not valid JSON"),
        ('{"criterion_index": 1, "met": true}', U + "not a JSON list"),
        ('[{"criterion_index": 1, "met": "yes"}]', U + "bad criterion entry"),
        ('[{"criterion_index": "1", "met": true}]', U + "bad criterion entry"),
        ('[{"criterion_index": true, "met": true}]', U + "bad criterion entry"),
        ('[{"criterion_index": 1.0, "met": true}]', U + "bad criterion entry"),
        ('[{"criterion_index": 1, "met": true, "score": 5}]', U + "bad criterion entry"),
        ('[{"criterion_index": 1}]', U + "bad criterion entry"),
        ("[1, 2, 3]", U + "bad criterion entry"),
        ("", U + "empty reply"),
    ],
)
def test_parse_rubric_reply_malformed(reply: str, reason: str) -> None:
    got = parse_rubric_reply(reply, 3)
    assert isinstance(got, JudgeFailure) and got.reason == reason


def test_parse_rubric_reply_lines() -> None:
    assert parse_rubric_reply("<think>x</think>\n1: yes\n\n2: NO\n 3 : Yes ", 3, "lines") == {0: True, 1: False, 2: True}
    assert parse_rubric_reply("1: yes\n2: no", 3, "lines").reason == CRITERIA_MISSING  # type: ignore[union-attr]
    assert parse_rubric_reply("1: yes\n2: no\n3: maybe", 3, "lines").reason == U + "bad line"  # type: ignore[union-attr]
    assert parse_rubric_reply("Criterion 1: yes", 1, "lines").reason == U + "bad line"  # type: ignore[union-attr]
    assert parse_rubric_reply("1: yes\n4: no", 1, "lines").reason == U + "unknown criterion index"  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="format"):
        parse_rubric_reply("1: yes", 1, "xml")  # type: ignore[arg-type]


def test_rubric_grading_messages() -> None:
    prompt = PolicyPrompt("t1", "Explain tides.", rubric=RUBRIC)
    system, user = rubric_grading_messages(prompt, "The moon pulls the sea.")
    assert system["role"] == "system" and user["role"] == "user"
    text = user["content"]
    assert "[Conversation]\nExplain tides.\n\n[Response to grade]\nThe moon pulls the sea.\n\n[Criteria]\n" in text
    numbered = (
        "1. Explains that the moon's gravity causes tides.\n2. Mentions two high tides a day.\n"
        "3. Claims the wind causes tides."
    )
    assert numbered in text
    assert "points" not in text.lower() and "-2" not in text  # points are not shown to the grader
    assert '[{"criterion_index": 1, "met": true}, {"criterion_index": 2, "met": false}]' in text
    lines = rubric_grading_messages(prompt, "x", fmt="lines")[1]["content"]
    assert lines.endswith("example:\n1: yes\n2: no")
    turns = [
        {"role": "user", "content": "Hi."},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "And now?"},
    ]
    multi = PolicyPrompt("t2", "And now?", rubric=RUBRIC, messages=turns)
    conversation = "[Conversation]\n<user>\nHi.\n\n<assistant>\nHello.\n\n<user>\nAnd now?\n\n"
    assert conversation in rubric_grading_messages(multi, "x")[1]["content"]
    with pytest.raises(ValueError, match="no rubric"):
        rubric_grading_messages(PolicyPrompt("t3", "Hi."), "x")


# --------------------------------------------------------------------------------------------------
# rubric: score
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("verdicts", "score", "met_points", "unclipped"),
    [
        ({0: True, 1: True, 2: False}, 1.0, 8.0, 1.0),
        ({0: True, 1: False, 2: False}, 0.625, 5.0, 0.625),
        ({0: False, 1: True, 2: False}, 0.375, 3.0, 0.375),
        ({0: True, 1: False, 2: True}, 0.375, 3.0, 0.375),  # the flaw subtracts its points
        ({0: True, 1: True, 2: True}, 0.75, 6.0, 0.75),
        ({0: False, 1: False, 2: False}, 0.0, 0.0, 0.0),
        ({0: False, 1: False, 2: True}, 0.0, -2.0, -0.25),  # clipped at 0
    ],
)
def test_rubric_score_exact(verdicts, score, met_points, unclipped) -> None:
    r = rubric_score(RUBRIC, verdicts)
    assert r.score == score and r.failure is None
    assert r.components == {
        "met_points": met_points, "positive_points": 8.0, "n_criteria": 3.0,
        "n_met": float(sum(verdicts.values())), "unclipped_score": unclipped,
    }  # fmt: skip


def test_rubric_score_clipping_options() -> None:
    only_flaw = {0: False, 1: False, 2: True}
    assert rubric_score(RUBRIC, only_flaw, clip=None).score == -0.25
    assert rubric_score(RUBRIC, only_flaw, clip=(-1.0, 1.0)).score == -0.25
    assert rubric_score(RUBRIC, {0: True, 1: True, 2: False}, clip=(0.0, 0.5)).score == 0.5
    with pytest.raises(ValueError, match="low < high"):
        rubric_score(RUBRIC, only_flaw, clip=(1.0, 0.0))


def test_rubric_score_failures_are_not_zeros() -> None:
    missing = rubric_score(RUBRIC, {0: True, 1: True})
    assert missing.score is None and missing.failure == CRITERIA_MISSING
    assert set(missing.components) == set(RUBRIC_COMPONENTS)
    assert is_nan(missing.components["met_points"]) and missing.components["positive_points"] == 8.0
    extra = rubric_score(RUBRIC, {0: True, 1: True, 2: False, 3: True})
    assert extra.failure == U + "unknown criterion index"
    failed = rubric_score(RUBRIC, JudgeFailure.truncated())
    assert failed.failure == JUDGE_TRUNCATED
    assert failed.to_verl_dict()["score"] == 0.0 and failed.to_verl_dict()["judge_failed"] == 1
    with pytest.raises(ValueError, match="positive points"):
        rubric_score([Criterion("Bad.", -1)], {0: False})
    with pytest.raises(TypeError):
        rubric_score(RUBRIC, {0: 1, 1: 0, 2: 0})  # ints are not verdicts


def test_rubric_reward_end_to_end() -> None:
    assert rubric_reward(RUBRIC, reply_json((1, True), (2, False), (3, True))).score == 0.375
    assert rubric_reward(RUBRIC, "<think>\nout of tokens").failure == U + "unclosed <think>"
    assert rubric_reward(RUBRIC, reply_json((1, True))).failure == CRITERIA_MISSING
    assert rubric_reward(RUBRIC, "1: yes\n2: yes\n3: no", fmt="lines").score == 1.0


def test_one_call_per_criterion() -> None:
    prompt = PolicyPrompt("t1", "Explain tides.", rubric=RUBRIC)
    user = criterion_grading_messages(prompt, "The moon.", RUBRIC[2])[1]["content"]
    assert "[Criterion]\nClaims the wind causes tides.\n\n" in user and "criteria_met" in user
    replies = [
        '<think>ok</think>{"explanation": "Yes, gravity.", "criteria_met": true}',
        '```json\n{"criteria_met": false}\n```',
        '{"explanation": "No wind.", "criteria_met": false}',
    ]
    results = [parse_criterion_reply(r) for r in replies]
    assert results == [True, False, False]
    assert rubric_score(RUBRIC, collect_criterion_verdicts(results)).score == 0.625
    bad = [
        ('{"criteria_met": "true"}', U + "bad criterion entry"),
        ('{"met": true}', U + "bad criterion entry"),
        ("[true]", U + "not a JSON object"),
        ("Yes it does.", U + "not valid JSON"),
        ("<think>hmm", U + "unclosed <think>"),
    ]
    for reply, reason in bad:
        assert parse_criterion_reply(reply).reason == reason  # type: ignore[union-attr]
    one_failed = [True, JudgeFailure.server_error(), parse_criterion_reply("<think>hmm")]
    combined = collect_criterion_verdicts(one_failed)
    assert isinstance(combined, JudgeFailure) and combined.reason == JUDGE_SERVER_ERROR
    assert rubric_score(RUBRIC, combined).failure == JUDGE_SERVER_ERROR


# --------------------------------------------------------------------------------------------------
# rules
# --------------------------------------------------------------------------------------------------

RULED = PolicyPrompt(
    "r1",
    "Explain tides. Use the words 'moon' and 'gravity'. No commas.",
    ("keywords:existence", "punctuation:no_comma"),
    ({"keywords": ["moon", "gravity"]}, {}),
    soft_constraints=("The tone is playful.",),
)


@pytest.mark.parametrize(
    ("response", "fraction", "all_"),
    [
        ("The moon and its gravity pull the sea.", 1.0, 1.0),
        ("The moon, with its gravity, pulls the sea.", 0.5, 0.0),
        ("The sun pulls the sea.", 0.5, 0.0),
        ("The sun, alas, pulls.", 0.0, 0.0),
        ("   ", 0.0, 0.0),  # a blank response follows nothing, not even "no commas"
    ],
)
def test_rule_score_exact(response: str, fraction: float, all_: float) -> None:
    r = rule_score(RULED, response)
    assert r.score == fraction and r.failure is None
    assert r.components == {"rule_fraction": fraction, "rule_all": all_, "n_instructions": 2.0, "n_followed": 2 * fraction,
                            "guard_pass": 1.0}  # fmt: skip
    assert rule_score(RULED, response, level="prompt").score == all_
    # the same strict results as the IFEval evaluation
    ifeval = make_prompt({"key": 1, "prompt": RULED.prompt, "instruction_id_list": list(RULED.instruction_id_list),
                          "kwargs": [dict(k) for k in RULED.kwargs]})  # fmt: skip
    strict = evaluate_prompt(ifeval, response)["follow_instruction_list_strict"]
    assert rule_checks(RULED.instruction_id_list, RULED.kwargs, response) == strict


def test_the_oracle_gives_degenerate_text_nothing_the_checkers_would_pass() -> None:
    """policy_reward=oracle (rule + guard): the checkers' score where the response is a real answer on its task, 0
    for a loop, a fragment, or text off the task's topic, whatever the checkers say; the same through verl."""
    p = generate_policy_prompts(1, seed=0, instruction_ids=["detectable_content:postscript"])[0]
    task, marker = p.meta["task_id"], p.kwargs[0]["postscript_marker"]
    a, b, c = task_keywords(task)
    good = f"Here is my answer about {a}, and about {b} too. It also covers {c} in some detail.\n\n{marker} Thanks."
    hacks = {"too short": f"{marker} yes", "repetitive": f"{marker} " + f"the {a} the {a} the {a} " * 10,
             "off topic": f"I like to cook pasta with fresh basil and olives every weekend.\n\n{marker} Bye now."}
    assert rule_score(p, good, guard=True).score == 1.0
    for reason, text in hacks.items():
        assert rule_score(p, text).score == 1.0  # the checkers alone are fooled
        r = rule_score(p, text, guard=True)
        assert (r.score, r.components["guard_pass"], guard_failure(text, task)) == (0.0, 0.0, reason)
        verl = rule_compute_score("ifgen", text, json.dumps(p.to_dict()), guard=True)
        assert verl["score"] == 0.0 and rule_compute_score("ifgen", text, p.to_dict())["score"] == 1.0
    # a prompt asking for another language is not held to its English topic words; a file's prompt has no topic
    assert guard_failure(hacks["off topic"], task, ["language:response_language"]) is None
    assert guard_failure(hacks["off topic"], None) is None


def test_rule_score_needs_rules() -> None:
    with pytest.raises(ValueError, match="has no rule constraints"):
        rule_score(PolicyPrompt("r0", "Hi."), "Hello.")
    with pytest.raises(ValueError, match="level"):
        rule_score(RULED, "x", level="sample")  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------------
# VerIF
# --------------------------------------------------------------------------------------------------

PASS, FAIL = "The moon and its gravity pull the sea.", "The sun pulls the sea."


def test_verif_score_exact() -> None:
    assert verif_score(RULED, PASS, True).score == 1.0
    assert verif_score(RULED, PASS, False).score == 0.0
    assert verif_score(RULED, FAIL, True).score == 0.0  # all-or-nothing rules, not the fraction
    r = verif_score(RULED, PASS, "<think>\nplayful enough\n</think>\n[[1]] The tone is light.")
    assert r.score == 1.0 and r.components == {
        "rule_fraction": 1.0, "rule_all": 1.0, "n_instructions": 2.0, "n_followed": 2.0, "n_soft_constraints": 1.0,
        "judge_verdict": 1.0, "judge_asked": 1.0,
    }  # fmt: skip
    assert verif_score(RULED, FAIL, "[[0]]").components["rule_fraction"] == 0.5
    # only soft constraints: the rules are vacuously passed
    soft_only = PolicyPrompt("s1", "Be playful.", soft_constraints=("Playful.",))
    assert verif_score(soft_only, "Wheee!", True).score == 1.0
    assert verif_score(soft_only, "Wheee!", False).score == 0.0


def test_verif_judge_failure_is_a_failure_even_when_rules_pass() -> None:
    for verdict, reason in [
        (JudgeFailure.server_error(), JUDGE_SERVER_ERROR),
        ("<think>\nstill thinking about the tone", U + "unclosed <think>"),
        ("The tone is fine.", U + "no verdict"),
        ("[[1]] but maybe [[0]]", U + "several verdicts"),
        ("[[2]]", U + "verdict out of range"),
    ]:
        for response in (PASS, FAIL):
            r = verif_score(RULED, response, verdict)
            assert r.score is None and r.failure == reason
            assert is_nan(r.components["judge_verdict"]) and r.components["judge_asked"] == 1.0
    # a rule already failed: the caller may skip the judge, the score is then decided (0.0)
    skipped = verif_score(RULED, FAIL, None)
    assert skipped.score == 0.0 and skipped.components["judge_asked"] == 0.0 and is_nan(skipped.components["judge_verdict"])
    with pytest.raises(ValueError, match="judge's verdict is needed"):
        verif_score(RULED, PASS, None)


def test_verif_parse_and_messages() -> None:
    assert parse_verif_reply("[[1]]") is True and parse_verif_reply("Verdict: [[ 0 ]]") is False
    assert parse_verif_reply("</think>[[1]]") is True
    user = verif_judge_messages(RULED, PASS)[1]["content"]
    assert "[Constraints]\n- The tone is playful.\n\n" in user and "[[1]]" in user and "[[0]]" in user
    none = verif_judge_messages(PolicyPrompt("x", "Hi.", ("punctuation:no_comma",), ({},)), "Yo")[1]["content"]
    assert "[Constraints]\nThe constraints stated in the request" in none


# --------------------------------------------------------------------------------------------------
# pairwise judge vs a reference
# --------------------------------------------------------------------------------------------------

QUESTION = PolicyPrompt("q1", "Explain tides.")
REFERENCE = "Tides come from the moon's pull."


def strength(winner: str, k: int) -> str:
    return get_prompt("strength").output("Weighing both.", winner, k)  # type: ignore[attr-defined]


def test_pairwise_exact_scores() -> None:
    one = judge_pairwise_score(QUESTION, "Moon gravity.", REFERENCE, {"a": strength("a", 2)})
    assert one.score == pytest.approx(0.5 + 2 / 6)
    assert one.components["score_policy_a"] == pytest.approx(5 / 6) and is_nan(one.components["score_policy_b"])
    assert one.components["n_orders"] == 1.0 and is_nan(one.components["consistent"])
    # both orders: policy wins strongly at (a); at (b) the judge prefers (a), the reference, slightly
    both = judge_pairwise_score(QUESTION, "Moon gravity.", REFERENCE, {"a": strength("a", 3), "b": strength("a", 1)})
    assert both.score == pytest.approx((1.0 + (0.5 - 1 / 6)) / 2)
    assert both.components["consistent"] == 0.0
    agree = judge_pairwise_score(QUESTION, "x", REFERENCE, {"a": strength("b", 2), "b": strength("a", 2)})
    assert agree.score == pytest.approx(0.5 - 2 / 6) and agree.components["consistent"] == 1.0
    no_strength = judge_pairwise_score(QUESTION, "x", REFERENCE, {"b": strength("b", 1)}, use_strength=False)
    assert no_strength.score == 1.0
    binary = get_prompt("binary").output("Weighing.", "b")  # type: ignore[attr-defined]
    assert judge_pairwise_score(QUESTION, "x", REFERENCE, {"a": binary}, judge_prompt="binary").score == 0.0
    assert judge_pairwise_score(QUESTION, "x", REFERENCE, {"b": binary}, judge_prompt="binary").score == 1.0


def test_pairwise_failures() -> None:
    good = strength("a", 2)
    cases = [
        ({"a": good, "b": "<think>\nhmm, (a) seems"}, U + "unclosed <think>"),
        ({"a": good, "b": "<think>x</think>\nResponse (a) wins."}, U + "verdict line does not match template"),
        ({"a": "Therefore, Response (a) is better, and the strength is [[2]]."}, U + "missing <think> block"),
        ({"a": JudgeFailure.server_error("HTTP 500"), "b": good}, JUDGE_SERVER_ERROR),
    ]
    for judgment, reason in cases:
        r = judge_pairwise_score(QUESTION, "x", REFERENCE, judgment)
        assert r.score is None and r.failure == reason
        assert set(r.components) == set(PAIRWISE_COMPONENTS) and is_nan(r.components["score_policy_a"])
    with pytest.raises(ValueError, match="reference"):
        judge_pairwise_score(QUESTION, "x", None, {"a": good})
    with pytest.raises(ValueError, match="not a pairwise prompt"):
        judge_pairwise_score(QUESTION, "x", REFERENCE, {"a": good}, judge_prompt="pointwise")
    with pytest.raises(ValueError, match="judgment must map"):
        judge_pairwise_score(QUESTION, "x", REFERENCE, {"c": good})
    with pytest.raises(ValueError, match="judgment must map"):
        judge_pairwise_score(QUESTION, "x", REFERENCE, {})


def test_pairwise_messages_place_the_policy() -> None:
    a = pairwise_judge_messages(QUESTION, "POLICY ANSWER", REFERENCE, "a")[1]["content"]
    assert "[The Start of Response (a)]\nPOLICY ANSWER\n" in a and f"[The Start of Response (b)]\n{REFERENCE}\n" in a
    b = pairwise_judge_messages(QUESTION, "POLICY ANSWER", REFERENCE, "b", judge_prompt="pairwise_tag")[1]["content"]
    assert "POLICY ANSWER" in b and b.index(REFERENCE) < b.index("POLICY ANSWER")
    assert "[Reference Answer]" not in a  # the reference is one of the two responses, not a hint


# --------------------------------------------------------------------------------------------------
# registry and verl adapter
# --------------------------------------------------------------------------------------------------


def test_registry_and_fixed_component_keys() -> None:
    assert POLICY_REWARDS.names() == ["judge_pairwise", "rubric", "rule", "verif"]
    assert [POLICY_REWARDS.get(n).needs_judge for n in POLICY_REWARDS.names()] == [True, True, False, True]
    outputs = {
        "rule": [rule_score(RULED, PASS), rule_score(RULED, FAIL)],
        "rubric": [rubric_score(RUBRIC, {0: True, 1: True, 2: False}), rubric_score(RUBRIC, JudgeFailure.truncated())],
        "verif": [verif_score(RULED, PASS, True), verif_score(RULED, PASS, "nope"), verif_score(RULED, FAIL, None)],
        "judge_pairwise": [judge_pairwise_score(QUESTION, "x", REFERENCE, {"a": strength("a", 1)}),
                           judge_pairwise_score(QUESTION, "x", REFERENCE, {"a": "bad"})],
    }  # fmt: skip
    for name, rewards in outputs.items():
        keys = POLICY_REWARDS.get(name).component_keys
        for r in rewards:
            assert tuple(r.components) == keys, name
            assert list(r.to_verl_dict()) == ["score", "judge_failed", "failure_reason", *keys]
    assert RULE_COMPONENTS == POLICY_REWARDS.get("rule").component_keys
    assert VERIF_COMPONENTS[-2:] == ("judge_verdict", "judge_asked")


def test_rule_compute_score() -> None:
    truth = RULED.to_dict()
    out = compute_score("ifgen", PASS, json.dumps(truth))
    assert out == {"score": 1.0, "judge_failed": 0, "failure_reason": "", "rule_fraction": 1.0, "rule_all": 1.0,
                   "n_instructions": 2.0, "n_followed": 2.0, "guard_pass": 1.0}  # fmt: skip
    assert compute_score("ifgen", FAIL, truth, reward_name="rule", level="prompt")["score"] == 0.0
    assert compute_score("ifgen", FAIL, truth, extra_info={"reward_name": "rule"})["score"] == 0.5
    # parquet gives numpy arrays for lists
    parquet_like = {"instruction_id_list": np.array(["keywords:existence"]), "kwargs": [{"keywords": np.array(["moon"])}]}
    assert rule_compute_score("ifgen", "moon", parquet_like, reward_router_address="x")["score"] == 1.0
    with pytest.raises(TypeError, match="unknown keyword argument"):
        rule_compute_score("ifgen", PASS, truth, levle="prompt")
    with pytest.raises(ValueError, match="no 'kwargs'"):
        rule_compute_score("ifgen", PASS, {"instruction_id_list": []})
    with pytest.raises(ValueError, match="not valid JSON"):
        rule_compute_score("ifgen", PASS, "{")
    for name in ("rubric", "verif", "judge_pairwise"):
        with pytest.raises(NotImplementedError, match="async compute_score of judge_rl/policy/verl/reward.py"):
            compute_score("ifgen", PASS, truth, reward_name=name)
    with pytest.raises(KeyError, match="unknown policy reward"):
        compute_score("ifgen", PASS, truth, reward_name="nope")


# --------------------------------------------------------------------------------------------------
# Yes/no criterion replies (what a small untrained judge can write)
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply, expected",
    [
        ("Yes.", True),
        ("no", False),
        ('The answer to the question is "Yes."', True),
        ("<think>It uses capitals, so yes... or no?</think>\nYES", True),
        ("No, it does not. No.", False),
    ],
)
def test_yesno_reply_reads_the_one_word(reply, expected):
    from judge_rl.policy.rewards.rubric import parse_yesno_reply

    assert parse_yesno_reply(reply) is expected


@pytest.mark.parametrize(
    "reply, reason",
    [
        ("The response meets the criterion.", unparseable(NO_VERDICT)),
        ("Yes, but no partial credit.", unparseable(SEVERAL_VERDICTS)),
        ("yesterday nobody came", unparseable(NO_VERDICT)),  # whole words only
        ("<think>yes", unparseable(UNCLOSED_THINK)),
        ("   ", unparseable(EMPTY_REPLY)),
    ],
)
def test_yesno_reply_failures_are_never_a_no(reply, reason):
    from judge_rl.policy.rewards.rubric import parse_yesno_reply

    assert parse_yesno_reply(reply).reason == reason


def test_yesno_criterion_prompt_asks_for_one_word():
    from judge_rl.policy.rewards.rubric import parse_criterion

    prompt = generate_policy_prompts(1, seed=3)[0]
    user = criterion_grading_messages(prompt, "An answer.", prompt.rubric[0], fmt="yesno")[1]["content"]
    assert user.endswith("Answer Yes or No.") and prompt.rubric[0].criterion in user and prompt.prompt in user
    assert parse_criterion("no", "yesno") is False and parse_criterion('{"criteria_met": true}', "json") is True
    with pytest.raises(ValueError, match="'json' or 'yesno'"):
        criterion_grading_messages(prompt, "x", prompt.rubric[0], fmt="xml")
