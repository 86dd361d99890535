"""The Grader (judge_rl.policy.grading) against a real local judge server (judge_rl.servers.http on the tiny random
model, its replies scripted with `reply_override`, or failing through its fault hooks): each reward's exact
score on hand-written replies, malformed ones as failures counted by reason, and the per-call telemetry."""

from __future__ import annotations

import json

import pytest
import torch

from conftest import CACHE_DIR
from judge_rl.models.loading import load_model, load_tokenizer
from judge_rl.policy.config import PolicyRewardConfig
from judge_rl.policy.tasks.prompts import Criterion, PolicyPrompt
from judge_rl.policy.grading import Grader
from judge_rl.servers.client import AsyncJudgeClient
from judge_rl.policy.rewards import JUDGE_SERVER_ERROR, NO_VERDICT, unparseable
from judge_rl.config.paths import load_model_config
from judge_rl.servers.http import ChatCompletionServer

LOWER = "change_case:english_lowercase"
PROMPT = PolicyPrompt(
    prompt_id="p1",
    prompt="Describe the sea. Write everything in lowercase.",
    instruction_id_list=(LOWER,),
    kwargs=({},),
    rubric=(
        Criterion("The whole response is in lowercase letters.", 2.0, ("instruction_id:" + LOWER,)),
        Criterion("The response describes the sea.", 3.0, ()),
        Criterion("The response is padded with filler.", -2.0, ()),
    ),
    reference="the sea is wide and blue.",
)


@pytest.fixture(scope="module")
def tiny():
    cfg = load_model_config("tiny-random")
    return load_model(cfg, CACHE_DIR, torch.device("cpu"), seed=0), load_tokenizer(cfg, CACHE_DIR)


@pytest.fixture
def judge(tiny):
    """start(reply_override=..., **hooks) -> (server, client); the servers stop at the end."""
    started = []

    def start(reply=None, timeout_s: float = 10.0, **hooks):
        server = ChatCompletionServer(*tiny, "tiny-random", 0, reply_override=reply, **hooks).start()
        started.append(server)
        client = AsyncJudgeClient(server.base_url, "tiny-random", timeout_s=timeout_s, max_retries=0, backoff_s=0.0,
                                  max_tokens=8)  # fmt: skip
        return server, client

    yield start
    for s in started:
        s.shutdown()


def user_text(body) -> str:
    return body["messages"][-1]["content"]


def by_criterion(answers: dict[str, str]):
    """A scripted judge: the reply for the criterion named in the request."""

    def reply(n, body):
        criterion = user_text(body).rsplit("meet this requirement? ", 1)[1]
        return next(text for key, text in answers.items() if key in criterion)

    return reply


def test_rubric_yesno_one_call_per_criterion_exact_score(judge):
    server, client = judge(by_criterion({"lowercase": "Yes.", "describes the sea": "yes", "filler": "No"}))
    grader = Grader(PolicyRewardConfig(name="rubric", criterion_format="yesno"), client)
    [g] = grader.grade_many([PROMPT], ["the sea is big and grey."])
    assert g.reward.score == pytest.approx((2 + 3) / 5) and g.calls == 3 == server.requests_seen
    assert g.reward.components["met_points"] == 5.0 and g.reward.components["n_met"] == 2.0
    assert g.rule_score == 1.0 and g.criterion_checks == [(True, True)]  # judge and checker agree on lowercase
    # a met flaw subtracts; clipping at 0 from below
    _, client = judge(by_criterion({"lowercase": "no", "describes the sea": "no", "filler": "Yes"}))
    [g] = Grader(PolicyRewardConfig(name="rubric", criterion_format="yesno"), client).grade_many([PROMPT], ["THE SEA."])
    assert g.reward.score == 0.0 and g.reward.components["unclipped_score"] == pytest.approx(-2 / 5)
    assert g.rule_score == 0.0 and g.criterion_checks == [(False, False)]
    t = Grader(PolicyRewardConfig(name="rubric", criterion_format="yesno", clip=None), client)
    assert t.grade_many([PROMPT], ["THE SEA."])[0].reward.score == pytest.approx(-0.4)


def test_one_unparseable_criterion_fails_the_sample_and_is_counted_once(judge):
    _, client = judge(by_criterion({"lowercase": "Yes", "describes the sea": "Maybe, hard to say", "filler": "No"}))
    grader = Grader(PolicyRewardConfig(name="rubric", criterion_format="yesno"), client)
    [g] = grader.grade_many([PROMPT], ["the sea."])
    assert g.reward.score is None and g.reward.failure == unparseable(NO_VERDICT)
    assert g.reward.to_verl_dict()["judge_failed"] == 1
    t = grader.telemetry.summary()
    assert t["judge/calls"] == 3 and t["judge/failures"] == 1 and t[f"judge/failures/{unparseable(NO_VERDICT)}"] == 1
    assert g.criterion_checks == [(True, True)]  # the parsed criterion still tells on the judge's bias
    assert g.replies == ["Yes", "Maybe, hard to say", "No"]


