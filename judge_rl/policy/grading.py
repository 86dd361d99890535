"""Grading a policy's samples: the configured reward, asking the judge over HTTP where it needs one.

    grader = Grader(job.policy_reward, judge_client(job.judge, endpoint.base_url, endpoint.model))
    graded = grader.grade_many(prompts, responses)      # one Graded per sample, calls concurrent
    graded[i].reward                                    # a PolicyReward: a score, or a failure (never both)

`Grader.grade(prompt, response)` is the async form verl's reward loop awaits (judge_rl/policy/verl_reward.py);
`grade_many` is the sync form the local backend calls once per step, so all of a step's judge calls are
in flight together (up to `judge.concurrency`) and the local server batches them.

Per reward (exact scores: judge_rl/policy/rewards.py):
  rule            the IFEval checkers alone; no judge call.
  rubric          one call per criterion (`batch_criteria=false`, HealthBench's grading; reply
                  `criterion_format` json or yesno) or one call for the whole rubric (`batch_criteria=true`,
                  reply `batch_format` json or lines); any failed criterion fails the sample.
  verif           the rule checkers; the judge is asked only when they all pass (otherwise the product is
                  0 whatever it says), once, on the soft constraints.
  judge_pairwise  the sample against the prompt's reference with a pairwise judge prompt, in both orders
                  (`both_orders`) or with the sample as (a).

Every call is recorded in the grader's `JudgeTelemetry` with the failure parsing found, so a step's
telemetry counts failures by reason per call, while `Graded.reward.failure` is the sample's.

`Graded` also carries what the bias metrics need (judge_rl/policy/bias.py): the judge-free rule score of
every sample whose prompt has checkers, and for rubric criteria tied to one IFEval instruction (tag
`instruction_id:<id>`), the judge's verdict beside the checker's.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Sequence

from judge_rl.aio import run_sync
from judge_rl.policy.config import PolicyRewardConfig, RewardJudgeConfig
from judge_rl.policy.data import PolicyPrompt
from judge_rl.servers.client import AsyncJudgeClient, JudgeReply, JudgeTelemetry
from judge_rl.policy.rewards import (
    JudgeFailure,
    PolicyReward,
    collect_criterion_verdicts,
    criterion_grading_messages,
    judge_pairwise_score,
    pairwise_judge_messages,
    parse_criterion,
    parse_rubric_reply,
    parse_verif_reply,
    rubric_grading_messages,
    rubric_score,
    rule_checks,
    rule_score,
    verif_judge_messages,
    verif_score,
)

INSTRUCTION_TAG = "instruction_id:"


def judge_client(judge_cfg: RewardJudgeConfig, base_url: str, model: str) -> AsyncJudgeClient:
    """The HTTP client for the configured judge at `base_url` (the key is read from the environment variable
    `judge.api_key_env` at each request, never stored). An HTTP error's failure detail carries the server's own
    message (e.g. vLLM's "maximum context length is N tokens ..."; one line, the key masked), so a failed call
    says why in the step's samples."""
    template = None if judge_cfg.enable_thinking is None else {"enable_thinking": judge_cfg.enable_thinking}
    return AsyncJudgeClient(
        base_url,
        model,
        api_key_env=judge_cfg.api_key_env,
        concurrency=judge_cfg.concurrency,
        timeout_s=judge_cfg.timeout_s,
        max_retries=judge_cfg.max_retries,
        backoff_s=judge_cfg.backoff_s,
        max_tokens=judge_cfg.max_tokens,
        temperature=judge_cfg.temperature,
        chat_template_kwargs=template,
        extra_body=dict(judge_cfg.extra_body),
        cache_size=judge_cfg.cache_size,
        error_messages=True,
    )


@dataclass
class Graded:
    """One graded sample: its reward, and what the bias metrics compare it with."""

    reward: PolicyReward
    rule_score: float | None = None  # fraction of the prompt's IFEval instructions followed (None: no checkers)
    rule_all: float | None = None  # 1.0 when all were followed
    # (judge says met, checker says followed) per rubric criterion tied to one instruction the judge graded
    criterion_checks: list[tuple[bool, bool]] = field(default_factory=list)
    calls: int = 0
    replies: list[str] = field(default_factory=list)  # each call's reply text, or "<failed: reason; detail>"


def _instruction_of(criterion) -> str | None:
    ids = [t[len(INSTRUCTION_TAG) :] for t in criterion.tags if t.startswith(INSTRUCTION_TAG)]
    return ids[0] if len(ids) == 1 else None


class Grader:
    """Scores samples with the configured reward (module docstring). `client` is None only for `rule`."""

    def __init__(self, cfg: PolicyRewardConfig, client: AsyncJudgeClient | None, telemetry: JudgeTelemetry | None = None):
        if cfg.name != "rule" and client is None:
            raise ValueError(f"policy_reward={cfg.name} asks a judge: it needs a judge client")
        self.cfg = cfg
        self.client = client
        self.telemetry = telemetry if telemetry is not None else JudgeTelemetry()
        self.clip = None if cfg.clip is None else (float(cfg.clip[0]), float(cfg.clip[1]))

    @property
    def endpoint(self) -> str:
        return self.client.endpoint if self.client is not None else "(no judge)"

    # -- one call -----------------------------------------------------------------------------------
    async def _ask(self, messages) -> JudgeReply:
        return await self.client.complete(messages)  # type: ignore[union-attr]

    @staticmethod
    def _texts(replies: Sequence[JudgeReply]) -> list[str]:
        return [r.text if r.ok else f"<failed: {r.failure.reason}; {r.failure.detail}>" for r in replies]  # type: ignore[union-attr]

    def _record(self, reply: JudgeReply, parsed) -> None:
        """One call into the telemetry, with the failure its parsing found (a reply that failed at the server
        carries its own)."""
        failure = parsed if isinstance(parsed, JudgeFailure) and reply.ok else None
        self.telemetry.record(reply, failure)

    # -- one sample ---------------------------------------------------------------------------------
    async def grade(self, prompt: PolicyPrompt, response: str) -> PolicyReward:
        return (await self.grade_detailed(prompt, response)).reward

    async def grade_detailed(self, prompt: PolicyPrompt, response: str) -> Graded:
        checks = rule_checks(prompt.instruction_id_list, prompt.kwargs, response) if prompt.instruction_id_list else []
        rule = sum(checks) / len(checks) if checks else None
        rule_all = float(all(checks)) if checks else None
        name = self.cfg.name
        if name == "rule":
            return Graded(rule_score(prompt, response, self.cfg.level), rule, rule_all)
        if name == "rubric":
            return await self._rubric(prompt, response, checks, rule, rule_all)
        if name == "verif":
            if not all(checks):
                return Graded(verif_score(prompt, response, None), rule, rule_all)
            reply = await self._ask(verif_judge_messages(prompt, response))
            verdict = parse_verif_reply(reply.result)
            self._record(reply, verdict)
            return Graded(verif_score(prompt, response, verdict), rule, rule_all, calls=1, replies=self._texts([reply]))
        if name == "judge_pairwise":
            positions = ("a", "b") if self.cfg.both_orders else ("a",)
            messages = [pairwise_judge_messages(prompt, response, prompt.reference, p, self.cfg.judge_prompt)
                        for p in positions]  # fmt: skip
            replies = await asyncio.gather(*(self._ask(m) for m in messages))
            judgment = {p: r.result for p, r in zip(positions, replies)}
            for p, reply in zip(positions, replies):  # each order's own parse, for the per-call telemetry
                one = judge_pairwise_score(prompt, response, prompt.reference, {p: reply.result},
                                           self.cfg.judge_prompt, self.cfg.use_strength)  # fmt: skip
                self._record(reply, None if one.ok else JudgeFailure(one.failure))
            reward = judge_pairwise_score(prompt, response, prompt.reference, judgment, self.cfg.judge_prompt,
                                          self.cfg.use_strength)  # fmt: skip
            return Graded(reward, rule, rule_all, calls=len(positions), replies=self._texts(replies))
        raise ValueError(f"policy_reward.name={name!r}: unknown")

    async def _rubric(self, prompt: PolicyPrompt, response: str, checks: list[bool], rule, rule_all) -> Graded:
        rubric = prompt.rubric
        if not rubric:
            raise ValueError(f"prompt {prompt.prompt_id!r}: policy_reward=rubric needs a rubric")
        if self.cfg.batch_criteria:
            reply = await self._ask(rubric_grading_messages(prompt, response, rubric, self.cfg.batch_format))
            verdicts = parse_rubric_reply(reply.result, len(rubric), self.cfg.batch_format)
            self._record(reply, verdicts)
            per_criterion = list(verdicts.items()) if isinstance(verdicts, dict) else []
            replies = [reply]
        else:
            fmt = self.cfg.criterion_format
            replies = await asyncio.gather(
                *(self._ask(criterion_grading_messages(prompt, response, c, fmt)) for c in rubric)
            )
            results = [parse_criterion(r.result, fmt) for r in replies]
            for reply, result in zip(replies, results):
                self._record(reply, result)
            verdicts = collect_criterion_verdicts(results)
            per_criterion = [(i, r) for i, r in enumerate(results) if isinstance(r, bool)]
        followed = dict(zip(prompt.instruction_id_list, checks))
        pairs = []
        for index, met in per_criterion:
            instruction = _instruction_of(rubric[index])
            if instruction is not None and instruction in followed and prompt.instruction_id_list.count(instruction) == 1:
                pairs.append((met, followed[instruction]))
        return Graded(rubric_score(rubric, verdicts, self.clip), rule, rule_all, pairs, len(replies), self._texts(replies))

    # -- many samples -------------------------------------------------------------------------------
    def grade_many(self, prompts: Sequence[PolicyPrompt], responses: Sequence[str]) -> list[Graded]:
        """Every sample graded, concurrently, from synchronous code (the connections of the event loop used
        are closed before returning)."""
        if len(prompts) != len(responses):
            raise ValueError(f"{len(prompts)} prompts but {len(responses)} responses")

        async def run() -> list[Graded]:
            try:
                return list(await asyncio.gather(*(self.grade_detailed(p, r) for p, r in zip(prompts, responses))))
            finally:
                if self.client is not None:
                    await self.client.aclose()

        return run_sync(run())