def test_rubric_in_one_call_json(judge):
    reply = json.dumps([{"criterion_index": 1, "met": True}, {"criterion_index": 2, "met": False},
                        {"criterion_index": 3, "met": False}])  # fmt: skip
    server, client = judge(lambda n, body: reply)
    [g] = Grader(PolicyRewardConfig(name="rubric", batch_criteria=True), client).grade_many([PROMPT], ["the sea."])
    assert g.reward.score == pytest.approx(2 / 5) and server.requests_seen == 1
    # the same call missing a criterion is a failure, not a "not met"
    _, client = judge(lambda n, body: json.dumps([{"criterion_index": 1, "met": True}]))
    [g] = Grader(PolicyRewardConfig(name="rubric", batch_criteria=True), client).grade_many([PROMPT], ["the sea."])
    assert g.reward.failure == "criteria missing from judge reply"


def test_verif_asks_the_judge_only_when_every_rule_passes(judge):
    server, client = judge(lambda n, body: "[[1]]")
    grader = Grader(PolicyRewardConfig(name="verif"), client)
    passed, failed = grader.grade_many([PROMPT, PROMPT], ["the sea is calm.", "The Sea Is Calm."])
    assert passed.reward.score == 1.0 and passed.calls == 1
    assert failed.reward.score == 0.0 and failed.calls == 0 and failed.reward.components["judge_asked"] == 0.0
    assert server.requests_seen == 1
    _, client = judge(lambda n, body: "[[0]] it is not about the sea")
    assert Grader(PolicyRewardConfig(name="verif"), client).grade_many([PROMPT], ["the sea."])[0].reward.score == 0.0


def test_judge_pairwise_both_orders_against_the_reference(judge):
    def reply(n, body):  # prefers whichever side holds the policy's answer "mine", strength 3
        side = "a" if user_text(body).index("mine") < user_text(body).index("wide and blue") else "b"
        return f"<think>ok</think>\nTherefore, Response ({side}) is better, and the strength is [[3]]."

    _, client = judge(reply)
    [g] = Grader(PolicyRewardConfig(name="judge_pairwise"), client).grade_many([PROMPT], ["mine"])
    assert g.reward.score == pytest.approx(0.5 + 3 / 6) and g.calls == 2
    assert g.reward.components["consistent"] == 1.0
    _, client = judge(lambda n, body: "Response (a), I think")
    [g] = Grader(PolicyRewardConfig(name="judge_pairwise"), client).grade_many([PROMPT], ["mine"])
    assert g.reward.failure.startswith("judge reply unparseable: ")


def test_rule_reward_needs_no_judge():
    [g] = Grader(PolicyRewardConfig(name="rule"), None).grade_many([PROMPT], ["the sea."])
    assert g.reward.score == 1.0 and g.calls == 0
    with pytest.raises(ValueError, match="asks a judge"):
        Grader(PolicyRewardConfig(name="rubric"), None)


@pytest.mark.parametrize("hooks, detail", [
    ({"fail_every": 1}, "HTTP 500"),
    ({"garbage_every": 1}, "malformed response"),
    ({"hang_every": 1, "hang_s": 60.0, "timeout_s": 0.5}, "timeout after 0.5s"),  # the hangs end at teardown
])  # fmt: skip
def test_server_failures_are_failures_with_telemetry(judge, hooks, detail):
    _, client = judge(lambda n, body: "Yes", **hooks)
    grader = Grader(PolicyRewardConfig(name="rubric", criterion_format="yesno"), client)
    graded = grader.grade_many([PROMPT, PROMPT], ["the sea.", "another sea."])
    assert all(g.reward.failure == JUDGE_SERVER_ERROR and g.reward.score is None for g in graded)
    assert all(detail in reply for g in graded for reply in g.replies)
    t = grader.telemetry.summary()
    assert t["judge/calls"] == 6 and t[f"judge/failures/{JUDGE_SERVER_ERROR}"] == 6 and t["judge/failure_rate"] == 1.0
    # bounded: no retries configured, 0.5 s timeout (~1 s at most on a loaded 2-core machine: 30 s is 5x+ that), not
    # the server's 60 s hang
    assert t["judge/latency_p95_s"] < 30


def test_group_prompts_give_each_sample_the_next_non_blank_answer_of_its_group():
    """policy_reward.opponent=group: sample j is compared with sample j+1 (a ring), skipping blank answers; a group
    with nothing else to compare gets the placeholder, never an empty reference (which the pairwise prompt refuses)."""
    from judge_rl.policy.grading import EMPTY_OPPONENT

    grader = Grader(PolicyRewardConfig(name="judge_pairwise", opponent="group"), client=object())  # type: ignore[arg-type]
    shown = grader.group_prompts(PROMPT, ["one", " ", "three", "four"])
    assert [p.reference for p in shown] == ["three", "three", "four", "one"]
    assert all(p.prompt_id == PROMPT.prompt_id and p.prompt == PROMPT.prompt for p in shown)
    assert [p.reference for p in grader.group_prompts(PROMPT, ["only", ""])] == [EMPTY_OPPONENT, "only"]
    same = Grader(PolicyRewardConfig(name="judge_pairwise"), client=object())  # type: ignore[arg-type]
    assert same.group_prompts(PROMPT, ["a", "b"]) == [PROMPT, PROMPT]
